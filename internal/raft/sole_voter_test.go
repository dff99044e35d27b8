package raft

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/goleak"

	"gregor/internal/metadata"
	"gregor/internal/record"
)

// The one-voter quorum (the zero-config node) is a Node whose voter set is
// itself: these tests are its contract.

func quietLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

func openVoter(t *testing.T, dir string) (*Node, *metadata.Loader) {
	t.Helper()
	n, err := NewNode(NodeConfig{Dir: dir, NodeID: 1, ClusterID: "c1", Voters: []int32{1}, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	l := metadata.NewLoader("c1", quietLogger())
	n.Register(l)
	t.Cleanup(func() { n.Close() }) // a failed test must not leak the node (Close is idempotent)
	if err := n.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return n, l
}

func topicRecords(name string, id byte, partitions int) []metadata.Record {
	tid := [16]byte{15: id}
	recs := []metadata.Record{&metadata.TopicRecord{Name: name, TopicID: tid}}
	for p := range partitions {
		recs = append(recs, &metadata.PartitionRecord{RecordVersion: 1, PartitionID: int32(p), TopicID: tid,
			Replicas: []int32{1}, ISR: []int32{1}, RemovingReplicas: []int32{}, AddingReplicas: []int32{},
			Leader: 1, Directories: [][16]byte{{}}})
	}
	return recs
}

func readQuorumStateFile(t *testing.T, dir string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, QuorumStateFileName))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("quorum-state %s: %v", b, err)
	}
	return m
}

func TestSoleVoterAppendRestartReplay(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) }) // after the nodes' cleanups
	dir := filepath.Join(t.TempDir(), "__cluster_metadata-0")
	v, loader := openVoter(t, dir)
	// Start returns the leader of epoch 1, its leader change batch written.
	if id, epoch := v.Leader(); id != 1 || epoch != 1 {
		t.Fatalf("leader = %d epoch %d, want 1/1", id, epoch)
	}
	if hw := v.HighWatermark(); hw != 1 {
		t.Fatalf("high watermark after the leader change batch = %d, want 1", hw)
	}
	st := readQuorumStateFile(t, dir)
	if st["leaderId"] != 1.0 || st["leaderEpoch"] != 1.0 || st["votedId"] != 1.0 ||
		!reflect.DeepEqual(st["currentVoters"], []any{map[string]any{"voterId": 1.0}}) {
		t.Fatalf("quorum-state = %v", st)
	}

	last, err := v.Append(context.Background(), append(featureRecords(), topicRecords("orders", 1, 3)...))
	if err != nil {
		t.Fatal(err)
	}
	if last != 5 {
		t.Fatalf("last offset = %d, want 5 (offset 0 is the leader change)", last)
	}
	// The listener has the batch when Append returns.
	img := loader.Image()
	if img.Offset != 5 || img.Epoch != 1 || img.Topics.Topic("orders").NumPartitions() != 3 {
		t.Fatalf("image after append: offset %d epoch %d topics %v", img.Offset, img.Epoch, slices.Collect(img.Topics.Names()))
	}
	if _, err := v.Append(context.Background(), topicRecords("payments", 2, 1)); err != nil {
		t.Fatal(err)
	}
	before := loader.Image()
	if err := v.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Append(context.Background(), topicRecords("x", 3, 1)); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("append after close: %v", err)
	}

	// Restart: Start replays the whole log (the commit index is not
	// written on every commit), and the epoch goes up.
	v2, loader2 := openVoter(t, dir)
	defer v2.Close()
	after := loader2.Image()
	if after.Offset != before.Offset || after.Epoch != before.Epoch ||
		!reflect.DeepEqual(maps.Collect(after.Topics.All()), maps.Collect(before.Topics.All())) || !reflect.DeepEqual(after.Features, before.Features) {
		t.Fatalf("replayed image differs:\n%+v\n%+v", after, before)
	}
	if id, epoch := v2.Leader(); id != 1 || epoch != 2 {
		t.Fatalf("after restart leader %d epoch %d, want 1/2", id, epoch)
	}
	if st := readQuorumStateFile(t, dir); st["leaderEpoch"] != 2.0 {
		t.Fatalf("quorum-state after restart = %v", st)
	}
	last, err = v2.Append(context.Background(), []metadata.Record{&metadata.NoOpRecord{}})
	if err != nil {
		t.Fatal(err)
	}
	if img := loader2.Image(); img.Epoch != 2 || img.Offset != last {
		t.Fatalf("image after append in epoch 2: offset %d epoch %d (last %d)", img.Offset, img.Epoch, last)
	}
	// A listener registered late is brought up to date first.
	late := metadata.NewLoader("c1", quietLogger())
	v2.Register(late)
	if late.Image().Offset != last || late.Image().Topics.Topic("payments") == nil {
		t.Fatalf("late listener image offset %d", late.Image().Offset)
	}
	checkLogLayout(t, v2, []string{"leader-change@1", "data@1", "data@1", "leader-change@2", "data@2"})
}

// checkLogLayout reads the raw log: each epoch opens with a LeaderChangeMessage
// control batch, and data batches carry their epoch as partition leader epoch.
func checkLogLayout(t *testing.T, n *Node, want []string) {
	t.Helper()
	var raw []byte // the whole log; a read stops at a segment's end
	for offset, end := int64(0), n.log.LogEndOffset(); offset < end; {
		info, err := n.log.Read(offset, 1<<20, end, true)
		if err != nil || len(info.Records) == 0 {
			t.Fatalf("read the log at %d: %v", offset, err)
		}
		raw = append(raw, info.Records...)
		for rest := info.Records; len(rest) > 0; rest = rest[mustHeader(t, rest).Size():] {
			offset = mustHeader(t, rest).NextOffset()
		}
	}
	var kinds []string
	for rest := raw; len(rest) > 0; {
		h, recs, err := record.ReadRecords(rest[:mustHeader(t, rest).Size()])
		if err != nil {
			t.Fatal(err)
		}
		rest = rest[h.Size():]
		epoch := strconv.Itoa(int(h.PartitionLeaderEpoch))
		if h.IsControl() {
			if len(recs) != 1 || binary.BigEndian.Uint16(recs[0].Key[2:]) != controlTypeLeaderChange {
				t.Fatalf("control batch at %d: %+v", h.BaseOffset, recs)
			}
			var msg kmsg.LeaderChangeMessage
			if err := msg.ReadFrom(recs[0].Value); err != nil || msg.LeaderID != 1 || len(msg.Voters) != 1 {
				t.Fatalf("leader change message: %+v %v", msg, err)
			}
			kinds = append(kinds, "leader-change@"+epoch)
			continue
		}
		if h.ProducerID != -1 || recs[0].Key != nil {
			t.Fatalf("data batch at %d: producer %d key %v", h.BaseOffset, h.ProducerID, recs[0].Key)
		}
		kinds = append(kinds, "data@"+epoch)
	}
	if !reflect.DeepEqual(kinds, want) {
		t.Fatalf("log layout %v, want %v", kinds, want)
	}
}

func mustHeader(t *testing.T, b []byte) record.BatchHeader {
	t.Helper()
	h, err := record.ParseHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestSoleVoterOpensSingleVoterDir opens a metadata directory written by
// the former one-voter implementation (single_voter.go, removed): its log
// and quorum-state, whose appliedOffset it always left at 0, as that code
// wrote them in testdata/single-voter-v1 (two starts: epoch 1 with the
// features, topic orders and a producer-id block; epoch 2 with topic
// payments). Every batch must come back, and the node must go on from it.
func TestSoleVoterOpensSingleVoterDir(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) }) // after the nodes' cleanups
	dir := filepath.Join(t.TempDir(), "__cluster_metadata-0")
	if err := os.CopyFS(dir, os.DirFS("testdata/single-voter-v1/__cluster_metadata-0")); err != nil {
		t.Fatal(err)
	}
	if st := readQuorumStateFile(t, dir); st["appliedOffset"] != 0.0 || st["leaderEpoch"] != 2.0 || st["clusterId"] != "" {
		t.Fatalf("fixture quorum-state = %v", st)
	}
	v, loader := openVoter(t, dir)
	img := loader.Image()
	if img.Offset != 9 || img.Epoch != 2 || img.Topics.Topic("orders").NumPartitions() != 3 ||
		img.Topics.Topic("payments").NumPartitions() != 1 || img.MetadataVersion() != 25 {
		t.Fatalf("image of the old directory: offset %d epoch %d topics %v", img.Offset, img.Epoch, slices.Collect(img.Topics.Names()))
	}
	if id, epoch := v.Leader(); id != 1 || epoch != 3 {
		t.Fatalf("leader %d epoch %d, want 1/3", id, epoch)
	}
	last, err := v.Append(context.Background(), topicRecords("more", 3, 2))
	if err != nil {
		t.Fatal(err)
	}
	if last != 13 {
		t.Fatalf("append after the old log ends at %d, want 13 (10 is epoch 3's leader change)", last)
	}
	if err := v.Close(); err != nil {
		t.Fatal(err)
	}
	// And it restarts as a node's own directory.
	v2, loader2 := openVoter(t, dir)
	defer v2.Close()
	if img := loader2.Image(); img.Offset != last || img.Topics.Topic("more") == nil || img.Topics.Topic("orders") == nil {
		t.Fatalf("after restart: offset %d", img.Offset)
	}
	checkLogLayout(t, v2, []string{"leader-change@1", "data@1", "data@1", "data@1", "leader-change@2", "data@2",
		"leader-change@3", "data@3", "leader-change@4"})
}

func TestSoleVoterTornTail(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) }) // after the nodes' cleanups
	dir := filepath.Join(t.TempDir(), "__cluster_metadata-0")
	v, loader := openVoter(t, dir)
	if _, err := v.Append(context.Background(), topicRecords("orders", 1, 2)); err != nil {
		t.Fatal(err)
	}
	kept := loader.Image()
	if _, err := v.Append(context.Background(), topicRecords("payments", 2, 2)); err != nil {
		t.Fatal(err)
	}
	if err := v.Close(); err != nil {
		t.Fatal(err)
	}
	// Tear the last batch, as a crash in the middle of a write would.
	segment := filepath.Join(dir, "00000000000000000000.log")
	fi, err := os.Stat(segment)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(segment, fi.Size()-7); err != nil {
		t.Fatal(err)
	}
	v2, loader2 := openVoter(t, dir)
	defer v2.Close()
	img := loader2.Image()
	if img.Offset != kept.Offset || img.Topics.Topic("payments") != nil || !reflect.DeepEqual(maps.Collect(img.Topics.All()), maps.Collect(kept.Topics.All())) {
		t.Fatalf("after a torn tail: offset %d topics %v", img.Offset, slices.Collect(img.Topics.Names()))
	}
	// The log goes on from where the good part ends.
	last, err := v2.Append(context.Background(), topicRecords("payments", 2, 1))
	if err != nil {
		t.Fatal(err)
	}
	if loader2.Image().Topics.Topic("payments").NumPartitions() != 1 || last != v2.HighWatermark()-1 {
		t.Fatalf("append after recovery: last %d hw %d", last, v2.HighWatermark())
	}
}

func TestSoleVoterRefusals(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) }) // after the nodes' cleanups
	dir := filepath.Join(t.TempDir(), "__cluster_metadata-0")
	v, err := NewNode(NodeConfig{Dir: dir, NodeID: 1, Voters: []int32{1}, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	if _, err := v.Append(context.Background(), []metadata.Record{&metadata.NoOpRecord{}}); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("append before start: %v", err)
	}
	if id, _ := v.Leader(); id != -1 {
		t.Fatalf("leader before start = %d", id)
	}
	if err := v.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := v.Start(context.Background()); err == nil {
		t.Fatal("second start succeeded")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := v.Append(ctx, []metadata.Record{&metadata.NoOpRecord{}}); !errors.Is(err, context.Canceled) {
		t.Fatalf("append with a cancelled context: %v", err)
	}
	if _, err := v.Append(context.Background(), nil); err == nil {
		t.Fatal("empty append succeeded")
	}
	if _, err := NewNode(NodeConfig{NodeID: 1, Voters: []int32{1}}); err == nil {
		t.Fatal("no dir accepted")
	}
	if _, err := NewNode(NodeConfig{Dir: t.TempDir(), NodeID: 1, Voters: []int32{1, 2}}); err == nil {
		t.Fatal("a voter of two without a transport accepted")
	}
	// A corrupt hard state is an error, not a silent epoch reset.
	bad := filepath.Join(t.TempDir(), "m")
	if err := os.MkdirAll(bad, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bad, QuorumStateFileName), []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := NewNode(NodeConfig{Dir: bad, NodeID: 1, Voters: []int32{1}, Logger: quietLogger()}); err == nil {
		t.Fatal("corrupt quorum-state accepted")
	}
	var _ Quorum = v
	var _ Listener = (*metadata.Loader)(nil)
}

// TestSoleVoterStartFailsOnStorageError: a one-voter node whose first hard
// state write fails does not hang in Start waiting to lead; Start says why.
func TestSoleVoterStartFailsOnStorageError(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	dir := filepath.Join(t.TempDir(), "__cluster_metadata-0")
	n, err := NewNode(NodeConfig{Dir: dir, NodeID: 1, Voters: []int32{1}, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	// The campaign's hard state write (a new term) fails.
	if err := os.Mkdir(filepath.Join(dir, QuorumStateFileName+".tmp"), 0o755); err != nil {
		t.Fatal(err)
	}
	err = n.Start(context.Background())
	if !errors.Is(err, errNodeFailed) {
		t.Fatalf("start with a failing hard state write: %v", err)
	}
	if _, err := n.Append(context.Background(), []metadata.Record{&metadata.NoOpRecord{}}); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("append on the failed node: %v", err)
	}
}
