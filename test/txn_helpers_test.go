//go:build e2e

package test

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Helpers of the exactly-once suites (txn_test.go, txn_clients_test.go):
// reading a topic back with its control records, telling committed from
// aborted data by the markers alone, and waiting on transaction states.

// kgoSeeds is a franz-go client on seeds, closed with the test. Unlike
// newKgo it leaves idempotence on, as a transactional client needs it.
func kgoSeeds(t *testing.T, seeds []string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(seeds...), kgo.RetryTimeout(30 * time.Second)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// txnProducer is a transactional franz-go producer with id txnID.
func txnProducer(t *testing.T, seeds []string, txnID string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	return kgoSeeds(t, seeds, append([]kgo.Opt{
		kgo.TransactionalID(txnID),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()),
	}, opts...)...)
}

// readBack reads every partition of topic from offset 0 to its log end
// offset with the given isolation level, keeping control records, so that
// the read ends deterministically at the last offset (which is a marker or
// a committed record once no transaction is open). A read_committed read of
// a partition with an open transaction stops at the last stable offset and
// times out here.
func readBack(t *testing.T, seeds []string, topic string, level kgo.IsolationLevel) (map[int32][]*kgo.Record, map[int32]int64) {
	t.Helper()
	adm := kadm.NewClient(kgoSeeds(t, seeds))
	listed, err := adm.ListEndOffsets(ctxT(t, 20*time.Second), topic)
	if err != nil {
		t.Fatalf("list end offsets of %s: %v", topic, err)
	}
	end := map[int32]int64{}
	listed.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			t.Fatalf("list end offset %s/%d: %v", o.Topic, o.Partition, o.Err)
		}
		end[o.Partition] = o.Offset
	})
	out := map[int32][]*kgo.Record{}
	parts := map[int32]kgo.Offset{}
	for p, e := range end {
		if e > 0 {
			parts[p] = kgo.NewOffset().At(0)
		}
	}
	if len(parts) == 0 {
		return out, end
	}
	cl := kgoSeeds(t, seeds, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: parts}),
		kgo.FetchIsolationLevel(level), kgo.KeepControlRecords())
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	remaining := len(parts)
	for remaining > 0 {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			got := map[int32]int64{}
			for p, rs := range out {
				got[p] = rs[len(rs)-1].Offset
			}
			lso, _ := adm.ListCommittedOffsets(ctxT(t, 5*time.Second), topic)
			t.Fatalf("read %s (%v): timed out at last offsets %v, log end offsets %v, last stable offsets %v",
				topic, levelName(level), got, end, offsetsOf(lso))
		}
		fetches.EachError(func(_ string, p int32, err error) {
			t.Logf("fetch %s/%d: %v", topic, p, err)
		})
		fetches.EachRecord(func(r *kgo.Record) {
			if r.Offset >= end[r.Partition] {
				return
			}
			out[r.Partition] = append(out[r.Partition], r)
			if r.Offset == end[r.Partition]-1 {
				remaining--
			}
		})
	}
	return out, end
}

func levelName(level kgo.IsolationLevel) string {
	if level == kgo.ReadCommitted() {
		return "read_committed"
	}
	return "read_uncommitted"
}

func offsetsOf(l kadm.ListedOffsets) map[int32]int64 {
	out := map[int32]int64{}
	l.Each(func(o kadm.ListedOffset) { out[o.Partition] = o.Offset })
	return out
}

// marker is one control record: a transaction's end on one partition.
type marker struct {
	offset int64
	pid    int64
	commit bool
}

// txnView is a partition's records sorted by what the markers say of them.
type txnView struct {
	committed []*kgo.Record // non-transactional, or ended by a COMMIT marker of their producer
	aborted   []*kgo.Record // ended by an ABORT marker of their producer
	open      []*kgo.Record // transactional with no marker yet
	markers   []marker
}

// controlType decodes a control record's key (version int16, type int16:
// 0 ABORT, 1 COMMIT).
func controlType(t *testing.T, r *kgo.Record) bool {
	t.Helper()
	if len(r.Key) < 4 {
		t.Fatalf("%s/%d@%d: control record key %x too short", r.Topic, r.Partition, r.Offset, r.Key)
	}
	switch typ := binary.BigEndian.Uint16(r.Key[2:4]); typ {
	case 0:
		return false
	case 1:
		return true
	default:
		t.Fatalf("%s/%d@%d: control record type %d", r.Topic, r.Partition, r.Offset, typ)
	}
	return false
}

// classify sorts a read_uncommitted read (with control records) by the
// markers in it, as Kafka's read_committed semantics define: a
// transactional record belongs to its producer's transaction, which the
// producer's next marker on the partition ends.
func classify(t *testing.T, recs map[int32][]*kgo.Record) map[int32]*txnView {
	t.Helper()
	out := map[int32]*txnView{}
	for p, rs := range recs {
		v := &txnView{}
		pending := map[int64][]*kgo.Record{}
		for _, r := range rs {
			switch {
			case r.Attrs.IsControl():
				commit := controlType(t, r)
				v.markers = append(v.markers, marker{r.Offset, r.ProducerID, commit})
				if commit {
					v.committed = append(v.committed, pending[r.ProducerID]...)
				} else {
					v.aborted = append(v.aborted, pending[r.ProducerID]...)
				}
				delete(pending, r.ProducerID)
			case r.Attrs.IsTransactional():
				pending[r.ProducerID] = append(pending[r.ProducerID], r)
			default:
				v.committed = append(v.committed, r)
			}
		}
		for _, rs := range pending {
			v.open = append(v.open, rs...)
		}
		sortByOffset(v.committed)
		sortByOffset(v.aborted)
		sortByOffset(v.open)
		out[p] = v
	}
	return out
}

func sortByOffset(rs []*kgo.Record) {
	sort.Slice(rs, func(i, j int) bool { return rs[i].Offset < rs[j].Offset })
}

// dataOnly drops control records.
func dataOnly(rs []*kgo.Record) []*kgo.Record {
	var out []*kgo.Record
	for _, r := range rs {
		if !r.Attrs.IsControl() {
			out = append(out, r)
		}
	}
	return out
}

// describeOffsets lists records as "offset:value" for failure messages,
// at most 20.
func describeOffsets(rs []*kgo.Record) string {
	var parts []string
	for i, r := range rs {
		if i == 20 {
			parts = append(parts, fmt.Sprintf("... (%d in all)", len(rs)))
			break
		}
		parts = append(parts, fmt.Sprintf("%d:%s", r.Offset, r.Value))
	}
	return strings.Join(parts, " ")
}

// checkReadCommitted fails unless a read_committed read (data records)
// holds exactly the records the markers say are committed, by offset and
// value: no aborted record, no open one, none missing.
func checkReadCommitted(t *testing.T, topic string, committedRead map[int32][]*kgo.Record, view map[int32]*txnView) {
	t.Helper()
	for p, v := range view {
		got := dataOnly(committedRead[p])
		if len(got) != len(v.committed) {
			t.Errorf("%s/%d: read_committed returned %d records, the markers commit %d; aborted by markers: [%s]; read_committed: [%s]",
				topic, p, len(got), len(v.committed), describeOffsets(v.aborted), describeOffsets(got))
		}
		aborted := map[int64]bool{}
		for _, r := range v.aborted {
			aborted[r.Offset] = true
		}
		for i, r := range got {
			if aborted[r.Offset] {
				t.Errorf("%s/%d: read_committed returned the aborted record at offset %d (%q)", topic, p, r.Offset, r.Value)
				return
			}
			if i < len(v.committed) && (r.Offset != v.committed[i].Offset || string(r.Value) != string(v.committed[i].Value)) {
				t.Errorf("%s/%d: read_committed record %d is %d:%q, the markers commit %d:%q", topic, p, i, r.Offset, r.Value,
					v.committed[i].Offset, v.committed[i].Value)
				return
			}
		}
	}
}

// waitTxnState polls DescribeTransactions until txnID is in one of states.
func waitTxnState(t *testing.T, adm *kadm.Client, txnID string, timeout time.Duration, states ...string) kadm.DescribedTransaction {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last string
	for {
		described, err := adm.DescribeTransactions(ctxT(t, 5*time.Second), txnID)
		if err == nil {
			d, derr := described.On(txnID, nil)
			if derr == nil && slices.Contains(states, d.State) {
				return d
			}
			last = fmt.Sprintf("state %q (err %v) %+v", d.State, derr, d)
		} else {
			last = err.Error()
		}
		if time.Now().After(deadline) {
			t.Fatalf("transaction %s: not in %v within %v; last: %s", txnID, states, timeout, last)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitLSO polls ListOffsets(read_committed) until the last stable offset of
// topic/p reaches want.
func waitLSO(t *testing.T, adm *kadm.Client, topic string, p int32, want int64, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last string
	for {
		l, err := adm.ListCommittedOffsets(ctxT(t, 5*time.Second), topic)
		if err == nil {
			if o, ok := l.Lookup(topic, p); ok && o.Err == nil && o.Offset == want {
				return
			} else {
				last = fmt.Sprintf("%+v", o)
			}
		} else {
			last = err.Error()
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s/%d: last stable offset did not reach %d within %v; last: %s", topic, p, want, timeout, last)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// keepLogsOnFailure copies the given server logs (and the clients' log, see
// etlLogger) and partition directories to $GREGOR_E2E_LOGDIR/<test>/ when
// the test fails, for diagnosis; the harness's files live in temporary
// directories.
func keepLogsOnFailure(t *testing.T, logs func() map[string]string) {
	dir := os.Getenv("GREGOR_E2E_LOGDIR")
	if dir == "" {
		return
	}
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		dst := filepath.Join(dir, strings.ReplaceAll(t.Name(), "/", "_"))
		if err := os.MkdirAll(dst, 0o755); err != nil {
			t.Logf("keep logs: %v", err)
			return
		}
		for name, path := range logs() {
			if fi, err := os.Stat(path); err == nil && fi.IsDir() {
				// A partition directory, for gregor log dump.
				if err := os.CopyFS(filepath.Join(dst, name), os.DirFS(path)); err != nil {
					t.Logf("keep %s: %v", path, err)
				}
				continue
			}
			if data, err := os.ReadFile(path); err == nil {
				os.WriteFile(filepath.Join(dst, name), data, 0o644)
			}
		}
		t.Logf("logs kept in %s", dst)
	})
}

// etlLogger is a franz-go debug logger into a file of the test's temporary
// directory when $GREGOR_E2E_KGO_DEBUG is set (the file is kept by
// keepLogsOnFailure), and no logger otherwise: debug logging changes the
// timing enough to hide some races.
func etlLogger(t *testing.T) (kgo.Logger, string) {
	if os.Getenv("GREGOR_E2E_KGO_DEBUG") == "" {
		return nil, ""
	}
	path := filepath.Join(t.TempDir(), "clients.log")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return kgo.BasicLogger(f, kgo.LogLevelDebug, func() string { return time.Now().Format("15:04:05.000 ") }), path
}

// describeTxnState lists every transaction the cluster knows (state,
// producer, partitions) and the producers each partition of topic
// remembers (DescribeProducers): what holds a last stable offset back.
func describeTxnState(seeds []string, topic string) string {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		return err.Error()
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	adm := kadm.NewClient(cl)
	var b strings.Builder
	listed, err := adm.ListTransactions(ctx, nil, nil)
	if err != nil {
		fmt.Fprintf(&b, "ListTransactions: %v\n", err)
	}
	if ids := listed.TransactionalIDs(); len(ids) > 0 {
		described, err := adm.DescribeTransactions(ctx, ids...)
		if err != nil {
			fmt.Fprintf(&b, "DescribeTransactions: %v\n", err)
		}
		for _, d := range described.Sorted() {
			fmt.Fprintf(&b, "transaction %s: %s on coordinator %d, producer %d epoch %d, started %d, partitions %v, err %v\n",
				d.TxnID, d.State, d.Coordinator, d.ProducerID, d.ProducerEpoch, d.StartTimestamp, d.Topics, d.Err)
		}
	}
	parts, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		fmt.Fprintf(&b, "ListEndOffsets: %v\n", err)
		return b.String()
	}
	set := kadm.TopicsSet{}
	parts.Each(func(o kadm.ListedOffset) { set.Add(o.Topic, o.Partition) })
	producers, err := adm.DescribeProducers(ctx, set)
	if err != nil {
		fmt.Fprintf(&b, "DescribeProducers: %v\n", err)
	}
	producers.EachPartition(func(p kadm.DescribedProducersPartition) {
		fmt.Fprintf(&b, "%s/%d on leader %d (err %v):", p.Topic, p.Partition, p.Leader, p.Err)
		for _, pr := range p.ActiveProducers.Sorted() {
			fmt.Fprintf(&b, " [producer %d epoch %d last seq %d coordinator epoch %d txn start %d]",
				pr.ProducerID, pr.ProducerEpoch, pr.LastSequence, pr.CoordinatorEpoch, pr.CurrentTxnStartOffset)
		}
		b.WriteString("\n")
	})
	return b.String()
}
