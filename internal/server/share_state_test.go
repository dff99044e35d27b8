package server

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"gregor/internal/coordinator"
	"gregor/internal/coordinator/sharecoord"
	"gregor/internal/sharestate"
)

// shareKey is the FindCoordinator key of a share-partition.
func shareKey(group string, topicID [16]byte, partition int32) string {
	return fmt.Sprintf("%s:%s:%d", group, base64.RawURLEncoding.EncodeToString(topicID[:]), partition)
}

// findShareCoordinator asks FindCoordinator (key type SHARE) until the
// share coordinator of key is ready (the first request creates
// __share_group_state) and returns the answer.
func findShareCoordinator(t *testing.T, cl *kgo.Client, version int16, key string) kmsg.FindCoordinatorResponseCoordinator {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.Version, req.CoordinatorType, req.CoordinatorKeys = version, 2, []string{key}
		resp, err := req.RequestWith(ctxT(t), cl)
		if err != nil {
			t.Fatal(err)
		}
		c := resp.Coordinators[0]
		if c.ErrorCode != kerr.CoordinatorNotAvailable.Code || time.Now().After(deadline) {
			return c
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestShareStateRPCs drives APIs 83-87 and FindCoordinator's SHARE key type
// with raw requests against one node: initialize, read (recording the
// leader epoch), write v1 with merging, summary v1, fencing, unknown
// partitions, bad input, delete.
func TestShareStateRPCs(t *testing.T) {
	ts := startServer(t, t.TempDir(), map[string]string{"share.coordinator.state.topic.num.partitions": "3"})
	ctx := ctxT(t)
	cl := ts.client()
	created, err := ts.admin().CreateTopic(ctx, 2, 1, nil, "shared")
	if err != nil {
		t.Fatal(err)
	}
	id := created.ID

	// Bad keys and versions first: they create nothing.
	for _, tc := range []struct {
		version int16
		key     string
	}{{5, shareKey("g", id, 0)}, {6, "g:only-two"}, {6, "g:not-a-uuid:0"}, {6, " :" + base64.RawURLEncoding.EncodeToString(id[:]) + ":0"}, {6, shareKey("g", id, 0) + "x"}} {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.Version, req.CoordinatorType, req.CoordinatorKeys = tc.version, 2, []string{tc.key}
		// kgo sends the highest version both sides know: pin it.
		versions := kversion.Stable()
		versions.SetMaxKeyVersion(10, tc.version)
		resp, err := req.RequestWith(ctx, ts.client(kgo.MaxVersions(versions)))
		if err != nil {
			t.Fatal(err)
		}
		if code := resp.Coordinators[0].ErrorCode; code != kerr.InvalidRequest.Code {
			t.Errorf("FindCoordinator v%d SHARE %q: %v, want INVALID_REQUEST", tc.version, tc.key, kerr.ErrorForCode(code))
		}
	}
	c := findShareCoordinator(t, cl, 6, shareKey("g", id, 0))
	if c.ErrorCode != 0 || c.NodeID != ts.srv.cfg.NodeID {
		t.Fatalf("share coordinator: %+v (%v)", c, kerr.ErrorForCode(c.ErrorCode))
	}
	// Created as Kafka creates it (one replica: this node is alone).
	for key, want := range map[string]string{"cleanup.policy": "delete", "retention.ms": "-1", "compression.type": "producer",
		"segment.bytes": "104857600", "min.insync.replicas": "1"} {
		if got := describeOne(t, ts.admin(), "__share_group_state", key); got != want {
			t.Errorf("__share_group_state %s=%q, want %q", key, got, want)
		}
	}

	initialize := func(group string, topicID [16]byte, partition, stateEpoch int32, start int64) int16 {
		t.Helper()
		req := kmsg.NewPtrInitializeShareGroupStateRequest()
		req.GroupID = group
		rt := kmsg.NewInitializeShareGroupStateRequestTopic()
		rt.TopicID = topicID
		p := kmsg.NewInitializeShareGroupStateRequestTopicPartition()
		p.Partition, p.StateEpoch, p.StartOffset = partition, stateEpoch, start
		rt.Partitions = append(rt.Partitions, p)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Topics[0].Partitions[0].ErrorCode
	}
	read := func(partition, leaderEpoch int32) kmsg.ReadShareGroupStateResponseTopicPartition {
		t.Helper()
		req := kmsg.NewPtrReadShareGroupStateRequest()
		req.GroupID = "g"
		rt := kmsg.NewReadShareGroupStateRequestTopic()
		rt.TopicID = id
		p := kmsg.NewReadShareGroupStateRequestTopicPartition()
		p.Partition, p.LeaderEpoch = partition, leaderEpoch
		rt.Partitions = append(rt.Partitions, p)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Topics[0].Partitions[0]
	}
	write := func(partition, stateEpoch, leaderEpoch int32, start int64, complete int32, batches ...[4]int64) int16 {
		t.Helper()
		req := kmsg.NewPtrWriteShareGroupStateRequest()
		req.Version = 1
		req.GroupID = "g"
		rt := kmsg.NewWriteShareGroupStateRequestTopic()
		rt.TopicID = id
		p := kmsg.NewWriteShareGroupStateRequestTopicPartition()
		p.Partition, p.StateEpoch, p.LeaderEpoch, p.StartOffset, p.DeliveryCompleteCount = partition, stateEpoch, leaderEpoch, start, complete
		for _, b := range batches {
			sb := kmsg.NewWriteShareGroupStateRequestTopicPartitionStateBatch()
			sb.FirstOffset, sb.LastOffset, sb.DeliveryState, sb.DeliveryCount = b[0], b[1], int8(b[2]), int16(b[3])
			p.StateBatches = append(p.StateBatches, sb)
		}
		rt.Partitions = append(rt.Partitions, p)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Topics[0].Partitions[0].ErrorCode
	}
	summary := func(partition int32) kmsg.ReadShareGroupStateSummaryResponseTopicPartition {
		t.Helper()
		req := kmsg.NewPtrReadShareGroupStateSummaryRequest()
		req.Version = 1
		req.GroupID = "g"
		rt := kmsg.NewReadShareGroupStateSummaryRequestTopic()
		rt.TopicID = id
		p := kmsg.NewReadShareGroupStateSummaryRequestTopicPartition()
		p.Partition, p.LeaderEpoch = partition, -1
		rt.Partitions = append(rt.Partitions, p)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Topics[0].Partitions[0]
	}
	expect := func(what string, got int16, want *kerr.Error) {
		t.Helper()
		if (want == nil && got != 0) || (want != nil && got != want.Code) {
			t.Errorf("%s: %v, want %v", what, kerr.ErrorForCode(got), want)
		}
	}

	if r := read(0, 1); r.ErrorCode != kerr.InvalidRequest.Code {
		t.Errorf("read before initialize: %v, want INVALID_REQUEST", kerr.ErrorForCode(r.ErrorCode))
	}
	if s := summary(0); s.ErrorCode != 0 || s.StartOffset != -1 || s.LeaderEpoch != -1 {
		t.Errorf("summary before initialize: %+v", s)
	}
	expect("write before initialize", write(0, 0, 1, 0, -1, [4]int64{0, 1, 0, 1}), kerr.InvalidRequest)
	expect("initialize", initialize("g", id, 0, 1, 0), nil)
	expect("initialize an unknown partition", initialize("g", id, 2, 1, 0), kerr.UnknownTopicOrPartition)
	expect("initialize an unknown topic", initialize("g", [16]byte{9}, 0, 1, 0), kerr.UnknownTopicOrPartition)
	expect("initialize without a group", initialize("", id, 0, 1, 0), kerr.InvalidRequest)
	expect("initialize with an older state epoch", initialize("g", id, 0, 0, 0), kerr.FencedStateEpoch)

	if r := read(0, 4); r.ErrorCode != 0 || r.StateEpoch != 1 || r.StartOffset != 0 || len(r.StateBatches) != 0 {
		t.Fatalf("read after initialize: %+v", r)
	}
	expect("write", write(0, 1, 4, 0, 0, [4]int64{0, 9, 0, 1}), nil)
	expect("write acknowledgements", write(0, 1, 4, -1, 3, [4]int64{0, 2, 2, 1}, [4]int64{5, 5, 4, 1}), nil)
	expect("write of an older leader", write(0, 1, 3, -1, -1, [4]int64{3, 3, 2, 1}), kerr.FencedLeaderEpoch)
	expect("write of an older state epoch", write(0, 0, 4, -1, -1, [4]int64{3, 3, 2, 1}), kerr.FencedStateEpoch)
	expect("write of a malformed batch", write(0, 1, 4, -1, -1, [4]int64{5, 3, 2, 1}), kerr.InvalidRequest)
	r := read(0, 4)
	var got [][4]int64
	for _, b := range r.StateBatches {
		got = append(got, [4]int64{b.FirstOffset, b.LastOffset, int64(b.DeliveryState), int64(b.DeliveryCount)})
	}
	if want := [][4]int64{{0, 2, 2, 1}, {3, 4, 0, 1}, {5, 5, 4, 1}, {6, 9, 0, 1}}; r.ErrorCode != 0 || !reflect.DeepEqual(got, want) {
		t.Errorf("read after writes: %v %v, want %v", kerr.ErrorForCode(r.ErrorCode), got, want)
	}
	if r := read(0, 3); r.ErrorCode != kerr.FencedLeaderEpoch.Code {
		t.Errorf("read of an older leader: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if s := summary(0); s.ErrorCode != 0 || s.StateEpoch != 1 || s.LeaderEpoch != 4 || s.StartOffset != 0 || s.DeliveryCompleteCount != 3 {
		t.Errorf("summary: %+v", s)
	}

	del := kmsg.NewPtrDeleteShareGroupStateRequest()
	del.GroupID = "g"
	dt := kmsg.NewDeleteShareGroupStateRequestTopic()
	dt.TopicID = id
	for _, p := range []int32{0, 1} { // 1 has no state: nothing to delete
		dp := kmsg.NewDeleteShareGroupStateRequestTopicPartition()
		dp.Partition = p
		dt.Partitions = append(dt.Partitions, dp)
	}
	del.Topics = append(del.Topics, dt)
	dresp, err := del.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range dresp.Topics[0].Partitions {
		expect(fmt.Sprintf("delete partition %d", p.Partition), p.ErrorCode, nil)
	}
	if r := read(0, 4); r.ErrorCode != kerr.InvalidRequest.Code {
		t.Errorf("read after delete: %v, want INVALID_REQUEST", kerr.ErrorForCode(r.ErrorCode))
	}
}

// TestSharePersisterRestart writes through the broker's persister, waits
// for the shard to prune the records its snapshots made redundant,
// restarts the broker and reads the same state back: the shard is rebuilt
// from what is left of __share_group_state, snapshots and updates alike.
func TestSharePersisterRestart(t *testing.T) {
	dir := t.TempDir()
	extra := map[string]string{
		"share.coordinator.state.topic.num.partitions":           "3",
		"share.coordinator.snapshot.update.records.per.snapshot": "2",
		"share.coordinator.state.topic.prune.interval.ms":        "50",
	}
	ts := startServer(t, dir, extra)
	ctx := ctxT(t)
	created, err := ts.admin().CreateTopic(ctx, 1, 1, nil, "shared")
	if err != nil {
		t.Fatal(err)
	}
	p := ts.srv.shareStatePersister
	k := sharestate.Key{GroupID: "g", TopicID: created.ID, Partition: 0}
	if _, err := p.Read(ctx, k, 1); !errors.Is(err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("read before initialize: %v, want the contract's UNKNOWN_TOPIC_OR_PARTITION", err)
	}
	if err := p.Initialize(ctx, k, 2, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Read(ctx, k, 7); err != nil {
		t.Fatal(err)
	}
	for i := range int64(5) {
		u := sharestate.Update{StateEpoch: 2, LeaderEpoch: 7, StartOffset: i, DeliveryCompleteCount: int32(i),
			Batches: []sharestate.Batch{{FirstOffset: i * 10, LastOffset: i*10 + 9, DeliveryState: sharestate.Available, DeliveryCount: 1}}}
		if err := p.Write(ctx, k, u); err != nil {
			t.Fatal(err)
		}
	}
	before, err := p.Read(ctx, k, 7)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Write(ctx, k, sharestate.Update{StateEpoch: 2, LeaderEpoch: 6, StartOffset: -1, DeliveryCompleteCount: -1}); !errors.Is(err, kerr.FencedLeaderEpoch) {
		t.Fatalf("write of an older leader: %v", err)
	}
	statePartition := coordinator.PartitionFor(sharecoord.CoordinatorKey(k), 3)
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		starts, err := ts.admin().ListStartOffsets(ctx, "__share_group_state")
		if err != nil {
			t.Fatal(err)
		}
		if o, _ := starts.Lookup("__share_group_state", statePartition); o.Offset > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("__share_group_state-%d not pruned: %+v", statePartition, starts)
		}
	}
	ts.stop()

	ts2 := startServer(t, dir, extra)
	rctx, cancel := context.WithTimeout(ctxT(t), 20*time.Second)
	defer cancel()
	after, err := ts2.srv.shareStatePersister.Read(rctx, k, 7) // retried while the shard loads
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(before, after) || after.StartOffset != 4 || after.LeaderEpoch != 7 || len(after.Batches) != 1 {
		t.Fatalf("state after restart:\n%+v\nbefore:\n%+v", after, before)
	}
	sum, err := ts2.srv.shareStatePersister.ReadSummary(rctx, k)
	if err != nil || sum.StateEpoch != 2 || sum.StartOffset != 4 || sum.DeliveryCompleteCount != 4 {
		t.Fatalf("summary after restart: %+v %v", sum, err)
	}
	if err := ts2.srv.shareStatePersister.Delete(rctx, k); err != nil {
		t.Fatal(err)
	}
	if _, err := ts2.srv.shareStatePersister.Read(rctx, k, 7); !errors.Is(err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("read after delete: %v", err)
	}
}

// TestAuthzShareState: the share-group state APIs and FindCoordinator's
// SHARE key type need CLUSTER_ACTION on the cluster, as Kafka.
func TestAuthzShareState(t *testing.T) {
	ts, fa := startAuthzServer(t)
	cl := ts.client()
	rawRequest[*kmsg.MetadataResponse](t, cl, kmsg.NewPtrMetadataRequest())
	fa.only()
	key := shareKey("g", [16]byte{1}, 0)
	find := kmsg.NewPtrFindCoordinatorRequest()
	find.CoordinatorType, find.CoordinatorKeys = 2, []string{key}
	codeOf(t, "FindCoordinator SHARE", rawRequest[*kmsg.FindCoordinatorResponse](t, cl, find).Coordinators[0].ErrorCode, kerr.ClusterAuthorizationFailed)
	read := kmsg.NewPtrReadShareGroupStateRequest()
	read.GroupID = "g"
	rt := kmsg.NewReadShareGroupStateRequestTopic()
	rt.TopicID = [16]byte{1}
	rt.Partitions = []kmsg.ReadShareGroupStateRequestTopicPartition{{Partition: 0}, {Partition: 1}}
	read.Topics = append(read.Topics, rt)
	for _, p := range rawRequest[*kmsg.ReadShareGroupStateResponse](t, cl, read).Topics[0].Partitions {
		codeOf(t, "ReadShareGroupState", p.ErrorCode, kerr.ClusterAuthorizationFailed)
	}
	fa.only(clusterGrant(kmsg.ACLOperationClusterAction))
	// Allowed: the topic id is unknown, and the state topic is being made.
	if c := rawRequest[*kmsg.FindCoordinatorResponse](t, cl, find).Coordinators[0]; c.ErrorCode == kerr.ClusterAuthorizationFailed.Code {
		t.Errorf("FindCoordinator SHARE with CLUSTER_ACTION: %v", kerr.ErrorForCode(c.ErrorCode))
	}
	for _, p := range rawRequest[*kmsg.ReadShareGroupStateResponse](t, cl, read).Topics[0].Partitions {
		if p.ErrorCode == kerr.ClusterAuthorizationFailed.Code {
			t.Errorf("ReadShareGroupState with CLUSTER_ACTION: %v", kerr.ErrorForCode(p.ErrorCode))
		}
	}
}
