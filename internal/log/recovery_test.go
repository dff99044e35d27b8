package log

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// appendRaw writes bytes at the end of a segment file, as a crash mid-write
// would leave them.
func appendRaw(t *testing.T, path string, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
}

func TestRecoveryTruncatesTornTail(t *testing.T) {
	l, dir := openTestLog(t, testConfig())
	batches := fillLog(t, l, 10, 3, 40, 1)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	logPath := segmentFileName(dir, 0, logFileSuffix)
	good := fileSize(t, logPath)
	torn := simpleBatch(t, 30, 3, 1, 40)
	appendRaw(t, logPath, torn[:len(torn)/2])

	// No clean-shutdown marker: the segment is rescanned from recovery point 0.
	l, err := Open(dir, testConfig(), 0, 0, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	if l.LogEndOffset() != 30 || fileSize(t, logPath) != good {
		t.Fatalf("after recovery: LEO %d, file %d bytes; want 30, %d", l.LogEndOffset(), fileSize(t, logPath), good)
	}
	res, err := l.Read(0, math.MaxInt32, math.MaxInt64, true)
	if err != nil || !bytes.Equal(res.Records, bytes.Join(batches, nil)) {
		t.Fatalf("recovered data differs: %v", err)
	}
	// The log takes appends at the recovered end.
	mustAppendFollower(t, l, simpleBatch(t, 30, 1, 1, 1))
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestRecoveryTruncatesAtCorruptBatch(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 2048
	l, dir := openTestLog(t, cfg)
	batches := fillLog(t, l, 30, 2, 150, 1)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	logs := segmentFiles(t, dir, logFileSuffix)
	if len(logs) < 4 {
		t.Fatalf("%d segments, want several", len(logs))
	}
	// Corrupt a record byte in the second batch of the second segment.
	victim := logs[1]
	base, _ := parseSegmentBase(filepath.Base(victim))
	data, err := os.ReadFile(victim)
	if err != nil {
		t.Fatal(err)
	}
	size := len(batches[0])
	data[size+size-5] ^= 0xff
	if err := os.WriteFile(victim, data, 0o644); err != nil {
		t.Fatal(err)
	}

	// Recovery from a recovery point in the first segment rescans from there.
	l, err = Open(dir, cfg, 1, 0, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	wantLEO := base + 2 // the first batch of the damaged segment survives
	if l.LogEndOffset() != wantLEO {
		t.Fatalf("LEO %d, want %d", l.LogEndOffset(), wantLEO)
	}
	if n := len(segmentFiles(t, dir, logFileSuffix)); n != 2 {
		t.Fatalf("%d segments after recovery, want 2 (later ones deleted)", n)
	}
	if fileSize(t, victim) != int64(size) {
		t.Fatalf("damaged segment is %d bytes, want %d", fileSize(t, victim), size)
	}
	if l.RecoveryPoint() != 1 {
		t.Fatalf("recovery point %d, want 1 until the next flush", l.RecoveryPoint())
	}
	var got []byte
	for off := int64(0); off < wantLEO; {
		res, err := l.Read(off, math.MaxInt32, math.MaxInt64, true)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, res.Records...)
		off += int64(len(res.Records) / size * 2)
	}
	if !bytes.Equal(got, bytes.Join(batches[:wantLEO/2], nil)) {
		t.Fatal("data before the corruption changed")
	}
}

func TestCleanShutdownSkipsRecovery(t *testing.T) {
	l, dir := openTestLog(t, testConfig())
	fillLog(t, l, 5, 2, 10, 1)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// A clean shutdown skips the rescan: the marker is the promise that
	// the files are complete, checked only at the active segment's tail.
	// Here that tail is a whole valid batch appended behind the log's
	// back, which a clean load finds and keeps.
	appendRaw(t, segmentFileName(dir, 0, logFileSuffix), simpleBatch(t, 10, 2, 1, 10))
	markClean(t, dir)
	l, err := Open(dir, testConfig(), 0, 0, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if l.LogEndOffset() != 12 || l.RecoveryPoint() != 12 {
		t.Fatalf("clean load: LEO %d recovery point %d, want 12", l.LogEndOffset(), l.RecoveryPoint())
	}
}

// TestCleanShutdownTornTailRecovered is issue #20 item 3: 30 bytes cut from
// the active segment of a cleanly closed log (the marker is there) must
// cost only the torn batch, not hide the segment behind an index entry that
// points past the data, and the next append must follow the last whole
// batch.
func TestCleanShutdownTornTailRecovered(t *testing.T) {
	cfg := testConfig()
	cfg.IndexIntervalBytes = 256
	l, dir := openTestLog(t, cfg)
	batches := fillLog(t, l, 40, 3, 40, 1)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	logPath := segmentFileName(dir, 0, logFileSuffix)
	size := fileSize(t, logPath)
	if err := os.Truncate(logPath, size-30); err != nil {
		t.Fatal(err)
	}
	markClean(t, dir)
	l, err := Open(dir, cfg, 0, 0, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	kept := batches[:len(batches)-1]
	if want := int64(3 * len(kept)); l.LogEndOffset() != want {
		t.Fatalf("log end offset %d after the torn tail, want %d", l.LogEndOffset(), want)
	}
	if got, want := fileSize(t, logPath), size-int64(len(batches[len(batches)-1])); got != want {
		t.Fatalf("segment is %d bytes, want %d (the torn batch cut)", got, want)
	}
	res, err := l.Read(0, math.MaxInt32, math.MaxInt64, true)
	if err != nil || !bytes.Equal(res.Records, bytes.Join(kept, nil)) {
		t.Fatalf("data before the torn batch differs: %v", err)
	}
	next := simpleBatch(t, l.LogEndOffset(), 1, 1, 1)
	mustAppendFollower(t, l, next)
	res, err = l.Read(l.LogEndOffset()-1, math.MaxInt32, math.MaxInt64, true)
	if err != nil || !bytes.Equal(res.Records, next) {
		t.Fatalf("append after the torn tail not read back: %v", err)
	}
}

// TestBadIndexRebuilt damages the indexes of old segments of a cleanly
// closed log. A missing index is rebuilt at load; a damaged one is not read
// at load (as Kafka since KAFKA-7283) but found when first used, and then
// ignored: reads scan the segment, and its largest timestamp comes from the
// batches, not from zeros that would make it look 56 years old to retention.
func TestBadIndexRebuilt(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 4096
	cfg.IndexIntervalBytes = 256
	l, dir := openTestLog(t, cfg)
	batches := fillLog(t, l, 40, 2, 100, 1)
	segs, _ := l.snapshot()
	wantTs, wantTsOffset := segs[0].maxTimestampAndOffset()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	idx := segmentFileName(dir, 0, indexFileSuffix)
	tidx := segmentFileName(dir, 0, timeIndexFileSuffix)
	goodIdx, err := os.ReadFile(idx)
	if err != nil || len(goodIdx) == 0 {
		t.Fatalf("index: %v, %d bytes", err, len(goodIdx))
	}
	goodTimeIdx, _ := os.ReadFile(tidx)
	// A crash-style index: preallocated zeros after the entries; and a
	// time index of a length that is not a whole number of entries.
	if err := os.WriteFile(idx, append(append([]byte{}, goodIdx...), make([]byte, 64)...), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tidx, append(append([]byte{}, goodTimeIdx...), make([]byte, 24)...), 0o644); err != nil {
		t.Fatal(err)
	}
	// The second segment's index is gone altogether.
	second := segmentsBase(t, dir, 1)
	if err := os.Remove(segmentFileName(dir, second, indexFileSuffix)); err != nil {
		t.Fatal(err)
	}
	markClean(t, dir)
	l, err = Open(dir, cfg, 0, 0, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(segmentFileName(dir, second, indexFileSuffix)); err != nil {
		t.Fatalf("missing index not rebuilt: %v", err)
	}
	for i, b := range batches {
		res, err := l.Read(int64(i*2), int32(len(b)), math.MaxInt64, true)
		if err != nil || !bytes.Equal(res.Records, b) {
			t.Fatalf("read batch %d after rebuild: %v", i, err)
		}
	}
	segs, _ = l.snapshot()
	if !segs[0].offsetIdx.isCorrupt() {
		t.Fatal("padded offset index not found corrupt when used")
	}
	if ts, off := segs[0].maxTimestampAndOffset(); ts != wantTs || off != wantTsOffset {
		t.Fatalf("largest timestamp of the damaged segment %d at %d, want %d at %d", ts, off, wantTs, wantTsOffset)
	}
	if !segs[0].timeIdx.isCorrupt() {
		t.Fatal("padded time index not found corrupt when used")
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

// segmentsBase returns the base offset of the i-th segment in dir.
func segmentsBase(t *testing.T, dir string, i int) int64 {
	t.Helper()
	logs := segmentFiles(t, dir, logFileSuffix)
	if len(logs) <= i {
		t.Fatalf("only %d segments", len(logs))
	}
	base, _ := parseSegmentBase(filepath.Base(logs[i]))
	return base
}

func TestLeftoverFilesCleanedAndSwapCompleted(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 1024
	l, dir := openTestLog(t, cfg)
	batches := fillLog(t, l, 12, 1, 300, 1)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	second, third := segmentsBase(t, dir, 1), segmentsBase(t, dir, 2)
	// A cleaner's swap: one segment replacing the second and third, holding
	// their batches; plus leftovers of a deletion and a cleaning.
	var merged []byte
	for i := second; i < segmentsBase(t, dir, 3); i++ {
		merged = append(merged, batches[i]...)
	}
	if err := os.WriteFile(segmentFileName(dir, second, logFileSuffix+swapFileSuffix), merged, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"00000000000000000999.log.deleted", "00000000000000000998.log.cleaned", "00000000000000000001.index.swap"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	markClean(t, dir)
	l, err := Open(dir, cfg, 0, 0, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, suffix := range []string{deletedFileSuffix, cleanedFileSuffix, swapFileSuffix} {
		if m := segmentFiles(t, dir, suffix); len(m) != 0 {
			t.Fatalf("leftover files %v", m)
		}
	}
	if _, err := os.Stat(segmentFileName(dir, third, logFileSuffix)); !os.IsNotExist(err) {
		t.Fatalf("segment replaced by the swap still exists: %v", err)
	}
	if l.LogEndOffset() != 12 {
		t.Fatalf("LEO %d, want 12", l.LogEndOffset())
	}
	for i, b := range batches {
		res, err := l.Read(int64(i), int32(len(b)), math.MaxInt64, true)
		if err != nil || !bytes.Equal(res.Records, b) {
			t.Fatalf("read %d after swap: %v", i, err)
		}
	}
}
