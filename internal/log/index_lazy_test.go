package log

import (
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestLazyIndexMaps checks that a reopened log holds no index maps (not
// even the active segment's: the log is flushed to its end), maps an old
// segment's indexes when a read needs them, and unmaps them again once
// idle; reads and appends stay correct throughout.
func TestLazyIndexMaps(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 8 << 10
	cfg.IndexIntervalBytes = 512
	l, dir := openTestLog(t, cfg)
	batches := fillLog(t, l, 60, 5, 100, 1_700_000_000_000)
	segs := len(segmentFiles(t, dir, logFileSuffix))
	if segs < 4 {
		t.Fatalf("want several segments, have %d", segs)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	markClean(t, dir)

	l, err := Open(dir, cfg, 0, 0, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if got := l.MappedIndexes(); got != 0 {
		t.Fatalf("after open %d index maps, want 0", got)
	}

	// A read in the middle of the first segment searches its offset index.
	res, err := l.Read(10, math.MaxInt32, math.MaxInt64, true)
	if err != nil {
		t.Fatal(err)
	}
	if res.FirstBatchOffset != 10 || string(res.Records[:len(batches[2])]) != string(batches[2]) {
		t.Fatalf("read at 10 returned batch %d", res.FirstBatchOffset)
	}
	if got := l.MappedIndexes(); got != 1 {
		t.Fatalf("after a read of an old segment %d index maps, want 1", got)
	}
	// A timestamp search maps time indexes of the segments it visits.
	if off, _, ok := l.OffsetForTimestamp(1_700_000_000_000 + 12); !ok || off != 12 {
		t.Fatalf("offset for timestamp: %d %v", off, ok)
	}

	// Recently used maps stay; idle ones go.
	if n, err := l.unmapIdleIndexes(time.Now().Add(-time.Hour)); err != nil || n != 0 {
		t.Fatalf("unmapped %d recently used maps (err %v)", n, err)
	}
	n, err := l.unmapIdleIndexes(time.Now())
	if err != nil || n == 0 {
		t.Fatalf("unmapped %d idle maps (err %v)", n, err)
	}
	if got := l.MappedIndexes(); got != 0 {
		t.Fatalf("after the idle sweep %d index maps, want 0", got)
	}

	// Everything still reads back, remapping as needed, and appends go on.
	off := int64(0)
	for i, b := range batches {
		res, err := l.Read(off, int32(len(b)), math.MaxInt64, true)
		if err != nil {
			t.Fatal(err)
		}
		if string(res.Records) != string(b) {
			t.Fatalf("batch %d differs after remapping", i)
		}
		off += 5
	}
	fillLog(t, l, 5, 5, 100, 1_700_000_100_000)
	if got, want := l.LogEndOffset(), int64(65*5); got != want {
		t.Fatalf("log end offset %d, want %d", got, want)
	}
}

// TestLazyIndexKeepsUnflushedMaps checks that the idle sweep unmaps only
// segments below the recovery point (their index pages are on disk), the
// active segment's only once the log is flushed to its end.
func TestLazyIndexKeepsUnflushedMaps(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 8 << 10
	cfg.IndexIntervalBytes = 256
	l, _ := openTestLog(t, cfg)
	defer l.Close()
	fillLog(t, l, 40, 5, 100, 1_700_000_000_000)
	fillLog(t, l, 1, 5, 100, 1_700_000_100_000)
	fillLog(t, l, 1, 5, 100, 1_700_000_200_000) // the active segment gets entries
	segs, _ := l.snapshot()
	// Wait for the background flush of rolled segments, then roll no more.
	deadline := time.Now().Add(10 * time.Second)
	for l.RecoveryPoint() < segs[len(segs)-1].baseOffset {
		if time.Now().After(deadline) {
			t.Fatalf("recovery point stuck at %d", l.RecoveryPoint())
		}
		time.Sleep(10 * time.Millisecond)
	}
	active := segs[len(segs)-1]
	activeMaps := 0
	for _, mapped := range []bool{active.offsetIdx.isMapped(), active.timeIdx.isMapped()} {
		if mapped {
			activeMaps++
		}
	}
	if activeMaps == 0 {
		t.Fatal("appends mapped none of the active segment's indexes")
	}
	if _, err := l.unmapIdleIndexes(time.Now()); err != nil {
		t.Fatal(err)
	}
	// Every segment but the active one ends below the recovery point.
	if got := l.MappedIndexes(); got != activeMaps {
		t.Fatalf("%d maps after the sweep, want the active segment's %d", got, activeMaps)
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.unmapIdleIndexes(time.Now()); err != nil {
		t.Fatal(err)
	}
	if got := l.MappedIndexes(); got != 0 {
		t.Fatalf("%d maps after the sweep of a flushed log, want 0", got)
	}
	// Appends map the active segment's indexes again as they need them.
	l.mu.Lock()
	active.indexIntervalBytes = 0 // index every append
	l.mu.Unlock()
	fillLog(t, l, 2, 5, 10, 1_700_000_100_000)
	if segs, _ := l.snapshot(); segs[len(segs)-1] != active {
		t.Fatal("the small appends rolled the segment")
	}
	if !active.offsetIdx.isMapped() || !active.timeIdx.isMapped() {
		t.Fatal("appends did not map the active segment's indexes")
	}
}

// TestLazyIndexRecoveryAfterCrash reopens a copy of a log taken while it was
// open (preallocated, untrimmed indexes: a crash): recovery rebuilds the
// active segment's index through a mapping made on demand.
func TestLazyIndexRecoveryAfterCrash(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentIndexBytes = 64 << 10
	cfg.IndexIntervalBytes = 512
	l, dir := openTestLog(t, cfg)
	batches := fillLog(t, l, 50, 5, 100, 1_700_000_000_000)
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	crashed := filepath.Join(t.TempDir(), "logs", "topic-0")
	if err := os.MkdirAll(crashed, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, suffix := range []string{logFileSuffix, indexFileSuffix, timeIndexFileSuffix} {
		for _, src := range segmentFiles(t, dir, suffix) {
			data, err := os.ReadFile(src)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(crashed, filepath.Base(src)), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := Open(crashed, cfg, 0, 0, testLogger())
	if err != nil {
		t.Fatalf("open after crash: %v", err)
	}
	defer r.Close()
	off := int64(0)
	for i, b := range batches {
		res, err := r.Read(off, int32(len(b)), math.MaxInt64, true)
		if err != nil || string(res.Records) != string(b) {
			t.Fatalf("batch %d after recovery: %v", i, err)
		}
		off += 5
	}
	fillLog(t, r, 20, 5, 100, 1_700_000_100_000)
}

// TestDroppedIndexMapIsSynced checks that an index written through a
// mapping that was then dropped (a roll's trim, recovery, the idle sweep)
// is fsynced by the next flush, and that crash recovery leaves no maps.
func TestDroppedIndexMapIsSynced(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 8 << 10
	cfg.IndexIntervalBytes = 256
	l, dir := openTestLog(t, cfg)
	fillLog(t, l, 40, 5, 100, 1_700_000_000_000)
	waitRolledFlushed(t, l)
	segs, _ := l.snapshot()
	if segs[0].offsetIdx.isMapped() || segs[0].offsetIdx.unsyncedNow() {
		t.Fatal("a rolled and flushed segment's index is still mapped or unsynced")
	}
	active := segs[len(segs)-1]
	fillLog(t, l, 1, 5, 100, 1_700_000_100_000)
	if err := active.offsetIdx.unmap(); err != nil {
		t.Fatal(err)
	}
	if !active.offsetIdx.unsyncedNow() {
		t.Fatal("dropping a written mapping did not mark the index for fsync")
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if active.offsetIdx.unsyncedNow() {
		t.Fatal("flush left the dropped mapping's writes unsynced")
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	// No clean-shutdown marker: every segment is recovered, and none keeps
	// a map.
	r, err := Open(dir, cfg, 0, 0, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if n := r.MappedIndexes(); n != 0 {
		t.Fatalf("%d index maps after crash recovery, want 0", n)
	}
	if r.LogEndOffset() != 41*5 {
		t.Fatalf("recovered log end %d, want %d", r.LogEndOffset(), 41*5)
	}
}

// TestFinalTimeIndexEntryGrowsLittle checks that the entry written when a
// segment closes does not first grow its (lazily sized) time index to
// segment.index.bytes, and that a normal entry still gets the full size.
func TestFinalTimeIndexEntryGrowsLittle(t *testing.T) {
	l, dir := openTestLog(t, testConfig())
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	markClean(t, dir)
	// Reopened, the active segment's trimmed indexes are to grow on write.
	l, err := Open(dir, testConfig(), 0, 0, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	segs, _ := l.snapshot()
	x := segs[0].timeIdx
	x.mu.RLock()
	size, growTo := x.fileSize, x.growTo
	x.mu.RUnlock()
	if size != 0 || growTo == 0 {
		t.Fatalf("reopened active time index: %d bytes, to grow to %d; want 0 and its full size", size, growTo)
	}
	if err := x.maybeAppend(100, 0, true); err != nil {
		t.Fatal(err)
	}
	x.mu.RLock()
	size = x.fileSize
	x.mu.RUnlock()
	if size != timeIndexEntrySize {
		t.Fatalf("time index is %d bytes after the final entry, want %d", size, timeIndexEntrySize)
	}
	// Written without a mapping (writeFinalUnmapped), read through one.
	x.rlockMapped()
	ts, off := x.lastEntryLocked()
	x.mu.RUnlock()
	if ts != 100 || off != 0 || !x.unsyncedNow() {
		t.Fatalf("final entry reads (%d, %d), unsynced %v; want (100, 0) awaiting the next flush", ts, off, x.unsyncedNow())
	}
	if err := x.maybeAppend(200, 1, false); err != nil {
		t.Fatal(err)
	}
	x.mu.RLock()
	size = x.fileSize
	x.mu.RUnlock()
	if want := int64(roundDown(x.maxIndexSize, timeIndexEntrySize)); size != want {
		t.Fatalf("time index is %d bytes after a normal entry, want the full %d", size, want)
	}
}
