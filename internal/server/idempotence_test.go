package server

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/record"
	"gregor/internal/rpc"
)

// initProducerID asks for a producer id (no transactional id).
func initProducerID(t *testing.T, cl *kgo.Client) (int64, int16) {
	t.Helper()
	req := kmsg.NewPtrInitProducerIDRequest()
	req.TransactionTimeoutMillis = 60000
	resp, err := req.RequestWith(ctxT(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	if resp.ErrorCode != 0 || resp.ProducerID < 0 || resp.ProducerEpoch != 0 {
		t.Fatalf("init producer id: %v id %d epoch %d", kerr.ErrorForCode(resp.ErrorCode), resp.ProducerID, resp.ProducerEpoch)
	}
	return resp.ProducerID, resp.ProducerEpoch
}

// rawProduce sends one batch (built by package record) with acks=all and
// returns the partition's answer.
func rawProduce(t *testing.T, cl *kgo.Client, topic string, pid int64, epoch int16, seq int32, n int, transactional bool) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	b := record.NewBuilder(record.BuilderOptions{ProducerID: pid, ProducerEpoch: epoch, BaseSequence: seq, Transactional: transactional})
	now := time.Now().UnixMilli()
	for i := 0; i < n; i++ {
		b.Append(now, []byte(strconv.Itoa(int(seq)+i)), []byte("v"), nil)
	}
	raw, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 10000
	if transactional {
		req.TransactionID = kmsg.StringPtr("txn")
	}
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = raw
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctxT(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	return resp.Topics[0].Partitions[0]
}

func logEndOffset(t *testing.T, ts *testServer, topic string) int64 {
	t.Helper()
	ends, err := ts.admin().ListEndOffsets(ctxT(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	o, _ := ends.Lookup(topic, 0)
	return o.Offset
}

// TestIdempotentProducerExactlyOnce: franz-go's default producer is
// idempotent once the broker serves InitProducerId; 100k records across
// three partitions with acks=all arrive exactly once and in order.
func TestIdempotentProducerExactlyOnce(t *testing.T) {
	ts := startServer(t, t.TempDir(), nil)
	const topic, total = "idem", 100000
	if _, err := ts.admin().CreateTopic(ctxT(t), 3, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	initProducerID(t, ts.client())

	producer := ts.client(kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	ctx := ctxT(t)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for i := 0; i < total; i++ {
		wg.Add(1)
		v := make([]byte, 8)
		binary.BigEndian.PutUint64(v, uint64(i))
		producer.Produce(ctx, &kgo.Record{Key: []byte(strconv.Itoa(i % 97)), Value: v}, func(r *kgo.Record, err error) {
			defer wg.Done()
			if err != nil {
				mu.Lock()
				firstErr = err
				mu.Unlock()
			}
			if r.ProducerID < 0 {
				mu.Lock()
				firstErr = fmt.Errorf("record produced without a producer id")
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		t.Fatal(firstErr)
	}

	consumer := ts.client(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	seen := make([]bool, total)
	lastByKey := map[string]int64{}
	for n := 0; n < total; {
		fs := consumer.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			i := int64(binary.BigEndian.Uint64(r.Value))
			if seen[i] {
				t.Fatalf("record %d read twice", i)
			}
			seen[i] = true
			// Records of one key share a partition and keep their order.
			if last, ok := lastByKey[string(r.Key)]; ok && i <= last {
				t.Fatalf("key %s: record %d after %d", r.Key, i, last)
			}
			lastByKey[string(r.Key)] = i
			n++
		})
	}
	ends, err := ts.admin().ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	ends.Each(func(o kadm.ListedOffset) { sum += o.Offset })
	if sum != total {
		t.Fatalf("partitions hold %d records, want %d", sum, total)
	}
}

// TestIdempotentProduceRules sends raw batches: a retry is answered with
// the original base offset and writes nothing, a gap is
// OUT_OF_ORDER_SEQUENCE_NUMBER, an older epoch INVALID_PRODUCER_EPOCH;
// InitProducerId checks its transactional fields.
func TestIdempotentProduceRules(t *testing.T) {
	ts := startServer(t, t.TempDir(), nil)
	const topic = "rules"
	if _, err := ts.admin().CreateTopic(ctxT(t), 1, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	cl := ts.client()
	pid, epoch := initProducerID(t, cl)
	if pid2, _ := initProducerID(t, cl); pid2 == pid {
		t.Fatalf("producer id %d handed out twice", pid)
	}

	first := rawProduce(t, cl, topic, pid, epoch, 0, 5, false)
	if first.ErrorCode != 0 || first.BaseOffset != 0 {
		t.Fatalf("first batch: %v base %d", kerr.ErrorForCode(first.ErrorCode), first.BaseOffset)
	}
	second := rawProduce(t, cl, topic, pid, epoch, 5, 3, false)
	if second.ErrorCode != 0 || second.BaseOffset != 5 {
		t.Fatalf("second batch: %v base %d", kerr.ErrorForCode(second.ErrorCode), second.BaseOffset)
	}
	for _, retry := range []struct {
		seq  int32
		n    int
		base int64
	}{{0, 5, 0}, {5, 3, 5}} {
		dup := rawProduce(t, cl, topic, pid, epoch, retry.seq, retry.n, false)
		if dup.ErrorCode != 0 || dup.BaseOffset != retry.base {
			t.Fatalf("retry of sequence %d: %v base %d, want base %d", retry.seq, kerr.ErrorForCode(dup.ErrorCode), dup.BaseOffset, retry.base)
		}
	}
	if leo := logEndOffset(t, ts, topic); leo != 8 {
		t.Fatalf("log end offset %d after retries, want 8", leo)
	}
	if gap := rawProduce(t, cl, topic, pid, epoch, 10, 1, false); gap.ErrorCode != kerr.OutOfOrderSequenceNumber.Code {
		t.Fatalf("gap: %v", kerr.ErrorForCode(gap.ErrorCode))
	}
	// KIP-360: the producer bumps its epoch and starts again at 0.
	if bump := rawProduce(t, cl, topic, pid, epoch+1, 0, 1, false); bump.ErrorCode != 0 || bump.BaseOffset != 8 {
		t.Fatalf("epoch bump: %v base %d", kerr.ErrorForCode(bump.ErrorCode), bump.BaseOffset)
	}
	if old := rawProduce(t, cl, topic, pid, epoch, 8, 1, false); old.ErrorCode != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("old epoch: %v", kerr.ErrorForCode(old.ErrorCode))
	}
	if leo := logEndOffset(t, ts, topic); leo != 9 {
		t.Fatalf("log end offset %d, want 9", leo)
	}

	for _, c := range []struct {
		name  string
		setup func(*kmsg.InitProducerIDRequest)
		want  *kerr.Error
	}{
		{"empty transactional id", func(r *kmsg.InitProducerIDRequest) { r.TransactionalID = kmsg.StringPtr("") }, kerr.InvalidRequest},
		{"transaction timeout too long", func(r *kmsg.InitProducerIDRequest) {
			r.TransactionalID, r.TransactionTimeoutMillis = kmsg.StringPtr("tx"), 900001
		}, kerr.InvalidTransactionTimeout},
		{"producer id without epoch", func(r *kmsg.InitProducerIDRequest) { r.ProducerID = pid }, kerr.InvalidRequest},
	} {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionTimeoutMillis = 60000
		c.setup(req)
		// Straight to the broker: franz-go would look up a transaction
		// coordinator first.
		resp, err := req.RequestWith(ctxT(t), cl.Broker(int(ts.srv.cfg.NodeID)))
		if err != nil {
			t.Fatal(err)
		}
		if resp.ErrorCode != c.want.Code || resp.ProducerID != -1 || resp.ProducerEpoch != -1 {
			t.Errorf("%s: %v id %d epoch %d, want %v", c.name, kerr.ErrorForCode(resp.ErrorCode), resp.ProducerID, resp.ProducerEpoch, c.want)
		}
	}
}

// TestIdempotenceAcrossRestart: producer ids stay unique across a restart
// (the ProducerIdsRecord is replayed), and a retry sent after the restart is
// still recognized (the producer state snapshot is loaded).
func TestIdempotenceAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	ts := startServer(t, dir, nil)
	const topic = "restart"
	if _, err := ts.admin().CreateTopic(ctxT(t), 1, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	pid, epoch := initProducerID(t, ts.client())
	if r := rawProduce(t, ts.client(), topic, pid, epoch, 0, 4, false); r.ErrorCode != 0 || r.BaseOffset != 0 {
		t.Fatalf("produce: %v base %d", kerr.ErrorForCode(r.ErrorCode), r.BaseOffset)
	}
	ts.stop()

	ts = startServer(t, dir, nil)
	after, _ := initProducerID(t, ts.client())
	if after/1000 <= pid/1000 {
		t.Fatalf("producer id %d after restart comes from the block of %d", after, pid)
	}
	if r := rawProduce(t, ts.client(), topic, pid, epoch, 0, 4, false); r.ErrorCode != 0 || r.BaseOffset != 0 {
		t.Fatalf("retry after restart: %v base %d", kerr.ErrorForCode(r.ErrorCode), r.BaseOffset)
	}
	if leo := logEndOffset(t, ts, topic); leo != 4 {
		t.Fatalf("log end offset %d after the retry, want 4", leo)
	}
	if r := rawProduce(t, ts.client(), topic, pid, epoch, 4, 1, false); r.ErrorCode != 0 || r.BaseOffset != 4 {
		t.Fatalf("next batch after restart: %v base %d", kerr.ErrorForCode(r.ErrorCode), r.BaseOffset)
	}
}

// TestDescribeProducers: the leader lists the idempotent producer that
// wrote to a partition, with its epoch and last sequence; a partition
// that does not exist is UNKNOWN_TOPIC_OR_PARTITION.
func TestDescribeProducers(t *testing.T) {
	ts := startServer(t, t.TempDir(), nil)
	if _, err := ts.admin().CreateTopic(ctxT(t), 1, 1, nil, "dp"); err != nil {
		t.Fatal(err)
	}
	initProducerID(t, ts.client())
	producer := ts.client(kgo.DefaultProduceTopic("dp"), kgo.RequiredAcks(kgo.AllISRAcks()))
	var pid int64
	var epoch int16
	for i := range 5 {
		r, err := producer.ProduceSync(ctxT(t), &kgo.Record{Value: []byte{byte(i)}}).First()
		if err != nil {
			t.Fatal(err)
		}
		pid, epoch = r.ProducerID, r.ProducerEpoch
	}
	req := kmsg.NewPtrDescribeProducersRequest()
	rt := kmsg.NewDescribeProducersRequestTopic()
	rt.Topic, rt.Partitions = "dp", []int32{0, 7}
	req.Topics = append(req.Topics, rt)
	// Straight to the broker: franz-go would refuse to route partition 7.
	c := rpc.NewClient(ts.addr(), "test", rpc.Security{})
	defer c.Close()
	kresp, err := c.Request(ctxT(t), req)
	if err != nil {
		t.Fatal(err)
	}
	resp := kresp.(*kmsg.DescribeProducersResponse)
	parts := resp.Topics[0].Partitions
	if len(parts) != 2 || parts[0].ErrorCode != 0 || len(parts[0].ActiveProducers) != 1 {
		t.Fatalf("partition 0: %+v", parts)
	}
	ap := parts[0].ActiveProducers[0]
	if ap.ProducerID != pid || ap.ProducerEpoch != int32(epoch) || ap.LastSequence != 4 || ap.CurrentTxnStartOffset != -1 || ap.LastTimestamp <= 0 {
		t.Fatalf("producer %+v, want id %d epoch %d last sequence 4, no transaction", ap, pid, epoch)
	}
	if parts[1].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("partition 7: error %d", parts[1].ErrorCode)
	}
}
