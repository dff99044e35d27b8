package controller

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/metadata"
)

// alterReq builds a one-partition AlterPartition request from broker id at
// the partition's current epochs.
func alterReq(img *metadata.Image, version int16, broker int32, topic string, partition int32, isr ...int32) *kmsg.AlterPartitionRequest {
	req := kmsg.NewPtrAlterPartitionRequest()
	req.Version, req.BrokerID = version, broker
	if b := img.Brokers[broker]; b != nil {
		req.BrokerEpoch = b.Epoch
	}
	rt := kmsg.NewAlterPartitionRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewAlterPartitionRequestTopicPartition()
	rp.Partition = partition
	if t := img.Topics.Topic(topic); t != nil {
		rt.TopicID = t.ID
		if p := t.Partition(partition); p != nil {
			rp.LeaderEpoch, rp.PartitionEpoch = p.LeaderEpoch, p.PartitionEpoch
		}
	}
	if version >= 3 {
		for _, r := range isr {
			s := kmsg.NewAlterPartitionRequestTopicPartitionNewEpochISR()
			s.BrokerID = r
			rp.NewEpochISR = append(rp.NewEpochISR, s)
		}
	} else {
		rp.NewISR = isr
	}
	rt.Partitions = []kmsg.AlterPartitionRequestTopicPartition{rp}
	req.Topics = []kmsg.AlterPartitionRequestTopic{rt}
	return req
}

// TestAlterPartitionErrors checks every AlterPartition answer on a
// three-broker cluster whose topic "t" has replicas [1,2,3] led by 1.
func TestAlterPartitionErrors(t *testing.T) {
	n := startNode(t, metadataDir(t), testConfig(), threeBrokers()...)
	c := n.c
	n.mustCreate(kmsg.CreateTopicsRequestTopic{Topic: "t", NumPartitions: -1, ReplicationFactor: -1,
		ReplicaAssignment: assignment(map[int32][]int32{0: {1, 2, 3}})})
	ctx := context.Background()

	for _, tc := range []struct {
		name   string
		mutate func(*kmsg.AlterPartitionRequest)
		isr    []int32
		top    *kerr.Error // top-level error
		want   *kerr.Error // partition error
	}{
		{name: "stale broker epoch", isr: []int32{1, 2}, top: kerr.StaleBrokerEpoch,
			mutate: func(r *kmsg.AlterPartitionRequest) { r.BrokerEpoch++ }},
		{name: "unregistered broker", isr: []int32{1, 2}, top: kerr.StaleBrokerEpoch,
			mutate: func(r *kmsg.AlterPartitionRequest) { r.BrokerID = 9 }},
		{name: "unknown topic id", isr: []int32{1}, want: kerr.UnknownTopicID,
			mutate: func(r *kmsg.AlterPartitionRequest) { r.Topics[0].TopicID = testID("nope") }},
		{name: "unknown partition", isr: []int32{1}, want: kerr.UnknownTopicOrPartition,
			mutate: func(r *kmsg.AlterPartitionRequest) { r.Topics[0].Partitions[0].Partition = 5 }},
		{name: "not the leader", isr: []int32{1, 2}, want: kerr.InvalidRequest,
			mutate: func(r *kmsg.AlterPartitionRequest) { r.BrokerID, r.BrokerEpoch = 2, c.Image().Brokers[2].Epoch }},
		{name: "stale leader epoch", isr: []int32{1, 2}, want: kerr.FencedLeaderEpoch,
			mutate: func(r *kmsg.AlterPartitionRequest) { r.Topics[0].Partitions[0].LeaderEpoch = -1 }},
		{name: "leader epoch ahead", isr: []int32{1, 2}, want: kerr.NotController,
			mutate: func(r *kmsg.AlterPartitionRequest) { r.Topics[0].Partitions[0].LeaderEpoch = 3 }},
		{name: "stale partition epoch", isr: []int32{1, 2}, want: kerr.InvalidUpdateVersion,
			mutate: func(r *kmsg.AlterPartitionRequest) { r.Topics[0].Partitions[0].PartitionEpoch = -1 }},
		{name: "empty ISR", isr: []int32{}, want: kerr.InvalidRequest},
		{name: "leader not in ISR", isr: []int32{2, 3}, want: kerr.InvalidRequest},
		{name: "not a replica", isr: []int32{1, 4}, want: kerr.InvalidRequest},
		{name: "broker epoch of a member", isr: []int32{1, 2}, want: kerr.IneligibleReplica,
			mutate: func(r *kmsg.AlterPartitionRequest) { r.Topics[0].Partitions[0].NewEpochISR[1].BrokerEpoch = 12345 }},
		{name: "recovering with followers", isr: []int32{1, 2}, want: kerr.InvalidRequest,
			mutate: func(r *kmsg.AlterPartitionRequest) {
				r.Topics[0].Partitions[0].LeaderRecoveryState = metadata.LeaderRecovering
			}},
	} {
		req := alterReq(c.Image(), 3, 1, "t", 0, tc.isr...)
		if tc.mutate != nil {
			tc.mutate(req)
		}
		resp := c.AlterPartition(ctx, req)
		if got := kerr.ErrorForCode(resp.ErrorCode); resp.ErrorCode != 0 || tc.top != nil {
			if tc.top == nil || resp.ErrorCode != tc.top.Code {
				t.Errorf("%s: top-level %v, want %v", tc.name, got, tc.top)
			}
			continue
		}
		if code := resp.Topics[0].Partitions[0].ErrorCode; code != tc.want.Code {
			t.Errorf("%s: %v, want %v", tc.name, kerr.ErrorForCode(code), tc.want)
		}
	}
	if p := c.Image().Topics.Topic("t").Partition(0); p.PartitionEpoch != 0 || !slices.Equal(p.ISR, []int32{1, 2, 3}) {
		t.Fatalf("refused requests changed the partition: %+v", p)
	}

	// Version 1 names the topic; an unknown name is UNKNOWN_TOPIC_OR_PARTITION.
	req := alterReq(c.Image(), 1, 1, "nosuch", 0, 1)
	if code := c.AlterPartition(ctx, req).Topics[0].Partitions[0].ErrorCode; code != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("v1 unknown topic: %v", kerr.ErrorForCode(code))
	}

	// Success: v1 by name, shrink to [1,3]; the answer echoes the name and
	// carries the new state with only the partition epoch bumped.
	resp := c.AlterPartition(ctx, alterReq(c.Image(), 1, 1, "t", 0, 1, 3))
	rt := resp.Topics[0]
	rp := rt.Partitions[0]
	if resp.ErrorCode != 0 || rp.ErrorCode != 0 || rt.Topic != "t" || rp.LeaderID != 1 || rp.LeaderEpoch != 0 ||
		rp.PartitionEpoch != 1 || !slices.Equal(rp.ISR, []int32{1, 3}) {
		t.Fatalf("shrink answer: %+v %+v", resp, rp)
	}
	if p := c.Image().Topics.Topic("t").Partition(0); p.PartitionEpoch != 1 || p.LeaderEpoch != 0 || !slices.Equal(p.ISR, []int32{1, 3}) {
		t.Fatalf("image after shrink: %+v", p)
	}

	// Fence broker 2: it may not rejoin (INELIGIBLE_REPLICA, or
	// OPERATION_NOT_ATTEMPTED before version 2).
	fence := kmsg.NewPtrBrokerHeartbeatRequest()
	fence.BrokerID, fence.BrokerEpoch, fence.WantFence = 2, c.Image().Brokers[2].Epoch, true
	fence.CurrentMetadataOffset = n.q.HighWatermark() - 1
	if r := c.BrokerHeartbeat(ctx, fence, nil); r.ErrorCode != 0 || !r.IsFenced {
		t.Fatalf("fence broker 2: %+v", r)
	}
	for version, want := range map[int16]*kerr.Error{0: kerr.OperationNotAttempted, 1: kerr.OperationNotAttempted, 2: kerr.IneligibleReplica, 3: kerr.IneligibleReplica} {
		r := c.AlterPartition(ctx, alterReq(c.Image(), version, 1, "t", 0, 1, 2, 3))
		if code := r.Topics[0].Partitions[0].ErrorCode; code != want.Code {
			t.Errorf("v%d fenced member: %v, want %v", version, kerr.ErrorForCode(code), want)
		}
	}

	// Version 2 by id echoes the id.
	id := c.Image().Topics.Topic("t").ID
	r := c.AlterPartition(ctx, alterReq(c.Image(), 2, 1, "t", 0, 1))
	if r.Topics[0].TopidID != id || r.Topics[0].Partitions[0].ErrorCode != 0 || !slices.Equal(r.Topics[0].Partitions[0].ISR, []int32{1}) {
		t.Fatalf("v2 answer: %+v", r.Topics[0])
	}

	// An empty request is answered empty, without checks.
	empty := kmsg.NewPtrAlterPartitionRequest()
	if r := c.AlterPartition(ctx, empty); r.ErrorCode != 0 || len(r.Topics) != 0 {
		t.Fatalf("empty request: %+v", r)
	}
}

// TestAlterPartitionNotController: a controller that is not active answers
// NOT_CONTROLLER at the top level.
func TestAlterPartitionNotController(t *testing.T) {
	n := startNode(t, metadataDir(t), testConfig())
	n.c.listener.HandleLeaderChange(7, 99)
	waitActive(t, n.c, false)
	r := n.c.AlterPartition(context.Background(), alterReq(n.c.Image(), 3, 1, "t", 0, 1))
	if r.ErrorCode != kerr.NotController.Code {
		t.Fatalf("got %v", kerr.ErrorForCode(r.ErrorCode))
	}
	e := kmsg.NewPtrElectLeadersRequest()
	e.Version = 2
	if r := n.c.ElectLeaders(context.Background(), e); r.ErrorCode != kerr.NotController.Code {
		t.Fatalf("ElectLeaders: %v", kerr.ErrorForCode(r.ErrorCode))
	}
}

// TestAlterPartitionWithLeaderOnlyISR: the leader-alone ISR of
// Config.LeaderOnlyISR grows through AlterPartition, and the preferred
// election then works.
func TestAlterPartitionWithLeaderOnlyISR(t *testing.T) {
	cfg := testConfig()
	cfg.LeaderOnlyISR = true
	n := startNode(t, metadataDir(t), cfg, threeBrokers()...)
	c := n.c
	n.mustCreate(kmsg.CreateTopicsRequestTopic{Topic: "t", NumPartitions: -1, ReplicationFactor: -1,
		ReplicaAssignment: assignment(map[int32][]int32{0: {1, 2, 3}})})
	if p := c.Image().Topics.Topic("t").Partition(0); !slices.Equal(p.ISR, []int32{1}) {
		t.Fatalf("isr %v", p.ISR)
	}
	r := c.AlterPartition(context.Background(), alterReq(c.Image(), 3, 1, "t", 0, 1, 2, 3))
	if rp := r.Topics[0].Partitions[0]; rp.ErrorCode != 0 || !slices.Equal(rp.ISR, []int32{1, 2, 3}) || rp.PartitionEpoch != 1 {
		t.Fatalf("expand: %+v", rp)
	}
}

// TestElectLeadersAll: null topics elects every partition that needs it and
// leaves the rest out of the answer.
func TestElectLeadersAll(t *testing.T) {
	n := startNode(t, metadataDir(t), testConfig(), threeBrokers()...)
	c := n.c
	n.mustCreate(kmsg.CreateTopicsRequestTopic{Topic: "t", NumPartitions: -1, ReplicationFactor: -1,
		ReplicaAssignment: assignment(map[int32][]int32{0: {1, 2}, 1: {2, 1}})})
	ctx := context.Background()
	// Move t-0's leadership to 2 with a change record, as a fencing would.
	rec := metadata.NewPartitionChangeRecord(c.Image().Topics.Topic("t").ID, 0)
	rec.Leader = 2
	if _, err := n.q.Append(ctx, []metadata.Record{rec}); err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrElectLeadersRequest()
	req.Version, req.ElectionType = 2, 0
	resp := c.ElectLeaders(ctx, req)
	if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 ||
		resp.Topics[0].Partitions[0].Partition != 0 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("answer: %+v", resp)
	}
	if p := c.Image().Topics.Topic("t").Partition(0); p.Leader != 1 || p.LeaderEpoch != 2 {
		t.Fatalf("t-0 after election: %+v", p)
	}
	// Unknown election type: INVALID_REQUEST everywhere.
	req.ElectionType = 3
	req.Topics = []kmsg.ElectLeadersRequestTopic{{Topic: "t", Partitions: []int32{0}}}
	resp = c.ElectLeaders(ctx, req)
	if resp.ErrorCode != kerr.InvalidRequest.Code || resp.Topics[0].Partitions[0].ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("bad type: %+v", resp)
	}
}

// TestUncleanLeaderElectionConfig: the topic's config, this controller's
// dynamic broker config, the cluster default, then the static config.
func TestUncleanLeaderElectionConfig(t *testing.T) {
	const key = uncleanLeaderElectionEnable
	for _, tc := range []struct {
		name                 string
		topic, node, cluster string // "" = unset
		static, want         bool
	}{
		{name: "nothing set", want: false},
		{name: "static", static: true, want: true},
		{name: "cluster over static", cluster: "false", static: true, want: false},
		{name: "node over cluster", node: "true", cluster: "false", want: true},
		{name: "topic over node", topic: "false", node: "true", cluster: "true", static: true, want: false},
		{name: "topic alone", topic: "TRUE", want: true},
	} {
		d := metadata.NewDelta(metadata.EmptyImage())
		set := func(typ int8, name, v string) {
			if v != "" {
				if err := d.Replay(0, &metadata.ConfigRecord{ResourceType: typ, ResourceName: name, Name: key, Value: &v}); err != nil {
					t.Fatal(err)
				}
			}
		}
		set(metadata.ConfigResourceTopic, "t", tc.topic)
		set(metadata.ConfigResourceBroker, "1", tc.node)
		set(metadata.ConfigResourceBroker, "", tc.cluster)
		img := d.Apply()
		c := &Controller{cfg: Config{NodeID: 1, UncleanLeaderElectionEnable: tc.static}}
		if got := c.uncleanLeaderElectionEnabled(img, "t"); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestAutoLeaderRebalanceOnEventLoop: with a short check interval the event
// loop itself (no test hook) moves leadership back to the preferred replica.
func TestAutoLeaderRebalanceOnEventLoop(t *testing.T) {
	cfg := testConfig()
	cfg.AutoLeaderRebalanceEnable = true
	cfg.LeaderImbalanceCheckInterval = 20 * time.Millisecond
	cfg.LeaderImbalancePerBrokerPercentage = 10
	n := startNode(t, metadataDir(t), cfg, threeBrokers()...)
	c := n.c
	n.mustCreate(kmsg.CreateTopicsRequestTopic{Topic: "t", NumPartitions: -1, ReplicationFactor: -1,
		ReplicaAssignment: assignment(map[int32][]int32{0: {1, 2}})})
	rec := metadata.NewPartitionChangeRecord(c.Image().Topics.Topic("t").ID, 0)
	rec.Leader = 2
	if _, err := n.q.Append(context.Background(), []metadata.Record{rec}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		p := c.Image().Topics.Topic("t").Partition(0)
		if p.Leader == 1 {
			if p.LeaderEpoch != 2 {
				t.Fatalf("leader epoch %d, want 2", p.LeaderEpoch)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("leadership never moved back: %+v", p)
		}
	}
}
