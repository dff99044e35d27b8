package log

import (
	"bytes"
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// retentionLog opens a log whose segments hold one batch each: every batch
// is batchSize bytes and segment.bytes leaves room for one only.
func retentionLog(t *testing.T, cfg Config) (*Log, string, int64) {
	t.Helper()
	batchSize := int64(len(simpleBatch(t, 0, 2, 0, 100)))
	cfg.SegmentBytes = int32(batchSize + batchSize/2)
	l, dir := openTestLog(t, cfg)
	t.Cleanup(func() { l.Close() })
	return l, dir, batchSize
}

// appendAt appends one 2-record batch whose records carry timestamps ts and
// ts+1 (so the batch's max timestamp is ts+1), and commits it.
func appendAt(t *testing.T, l *Log, ts int64) {
	t.Helper()
	mustAppendFollower(t, l, simpleBatch(t, l.LogEndOffset(), 2, ts, 100))
	l.SetHighWatermark(l.LogEndOffset())
}

func segmentBases(l *Log) []int64 {
	segs, _ := l.snapshot()
	out := make([]int64, len(segs))
	for i, s := range segs {
		out[i] = s.baseOffset
	}
	return out
}

func TestRetentionByTimeDeletesSegmentsOlderThanRetentionMs(t *testing.T) {
	cfg := testConfig()
	cfg.RetentionMs = 1000
	cfg.FileDeleteDelayMs = 60000
	l, dir, _ := retentionLog(t, cfg)
	// Max timestamps 101, 201, 301, 401, 501 in segments at 0, 2, 4, 6, 8.
	for ts := int64(100); ts <= 500; ts += 100 {
		appendAt(t, l, ts)
	}
	if got := segmentBases(l); !slices.Equal(got, []int64{0, 2, 4, 6, 8}) {
		t.Fatalf("segments %v, want one batch each", got)
	}
	// At 1301: 1301-101 and 1301-201 exceed 1000; 1301-301 = 1000 does not
	// (Kafka deletes only when now - largestTimestamp > retention.ms).
	n, err := l.DeleteOldSegments(time.UnixMilli(1301))
	if err != nil || n != 2 {
		t.Fatalf("deleted %d (%v), want 2", n, err)
	}
	if got := segmentBases(l); !slices.Equal(got, []int64{4, 6, 8}) {
		t.Fatalf("segments %v after retention, want [4 6 8]", got)
	}
	if l.LogStartOffset() != 4 {
		t.Fatalf("log start %d, want 4", l.LogStartOffset())
	}
	// The files wait as .deleted for file.delete.delay.ms, all four kinds.
	for _, suffix := range []string{logFileSuffix, indexFileSuffix, timeIndexFileSuffix} {
		for _, base := range []int64{0, 2} {
			if _, err := os.Stat(segmentFileName(dir, base, suffix) + deletedFileSuffix); err != nil {
				t.Fatalf("want %d%s renamed .deleted: %v", base, suffix, err)
			}
		}
	}
	if _, err := l.Read(2, math.MaxInt32, math.MaxInt64, true); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read below the new start: %v, want out of range", err)
	}
	l.deleteExpiredSegments(farFuture)
	if files := segmentFiles(t, dir, deletedFileSuffix); len(files) != 0 {
		t.Fatalf(".deleted files left after the delay: %v", files)
	}
	// Nothing more is due at the same time.
	if n, err := l.DeleteOldSegments(time.UnixMilli(1301)); n != 0 || err != nil {
		t.Fatalf("second pass deleted %d (%v)", n, err)
	}
}

func TestRetentionNeverPassesTheHighWatermark(t *testing.T) {
	cfg := testConfig()
	cfg.RetentionMs = 10
	l, _, _ := retentionLog(t, cfg)
	for ts := int64(100); ts <= 300; ts += 100 {
		appendAt(t, l, ts)
	}
	// Segment [2,4) is not committed: it and everything after stay.
	l.SetHighWatermark(3)
	n, err := l.DeleteOldSegments(time.UnixMilli(100000))
	if err != nil || n != 1 || l.LogStartOffset() != 2 {
		t.Fatalf("deleted %d (%v), start %d; want 1 and start 2", n, err, l.LogStartOffset())
	}
}

func TestRetentionBySize(t *testing.T) {
	for _, tc := range []struct {
		name        string
		limit       func(batch int64) int64
		wantDeleted int
	}{
		// 5 segments of one batch each; size 5B.
		{"below the limit", func(b int64) int64 { return 5*b + 1 }, 0},
		{"exactly at the limit", func(b int64) int64 { return 5 * b }, 0},
		{"two and a half segments", func(b int64) int64 { return 5*b/2 + 1 }, 2},
		{"three segments", func(b int64) int64 { return 3 * b }, 2},
		{"just under one segment", func(b int64) int64 { return b - 1 }, 4},
		{"zero keeps the empty active segment only", func(int64) int64 { return 0 }, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.RetentionMs = -1
			l, _, batch := retentionLog(t, cfg)
			l.UpdateConfig(func() Config { c := l.config(); c.RetentionBytes = tc.limit(batch); return c }())
			for i := int64(0); i < 5; i++ {
				appendAt(t, l, 100*i)
			}
			n, err := l.DeleteOldSegments(time.Now())
			if err != nil || n != tc.wantDeleted {
				t.Fatalf("deleted %d (%v), want %d", n, err, tc.wantDeleted)
			}
			if want := int64(2 * tc.wantDeleted); l.LogStartOffset() != want {
				t.Fatalf("log start %d, want %d", l.LogStartOffset(), want)
			}
			if l.LogEndOffset() != 10 {
				t.Fatalf("log end %d, want 10", l.LogEndOffset())
			}
		})
	}
}

func TestRetentionByTimeAndSize(t *testing.T) {
	cfg := testConfig()
	l, _, batch := retentionLog(t, cfg)
	for ts := int64(100); ts <= 500; ts += 100 {
		appendAt(t, l, ts)
	}
	// Size alone removes one segment (4B+1 must stay), time alone three.
	c := l.config()
	c.RetentionBytes, c.RetentionMs = 4*batch-1, 1000
	l.UpdateConfig(c)
	n, err := l.DeleteOldSegments(time.UnixMilli(1000 + 302))
	if err != nil || n != 3 || l.LogStartOffset() != 6 {
		t.Fatalf("deleted %d (%v), start %d; want 3 and 6", n, err, l.LogStartOffset())
	}
	// Size now matters more: 2 segments left, the limit keeps 1.
	c.RetentionBytes, c.RetentionMs = batch, -1
	l.UpdateConfig(c)
	if n, err := l.DeleteOldSegments(time.UnixMilli(0)); err != nil || n != 1 || l.LogStartOffset() != 8 {
		t.Fatalf("deleted %d (%v), start %d; want 1 and 8", n, err, l.LogStartOffset())
	}
}

func TestRetentionOffWithoutDeletePolicy(t *testing.T) {
	cfg := testConfig()
	cfg.DeleteEnabled = false // cleanup.policy=compact
	cfg.RetentionMs, cfg.RetentionBytes = 1, 1
	l, _, _ := retentionLog(t, cfg)
	for ts := int64(100); ts <= 300; ts += 100 {
		appendAt(t, l, ts)
	}
	if n, err := l.DeleteOldSegments(time.UnixMilli(1 << 40)); n != 0 || err != nil {
		t.Fatalf("compacted log lost %d segments (%v)", n, err)
	}
	// The log start offset still removes whole segments below it.
	if lw, err := l.DeleteRecordsBefore(5); err != nil || lw != 5 {
		t.Fatalf("delete records: %d, %v", lw, err)
	}
	if got := segmentBases(l); !slices.Equal(got, []int64{4}) {
		t.Fatalf("segments %v, want [4]", got)
	}
}

// TestRetentionRollsAnExpiredActiveSegment: when every segment, the active one
// included, has expired, Kafka rolls a new empty segment and deletes them all.
func TestRetentionRollsAnExpiredActiveSegment(t *testing.T) {
	cfg := testConfig()
	cfg.RetentionMs = 1000
	cfg.SegmentBytes = 1 << 20
	l, dir := openTestLog(t, cfg)
	defer l.Close()
	appendAt(t, l, 100)
	appendAt(t, l, 200)
	if got := segmentBases(l); !slices.Equal(got, []int64{0}) {
		t.Fatalf("segments %v, want only the active one", got)
	}
	n, err := l.DeleteOldSegments(time.UnixMilli(5000))
	if err != nil || n != 1 {
		t.Fatalf("deleted %d (%v), want 1", n, err)
	}
	if got := segmentBases(l); !slices.Equal(got, []int64{4}) {
		t.Fatalf("segments %v, want a new active segment at 4", got)
	}
	if l.LogStartOffset() != 4 || l.LogEndOffset() != 4 || l.HighWatermark() != 4 {
		t.Fatalf("start %d end %d hw %d, want 4 4 4", l.LogStartOffset(), l.LogEndOffset(), l.HighWatermark())
	}
	// An empty active segment is never deleted, however old.
	if n, err := l.DeleteOldSegments(time.UnixMilli(1 << 50)); n != 0 || err != nil {
		t.Fatalf("deleted %d (%v) from an empty log", n, err)
	}
	// The log goes on at 4.
	appendAt(t, l, 6000)
	res, err := l.Read(4, math.MaxInt32, math.MaxInt64, true)
	if err != nil || res.FirstBatchOffset != 4 {
		t.Fatalf("read after retention: %+v, %v", res.FirstBatchOffset, err)
	}
	if files := segmentFiles(t, dir, logFileSuffix); len(files) != 1 {
		t.Fatalf("live segment files %v", files)
	}
}

func TestDeleteRecordsBefore(t *testing.T) {
	l, _, _ := retentionLog(t, testConfig())
	for i := int64(0); i < 5; i++ {
		appendAt(t, l, 1<<40+i) // recent: time retention keeps them
	}
	l.SetHighWatermark(8)

	if _, err := l.DeleteRecordsBefore(9); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("delete above the high watermark: %v, want out of range", err)
	}
	if _, err := l.DeleteRecordsBefore(-2); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("delete before -2: %v, want out of range", err)
	}
	// Offset 3 lies inside segment [2,4): segment 0 goes, the start is 3.
	lw, err := l.DeleteRecordsBefore(3)
	if err != nil || lw != 3 || l.LogStartOffset() != 3 {
		t.Fatalf("low watermark %d (%v), start %d; want 3", lw, err, l.LogStartOffset())
	}
	if got := segmentBases(l); !slices.Equal(got, []int64{2, 4, 6, 8}) {
		t.Fatalf("segments %v, want [2 4 6 8]", got)
	}
	// Offset 2 is still on disk but below the start: out of range.
	if _, err := l.Read(2, math.MaxInt32, math.MaxInt64, true); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read at 2: %v, want out of range", err)
	}
	if res, err := l.Read(3, math.MaxInt32, math.MaxInt64, true); err != nil || res.FirstBatchOffset != 2 {
		t.Fatalf("read at 3: first batch %d, %v; want the batch at 2", res.FirstBatchOffset, err)
	}
	// Never lowers the start.
	if lw, err := l.DeleteRecordsBefore(1); err != nil || lw != 3 {
		t.Fatalf("delete before 1: %d, %v; want 3", lw, err)
	}
	// -1 is the high watermark.
	if lw, err := l.DeleteRecordsBefore(-1); err != nil || lw != 8 {
		t.Fatalf("delete before the high watermark: %d, %v; want 8", lw, err)
	}
	if got := segmentBases(l); !slices.Equal(got, []int64{8}) {
		t.Fatalf("segments %v, want [8]", got)
	}
	// The timestamp search starts at the log start offset too.
	if off, _, ok := l.OffsetForTimestamp(0); !ok || off != 8 {
		t.Fatalf("offset for timestamp 0: %d, %v; want 8", off, ok)
	}
}

// TestLogStartOffsetSurvivesRestart: the manager checkpoints the raised log
// start offset, and retention of a loaded log waits for its topic settings.
func TestLogStartOffsetSurvivesRestart(t *testing.T) {
	root := t.TempDir()
	mcfg := ManagerConfig{Dirs: []string{root}, Default: testConfig(), Logger: testLogger()}
	m, err := NewManager(mcfg)
	if err != nil {
		t.Fatal(err)
	}
	tp := TopicPartition{"t", 0}
	cfg := testConfig()
	cfg.SegmentBytes = int32(len(simpleBatch(t, 0, 2, 0, 100)) * 3 / 2)
	cfg.RetentionMs = -1
	l, err := m.GetOrCreate(tp, [16]byte{1}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i := int64(0); i < 4; i++ {
		appendAt(t, l, 100+i)
	}
	if lw, err := l.DeleteRecordsBefore(5); err != nil || lw != 5 {
		t.Fatalf("delete records: %d, %v", lw, err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if cp, err := readCheckpoint(filepath.Join(root, LogStartOffsetCheckpointFile)); err != nil || cp[tp] != 5 {
		t.Fatalf("log start checkpoint %v, %v; want t-0 at 5", cp, err)
	}

	// Reopened with the broker default retention.ms (7 days): the old
	// timestamps would expire, but a loaded log waits for its topic config.
	m, err = NewManager(mcfg)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	l, _ = m.Get(tp)
	if l.LogStartOffset() != 5 {
		t.Fatalf("log start after restart %d, want 5", l.LogStartOffset())
	}
	if _, err := l.Read(4, 1<<20, math.MaxInt64, true); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read at 4 after restart: %v, want out of range", err)
	}
	l.SetHighWatermark(l.LogEndOffset())
	if n := m.cleanupLogs(time.Now()); n != 0 {
		t.Fatalf("retention deleted %d segments of a log without its topic config", n)
	}
	if _, err := m.GetOrCreate(tp, [16]byte{1}, cfg); err != nil {
		t.Fatal(err)
	}
	if n := m.cleanupLogs(time.Now()); n != 0 {
		t.Fatalf("retention.ms=-1 deleted %d segments", n)
	}
	cfg.RetentionMs = 1000
	l.UpdateConfig(cfg)
	if n := m.cleanupLogs(time.Now()); n != 2 || l.LogStartOffset() != 8 {
		t.Fatalf("deleted %d, start %d; want 2 (with the active one) and 8", n, l.LogStartOffset())
	}
}

// TestManagerRunsRetention: the background task applies retention every
// log.retention.check.interval.ms and then removes the files after
// file.delete.delay.ms.
func TestManagerRunsRetention(t *testing.T) {
	root := t.TempDir()
	m, err := NewManager(ManagerConfig{Dirs: []string{root}, Default: testConfig(), Logger: testLogger(),
		RetentionCheckIntervalMs: 10})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	cfg := testConfig()
	cfg.SegmentBytes = int32(len(simpleBatch(t, 0, 2, 0, 100)) * 3 / 2)
	cfg.RetentionMs = 60000
	cfg.FileDeleteDelayMs = 10
	l, err := m.GetOrCreate(TopicPartition{"t", 0}, [16]byte{1}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour).UnixMilli()
	appendAt(t, l, old)
	appendAt(t, l, old)
	appendAt(t, l, time.Now().UnixMilli())
	m.Start(context.Background())
	deadline := time.Now().Add(10 * time.Second)
	for {
		files := segmentFiles(t, l.Dir(), "")
		if l.LogStartOffset() == 4 && !slices.ContainsFunc(files, func(f string) bool {
			return bytes.HasSuffix([]byte(f), []byte(deletedFileSuffix))
		}) && len(segmentFiles(t, l.Dir(), logFileSuffix)) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("retention did not run: start %d, files %v", l.LogStartOffset(), files)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
