package controller

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/metadata"
)

func TestCreateTopicsSuccess(t *testing.T) {
	n := startNode(t, metadataDir(t), testConfig())
	resp := n.createTopics(false, newTopic("orders", -1, -1, "retention.ms", "1000"), newTopic("payments", 2, 1))
	if len(resp.Topics) != 2 {
		t.Fatalf("answers = %d", len(resp.Topics))
	}
	img := n.c.Image()
	for i, want := range []struct {
		name       string
		partitions int32
	}{{"orders", 3}, {"payments", 2}} {
		rt := resp.Topics[i]
		wantErr(t, want.name, rt.ErrorCode, rt.ErrorMessage, nil, "<nil>")
		if rt.Topic != want.name || rt.NumPartitions != want.partitions || rt.ReplicationFactor != 1 || rt.TopicID == ([16]byte{}) {
			t.Fatalf("answer %+v", rt)
		}
		top := img.Topics.Topic(want.name)
		if top == nil || top.ID != rt.TopicID || int32(top.NumPartitions()) != want.partitions {
			t.Fatalf("image topic %+v", top)
		}
		for p, part := range top.Partitions() {
			if !slices.Equal(part.Replicas, []int32{1}) || !slices.Equal(part.ISR, []int32{1}) || part.Leader != 1 ||
				part.LeaderEpoch != 0 || part.PartitionEpoch != 0 || len(part.Directories) != 1 {
				t.Fatalf("partition %d = %+v", p, part)
			}
		}
	}
	if img.TopicConfigs("orders")["retention.ms"] != "1000" || img.TopicConfigs("payments") != nil {
		t.Fatalf("configs = %v", maps.Collect(img.AllConfigs()))
	}
}

func TestCreateTopicsPlacementAndManualAssignment(t *testing.T) {
	n := startNode(t, metadataDir(t), testConfig(), threeBrokers()...)
	n.mustCreate(newTopic("spread", 4, 2))
	top := n.c.Image().Topics.Topic("spread")
	// Striped placement: the first three partitions have three different
	// leaders, every partition two different replicas, all in the ISR.
	leaders := map[int32]bool{}
	for p := range int32(4) {
		part := top.Partition(p)
		if len(part.Replicas) != 2 || part.Replicas[0] == part.Replicas[1] || !slices.Equal(part.ISR, part.Replicas) || part.Leader != part.Replicas[0] {
			t.Fatalf("partition %d = %+v", p, part)
		}
		if p < 3 {
			leaders[part.Leader] = true
		}
	}
	if len(leaders) != 3 {
		t.Fatalf("leaders of the first three partitions: %v", leaders)
	}

	manual := newTopic("manual", -1, -1)
	for p, replicas := range [][]int32{{3, 1}, {2, 3}} {
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Partition, a.Replicas = int32(p), replicas
		manual.ReplicaAssignment = append(manual.ReplicaAssignment, a)
	}
	resp := n.createTopics(false, manual)
	if rt := resp.Topics[0]; rt.ErrorCode != 0 || rt.NumPartitions != 2 || rt.ReplicationFactor != 2 {
		t.Fatalf("manual answer %+v %s", rt, deref(rt.ErrorMessage))
	}
	mt := n.c.Image().Topics.Topic("manual")
	if !slices.Equal(mt.Partition(0).Replicas, []int32{3, 1}) || mt.Partition(0).Leader != 3 || !slices.Equal(mt.Partition(1).Replicas, []int32{2, 3}) {
		t.Fatalf("manual topic = %+v %+v", mt.Partition(0), mt.Partition(1))
	}
}

func assignment(parts map[int32][]int32) []kmsg.CreateTopicsRequestTopicReplicaAssignment {
	var out []kmsg.CreateTopicsRequestTopicReplicaAssignment
	for _, p := range slices.Sorted(func(yield func(int32) bool) {
		for k := range parts {
			if !yield(k) {
				return
			}
		}
	}) {
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Partition, a.Replicas = p, parts[p]
		out = append(out, a)
	}
	return out
}

func TestCreateTopicsErrors(t *testing.T) {
	n := startNode(t, metadataDir(t), testConfig(), threeBrokers()...)
	n.mustCreate(newTopic("existing", 1, 1), newTopic("dotted_name", 1, 1))
	withAssignment := func(name string, partitions int32, rf int16, parts map[int32][]int32) kmsg.CreateTopicsRequestTopic {
		t := newTopic(name, partitions, rf)
		t.ReplicaAssignment = assignment(parts)
		return t
	}
	nullConfig := newTopic("nullcfg", 1, 1)
	nullConfig.Configs = []kmsg.CreateTopicsRequestTopicConfig{{Name: "a"}, {Name: "b"}}
	long := strings.Repeat("x", 250)
	cases := []struct {
		topic    kmsg.CreateTopicsRequestTopic
		wantCode *kerr.Error
		wantMsg  string
	}{
		{newTopic("existing", 1, 1), kerr.TopicAlreadyExists, "Topic 'existing' already exists."},
		{newTopic("", 1, 1), kerr.InvalidTopicException, "Topic name is invalid: the empty string is not allowed"},
		{newTopic(".", 1, 1), kerr.InvalidTopicException, "Topic name is invalid: '.' is not allowed"},
		{newTopic("..", 1, 1), kerr.InvalidTopicException, "Topic name is invalid: '..' is not allowed"},
		{newTopic(long, 1, 1), kerr.InvalidTopicException, "Topic name is invalid: the length of '" + long + "' is longer than the max allowed length 249"},
		{newTopic("a b", 1, 1), kerr.InvalidTopicException, "Topic name is invalid: 'a b' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'"},
		{newTopic("dotted.name", 1, 1), kerr.InvalidTopicException, "Topic 'dotted.name' collides with existing topic: dotted_name"},
		{newTopic("p0", 0, 1), kerr.InvalidPartitions, "Number of partitions was set to an invalid non-positive value."},
		{newTopic("p-2", -2, 1), kerr.InvalidPartitions, "Number of partitions was set to an invalid non-positive value."},
		{newTopic("rf0", 1, 0), kerr.InvalidReplicationFactor, "Replication factor must be larger than 0, or -1 to use the default value."},
		{newTopic("rf-2", 0, -2), kerr.InvalidReplicationFactor, "Replication factor must be larger than 0, or -1 to use the default value."},
		{newTopic("rf4", 1, 4), kerr.InvalidReplicationFactor, "Unable to replicate the partition 4 time(s): The target replication factor of 4 cannot be reached because only 3 broker(s) are registered."},
		{withAssignment("m-rf", -1, 1, map[int32][]int32{0: {1}}), kerr.InvalidRequest, "A manual partition assignment was specified, but replication factor was not set to -1."},
		{withAssignment("m-np", 1, -1, map[int32][]int32{0: {1}}), kerr.InvalidRequest, "A manual partition assignment was specified, but numPartitions was not set to -1."},
		{withAssignment("m-empty", -1, -1, map[int32][]int32{0: {}}), kerr.InvalidReplicaAssignment, "The manual partition assignment includes an empty replica list."},
		{withAssignment("m-unknown", -1, -1, map[int32][]int32{0: {1, 9}}), kerr.InvalidReplicaAssignment, "The manual partition assignment includes broker 9, but no such broker is registered."},
		{withAssignment("m-twice", -1, -1, map[int32][]int32{0: {2, 2}}), kerr.InvalidReplicaAssignment, "The manual partition assignment includes the broker 2 more than once."},
		{withAssignment("m-rf-mix", -1, -1, map[int32][]int32{0: {1, 2}, 1: {3}}), kerr.InvalidReplicaAssignment,
			"The manual partition assignment includes a partition with 1 replica(s), but this is not consistent with previous partitions, which have 2 replica(s)."},
		{withAssignment("m-gap", -1, -1, map[int32][]int32{0: {1}, 2: {2}}), kerr.InvalidReplicaAssignment, "partitions should be a consecutive 0-based integer sequence"},
		{nullConfig, kerr.InvalidConfig, "Null value not supported for topic configs: a,b"},
		{newTopic("badcfg", 1, 1, "retention.ms", "abc"), kerr.InvalidConfig, "Invalid value abc for configuration retention.ms: Not a number of type LONG"},
		{newTopic("unknowncfg", 1, 1, "no.such.config", "1"), kerr.InvalidConfig, "Unknown topic config name: no.such.config"},
	}
	var topics []kmsg.CreateTopicsRequestTopic
	for _, c := range cases {
		topics = append(topics, c.topic)
	}
	// Two manual assignments for one partition.
	twice := newTopic("m-dup", -1, -1)
	twice.ReplicaAssignment = append(assignment(map[int32][]int32{0: {1}}), assignment(map[int32][]int32{0: {2}})...)
	topics = append(topics, twice, newTopic("dup", 1, 1), newTopic("ok", 1, 1), newTopic("dup", 2, 1), newTopic(ClusterMetadataTopic, 1, 1))

	before := n.q.HighWatermark()
	resp := n.createTopics(false, topics...)
	if len(resp.Topics) != len(cases)+4 {
		t.Fatalf("%d answers for %d distinct topics", len(resp.Topics), len(cases)+4)
	}
	for i, c := range cases {
		rt := resp.Topics[i]
		if rt.Topic != c.topic.Topic || rt.NumPartitions != -1 || rt.ReplicationFactor != -1 {
			t.Errorf("answer %d: %+v", i, rt)
		}
		wantErr(t, c.topic.Topic, rt.ErrorCode, rt.ErrorMessage, c.wantCode, c.wantMsg)
	}
	rest := resp.Topics[len(cases):]
	wantErr(t, "m-dup", rest[0].ErrorCode, rest[0].ErrorMessage, kerr.InvalidReplicaAssignment, "Found multiple manual partition assignments for partition 0")
	wantErr(t, "ok", rest[1].ErrorCode, rest[1].ErrorMessage, nil, "<nil>")
	if rest[2].Topic != "dup" || rest[3].Topic != ClusterMetadataTopic {
		t.Fatalf("trailing answers %q %q", rest[2].Topic, rest[3].Topic)
	}
	wantErr(t, "dup", rest[2].ErrorCode, rest[2].ErrorMessage, kerr.InvalidRequest, "Duplicate topic name.")
	wantErr(t, "metadata topic", rest[3].ErrorCode, rest[3].ErrorMessage, kerr.InvalidRequest, "Creation of internal topic __cluster_metadata is prohibited.")

	img := n.c.Image()
	if img.Topics.Len() != 3 || img.Topics.Topic("ok") == nil {
		t.Fatalf("topics after the request: %v", slices.Collect(img.Topics.Names()))
	}
	if n.q.HighWatermark() != before+2 {
		t.Fatalf("one batch (TopicRecord + PartitionRecord) expected: hw %d -> %d", before, n.q.HighWatermark())
	}
}

func TestCreateTopicsValidateOnlyAndFenced(t *testing.T) {
	n := startNode(t, metadataDir(t), testConfig())
	before := n.q.HighWatermark()
	resp := n.createTopics(true, newTopic("dry", 5, 1))
	if rt := resp.Topics[0]; rt.ErrorCode != 0 || rt.NumPartitions != 5 || rt.ReplicationFactor != 1 {
		t.Fatalf("validate-only answer %+v", rt)
	}
	if n.c.Image().Topics.Topic("dry") != nil || n.q.HighWatermark() != before {
		t.Fatal("validate-only wrote records")
	}
	resp = n.createTopics(true, newTopic("bad", 0, 1))
	wantErr(t, "validate-only error", resp.Topics[0].ErrorCode, resp.Topics[0].ErrorMessage, kerr.InvalidPartitions, "Number of partitions was set to an invalid non-positive value.")

	// Fence the only broker (as the lifecycle manager will): placement fails.
	b := n.c.Image().Brokers[1]
	if _, err := n.q.Append(context.Background(), []metadata.Record{&metadata.FenceBrokerRecord{ID: 1, Epoch: b.Epoch}}); err != nil {
		t.Fatal(err)
	}
	resp = n.createTopics(false, newTopic("t", 1, 1))
	wantErr(t, "fenced", resp.Topics[0].ErrorCode, resp.Topics[0].ErrorMessage, kerr.InvalidReplicationFactor,
		"Unable to replicate the partition 1 time(s): All brokers are currently fenced.")
}

func deleteByNames(version int16, names ...string) *kmsg.DeleteTopicsRequest {
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.Version, req.TopicNames = version, names
	return req
}

func delTopic(name *string, id [16]byte) kmsg.DeleteTopicsRequestTopic {
	t := kmsg.NewDeleteTopicsRequestTopic()
	t.Topic, t.TopicID = name, id
	return t
}

func TestDeleteTopics(t *testing.T) {
	n := startNode(t, metadataDir(t), testConfig())
	n.mustCreate(newTopic("a", 1, 1, "retention.ms", "5"), newTopic("b", 2, 1), newTopic("c", 1, 1), newTopic("d", 1, 1))
	img := n.c.Image()
	idB, idC, idD := img.Topics.Topic("b").ID, img.Topics.Topic("c").ID, img.Topics.Topic("d").ID

	resp := n.c.DeleteTopics(context.Background(), deleteByNames(5, "a", "missing", "x", "x"))
	got := map[string]kmsg.DeleteTopicsResponseTopic{}
	for _, rt := range resp.Topics {
		got[deref(rt.Topic)] = rt
	}
	if len(resp.Topics) != 3 {
		t.Fatalf("answers %+v", resp.Topics)
	}
	wantErr(t, "a", got["a"].ErrorCode, got["a"].ErrorMessage, nil, "<nil>")
	wantErr(t, "missing", got["missing"].ErrorCode, got["missing"].ErrorMessage, kerr.UnknownTopicOrPartition, "This server does not host this topic-partition.")
	wantErr(t, "x", got["x"].ErrorCode, got["x"].ErrorMessage, kerr.InvalidRequest, "Duplicate topic name.")
	if n.c.Image().Topics.Topic("a") != nil || n.c.Image().TopicConfigs("a") != nil {
		t.Fatal("topic a or its configs survived")
	}
	// A new topic of the same name starts without the old configs.
	n.mustCreate(newTopic("a", 1, 1))
	if n.c.Image().TopicConfigs("a") != nil {
		t.Fatal("recreated topic inherited configs")
	}

	unknownID := [16]byte{1, 2, 3}
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.Version = 6
	req.Topics = []kmsg.DeleteTopicsRequestTopic{
		delTopic(nil, idB),
		delTopic(nil, unknownID),
		delTopic(nil, [16]byte{}),
		delTopic(kmsg.StringPtr("c"), idC),
		delTopic(nil, idD), delTopic(kmsg.StringPtr("d"), [16]byte{}),
	}
	resp = n.c.DeleteTopics(context.Background(), req)
	type answer struct {
		name string
		id   [16]byte
		code int16
		msg  string
	}
	var answers []answer
	for _, rt := range resp.Topics {
		answers = append(answers, answer{deref(rt.Topic), rt.TopicID, rt.ErrorCode, deref(rt.ErrorMessage)})
	}
	want := []answer{
		{"<nil>", [16]byte{}, kerr.InvalidRequest.Code, "Neither topic name nor id were specified."},
		{"c", idC, kerr.InvalidRequest.Code, "You may not specify both topic name and topic id."},
		{"<nil>", unknownID, kerr.UnknownTopicID.Code, "This server does not host this topic ID."},
		{"d", idD, kerr.InvalidRequest.Code, "The provided topic name maps to an ID that was already supplied."},
		{"b", idB, 0, "<nil>"},
	}
	if !slices.Equal(answers, want) {
		t.Fatalf("answers\n%+v\nwant\n%+v", answers, want)
	}
	img = n.c.Image()
	if img.Topics.TopicByID(idB) != nil || img.Topics.TopicByID(idC) == nil || img.Topics.TopicByID(idD) == nil {
		t.Fatal("wrong topics deleted")
	}

	req.Topics = []kmsg.DeleteTopicsRequestTopic{delTopic(nil, idC), delTopic(nil, idC)}
	resp = n.c.DeleteTopics(context.Background(), req)
	if len(resp.Topics) != 1 {
		t.Fatalf("answers %+v", resp.Topics)
	}
	wantErr(t, "dup id", resp.Topics[0].ErrorCode, resp.Topics[0].ErrorMessage, kerr.InvalidRequest, "Duplicate topic id.")
}

func TestDeleteTopicsDisabled(t *testing.T) {
	cfg := testConfig()
	cfg.DeleteTopicEnable = false
	n := startNode(t, metadataDir(t), cfg)
	n.mustCreate(newTopic("a", 1, 1))
	resp := n.c.DeleteTopics(context.Background(), deleteByNames(2, "a"))
	wantErr(t, "v2", resp.Topics[0].ErrorCode, resp.Topics[0].ErrorMessage, kerr.InvalidRequest, "<nil>")
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.Version, req.Topics = 6, []kmsg.DeleteTopicsRequestTopic{delTopic(kmsg.StringPtr("a"), [16]byte{})}
	resp = n.c.DeleteTopics(context.Background(), req)
	wantErr(t, "v6", resp.Topics[0].ErrorCode, resp.Topics[0].ErrorMessage, kerr.TopicDeletionDisabled, "<nil>")
	if n.c.Image().Topics.Topic("a") == nil {
		t.Fatal("deleted although deletion is disabled")
	}
}

func newPartitions(name string, count int32, assignments ...[]int32) kmsg.CreatePartitionsRequestTopic {
	t := kmsg.NewCreatePartitionsRequestTopic()
	t.Topic, t.Count = name, count
	for _, a := range assignments {
		pa := kmsg.NewCreatePartitionsRequestTopicAssignment()
		pa.Replicas = a
		t.Assignment = append(t.Assignment, pa)
	}
	return t
}

func TestCreatePartitions(t *testing.T) {
	n := startNode(t, metadataDir(t), testConfig(), threeBrokers()...)
	n.mustCreate(newTopic("a", 2, 2), newTopic("b", 1, 1), newTopic("c", 1, 1))
	req := kmsg.NewPtrCreatePartitionsRequest()
	req.Topics = []kmsg.CreatePartitionsRequestTopic{
		newPartitions("a", 4),
		newPartitions("b", 1),
		newPartitions("c", 3, []int32{3}, []int32{2}),
		newPartitions("missing", 2),
		newPartitions("dup", 2), newPartitions("dup", 3),
	}
	resp := n.c.CreatePartitions(context.Background(), req)
	if len(resp.Topics) != 5 {
		t.Fatalf("answers %+v", resp.Topics)
	}
	wantErr(t, "dup", resp.Topics[0].ErrorCode, resp.Topics[0].ErrorMessage, kerr.InvalidRequest, "Duplicate topic name.")
	wantErr(t, "a", resp.Topics[1].ErrorCode, resp.Topics[1].ErrorMessage, nil, "<nil>")
	wantErr(t, "b", resp.Topics[2].ErrorCode, resp.Topics[2].ErrorMessage, kerr.InvalidPartitions, "Topic already has 1 partition(s).")
	wantErr(t, "c", resp.Topics[3].ErrorCode, resp.Topics[3].ErrorMessage, nil, "<nil>")
	wantErr(t, "missing", resp.Topics[4].ErrorCode, resp.Topics[4].ErrorMessage, kerr.UnknownTopicOrPartition, "<nil>")
	img := n.c.Image()
	a := img.Topics.Topic("a")
	// Placed replicas keep the topic's replication factor, on two different
	// brokers, and the two new partitions have different leaders.
	if a.NumPartitions() != 4 {
		t.Fatalf("a has %d partitions", a.NumPartitions())
	}
	for _, p := range []*metadata.Partition{a.Partition(2), a.Partition(3)} {
		if len(p.Replicas) != 2 || p.Replicas[0] == p.Replicas[1] || p.Leader != p.Replicas[0] {
			t.Fatalf("a = %+v", p)
		}
	}
	if a.Partition(2).Leader == a.Partition(3).Leader {
		t.Fatalf("new partitions of a share leader %d", a.Partition(2).Leader)
	}
	c := img.Topics.Topic("c")
	if c.NumPartitions() != 3 || !slices.Equal(c.Partition(1).Replicas, []int32{3}) || c.Partition(2).Leader != 2 {
		t.Fatalf("c = %+v %+v", c.Partition(1), c.Partition(2))
	}

	cases := []struct {
		topic    kmsg.CreatePartitionsRequestTopic
		wantCode *kerr.Error
		wantMsg  string
	}{
		{newPartitions("a", 3), kerr.InvalidPartitions, "The topic a currently has 4 partition(s); 3 would not be an increase."},
		{newPartitions("b", 3, []int32{1}), kerr.InvalidReplicaAssignment, "Attempted to add 2 additional partition(s), but only 1 assignment(s) were specified."},
		{newPartitions("b", 2, []int32{1, 2}), kerr.InvalidReplicaAssignment,
			"The manual partition assignment includes a partition with 2 replica(s), but this is not consistent with previous partitions, which have 1 replica(s)."},
		{newPartitions("b", 2, []int32{7}), kerr.InvalidReplicaAssignment, "The manual partition assignment includes broker 7, but no such broker is registered."},
	}
	for _, tc := range cases {
		req.Topics = []kmsg.CreatePartitionsRequestTopic{tc.topic}
		resp := n.c.CreatePartitions(context.Background(), req)
		wantErr(t, tc.topic.Topic, resp.Topics[0].ErrorCode, resp.Topics[0].ErrorMessage, tc.wantCode, tc.wantMsg)
	}

	before := n.q.HighWatermark()
	req.Topics, req.ValidateOnly = []kmsg.CreatePartitionsRequestTopic{newPartitions("b", 5)}, true
	resp = n.c.CreatePartitions(context.Background(), req)
	wantErr(t, "validate only", resp.Topics[0].ErrorCode, resp.Topics[0].ErrorMessage, nil, "<nil>")
	if n.q.HighWatermark() != before || n.c.Image().Topics.Topic("b").NumPartitions() != 1 {
		t.Fatal("validate-only CreatePartitions wrote records")
	}
}

func TestCreateTopicsTooManyRecords(t *testing.T) {
	n := startNode(t, metadataDir(t), testConfig())
	resp := n.createTopics(false, newTopic("huge", maxRecordsPerUserOp, 1))
	wantErr(t, "huge", resp.Topics[0].ErrorCode, resp.Topics[0].ErrorMessage, kerr.PolicyViolation, "<nil>")
	if n.c.Image().Topics.Topic("huge") != nil {
		t.Fatal("created")
	}
}

// TestLeaderOnlyISR: with followers that do not replicate, a new partition's
// ISR holds its leader alone.
func TestLeaderOnlyISR(t *testing.T) {
	cfg := testConfig()
	cfg.LeaderOnlyISR = true
	n := startNode(t, t.TempDir(), cfg,
		BrokerRegistration{NodeID: 1, Listeners: listeners(9092)},
		BrokerRegistration{NodeID: 2, Listeners: listeners(9093)},
		BrokerRegistration{NodeID: 3, Listeners: listeners(9094)})
	c := n.c
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "solo", 3, 3
	req.Topics = append(req.Topics, rt)
	if resp := c.CreateTopics(context.Background(), req); resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create: %v", kerr.ErrorForCode(resp.Topics[0].ErrorCode))
	}
	for p, part := range c.Image().Topics.Topic("solo").Partitions() {
		if len(part.Replicas) != 3 || len(part.ISR) != 1 || part.ISR[0] != part.Leader {
			t.Fatalf("partition %d: replicas %v, isr %v, leader %d: want the leader alone in sync", p, part.Replicas, part.ISR, part.Leader)
		}
	}
}
