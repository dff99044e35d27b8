package server

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

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

func findCoordinator(keyType int8, key string) *kmsg.FindCoordinatorRequest {
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorType, req.CoordinatorKey, req.CoordinatorKeys = keyType, key, []string{key}
	return req
}

func TestAuthzGroups(t *testing.T) {
	ts, fa := startAuthzServer(t)
	ctx := ctxT(t)
	cl := ts.client()
	// The offsets topic and its coordinator, while everything is allowed.
	fc := findCoordinator(0, "g")
	fcCode := func(req *kmsg.FindCoordinatorRequest) int16 {
		return rawRequest[*kmsg.FindCoordinatorResponse](t, cl, req).Coordinators[0].ErrorCode
	}
	commit := func() *kmsg.OffsetCommitResponse {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Group, req.Generation = "g", -1
		for _, n := range []string{"a", "b"} {
			ct := kmsg.NewOffsetCommitRequestTopic()
			ct.Topic = n
			cp := kmsg.NewOffsetCommitRequestTopicPartition()
			cp.Offset = 1
			ct.Partitions = append(ct.Partitions, cp)
			req.Topics = append(req.Topics, ct)
		}
		return rawRequest[*kmsg.OffsetCommitResponse](t, cl, req)
	}
	for fcCode(fc) != 0 || commit().Topics[1].Partitions[0].ErrorCode != 0 { // both committed while open
		if ctx.Err() != nil {
			t.Fatal("no group coordinator")
		}
		time.Sleep(20 * time.Millisecond)
	}

	t.Run("FindCoordinator", func(t *testing.T) {
		fa.only(groupGrant(kmsg.ACLOperationDescribe, "g"))
		codeOf(t, "group with DESCRIBE", fcCode(fc), nil)
		codeOf(t, "group without DESCRIBE", fcCode(findCoordinator(0, "other")), kerr.GroupAuthorizationFailed)
		codeOf(t, "txn id without DESCRIBE", fcCode(findCoordinator(1, "other")), kerr.TransactionalIDAuthorizationFailed)
	})

	t.Run("Membership", func(t *testing.T) {
		fa.only(groupGrant(kmsg.ACLOperationDescribe, "g"))
		join := kmsg.NewPtrJoinGroupRequest()
		join.Group, join.ProtocolType, join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = "g", "consumer", 10000, 10000
		join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{}}}
		codeOf(t, "JoinGroup", rawRequest[*kmsg.JoinGroupResponse](t, cl, join).ErrorCode, kerr.GroupAuthorizationFailed)
		sync := kmsg.NewPtrSyncGroupRequest()
		sync.Group, sync.MemberID = "g", "m"
		codeOf(t, "SyncGroup", rawRequest[*kmsg.SyncGroupResponse](t, cl, sync).ErrorCode, kerr.GroupAuthorizationFailed)
		hb := kmsg.NewPtrHeartbeatRequest()
		hb.Group, hb.MemberID = "g", "m"
		codeOf(t, "Heartbeat", rawRequest[*kmsg.HeartbeatResponse](t, cl, hb).ErrorCode, kerr.GroupAuthorizationFailed)
		leave := kmsg.NewPtrLeaveGroupRequest()
		leave.Group = "g"
		leave.Members = []kmsg.LeaveGroupRequestMember{{MemberID: "m"}}
		codeOf(t, "LeaveGroup", rawRequest[*kmsg.LeaveGroupResponse](t, cl, leave).ErrorCode, kerr.GroupAuthorizationFailed)
		cg := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		cg.Group, cg.MemberEpoch, cg.RebalanceTimeoutMillis = "g2", 0, 10000
		cg.SubscribedTopicNames = []string{"a", "b"}
		codeOf(t, "ConsumerGroupHeartbeat without READ", rawRequest[*kmsg.ConsumerGroupHeartbeatResponse](t, cl, cg).ErrorCode, kerr.GroupAuthorizationFailed)
		fa.only(groupGrant(kmsg.ACLOperationRead, "g2"), topicGrant(kmsg.ACLOperationDescribe, "a"))
		codeOf(t, "ConsumerGroupHeartbeat subscribing to b", rawRequest[*kmsg.ConsumerGroupHeartbeatResponse](t, cl, cg).ErrorCode, kerr.TopicAuthorizationFailed)
	})

	t.Run("Offsets", func(t *testing.T) {
		fa.only()
		codeOf(t, "commit without READ on the group", commit().Topics[0].Partitions[0].ErrorCode, kerr.GroupAuthorizationFailed)
		fa.only(groupGrant(kmsg.ACLOperationRead, "g"), topicGrant(kmsg.ACLOperationRead, "a"))
		resp := commit()
		codeOf(t, "commit a", resp.Topics[0].Partitions[0].ErrorCode, nil)
		codeOf(t, "commit b", resp.Topics[1].Partitions[0].ErrorCode, kerr.TopicAuthorizationFailed)

		fetch := func(topics ...string) *kmsg.OffsetFetchResponse {
			req := kmsg.NewPtrOffsetFetchRequest()
			g := kmsg.NewOffsetFetchRequestGroup()
			g.Group = "g"
			if topics != nil {
				for _, n := range topics {
					g.Topics = append(g.Topics, kmsg.OffsetFetchRequestGroupTopic{Topic: n, Partitions: []int32{0}})
				}
			}
			req.Groups = append(req.Groups, g)
			return rawRequest[*kmsg.OffsetFetchResponse](t, cl, req)
		}
		codeOf(t, "offset fetch without DESCRIBE on the group", fetch().Groups[0].ErrorCode, kerr.GroupAuthorizationFailed)
		fa.only(groupGrant(kmsg.ACLOperationDescribe, "g"), topicGrant(kmsg.ACLOperationDescribe, "a"))
		of := fetch("a", "b")
		codeOf(t, "offset fetch a", of.Groups[0].Topics[0].Partitions[0].ErrorCode, nil)
		codeOf(t, "offset fetch b", of.Groups[0].Topics[1].Partitions[0].ErrorCode, kerr.TopicAuthorizationFailed)
		if all := fetch(); len(all.Groups[0].Topics) != 1 || all.Groups[0].Topics[0].Topic != "a" {
			t.Errorf("offset fetch of all topics: %+v, want only a", all.Groups[0].Topics)
		}

		del := kmsg.NewPtrOffsetDeleteRequest()
		del.Group = "g"
		for _, n := range []string{"a", "b"} {
			del.Topics = append(del.Topics, kmsg.OffsetDeleteRequestTopic{Topic: n, Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}})
		}
		codeOf(t, "offset delete without DELETE", rawRequest[*kmsg.OffsetDeleteResponse](t, cl, del).ErrorCode, kerr.GroupAuthorizationFailed)
		fa.only(groupGrant(kmsg.ACLOperationDelete, "g"), topicGrant(kmsg.ACLOperationRead, "a"))
		od := rawRequest[*kmsg.OffsetDeleteResponse](t, cl, del)
		codeOf(t, "offset delete", od.ErrorCode, nil)
		for _, rt := range od.Topics {
			want := kerr.TopicAuthorizationFailed
			if rt.Topic == "a" {
				want = nil
			}
			codeOf(t, "offset delete "+rt.Topic, rt.Partitions[0].ErrorCode, want)
		}
	})

	t.Run("Admin", func(t *testing.T) {
		fa.only()
		dg := kmsg.NewPtrDescribeGroupsRequest()
		dg.Groups = []string{"g"}
		codeOf(t, "DescribeGroups", rawRequest[*kmsg.DescribeGroupsResponse](t, cl, dg).Groups[0].ErrorCode, kerr.GroupAuthorizationFailed)
		cgd := kmsg.NewPtrConsumerGroupDescribeRequest()
		cgd.Groups = []string{"g"}
		codeOf(t, "ConsumerGroupDescribe", rawRequest[*kmsg.ConsumerGroupDescribeResponse](t, cl, cgd).Groups[0].ErrorCode, kerr.GroupAuthorizationFailed)
		if lg := rawRequest[*kmsg.ListGroupsResponse](t, cl, kmsg.NewPtrListGroupsRequest()); len(lg.Groups) != 0 {
			t.Errorf("ListGroups without DESCRIBE: %+v", lg.Groups)
		}
		fa.only(groupGrant(kmsg.ACLOperationDescribe, "g"))
		if lg := rawRequest[*kmsg.ListGroupsResponse](t, cl, kmsg.NewPtrListGroupsRequest()); len(lg.Groups) != 1 {
			t.Errorf("ListGroups with DESCRIBE on g: %+v", lg.Groups)
		}
		codeOf(t, "DescribeGroups with DESCRIBE", rawRequest[*kmsg.DescribeGroupsResponse](t, cl, dg).Groups[0].ErrorCode, nil)
		del := kmsg.NewPtrDeleteGroupsRequest()
		del.Groups = []string{"g"}
		codeOf(t, "DeleteGroups", rawRequest[*kmsg.DeleteGroupsResponse](t, cl, del).Groups[0].ErrorCode, kerr.GroupAuthorizationFailed)
		fa.only(groupGrant(kmsg.ACLOperationDelete, "g"))
		codeOf(t, "DeleteGroups with DELETE", rawRequest[*kmsg.DeleteGroupsResponse](t, cl, del).Groups[0].ErrorCode, nil)
	})
}

func TestAuthzTransactions(t *testing.T) {
	ts, fa := startAuthzServer(t)
	cl := ts.client()
	rawRequest[*kmsg.MetadataResponse](t, cl, kmsg.NewPtrMetadataRequest()) // kgo learns broker 1
	fa.only(topicGrant(kmsg.ACLOperationDescribe, "a"))

	initPID := func(txnID *string) int16 {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionalID, req.TransactionTimeoutMillis = txnID, 10000
		return rawRequest[*kmsg.InitProducerIDResponse](t, cl, req).ErrorCode
	}
	codeOf(t, "InitProducerId, transactional, no WRITE", initPID(kmsg.StringPtr("tx")), kerr.TransactionalIDAuthorizationFailed)
	codeOf(t, "InitProducerId, idempotent, nothing granted", initPID(nil), kerr.ClusterAuthorizationFailed)
	fa.only(clusterGrant(kmsg.ACLOperationIdempotentWrite))
	codeOf(t, "InitProducerId with IDEMPOTENT_WRITE", initPID(nil), nil)
	fa.only(topicGrant(kmsg.ACLOperationWrite, "a"))
	codeOf(t, "InitProducerId with WRITE on a topic", initPID(nil), nil)

	fa.only(topicGrant(kmsg.ACLOperationWrite, "a"))
	produce := kmsg.NewPtrProduceRequest()
	produce.TransactionID, produce.Acks, produce.TimeoutMillis = kmsg.StringPtr("tx"), -1, 1000
	produce.Topics = []kmsg.ProduceRequestTopic{{Topic: "a", Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: 0}}}}
	codeOf(t, "transactional Produce without WRITE on the id",
		rawRequest[*kmsg.ProduceResponse](t, cl, produce).Topics[0].Partitions[0].ErrorCode, kerr.TransactionalIDAuthorizationFailed)

	end := kmsg.NewPtrEndTxnRequest()
	end.TransactionalID = "tx"
	codeOf(t, "EndTxn", rawRequest[*kmsg.EndTxnResponse](t, cl, end).ErrorCode, kerr.TransactionalIDAuthorizationFailed)
	addOffsets := kmsg.NewPtrAddOffsetsToTxnRequest()
	addOffsets.TransactionalID, addOffsets.Group = "tx", "g"
	codeOf(t, "AddOffsetsToTxn without WRITE", rawRequest[*kmsg.AddOffsetsToTxnResponse](t, cl, addOffsets).ErrorCode, kerr.TransactionalIDAuthorizationFailed)
	fa.only(txnGrant(kmsg.ACLOperationWrite, "tx"))
	codeOf(t, "AddOffsetsToTxn without READ on the group", rawRequest[*kmsg.AddOffsetsToTxnResponse](t, cl, addOffsets).ErrorCode, kerr.GroupAuthorizationFailed)

	addParts := kmsg.NewPtrAddPartitionsToTxnRequest()
	addParts.Version = 3
	addParts.TransactionalID = "tx"
	addParts.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: "a", Partitions: []int32{0}}, {Topic: "b", Partitions: []int32{0}}}
	fa.only(txnGrant(kmsg.ACLOperationWrite, "tx"), topicGrant(kmsg.ACLOperationWrite, "a"))
	codeOf(t, "AddPartitionsToTxn v4+ without CLUSTER_ACTION", rawRequest[*kmsg.AddPartitionsToTxnResponse](t, cl, addParts).ErrorCode, kerr.ClusterAuthorizationFailed)
	cl35 := ts.client(kgo.MaxVersions(kversion.V3_5_0())) // AddPartitionsToTxn v3: a producer's
	rawRequest[*kmsg.MetadataResponse](t, cl35, kmsg.NewPtrMetadataRequest())
	ap := rawRequest[*kmsg.AddPartitionsToTxnResponse](t, cl35, addParts)
	codeOf(t, "AddPartitionsToTxn a", ap.Topics[0].Partitions[0].ErrorCode, kerr.OperationNotAttempted)
	codeOf(t, "AddPartitionsToTxn b", ap.Topics[1].Partitions[0].ErrorCode, kerr.TopicAuthorizationFailed)

	txnCommit := kmsg.NewPtrTxnOffsetCommitRequest()
	txnCommit.TransactionalID, txnCommit.Group = "tx", "g"
	txnCommit.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: "a", Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1}}}}
	codeOf(t, "TxnOffsetCommit without READ on the group",
		rawRequest[*kmsg.TxnOffsetCommitResponse](t, cl, txnCommit).Topics[0].Partitions[0].ErrorCode, kerr.GroupAuthorizationFailed)

	markers := kmsg.NewPtrWriteTxnMarkersRequest()
	markers.Markers = []kmsg.WriteTxnMarkersRequestMarker{{ProducerID: 1, Topics: []kmsg.WriteTxnMarkersRequestMarkerTopic{{Topic: "a", Partitions: []int32{0}}}}}
	codeOf(t, "WriteTxnMarkers", rawRequest[*kmsg.WriteTxnMarkersResponse](t, cl, markers).Markers[0].Topics[0].Partitions[0].ErrorCode, kerr.ClusterAuthorizationFailed)

	dt := kmsg.NewPtrDescribeTransactionsRequest()
	dt.TransactionalIDs = []string{"tx"}
	codeOf(t, "DescribeTransactions", rawRequest[*kmsg.DescribeTransactionsResponse](t, cl, dt).TransactionStates[0].ErrorCode, kerr.TransactionalIDAuthorizationFailed)

	dp := kmsg.NewPtrDescribeProducersRequest()
	dp.Topics = []kmsg.DescribeProducersRequestTopic{{Topic: "a", Partitions: []int32{0}}}
	codeOf(t, "DescribeProducers", rawRequest[*kmsg.DescribeProducersResponse](t, cl, dp).Topics[0].Partitions[0].ErrorCode, kerr.TopicAuthorizationFailed)
	fa.only(topicGrant(kmsg.ACLOperationRead, "a"))
	codeOf(t, "DescribeProducers with READ", rawRequest[*kmsg.DescribeProducersResponse](t, cl, dp).Topics[0].Partitions[0].ErrorCode, nil)

	ofle := kmsg.NewPtrOffsetForLeaderEpochRequest()
	ofle.ReplicaID = -1
	ofle.Topics = []kmsg.OffsetForLeaderEpochRequestTopic{{Topic: "a", Partitions: []kmsg.OffsetForLeaderEpochRequestTopicPartition{{Partition: 0, CurrentLeaderEpoch: -1, LeaderEpoch: 0}}}}
	codeOf(t, "OffsetForLeaderEpoch without DESCRIBE", rawRequest[*kmsg.OffsetForLeaderEpochResponse](t, cl, ofle).Topics[0].Partitions[0].ErrorCode, kerr.TopicAuthorizationFailed)
	ofle.ReplicaID = 2
	codeOf(t, "OffsetForLeaderEpoch from a follower", rawRequest[*kmsg.OffsetForLeaderEpochResponse](t, cl, ofle).Topics[0].Partitions[0].ErrorCode, kerr.ClusterAuthorizationFailed)
}

func TestAuthzClusterAndNodeToNode(t *testing.T) {
	ts, fa := startAuthzServer(t)
	cl := ts.client()
	rawRequest[*kmsg.MetadataResponse](t, cl, kmsg.NewPtrMetadataRequest())
	fa.only()
	codeOf(t, "DescribeLogDirs", rawRequest[*kmsg.DescribeLogDirsResponse](t, cl, kmsg.NewPtrDescribeLogDirsRequest()).ErrorCode, kerr.ClusterAuthorizationFailed)
	codeOf(t, "DescribeUserScramCredentials", rawRequest[*kmsg.DescribeUserSCRAMCredentialsResponse](t, cl, kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()).ErrorCode, kerr.ClusterAuthorizationFailed)
	codeOf(t, "ListPartitionReassignments", rawRequest[*kmsg.ListPartitionReassignmentsResponse](t, cl, kmsg.NewPtrListPartitionReassignmentsRequest()).ErrorCode, kerr.ClusterAuthorizationFailed)
	codeOf(t, "AlterPartitionReassignments", rawRequest[*kmsg.AlterPartitionAssignmentsResponse](t, cl, kmsg.NewPtrAlterPartitionAssignmentsRequest()).ErrorCode, kerr.ClusterAuthorizationFailed)
	codeOf(t, "ElectLeaders", rawRequest[*kmsg.ElectLeadersResponse](t, cl, kmsg.NewPtrElectLeadersRequest()).ErrorCode, kerr.ClusterAuthorizationFailed)
	unregister := kmsg.NewPtrUnregisterBrokerRequest()
	unregister.BrokerID = 7
	codeOf(t, "UnregisterBroker", rawRequest[*kmsg.UnregisterBrokerResponse](t, cl, unregister).ErrorCode, kerr.ClusterAuthorizationFailed)
	codeOf(t, "DescribeQuorum", rawRequest[*kmsg.DescribeQuorumResponse](t, cl, kmsg.NewPtrDescribeQuorumRequest()).ErrorCode, kerr.ClusterAuthorizationFailed)

	scram := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	scram.Deletions = []kmsg.AlterUserSCRAMCredentialsRequestDeletion{{Name: "alice", Mechanism: 1}}
	codeOf(t, "AlterUserScramCredentials", rawRequest[*kmsg.AlterUserSCRAMCredentialsResponse](t, cl, scram).Results[0].ErrorCode, kerr.ClusterAuthorizationFailed)
	features := kmsg.NewPtrUpdateFeaturesRequest()
	features.ValidateOnly = true
	fu := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
	fu.Feature, fu.MaxVersionLevel, fu.UpgradeType = "share.version", 1, 1
	features.FeatureUpdates = append(features.FeatureUpdates, fu)
	codeOf(t, "UpdateFeatures", rawRequest[*kmsg.UpdateFeaturesResponse](t, cl, features).ErrorCode, kerr.ClusterAuthorizationFailed)
	// Authorized at the broker, forwarded to the controller without the
	// client's principal, and served there.
	fa.only(clusterGrant(kmsg.ACLOperationAlter), clusterGrant(kmsg.ACLOperationDescribe))
	codeOf(t, "AlterUserScramCredentials with ALTER", rawRequest[*kmsg.AlterUserSCRAMCredentialsResponse](t, cl, scram).Results[0].ErrorCode, kerr.ResourceNotFound)
	codeOf(t, "ListPartitionReassignments with DESCRIBE", rawRequest[*kmsg.ListPartitionReassignmentsResponse](t, cl, kmsg.NewPtrListPartitionReassignmentsRequest()).ErrorCode, nil)
	if r := rawRequest[*kmsg.UpdateFeaturesResponse](t, cl, features); r.ErrorCode != 0 {
		t.Errorf("UpdateFeatures with ALTER: %v %s", kerr.ErrorForCode(r.ErrorCode), *r.ErrorMessage)
	}
	codeOf(t, "UnregisterBroker with ALTER (forwarded, served)", rawRequest[*kmsg.UnregisterBrokerResponse](t, cl, unregister).ErrorCode, kerr.BrokerIDNotRegistered)

	// Node-to-node requests on the controller listener.
	ctrl, err := kgo.NewClient(kgo.SeedBrokers(ts.srv.Addr("CONTROLLER").String()))
	if err != nil {
		t.Fatal(err)
	}
	defer ctrl.Close()
	seed := func(req kmsg.Request) kmsg.Response {
		resp, err := ctrl.SeedBrokers()[0].Request(ctxT(t), req)
		if err != nil {
			t.Fatalf("%s: %v", kmsg.NameForKey(req.Key()), err)
		}
		return resp
	}
	fa.only()
	hb := kmsg.NewPtrBrokerHeartbeatRequest()
	hb.BrokerID = 1
	codeOf(t, "BrokerHeartbeat", seed(hb).(*kmsg.BrokerHeartbeatResponse).ErrorCode, kerr.ClusterAuthorizationFailed)
	ap := kmsg.NewPtrAllocateProducerIDsRequest()
	codeOf(t, "AllocateProducerIds", seed(ap).(*kmsg.AllocateProducerIDsResponse).ErrorCode, kerr.ClusterAuthorizationFailed)
	alter := kmsg.NewPtrAlterPartitionRequest()
	codeOf(t, "AlterPartition", seed(alter).(*kmsg.AlterPartitionResponse).ErrorCode, kerr.ClusterAuthorizationFailed)
	// Admin requests on the controller listener (KIP-919) need the
	// client's own permission, or CLUSTER_ACTION (a broker forwarding).
	codeOf(t, "DescribeQuorum at the controller", seed(kmsg.NewPtrDescribeQuorumRequest()).(*kmsg.DescribeQuorumResponse).ErrorCode, kerr.ClusterAuthorizationFailed)
	codeOf(t, "UpdateFeatures at the controller", seed(features).(*kmsg.UpdateFeaturesResponse).ErrorCode, kerr.ClusterAuthorizationFailed)
	fa.only(clusterGrant(kmsg.ACLOperationClusterAction))
	codeOf(t, "DescribeQuorum forwarded by a broker", seed(kmsg.NewPtrDescribeQuorumRequest()).(*kmsg.DescribeQuorumResponse).ErrorCode, nil)
}

func TestAuthzTopicAdmin(t *testing.T) {
	ts, fa := startAuthzServer(t)
	cl := ts.client()
	rawRequest[*kmsg.MetadataResponse](t, cl, kmsg.NewPtrMetadataRequest())

	t.Run("CreateTopics", func(t *testing.T) {
		create := func(names ...string) *kmsg.CreateTopicsResponse {
			req := kmsg.NewPtrCreateTopicsRequest()
			req.TimeoutMillis = 10000
			for _, n := range names {
				ct := kmsg.NewCreateTopicsRequestTopic()
				ct.Topic, ct.NumPartitions, ct.ReplicationFactor = n, 1, 1
				req.Topics = append(req.Topics, ct)
			}
			return rawRequest[*kmsg.CreateTopicsResponse](t, cl, req)
		}
		fa.only()
		resp := create("c1")
		codeOf(t, "without CREATE", resp.Topics[0].ErrorCode, kerr.TopicAuthorizationFailed)
		fa.only(topicGrant(kmsg.ACLOperationCreate, "c1"))
		resp = create("c1", "c2")
		for _, rt := range resp.Topics {
			switch rt.Topic {
			case "c1":
				codeOf(t, "with CREATE on c1", rt.ErrorCode, nil)
				codeOf(t, "c1's configs without DESCRIBE_CONFIGS", rt.ConfigErrorCode, kerr.TopicAuthorizationFailed)
				if len(rt.Configs) != 0 || rt.NumPartitions != -1 {
					t.Errorf("c1 without DESCRIBE_CONFIGS: %d configs, %d partitions", len(rt.Configs), rt.NumPartitions)
				}
			case "c2":
				codeOf(t, "c2 without CREATE", rt.ErrorCode, kerr.TopicAuthorizationFailed)
			}
		}
		fa.only(clusterGrant(kmsg.ACLOperationCreate), topicGrant(kmsg.ACLOperationDescribeConfigs, "c2"))
		rt := create("c2").Topics[0]
		codeOf(t, "with CREATE on the cluster", rt.ErrorCode, nil)
		codeOf(t, "c2's configs with DESCRIBE_CONFIGS", rt.ConfigErrorCode, nil)
		if len(rt.Configs) == 0 || rt.NumPartitions != 1 {
			t.Errorf("c2 with DESCRIBE_CONFIGS: %d configs, %d partitions", len(rt.Configs), rt.NumPartitions)
		}
	})
	t.Run("DeleteTopics", func(t *testing.T) {
		fa.openAll()
		if _, err := ts.admin().CreateTopics(ctxT(t), 1, 1, nil, "d1"); err != nil {
			t.Fatal(err)
		}
		var d1 [16]byte
		for _, mt := range rawRequest[*kmsg.MetadataResponse](t, cl, kmsg.NewPtrMetadataRequest()).Topics {
			if *mt.Topic == "d1" {
				d1 = mt.TopicID
			}
		}
		del := func(name string, id [16]byte) kmsg.DeleteTopicsResponseTopic {
			req := kmsg.NewPtrDeleteTopicsRequest()
			dt := kmsg.NewDeleteTopicsRequestTopic()
			if name != "" {
				dt.Topic = kmsg.StringPtr(name)
			}
			dt.TopicID = id
			req.Topics, req.TopicNames, req.TimeoutMillis = []kmsg.DeleteTopicsRequestTopic{dt}, []string{name}, 10000
			return rawRequest[*kmsg.DeleteTopicsResponse](t, cl, req).Topics[0]
		}
		fa.only()
		codeOf(t, "existing, without DESCRIBE", del("d1", [16]byte{}).ErrorCode, kerr.TopicAuthorizationFailed)
		codeOf(t, "missing, without DESCRIBE", del("missing", [16]byte{}).ErrorCode, kerr.TopicAuthorizationFailed)
		byID := del("", d1)
		codeOf(t, "by id, without DESCRIBE", byID.ErrorCode, kerr.TopicAuthorizationFailed)
		if byID.Topic != nil {
			t.Errorf("by id, without DESCRIBE: name %q answered", *byID.Topic)
		}
		codeOf(t, "unknown id", del("", [16]byte{1}).ErrorCode, kerr.UnknownTopicID)
		fa.only(topicGrant(kmsg.ACLOperationDescribe, "d1"), topicGrant(kmsg.ACLOperationDescribe, "missing"))
		codeOf(t, "missing, with DESCRIBE", del("missing", [16]byte{}).ErrorCode, kerr.UnknownTopicOrPartition)
		codeOf(t, "existing, without DELETE", del("d1", [16]byte{}).ErrorCode, kerr.TopicAuthorizationFailed)
		if byID = del("", d1); byID.Topic == nil || *byID.Topic != "d1" {
			t.Errorf("by id, with DESCRIBE: name %v, want d1", byID.Topic)
		}
		codeOf(t, "by id, without DELETE", byID.ErrorCode, kerr.TopicAuthorizationFailed)
		fa.only(topicGrant(kmsg.ACLOperationDescribe, "d1"), topicGrant(kmsg.ACLOperationDelete, "d1"))
		codeOf(t, "by id, with DELETE", del("", d1).ErrorCode, nil)
	})
	t.Run("CreatePartitions", func(t *testing.T) {
		req := kmsg.NewPtrCreatePartitionsRequest()
		req.TimeoutMillis = 10000
		req.Topics = []kmsg.CreatePartitionsRequestTopic{{Topic: "a", Count: 2}}
		fa.only(topicGrant(kmsg.ACLOperationAlter, "b"))
		codeOf(t, "without ALTER", rawRequest[*kmsg.CreatePartitionsResponse](t, cl, req).Topics[0].ErrorCode, kerr.TopicAuthorizationFailed)
		fa.only(topicGrant(kmsg.ACLOperationAlter, "a"))
		codeOf(t, "with ALTER", rawRequest[*kmsg.CreatePartitionsResponse](t, cl, req).Topics[0].ErrorCode, nil)
	})

	t.Run("DeleteRecords", func(t *testing.T) {
		req := kmsg.NewPtrDeleteRecordsRequest()
		req.TimeoutMillis = 10000
		req.Topics = []kmsg.DeleteRecordsRequestTopic{{Topic: "b", Partitions: []kmsg.DeleteRecordsRequestTopicPartition{{Partition: 0, Offset: 0}}}}
		fa.only(topicGrant(kmsg.ACLOperationDescribe, "b"))
		codeOf(t, "without DELETE", rawRequest[*kmsg.DeleteRecordsResponse](t, cl, req).Topics[0].Partitions[0].ErrorCode, kerr.TopicAuthorizationFailed)
		fa.only(topicGrant(kmsg.ACLOperationDelete, "b"))
		codeOf(t, "with DELETE", rawRequest[*kmsg.DeleteRecordsResponse](t, cl, req).Topics[0].Partitions[0].ErrorCode, nil)
	})
	t.Run("Configs", func(t *testing.T) {
		describe := func() *kmsg.DescribeConfigsResponse {
			req := kmsg.NewPtrDescribeConfigsRequest()
			req.Resources = []kmsg.DescribeConfigsRequestResource{
				{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: "a"},
				{ResourceType: kmsg.ConfigResourceTypeBroker, ResourceName: "1"},
			}
			return rawRequest[*kmsg.DescribeConfigsResponse](t, cl, req)
		}
		value := kmsg.StringPtr("3600000")
		alter := kmsg.NewPtrAlterConfigsRequest()
		alter.Resources = []kmsg.AlterConfigsRequestResource{
			{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: "a", Configs: []kmsg.AlterConfigsRequestResourceConfig{{Name: "retention.ms", Value: value}}},
			// The legacy set keeps the cluster-level min.insync.replicas
			// that eligible leader replicas need.
			{ResourceType: kmsg.ConfigResourceTypeBroker, ResourceName: "", Configs: []kmsg.AlterConfigsRequestResourceConfig{{Name: "log.retention.ms", Value: value}, {Name: "min.insync.replicas", Value: kmsg.StringPtr("1")}}},
		}
		incremental := kmsg.NewPtrIncrementalAlterConfigsRequest()
		incremental.Resources = []kmsg.IncrementalAlterConfigsRequestResource{
			{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: "a", Configs: []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "retention.ms", Value: value}}},
			{ResourceType: kmsg.ConfigResourceTypeBroker, ResourceName: "", Configs: []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "log.retention.ms", Value: value}}},
		}
		codes := func(what string, got map[kmsg.ConfigResourceType]int16, topic, broker *kerr.Error) {
			t.Helper()
			codeOf(t, what+" topic", got[kmsg.ConfigResourceTypeTopic], topic)
			codeOf(t, what+" broker", got[kmsg.ConfigResourceTypeBroker], broker)
		}
		run := func() (d, a, i map[kmsg.ConfigResourceType]int16) {
			d, a, i = map[kmsg.ConfigResourceType]int16{}, map[kmsg.ConfigResourceType]int16{}, map[kmsg.ConfigResourceType]int16{}
			for _, r := range describe().Resources {
				d[r.ResourceType] = r.ErrorCode
			}
			for _, r := range rawRequest[*kmsg.AlterConfigsResponse](t, cl, alter).Resources {
				a[r.ResourceType] = r.ErrorCode
			}
			for _, r := range rawRequest[*kmsg.IncrementalAlterConfigsResponse](t, cl, incremental).Resources {
				i[r.ResourceType] = r.ErrorCode
			}
			return d, a, i
		}
		fa.only(topicGrant(kmsg.ACLOperationDescribe, "a"), clusterGrant(kmsg.ACLOperationDescribe))
		d, a, i := run()
		codes("DescribeConfigs without DESCRIBE_CONFIGS", d, kerr.TopicAuthorizationFailed, kerr.ClusterAuthorizationFailed)
		codes("AlterConfigs without ALTER_CONFIGS", a, kerr.TopicAuthorizationFailed, kerr.ClusterAuthorizationFailed)
		codes("IncrementalAlterConfigs without ALTER_CONFIGS", i, kerr.TopicAuthorizationFailed, kerr.ClusterAuthorizationFailed)
		fa.only(topicGrant(kmsg.ACLOperationDescribeConfigs, "a"), clusterGrant(kmsg.ACLOperationDescribeConfigs),
			topicGrant(kmsg.ACLOperationAlterConfigs, "a"), clusterGrant(kmsg.ACLOperationAlterConfigs))
		d, a, i = run()
		codes("DescribeConfigs with DESCRIBE_CONFIGS", d, nil, nil)
		codes("AlterConfigs with ALTER_CONFIGS", a, nil, nil)
		codes("IncrementalAlterConfigs with ALTER_CONFIGS", i, nil, nil)
	})

	t.Run("ControllerListener", func(t *testing.T) {
		ctrl, err := kgo.NewClient(kgo.SeedBrokers(ts.srv.Addr("CONTROLLER").String()))
		if err != nil {
			t.Fatal(err)
		}
		defer ctrl.Close()
		seed := func(req kmsg.Request) kmsg.Response {
			resp, err := ctrl.SeedBrokers()[0].Request(ctxT(t), req)
			if err != nil {
				t.Fatalf("%s: %v", kmsg.NameForKey(req.Key()), err)
			}
			return resp
		}
		req := kmsg.NewPtrCreatePartitionsRequest()
		req.TimeoutMillis, req.ValidateOnly = 10000, true
		req.Topics = []kmsg.CreatePartitionsRequestTopic{{Topic: "b", Count: 2}}
		fa.only()
		codeOf(t, "CreatePartitions at the controller", seed(req).(*kmsg.CreatePartitionsResponse).Topics[0].ErrorCode, kerr.TopicAuthorizationFailed)
		fa.only(clusterGrant(kmsg.ACLOperationClusterAction))
		codeOf(t, "CreatePartitions forwarded by a broker", seed(req).(*kmsg.CreatePartitionsResponse).Topics[0].ErrorCode, nil)
	})
	t.Run("DescribeTopicPartitions", func(t *testing.T) {
		fa.only(topicGrant(kmsg.ACLOperationDescribe, "a"))
		all := rawRequest[*kmsg.DescribeTopicPartitionsResponse](t, cl, kmsg.NewPtrDescribeTopicPartitionsRequest())
		if len(all.Topics) != 1 || *all.Topics[0].Topic != "a" {
			t.Errorf("all topics: %d topics, want only a", len(all.Topics))
		}
		req := kmsg.NewPtrDescribeTopicPartitionsRequest()
		req.Topics = []kmsg.DescribeTopicPartitionsRequestTopic{{Topic: "a"}, {Topic: "b"}, {Topic: "missing"}}
		resp := rawRequest[*kmsg.DescribeTopicPartitionsResponse](t, cl, req)
		want := map[string]*kerr.Error{"a": nil, "b": kerr.TopicAuthorizationFailed, "missing": kerr.TopicAuthorizationFailed}
		for _, rt := range resp.Topics {
			codeOf(t, *rt.Topic, rt.ErrorCode, want[*rt.Topic])
		}
	})

	t.Run("DescribeCluster", func(t *testing.T) {
		req := kmsg.NewPtrDescribeClusterRequest()
		req.IncludeClusterAuthorizedOperations = true
		fa.only(clusterGrant(kmsg.ACLOperationAlter))
		resp := rawRequest[*kmsg.DescribeClusterResponse](t, cl, req)
		codeOf(t, "without DESCRIBE", resp.ErrorCode, nil)
		if resp.ClusterAuthorizedOperations != 0 || len(resp.Brokers) == 0 {
			t.Errorf("without DESCRIBE: operations %b, %d brokers", resp.ClusterAuthorizedOperations, len(resp.Brokers))
		}
		fa.only(clusterGrant(kmsg.ACLOperationAlter), clusterGrant(kmsg.ACLOperationDescribe))
		if ops := rawRequest[*kmsg.DescribeClusterResponse](t, cl, req).ClusterAuthorizedOperations; ops != 1<<kmsg.ACLOperationAlter|1<<kmsg.ACLOperationDescribe {
			t.Errorf("with DESCRIBE and ALTER: operations %b", ops)
		}
		req.IncludeClusterAuthorizedOperations = false
		if ops := rawRequest[*kmsg.DescribeClusterResponse](t, cl, req).ClusterAuthorizedOperations; ops != -2147483648 {
			t.Errorf("not asked: operations %d", ops)
		}
	})
}
