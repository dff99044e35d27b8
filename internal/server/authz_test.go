package server

import (
	"errors"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/auth"
	"gregor/internal/auth/acl"
)

// fakeAuthorizer allows what it was granted: (op, resource type, name)
// for User:ANONYMOUS (the PLAINTEXT principal), or everything while open.
type fakeAuthorizer struct {
	mu      sync.Mutex
	open    bool
	granted map[grant]bool
}

type grant struct {
	op   kmsg.ACLOperation
	rt   kmsg.ACLResourceType
	name string
}

func (f *fakeAuthorizer) Authorize(p auth.Principal, host string, op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.open {
		return true
	}
	return p == auth.Anonymous && host == "127.0.0.1" && f.granted[grant{op, rt, name}]
}

// AuthorizeByResourceType: some topic grant for op.
func (f *fakeAuthorizer) AuthorizeByResourceType(p auth.Principal, host string, op kmsg.ACLOperation, rt kmsg.ACLResourceType) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for g := range f.granted {
		if g.op == op && g.rt == rt {
			return true
		}
	}
	return f.open
}

// only closes the authorizer and grants exactly gs.
func (f *fakeAuthorizer) only(gs ...grant) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.open = false
	f.granted = map[grant]bool{}
	for _, g := range gs {
		f.granted[g] = true
	}
}

func (f *fakeAuthorizer) openAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.open = true
}

func topicGrant(op kmsg.ACLOperation, name string) grant {
	return grant{op, kmsg.ACLResourceTypeTopic, name}
}

func clusterGrant(op kmsg.ACLOperation) grant {
	return grant{op, kmsg.ACLResourceTypeCluster, acl.ClusterName}
}

func groupGrant(op kmsg.ACLOperation, name string) grant {
	return grant{op, kmsg.ACLResourceTypeGroup, name}
}

func txnGrant(op kmsg.ACLOperation, name string) grant {
	return grant{op, kmsg.ACLResourceTypeTransactionalId, name}
}

// startAuthzServer starts a server checked by a fake authorizer, open
// until the test closes it, with topics a and b (one partition each).
func startAuthzServer(t *testing.T) (*testServer, *fakeAuthorizer) {
	t.Helper()
	fa := &fakeAuthorizer{open: true}
	ts := startServerWith(t, t.TempDir(), nil, func(s *Server) { s.authorizer = fa })
	if _, err := ts.admin().CreateTopics(ctxT(t), 1, 1, nil, "a", "b"); err != nil {
		t.Fatal(err)
	}
	return ts, fa
}

func codeOf(t *testing.T, what string, got int16, want *kerr.Error) {
	t.Helper()
	wantCode := int16(0)
	if want != nil {
		wantCode = want.Code
	}
	if got != wantCode {
		t.Errorf("%s: got %v, want %v", what, kerr.ErrorForCode(got), want)
	}
}

func rawRequest[R kmsg.Response](t *testing.T, cl *kgo.Client, req kmsg.Request) R {
	t.Helper()
	// Straight to the broker: kgo's sharding would stop at an
	// unauthorized topic's metadata.
	resp, err := cl.Broker(1).Request(ctxT(t), req)
	if err != nil {
		t.Fatalf("%s: %v", kmsg.NameForKey(req.Key()), err)
	}
	return any(resp).(R)
}

func TestAuthzDataPlane(t *testing.T) {
	ts, fa := startAuthzServer(t)
	ctx := ctxT(t)
	cl := ts.client(kgo.RecordRetries(0), kgo.UnknownTopicRetries(0))
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "a", Value: []byte("x")}, &kgo.Record{Topic: "b", Value: []byte("y")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	topicIDs := map[string][16]byte{}
	md := rawRequest[*kmsg.MetadataResponse](t, cl, kmsg.NewPtrMetadataRequest())
	for _, mt := range md.Topics {
		topicIDs[*mt.Topic] = mt.TopicID
	}

	t.Run("Metadata", func(t *testing.T) {
		fa.only(topicGrant(kmsg.ACLOperationDescribe, "a"), topicGrant(kmsg.ACLOperationDescribe, "new1"))
		all := rawRequest[*kmsg.MetadataResponse](t, cl, kmsg.NewPtrMetadataRequest())
		if len(all.Topics) != 1 || *all.Topics[0].Topic != "a" {
			t.Errorf("all topics: %d topics, want only a", len(all.Topics))
		}
		req := kmsg.NewPtrMetadataRequest()
		req.AllowAutoTopicCreation = true
		for _, n := range []string{"a", "b", "missing", "new1"} {
			mt := kmsg.NewMetadataRequestTopic()
			mt.Topic = kmsg.StringPtr(n)
			req.Topics = append(req.Topics, mt)
		}
		byID := kmsg.NewMetadataRequestTopic()
		byID.TopicID = topicIDs["b"]
		req.Topics = append(req.Topics, byID)
		resp := rawRequest[*kmsg.MetadataResponse](t, cl, req)
		want := []*kerr.Error{nil, kerr.TopicAuthorizationFailed, kerr.TopicAuthorizationFailed, kerr.TopicAuthorizationFailed, kerr.TopicAuthorizationFailed}
		for i, rt := range resp.Topics {
			codeOf(t, "topic "+string(rune('0'+i)), rt.ErrorCode, want[i])
		}
		// CREATE on the topic allows auto-creation.
		fa.only(topicGrant(kmsg.ACLOperationDescribe, "new1"), topicGrant(kmsg.ACLOperationCreate, "new1"))
		req.Topics = req.Topics[3:4]
		resp = rawRequest[*kmsg.MetadataResponse](t, cl, req)
		if c := resp.Topics[0].ErrorCode; c != 0 && c != kerr.LeaderNotAvailable.Code {
			t.Errorf("auto-create with CREATE on the topic: %v", kerr.ErrorForCode(c))
		}
	})

	t.Run("Produce", func(t *testing.T) {
		fa.only(topicGrant(kmsg.ACLOperationDescribe, "a"), topicGrant(kmsg.ACLOperationDescribe, "b"),
			topicGrant(kmsg.ACLOperationWrite, "a"), clusterGrant(kmsg.ACLOperationIdempotentWrite))
		p := ts.client(kgo.RecordRetries(0), kgo.UnknownTopicRetries(0))
		rs := p.ProduceSync(ctx, &kgo.Record{Topic: "a", Value: []byte("x")}, &kgo.Record{Topic: "b", Value: []byte("y")})
		for _, r := range rs {
			switch r.Record.Topic {
			case "a":
				if r.Err != nil {
					t.Errorf("produce to a (WRITE granted): %v", r.Err)
				}
			case "b":
				if !errors.Is(r.Err, kerr.TopicAuthorizationFailed) {
					t.Errorf("produce to b (no WRITE): %v", r.Err)
				}
			}
		}
	})

	t.Run("Fetch", func(t *testing.T) {
		fa.only(topicGrant(kmsg.ACLOperationRead, "a"))
		fetch := func(replicaID int32) *kmsg.FetchResponse {
			req := kmsg.NewPtrFetchRequest()
			req.ReplicaID, req.ReplicaState.ID, req.MaxWaitMillis, req.MaxBytes = replicaID, replicaID, 10, 1<<20
			for _, n := range []string{"a", "b"} {
				ft := kmsg.NewFetchRequestTopic()
				ft.Topic, ft.TopicID = n, topicIDs[n]
				fp := kmsg.NewFetchRequestTopicPartition()
				fp.PartitionMaxBytes = 1 << 20
				ft.Partitions = append(ft.Partitions, fp)
				req.Topics = append(req.Topics, ft)
			}
			return rawRequest[*kmsg.FetchResponse](t, cl, req)
		}
		resp := fetch(-1)
		codeOf(t, "consumer fetch of a", resp.Topics[0].Partitions[0].ErrorCode, nil)
		if len(resp.Topics[0].Partitions[0].RecordBatches) == 0 {
			t.Error("consumer fetch of a: no records")
		}
		codeOf(t, "consumer fetch of b", resp.Topics[1].Partitions[0].ErrorCode, kerr.TopicAuthorizationFailed)
		resp = fetch(2)
		codeOf(t, "follower fetch without CLUSTER_ACTION", resp.Topics[0].Partitions[0].ErrorCode, kerr.TopicAuthorizationFailed)
	})

	t.Run("ListOffsets", func(t *testing.T) {
		fa.only(topicGrant(kmsg.ACLOperationDescribe, "a"))
		req := kmsg.NewPtrListOffsetsRequest()
		req.ReplicaID = -1
		for _, n := range []string{"a", "b"} {
			lt := kmsg.NewListOffsetsRequestTopic()
			lt.Topic = n
			lp := kmsg.NewListOffsetsRequestTopicPartition()
			lp.Timestamp = -1
			lt.Partitions = append(lt.Partitions, lp)
			req.Topics = append(req.Topics, lt)
		}
		resp := rawRequest[*kmsg.ListOffsetsResponse](t, cl, req)
		codeOf(t, "a", resp.Topics[0].Partitions[0].ErrorCode, nil)
		codeOf(t, "b", resp.Topics[1].Partitions[0].ErrorCode, kerr.TopicAuthorizationFailed)
	})
}
