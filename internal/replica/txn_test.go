package replica

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"gregor/internal/log"
	"gregor/internal/metadata"
	"gregor/internal/record"
)

func txnBatch(t testing.TB, pid int64, epoch int16, seq int32, n int) []byte {
	t.Helper()
	b := record.NewBuilder(record.BuilderOptions{ProducerID: pid, ProducerEpoch: epoch, BaseSequence: seq, Transactional: true})
	for i := 0; i < n; i++ {
		b.Append(time.Now().UnixMilli(), []byte{byte(i)}, []byte("v"), nil)
	}
	out, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestWriteTxnMarker drives a transaction on a partition this broker leads:
// transactional produce, read_committed reads bounded by the LSO, markers
// through WriteTxnMarker with Kafka's errors, and a coordinator's
// transactional batch without sequences.
func TestWriteTxnMarker(t *testing.T) {
	m := newTestManager(t)
	feed(t, metadata.EmptyImage(), []*Manager{m}, createTopic("t", topicID(1), 1, testNode)...)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	if res := m.Append("t", 0, -1, txnBatch(t, 5, 0, 0, 3)); res.Err != nil {
		t.Fatal(res.Err)
	}
	res := m.Read("t", 0, -1, 0, 1<<20, true, true)
	if res.Err != nil || res.HighWatermark != 3 || res.LastStableOffset != 0 || len(res.Records) != 0 ||
		res.AbortedTransactions == nil || len(res.AbortedTransactions) != 0 {
		t.Fatalf("read_committed of an open transaction: %+v", res)
	}
	if res := m.Read("t", 0, -1, 0, 1<<20, false, true); res.AbortedTransactions != nil || len(res.Records) == 0 {
		t.Fatalf("read_uncommitted: %+v", res)
	}
	if off, _, _, _, err := m.ListOffset("t", 0, -1, ListLatest, true); err != nil || off != 0 {
		t.Fatalf("read_committed latest offset %d, %v; want 0", off, err)
	}
	if ps, err := m.DescribeProducers("t", 0); err != nil || len(ps) != 1 || ps[0].CurrentTxnStartOffset != 0 {
		t.Fatalf("producers %+v, %v", ps, err)
	}

	if err := m.WriteTxnMarker(ctx, "t", 0, TxnMarker{ProducerID: 5, ProducerEpoch: 0, CoordinatorEpoch: 2, Commit: false}); err != nil {
		t.Fatal(err)
	}
	for _, zeroCopy := range []bool{false, true} {
		read := m.Read
		if zeroCopy {
			read = m.ReadFileRange
		}
		res = read("t", 0, -1, 0, 1<<20, true, true)
		res.File.Release()
		if res.Err != nil || res.LastStableOffset != 4 || len(res.AbortedTransactions) != 1 ||
			res.AbortedTransactions[0] != (AbortedTxn{ProducerID: 5, FirstOffset: 0}) {
			t.Fatalf("read_committed after the abort (zero copy %v): %+v", zeroCopy, res)
		}
	}
	if off, _, _, _, err := m.ListOffset("t", 0, -1, ListLatest, true); err != nil || off != 4 {
		t.Fatalf("read_committed latest offset %d, %v; want 4", off, err)
	}

	// Kafka's errors.
	for _, c := range []struct {
		name   string
		topic  string
		marker TxnMarker
		want   error
	}{
		{"older coordinator epoch", "t", TxnMarker{ProducerID: 5, CoordinatorEpoch: 1}, kerr.TransactionCoordinatorFenced},
		{"unknown partition", "nope", TxnMarker{ProducerID: 5, CoordinatorEpoch: 2}, kerr.UnknownTopicOrPartition},
	} {
		if err := m.WriteTxnMarker(ctx, c.topic, 0, c.marker); !errors.Is(err, c.want) {
			t.Fatalf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	// The coordinator bumps the epoch with the marker (KIP-890); an older
	// epoch is fenced afterwards.
	if err := m.WriteTxnMarker(ctx, "t", 0, TxnMarker{ProducerID: 5, ProducerEpoch: 1, CoordinatorEpoch: 2, Commit: true, TransactionVersion: 2}); err != nil {
		t.Fatal(err)
	}
	if err := m.WriteTxnMarker(ctx, "t", 0, TxnMarker{ProducerID: 5, ProducerEpoch: 0, CoordinatorEpoch: 2, Commit: true}); !errors.Is(err, kerr.InvalidProducerEpoch) {
		t.Fatalf("marker at an older producer epoch: %v", err)
	}
	if res := m.Append("t", 0, -1, txnBatch(t, 5, 0, 3, 1)); !errors.Is(res.Err, log.ErrInvalidProducerEpoch) {
		t.Fatalf("data at an older producer epoch: %v", res.Err)
	}

	// A coordinator's transactional batch (no sequence) opens a transaction
	// that the LSO waits for.
	start := m.Read("t", 0, -1, 0, 1, false, true).HighWatermark
	if res := m.AppendCoordinator("t", 0, txnBatch(t, 8, 3, record.NoSequence, 2)); res.Err != nil || res.Info.FirstOffset != start {
		t.Fatalf("coordinator append: %+v", res)
	}
	if res := m.AppendCoordinator("t", 0, txnBatch(t, 8, 2, record.NoSequence, 1)); !errors.Is(res.Err, kerr.InvalidProducerEpoch) {
		t.Fatalf("coordinator append at an older epoch: %v", res.Err)
	}
	if lso := m.Read("t", 0, -1, 0, 1, true, true).LastStableOffset; lso != start {
		t.Fatalf("LSO %d with the coordinator's transaction open at %d", lso, start)
	}
	if err := m.WriteTxnMarker(ctx, "t", 0, TxnMarker{ProducerID: 8, ProducerEpoch: 3, CoordinatorEpoch: 0, Commit: true}); err != nil {
		t.Fatal(err)
	}
	if res := m.Read("t", 0, -1, 0, 1, true, true); res.LastStableOffset != res.HighWatermark || res.HighWatermark != start+3 {
		t.Fatalf("after the commit: LSO %d, HW %d, want %d", res.LastStableOffset, res.HighWatermark, start+3)
	}
}
