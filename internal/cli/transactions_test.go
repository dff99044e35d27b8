package cli

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"gregor/internal/record"
)

func TestTransactions(t *testing.T) {
	c := startCluster(t, nil)
	c.ok("topic", "create", "tx", "--partitions", "1")
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addr()), kgo.TransactionalID("app-1"), kgo.DefaultProduceTopic("tx"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, kgo.StringRecord("open")).FirstErr(); err != nil {
		t.Fatal(err)
	}

	if f := row(t, c.ok("transactions", "list"), "app-1"); f[1] != "1" || f[3] != "Ongoing" {
		t.Fatalf("list row %q", f)
	}
	out := c.ok("transactions", "describe", "--transactional-id", "app-1")
	if f := row(t, out, "1"); f[1] != "app-1" || f[4] != "Ongoing" || f[len(f)-1] != "tx-0" {
		t.Fatalf("describe row %q in\n%s", f, out)
	}
	out = c.ok("transactions", "describe-producers", "--topic", "tx", "--partition", "0")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !strings.HasSuffix(lines[1], " 0") {
		t.Fatalf("describe-producers (the open transaction starts at 0):\n%s", out)
	}

	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	c.fails("TRANSACTIONAL_ID_NOT_FOUND", "transactions", "describe", "--transactional-id", "nobody")
	c.fails("--transactional-id is required", "transactions", "describe")
	c.fails("--topic and --partition are required", "transactions", "describe-producers", "--topic", "tx")
}

// TestTransactionsFindHangingAndAbort: a transactional batch its
// coordinator never heard of (verification off, the partition never added)
// pins the last stable offset; find-hanging names it, abort ends it, and a
// transaction its coordinator accounts for is never listed.
func TestTransactionsFindHangingAndAbort(t *testing.T) {
	c := startCluster(t, map[string]string{"transaction.partition.verification.enable": "false"})
	c.ok("topic", "create", "hang", "--partitions", "1")
	c.ok("topic", "create", "live", "--partitions", "1")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	live, err := kgo.NewClient(kgo.SeedBrokers(c.addr()), kgo.TransactionalID("live-1"), kgo.DefaultProduceTopic("live"))
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	if err := live.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := live.ProduceSync(ctx, kgo.StringRecord("open")).FirstErr(); err != nil {
		t.Fatal(err)
	}

	// Produce v11 and below leave adding the partition to the producer,
	// so (with verification off) this batch opens a transaction its
	// coordinator does not know; v12 (transactions v2) would add it.
	versions := kversion.Stable()
	versions.SetMaxKeyVersion(0, 11)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addr()), kgo.MaxVersions(versions))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	txnID := "hang-1"
	init := kmsg.NewPtrInitProducerIDRequest()
	init.TransactionalID, init.TransactionTimeoutMillis = &txnID, 60000
	initResp, err := init.RequestWith(ctx, cl)
	if err != nil || initResp.ErrorCode != 0 {
		t.Fatalf("InitProducerId: %v %v", err, kerr.ErrorForCode(initResp.ErrorCode))
	}
	b := record.NewBuilder(record.BuilderOptions{ProducerID: initResp.ProducerID, ProducerEpoch: initResp.ProducerEpoch,
		Transactional: true, PartitionLeaderEpoch: -1})
	b.Append(time.Now().Add(-time.Second).UnixMilli(), nil, []byte("hanging"), nil)
	batch, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	produce := kmsg.NewPtrProduceRequest()
	produce.TransactionID, produce.Acks, produce.TimeoutMillis = &txnID, -1, 10000
	produce.Topics = []kmsg.ProduceRequestTopic{{Topic: "hang", Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: 0, Records: batch}}}}
	produceResp, err := produce.RequestWith(ctx, cl)
	if err != nil || produceResp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("produce the unverified transactional batch: %v %+v", err, produceResp)
	}
	adm := kadm.NewClient(cl)
	stable := func() int64 {
		l, err := adm.ListCommittedOffsets(ctx, "hang")
		o, _ := l.Lookup("hang", 0)
		if err != nil || o.Err != nil {
			t.Fatalf("list the last stable offset: %v %v", err, o.Err)
		}
		return o.Offset
	}
	if lso := stable(); lso != 0 {
		t.Fatalf("last stable offset %d, want 0 (pinned by the open transaction)", lso)
	}

	out := c.ok("transactions", "find-hanging", "--broker-id", "1", "--max-transaction-timeout", "0")
	if f := row(t, out, "hang", "0", strconv.FormatInt(initResp.ProducerID, 10)); f[5] != "0" {
		t.Fatalf("find-hanging row %q: start offset, want 0", f)
	}
	if strings.Contains(out, "live") {
		t.Fatalf("find-hanging lists the live transaction:\n%s", out)
	}
	if out := c.ok("transactions", "find-hanging", "--topic", "hang"); len(lines(out)) != 1 {
		t.Fatalf("find-hanging with the default 15-minute timeout lists a transaction a second old:\n%s", out)
	}
	c.fails("no open transaction starts at offset 5", "transactions", "abort", "--topic", "hang", "--partition", "0", "--start-offset", "5")
	c.ok("transactions", "abort", "--topic", "hang", "--partition", "0", "--start-offset", "0")
	if lso := stable(); lso != 2 {
		t.Fatalf("last stable offset %d after the abort, want 2 (the batch and its marker)", lso)
	}
	if out := c.ok("transactions", "find-hanging", "--topic", "hang", "--max-transaction-timeout", "0"); len(lines(out)) != 1 {
		t.Fatalf("find-hanging after the abort:\n%s", out)
	}
	c.fails("find-hanging needs --topic or --broker-id", "transactions", "find-hanging")
	c.fails("--topic, --partition and --start-offset are required", "transactions", "abort", "--topic", "hang")
	if err := live.EndTransaction(ctx, kgo.TryAbort); err != nil {
		t.Fatal(err)
	}
}
