package group

import (
	"fmt"
	"reflect"
	"sort"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// shareHarness drives a shard's share groups as the handlers do: write the
// records, then initialize what the heartbeat asks for (or not, when
// initOK is false) and report back.
type shareHarness struct {
	t      *testing.T
	s      *Shard
	w      *memWriter
	initOK bool
	inits  []ShareInit
	left   []string
}

func newShareHarness(t *testing.T) *shareHarness {
	h := &shareHarness{t: t, w: &memWriter{}, initOK: true}
	h.s = h.shard()
	return h
}

func (h *shareHarness) shard() *Shard {
	return NewShard(Config{ShareMaxSize: 3, ShareMemberLeft: func(g, m string) { h.left = append(h.left, g+"/"+m) }})
}

func shgReq(member string, epoch int32, topics ...string) *kmsg.ShareGroupHeartbeatRequest {
	r := kmsg.NewPtrShareGroupHeartbeatRequest()
	r.Version, r.GroupID, r.MemberID, r.MemberEpoch = 1, "sg", member, epoch
	if topics != nil {
		r.SubscribedTopicNames = topics
	}
	return r
}

func (h *shareHarness) hb(now int64, req *kmsg.ShareGroupHeartbeatRequest, topics Topics) *kmsg.ShareGroupHeartbeatResponse {
	h.t.Helper()
	var c capture
	r := h.s.ShareGroupHeartbeat(now, req, "c", "/h", topics, c.to())
	if err := Finish(h.w, r, errCode); err != nil {
		h.t.Fatal(err)
	}
	for _, in := range r.ShareInit {
		h.inits = append(h.inits, in)
		if err := Finish(h.w, h.s.ShareGroupStateInitialized(now, in.GroupID, in.TopicID, in.Partitions, h.initOK), errCode); err != nil {
			h.t.Fatal(err)
		}
	}
	return c.got[0].(*kmsg.ShareGroupHeartbeatResponse)
}

func shareAssigned(resp *kmsg.ShareGroupHeartbeatResponse) []int32 {
	if resp.Assignment == nil {
		return nil
	}
	out := []int32{}
	for _, t := range resp.Assignment.TopicPartitions {
		out = append(out, t.Partitions...)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func TestShareGroupJoinInitializeAssign(t *testing.T) {
	h := newShareHarness(t)
	topics := cghTopics(2)
	resp := h.hb(0, shgReq("m1", 0, "a"), topics)
	if resp.ErrorCode != 0 || *resp.MemberID != "m1" || resp.HeartbeatIntervalMillis != 5000 {
		t.Fatalf("join: %+v", resp)
	}
	// The partitions had no state when the member joined: nothing yet.
	if got := shareAssigned(resp); len(got) != 0 || resp.MemberEpoch != 1 {
		t.Fatalf("first answer: epoch %d assigned %v, want 1 and none", resp.MemberEpoch, got)
	}
	want := []ShareInit{{GroupID: "sg", TopicID: topicA, Partitions: []int32{0, 1}, StateEpoch: 1, StartOffset: -1}}
	if !reflect.DeepEqual(h.inits, want) {
		t.Fatalf("initializations %+v, want %+v", h.inits, want)
	}
	// Initialized: the next heartbeat gets both partitions at epoch 2.
	resp = h.hb(10, shgReq("m1", 1), topics)
	if got := shareAssigned(resp); resp.MemberEpoch != 2 || !reflect.DeepEqual(got, []int32{0, 1}) {
		t.Fatalf("after initialization: epoch %d assigned %v", resp.MemberEpoch, got)
	}
	// Unchanged: no assignment in the answer.
	if resp = h.hb(20, shgReq("m1", 2), topics); resp.Assignment != nil || resp.MemberEpoch != 2 {
		t.Fatalf("keepalive: %+v", resp)
	}
	// A second member: three members on two partitions share them.
	h.hb(30, shgReq("m2", 0, "a"), topics)
	h.hb(30, shgReq("m3", 0, "a"), topics)
	got := map[string][]int32{}
	for _, m := range []string{"m1", "m2", "m3"} {
		epoch := h.s.shares["sg"].members[m].epoch
		r := h.hb(40, shgReq(m, epoch, "a"), topics)
		got[m] = shareAssigned(r)
		if r.MemberEpoch != 4 {
			t.Fatalf("%s epoch %d, want 4", m, r.MemberEpoch)
		}
	}
	count := map[int32]int{}
	for m, ps := range got {
		if len(ps) == 0 {
			t.Fatalf("%s got nothing: %v", m, got)
		}
		for _, p := range ps {
			count[p]++
		}
	}
	if count[0] != 2 || count[1] != 2 {
		t.Fatalf("each partition should be shared by ceil(3/2)=2 members: %v", got)
	}
	// Only one initialization was asked for: later members found state.
	if len(h.inits) != 1 {
		t.Fatalf("initializations %+v", h.inits)
	}
}

func TestShareGroupFencingAndErrors(t *testing.T) {
	h := newShareHarness(t)
	topics := cghTopics(1)
	h.hb(0, shgReq("m1", 0, "a"), topics)
	h.hb(1, shgReq("m1", 1), topics) // epoch 2 now
	for _, tc := range []struct {
		name string
		req  *kmsg.ShareGroupHeartbeatRequest
		code int16
		msg  string
	}{
		{"newer epoch", shgReq("m1", 5), kerr.FencedMemberEpoch.Code, ""},
		{"unknown member", shgReq("mx", 3), kerr.UnknownMemberID.Code, ""},
		{"leave unknown", shgReq("mx", -1), kerr.UnknownMemberID.Code, ""},
		{"bad epoch", shgReq("m1", -2), kerr.InvalidRequest.Code, "MemberEpoch is invalid."},
		{"no topics", shgReq("m2", 0), kerr.InvalidRequest.Code, "SubscribedTopicNames must be set in first request."},
		{"long id", shgReq("0123456789012345678901234567890123456", 0, "a"), kerr.InvalidRequest.Code, ""},
	} {
		resp := h.hb(2, tc.req, topics)
		if resp.ErrorCode != tc.code {
			t.Errorf("%s: code %d, want %d (%v)", tc.name, resp.ErrorCode, tc.code, resp.ErrorMessage)
		}
		if tc.msg != "" && (resp.ErrorMessage == nil || *resp.ErrorMessage != tc.msg) {
			t.Errorf("%s: message %v, want %q", tc.name, resp.ErrorMessage, tc.msg)
		}
	}
	// The previous epoch is accepted (a lost answer), an older one is not.
	if resp := h.hb(3, shgReq("m1", 1), topics); resp.ErrorCode != 0 || resp.MemberEpoch != 2 || resp.Assignment == nil {
		t.Fatalf("previous epoch: %+v", resp)
	}
	h.s.shares["sg"].members["m1"].previousEpoch = 1
	h.hb(4, shgReq("m2", 0, "a"), topics) // epoch 3
	h.hb(4, shgReq("m1", 2), topics)      // m1 to 3, previous 2
	if resp := h.hb(5, shgReq("m1", 1), topics); resp.ErrorCode != kerr.FencedMemberEpoch.Code {
		t.Fatalf("older epoch: %+v", resp)
	}
	// Group size.
	h.hb(6, shgReq("m3", 0, "a"), topics)
	if resp := h.hb(6, shgReq("m4", 0, "a"), topics); resp.ErrorCode != kerr.GroupMaxSizeReached.Code {
		t.Fatalf("fourth member: %+v", resp)
	}
	// Unknown group.
	req := shgReq("m1", 3)
	req.GroupID = "other"
	if resp := h.hb(7, req, topics); resp.ErrorCode != kerr.GroupIDNotFound.Code || *resp.ErrorMessage != "Share group other not found." {
		t.Fatalf("unknown group: %+v", resp)
	}
}

func TestShareGroupKindsDoNotMix(t *testing.T) {
	h := newShareHarness(t)
	topics := cghTopics(1)
	cgh(h.s, 0, hb("c1", 0, nil), topics) // consumer group "g"
	req := shgReq("m1", 0, "a")
	req.GroupID = "g"
	if resp := h.hb(0, req, topics); resp.ErrorCode != kerr.GroupIDNotFound.Code || *resp.ErrorMessage != "Group g is not a share group." {
		t.Fatalf("share heartbeat on a consumer group: %+v", resp)
	}
	h.hb(0, shgReq("m1", 0, "a"), topics)
	creq := hb("c1", 0, nil)
	creq.Group = "sg"
	if resp := cgh(h.s, 0, creq, topics); resp.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("consumer heartbeat on a share group: %+v", resp)
	}
	var c capture
	Finish(h.w, h.s.JoinGroup(0, joinReqFor("sg"), "c", "/h", c.to()), errCode)
	if resp := c.got[0].(*kmsg.JoinGroupResponse); resp.ErrorCode != kerr.InconsistentGroupProtocol.Code {
		t.Fatalf("join on a share group: %+v", resp)
	}
	if code, _ := h.s.FetchOffsets("sg", nil, false); code != kerr.GroupIDNotFound.Code {
		t.Fatalf("offset fetch on a share group: %d", code)
	}
	if rg := h.s.DescribeGroup(6, "sg"); rg.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("describe groups v6: %+v", rg)
	}
	if rg := h.s.DescribeGroup(5, "sg"); rg.ErrorCode != 0 || rg.State != "Dead" {
		t.Fatalf("describe groups v5: %+v", rg)
	}
	list := h.s.ListGroups(nil, []string{"share"})
	if len(list) != 1 || list[0].Group != "sg" || list[0].GroupType != "share" || list[0].ProtocolType != "share" || list[0].GroupState != "Stable" {
		t.Fatalf("list share groups: %+v", list)
	}
	if list := h.s.ListGroups([]string{"empty"}, []string{"share"}); len(list) != 0 {
		t.Fatalf("list empty share groups: %+v", list)
	}
	if rg := h.s.ShareGroupDescribe("g"); rg.ErrorCode != kerr.GroupIDNotFound.Code || *rg.ErrorMessage != "Group g is not a share group." {
		t.Fatalf("share describe of a consumer group: %+v", rg)
	}
}

func joinReqFor(group string) *kmsg.JoinGroupRequest {
	r := joinReq("", nil, 6000)
	r.Group = group
	return r
}

func TestShareGroupLeaveExpiryAndDelete(t *testing.T) {
	h := newShareHarness(t)
	topics := cghTopics(2)
	h.hb(0, shgReq("m1", 0, "a"), topics)
	h.hb(0, shgReq("m2", 0, "a"), topics)
	if resp := h.hb(1, shgReq("m1", -1), topics); resp.ErrorCode != 0 || resp.MemberEpoch != -1 {
		t.Fatalf("leave: %+v", resp)
	}
	if !reflect.DeepEqual(h.left, []string{"sg/m1"}) {
		t.Fatalf("left %v", h.left)
	}
	if _, code, _ := h.s.ShareGroupStateToDelete("sg"); code != kerr.NonEmptyGroup.Code {
		t.Fatalf("delete with a member: %d", code)
	}
	// m2's session ends 45 s after its last heartbeat.
	if d := h.s.NextDeadline(); d != 45000 {
		t.Fatalf("next deadline %d", d)
	}
	Finish(h.w, h.s.Tick(45000), errCode)
	if !reflect.DeepEqual(h.left, []string{"sg/m1", "sg/m2"}) {
		t.Fatalf("left %v", h.left)
	}
	rg := h.s.ShareGroupDescribe("sg")
	if rg.GroupState != "Empty" || len(rg.Members) != 0 {
		t.Fatalf("describe: %+v", rg)
	}
	parts, code, r := h.s.ShareGroupStateToDelete("sg")
	if code != 0 || !reflect.DeepEqual(parts, SharePartitions{topicA: {0, 1}}) {
		t.Fatalf("state to delete: %v %d", parts, code)
	}
	Finish(h.w, r, errCode)
	code, r = h.s.DeleteGroup(50000, "sg")
	if code != 0 {
		t.Fatalf("delete: %d", code)
	}
	Finish(h.w, r, errCode)
	if h.s.IsShareGroup("sg") {
		t.Fatal("group still there")
	}
	// Replaying the whole log leaves nothing: the tombstones undo it all.
	s2 := h.shard()
	for _, rec := range h.w.records {
		if err := s2.Replay(0, rec.Key, rec.Value); err != nil {
			t.Fatal(err)
		}
	}
	if len(s2.shares) != 0 {
		t.Fatalf("replayed: %v", s2.shares)
	}
}

func TestShareGroupInitializeFailureRetries(t *testing.T) {
	h := newShareHarness(t)
	h.initOK = false
	topics := cghTopics(1)
	h.hb(0, shgReq("m1", 0, "a"), topics)
	if sg := h.s.shares["sg"]; len(sg.initializing) != 0 || len(sg.initialized) != 0 {
		t.Fatalf("after a failed initialization: %+v %+v", sg.initializing, sg.initialized)
	}
	h.initOK = true
	resp := h.hb(1, shgReq("m1", 1), topics)
	if len(h.inits) != 2 || h.inits[1].StateEpoch <= h.inits[0].StateEpoch {
		t.Fatalf("retry: %+v", h.inits)
	}
	resp = h.hb(2, shgReq("m1", resp.MemberEpoch), topics)
	if got := shareAssigned(resp); !reflect.DeepEqual(got, []int32{0}) {
		t.Fatalf("assigned after retry: %v (%+v)", got, resp)
	}
	// A partition added to a known topic starts at offset 0.
	h.hb(3, shgReq("m1", resp.MemberEpoch), cghTopics(2))
	last := h.inits[len(h.inits)-1]
	if last.StartOffset != 0 || !reflect.DeepEqual(last.Partitions, []int32{1}) {
		t.Fatalf("new partition: %+v", last)
	}
}

// TestShareGroupReload replays a group's records into a new shard, as a
// coordinator failover does, and checks the group carries on: same epochs,
// assignments and members, who keep heartbeating without a rejoin.
func TestShareGroupReload(t *testing.T) {
	h := newShareHarness(t)
	topics := cghTopics(3)
	h.hb(0, shgReq("m1", 0, "a"), topics)
	h.hb(0, shgReq("m2", 0, "a"), topics)
	e1 := h.hb(1, shgReq("m1", h.s.shares["sg"].members["m1"].epoch), topics).MemberEpoch
	e2 := h.hb(1, shgReq("m2", h.s.shares["sg"].members["m2"].epoch), topics).MemberEpoch
	before := h.s.ShareGroupDescribe("sg")

	s2 := h.shard()
	for _, rec := range h.w.records {
		if err := s2.Replay(100, rec.Key, rec.Value); err != nil {
			t.Fatal(err)
		}
	}
	after := s2.ShareGroupDescribe("sg")
	if fmt.Sprintf("%+v", before) != fmt.Sprintf("%+v", after) {
		t.Fatalf("reloaded group differs:\n%+v\n%+v", before, after)
	}
	h.s = s2
	r1 := h.hb(200, shgReq("m1", e1), topics)
	r2 := h.hb(200, shgReq("m2", e2), topics)
	if r1.ErrorCode != 0 || r2.ErrorCode != 0 {
		t.Fatalf("after reload: %+v %+v", r1, r2)
	}
	all := map[int32]int{}
	for _, r := range []*kmsg.ShareGroupHeartbeatResponse{r1, r2} {
		for _, p := range s2.shares["sg"].members[*r.MemberID].assigned.partitionsOf(topicA) {
			all[p]++
		}
	}
	if len(all) != 3 {
		t.Fatalf("partitions after reload: %v", all)
	}
	// Sessions restart at the load: 45 s after it.
	s3 := h.shard()
	for _, rec := range h.w.records {
		if err := s3.Replay(100, rec.Key, rec.Value); err != nil {
			t.Fatal(err)
		}
	}
	if d := s3.NextDeadline(); d != 45100 {
		t.Fatalf("loaded sessions end at %d", d)
	}
}

func (a assignment) partitionsOf(topic [16]byte) []int32 {
	var out []int32
	for k := range a {
		if k.topic == topic {
			out = append(out, k.partition)
		}
	}
	return out
}

func TestSimpleShareAssignor(t *testing.T) {
	ids := func(n int) map[string]*shareMember {
		ms := map[string]*shareMember{}
		for i := range n {
			id := fmt.Sprintf("m%d", i)
			ms[id] = &shareMember{id: id, topicNames: []string{"a"}}
		}
		return ms
	}
	init := func(parts int32) map[[16]byte]*shareTopic {
		st := &shareTopic{name: "a", partitions: map[int32]bool{}}
		for p := range parts {
			st.partitions[p] = true
		}
		return map[[16]byte]*shareTopic{topicA: st}
	}
	for _, tc := range []struct {
		members        int
		parts, inited  int32
		perMember      []int // partitions per member, sorted by member id
		sharedByAtMost int
	}{
		{members: 1, parts: 4, inited: 4, perMember: []int{4}, sharedByAtMost: 1},
		{members: 2, parts: 4, inited: 4, perMember: []int{2, 2}, sharedByAtMost: 1},
		{members: 3, parts: 4, inited: 4, perMember: []int{2, 1, 1}, sharedByAtMost: 1},
		{members: 5, parts: 2, inited: 2, perMember: []int{2, 1, 1, 1, 1}, sharedByAtMost: 3},
		{members: 2, parts: 4, inited: 2, perMember: []int{1, 1}, sharedByAtMost: 1},
	} {
		ms := ids(tc.members)
		out := assignShare(ms, cghTopics(tc.parts), init(tc.inited), nil)
		var per []int
		shared := map[int32]int{}
		for i := range tc.members {
			a := out[fmt.Sprintf("m%d", i)]
			per = append(per, len(a))
			for k := range a {
				if k.partition >= tc.inited {
					t.Fatalf("%+v: uninitialized partition %d assigned", tc, k.partition)
				}
				shared[k.partition]++
			}
		}
		sort.Sort(sort.Reverse(sort.IntSlice(per)))
		if !reflect.DeepEqual(per, tc.perMember) {
			t.Errorf("%+v: per member %v", tc, per)
		}
		for p, n := range shared {
			if n > tc.sharedByAtMost {
				t.Errorf("%+v: partition %d shared by %d", tc, p, n)
			}
		}
		if int32(len(shared)) != tc.inited {
			t.Errorf("%+v: partitions covered %v", tc, shared)
		}
		// Sticky: the same input gives the same answer, and adding a
		// member moves no partition between the others needlessly.
		again := assignShare(ms, cghTopics(tc.parts), init(tc.inited), out)
		if !reflect.DeepEqual(again, out) {
			t.Errorf("%+v: not stable: %v then %v", tc, out, again)
		}
	}
}

// TestShareGroupForgetsDeletedTopics: a deleted topic leaves the group's
// initialized share-partitions (the ShareGroupStatePartitionMetadata
// record) at the next heartbeat, or, for a group nobody heartbeats to, at
// the periodic check; a topic created again under the name is
// initialized anew.
func TestShareGroupForgetsDeletedTopics(t *testing.T) {
	h := newShareHarness(t)
	var cluster Topics
	h.s.cfg.Topics = func() Topics { return cluster }
	h.s.cfg.OffsetsRetentionCheckMs = 1000
	topicB := [16]byte{0xb}
	two := Topics{"a": {ID: topicA, Partitions: 1}, "b": {ID: topicB, Partitions: 2}}
	resp := h.hb(0, shgReq("m1", 0, "a", "b"), two)
	resp = h.hb(1, shgReq("m1", resp.MemberEpoch), two)
	if got := shareAssigned(resp); !reflect.DeepEqual(got, []int32{0, 0, 1}) {
		t.Fatalf("assigned %v", got)
	}
	// b is deleted: the next heartbeat forgets it and reassigns.
	epoch := h.s.shares["sg"].epoch
	resp = h.hb(2, shgReq("m1", resp.MemberEpoch), cghTopics(1))
	sg := h.s.shares["sg"]
	if sg.initialized[topicB] != nil || sg.initialized[topicA] == nil || sg.epoch <= epoch {
		t.Fatalf("after b's deletion: initialized %v, epoch %d (was %d)", sg.initialized, sg.epoch, epoch)
	}
	if got := shareAssigned(resp); !reflect.DeepEqual(got, []int32{0}) {
		t.Fatalf("assigned after b's deletion %v", got)
	}
	// b again, a new topic id: initialized anew.
	reborn := [16]byte{0xbb}
	again := Topics{"a": {ID: topicA, Partitions: 1}, "b": {ID: reborn, Partitions: 1}}
	h.inits = nil
	h.hb(3, shgReq("m1", resp.MemberEpoch), again)
	if len(h.inits) != 1 || h.inits[0].TopicID != reborn || h.inits[0].StartOffset != -1 {
		t.Fatalf("b created again: inits %+v", h.inits)
	}
	// The member leaves; then both topics are deleted: the periodic check
	// forgets them, and a replay of the records agrees.
	h.hb(4, shgReq("m1", -1), again)
	cluster = Topics{"__consumer_offsets": {ID: [16]byte{0xcc}, Partitions: 1}}
	if err := Finish(h.w, h.s.Tick(5000), errCode); err != nil {
		t.Fatal(err)
	}
	if sg := h.s.shares["sg"]; len(sg.initialized) != 0 || len(sg.initializing) != 0 {
		t.Fatalf("after the periodic check: initialized %v initializing %v", sg.initialized, sg.initializing)
	}
	s2 := h.shard()
	for _, rec := range h.w.records {
		if err := s2.Replay(0, rec.Key, rec.Value); err != nil {
			t.Fatal(err)
		}
	}
	if sg := s2.shares["sg"]; sg == nil || len(sg.initialized) != 0 {
		t.Fatalf("replayed: %+v", sg)
	}
}

// TestShareGroupDeleteWhileMemberJoins: a member joins while DeleteGroups
// deletes the group's state. Until the deletion ends it is neither
// assigned the topic nor has it initialized (an initialization the
// deletion could undo); the deletion then ends NON_EMPTY_GROUP, and the
// member's next heartbeat initializes the topic anew and is assigned it.
// A deletion that failed, or one a coordinator failover cut short, leaves
// the topic to be initialized anew as well.
func TestShareGroupDeleteWhileMemberJoins(t *testing.T) {
	h := newShareHarness(t)
	topics := cghTopics(2)
	h.s.cfg.Topics = func() Topics { return topics }
	h.hb(0, shgReq("m1", 0, "a"), topics)
	h.hb(1, shgReq("m1", -1), topics)
	parts, code, r := h.s.ShareGroupStateToDelete("sg")
	if code != 0 || !reflect.DeepEqual(parts, SharePartitions{topicA: {0, 1}}) {
		t.Fatalf("state to delete: %v %d", parts, code)
	}
	if err := Finish(h.w, r, errCode); err != nil {
		t.Fatal(err)
	}
	// m2 joins while the state is deleted.
	h.inits = nil
	resp := h.hb(2, shgReq("m2", 0, "a"), topics)
	resp = h.hb(3, shgReq("m2", resp.MemberEpoch), topics)
	if got := shareAssigned(resp); len(got) != 0 || len(h.inits) != 0 {
		t.Fatalf("during the deletion: assigned %v, initializations %+v", got, h.inits)
	}
	code, r = h.s.DeleteGroup(4, "sg")
	if code != kerr.NonEmptyGroup.Code {
		t.Fatalf("delete with a member that joined: %d", code)
	}
	Finish(h.w, r, errCode)
	resp = h.hb(5, shgReq("m2", resp.MemberEpoch), topics)
	resp = h.hb(6, shgReq("m2", resp.MemberEpoch), topics)
	if len(h.inits) != 1 || h.inits[0].StartOffset != -1 || !reflect.DeepEqual(h.inits[0].Partitions, []int32{0, 1}) {
		t.Fatalf("after the deletion: initializations %+v", h.inits)
	}
	if got := shareAssigned(resp); !reflect.DeepEqual(got, []int32{0, 1}) {
		t.Fatalf("after the deletion: assigned %v", got)
	}

	// A failed deletion: the topic stays deleting until a member
	// subscribes to it, and a later DeleteGroups deletes it again.
	h.hb(7, shgReq("m2", -1), topics)
	_, code, r = h.s.ShareGroupStateToDelete("sg")
	Finish(h.w, r, errCode)
	h.s.ShareGroupStateDeleteFailed("sg")
	parts, code, r = h.s.ShareGroupStateToDelete("sg")
	if code != 0 || !reflect.DeepEqual(parts, SharePartitions{topicA: {0, 1}}) {
		t.Fatalf("deleting again: %v %d", parts, code)
	}
	Finish(h.w, r, errCode)
	h.s.ShareGroupStateDeleteFailed("sg")

	// A coordinator failover: the loaded group has the topic deleting and
	// no deletion under way; a member joining initializes it anew.
	s2 := h.shard()
	for _, rec := range h.w.records {
		if err := s2.Replay(8, rec.Key, rec.Value); err != nil {
			t.Fatal(err)
		}
	}
	if sg := s2.shares["sg"]; sg == nil || sg.deleting[topicA] != "a" || len(sg.initialized) != 0 {
		t.Fatalf("loaded: %+v", sg)
	}
	h.s, h.inits = s2, nil
	resp = h.hb(9, shgReq("m3", 0, "a"), topics)
	resp = h.hb(10, shgReq("m3", resp.MemberEpoch), topics)
	if len(h.inits) != 1 || h.inits[0].StartOffset != -1 {
		t.Fatalf("after the failover: initializations %+v", h.inits)
	}
	if got := shareAssigned(resp); !reflect.DeepEqual(got, []int32{0, 1}) || len(s2.shares["sg"].deleting) != 0 {
		t.Fatalf("after the failover: assigned %v, deleting %v", got, s2.shares["sg"].deleting)
	}
}
