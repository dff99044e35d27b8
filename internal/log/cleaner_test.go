package log

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"gregor/internal/record"
)

const testNowMs = int64(1_700_000_000_000)

// origRecord is what was appended at an offset.
type origRecord struct {
	key, value []byte
	// cleansBefore is how many cleans had run when it was appended: its
	// delete horizon, if it is a tombstone, cannot precede the next one.
	cleansBefore int
}

// TestCleanerProperty appends random keys, values and tombstones over many
// batches (every codec) and rolls, cleans at random times with a large or a
// tiny offset map, and checks after every clean that:
//   - offsets strictly increase and every record is the one appended at its
//     offset (offsets are preserved);
//   - the newest record of every key is still there, except a tombstone whose
//     delete.retention.ms, counted from the first clean after it, has passed;
//   - below the cleaner checkpoint every key appears at most once;
//   - rewritten batches keep their codec.
//
// At the end everything is cleaned, twice across delete.retention.ms, and the
// log must equal the model: the latest value of every live key, no tombstones.
func TestCleanerProperty(t *testing.T) {
	for seed := uint64(1); seed <= 6; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) { runCleanerProperty(t, seed) })
	}
}

func runCleanerProperty(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	cfg := compactConfig()
	cfg.SegmentBytes = 2048 + int32(rng.IntN(4096))
	const retention = 5000
	cfg.DeleteRetentionMs = retention
	l, _ := openTestLog(t, cfg)
	defer l.Close()
	dedupe := int64(1 << 20)
	if seed%2 == 1 {
		dedupe = 24 * 53 // 53 slots: the map fills and cleans are partial
	}
	tc := newTestCleaner(t, dedupe)
	codecs := []record.Codec{record.CodecNone, record.CodecGzip, record.CodecSnappy, record.CodecLZ4, record.CodecZstd}

	now := testNowMs
	orig := map[int64]origRecord{}
	batchCodec := map[int64]record.Codec{}
	latest := map[string]int64{}
	var cleanTimes []int64

	check := func() {
		t.Helper()
		recs, batches := readLog(t, l)
		for _, h := range batches {
			if h.NumRecords > 0 && h.Compression() != batchCodec[h.BaseOffset] {
				t.Fatalf("batch %d has codec %v, was %v", h.BaseOffset, h.Compression(), batchCodec[h.BaseOffset])
			}
		}
		present := map[int64]bool{}
		prev := int64(-1)
		seenBelow := map[string]int64{}
		for _, r := range recs {
			if r.offset <= prev {
				t.Fatalf("offset %d after %d", r.offset, prev)
			}
			prev = r.offset
			o, ok := orig[r.offset]
			if !ok || !bytes.Equal(o.key, r.key) || !bytes.Equal(o.value, r.value) || (o.value == nil) != (r.value == nil) {
				t.Fatalf("offset %d holds %q=%q, appended %q=%q", r.offset, r.key, r.value, o.key, o.value)
			}
			present[r.offset] = true
			if tc.has && r.offset < tc.checkpoint {
				if other, dup := seenBelow[string(r.key)]; dup {
					t.Fatalf("key %q at %d and %d, both below the checkpoint %d", r.key, other, r.offset, tc.checkpoint)
				}
				seenBelow[string(r.key)] = r.offset
			}
		}
		for k, off := range latest {
			if present[off] {
				continue
			}
			o := orig[off]
			if o.value != nil {
				t.Fatalf("latest value of %q at %d is gone", k, off)
			}
			if o.cleansBefore >= len(cleanTimes) || now < cleanTimes[o.cleansBefore]+retention {
				t.Fatalf("tombstone of %q at %d removed before delete.retention.ms", k, off)
			}
		}
	}

	appendRandom := func(step int) {
		n := 1 + rng.IntN(5)
		recs := make([]kv, n)
		for i := range recs {
			k := fmt.Sprintf("key-%d", rng.IntN(40))
			if rng.IntN(5) == 0 {
				recs[i] = tomb(k)
			} else {
				recs[i] = val(k, fmt.Sprintf("value-%d-%d-%s", step, i, bytes.Repeat([]byte{'x'}, rng.IntN(40))))
			}
		}
		codec := codecs[rng.IntN(len(codecs))]
		base := appendKeyed(t, l, now, codec, noProducer, recs...)
		batchCodec[base] = codec
		for i, r := range recs {
			orig[base+int64(i)] = origRecord{key: r.key, value: r.value, cleansBefore: len(cleanTimes)}
			latest[string(r.key)] = base + int64(i)
		}
	}

	for step := 0; step < 400; step++ {
		appendRandom(step)
		if rng.IntN(12) == 0 {
			if err := l.Roll(); err != nil {
				t.Fatal(err)
			}
		}
		// The high watermark sometimes lags: the cleaner must stay below it.
		l.SetHighWatermark(l.LogEndOffset() - int64(rng.IntN(3)))
		now += int64(rng.IntN(400))
		if rng.IntN(10) == 0 {
			if tc.cleanOnce(t, l, now) {
				if tc.checkpoint > l.HighWatermark() {
					t.Fatalf("cleaned up to %d past the high watermark %d", tc.checkpoint, l.HighWatermark())
				}
				cleanTimes = append(cleanTimes, now)
				check()
			}
		}
	}

	// Clean everything, let every horizon pass, write a little more so
	// there is something dirty, and clean everything again: tombstones below
	// the previous checkpoint had their horizon set by then and must go.
	var previousCheckpoint int64
	for round := 0; round < 3; round++ {
		if err := l.Roll(); err != nil {
			t.Fatal(err)
		}
		l.SetHighWatermark(l.LogEndOffset())
		previousCheckpoint = tc.checkpoint
		tc.cleanFully(t, l, now)
		cleanTimes = append(cleanTimes, now)
		check()
		now += retention + 1
		appendRandom(1000 + round)
	}
	recs, _ := readLog(t, l)
	got := map[string]string{}
	for _, r := range recs {
		if r.offset >= tc.checkpoint {
			continue
		}
		if r.value == nil {
			if r.offset < previousCheckpoint {
				t.Fatalf("tombstone of %q at %d survived past its delete horizon", r.key, r.offset)
			}
			continue
		}
		got[string(r.key)] = string(r.value)
	}
	latestBelow := map[string]int64{}
	for off, o := range orig {
		if off < tc.checkpoint && off > latestBelow[string(o.key)] {
			latestBelow[string(o.key)] = off
		}
	}
	want := map[string]string{}
	for k, off := range latestBelow {
		if orig[off].value != nil {
			want[k] = string(orig[off].value)
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("compacted log\n%v\nmodel\n%v", got, want)
	}
}

// TestCleanerKeepsProducerState checks Kafka's batch rules: a batch losing
// some records is rebuilt with its base offset, last offset delta, producer
// id, epoch and base sequence; a batch losing all its records goes, unless it
// is its producer's last, which stays as an empty batch.
func TestCleanerKeepsProducerState(t *testing.T) {
	l, _ := openTestLog(t, compactConfig())
	defer l.Close()
	p7 := producer{id: 7, epoch: 3, seq: 0}
	appendKeyed(t, l, testNowMs, record.CodecNone, p7, val("a", "1"), val("b", "1")) // 0-1: all superseded
	p7.seq = 2
	appendKeyed(t, l, testNowMs, record.CodecLZ4, p7, val("a", "2")) // 2: superseded, last of producer 7
	p8 := producer{id: 8, epoch: 1, seq: 10}
	appendKeyed(t, l, testNowMs, record.CodecZstd, p8, val("c", "1"), val("d", "1"), val("e", "1"))         // 3-5: d superseded
	appendKeyed(t, l, testNowMs, record.CodecNone, noProducer, val("a", "3"), val("b", "3"), val("d", "3")) // 6-8
	appendKeyed(t, l, testNowMs, record.CodecNone, noProducer, noKey("old"))                                // 9: no key: dropped
	appendKeyed(t, l, testNowMs, record.CodecNone, noProducer, val("f", "1"))                               // 10
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	l.SetHighWatermark(l.LogEndOffset())
	tc := newTestCleaner(t, 1<<20)
	tc.cleanFully(t, l, testNowMs)

	recs, batches := readLog(t, l)
	var offsets []int64
	for _, r := range recs {
		offsets = append(offsets, r.offset)
	}
	if want := []int64{3, 5, 6, 7, 8, 10}; !slices.Equal(offsets, want) {
		t.Fatalf("offsets %v, want %v", offsets, want)
	}
	if tc.stats.InvalidMessages != 1 {
		t.Errorf("invalid messages %d, want 1", tc.stats.InvalidMessages)
	}
	byBase := map[int64]record.BatchHeader{}
	for _, h := range batches {
		byBase[h.BaseOffset] = h
	}
	if _, ok := byBase[0]; ok {
		t.Error("producer 7's emptied earlier batch was kept")
	}
	empty, ok := byBase[2]
	if !ok || empty.NumRecords != 0 || empty.ProducerID != 7 || empty.ProducerEpoch != 3 || empty.BaseSequence != 2 ||
		empty.LastOffsetDelta != 0 || empty.Size() != record.HeaderSize {
		t.Errorf("producer 7's last batch: %+v (kept %v)", empty, ok)
	}
	rebuilt := byBase[3]
	if rebuilt.NumRecords != 2 || rebuilt.LastOffsetDelta != 2 || rebuilt.ProducerID != 8 || rebuilt.ProducerEpoch != 1 ||
		rebuilt.BaseSequence != 10 || rebuilt.Compression() != record.CodecZstd {
		t.Errorf("rebuilt batch: %+v", rebuilt)
	}
	if _, ok := byBase[9]; ok {
		t.Error("batch of keyless record kept")
	}
}

// TestCleanerTombstoneHorizon follows one tombstone: the first clean keeps it
// and stamps its batch with the delete horizon (KIP-534), a clean before the
// horizon keeps it, a clean at the horizon removes it.
func TestCleanerTombstoneHorizon(t *testing.T) {
	cfg := compactConfig()
	cfg.DeleteRetentionMs = 1000
	l, _ := openTestLog(t, cfg)
	defer l.Close()
	appendKeyed(t, l, testNowMs, record.CodecNone, noProducer, val("k", "v"), val("x", "1"))
	appendKeyed(t, l, testNowMs, record.CodecGzip, noProducer, tomb("k"), val("y", "1"))
	tc := newTestCleaner(t, 1<<20)
	dirtyMore := func(now int64) {
		appendKeyed(t, l, now, record.CodecNone, noProducer, val("z", fmt.Sprint(now)))
		if err := l.Roll(); err != nil {
			t.Fatal(err)
		}
		l.SetHighWatermark(l.LogEndOffset())
	}
	tombstone := func() (readRec, bool) {
		recs, _ := readLog(t, l)
		for _, r := range recs {
			if string(r.key) == "k" {
				return r, true
			}
		}
		return readRec{}, false
	}

	dirtyMore(testNowMs)
	tc.cleanFully(t, l, testNowMs)
	r, ok := tombstone()
	if !ok || r.value != nil {
		t.Fatalf("after the first clean: %+v, present %v", r, ok)
	}
	if !r.hdr.HasDeleteHorizon() || r.hdr.BaseTimestamp != testNowMs+1000 || r.hdr.Compression() != record.CodecGzip {
		t.Fatalf("tombstone batch header %+v: want delete horizon %d, gzip", r.hdr, testNowMs+1000)
	}
	dirtyMore(testNowMs + 999)
	tc.cleanFully(t, l, testNowMs+999)
	if _, ok := tombstone(); !ok {
		t.Fatal("tombstone removed before its horizon")
	}
	dirtyMore(testNowMs + 1000)
	tc.cleanFully(t, l, testNowMs+1000)
	if r, ok := tombstone(); ok {
		t.Fatalf("tombstone kept past its horizon: %+v", r)
	}
	// The batch keeps its horizon (Kafka keeps an existing one when it
	// rebuilds a batch) and the record its timestamp.
	recs, _ := readLog(t, l)
	for _, r := range recs {
		if string(r.key) == "y" && (!r.hdr.HasDeleteHorizon() || r.ts != testNowMs+1 || r.hdr.MaxTimestamp != testNowMs+1) {
			t.Fatalf("y: timestamp %d in batch %+v, want %d", r.ts, r.hdr, testNowMs+1)
		}
	}
}

// TestCleanerBoundedMap fills a tiny offset map: each clean stops at the
// offset the map reached, and further passes finish the job.
func TestCleanerBoundedMap(t *testing.T) {
	l, _ := openTestLog(t, compactConfig())
	defer l.Close()
	for pass := 0; pass < 2; pass++ {
		for k := 0; k < 300; k += 10 {
			var recs []kv
			for i := k; i < k+10; i++ {
				recs = append(recs, val(fmt.Sprint("key-", i), fmt.Sprint("v", pass)))
			}
			appendKeyed(t, l, testNowMs, record.CodecSnappy, noProducer, recs...)
			if k%50 == 0 {
				if err := l.Roll(); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	l.SetHighWatermark(l.LogEndOffset())
	tc := newTestCleaner(t, 24*101) // 101 slots, 90 keys per pass
	if !tc.cleanOnce(t, l, testNowMs) {
		t.Fatal("nothing cleaned")
	}
	if first := tc.checkpoint; first < 90 || first > 101 {
		t.Fatalf("first pass ended at %d, want about 90 (the map's capacity)", first)
	}
	passes := 1 + tc.cleanFully(t, l, testNowMs)
	if passes < 6 {
		t.Fatalf("%d passes for 600 records through a 90-key map", passes)
	}
	recs, _ := readLog(t, l)
	if len(recs) != 300 {
		t.Fatalf("%d records left, want 300", len(recs))
	}
	for _, r := range recs {
		if string(r.value) != "v1" {
			t.Fatalf("%s=%s survived", r.key, r.value)
		}
	}
}

// TestCleanerGroupsSegments checks that small segments are merged into
// cleaned segments of at most segment.bytes, with rebuilt indexes that find
// every record.
func TestCleanerGroupsSegments(t *testing.T) {
	cfg := compactConfig()
	cfg.SegmentBytes = 4096
	l, dir := openTestLog(t, cfg)
	defer l.Close()
	for i := 0; i < 200; i++ {
		appendKeyed(t, l, testNowMs+int64(i), record.CodecNone, noProducer, val(fmt.Sprint("k", i%50), fmt.Sprint("value-", i)))
		if i%5 == 4 {
			if err := l.Roll(); err != nil {
				t.Fatal(err)
			}
		}
	}
	before := len(segmentFiles(t, dir, logFileSuffix))
	l.SetHighWatermark(l.LogEndOffset())
	tc := newTestCleaner(t, 1<<20)
	tc.cleanFully(t, l, testNowMs)
	segs, _ := l.snapshot()
	if len(segs) >= before/4 {
		t.Fatalf("%d segments after cleaning, %d before: not grouped", len(segs), before)
	}
	for _, s := range segs {
		if s.size.Load() > int64(cfg.SegmentBytes) {
			t.Fatalf("segment %d has %d bytes, above segment.bytes", s.baseOffset, s.size.Load())
		}
	}
	if tmp := tempFiles(t, dir); len(tmp) != 0 {
		t.Fatalf("temporary files left: %v", tmp)
	}
	recs, _ := readLog(t, l)
	if len(recs) != 50 {
		t.Fatalf("%d records, want 50", len(recs))
	}
	for _, r := range recs {
		ri, err := l.Read(r.offset, 1, r.offset+1000, true)
		if err != nil || ri.FirstBatchOffset > r.offset {
			t.Fatalf("read at %d: %v (batch %d)", r.offset, err, ri.FirstBatchOffset)
		}
		if off, _, ok := l.OffsetForTimestamp(testNowMs + r.offset); !ok || off != r.offset {
			t.Fatalf("timestamp search for %d found %d, %v", r.offset, off, ok)
		}
	}
	// A reopened log finds the same records through the rebuilt indexes.
	l.Close()
	markClean(t, dir)
	l2, err := Open(dir, cfg, 0, 0, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	recs2, _ := readLog(t, l2)
	if len(recs2) != len(recs) {
		t.Fatalf("reopened log has %d records, want %d", len(recs2), len(recs))
	}
}

// TestCleanerAbort cancels a clean between two groups: the first group's
// swap stands, the second's .cleaned files are deleted, the log is intact.
func TestCleanerAbort(t *testing.T) {
	cfg := compactConfig()
	cfg.SegmentBytes = 2048
	l, dir := openTestLog(t, cfg)
	defer l.Close()
	for i := 0; i < 120; i++ {
		appendKeyed(t, l, testNowMs, record.CodecNone, noProducer, val(fmt.Sprint("k", i%30), fmt.Sprint("value-", i)))
	}
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	l.SetHighWatermark(l.LogEndOffset())
	want, _ := readLog(t, l)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tc := newTestCleaner(t, 1<<20)
	swaps := 0
	tc.c.crashAt = func(step swapStep) bool {
		if step == swapStepSwap {
			swaps++
			cancel()
		}
		return false
	}
	_, err := tc.tryClean(ctx, l, testNowMs)
	if !errors.Is(err, errCleaningAborted) {
		t.Fatalf("clean returned %v, want aborted", err)
	}
	if swaps != 1 {
		t.Fatalf("%d swaps, want 1", swaps)
	}
	l.deleteExpiredSegments(farFuture)
	if tmp := tempFiles(t, dir); len(tmp) != 0 {
		t.Fatalf("temporary files left: %v", tmp)
	}
	got, _ := readLog(t, l)
	latestOf := func(recs []readRec) map[string]string {
		m := map[string]string{}
		for _, r := range recs {
			m[string(r.key)] = string(r.value)
		}
		return m
	}
	if fmt.Sprint(latestOf(got)) != fmt.Sprint(latestOf(want)) || len(got) >= len(want) {
		t.Fatalf("after the aborted clean: %d records, latest %v; before: %d, %v",
			len(got), latestOf(got), len(want), latestOf(want))
	}
}

// TestReplaceSegmentsRefusesChangedLog: a swap is refused when the log was
// truncated since the clean started, or when the segments to replace are no
// longer a run of non-active segments of the log.
func TestReplaceSegmentsRefusesChangedLog(t *testing.T) {
	l, dir := openTestLog(t, compactConfig())
	defer l.Close()
	for i := 0; i < 20; i++ {
		appendKeyed(t, l, testNowMs, record.CodecNone, noProducer, val(fmt.Sprint("k", i%5), "v"))
		if i%5 == 4 {
			if err := l.Roll(); err != nil {
				t.Fatal(err)
			}
		}
	}
	segs, _ := l.snapshot()
	try := func(old []*segment, generation int64) error {
		c, err := createCleanedSegment(dir, old[0].baseOffset, l.config(), l.files)
		if err != nil {
			t.Fatal(err)
		}
		defer c.closeAndDelete()
		return l.replaceSegments(c, old, generation, nil)
	}
	generation := l.cleanerState.generation.Load()
	if err := try(segs[:1], generation+1); !errors.Is(err, errCleaningAborted) {
		t.Errorf("stale generation: %v", err)
	}
	if err := try(segs[len(segs)-1:], generation); !errors.Is(err, errCleaningAborted) {
		t.Errorf("active segment: %v", err)
	}
	if err := l.TruncateTo(segs[2].baseOffset); err != nil {
		t.Fatal(err)
	}
	if l.cleanerState.generation.Load() == generation {
		t.Error("truncation did not change the generation")
	}
	if err := try(segs[2:3], l.cleanerState.generation.Load()); !errors.Is(err, errCleaningAborted) {
		t.Errorf("truncated segment: %v", err)
	}
	l.deleteExpiredSegments(farFuture)
	if tmp := tempFiles(t, filepath.Clean(dir)); len(tmp) != 0 {
		t.Fatalf("temporary files left: %v", tmp)
	}
}
