package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/record"
	"gregor/internal/rpc"
)

// consumeAll reads a topic from the start until its end (as the isolation
// level bounds it) and returns the values.
func consumeIsolated(t *testing.T, ts *testServer, topic string, level kgo.IsolationLevel, want int) []string {
	t.Helper()
	cl := ts.client(kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(level), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx := ctxT(t)
	var got []string
	for len(got) < want {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d records: %v", len(got), want, err)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	// Anything past want arrives in the same or a quick next fetch.
	short, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	cl.PollFetches(short).EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	return got
}

func produceTxn(t *testing.T, cl *kgo.Client, prefix string, n int, commit bool) {
	t.Helper()
	ctx := ctxT(t)
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		cl.Produce(ctx, kgo.StringRecord(fmt.Sprintf("%s-%d", prefix, i)), func(_ *kgo.Record, err error) {
			if err != nil {
				t.Errorf("produce: %v", err)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
		t.Fatalf("end transaction (commit %v): %v", commit, err)
	}
}

// TestTransactionsCommitAbort: a franz-go transactional producer commits
// one transaction and aborts the next; read_committed consumers see the
// committed records only, read_uncommitted both, and the coordinator
// describes and lists the transactional id.
func TestTransactionsCommitAbort(t *testing.T) {
	ts := startServer(t, t.TempDir(), nil)
	const topic = "txn"
	adm := ts.admin()
	if _, err := adm.CreateTopic(ctxT(t), 3, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	cl := ts.client(kgo.TransactionalID("tx-1"), kgo.DefaultProduceTopic(topic))
	produceTxn(t, cl, "committed", 30, true)
	produceTxn(t, cl, "aborted", 20, false)
	produceTxn(t, cl, "later", 10, true)

	committed := consumeIsolated(t, ts, topic, kgo.ReadCommitted(), 40)
	if len(committed) != 40 {
		t.Fatalf("read_committed saw %d records, want 40", len(committed))
	}
	for _, v := range committed {
		if len(v) >= 7 && v[:7] == "aborted" {
			t.Fatalf("read_committed saw aborted record %q", v)
		}
	}
	if all := consumeIsolated(t, ts, topic, kgo.ReadUncommitted(), 60); len(all) != 60 {
		t.Fatalf("read_uncommitted saw %d records, want 60", len(all))
	}

	// Once the markers are written the last stable offset is the end.
	ctx := ctxT(t)
	deadline := time.Now().Add(10 * time.Second)
	for {
		ends, err := adm.ListEndOffsets(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		stable, err := adm.ListCommittedOffsets(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		same := true
		ends.Each(func(o kadm.ListedOffset) {
			if s, ok := stable.Lookup(o.Topic, o.Partition); !ok || s.Offset != o.Offset {
				same = false
			}
		})
		if same {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("last stable offsets %v never reached the ends %v", stable, ends)
		}
		time.Sleep(20 * time.Millisecond)
	}

	described, err := adm.DescribeTransactions(ctx, "tx-1")
	if err != nil {
		t.Fatal(err)
	}
	d, ok := described["tx-1"]
	if !ok || d.Err != nil || d.State != "CompleteCommit" {
		t.Fatalf("describe tx-1: %+v", d)
	}
	listed, err := adm.ListTransactions(ctx, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := listed["tx-1"]; !ok {
		t.Fatalf("list transactions: %v", listed)
	}
}

// TestTransactionTimeoutAborts: a transaction left open past its
// transaction.timeout.ms is aborted by the coordinator, the last stable
// offset moves past it, and the producer is fenced.
func TestTransactionTimeoutAborts(t *testing.T) {
	ts := startServer(t, t.TempDir(), map[string]string{
		"transaction.abort.timed.out.transaction.cleanup.interval.ms": "200",
	})
	const topic = "hung"
	adm := ts.admin()
	if _, err := adm.CreateTopic(ctxT(t), 1, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	hung := ts.client(kgo.TransactionalID("hung"), kgo.DefaultProduceTopic(topic), kgo.TransactionTimeout(time.Second))
	if err := hung.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := hung.ProduceSync(ctx, kgo.StringRecord("never committed")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	plain := ts.client(kgo.DefaultProduceTopic(topic))
	if err := plain.ProduceSync(ctx, kgo.StringRecord("after")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// The open transaction holds the last stable offset at its first record
	// until the coordinator aborts it.
	deadline := time.Now().Add(15 * time.Second)
	for {
		stable, err := adm.ListCommittedOffsets(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		if o, _ := stable.Lookup(topic, 0); o.Offset == 3 { // record, record, abort marker
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("last stable offset %v never passed the hung transaction", stable)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got := consumeIsolated(t, ts, topic, kgo.ReadCommitted(), 1); len(got) != 1 || got[0] != "after" {
		t.Fatalf("read_committed after the abort: %q", got)
	}
	err := hung.EndTransaction(ctx, kgo.TryCommit)
	var ke *kerr.Error
	if !errors.As(err, &ke) || (ke != kerr.ProducerFenced && ke != kerr.InvalidProducerEpoch) {
		t.Fatalf("commit of the timed-out transaction: %v, want a fencing error", err)
	}
}

// TestZombieProducerFenced: a second producer with the same transactional
// id fences the first, whose open transaction is aborted.
func TestZombieProducerFenced(t *testing.T) {
	ts := startServer(t, t.TempDir(), nil)
	const topic = "zombie"
	if _, err := ts.admin().CreateTopic(ctxT(t), 1, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	zombie := ts.client(kgo.TransactionalID("same"), kgo.DefaultProduceTopic(topic))
	if err := zombie.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := zombie.ProduceSync(ctx, kgo.StringRecord("zombie")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	fresh := ts.client(kgo.TransactionalID("same"), kgo.DefaultProduceTopic(topic))
	produceTxn(t, fresh, "fresh", 3, true)
	err := zombie.EndTransaction(ctx, kgo.TryCommit)
	if err == nil {
		t.Fatal("the fenced producer committed")
	}
	got := consumeIsolated(t, ts, topic, kgo.ReadCommitted(), 3)
	if len(got) != 3 {
		t.Fatalf("read_committed: %q", got)
	}
	for _, v := range got {
		if v == "zombie" {
			t.Fatal("the zombie's record was committed")
		}
	}
}

// TestTxnBadInput: requests that do not fit a transaction get Kafka's
// error codes and change nothing.
func TestTxnBadInput(t *testing.T) {
	ts := startServer(t, t.TempDir(), nil)
	const topic = "bad"
	adm := ts.admin()
	if _, err := adm.CreateTopic(ctxT(t), 1, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	// The rpc client sends the versions set here (franz-go would raise them).
	broker := rpc.NewClient(ts.addr(), "txn-bad-input", rpc.Security{})
	t.Cleanup(broker.Close)

	find := kmsg.NewPtrFindCoordinatorRequest()
	find.Version = 4
	find.CoordinatorType, find.CoordinatorKeys = 1, []string{"", "t"}
	var fresp *kmsg.FindCoordinatorResponse
	deadline := time.Now().Add(10 * time.Second)
	for {
		var err error
		if fresp, err = find.RequestWith(ctx, broker); err != nil {
			t.Fatal(err)
		}
		if fresp.Coordinators[1].ErrorCode == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no coordinator for t: %v", kerr.ErrorForCode(fresp.Coordinators[1].ErrorCode))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if c := fresp.Coordinators[0]; c.ErrorCode != kerr.InvalidRequest.Code {
		t.Errorf("empty transactional id: %v", kerr.ErrorForCode(c.ErrorCode))
	}

	init := kmsg.NewPtrInitProducerIDRequest()
	init.Version = 4
	init.TransactionalID, init.TransactionTimeoutMillis = kmsg.StringPtr("t"), 60000
	iresp, err := init.RequestWith(ctx, broker)
	if err != nil || iresp.ErrorCode != 0 {
		t.Fatalf("init: %v %v", err, kerr.ErrorForCode(iresp.ErrorCode))
	}

	add := kmsg.NewPtrAddPartitionsToTxnRequest()
	add.Version = 3
	add.TransactionalID, add.ProducerID, add.ProducerEpoch = "t", iresp.ProducerID, iresp.ProducerEpoch
	add.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: topic, Partitions: []int32{0}}, {Topic: "missing", Partitions: []int32{0}}}
	aresp, err := add.RequestWith(ctx, broker)
	if err != nil {
		t.Fatal(err)
	}
	codes := map[string]int16{}
	for _, rt := range aresp.Topics {
		for _, p := range rt.Partitions {
			codes[rt.Topic] = p.ErrorCode
		}
	}
	if codes[topic] != kerr.OperationNotAttempted.Code || codes["missing"] != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("add partitions with an unknown topic: %v", codes)
	}
	add.Topics = add.Topics[:1]
	add.ProducerID++
	if aresp, err = add.RequestWith(ctx, broker); err != nil || aresp.Topics[0].Partitions[0].ErrorCode != kerr.InvalidProducerIDMapping.Code {
		t.Errorf("add partitions with another producer id: %v %v", err, kerr.ErrorForCode(aresp.Topics[0].Partitions[0].ErrorCode))
	}

	// v4: a partition leader verifies (KIP-890); the partition is not in
	// the transaction. The same id twice is refused as a whole.
	verify := kmsg.NewPtrAddPartitionsToTxnRequest()
	verify.Version = 4
	vt := kmsg.NewAddPartitionsToTxnRequestTransaction()
	vt.TransactionalID, vt.ProducerID, vt.ProducerEpoch, vt.VerifyOnly = "t", iresp.ProducerID, iresp.ProducerEpoch, true
	vt.Topics = []kmsg.AddPartitionsToTxnRequestTransactionTopic{{Topic: topic, Partitions: []int32{0}}}
	verify.Transactions = append(verify.Transactions, vt)
	vresp, err := verify.RequestWith(ctx, broker)
	if err != nil || vresp.ErrorCode != 0 || vresp.Transactions[0].Topics[0].Partitions[0].ErrorCode != kerr.TransactionAbortable.Code {
		t.Errorf("verify a partition outside the transaction: %v %+v", err, vresp)
	}
	verify.Transactions = append(verify.Transactions, vt)
	if vresp, err = verify.RequestWith(ctx, broker); err != nil || vresp.ErrorCode != kerr.InvalidRequest.Code {
		t.Errorf("verify the same id twice: %v %+v", err, vresp)
	}

	end := kmsg.NewPtrEndTxnRequest()
	end.Version = 4
	end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = "t", iresp.ProducerID, iresp.ProducerEpoch+1, true
	if eresp, err := end.RequestWith(ctx, broker); err != nil || eresp.ErrorCode != kerr.ProducerFenced.Code {
		t.Errorf("end with a future epoch: %v %v", err, kerr.ErrorForCode(eresp.ErrorCode))
	}
	end.ProducerEpoch = iresp.ProducerEpoch
	if eresp, err := end.RequestWith(ctx, broker); err != nil || eresp.ErrorCode != kerr.InvalidTxnState.Code {
		t.Errorf("commit with no transaction: %v %v", err, kerr.ErrorForCode(eresp.ErrorCode))
	}

	described, err := adm.DescribeTransactions(ctx, "never-seen")
	if err != nil {
		t.Fatal(err)
	}
	if d := described["never-seen"]; !errors.Is(d.Err, kerr.TransactionalIDNotFound) {
		t.Errorf("describe an unknown id: %+v", d)
	}
	if d, err := adm.DescribeTransactions(ctx, "t"); err != nil || d["t"].State != "Empty" {
		t.Errorf("describe t after the refused requests: %+v %v", d["t"], err)
	}

	markers := kmsg.NewPtrWriteTxnMarkersRequest()
	markers.Version = 1
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.ProducerEpoch, m.Committed = iresp.ProducerID, iresp.ProducerEpoch, true
	m.Topics = []kmsg.WriteTxnMarkersRequestMarkerTopic{{Topic: "missing", Partitions: []int32{0}}}
	markers.Markers = append(markers.Markers, m)
	mresp, err := markers.RequestWith(ctx, broker)
	if err != nil {
		t.Fatal(err)
	}
	if code := mresp.Markers[0].Topics[0].Partitions[0].ErrorCode; code != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("marker for an unknown partition: %v", kerr.ErrorForCode(code))
	}
}

// TestTxnProduceVerification (KIP-890 part 1): a transactional batch for a
// partition the producer never added to its transaction is refused with
// INVALID_TXN_STATE and writes nothing, so it cannot open a transaction
// that nobody ends; once added it is written; after the transaction ends
// it is refused again.
func TestTxnProduceVerification(t *testing.T) {
	ts := startServer(t, t.TempDir(), nil)
	const topic = "verified"
	if _, err := ts.admin().CreateTopic(ctxT(t), 1, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	broker := rpc.NewClient(ts.addr(), "txn-verify", rpc.Security{})
	t.Cleanup(broker.Close)
	find := kmsg.NewPtrFindCoordinatorRequest()
	find.Version, find.CoordinatorType, find.CoordinatorKeys = 4, 1, []string{"v"}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		resp, err := find.RequestWith(ctx, broker)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Coordinators[0].ErrorCode == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no transaction coordinator")
		}
	}
	init := kmsg.NewPtrInitProducerIDRequest()
	init.Version, init.TransactionalID, init.TransactionTimeoutMillis = 4, kmsg.StringPtr("v"), 60000
	iresp, err := init.RequestWith(ctx, broker)
	if err != nil || iresp.ErrorCode != 0 {
		t.Fatalf("init: %v %v", err, kerr.ErrorForCode(iresp.ErrorCode))
	}
	seq := int32(0)
	produce := func() kmsg.ProduceResponseTopicPartition {
		t.Helper()
		b := record.NewBuilder(record.BuilderOptions{ProducerID: iresp.ProducerID, ProducerEpoch: iresp.ProducerEpoch, BaseSequence: seq, Transactional: true})
		b.Append(time.Now().UnixMilli(), nil, []byte("x"), nil)
		raw, err := b.Build()
		if err != nil {
			t.Fatal(err)
		}
		req := kmsg.NewPtrProduceRequest()
		req.Version, req.Acks, req.TimeoutMillis, req.TransactionID = 9, -1, 5000, kmsg.StringPtr("v")
		req.Topics = []kmsg.ProduceRequestTopic{{Topic: topic, Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: 0, Records: raw}}}}
		resp, err := req.RequestWith(ctx, broker)
		if err != nil {
			t.Fatal(err)
		}
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode == 0 {
			seq++
		}
		return p
	}
	if p := produce(); p.ErrorCode != kerr.InvalidTxnState.Code {
		t.Fatalf("batch before AddPartitionsToTxn: %v", kerr.ErrorForCode(p.ErrorCode))
	}
	if leo := logEndOffset(t, ts, topic); leo != 0 {
		t.Fatalf("the refused batch was written: log end %d", leo)
	}
	add := kmsg.NewPtrAddPartitionsToTxnRequest()
	add.Version, add.TransactionalID, add.ProducerID, add.ProducerEpoch = 3, "v", iresp.ProducerID, iresp.ProducerEpoch
	add.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: topic, Partitions: []int32{0}}}
	if aresp, err := add.RequestWith(ctx, broker); err != nil || aresp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("add partition: %v %+v", err, aresp)
	}
	for range 2 {
		if p := produce(); p.ErrorCode != 0 {
			t.Fatalf("batch of the transaction: %v", kerr.ErrorForCode(p.ErrorCode))
		}
	}
	end := kmsg.NewPtrEndTxnRequest()
	end.Version, end.TransactionalID, end.ProducerID, end.ProducerEpoch = 4, "v", iresp.ProducerID, iresp.ProducerEpoch
	if eresp, err := end.RequestWith(ctx, broker); err != nil || eresp.ErrorCode != 0 {
		t.Fatalf("abort: %v %v", err, kerr.ErrorForCode(eresp.ErrorCode))
	}
	adm := ts.admin()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		stable, err := adm.ListCommittedOffsets(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		if o, _ := stable.Lookup(topic, 0); o.Offset == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("abort marker not written: %v", stable)
		}
	}
	// The abort marker is in the log before the coordinator completes the
	// abort; until then verification answers CONCURRENT_TRANSACTIONS, sent
	// to the producer as the retriable NOT_ENOUGH_REPLICAS, which a client
	// retries.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		p := produce()
		if p.ErrorCode == kerr.InvalidTxnState.Code {
			break
		}
		if p.ErrorCode != kerr.NotEnoughReplicas.Code || time.Now().After(deadline) {
			t.Fatalf("batch after the transaction ended: %v", kerr.ErrorForCode(p.ErrorCode))
		}
	}
	if stable, _ := adm.ListCommittedOffsets(ctx, topic); stable["verified"][0].Offset != 3 {
		t.Fatalf("last stable offset moved: %v", stable)
	}
}

// freePort returns a loopback port free a moment ago, for a server that
// must come back on the same address.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// TestTransactionAcrossRestart: a transaction open when the broker restarts
// goes on afterwards: the coordinator reloads it from __transaction_state,
// the partitions reload the open transaction from their producer state, and
// the commit makes every record visible to read_committed.
func TestTransactionAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	props := map[string]string{"listeners": fmt.Sprintf("PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:0", freePort(t))}
	ts := startServer(t, dir, props)
	const topic = "restart"
	if _, err := ts.admin().CreateTopic(ctxT(t), 2, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(ts.addr()), kgo.TransactionalID("durable"), kgo.DefaultProduceTopic(topic),
		kgo.RetryTimeout(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := ctxT(t)
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if err := cl.ProduceSync(ctx, kgo.StringRecord(fmt.Sprintf("before-%d", i))).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	ts.stop()
	ts = startServer(t, dir, props)
	for i := range 10 {
		if err := cl.ProduceSync(ctx, kgo.StringRecord(fmt.Sprintf("after-%d", i))).FirstErr(); err != nil {
			t.Fatalf("produce after the restart: %v", err)
		}
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("commit after the restart: %v", err)
	}
	if got := consumeIsolated(t, ts, topic, kgo.ReadCommitted(), 20); len(got) != 20 {
		t.Fatalf("read_committed after the restart: %d records", len(got))
	}
}
