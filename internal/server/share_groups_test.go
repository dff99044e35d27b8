package server

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/sharestate"
)

// memPersister is an in-memory share-group state persister: what the share
// group coordinator initializes and deletes.
type memPersister struct {
	mu      sync.Mutex
	states  map[sharestate.Key]sharestate.State
	deleted []sharestate.Key
}

func newMemPersister() *memPersister {
	return &memPersister{states: map[sharestate.Key]sharestate.State{}}
}

func (p *memPersister) Initialize(_ context.Context, key sharestate.Key, stateEpoch int32, startOffset int64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if old, ok := p.states[key]; ok && old.StateEpoch >= stateEpoch {
		return fmt.Errorf("initialize %v: %w", key, kerr.FencedStateEpoch)
	}
	p.states[key] = sharestate.State{StateEpoch: stateEpoch, StartOffset: startOffset}
	return nil
}

func (p *memPersister) Read(_ context.Context, key sharestate.Key, _ int32) (sharestate.State, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	st, ok := p.states[key]
	if !ok {
		return sharestate.State{}, kerr.UnknownTopicOrPartition
	}
	return st, nil
}

func (p *memPersister) Write(context.Context, sharestate.Key, sharestate.Update) error {
	return errors.New("not used by the group coordinator")
}

func (p *memPersister) ReadSummary(ctx context.Context, key sharestate.Key) (sharestate.Summary, error) {
	st, err := p.Read(ctx, key, 0)
	return sharestate.Summary{StateEpoch: st.StateEpoch, StartOffset: st.StartOffset}, err
}

func (p *memPersister) Delete(_ context.Context, key sharestate.Key) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.states[key]; !ok {
		return kerr.UnknownTopicOrPartition
	}
	delete(p.states, key)
	p.deleted = append(p.deleted, key)
	return nil
}

func (p *memPersister) keys() []sharestate.Key {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []sharestate.Key
	for k := range p.states {
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b sharestate.Key) int { return int(a.Partition - b.Partition) })
	return out
}

// retriable are the codes a group request is retried on while the
// coordinator comes up.
func retriable(code int16) bool {
	switch code {
	case kerr.CoordinatorNotAvailable.Code, kerr.CoordinatorLoadInProgress.Code, kerr.NotCoordinator.Code:
		return true
	}
	return false
}

// shareHeartbeat sends heartbeats until one is not a retriable coordinator
// error, and returns it.
func shareHeartbeat(t *testing.T, cl *kgo.Client, group, member string, epoch int32, topics []string) *kmsg.ShareGroupHeartbeatResponse {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		req := kmsg.NewPtrShareGroupHeartbeatRequest()
		req.Version, req.GroupID, req.MemberID, req.MemberEpoch, req.SubscribedTopicNames = 1, group, member, epoch, topics
		resp, err := req.RequestWith(context.Background(), cl)
		if err == nil && !retriable(resp.ErrorCode) {
			return resp
		}
		if time.Now().After(deadline) {
			t.Fatalf("share group heartbeat: %v %+v", err, resp)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestShareGroupCoordinator drives a share group through raw requests on a
// node with an in-memory persister: join, share-partition initialization
// then assignment, describe, list, group configs, and deletion with the
// group's state.
func TestShareGroupCoordinator(t *testing.T) {
	persister := newMemPersister()
	ts := startServerWith(t, t.TempDir(), map[string]string{"offsets.topic.num.partitions": "1"}, func(s *Server) {
		s.sharePersister = persister
	})
	cl := ts.client()
	ctx := context.Background()
	if _, err := ts.admin().CreateTopic(ctx, 2, 1, nil, "t"); err != nil {
		t.Fatal(err)
	}

	resp := shareHeartbeat(t, cl, "sg", "member-1", 0, []string{"t"})
	if resp.ErrorCode != 0 || resp.MemberEpoch < 1 || resp.HeartbeatIntervalMillis != 5000 {
		t.Fatalf("join: %+v", resp)
	}
	// The heartbeat initialized both share-partitions before it answered.
	if keys := persister.keys(); len(keys) != 2 || keys[0].GroupID != "sg" || keys[1].Partition != 1 {
		t.Fatalf("initialized %+v", keys)
	}
	if st, _ := persister.Read(ctx, persister.keys()[0], 0); st.StartOffset != -1 {
		t.Fatalf("initial state %+v, want start offset -1", st)
	}
	// Initialized, they are assigned at the next heartbeat.
	epoch := resp.MemberEpoch
	resp = shareHeartbeat(t, cl, "sg", "member-1", epoch, []string{"t"})
	if resp.ErrorCode != 0 || resp.Assignment == nil || len(resp.Assignment.TopicPartitions) != 1 ||
		!slices.Equal(resp.Assignment.TopicPartitions[0].Partitions, []int32{0, 1}) {
		t.Fatalf("assignment: %+v", resp)
	}
	epoch = resp.MemberEpoch

	// An old epoch is fenced; a bad member id is INVALID_REQUEST.
	if r := shareHeartbeat(t, cl, "sg", "member-1", epoch+5, nil); r.ErrorCode != kerr.FencedMemberEpoch.Code {
		t.Fatalf("newer epoch: %+v", r)
	}
	if r := shareHeartbeat(t, cl, "sg", "", 0, []string{"t"}); r.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("empty member id: %+v", r)
	}

	dreq := kmsg.NewPtrShareGroupDescribeRequest()
	dreq.Version, dreq.GroupIDs, dreq.IncludeAuthorizedOperations = 1, []string{"sg", "nope"}, true
	dresp, err := dreq.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	g := dresp.Groups[0]
	if g.ErrorCode != 0 || g.GroupState != "Stable" || g.Assignor != "simple" || g.GroupEpoch != epoch || len(g.Members) != 1 ||
		g.Members[0].MemberID != "member-1" || g.Members[0].Assignment.TopicPartitions[0].Topic != "t" || g.AuthorizedOperations <= 0 {
		t.Fatalf("describe: %+v", g)
	}
	if g := dresp.Groups[1]; g.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("describe unknown: %+v", g)
	}

	lreq := kmsg.NewPtrListGroupsRequest()
	lreq.Version, lreq.TypesFilter = 5, []string{"share"}
	lresp, err := lreq.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(lresp.Groups) != 1 || lresp.Groups[0].Group != "sg" || lresp.Groups[0].GroupType != "share" || lresp.Groups[0].GroupState != "Stable" {
		t.Fatalf("list: %+v", lresp)
	}

	// Group configs: a valid heartbeat interval is taken at the next
	// heartbeat; one outside the broker's bounds is INVALID_CONFIG.
	alter := func(name, value string) kmsg.IncrementalAlterConfigsResponseResource {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		res := kmsg.NewIncrementalAlterConfigsRequestResource()
		res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, "sg"
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Value = name, kmsg.StringPtr(value)
		res.Configs = append(res.Configs, c)
		req.Resources = append(req.Resources, res)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Resources[0]
	}
	if r := alter("share.heartbeat.interval.ms", "6000"); r.ErrorCode != 0 {
		t.Fatalf("alter: %+v", r)
	}
	if r := alter("share.session.timeout.ms", "1000"); r.ErrorCode != kerr.InvalidConfig.Code || r.ErrorMessage == nil ||
		*r.ErrorMessage != "share.session.timeout.ms must be greater than or equal to group.share.min.session.timeout.ms" {
		t.Fatalf("alter out of bounds: %+v", r)
	}
	if r := alter("share.no.such.config", "1"); r.ErrorCode != kerr.InvalidConfig.Code {
		t.Fatalf("alter unknown: %+v", r)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := shareHeartbeat(t, cl, "sg", "member-1", epoch, nil)
		if r.ErrorCode != 0 {
			t.Fatalf("heartbeat: %+v", r)
		}
		if r.HeartbeatIntervalMillis == 6000 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("heartbeat interval still %d", r.HeartbeatIntervalMillis)
		}
		time.Sleep(50 * time.Millisecond)
	}
	creq := kmsg.NewPtrDescribeConfigsRequest()
	cres := kmsg.NewDescribeConfigsRequestResource()
	cres.ResourceType, cres.ResourceName, cres.ConfigNames = kmsg.ConfigResourceTypeGroupConfig, "sg", []string{"share.heartbeat.interval.ms", "share.auto.offset.reset"}
	creq.Resources = append(creq.Resources, cres)
	cresp, err := creq.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if rc := cresp.Resources[0]; rc.ErrorCode != 0 || len(rc.Configs) != 2 ||
		rc.Configs[0].Name != "share.auto.offset.reset" || *rc.Configs[0].Value != "latest" || rc.Configs[0].Source != kmsg.ConfigSourceDefaultConfig ||
		*rc.Configs[1].Value != "6000" || rc.Configs[1].Source != kmsg.ConfigSourceGroupConfig {
		t.Fatalf("describe configs: %+v", rc)
	}

	del := func() int16 {
		req := kmsg.NewPtrDeleteGroupsRequest()
		req.Version, req.Groups = 2, []string{"sg"}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Groups[0].ErrorCode
	}
	if code := del(); code != kerr.NonEmptyGroup.Code {
		t.Fatalf("delete with a member: %d", code)
	}
	if r := shareHeartbeat(t, cl, "sg", "member-1", -1, nil); r.ErrorCode != 0 || r.MemberEpoch != -1 {
		t.Fatalf("leave: %+v", r)
	}
	if code := del(); code != 0 {
		t.Fatalf("delete: %d", code)
	}
	if keys := persister.keys(); len(keys) != 0 || len(persister.deleted) != 2 {
		t.Fatalf("state left %+v, deleted %+v", keys, persister.deleted)
	}
	dresp, err = dreq.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if g := dresp.Groups[0]; g.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("describe deleted: %+v", g)
	}
}

// TestShareGroupAuthz checks the share group APIs' ACLs as Kafka checks
// them: READ on the group and DESCRIBE on the subscribed topics to
// heartbeat, DESCRIBE on the group (and on its assigned topics) to
// describe, DELETE on the group to delete it.
func TestShareGroupAuthz(t *testing.T) {
	fa := &fakeAuthorizer{open: true}
	persister := newMemPersister()
	ts := startServerWith(t, t.TempDir(), map[string]string{"offsets.topic.num.partitions": "1"}, func(s *Server) {
		s.authorizer, s.sharePersister = fa, persister
	})
	cl := ts.client()
	if _, err := ts.admin().CreateTopics(ctxT(t), 1, 1, nil, "a", "b"); err != nil {
		t.Fatal(err)
	}
	// The group and its assignment, while everything is allowed.
	resp := shareHeartbeat(t, cl, "sg", "m1", 0, []string{"a"})
	if resp.ErrorCode != 0 {
		t.Fatalf("join: %+v", resp)
	}
	if resp = shareHeartbeat(t, cl, "sg", "m1", resp.MemberEpoch, []string{"a"}); resp.Assignment == nil || len(resp.Assignment.TopicPartitions) != 1 {
		t.Fatalf("assignment: %+v", resp)
	}
	epoch := resp.MemberEpoch

	fa.only(groupGrant(kmsg.ACLOperationDescribe, "sg"))
	codeOf(t, "heartbeat without READ", shareHeartbeat(t, cl, "sg", "m1", epoch, nil).ErrorCode, kerr.GroupAuthorizationFailed)
	fa.only(groupGrant(kmsg.ACLOperationRead, "sg"), topicGrant(kmsg.ACLOperationDescribe, "a"))
	r := shareHeartbeat(t, cl, "sg", "m1", epoch, []string{"a", "b"})
	codeOf(t, "heartbeat subscribing to b", r.ErrorCode, kerr.TopicAuthorizationFailed)
	if r.ErrorMessage == nil || *r.ErrorMessage != "The following topics are unauthorized for subscription: b" {
		t.Errorf("message %v", r.ErrorMessage)
	}
	codeOf(t, "heartbeat with READ", shareHeartbeat(t, cl, "sg", "m1", epoch, []string{"a"}).ErrorCode, nil)

	describe := func() kmsg.ShareGroupDescribeResponseGroup {
		req := kmsg.NewPtrShareGroupDescribeRequest()
		req.Version, req.GroupIDs = 1, []string{"sg"}
		return rawRequest[*kmsg.ShareGroupDescribeResponse](t, cl, req).Groups[0]
	}
	fa.only(groupGrant(kmsg.ACLOperationRead, "sg"))
	codeOf(t, "describe without DESCRIBE", describe().ErrorCode, kerr.GroupAuthorizationFailed)
	fa.only(groupGrant(kmsg.ACLOperationDescribe, "sg"))
	if g := describe(); g.ErrorCode != kerr.TopicAuthorizationFailed.Code || len(g.Members) != 0 || g.GroupState != "" {
		t.Errorf("describe without DESCRIBE on the assigned topic: %+v", g)
	}
	fa.only(groupGrant(kmsg.ACLOperationDescribe, "sg"), topicGrant(kmsg.ACLOperationDescribe, "a"))
	if g := describe(); g.ErrorCode != 0 || len(g.Members) != 1 {
		t.Errorf("describe: %+v", g)
	}

	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Version, del.Groups = 2, []string{"sg"}
	codeOf(t, "delete without DELETE", rawRequest[*kmsg.DeleteGroupsResponse](t, cl, del).Groups[0].ErrorCode, kerr.GroupAuthorizationFailed)
	if len(persister.keys()) != 1 {
		t.Errorf("state deleted without DELETE: %+v", persister.keys())
	}
}
