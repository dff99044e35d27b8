//go:build e2e

package test

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Third-party transactional clients (issue 7): librdkafka through
// confluent-kafka and kcat, and sarama. Each commits a transaction, aborts
// one and commits another; read_committed must return exactly the
// committed records and read_uncommitted all of them, at the offsets that
// the markers leave between them.

// txnSpec is one transaction: records prefix-i for i in [first, first+n),
// record i to partition i%partitions.
type txnSpec struct {
	prefix   string
	first, n int
	commit   bool
}

// expRec is a data record where it must be: its offset, value, and whether
// its transaction committed.
type expRec struct {
	offset    int64
	value     string
	committed bool
}

// txnLayout is where the records of txns, written one transaction after
// the other by one producer, land: each transaction's records in order,
// then one marker on every partition it wrote to.
func txnLayout(partitions int, txns []txnSpec) (map[int32][]expRec, map[int32]int64) {
	recs := map[int32][]expRec{}
	next := map[int32]int64{}
	for _, tx := range txns {
		touched := map[int32]bool{}
		for i := tx.first; i < tx.first+tx.n; i++ {
			p := int32(i % partitions)
			recs[p] = append(recs[p], expRec{next[p], fmt.Sprintf("%s-%d", tx.prefix, i), tx.commit})
			next[p]++
			touched[p] = true
		}
		for p := range touched {
			next[p]++ // the marker
		}
	}
	return recs, next
}

func (r expRec) String() string { return fmt.Sprintf("%d:%s", r.offset, r.value) }

// wantAt is what a consumer must return from partition p, as
// "offset:value": the committed records, or all of them.
func wantAt(layout map[int32][]expRec, p int32, committedOnly bool) []string {
	var out []string
	for _, r := range layout[p] {
		if r.committed || !committedOnly {
			out = append(out, r.String())
		}
	}
	return out
}

// checkLayoutByKgo reads topic back with franz-go both ways and checks it
// against the layout, markers included.
func checkLayoutByKgo(t *testing.T, seeds []string, topic string, layout map[int32][]expRec, end map[int32]int64) {
	t.Helper()
	all, gotEnd := readBack(t, seeds, topic, kgo.ReadUncommitted())
	if fmt.Sprint(gotEnd) != fmt.Sprint(end) {
		t.Errorf("%s: log end offsets %v, want %v (records and one marker per transaction and partition)", topic, gotEnd, end)
	}
	view := classify(t, all)
	for p := range layout {
		var committed, aborted []string
		for _, r := range view[p].committed {
			committed = append(committed, fmt.Sprintf("%d:%s", r.Offset, r.Value))
		}
		for _, r := range view[p].aborted {
			aborted = append(aborted, fmt.Sprintf("%d:%s", r.Offset, r.Value))
		}
		var wantAborted []string
		for _, r := range layout[p] {
			if !r.committed {
				wantAborted = append(wantAborted, r.String())
			}
		}
		if fmt.Sprint(committed) != fmt.Sprint(wantAt(layout, p, true)) || fmt.Sprint(aborted) != fmt.Sprint(wantAborted) {
			t.Errorf("%s/%d by the markers: committed %v aborted %v; want committed %v aborted %v (markers %+v)",
				topic, p, committed, aborted, wantAt(layout, p, true), wantAborted, view[p].markers)
		}
	}
	rc, _ := readBack(t, seeds, topic, kgo.ReadCommitted())
	checkReadCommitted(t, topic, rc, view)
}

var confluentTxns = []txnSpec{{"commit", 0, 100, true}, {"abort", 0, 50, false}, {"commit", 100, 100, true}}

// TestTxnConfluent: librdkafka's transactional producer (init, begin,
// produce, flush, commit/abort) and its consumers at both isolation levels.
func TestTxnConfluent(t *testing.T) {
	needPythonModule(t, "confluent_kafka")
	t.Parallel()
	b := startBroker(t)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("broker log:\n%s", b.log())
		}
	})
	const topic = "txn-confluent"
	createTopic(t, newKgo(t, b), topic, 3, nil)
	script, err := os.ReadFile("txn_confluent.py")
	if err != nil {
		t.Fatal(err)
	}
	type read struct {
		Records    [][3]any            `json:"records"`
		EOF        []int32             `json:"eof"`
		Errors     []string            `json:"errors"`
		Watermarks map[string][2]int64 `json:"watermarks"`
	}
	var out struct {
		ProduceErrors   []string `json:"produce_errors"`
		ReadCommitted   read     `json:"read_committed"`
		ReadUncommitted read     `json:"read_uncommitted"`
	}
	pyRun(t, string(script), &out, b.addr(), topic)
	if len(out.ProduceErrors) > 0 {
		t.Errorf("delivery errors: %v", out.ProduceErrors)
	}
	layout, end := txnLayout(3, confluentTxns)
	for _, level := range []struct {
		name          string
		r             read
		committedOnly bool
	}{{"read_committed", out.ReadCommitted, true}, {"read_uncommitted", out.ReadUncommitted, false}} {
		if len(level.r.EOF) != 3 || len(level.r.Errors) > 0 {
			t.Errorf("%s: end of partitions %v reached, errors %v", level.name, level.r.EOF, level.r.Errors)
		}
		got := map[int32][]string{}
		for _, r := range level.r.Records {
			p := int32(r[0].(float64))
			got[p] = append(got[p], fmt.Sprintf("%d:%s", int64(r[1].(float64)), r[2]))
		}
		for p := range int32(3) {
			if want := wantAt(layout, p, level.committedOnly); fmt.Sprint(got[p]) != fmt.Sprint(want) {
				t.Errorf("librdkafka %s, partition %d:\n got %v\nwant %v", level.name, p, got[p], want)
			}
			// librdkafka's high watermark is the log end offset at both levels.
			if w := level.r.Watermarks[fmt.Sprint(p)]; w[1] != end[p] {
				t.Errorf("librdkafka %s: watermarks of %d are %v, want high %d", level.name, p, w, end[p])
			}
		}
	}
	checkLayoutByKgo(t, []string{b.addr()}, topic, layout, end)
}

// TestTxnSarama: sarama's transactional SyncProducer commits, aborts and
// commits; sarama's consumer at read_committed returns only the committed
// records and at read_uncommitted all of them.
func TestTxnSarama(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("broker log:\n%s", b.log())
		}
	})
	const topic = "txn-sarama"
	createTopic(t, newKgo(t, b), topic, 3, nil)

	cfg := sarama.NewConfig()
	cfg.Version = sarama.V2_8_0_0
	cfg.ClientID = "gregor-e2e"
	cfg.Producer.Idempotent = true
	cfg.Producer.Transaction.ID = "sarama-txn"
	cfg.Producer.Transaction.Timeout = 30 * time.Second
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Return.Successes = true
	cfg.Producer.Retry.Max = 10
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	cfg.Net.MaxOpenRequests = 1
	producer, err := sarama.NewSyncProducer([]string{b.addr()}, cfg)
	if err != nil {
		t.Fatalf("transactional producer: %v", err)
	}
	defer producer.Close()
	for _, tx := range confluentTxns {
		if err := producer.BeginTxn(); err != nil {
			t.Fatalf("BeginTxn: %v", err)
		}
		var msgs []*sarama.ProducerMessage
		for i := tx.first; i < tx.first+tx.n; i++ {
			msgs = append(msgs, &sarama.ProducerMessage{Topic: topic, Partition: int32(i % 3),
				Value: sarama.StringEncoder(fmt.Sprintf("%s-%d", tx.prefix, i))})
		}
		if err := producer.SendMessages(msgs); err != nil {
			t.Fatalf("SendMessages in a transaction: %v", err)
		}
		if tx.commit {
			err = producer.CommitTxn()
		} else {
			err = producer.AbortTxn()
		}
		if err != nil {
			t.Fatalf("end transaction (commit %v): %v (producer status %v)", tx.commit, err, producer.TxnStatus())
		}
	}
	layout, end := txnLayout(3, confluentTxns)

	for _, level := range []struct {
		name          string
		isolation     sarama.IsolationLevel
		committedOnly bool
	}{{"read_committed", sarama.ReadCommitted, true}, {"read_uncommitted", sarama.ReadUncommitted, false}} {
		ccfg := sarama.NewConfig()
		ccfg.Version = sarama.V2_8_0_0
		ccfg.Consumer.IsolationLevel = level.isolation
		ccfg.Consumer.Return.Errors = true
		consumer, err := sarama.NewConsumer([]string{b.addr()}, ccfg)
		if err != nil {
			t.Fatalf("consumer: %v", err)
		}
		for p := range int32(3) {
			want := wantAt(layout, p, level.committedOnly)
			// The last record of each partition is a committed one: read
			// up to it, and anything else on the way is wrong.
			last := layout[p][len(layout[p])-1]
			pc, err := consumer.ConsumePartition(topic, p, sarama.OffsetOldest)
			if err != nil {
				t.Fatalf("ConsumePartition(%d): %v", p, err)
			}
			var got []string
			timeout := time.After(30 * time.Second)
		read:
			for {
				select {
				case m := <-pc.Messages():
					got = append(got, fmt.Sprintf("%d:%s", m.Offset, m.Value))
					if m.Offset >= last.offset {
						break read
					}
				case err := <-pc.Errors():
					t.Errorf("sarama %s partition %d: %v", level.name, p, err)
					break read
				case <-timeout:
					t.Errorf("sarama %s partition %d: not at offset %d within 30s", level.name, p, last.offset)
					break read
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("sarama %s, partition %d:\n got %v\nwant %v", level.name, p, got, want)
			}
			if hw := pc.HighWaterMarkOffset(); hw != end[p] {
				t.Errorf("sarama %s partition %d: high watermark %d, want %d", level.name, p, hw, end[p])
			}
			pc.Close()
		}
		consumer.Close()
	}
	checkLayoutByKgo(t, []string{b.addr()}, topic, layout, end)
}

// kgoTxns writes txns with one franz-go transactional producer, each
// transaction's records acknowledged before it ends.
func kgoTxns(t *testing.T, seeds []string, topic, txnID string, partitions int, txns []txnSpec) {
	t.Helper()
	cl := txnProducer(t, seeds, txnID)
	for _, tx := range txns {
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		var recs []*kgo.Record
		for i := tx.first; i < tx.first+tx.n; i++ {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(i % partitions), Value: fmt.Appendf(nil, "%s-%d", tx.prefix, i)})
		}
		if err := cl.ProduceSync(ctxT(t, 30*time.Second), recs...).FirstErr(); err != nil {
			t.Fatalf("transactional produce: %v", err)
		}
		if err := cl.EndTransaction(ctxT(t, 30*time.Second), kgo.TransactionEndTry(tx.commit)); err != nil {
			t.Fatalf("end transaction (commit %v): %v", tx.commit, err)
		}
	}
	cl.Close()
}

// TestTxnKcat: kcat (librdkafka) reads a partition with franz-go's
// committed, aborted and committed transactions at both isolation levels.
func TestTxnKcat(t *testing.T) {
	if _, err := exec.LookPath("kcat"); err != nil {
		t.Skip("kcat not installed")
	}
	t.Parallel()
	b := startBroker(t)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("broker log:\n%s", b.log())
		}
	})
	const topic = "txn-kcat"
	createTopic(t, newKgo(t, b), topic, 1, nil)
	txns := []txnSpec{{"commit", 0, 10, true}, {"abort", 0, 10, false}, {"commit", 10, 10, true}}
	kgoTxns(t, []string{b.addr()}, topic, "kcat-txn", 1, txns)
	layout, end := txnLayout(1, txns)
	for _, level := range []struct {
		name          string
		committedOnly bool
	}{{"read_committed", true}, {"read_uncommitted", false}} {
		out := kcat(t, b, "", "-C", "-t", topic, "-p", "0", "-o", "beginning", "-e", "-q",
			"-X", "isolation.level="+level.name, "-f", "%o:%s\n")
		got := strings.Fields(out)
		if want := wantAt(layout, 0, level.committedOnly); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("kcat %s:\n got %v\nwant %v", level.name, got, want)
		}
	}
	checkLayoutByKgo(t, []string{b.addr()}, topic, layout, end)
}
