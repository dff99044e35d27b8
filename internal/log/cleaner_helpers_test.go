package log

import (
	"context"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gregor/internal/record"
)

// kv is one record to append; a nil value is a tombstone.
type kv struct {
	key, value []byte
}

func val(k, v string) kv { return kv{key: []byte(k), value: []byte(v)} }
func tomb(k string) kv   { return kv{key: []byte(k)} }
func noKey(v string) kv  { return kv{value: []byte(v)} }

// producer describes the producer fields of a test batch.
type producer struct {
	id    int64
	epoch int16
	seq   int32
}

var noProducer = producer{id: record.NoProducerID, epoch: record.NoProducerEpoch, seq: record.NoSequence}

// keyedBatch builds a v2 batch with package record's builder, one record per
// kv at timestamps ts, ts+1, ...
func keyedBatch(t testing.TB, base, ts int64, codec record.Codec, p producer, recs []kv) []byte {
	t.Helper()
	b := record.NewBuilder(record.BuilderOptions{BaseOffset: base, Codec: codec,
		ProducerID: p.id, ProducerEpoch: p.epoch, BaseSequence: p.seq})
	for i, r := range recs {
		b.Append(ts+int64(i), r.key, r.value, nil)
	}
	out, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// appendKeyed appends one batch at the log end offset and returns its base.
func appendKeyed(t testing.TB, l *Log, ts int64, codec record.Codec, p producer, recs ...kv) int64 {
	t.Helper()
	base := l.LogEndOffset()
	mustAppendFollower(t, l, keyedBatch(t, base, ts, codec, p, recs))
	return base
}

// readRec is one record read back, with its batch's header.
type readRec struct {
	offset     int64
	ts         int64
	key, value []byte
	hdr        record.BatchHeader
}

// readLog reads every batch from the log start to the end; empty batches
// appear in batches only.
func readLog(t testing.TB, l *Log) (recs []readRec, batches []record.BatchHeader) {
	t.Helper()
	off, leo := l.LogStartOffset(), l.LogEndOffset()
	for off < leo {
		ri, err := l.Read(off, 1<<20, math.MaxInt64, true)
		if err != nil {
			t.Fatalf("read at %d: %v", off, err)
		}
		if len(ri.Records) == 0 {
			t.Fatalf("read at %d below log end %d returned nothing", off, leo)
		}
		for rest := ri.Records; len(rest) > 0; {
			h, err := record.ParseHeader(rest)
			if err != nil {
				t.Fatal(err)
			}
			_, rs, err := record.ReadRecords(rest[:h.Size()])
			if err != nil {
				t.Fatalf("batch at %d: %v", h.BaseOffset, err)
			}
			batches = append(batches, h)
			for _, r := range rs {
				o := h.BaseOffset + int64(r.OffsetDelta)
				if o >= off {
					ts := h.BaseTimestamp + r.TimestampDelta
					if h.LogAppendTime() {
						ts = h.MaxTimestamp
					}
					recs = append(recs, readRec{offset: o, ts: ts, key: clone(r.Key), value: clone(r.Value), hdr: h})
				}
			}
			off = max(off, h.NextOffset())
			rest = rest[h.Size():]
		}
	}
	return recs, batches
}

func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}

// testCleaner drives one cleaner thread by hand, keeping the checkpoint as
// the manager would.
type testCleaner struct {
	c          *cleaner
	checkpoint int64
	has        bool
	stats      CleanerStats
}

func newTestCleaner(t testing.TB, dedupeBytes int64) *testCleaner {
	t.Helper()
	c, err := newCleaner(0, dedupeBytes, 64<<10, 0.9, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	return &testCleaner{c: c}
}

// cleanOnce cleans whatever is cleanable below the last stable offset at time
// now (ms), ignoring the dirty ratio; it reports whether anything ran.
func (tc *testCleaner) cleanOnce(t testing.TB, l *Log, now int64) bool {
	t.Helper()
	ran, err := tc.tryClean(context.Background(), l, now)
	if err != nil {
		t.Fatalf("clean: %v", err)
	}
	return ran
}

func (tc *testCleaner) tryClean(ctx context.Context, l *Log, now int64) (bool, error) {
	ltc, _ := cleanableOffsets(l, tc.checkpoint, tc.has, now, l.LastStableOffset())
	if ltc.cleanableBytes == 0 {
		return false, nil
	}
	end, err := tc.c.clean(ctx, ltc, now, &tc.stats)
	if err != nil {
		return true, err
	}
	tc.checkpoint, tc.has = end, true
	l.deleteExpiredSegments(farFuture)
	return true, nil
}

// cleanFully cleans until the checkpoint reaches the active segment.
func (tc *testCleaner) cleanFully(t testing.TB, l *Log, now int64) int {
	t.Helper()
	passes := 0
	for tc.cleanOnce(t, l, now) {
		passes++
		segs, _ := l.snapshot()
		if tc.checkpoint >= segs[len(segs)-1].baseOffset || passes > 1000 {
			break
		}
	}
	return passes
}

// tempFiles lists the files of dir with a temporary suffix.
func tempFiles(t testing.TB, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		for _, s := range []string{cleanedFileSuffix, swapFileSuffix, deletedFileSuffix} {
			if strings.HasSuffix(e.Name(), s) {
				out = append(out, e.Name())
			}
		}
	}
	return out
}

// copyDir copies the regular files of src into a new directory dst.
func copyDir(t testing.TB, src, dst string) {
	t.Helper()
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		in, err := os.Open(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out, err := os.Create(filepath.Join(dst, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(out, in); err != nil {
			t.Fatal(err)
		}
		in.Close()
		if err := out.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// compactConfig is a compacted topic's log config for tests.
func compactConfig() Config {
	c := testConfig()
	c.Compact = true
	c.DeleteEnabled = false
	c.SegmentBytes = 1 << 20
	c.IndexIntervalBytes = 128
	return c
}
