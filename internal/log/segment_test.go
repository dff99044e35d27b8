package log

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"testing"
)

func TestRollBySize(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 4096
	l, dir := openTestLog(t, cfg)
	batches := fillLog(t, l, 40, 4, 200, 1) // ~1 KiB each
	logs := segmentFiles(t, dir, logFileSuffix)
	if len(logs) < 10 {
		t.Fatalf("%d segments, want about one per 4 KiB", len(logs))
	}
	for _, p := range logs {
		if fileSize(t, p) > 4096 {
			t.Fatalf("segment %s is %d bytes, above segment.bytes", p, fileSize(t, p))
		}
	}
	// Segment names are their base offsets; the first batch of each starts there.
	for _, p := range logs {
		base, ok := parseSegmentBase(filepath.Base(p))
		if !ok || base%4 != 0 {
			t.Fatalf("segment name %s", p)
		}
	}
	// Reads return one segment at a time; walking them returns everything.
	var got []byte
	for off := int64(0); off < l.LogEndOffset(); {
		res, err := l.Read(off, math.MaxInt32, math.MaxInt64, true)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Records) > 4096 {
			t.Fatalf("read crossed a segment: %d bytes", len(res.Records))
		}
		got = append(got, res.Records...)
		off += int64(len(res.Records) / len(batches[0]) * 4)
	}
	if !bytes.Equal(got, bytes.Join(batches, nil)) {
		t.Fatal("reading all segments differs from what was appended")
	}
	// Rolled segments were trimmed and flushed in the background; close waits.
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if l.RecoveryPoint() != 160 {
		t.Fatalf("recovery point %d after close, want 160", l.RecoveryPoint())
	}
	// A batch larger than a segment is refused.
	l2, _ := openTestLog(t, cfg)
	defer l2.Close()
	if _, err := l2.AppendAsFollower(simpleBatch(t, 0, 1, 1, 5000)); err == nil {
		t.Fatal("batch larger than segment.bytes accepted")
	}
}

func TestRollWhenIndexFull(t *testing.T) {
	cfg := testConfig()
	cfg.IndexIntervalBytes = 1 // an index entry for every append after the first
	cfg.SegmentIndexBytes = 48 // offset index: 6 entries; time index: 4 slots, 3 usable
	l, dir := openTestLog(t, cfg)
	fillLog(t, l, 20, 1, 10, 1000)
	if n := len(segmentFiles(t, dir, logFileSuffix)); n < 4 {
		t.Fatalf("%d segments, want rolls on a full time index", n)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// Closed indexes are trimmed to their entries.
	for _, p := range segmentFiles(t, dir, indexFileSuffix) {
		if sz := fileSize(t, p); sz%8 != 0 || sz > 48 {
			t.Fatalf("index %s has %d bytes", p, sz)
		}
	}
	for _, p := range segmentFiles(t, dir, timeIndexFileSuffix) {
		if sz := fileSize(t, p); sz%12 != 0 || sz > 48 {
			t.Fatalf("time index %s has %d bytes", p, sz)
		}
	}
}

func TestRollByTime(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentMs = 1000
	l, dir := openTestLog(t, cfg)
	defer l.Close()
	mustAppendFollower(t, l, simpleBatch(t, 0, 1, 10_000, 10))
	mustAppendFollower(t, l, simpleBatch(t, 1, 1, 10_900, 10)) // 900 ms after the first batch
	if n := len(segmentFiles(t, dir, logFileSuffix)); n != 1 {
		t.Fatalf("%d segments before segment.ms", n)
	}
	mustAppendFollower(t, l, simpleBatch(t, 2, 1, 11_001, 10)) // 1001 ms: roll
	if n := len(segmentFiles(t, dir, logFileSuffix)); n != 2 {
		t.Fatalf("%d segments after segment.ms, want 2", n)
	}
	if _, err := os.Stat(segmentFileName(dir, 2, logFileSuffix)); err != nil {
		t.Fatalf("new segment not at the batch's offset: %v", err)
	}
}

func TestSparseIndexAfterReopen(t *testing.T) {
	cfg := testConfig()
	cfg.IndexIntervalBytes = 1024
	l, dir := openTestLog(t, cfg)
	batches := fillLog(t, l, 200, 2, 100, 1)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	idxPath := segmentFileName(dir, 0, indexFileSuffix)
	entries := fileSize(t, idxPath) / 8
	if entries < 10 || entries > 200 {
		t.Fatalf("%d index entries for %d KiB at 1 KiB interval", entries, len(bytes.Join(batches, nil))>>10)
	}
	markClean(t, dir)
	l, err := Open(dir, cfg, 0, 0, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	segs, leo := l.snapshot()
	if leo != 400 || segs[0].offsetIdx.entries.Load() != entries {
		t.Fatalf("reopened: LEO %d, %d entries; want 400, %d", leo, segs[0].offsetIdx.entries.Load(), entries)
	}
	// Lookups land at or before the batch, and reads are exact.
	for off := int64(0); off < 400; off += 7 {
		idxOff, pos := segs[0].offsetIdx.lookup(off)
		if idxOff > off && idxOff != 0 {
			t.Fatalf("lookup(%d) = offset %d", off, idxOff)
		}
		want := int64(off/2) * int64(len(batches[0]))
		if pos > want {
			t.Fatalf("lookup(%d) = position %d beyond the batch at %d", off, pos, want)
		}
		res, err := l.Read(off, int32(len(batches[0])), math.MaxInt64, true)
		if err != nil || !bytes.Equal(res.Records, batches[off/2]) {
			t.Fatalf("read %d: %v", off, err)
		}
	}
	// Appending after reopen keeps indexing (the active index was resized).
	fillLog(t, l, 50, 2, 100, 1)
	if segs[0].offsetIdx.entries.Load() <= entries {
		t.Fatal("no index entries added after reopen")
	}
}

func TestPreallocatedSegmentTrimmedAndRecovered(t *testing.T) {
	cfg := testConfig()
	cfg.Preallocate = true
	cfg.SegmentBytes = 1 << 20
	l, dir := openTestLog(t, cfg)
	fillLog(t, l, 10, 3, 50, 1)
	logPath := segmentFileName(dir, 0, logFileSuffix)
	if fileSize(t, logPath) != 1<<20 {
		t.Fatalf("active segment not preallocated: %d bytes", fileSize(t, logPath))
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	// A crash: another process opens the files while they are still
	// preallocated, without the clean-shutdown marker.
	crashed, err := Open(dir, cfg, 0, 0, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	if crashed.LogEndOffset() != 30 || crashed.Size() != l.Size() {
		t.Fatalf("recovered LEO %d size %d; want 30, %d", crashed.LogEndOffset(), crashed.Size(), l.Size())
	}
	if err := crashed.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if fileSize(t, logPath) != l.Size() {
		t.Fatalf("closed segment is %d bytes, want trimmed to %d", fileSize(t, logPath), l.Size())
	}
}

func TestTruncateTo(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 2048
	l, dir := openTestLog(t, cfg)
	batches := fillLog(t, l, 30, 2, 150, 1) // offsets 0..59, several segments
	l.SetHighWatermark(60)
	segsBefore := len(segmentFiles(t, dir, logFileSuffix))
	if err := l.TruncateTo(21); err != nil { // inside batch 10 (offsets 20,21)
		t.Fatal(err)
	}
	if l.LogEndOffset() != 20 || l.HighWatermark() != 20 {
		t.Fatalf("after truncate: LEO %d HW %d, want 20", l.LogEndOffset(), l.HighWatermark())
	}
	if n := len(segmentFiles(t, dir, logFileSuffix)); n >= segsBefore {
		t.Fatalf("%d segments after truncation, had %d", n, segsBefore)
	}
	if _, err := l.Read(20, 100, math.MaxInt64, true); err != nil {
		t.Fatal(err)
	}
	res, err := l.Read(0, math.MaxInt32, math.MaxInt64, true)
	if err != nil {
		t.Fatal(err)
	}
	var got []byte
	for off := int64(0); off < 20; {
		res, err = l.Read(off, math.MaxInt32, math.MaxInt64, true)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, res.Records...)
		off += int64(len(res.Records) / len(batches[0]) * 2)
	}
	if !bytes.Equal(got, bytes.Join(batches[:10], nil)) {
		t.Fatal("data below the truncation point changed")
	}
	// Appends continue at the new end and survive a reopen.
	mustAppendFollower(t, l, simpleBatch(t, 20, 2, 99, 10))
	l.deleteExpiredSegments(farFuture)
	if len(segmentFiles(t, dir, deletedFileSuffix)) != 0 {
		t.Fatal(".deleted files left after their delay")
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l, err = Open(dir, cfg, 0, 0, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if l.LogEndOffset() != 22 {
		t.Fatalf("LEO after reopen %d, want 22", l.LogEndOffset())
	}
	// Truncating below the first segment starts over there.
	if err := l.TruncateTo(0); err != nil {
		t.Fatal(err)
	}
	if l.LogEndOffset() != 0 || l.Size() != 0 {
		t.Fatalf("after full truncation: LEO %d size %d", l.LogEndOffset(), l.Size())
	}
}

func TestTruncateBelowFirstSegment(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "logs", "topic-0")
	l, err := Open(dir, testConfig(), 0, 100, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	mustAppendFollower(t, l, simpleBatch(t, 100, 5, 1, 10))
	if l.LogStartOffset() != 100 || l.LogEndOffset() != 105 {
		t.Fatalf("start %d end %d", l.LogStartOffset(), l.LogEndOffset())
	}
	if err := l.TruncateTo(50); err != nil {
		t.Fatal(err)
	}
	if l.LogStartOffset() != 50 || l.LogEndOffset() != 50 || l.Size() != 0 || l.RecoveryPoint() != 50 {
		t.Fatalf("after full truncation: start %d end %d size %d rp %d", l.LogStartOffset(), l.LogEndOffset(), l.Size(), l.RecoveryPoint())
	}
	mustAppendFollower(t, l, simpleBatch(t, 50, 1, 1, 10))
	if _, err := os.Stat(segmentFileName(dir, 50, logFileSuffix)); err != nil {
		t.Fatal(err)
	}
}
