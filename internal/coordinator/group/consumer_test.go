package group

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var topicA = [16]byte{1}

func cghTopics(parts int32) Topics { return Topics{"a": {ID: topicA, Partitions: parts}} }

// hb is a member's heartbeat: epoch, and owned partitions of topic "a" (nil: keepalive).
func hb(member string, epoch int32, owned []int32) *kmsg.ConsumerGroupHeartbeatRequest {
	r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	r.Version, r.Group, r.MemberID, r.MemberEpoch = 1, "g", member, epoch
	r.RebalanceTimeoutMillis = -1
	if epoch == 0 {
		r.RebalanceTimeoutMillis = 10000
		r.SubscribedTopicNames = []string{"a"}
	}
	if owned != nil || epoch == 0 {
		t := kmsg.NewConsumerGroupHeartbeatRequestTopic()
		t.TopicID, t.Partitions = topicA, owned
		r.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		if len(owned) > 0 {
			r.Topics = append(r.Topics, t)
		}
	}
	return r
}

// logs holds what each test shard wrote, for replay.
var logs = map[*Shard]*memWriter{}

// cgh runs a heartbeat and writes its records.
func cgh(s *Shard, now int64, req *kmsg.ConsumerGroupHeartbeatRequest, topics Topics) *kmsg.ConsumerGroupHeartbeatResponse {
	if logs[s] == nil {
		logs[s] = &memWriter{}
	}
	var c capture
	_ = Finish(logs[s], s.ConsumerGroupHeartbeat(now, req, "c", "/h", topics, c.to()), errCode)
	return c.got[0].(*kmsg.ConsumerGroupHeartbeatResponse)
}

func owned(resp *kmsg.ConsumerGroupHeartbeatResponse) []int32 {
	if resp.Assignment == nil {
		return nil
	}
	var out []int32
	for _, t := range resp.Assignment.Topics {
		out = append(out, t.Partitions...)
	}
	if out == nil {
		out = []int32{}
	}
	return out
}

func TestConsumerGroupReconciliation(t *testing.T) {
	s := NewShard(Config{})
	topics := cghTopics(4)
	last := map[string][]int32{} // each member's assignment as last sent
	type step struct {
		req       *kmsg.ConsumerGroupHeartbeatRequest
		code      int16
		epoch     int32
		partition []int32 // the member's assignment after the answer
	}
	steps := []step{
		// A joins alone: everything, epoch 1.
		{hb("A", 0, nil), 0, 1, []int32{0, 1, 2, 3}},
		{hb("A", 1, []int32{0, 1, 2, 3}), 0, 1, []int32{0, 1, 2, 3}},
		// B joins: epoch 2; B's target partitions are still A's, so B
		// gets nothing yet (unreleased).
		{hb("B", 0, nil), 0, 2, []int32{}},
		// A must revoke first: it keeps epoch 1 and two partitions.
		{hb("A", 1, nil), 0, 1, []int32{0, 1}},
		// A still reports the revoked ones: no progress, B still waits.
		{hb("A", 1, []int32{0, 1, 2, 3}), 0, 1, []int32{0, 1}},
		{hb("B", 2, []int32{}), 0, 2, []int32{}},
		// A stops reporting them: A moves to epoch 2, B gets them.
		{hb("A", 1, []int32{0, 1}), 0, 2, []int32{0, 1}},
		{hb("B", 2, nil), 0, 2, []int32{2, 3}},
		// Errors: a wrong epoch is fenced, an unknown member refused.
		{hb("B", 5, nil), kerr.FencedMemberEpoch.Code, 0, nil},
		{hb("C", 3, nil), kerr.UnknownMemberID.Code, 0, nil},
		// A leaves: B gets everything.
		{hb("A", -1, nil), 0, -1, nil},
		{hb("B", 2, []int32{2, 3}), 0, 3, []int32{0, 1, 2, 3}},
	}
	for i, st := range steps {
		resp := cgh(s, int64(i), st.req, topics)
		if resp.ErrorCode != st.code {
			t.Fatalf("step %d (%s epoch %d): code %d, want %d", i, st.req.MemberID, st.req.MemberEpoch, resp.ErrorCode, st.code)
		}
		if st.code != 0 {
			continue
		}
		if resp.MemberEpoch != st.epoch {
			t.Fatalf("step %d (%s): epoch %d, want %d", i, st.req.MemberID, resp.MemberEpoch, st.epoch)
		}
		if got := owned(resp); got != nil {
			last[st.req.MemberID] = got
		}
		if got := last[st.req.MemberID]; st.partition != nil && !equalInts(got, st.partition) {
			t.Fatalf("step %d (%s): assignment %v, want %v", i, st.req.MemberID, got, st.partition)
		}
	}
	// Replaying what was written rebuilds the same group.
	want := s.ConsumerGroupDescribe(1, "g")
	s2 := NewShard(Config{})
	for _, rec := range logs[s].records {
		if err := s2.Replay(100, rec.Key, rec.Value); err != nil {
			t.Fatal(err)
		}
	}
	if got := s2.ConsumerGroupDescribe(1, "g"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("replayed group:\n%+v\nwant\n%+v", got, want)
	}
	// The member goes on with its epoch after the reload.
	if resp := cgh(s2, 101, hb("B", 3, []int32{0, 1, 2, 3}), topics); resp.ErrorCode != 0 || resp.MemberEpoch < 3 {
		t.Fatalf("heartbeat after reload: %+v", resp)
	}
}

func equalInts(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestConsumerGroupStaticAndSession(t *testing.T) {
	s := NewShard(Config{ConsumerSessionTimeoutMs: 1000})
	topics := cghTopics(2)
	join := func(member, instance string) *kmsg.ConsumerGroupHeartbeatResponse {
		r := hb(member, 0, nil)
		r.InstanceID = &instance
		return cgh(s, 0, r, topics)
	}
	if resp := join("A", "i"); resp.ErrorCode != 0 || !equalInts(owned(resp), []int32{0, 1}) {
		t.Fatalf("join: %+v", resp)
	}
	if resp := join("A2", "i"); resp.ErrorCode != kerr.UnreleasedInstanceID.Code {
		t.Fatalf("second member with the same instance: code %d", resp.ErrorCode)
	}
	leave := hb("A", -2, nil)
	i := "i"
	leave.InstanceID = &i
	if resp := cgh(s, 0, leave, topics); resp.ErrorCode != 0 || resp.MemberEpoch != -2 {
		t.Fatalf("static leave: %+v", resp)
	}
	// The restart takes over the assignment with the same epoch: no rebalance.
	resp := join("A2", "i")
	if resp.ErrorCode != 0 || resp.MemberEpoch != 1 || !equalInts(owned(resp), []int32{0, 1}) {
		t.Fatalf("static rejoin: %+v", resp)
	}
	// Session expiry removes the member and bumps the group epoch.
	if d := s.NextDeadline(); d != 1000 {
		t.Fatalf("next deadline %d", d)
	}
	s.Tick(1000)
	if g := s.ConsumerGroupDescribe(1, "g"); g.State != "Empty" || g.Epoch != 2 {
		t.Fatalf("after expiry: %+v", g)
	}
}

func TestConsumerGroupCommitsAndMixing(t *testing.T) {
	s := NewShard(Config{OffsetMetadataMaxBytes: 100, MinSessionTimeoutMs: 6000, MaxSessionTimeoutMs: 30000})
	topics := cghTopics(2)
	cgh(s, 0, hb("A", 0, nil), topics)
	commit := func(member string, epoch int32) int16 {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Version, req.Group, req.MemberID, req.Generation = 9, "g", member, epoch
		t := kmsg.NewOffsetCommitRequestTopic()
		t.Topic = "a"
		p := kmsg.NewOffsetCommitRequestTopicPartition()
		p.Partition, p.Offset = 0, 5
		t.Partitions = append(t.Partitions, p)
		req.Topics = append(req.Topics, t)
		var c capture
		r := s.OffsetCommit(0, req, c.to())
		_ = Finish(&memWriter{}, r, errCode)
		return c.got[0].(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode
	}
	for _, tc := range []struct {
		member string
		epoch  int32
		code   int16
	}{
		{"A", 1, 0},
		{"A", 2, kerr.FencedMemberEpoch.Code},
		{"A", 0, kerr.StaleMemberEpoch.Code},
		{"B", 1, kerr.UnknownMemberID.Code},
		{"", -1, kerr.UnknownMemberID.Code},
	} {
		if got := commit(tc.member, tc.epoch); got != tc.code {
			t.Errorf("commit %s epoch %d: code %d, want %d", tc.member, tc.epoch, got, tc.code)
		}
	}
	a, b := "A", "B"
	for _, tc := range []struct {
		member *string
		epoch  int32
		code   int16
	}{
		{nil, -1, 0}, {&a, 1, 0}, {&a, 0, kerr.StaleMemberEpoch.Code}, {&a, 2, kerr.FencedMemberEpoch.Code}, {&b, 1, kerr.UnknownMemberID.Code},
	} {
		if got := s.ValidateOffsetFetch("g", tc.member, tc.epoch); got != tc.code {
			t.Errorf("offset fetch %v epoch %d: code %d, want %d", tc.member, tc.epoch, got, tc.code)
		}
	}
	// A classic member may join the live consumer group (a mixed group):
	// it is given a member id first, and its subscription must be in the
	// consumer protocol's format.
	var c capture
	_ = Finish(&memWriter{}, s.JoinGroup(0, joinReq("", nil, 10000), "c", "/h", c.to()), errCode)
	jr := c.got[0].(*kmsg.JoinGroupResponse)
	if jr.ErrorCode != kerr.MemberIDRequired.Code {
		t.Fatalf("classic join: code %d", jr.ErrorCode)
	}
	_ = Finish(&memWriter{}, s.JoinGroup(0, joinReq(jr.MemberID, nil, 10000), "c", "/h", c.to()), errCode)
	if jr := c.got[1].(*kmsg.JoinGroupResponse); jr.ErrorCode != kerr.UnknownServerError.Code {
		t.Fatalf("classic join with a malformed subscription: code %d", jr.ErrorCode)
	}
	// A consumer heartbeat to a live classic group whose subscriptions are
	// not in the consumer protocol's format cannot upgrade it.
	s2 := testShard()
	var c2 capture
	_ = Finish(&memWriter{}, s2.JoinGroup(0, joinReq("", nil, 10000), "c", "/h", c2.to()), errCode)
	id := c2.got[0].(*kmsg.JoinGroupResponse).MemberID
	_ = Finish(&memWriter{}, s2.JoinGroup(0, joinReq(id, nil, 10000), "c", "/h", c2.to()), errCode)
	if resp := cgh(s2, 0, hb("A", 0, nil), topics); resp.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("consumer heartbeat to a classic group: code %d", resp.ErrorCode)
	}
	// ListGroups and DescribeGroups show the consumer group.
	lg := s.ListGroups(nil, []string{"consumer"})
	if len(lg) != 1 || lg[0].GroupType != "consumer" || lg[0].GroupState != "Stable" {
		t.Fatalf("ListGroups = %+v", lg)
	}
	if dg := s.DescribeGroup(5, "g"); dg.ProtocolType != "consumer" || len(dg.Members) != 1 {
		t.Fatalf("DescribeGroup = %+v", dg)
	}
}

func TestAssignors(t *testing.T) {
	topics := Topics{"a": {ID: [16]byte{1}, Partitions: 5}, "b": {ID: [16]byte{2}, Partitions: 1}}
	members := []string{"m1", "m2", "m3"}
	subs := map[string][]string{"m1": {"a", "b"}, "m2": {"a", "b"}, "m3": {"a"}}
	r := rangeAssign(members, subs, topics)
	if len(r["m1"]) != 3 || len(r["m2"]) != 2 || len(r["m3"]) != 1 {
		t.Fatalf("range: %v", r)
	}
	u := uniformAssign(members, subs, topics, nil)
	for _, m := range members {
		if len(u[m]) != 2 {
			t.Fatalf("uniform: %v", u)
		}
	}
	// Sticky: a new member takes partitions without moving the others'.
	prev := uniformAssign([]string{"m1", "m2"}, map[string][]string{"m1": {"a"}, "m2": {"a"}}, topics, nil)
	next := uniformAssign(members, map[string][]string{"m1": {"a"}, "m2": {"a"}, "m3": {"a"}}, topics, prev)
	for _, m := range []string{"m1", "m2"} {
		if !isSubset(next[m], prev[m]) {
			t.Fatalf("uniform moved partitions needlessly: %v -> %v", prev, next)
		}
	}
	if AssignorName("org.apache.kafka.coordinator.group.assignor.RangeAssignor") != AssignorRange || AssignorName("x") != "" {
		t.Fatal("AssignorName")
	}
}

// The periodic offsets expiry must not delete a live consumer group that
// has not committed yet (its classic state is always Empty), and deletes it
// once it has no members and no offsets.
func TestConsumerGroupSurvivesOffsetsExpiry(t *testing.T) {
	s := NewShard(Config{OffsetsRetentionMs: 1000, OffsetsRetentionCheckMs: 100})
	topics := cghTopics(2)
	resp := cgh(s, 0, hb("A", 0, nil), topics)
	if resp.ErrorCode != 0 {
		t.Fatalf("join: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	s.Tick(5000)
	if resp := cgh(s, 5000, hb("A", resp.MemberEpoch, nil), topics); resp.ErrorCode != 0 {
		t.Fatalf("heartbeat after expiry check: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	if resp := cgh(s, 5000, hb("A", -1, nil), topics); resp.ErrorCode != 0 {
		t.Fatalf("leave: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	s.Tick(10000)
	if s.groups["g"] != nil {
		t.Fatal("an empty consumer group without offsets outlived the expiry check")
	}
}

// A ConsumerGroupPartitionMetadataValue written by Kafka before 4.0 lists
// partition racks; Gregor reads past them, and skips the record types it
// does not write (ConsumerGroupRegularExpression, 16) when loading.
func TestReplayKafkaWrittenConsumerRecords(t *testing.T) {
	e := valueV0()
	e.uv(2) // one topic
	id := [16]byte{7}
	e.b = append(e.b, id[:]...)
	e.cstr("t")
	e.i32(2)
	e.uv(3) // two partitions with racks
	for p := int32(0); p < 2; p++ {
		e.i32(p)
		e.uv(3)
		e.cstr("r1")
		e.cstr("r2")
		e.tags()
	}
	e.tags()
	e.tags()
	s := NewShard(Config{})
	if err := s.Replay(0, []byte(cgKey(cgPartitionMetadataType, "g", nil)), e.b); err != nil {
		t.Fatalf("replay partition metadata: %v", err)
	}
	regexKey := enc{}
	regexKey.i16(16)
	regexKey.str("g")
	regexKey.str("t.*")
	regexValue := valueV0()
	regexValue.uv(2)
	regexValue.cstr("t")
	regexValue.b = append(regexValue.b, make([]byte, 16)...) // version, timestamp
	regexValue.tags()
	if err := s.Replay(0, regexKey.b, regexValue.b); err != nil {
		t.Fatalf("replay regular expression: %v", err)
	}
	c := s.groups["g"].consumer
	if got := c.subscription["t"]; got != (TopicInfo{ID: id, Partitions: 2}) || len(c.subscription) != 1 {
		t.Fatalf("subscription %+v", c.subscription)
	}
	if c.names["t"] != id {
		t.Fatalf("topic id by name not restored: %v", c.names)
	}
}
