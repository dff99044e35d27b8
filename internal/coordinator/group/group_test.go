package group

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type memWriter struct{ records []Record }

func (w *memWriter) Write(rs []Record) error { w.records = append(w.records, rs...); return nil }

func (w *memWriter) WriteTransactional(_ int64, _ int16, rs []Record) error { return w.Write(rs) }

func (w *memWriter) AfterCommit(fn func(error)) { fn(nil) }

func errCode(error) int16 { return kerr.UnknownServerError.Code }

func testShard() *Shard {
	n := 0
	return NewShard(Config{
		MinSessionTimeoutMs: 6000, MaxSessionTimeoutMs: 30000, MaxSize: 3,
		OffsetMetadataMaxBytes: 10, OffsetsRetentionMs: 1000, OffsetsRetentionCheckMs: 100,
		NewMemberID: func(c string) string { n++; return fmt.Sprintf("%s-%d", c, n) },
	})
}

func joinReq(memberID string, instance *string, session int32) *kmsg.JoinGroupRequest {
	r := kmsg.NewPtrJoinGroupRequest()
	r.Version, r.Group, r.MemberID, r.InstanceID = 9, "g", memberID, instance
	r.SessionTimeoutMillis, r.RebalanceTimeoutMillis, r.ProtocolType = session, 10000, "consumer"
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name, p.Metadata = "range", []byte("m-"+memberID)
	r.Protocols = append(r.Protocols, p)
	return r
}

// step runs a shard call and collects every reply it delivers.
type capture struct{ got []kmsg.Response }

func (c *capture) to() Responder { return func(r kmsg.Response) { c.got = append(c.got, r) } }

func join(t *testing.T, s *Shard, w *memWriter, now int64, memberID string, instance *string) *kmsg.JoinGroupResponse {
	t.Helper()
	var c capture
	Finish(w, s.JoinGroup(now, joinReq(memberID, instance, 6000), "c", "/h", c.to()), errCode)
	if len(c.got) == 0 {
		return nil
	}
	return c.got[0].(*kmsg.JoinGroupResponse)
}

func TestJoinSyncHeartbeatLeave(t *testing.T) {
	s, w := testShard(), &memWriter{}
	// Validation.
	var c capture
	bad := joinReq("", nil, 100)
	Finish(w, s.JoinGroup(0, bad, "c", "/h", c.to()), errCode)
	if c.got[0].(*kmsg.JoinGroupResponse).ErrorCode != kerr.InvalidSessionTimeout.Code {
		t.Fatalf("session timeout 100: %+v", c.got[0])
	}
	// v4+: a dynamic member first gets its id.
	r := join(t, s, w, 0, "", nil)
	if r.ErrorCode != kerr.MemberIDRequired.Code || r.MemberID != "c-1" {
		t.Fatalf("first join: %+v", r)
	}
	r = join(t, s, w, 0, "c-1", nil)
	if r.ErrorCode != 0 || r.Generation != 1 || r.LeaderID != "c-1" || len(r.Members) != 1 {
		t.Fatalf("second join: %+v", r)
	}
	// Sync as leader: Stable, assignment stored.
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Version, sync.Group, sync.MemberID, sync.Generation = 5, "g", "c-1", 1
	a := kmsg.NewSyncGroupRequestGroupAssignment()
	a.MemberID, a.MemberAssignment = "c-1", []byte("A")
	sync.GroupAssignment = append(sync.GroupAssignment, a)
	c = capture{}
	Finish(w, s.SyncGroup(0, sync, c.to()), errCode)
	if sr := c.got[0].(*kmsg.SyncGroupResponse); sr.ErrorCode != 0 || string(sr.MemberAssignment) != "A" {
		t.Fatalf("sync: %+v", sr)
	}
	if s.groups["g"].state != Stable || len(w.records) != 1 {
		t.Fatalf("state %v, %d records", s.groups["g"].state, len(w.records))
	}
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Group, hb.MemberID, hb.Generation = "g", "c-1", 0
	for _, tc := range []struct {
		member string
		gen    int32
		want   int16
	}{{"c-1", 1, 0}, {"c-1", 0, kerr.IllegalGeneration.Code}, {"x", 1, kerr.UnknownMemberID.Code}} {
		hb.MemberID, hb.Generation = tc.member, tc.gen
		if got := s.Heartbeat(0, hb).ErrorCode; got != tc.want {
			t.Errorf("heartbeat %s/%d = %d, want %d", tc.member, tc.gen, got, tc.want)
		}
	}
	// A second member joins: the group rebalances; the first learns it by heartbeat.
	r = join(t, s, w, 10, "", nil)
	var c2 capture
	Finish(w, s.JoinGroup(10, joinReq(r.MemberID, nil, 6000), "c", "/h", c2.to()), errCode)
	hb.MemberID, hb.Generation = "c-1", 1
	if got := s.Heartbeat(10, hb).ErrorCode; got != kerr.RebalanceInProgress.Code {
		t.Fatalf("heartbeat during rebalance = %d", got)
	}
	r1 := join(t, s, w, 20, "c-1", nil)
	if r1.Generation != 2 || len(c2.got) != 1 || c2.got[0].(*kmsg.JoinGroupResponse).Generation != 2 {
		t.Fatalf("rebalance: %+v %+v", r1, c2.got)
	}
	// Nobody syncs: the sync deadline drops both members; the group is
	// empty (and, having no offsets, deleted by the periodic cleanup).
	s.nextExpiry = 1 << 62
	Finish(w, s.Tick(20+10000), errCode)
	if g := s.groups["g"]; g.state != Empty || len(g.members) != 0 || g.generation != 3 {
		t.Fatalf("after sync timeout: %v %d members gen %d", g.state, len(g.members), g.generation)
	}
	s.nextExpiry = 0
	Finish(w, s.Tick(20+10000), errCode)
	if _, ok := s.groups["g"]; ok {
		t.Fatal("empty group without offsets not cleaned up")
	}
}

func TestStaticMember(t *testing.T) {
	s, w := testShard(), &memWriter{}
	inst := "i"
	r := join(t, s, w, 0, "", &inst)
	if r.ErrorCode != 0 || r.Generation != 1 {
		t.Fatalf("static join: %+v", r)
	}
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Group, sync.MemberID, sync.Generation, sync.InstanceID = "g", r.MemberID, 1, &inst
	Finish(w, s.SyncGroup(0, sync, func(kmsg.Response) {}), errCode)
	// Restart with the same instance id: same generation, old id fenced.
	r2 := join(t, s, w, 100, "", &inst)
	if r2.ErrorCode != 0 || r2.Generation != 1 || !r2.SkipAssignment || r2.MemberID == r.MemberID {
		t.Fatalf("static rejoin: %+v", r2)
	}
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Group, hb.MemberID, hb.Generation, hb.InstanceID = "g", r.MemberID, 1, &inst
	if got := s.Heartbeat(100, hb).ErrorCode; got != kerr.FencedInstanceID.Code {
		t.Fatalf("old static member heartbeat = %d", got)
	}
}

func TestOffsetsCommitFetchReplayExpire(t *testing.T) {
	s, w := testShard(), &memWriter{}
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Version, commit.Group, commit.Generation = 8, "simple", -1
	tp := kmsg.NewOffsetCommitRequestTopic()
	tp.Topic = "t"
	for p, meta := range []string{"ok", "much too long metadata"} {
		pp := kmsg.NewOffsetCommitRequestTopicPartition()
		pp.Partition, pp.Offset, pp.Metadata = int32(p), 42, kmsg.StringPtr(meta)
		tp.Partitions = append(tp.Partitions, pp)
	}
	commit.Topics = append(commit.Topics, tp)
	var c capture
	Finish(w, s.OffsetCommit(0, commit, c.to()), errCode)
	resp := c.got[0].(*kmsg.OffsetCommitResponse)
	if resp.Topics[0].Partitions[0].ErrorCode != 0 || resp.Topics[0].Partitions[1].ErrorCode != kerr.OffsetMetadataTooLarge.Code {
		t.Fatalf("commit: %+v", resp)
	}
	// A member commit to an unknown group is refused.
	commit.Group, commit.Generation, commit.MemberID = "other", 3, "m"
	c = capture{}
	Finish(w, s.OffsetCommit(0, commit, c.to()), errCode)
	if c.got[0].(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode != kerr.IllegalGeneration.Code {
		t.Fatal("commit to unknown group with a generation accepted")
	}
	// Replaying the written records rebuilds the offsets.
	s2 := testShard()
	for _, r := range w.records {
		if err := s2.Replay(0, r.Key, r.Value); err != nil {
			t.Fatal(err)
		}
	}
	_, topics := s2.FetchOffsets("simple", nil, false)
	if len(topics) != 1 || topics[0].Partitions[0].Offset != 42 || *topics[0].Partitions[0].Metadata != "ok" {
		t.Fatalf("replayed offsets: %+v", topics)
	}
	// Retention: the empty group's offsets expire, then the group.
	w2 := &memWriter{}
	Finish(w2, s2.Tick(2000), errCode)
	if _, ok := s2.groups["simple"]; ok || len(w2.records) != 2 || w2.records[0].Value != nil {
		t.Fatalf("after expiry: %d records", len(w2.records))
	}
}

func TestPartitionFor(t *testing.T) {
	// Java: "my-group".hashCode() = -1906497762; abs(-2147483648) -> 0.
	for _, tc := range []struct {
		key  string
		want int32
	}{{"my-group", 1906497762 % 50}, {"", 0}} {
		if got := partitionFor(tc.key, 50); got != tc.want {
			t.Errorf("PartitionFor(%q) = %d, want %d", tc.key, got, tc.want)
		}
	}
}
