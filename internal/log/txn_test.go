package log

import (
	"errors"
	"os"
	"slices"
	"testing"

	"gregor/internal/record"
)

// txnLog wraps a log under test with the appends a transaction needs.
type txnLog struct {
	t testing.TB
	*Log
}

const txnNowMs = 1_700_000_000_000

// data appends n records of producer pid as a client would and returns the
// first offset.
func (l txnLog) data(pid int64, epoch int16, seq int32, n int, transactional bool) int64 {
	l.t.Helper()
	info, err := l.AppendAsLeader(producerBatch(l.t, pid, epoch, seq, n, txnNowMs, transactional), 0, leaderOptsAt(txnNowMs))
	if err != nil {
		l.t.Fatalf("append producer %d: %v", pid, err)
	}
	return info.FirstOffset
}

// marker writes an end transaction marker as the coordinator does.
func (l txnLog) marker(pid int64, epoch int16, coordinatorEpoch int32, commit bool) (int64, error) {
	l.t.Helper()
	b, err := BuildTxnMarker(pid, epoch, coordinatorEpoch, commit, txnNowMs)
	if err != nil {
		l.t.Fatal(err)
	}
	info, err := l.AppendAsCoordinator(b, 0, 0, leaderOptsAt(txnNowMs))
	return info.FirstOffset, err
}

func (l txnLog) mustMarker(pid int64, epoch int16, commit bool) int64 {
	l.t.Helper()
	off, err := l.marker(pid, epoch, 0, commit)
	if err != nil {
		l.t.Fatalf("marker of producer %d: %v", pid, err)
	}
	return off
}

// replicateAll moves the high watermark to the log end.
func (l txnLog) replicateAll() { l.SetHighWatermark(l.LogEndOffset()) }

func (l txnLog) wantLSO(want int64) {
	l.t.Helper()
	if got := l.LastStableOffset(); got != want {
		l.t.Fatalf("last stable offset %d, want %d (HW %d)", got, want, l.HighWatermark())
	}
}

func (l txnLog) wantAborted(start, upper int64, want ...AbortedTxn) {
	l.t.Helper()
	got, err := l.CollectAbortedTransactions(start, upper)
	if err != nil {
		l.t.Fatal(err)
	}
	if want == nil {
		want = []AbortedTxn{}
	}
	if !slices.Equal(got, want) {
		l.t.Fatalf("aborted in [%d, %d): %+v, want %+v", start, upper, got, want)
	}
}

func TestTxnLastStableOffsetAndMarkers(t *testing.T) {
	raw, _ := openTestLog(t, testConfig())
	defer raw.Close()
	l := txnLog{t, raw}

	l.data(1, 0, 0, 2, true)  // 0-1: producer 1's transaction
	l.data(2, 0, 0, 1, false) // 2: plain
	l.data(3, 0, 0, 1, true)  // 3: producer 3's transaction
	l.wantLSO(0)              // HW is still 0
	l.replicateAll()
	l.wantLSO(0)
	if off, ok := l.FirstUnstableOffset(); !ok || off != 0 {
		t.Fatalf("first unstable offset %d %v, want 0", off, ok)
	}
	// A plain batch from a producer inside a transaction.
	if _, err := l.AppendAsLeader(producerBatch(t, 1, 0, 2, 1, txnNowMs, false), 0, leaderOptsAt(txnNowMs)); !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("plain batch in a transaction: %v, want ErrInvalidTxnState", err)
	}
	if got := l.Producers(); len(got) != 3 || got[0].CurrentTxnStartOffset != 0 || got[1].CurrentTxnStartOffset != -1 || got[2].CurrentTxnStartOffset != 3 {
		t.Fatalf("producers %+v", got)
	}

	// Commit producer 1: until the marker is replicated the LSO stays.
	if off := l.mustMarker(1, 0, true); off != 4 {
		t.Fatalf("commit marker at %d, want 4", off)
	}
	l.wantLSO(0)
	l.replicateAll()
	l.wantLSO(3) // producer 3's transaction is open
	l.wantAborted(0, 5)

	// Abort producer 3: indexed with the LSO it leaves.
	if off := l.mustMarker(3, 0, false); off != 5 {
		t.Fatalf("abort marker at %d, want 5", off)
	}
	l.replicateAll()
	l.wantLSO(6)
	if _, ok := l.FirstUnstableOffset(); ok {
		t.Fatal("first unstable offset with no transaction open")
	}
	abort3 := AbortedTxn{ProducerID: 3, FirstOffset: 3, LastOffset: 5, LastStableOffset: 6}
	l.wantAborted(0, 6, abort3)
	l.wantAborted(3, 4, abort3)
	l.wantAborted(0, 3)
	l.wantAborted(6, 10)

	// Fencing: an older producer epoch, an older coordinator epoch.
	l.data(3, 0, 1, 1, true) // 6
	if _, err := l.marker(3, 0, 5, false); err != nil {
		t.Fatal(err)
	}
	l.data(3, 0, 2, 1, true) // 8
	if _, err := l.marker(3, 0, 4, true); !errors.Is(err, ErrTransactionCoordinatorFenced) {
		t.Fatalf("marker from an older coordinator epoch: %v", err)
	}
	if _, err := l.marker(3, 1, 5, true); err != nil { // KIP-890: the marker bumps the epoch
		t.Fatal(err)
	}
	if _, err := l.marker(3, 0, 5, true); !errors.Is(err, ErrInvalidProducerEpoch) {
		t.Fatalf("marker with an old producer epoch: %v", err)
	}
	if _, err := l.AppendAsLeader(producerBatch(t, 3, 0, 3, 1, txnNowMs, true), 0, leaderOptsAt(txnNowMs)); !errors.Is(err, ErrInvalidProducerEpoch) {
		t.Fatalf("data at the epoch before the marker's bump: %v", err)
	}
	l.data(3, 1, 0, 1, false) // the bumped epoch starts at sequence 0
	// A marker for a producer without a transaction is written, not indexed.
	if _, err := l.marker(42, 0, 0, false); err != nil {
		t.Fatal(err)
	}
	l.replicateAll()
	l.wantLSO(l.LogEndOffset())
	l.wantAborted(0, l.LogEndOffset(), abort3, AbortedTxn{ProducerID: 3, FirstOffset: 6, LastOffset: 7, LastStableOffset: 8})
	// Producer 3 ended with the marker: its coordinator epoch is recorded.
	for _, p := range l.Producers() {
		if p.ProducerID == 3 && (p.CoordinatorEpoch != 5 || p.ProducerEpoch != 1) {
			t.Fatalf("producer 3: %+v", p)
		}
	}
}

// buildTxnSegments writes a log of three segments in which two transactions
// interleave and are aborted in later segments:
//
//	segment 0: 0-1 txn P1, 2 plain
//	segment 3: 3 txn P2, 4 abort P1 (LSO 3: P2 is open), 5 txn P3
//	segment 6: 6 abort P2 (LSO 5: P3 open), 7 commit P3, 8 plain
func buildTxnSegments(t *testing.T, l txnLog) []AbortedTxn {
	l.data(1, 0, 0, 2, true)
	l.data(9, 0, 0, 1, false)
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	l.data(2, 0, 0, 1, true)
	l.mustMarker(1, 0, false)
	l.data(3, 0, 0, 1, true)
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	l.mustMarker(2, 0, false)
	l.mustMarker(3, 0, true)
	l.data(9, 0, 1, 1, false)
	l.replicateAll()
	return []AbortedTxn{
		{ProducerID: 1, FirstOffset: 0, LastOffset: 4, LastStableOffset: 3},
		{ProducerID: 2, FirstOffset: 3, LastOffset: 6, LastStableOffset: 5},
	}
}

func TestTxnIndexFilesReopenAndRecovery(t *testing.T) {
	raw, dir := openTestLog(t, testConfig())
	l := txnLog{t, raw}
	want := buildTxnSegments(t, l)
	l.wantAborted(0, 9, want...)
	l.wantAborted(0, 3, want[0])          // P1's entry has LSO 3: the search stops there
	l.wantAborted(5, 9, want[1])          // P1's marker (4) is before 5
	l.wantAborted(7, 9)                   // both markers are before 7
	l.wantAborted(3, 4, want[0], want[1]) // both overlap offset 3
	l.wantLSO(9)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// Kafka's format: one 34-byte entry in each segment with an abort.
	files := map[int64][]byte{}
	for _, base := range []int64{0, 3, 6} {
		b, err := os.ReadFile(segmentFileName(dir, base, txnIndexFileSuffix))
		if base == 0 {
			if !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("segment 0 has a transaction index: %v", err)
			}
			continue
		}
		if err != nil || len(b) != txnIndexEntrySize {
			t.Fatalf("txnindex of segment %d: %d bytes, %v", base, len(b), err)
		}
		files[base] = b
	}
	if got, _ := decodeAbortedTxn(files[3]); got != want[0] {
		t.Fatalf("segment 3's entry %+v, want %+v", got, want[0])
	}

	reopen := func(recoveryPoint int64) txnLog {
		t.Helper()
		l2, err := Open(dir, testConfig(), recoveryPoint, 0, testLogger())
		if err != nil {
			t.Fatal(err)
		}
		l2.SetHighWatermark(l2.LogEndOffset())
		return txnLog{t, l2}
	}
	checkFiles := func() {
		t.Helper()
		for base, b := range files {
			got, err := os.ReadFile(segmentFileName(dir, base, txnIndexFileSuffix))
			if err != nil || string(got) != string(b) {
				t.Fatalf("txnindex of segment %d changed: %x, want %x (%v)", base, got, b, err)
			}
		}
	}

	// A clean restart reads the files.
	markClean(t, dir)
	l = reopen(9)
	l.wantAborted(0, 9, want...)
	l.wantLSO(9)
	l.Close()

	// A crash: every segment from the recovery point is rescanned and its
	// index rebuilt with the producer state of its time.
	os.Remove(dir + "/../" + CleanShutdownFileName)
	for base := range files {
		if err := os.WriteFile(segmentFileName(dir, base, txnIndexFileSuffix), []byte("garbage"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	l = reopen(0)
	l.wantAborted(0, 9, want...)
	l.Close()
	checkFiles()

	// Recovery from a later point needs the state of earlier segments: P2's
	// transaction began in segment 3, its abort is in segment 6.
	os.Remove(segmentFileName(dir, 6, txnIndexFileSuffix))
	l = reopen(7)
	l.Close()
	checkFiles()

	// A clean restart with a missing offset index recovers that segment.
	markClean(t, dir)
	os.Remove(segmentFileName(dir, 3, indexFileSuffix))
	os.Remove(segmentFileName(dir, 3, txnIndexFileSuffix))
	l = reopen(9)
	l.wantAborted(0, 9, want...)
	l.Close()
	checkFiles()
}

func TestTxnTruncationAndFollower(t *testing.T) {
	raw, dir := openTestLog(t, testConfig())
	defer raw.Close()
	l := txnLog{t, raw}
	want := buildTxnSegments(t, l)

	// A follower replicating the same batches knows the same.
	fraw, _ := openTestLog(t, testConfig())
	defer fraw.Close()
	f := txnLog{t, fraw}
	for off := int64(0); off < l.LogEndOffset(); {
		ri, err := l.Read(off, 1<<20, l.LogEndOffset(), true)
		if err != nil {
			t.Fatal(err)
		}
		mustAppendFollower(t, f.Log, ri.Records)
		off = f.LogEndOffset()
		if off == 5 {
			f.SetHighWatermark(5)
			f.wantLSO(3) // P2 open since 3
		}
	}
	f.replicateAll()
	f.wantAborted(0, 9, want...)
	f.wantLSO(9)

	// Truncating below P2's abort reopens P2's transaction and drops its
	// index entry; P1's stays.
	if err := l.TruncateTo(6); err != nil {
		t.Fatal(err)
	}
	l.wantAborted(0, 9, want[0])
	if off, ok := l.FirstUnstableOffset(); !ok || off != 3 {
		t.Fatalf("first unstable offset after truncation: %d %v, want 3", off, ok)
	}
	if _, err := os.Stat(segmentFileName(dir, 6, txnIndexFileSuffix)); !errors.Is(err, os.ErrNotExist) {
		// Segment 6 became empty and was kept as the active segment, or
		// was deleted: either way its file holds no entry.
		if b, _ := os.ReadFile(segmentFileName(dir, 6, txnIndexFileSuffix)); len(b) != 0 {
			t.Fatalf("segment 6's transaction index after truncation: %d bytes", len(b))
		}
	}
	// Truncating into segment 3 before P1's abort drops that entry too.
	if err := l.TruncateTo(4); err != nil {
		t.Fatal(err)
	}
	l.wantAborted(0, 9)
	if b, _ := os.ReadFile(segmentFileName(dir, 3, txnIndexFileSuffix)); len(b) != 0 {
		t.Fatalf("segment 3's transaction index after truncation: %d bytes", len(b))
	}
	// The aborts can be written again.
	l.mustMarker(1, 0, false)
	l.replicateAll()
	l.wantAborted(0, 5, AbortedTxn{ProducerID: 1, FirstOffset: 0, LastOffset: 4, LastStableOffset: 3})
	l.wantLSO(3)
}

func TestTxnSnapshotKeepsOpenTransactions(t *testing.T) {
	raw, dir := openTestLog(t, testConfig())
	l := txnLog{t, raw}
	l.data(9, 0, 0, 3, false) // 0-2
	l.data(1, 0, 0, 2, true)  // 3-4 open
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	l.data(1, 0, 2, 1, true) // 5
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	markClean(t, dir)
	raw, err := Open(dir, testConfig(), 6, 0, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	l = txnLog{t, raw}
	l.replicateAll()
	l.wantLSO(3)
	// Producer 9 expired on load (its batches are old); producer 1 never
	// expires while its transaction is open.
	if p := l.Producers(); len(p) != 1 || p[0].ProducerID != 1 || p[0].CurrentTxnStartOffset != 3 {
		t.Fatalf("producers after reopen: %+v", p)
	}
	// A plain batch is still refused, the abort still completes it.
	if _, err := l.AppendAsLeader(producerBatch(t, 1, 0, 3, 1, txnNowMs, false), 0, leaderOptsAt(txnNowMs)); !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("plain batch after reopen: %v", err)
	}
	off := l.mustMarker(1, 0, false)
	l.replicateAll()
	l.wantLSO(l.LogEndOffset())
	l.wantAborted(0, off+1, AbortedTxn{ProducerID: 1, FirstOffset: 3, LastOffset: off, LastStableOffset: off + 1})
}

// TestTxnReadAbortedTransactions checks the list a read_committed fetch gets
// for the range it reads.
func TestTxnReadAbortedTransactions(t *testing.T) {
	raw, _ := openTestLog(t, testConfig())
	defer raw.Close()
	l := txnLog{t, raw}
	want := buildTxnSegments(t, l)
	read := func(offset int64, maxBytes int32) []AbortedTxn {
		t.Helper()
		r, err := l.ReadFileRange(offset, maxBytes, l.LastStableOffset(), true)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Release()
		got, err := l.AbortedTransactions(offset, r)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	// Segment 0 holds P1's data; its abort lies in segment 3.
	if got := read(0, 1<<20); !slices.Equal(got, want[:1]) {
		t.Fatalf("read at 0: %+v, want %+v", got, want[:1])
	}
	if got := read(3, 1<<20); !slices.Equal(got, want) {
		t.Fatalf("read at 3: %+v, want %+v", got, want)
	}
	if got := read(7, 1<<20); len(got) != 0 || got == nil {
		t.Fatalf("read at 7: %+v, want an empty list", got)
	}
	if got := read(9, 1<<20); len(got) != 0 || got == nil {
		t.Fatalf("read at the end: %+v, want an empty list", got)
	}
}

// TestCleanerTransactions: aborted transactions' records go, committed ones
// are compacted like others, markers stay while needed, an open transaction
// bounds the clean.
func TestCleanerTransactions(t *testing.T) {
	cfg := compactConfig()
	cfg.DeleteRetentionMs = 1000
	raw, _ := openTestLog(t, cfg)
	defer raw.Close()
	l := txnLog{t, raw}
	keyed := func(pid int64, epoch int16, seq int32, transactional bool, recs ...kv) {
		t.Helper()
		b := record.NewBuilder(record.BuilderOptions{ProducerID: pid, ProducerEpoch: epoch, BaseSequence: seq, Transactional: transactional})
		for _, r := range recs {
			b.Append(txnNowMs, r.key, r.value, nil)
		}
		out, err := b.Build()
		if err != nil {
			t.Fatal(err)
		}
		opts := leaderOptsAt(txnNowMs)
		opts.Compacted = true
		if _, err := l.AppendAsLeader(out, 0, opts); err != nil {
			t.Fatal(err)
		}
	}
	keyed(-1, -1, -1, false, val("a", "1"), val("b", "1"))   // 0-1
	keyed(1, 0, 0, true, val("a", "committed"))              // 2: P1 commits
	keyed(2, 0, 0, true, val("a", "aborted"), val("c", "x")) // 3-4: P2 aborts
	l.mustMarker(1, 0, true)                                 // 5
	l.mustMarker(2, 0, false)                                // 6
	// P2's last data batch is a later one, so nothing of its aborted batch
	// needs to stay for its producer state.
	keyed(2, 0, 2, false, val("f", "1"))    // 7
	keyed(-1, -1, -1, false, val("d", "1")) // 8
	keyed(3, 0, 0, true, val("b", "open"))  // 9: P3 stays open
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	keyed(-1, -1, -1, false, val("e", "1")) // 10
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	l.replicateAll()
	l.wantLSO(9)

	tc := newTestCleaner(t, 1<<20)
	tc.cleanOnce(t, l.Log, txnNowMs)
	// P3's open transaction is in segment 0, so nothing is cleanable yet:
	// the first uncleanable offset is segment 0's base.
	if recs, _ := readLog(t, l.Log); len(recs) != 11 {
		t.Fatalf("cleaned past the last stable offset: %d records left", len(recs))
	}
	l.mustMarker(3, 0, true) // 12, in the active segment
	l.replicateAll()
	tc.cleanFully(t, l.Log, txnNowMs)

	recs, batches := readLog(t, l.Log)
	got := map[string]string{}
	var offsets []int64
	for _, r := range recs {
		if !r.hdr.IsControl() {
			got[string(r.key)] = string(r.value)
		}
		offsets = append(offsets, r.offset)
	}
	if got["a"] != "committed" || got["c"] != "" || got["b"] != "open" || got["d"] != "1" || got["e"] != "1" || got["f"] != "1" {
		t.Fatalf("after cleaning: %v", got)
	}
	// The abort marker stays (its transaction had records in this clean)
	// and is indexed in the cleaned segment; the commit marker of P1 stays
	// too, its transaction still had a batch.
	if !slices.Contains(offsets, 5) || !slices.Contains(offsets, 6) {
		t.Fatalf("markers dropped too early: offsets %v", offsets)
	}
	for _, h := range batches {
		if h.ProducerID == 2 && h.IsTransactional() && !h.IsControl() {
			t.Fatalf("aborted batch kept: %+v", h)
		}
	}
	l.wantAborted(0, l.LogEndOffset(), AbortedTxn{ProducerID: 2, FirstOffset: 3, LastOffset: 6, LastStableOffset: 7})

	// The next clean finds no batch of P2's transaction: its marker gets a
	// delete horizon and goes once that has passed.
	for _, now := range []int64{txnNowMs, txnNowMs + 10, txnNowMs + 2000, txnNowMs + 2001} {
		tc.checkpoint, tc.has = 0, false
		tc.cleanFully(t, l.Log, now)
	}
	recs, _ = readLog(t, l.Log)
	for _, r := range recs {
		if r.offset == 6 {
			t.Fatalf("abort marker kept after its delete horizon: %+v", r.hdr)
		}
	}
	l.wantAborted(0, l.LogEndOffset())
}
