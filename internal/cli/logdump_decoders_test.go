package cli

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"gregor/internal/coordinator"
)

// TestLogDumpInternalTopics: --transaction-log-decoder and --offsets-decoder
// decode the coordinators' records in __transaction_state and
// __consumer_offsets segments a real server wrote.
func TestLogDumpInternalTopics(t *testing.T) {
	dir := t.TempDir()
	c := startCluster(t, map[string]string{"log.dirs": dir})
	c.ok("topic", "create", "in", "--partitions", "1")
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addr()), kgo.TransactionalID("dump-tx"), kgo.DefaultProduceTopic("in"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctxT(t), kgo.StringRecord("x")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := cl.EndTransaction(ctxT(t), kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	c.ok("consume", "in", "--group", "dump-group", "--from-beginning", "--max-messages", "1")

	// The segment of the coordinator's partition, by the topic's partition count.
	segment := func(topic, key string) string {
		t.Helper()
		dirs, err := filepath.Glob(filepath.Join(dir, topic+"-*"))
		if err != nil || len(dirs) == 0 {
			t.Fatalf("no %s partitions: %v", topic, err)
		}
		return filepath.Join(dir, fmt.Sprintf("%s-%d", topic, coordinator.PartitionFor(key, int32(len(dirs)))), firstSegment+".log")
	}
	txnSeg := segment("__transaction_state", "dump-tx")
	dump := func(args ...string) string {
		t.Helper()
		r := runCommand(t, "", append([]string{"log", "dump"}, args...)...)
		if r.err != nil {
			t.Fatalf("dump %v: %v\n%s", args, r.err, r.errOut)
		}
		return r.out
	}
	out := dump("--transaction-log-decoder", txnSeg)
	for _, want := range []string{"key: type: TxnMetadataKey version: 0 data: {Version:0 TransactionalID:dump-tx", "payload: type: TxnMetadataValue", "State:Ongoing", "State:PrepareCommit", "State:CompleteCommit"} {
		if !strings.Contains(out, want) {
			t.Fatalf("transaction log dump lacks %q:\n%s", want, out)
		}
	}
	offSeg := segment("__consumer_offsets", "dump-group")
	out = dump("--offsets-decoder", offSeg)
	for _, want := range []string{"key: type: GroupMetadataKey", "Group:dump-group", "key: type: OffsetCommitKey", "Topic:in Partition:0", "payload: type: OffsetCommitValue", "Offset:1"} {
		if !strings.Contains(out, want) {
			t.Fatalf("offsets dump lacks %q:\n%s", want, out)
		}
	}
	if r := runCommand(t, "", "log", "dump", "--offsets-decoder", "--transaction-log-decoder", offSeg); r.err == nil || !strings.Contains(r.err.Error(), "exclude each other") {
		t.Fatalf("two decoders: %v", r.err)
	}
}
