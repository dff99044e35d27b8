package server

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/coordinator"
)

// txnCommit sends one TxnOffsetCommit of a producer for group and returns
// the error names by "topic/partition".
func txnCommit(t *testing.T, cl *kgo.Client, version int16, group string, pid int64, epoch int16, offsets map[string]int64) map[string]string {
	t.Helper()
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.Version, req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = version, "tx", group, pid, epoch
	for tp, o := range offsets {
		i := strings.LastIndexByte(tp, '/')
		p, err := strconv.Atoi(tp[i+1:])
		if err != nil {
			t.Fatal(err)
		}
		topic := tp[:i]
		rt := kmsg.NewTxnOffsetCommitRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = int32(p), o
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctxT(t), cl)
	if err != nil {
		t.Fatalf("TxnOffsetCommit: %v", err)
	}
	got := map[string]string{}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			name := "NONE"
			if rp.ErrorCode != 0 {
				name = kerr.ErrorForCode(rp.ErrorCode).(*kerr.Error).Message
			}
			got[fmt.Sprintf("%s/%d", rt.Topic, rp.Partition)] = name
		}
	}
	return got
}

// fetchStable answers an OffsetFetch (v8, require_stable as asked) of
// topic's partitions 0-1: "offset" or "offset!ERROR" per partition.
func fetchStable(t *testing.T, cl *kgo.Client, group, topic string, requireStable bool) [2]string {
	t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version, req.RequireStable = 8, requireStable
	rg := kmsg.NewOffsetFetchRequestGroup()
	rg.Group = group
	rt := kmsg.NewOffsetFetchRequestGroupTopic()
	rt.Topic, rt.Partitions = topic, []int32{0, 1}
	rg.Topics = append(rg.Topics, rt)
	req.Groups = append(req.Groups, rg)
	resp, err := req.RequestWith(ctxT(t), cl)
	if err != nil {
		t.Fatalf("OffsetFetch: %v", err)
	}
	var out [2]string
	if len(resp.Groups) != 1 || resp.Groups[0].ErrorCode != 0 || len(resp.Groups[0].Topics) != 1 {
		t.Fatalf("OffsetFetch answer: %+v", resp.Groups)
	}
	for _, p := range resp.Groups[0].Topics[0].Partitions {
		out[p.Partition] = fmt.Sprint(p.Offset)
		if p.ErrorCode != 0 {
			out[p.Partition] += "!" + kerr.ErrorForCode(p.ErrorCode).(*kerr.Error).Message
		}
	}
	return out
}

// writeGroupMarker sends WriteTxnMarkers for the producer to the group's
// __consumer_offsets partition, as a transaction coordinator does, and
// returns the partition's error.
func writeGroupMarker(t *testing.T, cl *kgo.Client, group string, pid int64, epoch int16, commit bool) error {
	t.Helper()
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.ProducerEpoch, m.Committed = pid, epoch, commit
	mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
	mt.Topic, mt.Partitions = "__consumer_offsets", []int32{coordinator.PartitionFor(group, 5)}
	m.Topics = append(m.Topics, mt)
	req.Markers = append(req.Markers, m)
	resp, err := req.RequestWith(ctxT(t), cl)
	if err != nil {
		t.Fatalf("WriteTxnMarkers: %v", err)
	}
	return kerr.ErrorForCode(resp.Markers[0].Topics[0].Partitions[0].ErrorCode)
}

// TestTxnOffsetCommitRaw drives TxnOffsetCommit and the group coordinator's
// marker path with raw requests: per-partition errors for unknown topics
// and partitions, UNSTABLE_OFFSET_COMMIT while the transaction is open,
// commit and abort by WriteTxnMarkers, and the same offsets after a
// restart (the transactional batches and markers replayed).
func TestTxnOffsetCommitRaw(t *testing.T) {
	dir := t.TempDir()
	ts := startServer(t, dir, groupProps)
	ctx := ctxT(t)
	adm := ts.admin()
	if _, err := adm.CreateTopic(ctx, 2, 1, nil, "in"); err != nil {
		t.Fatal(err)
	}
	cl := ts.client()
	// The group's coordinator (and __consumer_offsets) exists once asked for.
	waitFor(t, "group coordinator", 20*time.Second, func() bool {
		resp, err := kmsg.NewPtrFindCoordinatorRequest().RequestWith(ctx, cl)
		return err == nil && resp.ErrorCode == 0 && (len(resp.Coordinators) == 0 || resp.Coordinators[0].ErrorCode == 0)
	})
	pidResp, err := kmsg.NewPtrInitProducerIDRequest().RequestWith(ctx, cl)
	if err != nil || pidResp.ErrorCode != 0 {
		t.Fatalf("InitProducerId: %v %v", pidResp, err)
	}
	pid, epoch := pidResp.ProducerID, pidResp.ProducerEpoch
	// These commits stand in for a producer with no transaction
	// coordinator behind it (the test writes the markers itself): under
	// transactions v2 a TxnOffsetCommit v5 first adds the partition at the
	// coordinator, so the cluster runs transaction.version 1.
	setTxnVersion(t, cl, 1)

	var got map[string]string
	waitFor(t, "TxnOffsetCommit past loading", 20*time.Second, func() bool {
		got = txnCommit(t, cl, 4, "g", pid, epoch, map[string]int64{"in/0": 10, "in/1": 20, "nope/0": 1, "in/7": 1})
		return got["in/0"] != "COORDINATOR_LOAD_IN_PROGRESS" && got["in/0"] != "NOT_COORDINATOR"
	})
	want := map[string]string{"in/0": "NONE", "in/1": "NONE", "nope/0": "UNKNOWN_TOPIC_OR_PARTITION", "in/7": "UNKNOWN_TOPIC_OR_PARTITION"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("TxnOffsetCommit: %v, want %v", got, want)
	}
	if got := fetchStable(t, cl, "g", "in", true); got != [2]string{"-1!UNSTABLE_OFFSET_COMMIT", "-1!UNSTABLE_OFFSET_COMMIT"} {
		t.Fatalf("require_stable fetch of an open transaction: %v", got)
	}
	if got := fetchStable(t, cl, "g", "in", false); got != [2]string{"-1", "-1"} {
		t.Fatalf("plain fetch of an open transaction: %v", got)
	}
	if err := writeGroupMarker(t, cl, "g", pid, epoch, true); err != nil {
		t.Fatalf("commit marker: %v", err)
	}
	if got := fetchStable(t, cl, "g", "in", true); got != [2]string{"10", "20"} {
		t.Fatalf("after COMMIT: %v", got)
	}

	// v0 (no leader epoch, no member): the next transaction is aborted.
	if got := txnCommit(t, cl, 0, "g", pid, epoch, map[string]int64{"in/0": 30}); got["in/0"] != "NONE" {
		t.Fatalf("TxnOffsetCommit v0: %v", got)
	}
	if got := fetchStable(t, cl, "g", "in", true); got != [2]string{"-1!UNSTABLE_OFFSET_COMMIT", "20"} {
		t.Fatalf("require_stable fetch of the second transaction: %v", got)
	}
	if err := writeGroupMarker(t, cl, "g", pid, epoch, false); err != nil {
		t.Fatalf("abort marker: %v", err)
	}
	if got := fetchStable(t, cl, "g", "in", true); got != [2]string{"10", "20"} {
		t.Fatalf("after ABORT: %v", got)
	}
	// A third transaction stays open across the restart.
	if got := txnCommit(t, cl, 4, "g", pid, epoch, map[string]int64{"in/1": 40}); got["in/1"] != "NONE" {
		t.Fatalf("TxnOffsetCommit: %v", got)
	}

	ts.stop()
	ts = startServer(t, dir, groupProps)
	cl = ts.client()
	var after [2]string
	waitFor(t, "offsets after restart", 20*time.Second, func() bool {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Version, req.Group = 7, "g"
		resp, err := req.RequestWith(ctxT(t), cl)
		if err != nil || resp.ErrorCode != 0 {
			return false
		}
		after = fetchStable(t, cl, "g", "in", true)
		return true
	})
	if after != [2]string{"10", "-1!UNSTABLE_OFFSET_COMMIT"} {
		t.Fatalf("after restart: %v, want the committed offsets and the open transaction", after)
	}
	if err := writeGroupMarker(t, cl, "g", pid, epoch, true); err != nil {
		t.Fatalf("commit marker after restart: %v", err)
	}
	if got := fetchStable(t, cl, "g", "in", true); got != [2]string{"10", "40"} {
		t.Fatalf("after the restart's COMMIT: %v", got)
	}
}

// TestTxnOffsetCommitGroupTransactSession: franz-go's consume-transform-
// produce session copies a topic, committing the group's offsets in each
// transaction; the group's committed offsets end at the input's ends and
// read_committed consumers see every record copied once. An aborted
// transaction moves no offset.
func TestTxnOffsetCommitGroupTransactSession(t *testing.T) {
	ts := startServer(t, t.TempDir(), groupProps)
	ctx := ctxT(t)
	adm := ts.admin()
	for _, topic := range []string{"etl-in", "etl-out"} {
		if _, err := adm.CreateTopic(ctx, 2, 1, nil, topic); err != nil {
			t.Fatal(err)
		}
	}
	prod := ts.client()
	produceN(t, prod, "etl-in", 0, 100)

	s, err := kgo.NewGroupTransactSession(
		kgo.SeedBrokers(ts.addr()),
		kgo.TransactionalID("etl-1"),
		kgo.ConsumerGroup("etl"),
		kgo.ConsumeTopics("etl-in"),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.RequireStableFetchOffsets(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(100*time.Millisecond),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	// One transaction aborted first: its records are seen again.
	copied, aborted := 0, false
	for copied < 100 {
		fs := s.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("copied %d of 100: %v", copied, err)
		}
		var recs []*kgo.Record
		fs.EachRecord(func(r *kgo.Record) { recs = append(recs, r) })
		if len(recs) == 0 {
			continue
		}
		if err := s.Begin(); err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			s.Produce(ctx, &kgo.Record{Topic: "etl-out", Key: r.Key, Value: r.Value}, nil)
		}
		commit := kgo.TryCommit
		if !aborted {
			commit, aborted = kgo.TryAbort, true
		}
		committed, err := s.End(ctx, commit)
		if err != nil {
			t.Fatalf("End: %v", err)
		}
		if committed {
			copied += len(recs)
		}
	}

	ends, err := adm.ListEndOffsets(ctx, "etl-in")
	if err != nil {
		t.Fatal(err)
	}
	// EndTxn answers once the commit is decided; the markers (and with
	// them the group's offsets) follow.
	var offs kadm.OffsetResponses
	waitFor(t, "the group's offsets at the input's ends", 20*time.Second, func() bool {
		offs, err = adm.FetchOffsets(ctx, "etl")
		if err != nil {
			return false
		}
		at := true
		ends.Each(func(e kadm.ListedOffset) {
			if o, ok := offs.Lookup(e.Topic, e.Partition); !ok || o.At != e.Offset {
				at = false
			}
		})
		return at
	})
	out := consumeIsolated(t, ts, "etl-out", kgo.ReadCommitted(), 100)
	if len(out) != 100 {
		t.Fatalf("read_committed output has %d records, want 100", len(out))
	}
	seen := map[string]bool{}
	for _, v := range out {
		if seen[v] {
			t.Fatalf("record %q copied twice", v)
		}
		seen[v] = true
	}
}
