package log

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"gregor/internal/record"
)

// producerBatch builds an uncompressed batch of n records from a producer.
func producerBatch(t testing.TB, pid int64, epoch int16, seq int32, n int, ts int64, transactional bool) []byte {
	t.Helper()
	b := record.NewBuilder(record.BuilderOptions{ProducerID: pid, ProducerEpoch: epoch, BaseSequence: seq, Transactional: transactional})
	for i := 0; i < n; i++ {
		b.Append(ts+int64(i), []byte{byte(i)}, []byte("value"), nil)
	}
	raw, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func leaderOptsAt(now int64) record.ValidateOptions {
	return record.ValidateOptions{
		Now:                  now,
		MaxMessageBytes:      record.DefaultMaxMessageBytes,
		TimestampBeforeMaxMs: record.DefaultTimestampBeforeMaxMs,
		TimestampAfterMaxMs:  record.DefaultTimestampAfterMaxMs,
		UseProducerCodec:     true,
	}
}

// header returns the header a leader append would check: the batch with
// its offsets assigned at base.
func header(t testing.TB, b []byte, base int64) record.BatchHeader {
	t.Helper()
	h, err := record.ParseHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	h.BaseOffset = base
	return h
}

// TestProducerStateChecks drives the state machine through Kafka's rules
// (ProducerAppendInfo.checkProducerEpoch / checkSequence and
// ProducerStateEntry.findDuplicateBatch).
func TestProducerStateChecks(t *testing.T) {
	type step struct {
		name          string
		pid           int64
		epoch         int16
		seq           int32
		n             int
		transactional bool
		wantErr       error
		wantDupOf     int64 // original first offset, -1 for none
	}
	const pid = 7
	steps := []step{
		{name: "unknown producer, non-zero sequence accepted (KIP-360)", pid: pid, epoch: 0, seq: 42, n: 3, wantDupOf: -1},
		{name: "next in sequence", pid: pid, epoch: 0, seq: 45, n: 2, wantDupOf: -1},
		{name: "duplicate of the last batch", pid: pid, epoch: 0, seq: 45, n: 2, wantDupOf: 3},
		{name: "duplicate of an older retained batch", pid: pid, epoch: 0, seq: 42, n: 3, wantDupOf: 0},
		{name: "overlapping but not equal range is out of order", pid: pid, epoch: 0, seq: 43, n: 2, wantErr: ErrOutOfOrderSequence},
		{name: "gap", pid: pid, epoch: 0, seq: 48, n: 1, wantErr: ErrOutOfOrderSequence},
		{name: "new epoch must start at 0", pid: pid, epoch: 1, seq: 5, n: 1, wantErr: ErrOutOfOrderSequence},
		{name: "epoch bump with sequence 0 resets", pid: pid, epoch: 1, seq: 0, n: 2, wantDupOf: -1},
		{name: "old batch of the old epoch is no longer a duplicate but fenced", pid: pid, epoch: 0, seq: 45, n: 2, wantErr: ErrInvalidProducerEpoch},
		{name: "old epoch", pid: pid, epoch: 0, seq: 2, n: 1, wantErr: ErrInvalidProducerEpoch},
		{name: "continues after the bump", pid: pid, epoch: 1, seq: 2, n: 1, wantDupOf: -1},
		{name: "transactional batch opens a transaction", pid: pid, epoch: 1, seq: 3, n: 1, transactional: true, wantDupOf: -1},
		{name: "plain batch while the transaction is open", pid: pid, epoch: 1, seq: 4, n: 1, wantErr: ErrInvalidTxnState},
		{name: "transactional batch continues it", pid: pid, epoch: 1, seq: 4, n: 1, transactional: true, wantDupOf: -1},
		{name: "duplicate transactional batch", pid: pid, epoch: 1, seq: 4, n: 1, transactional: true, wantDupOf: 9},
		{name: "transactional batch at an old epoch is fenced first", pid: pid, epoch: 0, seq: 0, n: 1, transactional: true, wantErr: ErrInvalidProducerEpoch},
		{name: "another producer is independent", pid: pid + 1, epoch: 3, seq: 0, n: 1, wantDupOf: -1},
	}
	ps, err := newProducerStateManager(t.TempDir(), 86400000)
	if err != nil {
		t.Fatal(err)
	}
	next := int64(0)
	for _, s := range steps {
		h := header(t, producerBatch(t, s.pid, s.epoch, s.seq, s.n, 1000, s.transactional), next)
		dup, isDup, err := ps.checkClientBatch(h, "topic-0")
		switch {
		case s.wantErr != nil:
			if !errors.Is(err, s.wantErr) {
				t.Fatalf("%s: err %v, want %v", s.name, err, s.wantErr)
			}
			continue
		case err != nil:
			t.Fatalf("%s: %v", s.name, err)
		case s.wantDupOf >= 0:
			if !isDup || dup.firstOffset() != s.wantDupOf {
				t.Fatalf("%s: dup %v %+v, want duplicate of offset %d", s.name, isDup, dup, s.wantDupOf)
			}
			continue
		case isDup:
			t.Fatalf("%s: unexpected duplicate of %d", s.name, dup.firstOffset())
		}
		ps.update(h, nil)
		next = h.LastOffset() + 1
	}
}

func TestProducerStateRetainsFiveBatches(t *testing.T) {
	ps, _ := newProducerStateManager(t.TempDir(), 86400000)
	for i := 0; i < 7; i++ {
		h := header(t, producerBatch(t, 1, 0, int32(i), 1, 1000, false), int64(i))
		if _, dup, err := ps.checkClientBatch(h, "t-0"); err != nil || dup {
			t.Fatalf("batch %d: dup %v err %v", i, dup, err)
		}
		ps.update(h, nil)
	}
	for i := 0; i < 7; i++ {
		h := header(t, producerBatch(t, 1, 0, int32(i), 1, 1000, false), 100)
		_, dup, err := ps.checkClientBatch(h, "t-0")
		if retained := i >= 2; retained != dup {
			t.Fatalf("sequence %d: duplicate %v, want %v (err %v)", i, dup, retained, err)
		}
		if i < 2 && !errors.Is(err, ErrOutOfOrderSequence) {
			t.Fatalf("sequence %d beyond the last five: %v, want out of order", i, err)
		}
	}
}

func TestProducerSequenceWrapsAtMaxInt32(t *testing.T) {
	ps, _ := newProducerStateManager(t.TempDir(), 86400000)
	// Records MaxInt32-1 and MaxInt32, then 0 and 1.
	h := header(t, producerBatch(t, 1, 0, math.MaxInt32-1, 2, 1000, false), 0)
	if h.LastSequence() != math.MaxInt32 {
		t.Fatalf("last sequence %d", h.LastSequence())
	}
	ps.update(h, nil)
	wrapped := header(t, producerBatch(t, 1, 0, 0, 2, 1000, false), 2)
	if _, dup, err := ps.checkClientBatch(wrapped, "t-0"); err != nil || dup {
		t.Fatalf("wrapped sequence: dup %v err %v", dup, err)
	}
	ps.update(wrapped, nil)
	// A batch spanning the wrap: MaxInt32 .. 1 after a producer at MaxInt32-1.
	ps2, _ := newProducerStateManager(t.TempDir(), 86400000)
	ps2.update(header(t, producerBatch(t, 2, 0, math.MaxInt32-2, 2, 1000, false), 0), nil)
	span := header(t, producerBatch(t, 2, 0, math.MaxInt32, 3, 1000, false), 2)
	if span.LastSequence() != 1 {
		t.Fatalf("spanning batch last sequence %d, want 1", span.LastSequence())
	}
	if _, _, err := ps2.checkClientBatch(span, "t-0"); err != nil {
		t.Fatal(err)
	}
	ps2.update(span, nil)
	if _, dup, _ := ps2.checkClientBatch(span, "t-0"); !dup {
		t.Fatal("a batch spanning the wrap is not found as duplicate")
	}
	if _, _, err := ps2.checkClientBatch(header(t, producerBatch(t, 2, 0, 2, 1, 1000, false), 5), "t-0"); err != nil {
		t.Fatalf("after the spanning batch: %v", err)
	}
}

func TestProducerExpiry(t *testing.T) {
	ps, _ := newProducerStateManager(t.TempDir(), 1000)
	ps.update(header(t, producerBatch(t, 1, 0, 0, 1, 5000, false), 0), nil)
	ps.update(header(t, producerBatch(t, 2, 0, 0, 1, 5500, false), 1), nil)
	if n := ps.removeExpired(5999); n != 0 {
		t.Fatalf("removed %d before expiry", n)
	}
	if n := ps.removeExpired(6000); n != 1 || ps.producers[1] != nil || ps.producers[2] == nil {
		t.Fatalf("removed %d at 6000; producers %v", n, ps.producers)
	}
	// An expired producer is unknown again: any sequence is accepted.
	if _, _, err := ps.checkClientBatch(header(t, producerBatch(t, 1, 0, 17, 1, 7000, false), 2), "t-0"); err != nil {
		t.Fatal(err)
	}
}

func TestProducerSnapshotRoundTrip(t *testing.T) {
	dir := t.TempDir()
	ps, _ := newProducerStateManager(dir, 86400000)
	ps.update(header(t, producerBatch(t, 1, 2, 10, 3, 5000, false), 100), nil)
	ps.update(header(t, producerBatch(t, 9, 0, 0, 1, 6000, false), 103), nil)
	ps.lastMapOffset = 104
	path, err := ps.takeSnapshot(true)
	if err != nil || filepath.Base(path) != "00000000000000000104.snapshot" {
		t.Fatalf("snapshot %q: %v", path, err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != producerSnapshotHeaderSize+2*producerSnapshotEntrySize {
		t.Fatalf("snapshot is %d bytes", len(b))
	}
	entries, err := decodeProducerSnapshot(b)
	if err != nil {
		t.Fatal(err)
	}
	e := entries[0]
	if e.producerID != 1 || e.epoch != 2 || e.lastSeq() != 12 || e.lastDataOffset() != 102 || e.lastOffsetDelta() != 2 ||
		e.lastTimestamp != 5002 || e.coordinatorEpoch != -1 || e.currentTxnFirstOffset != -1 || e.last().firstSeq() != 10 {
		t.Fatalf("entry %+v", e)
	}
	b[len(b)-1] ^= 1
	if _, err := decodeProducerSnapshot(b); !errors.Is(err, errCorruptSnapshot) {
		t.Fatalf("flipped byte: %v", err)
	}
}

// TestDuplicateDetectionSurvivesRestart: a retry after a restart is
// answered with the original offsets, whether the state comes from the
// clean-shutdown snapshot or from a roll snapshot plus replay.
func TestDuplicateDetectionSurvivesRestart(t *testing.T) {
	for _, clean := range []bool{true, false} {
		name := map[bool]string{true: "clean shutdown", false: "replay after crash"}[clean]
		t.Run(name, func(t *testing.T) {
			cfg := testConfig()
			cfg.SegmentBytes = 300 // a roll every batch or two
			l, dir := openTestLog(t, cfg)
			now := time.Now().UnixMilli()
			var batches [][]byte
			var firsts []int64
			for i := 0; i < 6; i++ {
				b := producerBatch(t, 5, 0, int32(i*2), 2, now, false)
				batches = append(batches, slices.Clone(b))
				info, err := l.AppendAsLeader(b, 0, leaderOptsAt(now))
				if err != nil {
					t.Fatal(err)
				}
				firsts = append(firsts, info.FirstOffset)
			}
			leo := l.LogEndOffset()
			if len(segmentFiles(t, dir, producerSnapshotFileSuffix)) == 0 {
				t.Fatal("no snapshot written at roll")
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			if clean {
				markClean(t, dir)
			} else if err := os.Remove(producerSnapshotPath(dir, leo)); err != nil {
				t.Fatal(err) // as if the broker died before closing
			}
			l, err := Open(dir, cfg, 0, 0, testLogger())
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			info, err := l.AppendAsLeader(slices.Clone(batches[5]), 0, leaderOptsAt(now))
			if err != nil || !info.Duplicate || info.FirstOffset != firsts[5] || l.LogEndOffset() != leo {
				t.Fatalf("retry of the last batch: %+v, err %v, LEO %d (was %d)", info, err, l.LogEndOffset(), leo)
			}
			// A snapshot keeps only the last batch: with the state loaded
			// from it alone, an older retry is out of order.
			if _, err := l.AppendAsLeader(slices.Clone(batches[3]), 0, leaderOptsAt(now)); clean && !errors.Is(err, ErrOutOfOrderSequence) {
				t.Fatalf("retry of an older batch: %v", err)
			}
			next := producerBatch(t, 5, 0, 12, 1, now, false)
			if info, err := l.AppendAsLeader(next, 0, leaderOptsAt(now)); err != nil || info.FirstOffset != leo {
				t.Fatalf("next batch: %+v %v", info, err)
			}
		})
	}
}

func TestAppendAsLeaderDuplicateWritesNothing(t *testing.T) {
	l, _ := openTestLog(t, testConfig())
	defer l.Close()
	now := time.Now().UnixMilli()
	b := producerBatch(t, 3, 0, 0, 4, now, false)
	retry := slices.Clone(b)
	first, err := l.AppendAsLeader(b, 0, leaderOptsAt(now))
	if err != nil {
		t.Fatal(err)
	}
	size := l.Size()
	dup, err := l.AppendAsLeader(retry, 0, leaderOptsAt(now))
	if err != nil {
		t.Fatal(err)
	}
	if !dup.Duplicate || dup.FirstOffset != first.FirstOffset || dup.LastOffset != first.LastOffset ||
		dup.LogAppendTime != now+3 || l.LogEndOffset() != 4 || l.Size() != size {
		t.Fatalf("duplicate %+v (first %+v), LEO %d, size %d -> %d", dup, first, l.LogEndOffset(), size, l.Size())
	}
	gap := producerBatch(t, 3, 0, 5, 1, now, false)
	if _, err := l.AppendAsLeader(gap, 0, leaderOptsAt(now)); !errors.Is(err, ErrOutOfOrderSequence) || l.LogEndOffset() != 4 {
		t.Fatalf("gap: %v, LEO %d", err, l.LogEndOffset())
	}
}

func TestFollowerAppendUpdatesProducerState(t *testing.T) {
	l, _ := openTestLog(t, testConfig())
	defer l.Close()
	now := time.Now().UnixMilli()
	b := producerBatch(t, 4, 2, 100, 3, now, false)
	record.SetBaseOffset(b, 0)
	mustAppendFollower(t, l, b)
	// As leader now: the follower-appended batch is known.
	retry := producerBatch(t, 4, 2, 100, 3, now, false)
	if info, err := l.AppendAsLeader(retry, 0, leaderOptsAt(now)); err != nil || !info.Duplicate || info.FirstOffset != 0 {
		t.Fatalf("retry after follower append: %+v %v", info, err)
	}
	if _, err := l.AppendAsLeader(producerBatch(t, 4, 1, 0, 1, now, false), 0, leaderOptsAt(now)); !errors.Is(err, ErrInvalidProducerEpoch) {
		t.Fatalf("old epoch: %v", err)
	}
}

func TestTruncateRebuildsProducerState(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 300
	l, _ := openTestLog(t, cfg)
	defer l.Close()
	now := time.Now().UnixMilli()
	for i := 0; i < 4; i++ {
		if _, err := l.AppendAsLeader(producerBatch(t, 6, 0, int32(i*2), 2, now, false), 0, leaderOptsAt(now)); err != nil {
			t.Fatal(err)
		}
	}
	// Cut the last batch (offsets 6-7): the producer's last sequence is 5 again.
	if err := l.TruncateTo(6); err != nil {
		t.Fatal(err)
	}
	if info, err := l.AppendAsLeader(producerBatch(t, 6, 0, 6, 2, now, false), 0, leaderOptsAt(now)); err != nil || info.Duplicate || info.FirstOffset != 6 {
		t.Fatalf("batch after truncation: %+v %v", info, err)
	}
}

func TestProducerSnapshotsFollowSegments(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 200
	cfg.DeleteEnabled = true
	cfg.RetentionBytes = 600
	cfg.RetentionMs = -1
	l, dir := openTestLog(t, cfg)
	defer l.Close()
	now := time.Now().UnixMilli()
	for i := 0; i < 10; i++ {
		if _, err := l.AppendAsLeader(producerBatch(t, 8, 0, int32(i*2), 2, now, false), 0, leaderOptsAt(now)); err != nil {
			t.Fatal(err)
		}
	}
	segs, _ := l.snapshot()
	if len(segs) < 5 {
		t.Fatalf("%d segments", len(segs))
	}
	snaps := func() []int64 {
		l.mu.Lock()
		defer l.mu.Unlock()
		return slices.Clone(l.producers.snapshots)
	}
	// One snapshot per rolled-to segment.
	for _, s := range segs[1:] {
		if !slices.Contains(snaps(), s.baseOffset) {
			t.Fatalf("no snapshot at segment %d: %v", s.baseOffset, snaps())
		}
	}
	// After a checkpoint with everything flushed, the last two segments keep theirs.
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := l.deleteSnapshotsAfterRecoveryPointCheckpoint(); err != nil {
		t.Fatal(err)
	}
	segs, _ = l.snapshot()
	if got, want := snaps(), []int64{segs[len(segs)-2].baseOffset, segs[len(segs)-1].baseOffset}; !slices.Equal(got, want) {
		t.Fatalf("snapshots %v, want %v", got, want)
	}
	// Retention deletes segments and their snapshots; the producer stays (KIP-360).
	l.SetHighWatermark(l.LogEndOffset())
	if n, err := l.DeleteOldSegments(time.Now()); err != nil || n == 0 {
		t.Fatalf("retention deleted %d: %v", n, err)
	}
	segs, _ = l.snapshot()
	for _, off := range snaps() {
		if off < segs[0].baseOffset {
			t.Fatalf("snapshot %d below the first segment %d", off, segs[0].baseOffset)
		}
	}
	if len(segmentFiles(t, dir, producerSnapshotFileSuffix)) != len(snaps()) {
		t.Fatalf("files %v, tracked %v", segmentFiles(t, dir, producerSnapshotFileSuffix), snaps())
	}
	if l.ActiveProducers() != 1 {
		t.Fatalf("%d producers after retention", l.ActiveProducers())
	}
	if n := l.RemoveExpiredProducers(time.UnixMilli(now + 86400000 + 10)); n != 1 || l.ActiveProducers() != 0 {
		t.Fatalf("expired %d, left %d", n, l.ActiveProducers())
	}
}

func TestStraySnapshotsRemovedAtOpen(t *testing.T) {
	l, dir := openTestLog(t, testConfig())
	now := time.Now().UnixMilli()
	if _, err := l.AppendAsLeader(producerBatch(t, 1, 0, 0, 2, now, false), 0, leaderOptsAt(now)); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// A stray snapshot in the middle (no segment there) and a corrupt one
	// at the end, which must be skipped in favour of the log itself.
	if err := os.WriteFile(producerSnapshotPath(dir, 1), encodeProducerSnapshot(nil), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(producerSnapshotPath(dir, 2), []byte{0, 1, 0, 0}, 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := Open(dir, testConfig(), 0, 0, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := os.Stat(producerSnapshotPath(dir, 1)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("stray snapshot kept: %v", err)
	}
	if info, err := l.AppendAsLeader(producerBatch(t, 1, 0, 0, 2, now, false), 0, leaderOptsAt(now)); err != nil || !info.Duplicate {
		t.Fatalf("duplicate after rebuilding from the log: %+v %v", info, err)
	}
}
