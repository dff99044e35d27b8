package raft

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"go.etcd.io/raft/v3/raftpb"
	"go.uber.org/goleak"

	"gregor/internal/metadata"
	"gregor/internal/record"
)

func TestNodeElectAppendReplicate(t *testing.T) {
	defer goleak.VerifyNone(t)
	c := newTestCluster(t, 1, 2, 3)
	defer c.shutdown()
	for _, id := range c.voters {
		c.start(id)
	}
	leader := c.waitLeader()
	c.append(featureRecords())
	c.append(topicRecords("orders", 1, 3))
	last := c.append(topicRecords("payments", 2, 2))
	c.waitConverged(last, 1, 2, 3)
	// Every node's listeners saw the same batches at the same offsets.
	want := c.recs[leader].batchIDs()
	if len(want) != 3 {
		t.Fatalf("leader's listener saw %d batches, want 3: %v", len(want), want)
	}
	for _, id := range c.voters {
		if got := c.recs[id].batchIDs(); !reflect.DeepEqual(got, want) {
			t.Fatalf("node %d batches %v, leader %v", id, got, want)
		}
	}
	// Followers refuse appends; every node knows the leader.
	for _, id := range c.voters {
		l, epoch := c.nodes[id].Leader()
		if id == leader {
			continue
		}
		if _, err := c.nodes[id].Append(context.Background(), featureRecords()); !errors.Is(err, ErrNotLeader) {
			t.Fatalf("append on follower %d: %v", id, err)
		}
		if l != leader || epoch < 1 {
			t.Fatalf("node %d says leader %d epoch %d, want %d", id, l, epoch, leader)
		}
	}
	// The leader's listeners heard of its leadership once, after what came before.
	lastChange := c.recs[leader].leaders[len(c.recs[leader].leaders)-1]
	if lastChange[0] != leader {
		t.Fatalf("leader's listener last heard %v", lastChange)
	}

	// Followers serve the committed log; decoding gives the same batches.
	hw := c.nodes[2].HighWatermark()
	if hw != last+1 {
		t.Fatalf("follower high watermark %d, want %d", hw, last+1)
	}
	raw, rhw, err := c.nodes[2].ReadCommitted(0, 1<<20)
	if err != nil || rhw != hw {
		t.Fatalf("read committed: hw %d err %v", rhw, err)
	}
	var decoded [][4]int64
	if err := DecodeBatches(raw, func(b Batch) error {
		decoded = append(decoded, [4]int64{b.BaseOffset, b.LastOffset, int64(b.Epoch), int64(len(b.Records))})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(decoded, want) {
		t.Fatalf("decoded %v, want %v", decoded, want)
	}
	if _, _, err := c.nodes[2].ReadCommitted(hw+1, 100); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read past the high watermark: %v", err)
	}

	// DescribeQuorum's view from the leader: every voter caught up.
	waitFor(t, "voters caught up in the leader's status", func() bool {
		st := c.nodes[leader].Status()
		if st.LeaderID != leader || st.HighWatermark != hw || len(st.Voters) != 3 {
			return false
		}
		for _, v := range st.Voters {
			if v.LogEndOffset != hw || v.LastFetchTimestamp < 0 || v.LastCaughtUpTimestamp < 0 {
				return false
			}
		}
		return true
	})
	// quorum-state holds Kafka's fields.
	st := readQuorumStateFile(t, c.dir(leader))
	if st["leaderId"] != float64(leader) || st["votedId"] != float64(leader) || st["clusterId"] != "c1" ||
		len(st["currentVoters"].([]any)) != 3 {
		t.Fatalf("leader's quorum-state %v", st)
	}
}

func TestNodeLeaderFailoverAndRestart(t *testing.T) {
	defer goleak.VerifyNone(t)
	c := newTestCluster(t, 1, 2, 3)
	defer c.shutdown()
	for _, id := range c.voters {
		c.start(id)
	}
	c.append(featureRecords())
	last := c.append(topicRecords("orders", 1, 3))
	old := c.waitLeader()
	_, oldEpoch := c.nodes[old].Leader()
	c.waitConverged(last, 1, 2, 3)
	c.stop(old)
	rest := slices.DeleteFunc(slices.Clone(c.voters), func(id int32) bool { return id == old })
	newLeader := c.waitLeader(rest...)
	if _, epoch := c.nodes[newLeader].Leader(); epoch <= oldEpoch {
		t.Fatalf("new leader epoch %d, old %d", epoch, oldEpoch)
	}
	last = c.append(topicRecords("payments", 2, 1), rest...)
	c.waitConverged(last, rest...)

	// The old leader restarts from its directory: replay gives its old
	// state at once, then it catches up.
	n := c.start(old)
	if img := c.loaders[old].Image(); img.Topics.Topic("orders") == nil {
		t.Fatalf("restarted node replayed nothing: offset %d", img.Offset)
	}
	if n.HighWatermark() <= 0 {
		t.Fatalf("restarted node high watermark %d", n.HighWatermark())
	}
	c.waitConverged(last, 1, 2, 3)
	last = c.append(topicRecords("refunds", 3, 1))
	c.waitConverged(last, 1, 2, 3)

	// A full restart: every node replays to the same state.
	before := c.loaders[c.waitLeader()].Image()
	c.shutdown()
	for _, id := range c.voters {
		c.start(id)
	}
	c.waitConverged(before.Offset, 1, 2, 3)
	if got := c.loaders[1].Image(); !reflect.DeepEqual(maps.Collect(got.Topics.All()), maps.Collect(before.Topics.All())) {
		t.Fatal("topics differ after a full restart")
	}
	last = c.append(topicRecords("after-restart", 4, 1))
	c.waitConverged(last, 1, 2, 3)
}

func TestNodeIsolatedLeaderCannotCommit(t *testing.T) {
	defer goleak.VerifyNone(t)
	// Kafka node ids start at 0; Raft ids are node id + 1.
	c := newTestCluster(t, 0, 1, 2)
	defer c.shutdown()
	for _, id := range c.voters {
		c.start(id)
	}
	last := c.append(featureRecords())
	c.waitConverged(last, c.voters...)
	old := c.waitLeader()
	c.net.isolate(old, c.voters, true)

	// The isolated leader's append cannot commit.
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	_, err := c.nodes[old].Append(ctx, topicRecords("lost", 9, 1))
	cancel()
	if err == nil {
		t.Fatal("an isolated leader committed an append")
	}
	// The majority elects a new leader and commits.
	rest := slices.DeleteFunc(slices.Clone(c.voters), func(id int32) bool { return id == old })
	last = c.append(topicRecords("kept", 8, 1), rest...)
	c.waitConverged(last, rest...)
	// The old leader stepped down (check quorum).
	waitFor(t, "the isolated leader to step down", func() bool {
		l, _ := c.nodes[old].Leader()
		return l != old
	})
	if _, err := c.nodes[old].Append(context.Background(), featureRecords()); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("append on the deposed leader: %v", err)
	}
	// Healed, it follows: its uncommitted entry is replaced by the new
	// leader's log, and its listeners never saw "lost".
	c.net.isolate(old, c.voters, false)
	c.waitConverged(last, c.voters...)
	if c.loaders[old].Image().Topics.Topic("lost") != nil {
		t.Fatal("the uncommitted topic reached a listener")
	}
	if got, want := c.recs[old].batchIDs(), c.recs[rest[0]].batchIDs(); !reflect.DeepEqual(got, want) {
		t.Fatalf("old leader batches %v, others %v", got, want)
	}
}

func TestNodeSnapshotCompactsAndCatchesUpNewNode(t *testing.T) {
	defer goleak.VerifyNone(t)
	c := newTestCluster(t, 1, 2, 3)
	c.tweak = func(cfg *NodeConfig) {
		cfg.SnapshotMaxNewRecordBytes = 2000
		cfg.SegmentBytes = 1500
	}
	defer c.shutdown()
	c.start(1)
	c.start(2)
	last := c.append(featureRecords(), 1, 2)
	for i := range 30 {
		last = c.append(topicRecords(fmt.Sprintf("t%02d", i), byte(i+1), 2), 1, 2)
	}
	c.waitConverged(last, 1, 2)
	leader := c.waitLeader(1, 2)
	n := c.nodes[leader]
	id, data, ok := n.LatestSnapshot()
	if !ok || id.EndOffset <= 0 {
		t.Fatalf("no snapshot taken: %v %v", id, ok)
	}
	snap, err := DecodeSnapshot(data)
	if err != nil || snap.EndOffset != id.EndOffset || snap.Epoch != id.Epoch || len(snap.Records) == 0 {
		t.Fatalf("decode snapshot %v: end %d epoch %d records %d err %v", id, snap.EndOffset, snap.Epoch, len(snap.Records), err)
	}
	// Kafka's file names; at most two kept.
	files, _ := filepath.Glob(filepath.Join(c.dir(leader), "*.checkpoint"))
	if len(files) == 0 || len(files) > snapshotFilesKept {
		t.Fatalf("snapshot files %v", files)
	}
	if _, err := os.Stat(filepath.Join(c.dir(leader), snapshotFileName(id))); err != nil {
		t.Fatalf("latest snapshot file: %v", err)
	}
	// The log below the snapshot is gone: reading it says so.
	if _, _, err := n.ReadCommitted(0, 100); !errors.Is(err, ErrOffsetBehindSnapshot) {
		t.Fatalf("read below the snapshot: %v", err)
	}
	segs, _ := filepath.Glob(filepath.Join(c.dir(leader), "00000000000000000000.log"))
	if len(segs) != 0 {
		t.Fatalf("first segment still present: %v", segs)
	}

	// A new, empty voter catches up through the snapshot.
	c.start(3)
	c.waitConverged(last, 1, 2, 3)
	if c.recs[3].snapshotCount() == 0 {
		t.Fatal("the new voter did not receive a snapshot")
	}
	last = c.append(topicRecords("after", 99, 1))
	c.waitConverged(last, 1, 2, 3)
	// It restarts from its own snapshot file and log.
	before := c.loaders[3].Image()
	c.stop(3)
	c.start(3)
	if got := c.loaders[3].Image(); got.Offset < before.Offset-10 || got.Topics.Topic("t00") == nil {
		t.Fatalf("restart from snapshot: offset %d (was %d)", got.Offset, before.Offset)
	}
	c.waitConverged(last, 1, 2, 3)
}

func TestNodeSingleVoterTornTail(t *testing.T) {
	defer goleak.VerifyNone(t)
	c := newTestCluster(t, 1)
	defer c.shutdown()
	c.start(1)
	c.append(featureRecords())
	last := c.append(topicRecords("orders", 1, 1))
	c.waitConverged(last, 1)
	before := c.loaders[1].Image()
	c.stop(1)
	// A crash in the middle of a write: garbage after the last batch.
	segs, _ := filepath.Glob(filepath.Join(c.dir(1), "*.log"))
	f, err := os.OpenFile(segs[len(segs)-1], os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte{0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 1, 0, 0xde, 0xad}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	c.start(1)
	if got := c.loaders[1].Image(); got.Offset != before.Offset || !reflect.DeepEqual(maps.Collect(got.Topics.All()), maps.Collect(before.Topics.All())) {
		t.Fatalf("after torn tail: offset %d, want %d", got.Offset, before.Offset)
	}
	last = c.append(topicRecords("more", 2, 1))
	if last <= before.Offset {
		t.Fatalf("append after restart at %d", last)
	}
	c.waitConverged(last, 1)
}

func TestNodeStorageFailureStopsAcknowledging(t *testing.T) {
	defer goleak.VerifyNone(t)
	c := newTestCluster(t, 1, 2, 3)
	defer c.shutdown()
	for _, id := range c.voters {
		c.start(id)
	}
	last := c.append(featureRecords())
	c.waitConverged(last, 1, 2, 3)
	leader := c.waitLeader()
	follower := int32(1)
	if follower == leader {
		follower = 2
	}
	// The follower's next hard state write fails.
	if err := os.Mkdir(filepath.Join(c.dir(follower), QuorumStateFileName+".tmp"), 0o755); err != nil {
		t.Fatal(err)
	}
	last = c.append(topicRecords("orders", 1, 1))
	waitFor(t, "the follower to fail", func() bool { return c.nodes[follower].Err() != nil })
	sent := c.net.sentBy(follower)
	for i := range 3 {
		last = c.append(topicRecords(fmt.Sprintf("t%d", i), byte(10+i), 1))
	}
	var others []int32
	for _, id := range c.voters {
		if id != follower {
			others = append(others, id)
		}
	}
	c.waitConverged(last, others...)
	if got := c.net.sentBy(follower); got != sent {
		t.Fatalf("the failed node sent %d more messages", got-sent)
	}
	if img := c.loaders[follower].Image(); img.Topics.Topic("t2") != nil {
		t.Fatal("the failed node applied later batches")
	}
	if l, _ := c.nodes[follower].Leader(); l != -1 {
		t.Fatalf("failed node reports leader %d", l)
	}
}

func TestNodeLateListenerAndContext(t *testing.T) {
	defer goleak.VerifyNone(t)
	c := newTestCluster(t, 1)
	defer c.shutdown()
	c.start(1)
	c.append(featureRecords())
	last := c.append(topicRecords("orders", 1, 2))
	late := metadata.NewLoader("c1", quietLogger())
	c.nodes[1].Register(late)
	if img := late.Image(); img.Offset != last || img.Topics.Topic("orders") == nil {
		t.Fatalf("late listener at offset %d, want %d", img.Offset, last)
	}
	if id, _ := late.Leader(); id != 1 {
		t.Fatalf("late listener leader %d", id)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.nodes[1].Append(ctx, featureRecords()); !errors.Is(err, context.Canceled) {
		t.Fatalf("append with a canceled context: %v", err)
	}
	n := c.nodes[1]
	c.stop(1)
	if _, err := n.Append(context.Background(), featureRecords()); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("append after close: %v", err)
	}
}

func TestSnapshotFileFormat(t *testing.T) {
	id := SnapshotID{EndOffset: 42, Epoch: 3}
	if got, want := snapshotFileName(id), "00000000000000000042-0000000003.checkpoint"; got != want {
		t.Fatalf("file name %q, want %q", got, want)
	}
	if back, ok := parseSnapshotFileName(snapshotFileName(id)); !ok || back != id {
		t.Fatalf("parse: %v %v", back, ok)
	}
	recs := append(featureRecords(), topicRecords("orders", 1, 2)...)
	data, err := encodeSnapshot(id, 7, 1000, 2000, metadata.EncodeAll(recs))
	if err != nil {
		t.Fatal(err)
	}
	snap, pos, err := decodeSnapshot(data)
	if err != nil {
		t.Fatal(err)
	}
	if snap.EndOffset != 42 || snap.Epoch != 3 || pos.raftIndex != 7 || !reflect.DeepEqual(snap.Records, recs) {
		t.Fatalf("decoded %+v %+v", snap, pos)
	}
	// Header, one data batch, footer: control types 3 and 4, as Kafka.
	var kinds []string
	for rest := data; len(rest) > 0; {
		h, err := record.ParseHeader(rest)
		if err != nil {
			t.Fatal(err)
		}
		_, rs, err := record.ReadRecords(rest[:h.Size()])
		if err != nil {
			t.Fatal(err)
		}
		if h.PartitionLeaderEpoch != 3 {
			t.Fatalf("batch epoch %d", h.PartitionLeaderEpoch)
		}
		if h.IsControl() {
			kinds = append(kinds, fmt.Sprintf("control-%d", binary.BigEndian.Uint16(rs[0].Key[2:])))
		} else {
			kinds = append(kinds, fmt.Sprintf("data-%d", len(rs)))
		}
		rest = rest[h.Size():]
	}
	if want := []string{"control-3", "data-4", "control-4"}; !reflect.DeepEqual(kinds, want) {
		t.Fatalf("batches %v, want %v", kinds, want)
	}
	// Truncated or reordered input is an error, never a panic.
	for i := range len(data) {
		if _, err := DecodeSnapshot(data[:i]); err == nil && i > 0 {
			t.Fatalf("a snapshot cut at %d decoded", i)
		}
	}
}

func FuzzDecodeSnapshot(f *testing.F) {
	data, err := encodeSnapshot(SnapshotID{EndOffset: 10, Epoch: 1}, 4, 0, 0, metadata.EncodeAll(topicRecords("x", 1, 1)))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = DecodeSnapshot(b)
		_ = DecodeBatches(b, func(Batch) error { return nil })
	})
}

func TestNodeRefusesChangedVoterSet(t *testing.T) {
	dir := t.TempDir()
	st := quorumState{LeaderID: -1, VotedID: -1, LeaderEpoch: 3, CurrentVoters: []voter{{VoterID: 1}, {VoterID: 2}, {VoterID: 3}}}
	if err := writeQuorumState(dir, st); err != nil {
		t.Fatal(err)
	}
	_, err := NewNode(NodeConfig{Dir: dir, NodeID: 1, Voters: []int32{1, 2, 4}, Transport: dropTransport{}})
	if err == nil || !strings.Contains(err.Error(), "cannot be changed") {
		t.Fatalf("NewNode with another voter set: %v, want a refusal naming the stored voters", err)
	}
	n, err := NewNode(NodeConfig{Dir: dir, NodeID: 1, Voters: []int32{3, 2, 1}, Transport: dropTransport{}})
	if err != nil {
		t.Fatalf("the same voters in another order: %v", err)
	}
	n.Close()
}

type dropTransport struct{}

func (dropTransport) Send([]raftpb.Message) {}
