package server

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"gregor/internal/record"
	"gregor/internal/replica"
)

// TestReadCommittedFetchOverTheWire checks the log side of transactions
// through real sockets: transactional batches produced raw, markers written
// by the replica manager (as the transaction coordinator does), and Fetch
// answers for read_committed (LSO, the aborted transactions list, null for
// read_uncommitted) in a classic and a flexible version, then franz-go's
// read_committed consumer, which must drop the aborted records.
func TestReadCommittedFetchOverTheWire(t *testing.T) {
	ts := startServer(t, t.TempDir(), nil)
	ctx := ctxT(t)
	const topic = "txlog"
	if _, err := ts.admin().CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	produce := func(pid int64, seq int32, transactional bool, values ...string) {
		t.Helper()
		b := record.NewBuilder(record.BuilderOptions{ProducerID: pid, ProducerEpoch: 0, BaseSequence: seq, Transactional: transactional})
		for _, v := range values {
			b.Append(time.Now().UnixMilli(), nil, []byte(v), nil)
		}
		batch, err := b.Build()
		if err != nil {
			t.Fatal(err)
		}
		// Appended at the leader, as the markers below are written: over
		// the wire a transactional batch needs a transactional id whose
		// coordinator has the partition in its transaction, which this
		// test of the fetch side does without.
		if res := ts.srv.replica.Append(topic, 0, -1, batch); res.Err != nil {
			t.Fatalf("produce of producer %d: %v", pid, res.Err)
		}
	}
	marker := func(pid int64, commit bool) {
		t.Helper()
		if err := ts.srv.replica.WriteTxnMarker(ctx, topic, 0, replica.TxnMarker{ProducerID: pid, Commit: commit}); err != nil {
			t.Fatal(err)
		}
	}
	produce(1, 0, true, "aborted-1", "aborted-2") // 0-1
	produce(2, 0, true, "committed")              // 2
	produce(3, 0, false, "plain")                 // 3
	marker(1, false)                              // 4
	marker(2, true)                               // 5
	produce(4, 0, true, "open")                   // 6

	fetch := func(version int16, readCommitted bool) kmsg.FetchResponseTopicPartition {
		t.Helper()
		pin := kversion.Stable()
		pin.SetMaxKeyVersion(1, version)
		vcl := ts.client(kgo.MaxVersions(pin))
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID, req.MaxBytes = -1, 1<<20
		if readCommitted {
			req.IsolationLevel = 1
		}
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic = topic
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.PartitionMaxBytes = 1 << 20
		ft.Partitions = append(ft.Partitions, fp)
		req.Topics = append(req.Topics, ft)
		resp, err := req.RequestWith(ctx, vcl)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Version != version {
			t.Fatalf("fetch sent as v%d, want v%d", resp.Version, version)
		}
		return resp.Topics[0].Partitions[0]
	}
	for _, v := range []int16{4, 12} {
		p := fetch(v, true)
		if p.ErrorCode != 0 || p.HighWatermark != 7 || p.LastStableOffset != 6 || len(p.RecordBatches) == 0 {
			t.Fatalf("v%d read_committed: error %d, HW %d, LSO %d, %d bytes", v, p.ErrorCode, p.HighWatermark, p.LastStableOffset, len(p.RecordBatches))
		}
		if len(p.AbortedTransactions) != 1 || p.AbortedTransactions[0].ProducerID != 1 || p.AbortedTransactions[0].FirstOffset != 0 {
			t.Fatalf("v%d read_committed aborted transactions: %+v", v, p.AbortedTransactions)
		}
		if p := fetch(v, false); p.AbortedTransactions != nil || p.LastStableOffset != 6 {
			t.Fatalf("v%d read_uncommitted: aborted %+v (want null), LSO %d", v, p.AbortedTransactions, p.LastStableOffset)
		}
	}

	consume := func(level kgo.IsolationLevel, want int) []string {
		t.Helper()
		c := ts.client(kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(level), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		defer c.Close()
		var got []string
		for len(got) < want {
			fs := c.PollFetches(ctx)
			if ctx.Err() != nil {
				t.Fatalf("consumed %v, want %d records", got, want)
			}
			fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
		}
		short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		c.PollFetches(short).EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
		return got
	}
	if got := consume(kgo.ReadCommitted(), 2); !slices.Equal(got, []string{"committed", "plain"}) {
		t.Fatalf("read_committed consumer: %v", got)
	}
	marker(4, false)
	if got := consume(kgo.ReadCommitted(), 2); !slices.Equal(got, []string{"committed", "plain"}) {
		t.Fatalf("read_committed consumer after the last abort: %v", got)
	}
	if got := consume(kgo.ReadUncommitted(), 5); !slices.Equal(got, []string{"aborted-1", "aborted-2", "committed", "plain", "open"}) {
		t.Fatalf("read_uncommitted consumer: %v", got)
	}
}
