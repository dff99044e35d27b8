package log

import (
	"testing"

	"gregor/internal/record"
)

func TestOffsetForTimestamp(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 1024
	cfg.IndexIntervalBytes = 200
	l, dir := openTestLog(t, cfg)
	// Batches of 3 records, timestamps 1000, 1010, 1020, ... out of order
	// inside each batch so the record scan matters.
	for i := int64(0); i < 30; i++ {
		base := 1000 + i*30
		mustAppendFollower(t, l, makeBatch(t, batchSpec{baseOffset: i * 3, timestamps: []int64{base + 20, base, base + 10}, valueSize: 50}))
	}
	// A compressed batch and a LogAppendTime batch at the end.
	mustAppendFollower(t, l, makeBatch(t, batchSpec{baseOffset: 90, timestamps: []int64{5000, 4000, 6000}, codec: record.CodecGzip}))
	mustAppendFollower(t, l, makeBatch(t, batchSpec{baseOffset: 93, timestamps: []int64{7000, 7000}, logAppendTime: true}))
	if len(segmentFiles(t, dir, logFileSuffix)) < 3 {
		t.Fatal("want several segments")
	}
	check := func(l *Log) {
		t.Helper()
		for _, c := range []struct {
			ts, offset, timestamp int64
			ok                    bool
		}{
			{0, 0, 1020, true},     // before everything: the first record
			{1000, 0, 1020, true},  // first record with ts >= 1000 is offset 0 (1020)
			{1021, 3, 1050, true},  // batch 1: 1050, 1030, 1040
			{1031, 3, 1050, true},  //
			{1051, 6, 1080, true},  //
			{1900, 90, 5000, true}, // past the uncompressed batches: the gzip batch
			{5500, 92, 6000, true}, // inside the compressed batch
			{6500, 93, 7000, true}, // LogAppendTime: every record has the batch time
			{7001, -1, -1, false},  // after everything
			{1000 + 29*30 + 20, 87, 1000 + 29*30 + 20, true},
		} {
			off, ts, ok := l.OffsetForTimestamp(c.ts)
			if off != c.offset || ts != c.timestamp || ok != c.ok {
				t.Fatalf("OffsetForTimestamp(%d) = %d, %d, %v; want %d, %d, %v", c.ts, off, ts, ok, c.offset, c.timestamp, c.ok)
			}
		}
		if ts, off := l.MaxTimestamp(); ts != 7000 || off != 93 {
			t.Fatalf("MaxTimestamp = %d at %d, want 7000 at 93", ts, off)
		}
	}
	check(l)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	markClean(t, dir)
	l, err := Open(dir, cfg, 0, 0, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	check(l) // from the time indexes on disk
}

func TestMaxTimestampFindsRecord(t *testing.T) {
	l, _ := openTestLog(t, testConfig())
	defer l.Close()
	if ts, off := l.MaxTimestamp(); ts != -1 || off != -1 {
		t.Fatalf("empty log: %d at %d", ts, off)
	}
	mustAppendFollower(t, l, makeBatch(t, batchSpec{baseOffset: 0, timestamps: []int64{10, 50, 20}}))
	mustAppendFollower(t, l, makeBatch(t, batchSpec{baseOffset: 3, timestamps: []int64{30, 40, 90, 90, 10}}))
	mustAppendFollower(t, l, makeBatch(t, batchSpec{baseOffset: 8, timestamps: []int64{60}}))
	if ts, off := l.MaxTimestamp(); ts != 90 || off != 5 {
		t.Fatalf("MaxTimestamp = %d at %d, want 90 at 5 (first record with it)", ts, off)
	}
}
