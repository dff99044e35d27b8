package handlers

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/goleak"

	"gregor/internal/auth"
	"gregor/internal/auth/acl"
	"gregor/internal/metadata"
	"gregor/internal/network"
	"gregor/internal/quota"
	"gregor/internal/share"
	"gregor/internal/share/sharetest"
	"gregor/internal/sharestate"
)

// shareHarness is a broker's handlers with a share-partition leader over
// a real log of topic "t" and an in-memory state persister.
type shareHarness struct {
	t       *testing.T
	c       *sharetest.Cluster
	h       *Handlers
	p       *sharetest.Persister
	version int16
	// principal is who the requests come from.
	principal auth.Principal
}

func newShareHarness(t *testing.T, cfg share.Config) *shareHarness {
	return newShareHarnessAuthorized(t, cfg, nil)
}

func newShareHarnessAuthorized(t *testing.T, cfg share.Config, authorizer acl.Authorizer) *shareHarness {
	c := sharetest.NewCluster(t)
	p := sharetest.NewPersister()
	if err := p.Initialize(context.Background(), sharestate.Key{GroupID: "g", TopicID: sharetest.TopicID}, 1, 0); err != nil {
		t.Fatal(err)
	}
	m := share.New(share.Options{Replica: c.Replica, Persister: p, Defaults: cfg, Logger: slog.New(slog.DiscardHandler)})
	h := NewBroker(Deps{NodeID: sharetest.Node, Replica: c.Replica, Image: c.Replica.Image, Shares: m, SharePersister: p, Logger: slog.New(slog.DiscardHandler), Authorizer: authorizer})
	return &shareHarness{t: t, c: c, h: h, p: p, version: 2, principal: auth.User("ANONYMOUS")}
}

func (s *shareHarness) do(ctx context.Context, req kmsg.Request) kmsg.Response {
	s.t.Helper()
	req.SetVersion(s.version)
	resp, err := s.h.Handle(ctx, &network.Request{Header: network.RequestHeader{APIKey: req.Key(), APIVersion: s.version}, Body: req, Principal: s.principal})
	if err != nil {
		s.t.Fatal(err)
	}
	return resp
}

// fetch sends a ShareFetch of t-0 for member at epoch, with acks.
func (s *shareHarness) fetch(ctx context.Context, member string, epoch, maxWaitMs, maxRecords int32, acks ...kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch) *kmsg.ShareFetchResponse {
	s.t.Helper()
	r := kmsg.NewPtrShareFetchRequest()
	r.GroupID, r.MemberID = kmsg.StringPtr("g"), kmsg.StringPtr(member)
	r.ShareSessionEpoch, r.MaxWaitMillis, r.MinBytes, r.MaxRecords = epoch, maxWaitMs, 1, maxRecords
	rt := kmsg.NewShareFetchRequestTopic()
	rt.TopicID = sharetest.TopicID
	rp := kmsg.NewShareFetchRequestTopicPartition()
	rp.AcknowledgementBatches = acks
	rt.Partitions = append(rt.Partitions, rp)
	r.Topics = append(r.Topics, rt)
	return s.do(ctx, r).(*kmsg.ShareFetchResponse)
}

func (s *shareHarness) ack(member string, epoch int32, first, last int64, types ...int8) *kmsg.ShareAcknowledgeResponse {
	s.t.Helper()
	r := kmsg.NewPtrShareAcknowledgeRequest()
	r.GroupID, r.MemberID = kmsg.StringPtr("g"), kmsg.StringPtr(member)
	r.ShareSessionEpoch = epoch
	rt := kmsg.NewShareAcknowledgeRequestTopic()
	rt.TopicID = sharetest.TopicID
	rp := kmsg.NewShareAcknowledgeRequestTopicPartition()
	b := kmsg.NewShareAcknowledgeRequestTopicPartitionAcknowledgementBatch()
	b.FirstOffset, b.LastOffset, b.AcknowledgeTypes = first, last, types
	rp.AcknowledgementBatches = append(rp.AcknowledgementBatches, b)
	rt.Partitions = append(rt.Partitions, rp)
	r.Topics = append(r.Topics, rt)
	return s.do(context.Background(), r).(*kmsg.ShareAcknowledgeResponse)
}

func fetchAck(first, last int64, types ...int8) kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch {
	b := kmsg.NewShareFetchRequestTopicPartitionAcknowledgementBatch()
	b.FirstOffset, b.LastOffset, b.AcknowledgeTypes = first, last, types
	return b
}

// onlyPartition is the one partition of a share fetch answer.
func onlyPartition(t *testing.T, resp *kmsg.ShareFetchResponse) kmsg.ShareFetchResponseTopicPartition {
	t.Helper()
	if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("answer %+v, want one partition", resp)
	}
	return resp.Topics[0].Partitions[0]
}

func acquired(p kmsg.ShareFetchResponseTopicPartition) [][3]int64 {
	var out [][3]int64
	for _, a := range p.AcquiredRecords {
		out = append(out, [3]int64{a.FirstOffset, a.LastOffset, int64(a.DeliveryCount)})
	}
	return out
}

// TestShareFetchAndAcknowledge drives raw ShareFetch and ShareAcknowledge
// requests through a broker's handlers: sessions and their epochs,
// acquisition, piggy-backed and standalone acknowledgements with Kafka's
// errors, and a session closed releasing its records to another member.
func TestShareFetchAndAcknowledge(t *testing.T) {
	s := newShareHarness(t, share.DefaultConfig())
	s.c.Produce(t, 3, -1, 0) // 0-2
	s.c.Produce(t, 2, -1, 0) // 3-4
	ctx := context.Background()

	resp := s.fetch(ctx, "a", 0, 0, 100)
	if resp.AcquisitionLockTimeoutMillis != 30000 {
		t.Fatalf("lock timeout %d, want the default 30000", resp.AcquisitionLockTimeoutMillis)
	}
	p := onlyPartition(t, resp)
	if got := acquired(p); p.ErrorCode != 0 || len(got) != 1 || got[0] != [3]int64{0, 4, 1} || len(p.Records) == 0 {
		t.Fatalf("first fetch: error %d, acquired %v, %d bytes", p.ErrorCode, got, len(p.Records))
	}
	if n := len(kmsgBatches(t, p.Records)); n != 2 {
		t.Fatalf("%d batches in the records, want 2", n)
	}

	// Piggy-backed: accept 0-2; release 3, reject 4 one by one.
	resp = s.fetch(ctx, "a", 1, 0, 100, fetchAck(0, 2, 1), fetchAck(3, 4, 2, 3))
	// Offset 3 was released: delivered again by that same fetch.
	if p := onlyPartition(t, resp); p.AcknowledgeErrorCode != 0 || len(acquired(p)) != 1 || acquired(p)[0] != [3]int64{3, 3, 2} {
		t.Fatalf("piggy-backed acknowledgement: %d, acquired %v", p.AcknowledgeErrorCode, acquired(p))
	}
	// Nothing new: an incremental answer leaves the partition out.
	if resp := s.fetch(ctx, "a", 2, 0, 100); resp.ErrorCode != 0 || len(resp.Topics) != 0 {
		t.Fatalf("incremental fetch with nothing new: %+v", resp)
	}

	// Standalone acknowledgements: a record not held, a wrong epoch, a
	// session never opened, an opening epoch.
	if a := s.ack("a", 3, 4, 4, 1); a.ErrorCode != 0 || a.Topics[0].Partitions[0].ErrorCode != kerr.InvalidRecordState.Code ||
		a.Topics[0].Partitions[0].ErrorMessage == nil || !strings.Contains(*a.Topics[0].Partitions[0].ErrorMessage, "archived, not acquired by this member") {
		t.Fatalf("acknowledging a rejected record: %+v", a)
	}
	if a := s.ack("a", 9, 3, 3, 1); a.ErrorCode != kerr.InvalidShareSessionEpoch.Code {
		t.Fatalf("wrong epoch: %d", a.ErrorCode)
	}
	if a := s.ack("b", 1, 3, 3, 1); a.ErrorCode != kerr.ShareSessionNotFound.Code {
		t.Fatalf("no session: %d", a.ErrorCode)
	}
	if a := s.ack("a", 0, 3, 3, 1); a.ErrorCode != kerr.InvalidShareSessionEpoch.Code {
		t.Fatalf("acknowledge at epoch 0: %d", a.ErrorCode)
	}
	if a := s.ack("a", 4, 3, 3, 9); a.Topics[0].Partitions[0].ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("unknown acknowledge type: %+v", a)
	}
	// An opening fetch cannot carry acknowledgements.
	if resp := s.fetch(ctx, "c", 0, 0, 100, fetchAck(3, 3, 1)); resp.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("acks at epoch 0: %d", resp.ErrorCode)
	}

	// a closes its session: offset 3 goes to b, delivery 3.
	if a := s.ack("a", -1, 3, 3, 2); a.ErrorCode != 0 || a.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("closing acknowledgement: %+v", a)
	}
	if a := s.ack("a", 6, 3, 3, 1); a.ErrorCode != kerr.ShareSessionNotFound.Code {
		t.Fatalf("closed session: %d", a.ErrorCode)
	}
	if p := onlyPartition(t, s.fetch(ctx, "b", 0, 0, 100)); len(acquired(p)) != 1 || acquired(p)[0] != [3]int64{3, 3, 3} {
		t.Fatalf("b after a closed: %v", acquired(p))
	}
	st, _ := s.p.State(sharestate.Key{GroupID: "g", TopicID: sharetest.TopicID})
	if st.StartOffset != 3 {
		t.Fatalf("persisted start offset %d, want 3", st.StartOffset)
	}
}

// TestShareFetchLongPoll: a share fetch with nothing to acquire waits in
// the fetch purgatory and is answered when records are appended, or when
// another member releases records; a member id is required.
func TestShareFetchLongPoll(t *testing.T) {
	defer goleak.VerifyNone(t)
	s := newShareHarness(t, share.DefaultConfig())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if resp := s.fetch(ctx, "", 0, 0, 100); resp.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("no member id: %d", resp.ErrorCode)
	}
	if p := onlyPartition(t, s.fetch(ctx, "a", 0, 0, 100)); len(p.AcquiredRecords) != 0 {
		t.Fatalf("empty log: %v", acquired(p))
	}

	done := make(chan *kmsg.ShareFetchResponse)
	go func() { done <- s.fetch(ctx, "a", 1, 50_000, 100) }()
	waitParked(t, s)
	s.c.Produce(t, 2, -1, 0)
	select {
	case resp := <-done:
		if p := onlyPartition(t, resp); len(acquired(p)) != 1 || acquired(p)[0] != [3]int64{0, 1, 1} {
			t.Fatalf("woken fetch: %v", acquired(p))
		}
	case <-ctx.Done():
		t.Fatal("the waiting share fetch was not woken by the append")
	}

	// b waits; a releases its records: b is woken and gets them.
	if p := onlyPartition(t, s.fetch(ctx, "b", 0, 0, 100)); len(p.AcquiredRecords) != 0 {
		t.Fatalf("b: %v", acquired(p))
	}
	go func() { done <- s.fetch(ctx, "b", 1, 50_000, 100) }()
	waitParked(t, s)
	if a := s.ack("a", 2, 0, 1, 2); a.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("release: %+v", a)
	}
	select {
	case resp := <-done:
		if p := onlyPartition(t, resp); len(acquired(p)) != 1 || acquired(p)[0] != [3]int64{0, 1, 2} {
			t.Fatalf("b woken: %v", acquired(p))
		}
	case <-ctx.Done():
		t.Fatal("the waiting share fetch was not woken by the release")
	}
}

// waitParked waits until a fetch waits in the Fetch purgatory.
func waitParked(t *testing.T, s *shareHarness) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for s.c.Replica.PurgatorySizes()["Fetch"] == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the share fetch never waited")
		}
		time.Sleep(time.Millisecond)
	}
}

func kmsgBatches(t *testing.T, b []byte) []kmsg.RecordBatch {
	t.Helper()
	var out []kmsg.RecordBatch
	for len(b) > 0 {
		var rb kmsg.RecordBatch
		if err := rb.ReadFrom(b); err != nil {
			t.Fatal(err)
		}
		out = append(out, rb)
		b = b[12+int(rb.Length):]
	}
	return out
}

// TestShareAuthorization: READ on the group for the request, READ on each
// topic for its partitions, as Kafka's KafkaApis checks them.
func TestShareAuthorization(t *testing.T) {
	authorizer := acl.NewStandard(nil, false)
	allow := func(principal string, rt kmsg.ACLResourceType, name string) acl.Binding {
		return acl.Binding{ResourceType: rt, ResourceName: name, PatternType: kmsg.ACLResourcePatternTypeLiteral,
			Principal: principal, Host: "*", Operation: kmsg.ACLOperationRead, Permission: kmsg.ACLPermissionTypeAllow}
	}
	authorizer.Replace(map[[16]byte]acl.Binding{
		{1}: allow("User:alice", kmsg.ACLResourceTypeGroup, "g"),
		{2}: allow("User:alice", kmsg.ACLResourceTypeTopic, "t"),
		{3}: allow("User:bob", kmsg.ACLResourceTypeGroup, "g"),
	})
	s := newShareHarnessAuthorized(t, share.DefaultConfig(), authorizer)
	s.c.Produce(t, 2, -1, 0)
	ctx := context.Background()

	s.principal = auth.User("carol")
	if resp := s.fetch(ctx, "c", 0, 0, 100); resp.ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("no READ on the group: %d", resp.ErrorCode)
	}
	if a := s.ack("c", 1, 0, 0, 1); a.ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("acknowledge without READ on the group: %d", a.ErrorCode)
	}
	s.principal = auth.User("bob")
	if p := onlyPartition(t, s.fetch(ctx, "b", 0, 0, 100)); p.ErrorCode != kerr.TopicAuthorizationFailed.Code || len(p.AcquiredRecords) != 0 {
		t.Fatalf("no READ on the topic: %d, %v", p.ErrorCode, acquired(p))
	}
	if a := s.ack("b", 1, 0, 0, 1); a.ErrorCode != 0 || a.Topics[0].Partitions[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("acknowledge without READ on the topic: %+v", a)
	}
	s.principal = auth.User("alice")
	if p := onlyPartition(t, s.fetch(ctx, "a", 0, 0, 100)); p.ErrorCode != 0 || len(acquired(p)) != 1 {
		t.Fatalf("alice: %d, %v", p.ErrorCode, acquired(p))
	}
}

// TestShareFetchNotLeader: a partition another broker leads is answered
// NOT_LEADER_OR_FOLLOWER with the current leader and its endpoint on the
// request's listener.
func TestShareFetchNotLeader(t *testing.T) {
	s := newShareHarness(t, share.DefaultConfig())
	ch := metadata.NewPartitionChangeRecord(sharetest.TopicID, 0)
	ch.Leader, ch.ISR = 2, []int32{2}
	s.c.Feed(t, &metadata.RegisterBrokerRecord{RecordVersion: metadata.RegisterBrokerRecordVersion, BrokerID: 2,
		EndPoints: []metadata.BrokerEndpoint{{Name: "", Host: "broker2", Port: 9093}}}, ch)
	resp := s.fetch(context.Background(), "a", 0, 0, 100)
	p := onlyPartition(t, resp)
	if p.ErrorCode != kerr.NotLeaderForPartition.Code || p.CurrentLeader.LeaderID != 2 || p.CurrentLeader.LeaderEpoch != 1 {
		t.Fatalf("partition led by 2: error %d, leader %+v", p.ErrorCode, p.CurrentLeader)
	}
	if len(resp.NodeEndpoints) != 1 || resp.NodeEndpoints[0].NodeID != 2 || resp.NodeEndpoints[0].Host != "broker2" || resp.NodeEndpoints[0].Port != 9093 {
		t.Fatalf("node endpoints %+v", resp.NodeEndpoints)
	}
}

// TestShareFetchQuota: consumer_byte_rate throttles a share fetch by its
// answer's size, and the answer keeps the records it acquired.
func TestShareFetchQuota(t *testing.T) {
	s := newShareHarness(t, share.DefaultConfig())
	q, err := quota.NewManagers(quota.Config{}, quota.Config{})
	if err != nil {
		t.Fatal(err)
	}
	q.Fetch.Update(map[metadata.QuotaEntity]map[string]float64{
		{User: metadata.QuotaName{Present: true, Name: "ANONYMOUS"}}: {"consumer_byte_rate": 10},
	})
	d := s.h.d
	d.Quotas = q
	s.h = NewBroker(d)
	s.c.Produce(t, 20, -1, 0)
	resp := s.fetch(context.Background(), "a", 0, 0, 100)
	p := onlyPartition(t, resp)
	if len(acquired(p)) != 1 || len(p.Records) == 0 {
		t.Fatalf("throttled answer lost its records: %v", acquired(p))
	}
	if resp.ThrottleMillis <= 0 {
		t.Fatalf("throttle %d ms over a 10 B/s quota", resp.ThrottleMillis)
	}
}

// The share group APIs are served (and so advertised in ApiVersions) only
// when both the share-partition leader and the state persister are wired:
// a half-wired broker would advertise share groups it cannot run.
func TestShareAPIsNeedBothParts(t *testing.T) {
	c := sharetest.NewCluster(t)
	p := sharetest.NewPersister()
	m := share.New(share.Options{Replica: c.Replica, Persister: p, Logger: slog.New(slog.DiscardHandler)})
	keys := []int16{76, 77, 78, 79, 90, 91, 92}
	for _, tc := range []struct {
		name  string
		deps  Deps
		serve bool
	}{
		{"neither", Deps{}, false},
		{"leader only", Deps{Shares: m}, false},
		{"persister only", Deps{SharePersister: p}, false},
		{"both", Deps{Shares: m, SharePersister: p}, true},
	} {
		tc.deps.NodeID, tc.deps.Replica, tc.deps.Image, tc.deps.Logger = sharetest.Node, c.Replica, c.Replica.Image, slog.New(slog.DiscardHandler)
		h := NewBroker(tc.deps)
		for _, k := range keys {
			if _, _, ok := h.VersionRange(k); ok != tc.serve {
				t.Errorf("%s: %s served %v, want %v", tc.name, kmsg.NameForKey(k), ok, tc.serve)
			}
		}
	}
}
