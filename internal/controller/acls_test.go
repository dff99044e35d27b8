package controller

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/metadata"
)

func creation(rt kmsg.ACLResourceType, name string, pt kmsg.ACLResourcePatternType, principal string, op kmsg.ACLOperation, perm kmsg.ACLPermissionType) kmsg.CreateACLsRequestCreation {
	c := kmsg.NewCreateACLsRequestCreation()
	c.ResourceType, c.ResourceName, c.ResourcePatternType = rt, name, pt
	c.Principal, c.Host, c.Operation, c.PermissionType = principal, "*", op, perm
	return c
}

// sequentialIDs returns ids 1, 2, 3... in their last byte, and 1 again
// after n, to test that used ids are skipped.
func sequentialIDs(n byte) func() [16]byte {
	var i byte
	return func() [16]byte {
		i = i%n + 1
		return [16]byte{15: i}
	}
}

func applyACLRecords(t *testing.T, img *metadata.Image, recs []metadata.Record) *metadata.Image {
	t.Helper()
	d := metadata.NewDelta(img)
	if len(recs) == 0 {
		return img
	}
	if err := d.ReplayBatch(metadata.Batch{BaseOffset: img.Offset + 1, LastOffset: img.Offset + int64(len(recs)), Records: recs}); err != nil {
		t.Fatal(err)
	}
	return d.Apply()
}

func TestCreateAcls(t *testing.T) {
	const (
		topic   = kmsg.ACLResourceTypeTopic
		literal = kmsg.ACLResourcePatternTypeLiteral
		read    = kmsg.ACLOperationRead
		allow   = kmsg.ACLPermissionTypeAllow
	)
	good := creation(topic, "orders", literal, "User:alice", read, allow)
	req := kmsg.NewPtrCreateACLsRequest()
	req.Creations = []kmsg.CreateACLsRequestCreation{
		good,
		creation(kmsg.ACLResourceTypeAny, "orders", literal, "User:alice", read, allow),
		creation(topic, "orders", kmsg.ACLResourcePatternTypeMatch, "User:alice", read, allow),
		creation(topic, "orders", literal, "alice", read, allow),
		creation(topic, "", kmsg.ACLResourcePatternTypePrefixed, "User:alice", read, allow),
		creation(topic, "orders", literal, "User:alice", kmsg.ACLOperationAny, allow),
		creation(topic, "orders", literal, "User:alice", read, kmsg.ACLPermissionTypeAny),
		creation(kmsg.ACLResourceTypeCluster, "other", literal, "User:alice", kmsg.ACLOperationAlter, allow),
		good, // a duplicate in the request: success, one record
		creation(topic, "app-", kmsg.ACLResourcePatternTypePrefixed, "User:*", kmsg.ACLOperationWrite, kmsg.ACLPermissionTypeDeny),
	}
	img := metadata.EmptyImage()
	recs, resp := createAcls(img, req, sequentialIDs(2))
	wantCodes := []int16{0, 42, 42, 42, 42, 42, 42, 42, 0, 0}
	if len(resp.Results) != len(wantCodes) {
		t.Fatalf("%d results", len(resp.Results))
	}
	for i, r := range resp.Results {
		if r.ErrorCode != wantCodes[i] || (r.ErrorCode != 0) != (r.ErrorMessage != nil) {
			t.Errorf("creation %d: code %d message %v, want %d", i, r.ErrorCode, r.ErrorMessage, wantCodes[i])
		}
	}
	if len(recs) != 2 {
		t.Fatalf("%d records, want 2", len(recs))
	}
	img = applyACLRecords(t, img, recs)
	if len(img.ACLs) != 2 || img.ACLs[[16]byte{15: 1}].ResourceName != "orders" || img.ACLs[[16]byte{15: 2}].ResourceName != "app-" {
		t.Fatalf("ACLs %v", img.ACLs)
	}

	// Again: the existing binding makes no record; a new one skips used ids.
	req.Creations = []kmsg.CreateACLsRequestCreation{good, creation(topic, "audit", literal, "User:bob", read, allow)}
	recs, resp = createAcls(img, req, sequentialIDs(3))
	if len(recs) != 1 || recs[0].(*metadata.AccessControlEntryRecord).ID != [16]byte{15: 3} || resp.Results[0].ErrorCode != 0 {
		t.Fatalf("records %v results %+v", recs, resp.Results)
	}
}

func TestDeleteAcls(t *testing.T) {
	create := kmsg.NewPtrCreateACLsRequest()
	create.Creations = []kmsg.CreateACLsRequestCreation{
		creation(kmsg.ACLResourceTypeTopic, "orders", kmsg.ACLResourcePatternTypeLiteral, "User:alice", kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow),
		creation(kmsg.ACLResourceTypeTopic, "ord", kmsg.ACLResourcePatternTypePrefixed, "User:bob", kmsg.ACLOperationWrite, kmsg.ACLPermissionTypeAllow),
		creation(kmsg.ACLResourceTypeGroup, "g", kmsg.ACLResourcePatternTypeLiteral, "User:alice", kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow),
	}
	recs, _ := createAcls(metadata.EmptyImage(), create, sequentialIDs(9))
	img := applyACLRecords(t, metadata.EmptyImage(), recs)

	orders := "orders"
	alice := "User:alice"
	matchOrders := kmsg.NewDeleteACLsRequestFilter()
	matchOrders.ResourceType, matchOrders.ResourcePatternType, matchOrders.ResourceName = kmsg.ACLResourceTypeTopic, kmsg.ACLResourcePatternTypeMatch, &orders
	matchOrders.Operation, matchOrders.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	aliceAny := kmsg.NewDeleteACLsRequestFilter()
	aliceAny.ResourceType, aliceAny.ResourcePatternType, aliceAny.Principal = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny, &alice
	aliceAny.Operation, aliceAny.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	unknown := aliceAny
	unknown.Operation = kmsg.ACLOperationUnknown

	req := kmsg.NewPtrDeleteACLsRequest()
	req.Filters = []kmsg.DeleteACLsRequestFilter{matchOrders, unknown, aliceAny}
	recs, resp := deleteAcls(img, req)
	if len(resp.Results) != 3 {
		t.Fatalf("%d results", len(resp.Results))
	}
	names := func(r kmsg.DeleteACLsResponseResult) (out []string) {
		for _, m := range r.MatchingACLs {
			out = append(out, m.ResourceName+"/"+m.Principal)
		}
		return out
	}
	if got := names(resp.Results[0]); len(got) != 2 || got[0] != "orders/User:alice" || got[1] != "ord/User:bob" {
		t.Fatalf("MATCH orders deleted %v", got)
	}
	if resp.Results[1].ErrorCode != kerr.InvalidRequest.Code || len(resp.Results[1].MatchingACLs) != 0 {
		t.Fatalf("unknown operation: %+v", resp.Results[1])
	}
	if got := names(resp.Results[2]); len(got) != 2 || got[0] != "orders/User:alice" || got[1] != "g/User:alice" {
		t.Fatalf("alice's deleted %v", got)
	}
	if len(recs) != 3 {
		t.Fatalf("%d records, want 3 (orders/alice once)", len(recs))
	}
	if img = applyACLRecords(t, img, recs); len(img.ACLs) != 0 {
		t.Fatalf("left %v", img.ACLs)
	}
}
