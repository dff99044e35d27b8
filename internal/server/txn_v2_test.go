package server

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"gregor/internal/record"
	"gregor/internal/rpc"
)

// tv2Producer is a raw transactions v2 producer (KIP-890 part 2): it never
// sends AddPartitionsToTxn or AddOffsetsToTxn, produces at v12, commits
// offsets at TxnOffsetCommit v5 and ends at EndTxn v5.
type tv2Producer struct {
	t      *testing.T
	broker *rpc.Client
	id     string
	pid    int64
	epoch  int16
	seq    map[int32]int32
}

// produce sends one transactional batch to partition p at version v, at
// the producer's epoch (or epoch, when not -1), and returns its code.
func (p *tv2Producer) produce(topic string, part int32, v int16, epoch int16) int16 {
	p.t.Helper()
	if epoch < 0 {
		epoch = p.epoch
	}
	b := record.NewBuilder(record.BuilderOptions{ProducerID: p.pid, ProducerEpoch: epoch, BaseSequence: p.seq[part], Transactional: true})
	b.Append(time.Now().UnixMilli(), nil, []byte("x"), nil)
	raw, err := b.Build()
	if err != nil {
		p.t.Fatal(err)
	}
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis, req.TransactionID = v, -1, 5000, kmsg.StringPtr(p.id)
	req.Topics = []kmsg.ProduceRequestTopic{{Topic: topic, Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: part, Records: raw}}}}
	resp, err := req.RequestWith(ctxT(p.t), p.broker)
	if err != nil {
		p.t.Fatal(err)
	}
	code := resp.Topics[0].Partitions[0].ErrorCode
	if code == 0 {
		p.seq[part]++
	}
	return code
}

// produceOK produces at v12, retrying the retriable NOT_ENOUGH_REPLICAS the
// leader answers while the coordinator still completes the previous
// transaction.
func (p *tv2Producer) produceOK(topic string, part int32) {
	p.t.Helper()
	var code int16
	waitFor(p.t, "transactional produce v12", 20*time.Second, func() bool {
		code = p.produce(topic, part, 12, -1)
		return code != kerr.NotEnoughReplicas.Code
	})
	if code != 0 {
		p.t.Fatalf("produce v12 at epoch %d: %v", p.epoch, kerr.ErrorForCode(code))
	}
}

// end sends EndTxn v5 at epoch and returns the answer.
func (p *tv2Producer) end(commit bool, epoch int16) *kmsg.EndTxnResponse {
	p.t.Helper()
	req := kmsg.NewPtrEndTxnRequest()
	req.Version, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = 5, p.id, p.pid, epoch, commit
	resp, err := req.RequestWith(ctxT(p.t), p.broker)
	if err != nil {
		p.t.Fatal(err)
	}
	return resp
}

// endOK ends the transaction and takes the producer id and epoch the
// answer gives for the next one, which must be the epoch bumped by one.
func (p *tv2Producer) endOK(commit bool) {
	p.t.Helper()
	resp := p.end(commit, p.epoch)
	if resp.ErrorCode != 0 {
		p.t.Fatalf("EndTxn v5 (commit %v) at epoch %d: %v", commit, p.epoch, kerr.ErrorForCode(resp.ErrorCode))
	}
	if resp.ProducerID != p.pid || resp.ProducerEpoch != p.epoch+1 {
		p.t.Fatalf("EndTxn v5 answered producer %d epoch %d, want %d epoch %d", resp.ProducerID, resp.ProducerEpoch, p.pid, p.epoch+1)
	}
	p.epoch = resp.ProducerEpoch
	p.seq = map[int32]int32{} // a new epoch starts its sequences over
}

// TestTransactionsV2Raw drives transactions v2 with raw requests: the
// partitions and the group's offsets partition are added by the brokers,
// every EndTxn bumps the epoch (a retry is answered the same, the old epoch
// is fenced), read_committed sees committed records only, and at
// transaction.version 1 a v12 producer's partitions are no longer added for
// it.
func TestTransactionsV2Raw(t *testing.T) {
	ts := startServer(t, t.TempDir(), groupProps)
	const topic = "tv2"
	ctx := ctxT(t)
	if _, err := ts.admin().CreateTopic(ctx, 2, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	broker := rpc.NewClient(ts.addr(), "tv2", rpc.Security{})
	t.Cleanup(broker.Close)
	cl := ts.client()
	if got := finalized(apiVersionsAt(t, cl, 4))["transaction.version"]; got != 2 {
		t.Fatalf("a new cluster's transaction.version is %d, want 2", got)
	}
	for _, typ := range []int8{0, 1} { // the group's and the transaction's
		find := kmsg.NewPtrFindCoordinatorRequest()
		find.Version, find.CoordinatorType, find.CoordinatorKeys = 4, typ, []string{[]string{"g2", "x2"}[typ]}
		waitFor(t, "coordinator", 20*time.Second, func() bool {
			resp, err := find.RequestWith(ctx, broker)
			return err == nil && resp.Coordinators[0].ErrorCode == 0
		})
	}
	init := kmsg.NewPtrInitProducerIDRequest()
	init.Version, init.TransactionalID, init.TransactionTimeoutMillis = 5, kmsg.StringPtr("x2"), 60000
	var iresp *kmsg.InitProducerIDResponse
	waitFor(t, "InitProducerId", 20*time.Second, func() bool {
		var err error
		iresp, err = init.RequestWith(ctx, broker)
		return err == nil && iresp.ErrorCode != kerr.CoordinatorLoadInProgress.Code && iresp.ErrorCode != kerr.ConcurrentTransactions.Code
	})
	if iresp.ErrorCode != 0 {
		t.Fatalf("InitProducerId: %v", kerr.ErrorForCode(iresp.ErrorCode))
	}
	p := &tv2Producer{t: t, broker: broker, id: "x2", pid: iresp.ProducerID, epoch: iresp.ProducerEpoch, seq: map[int32]int32{}}
	first := p.epoch

	// Committed transaction: the v12 produce added the partition.
	p.produceOK(topic, 0)
	describe := kmsg.NewPtrDescribeTransactionsRequest()
	describe.TransactionalIDs = []string{"x2"}
	dresp, err := describe.RequestWith(ctx, broker)
	if err != nil || len(dresp.TransactionStates) != 1 {
		t.Fatalf("DescribeTransactions: %v %+v", err, dresp)
	}
	if st := dresp.TransactionStates[0]; st.State != "Ongoing" || len(st.Topics) != 1 || st.Topics[0].Topic != topic {
		t.Fatalf("after a v12 produce the transaction is %+v, want Ongoing with %s-0", st, topic)
	}
	p.endOK(true)
	// A retry of that EndTxn (the epoch one behind) gets the same answer
	// once the markers are written; an abort retry is INVALID_TXN_STATE.
	var retry *kmsg.EndTxnResponse
	waitFor(t, "the commit completes", 20*time.Second, func() bool {
		retry = p.end(true, first)
		return retry.ErrorCode != kerr.ConcurrentTransactions.Code
	})
	if retry.ErrorCode != 0 || retry.ProducerID != p.pid || retry.ProducerEpoch != p.epoch {
		t.Fatalf("retried commit: %v producer %d epoch %d, want NONE %d epoch %d", kerr.ErrorForCode(retry.ErrorCode), retry.ProducerID, retry.ProducerEpoch, p.pid, p.epoch)
	}
	if r := p.end(false, first); r.ErrorCode != kerr.InvalidTxnState.Code {
		t.Fatalf("abort retried at the committed epoch: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	// The old epoch is fenced at the partition.
	if code := p.produce(topic, 1, 12, first); code != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("produce at the ended epoch: %v, want INVALID_PRODUCER_EPOCH", kerr.ErrorForCode(code))
	}

	// Aborted transaction with offsets: TxnOffsetCommit v5 adds the group's
	// partition itself (no AddOffsetsToTxn).
	p.produceOK(topic, 0)
	p.produceOK(topic, 1)
	var got map[string]string
	waitFor(t, "TxnOffsetCommit v5", 20*time.Second, func() bool {
		got = txnCommitAs(t, broker, 5, "x2", "g2", p.pid, p.epoch, map[string]int64{topic + "/0": 7, topic + "/1": 8})
		return got[topic+"/0"] != "COORDINATOR_LOAD_IN_PROGRESS" && got[topic+"/0"] != "NOT_COORDINATOR" && got[topic+"/0"] != "COORDINATOR_NOT_AVAILABLE"
	})
	if got[topic+"/0"] != "NONE" || got[topic+"/1"] != "NONE" {
		t.Fatalf("TxnOffsetCommit v5: %v", got)
	}
	if got := fetchStable(t, cl, "g2", topic, true); got != [2]string{"-1!UNSTABLE_OFFSET_COMMIT", "-1!UNSTABLE_OFFSET_COMMIT"} {
		t.Fatalf("require_stable fetch of the open transaction's offsets: %v", got)
	}
	p.endOK(false)

	// Committed transaction with offsets.
	p.produceOK(topic, 1)
	waitFor(t, "TxnOffsetCommit v5", 20*time.Second, func() bool {
		got = txnCommitAs(t, broker, 5, "x2", "g2", p.pid, p.epoch, map[string]int64{topic + "/0": 1, topic + "/1": 2})
		return got[topic+"/0"] != "COORDINATOR_NOT_AVAILABLE"
	})
	if got[topic+"/0"] != "NONE" {
		t.Fatalf("TxnOffsetCommit v5: %v", got)
	}
	p.endOK(true)
	waitFor(t, "committed offsets stable", 20*time.Second, func() bool {
		return fetchStable(t, cl, "g2", topic, true) == [2]string{"1", "2"}
	})
	// Partition 0: commit 1, marker, abort 1, marker; partition 1: the
	// fenced batch never landed, abort 1, marker, commit 1, marker.
	values := consumeIsolated(t, ts, topic, kgo.ReadCommitted(), 2)
	if len(values) != 2 {
		t.Fatalf("read_committed got %d records, want the 2 committed", len(values))
	}

	// transaction.version 1: a v12 producer that skips AddPartitionsToTxn
	// is no longer added for; verification tells it (Produce v11+ knows
	// TRANSACTION_ABORTABLE).
	setTxnVersion(t, cl, 1)
	var code int16
	waitFor(t, "produce v12 at transaction.version 1", 20*time.Second, func() bool {
		code = p.produce(topic, 0, 12, -1)
		return code != kerr.NotEnoughReplicas.Code
	})
	if code != kerr.TransactionAbortable.Code {
		t.Fatalf("produce v12 without AddPartitionsToTxn at transaction.version 1: %v, want TRANSACTION_ABORTABLE", kerr.ErrorForCode(code))
	}
}

// txnCommitAs is txnCommit at exactly version, for transactional id txnID,
// through a raw client (kgo would negotiate its own version).
func txnCommitAs(t *testing.T, broker *rpc.Client, version int16, txnID, group string, pid int64, epoch int16, offsets map[string]int64) map[string]string {
	t.Helper()
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.Version, req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = version, txnID, group, pid, epoch
	byTopic := map[string]*kmsg.TxnOffsetCommitRequestTopic{}
	for tp, o := range offsets {
		topic, part := splitTP(t, tp)
		rt := byTopic[topic]
		if rt == nil {
			req.Topics = append(req.Topics, kmsg.NewTxnOffsetCommitRequestTopic())
			rt = &req.Topics[len(req.Topics)-1]
			rt.Topic = topic
			byTopic[topic] = rt
		}
		rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = part, o
		rt.Partitions = append(rt.Partitions, rp)
	}
	resp, err := req.RequestWith(ctxT(t), broker)
	if err != nil {
		t.Fatalf("TxnOffsetCommit: %v", err)
	}
	out := map[string]string{}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			name := "NONE"
			if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
				name = err.(*kerr.Error).Message
			}
			out[rt.Topic+"/"+itoa(rp.Partition)] = name
		}
	}
	return out
}

// TestTransactionsV1AndV2Clients: a franz-go producer on transactions v2
// (the cluster's transaction.version is 2) and one held to v1 (its
// versions capped below Produce v12, EndTxn v5 and TxnOffsetCommit v5, so it
// adds partitions itself) commit and abort side by side on one topic; a
// read_committed consumer sees exactly the committed records of both.
func TestTransactionsV1AndV2Clients(t *testing.T) {
	ts := startServer(t, t.TempDir(), nil)
	const topic = "mixed"
	if _, err := ts.admin().CreateTopic(ctxT(t), 3, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	v1 := kversion.Stable()
	v1.SetMaxKeyVersion(0, 11)
	v1.SetMaxKeyVersion(26, 4)
	v1.SetMaxKeyVersion(28, 4)
	clients := map[string]*kgo.Client{
		"v2": ts.client(kgo.TransactionalID("mixed-v2"), kgo.DefaultProduceTopic(topic)),
		"v1": ts.client(kgo.TransactionalID("mixed-v1"), kgo.DefaultProduceTopic(topic), kgo.MaxVersions(v1)),
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for round := range 3 {
		for name, cl := range clients {
			produceTxn(t, cl, name+"-c"+itoa(int32(round)), 5, true)
			produceTxn(t, cl, name+"-a"+itoa(int32(round)), 5, false)
		}
	}
	if ctx.Err() != nil {
		t.Fatal(ctx.Err())
	}
	got := consumeIsolated(t, ts, topic, kgo.ReadCommitted(), 30)
	if len(got) != 30 {
		t.Fatalf("read_committed got %d records, want 30", len(got))
	}
	for _, v := range got {
		if len(v) < 4 || v[3] != 'c' {
			t.Fatalf("read_committed got an aborted record %q", v)
		}
	}
	// The v2 producer's epoch moved with every transaction; the v1
	// producer's stayed where InitProducerId put it.
	adm := ts.admin()
	desc, err := adm.DescribeTransactions(ctxT(t), "mixed-v1", "mixed-v2")
	if err != nil {
		t.Fatal(err)
	}
	if e := desc["mixed-v2"].ProducerEpoch; e < 6 {
		t.Errorf("transactions v2 producer at epoch %d after 6 transactions, want it bumped by each", e)
	}
	if e := desc["mixed-v1"].ProducerEpoch; e != 0 {
		t.Errorf("transactions v1 producer at epoch %d, want 0", e)
	}
}

func splitTP(t *testing.T, tp string) (string, int32) {
	t.Helper()
	i := strings.LastIndexByte(tp, '/')
	p, err := strconv.Atoi(tp[i+1:])
	if err != nil {
		t.Fatal(err)
	}
	return tp[:i], int32(p)
}

func itoa(i int32) string { return strconv.Itoa(int(i)) }
