package log

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

// TestReadFileRangeMatchesRead compares the zero-copy read with the copying
// one over many offsets, byte budgets and upper bounds, across segments of
// batches of varied sizes.
func TestReadFileRangeMatchesRead(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 64 << 10
	cfg.SegmentIndexBytes = 64 << 10
	cfg.IndexIntervalBytes = 1024
	l, _ := openTestLog(t, cfg)
	defer l.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 400; i++ {
		recs := 1 + rng.IntN(8)
		b := simpleBatch(t, l.LogEndOffset(), recs, 1_700_000_000_000+int64(i), 20+rng.IntN(600))
		mustAppendFollower(t, l, b)
	}
	leo := l.LogEndOffset()
	if segs, _ := l.snapshot(); len(segs) < 3 {
		t.Fatalf("want several segments, have %d", len(segs))
	}
	for i := 0; i < 3000; i++ {
		offset := rng.Int64N(leo + 1)
		maxBytes := int32(rng.IntN(20 << 10))
		maxOffset := int64(math.MaxInt64)
		if rng.IntN(2) == 0 {
			maxOffset = rng.Int64N(leo + 2)
		}
		minOne := rng.IntN(2) == 0
		want, err := l.Read(offset, maxBytes, maxOffset, minOne)
		if err != nil {
			t.Fatal(err)
		}
		r, err := l.ReadFileRange(offset, maxBytes, maxOffset, minOne)
		if err != nil {
			t.Fatal(err)
		}
		got, err := r.ReadAll()
		r.Release()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want.Records) || r.FirstBatchOffset != want.FirstBatchOffset {
			t.Fatalf("read(%d, %d, %d, %v): range of %d bytes at batch %d, copying read %d bytes at batch %d",
				offset, maxBytes, maxOffset, minOne, len(got), r.FirstBatchOffset, len(want.Records), want.FirstBatchOffset)
		}
	}
	if _, err := l.ReadFileRange(leo+1, 100, math.MaxInt64, true); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read past the end: %v", err)
	}
}

// TestFileRangeOutlivesSegment checks that a pending range keeps its file
// readable while the segment is truncated away, deleted and the log closed,
// and that the file is closed once the range is released.
func TestFileRangeOutlivesSegment(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 4 << 10
	l, _ := openTestLog(t, cfg)
	batches := fillLog(t, l, 20, 5, 200, 1_700_000_000_000)
	segs, _ := l.snapshot()
	last := segs[len(segs)-1]
	r, err := l.ReadFileRange(last.baseOffset, math.MaxInt32, math.MaxInt64, true)
	if err != nil {
		t.Fatal(err)
	}
	// Truncating into the previous segment deletes the last one (renamed,
	// then removed after file.delete.delay.ms), and closing the log closes
	// the rest.
	if err := l.TruncateTo(last.baseOffset - 5); err != nil {
		t.Fatal(err)
	}
	l.deleteExpiredSegments(farFuture)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := r.ReadAll()
	if err != nil {
		t.Fatalf("read of a pending range after delete and close: %v", err)
	}
	if !bytes.Equal(got, bytes.Join(batches[last.baseOffset/5:], nil)) {
		t.Fatal("pending range read other bytes")
	}
	f := r.File()
	r.Release()
	r.Release() // idempotent
	if _, err := f.Stat(); err == nil {
		t.Fatal("segment file still open after the last range was released")
	}
	if _, err := last.file.acquire(); err == nil {
		t.Fatal("a closed segment handed out a new reference")
	}
}
