package controller

import (
	"bytes"
	"context"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/auth/acl"
	"gregor/internal/metadata"
)

// CreateAcls creates ACLs (Kafka's AclControlManager.createAcls): each
// creation that validates gets an AccessControlEntryRecord under a new
// random id; all the request's records are one batch. Each creation gets a
// result in request order: INVALID_REQUEST with the reason for a binding
// that does not validate (see acl.Binding.Validate), success otherwise. A
// binding that already exists, or comes twice in the request, succeeds
// without a second record.
func (c *Controller) CreateAcls(ctx context.Context, req *kmsg.CreateACLsRequest) *kmsg.CreateACLsResponse {
	return write(c, ctx, false,
		func(img *metadata.Image) ([]metadata.Record, *kmsg.CreateACLsResponse) {
			return createAcls(img, req, newTopicID)
		},
		func(e *kerr.Error) *kmsg.CreateACLsResponse {
			resp := req.ResponseKind().(*kmsg.CreateACLsResponse)
			for range req.Creations {
				r := kmsg.NewCreateACLsResponseResult()
				r.ErrorCode = e.Code
				resp.Results = append(resp.Results, r)
			}
			return resp
		})
}

// createAcls is the manager of CreateAcls; newID returns random ids.
func createAcls(img *metadata.Image, req *kmsg.CreateACLsRequest, newID func() [16]byte) ([]metadata.Record, *kmsg.CreateACLsResponse) {
	existing := make(map[acl.Binding]bool, len(img.ACLs))
	for _, b := range img.ACLs {
		existing[b] = true
	}
	used := map[[16]byte]bool{}
	var records []metadata.Record
	resp := req.ResponseKind().(*kmsg.CreateACLsResponse)
	for _, cr := range req.Creations {
		r := kmsg.NewCreateACLsResponseResult()
		b := acl.Binding{ResourceType: cr.ResourceType, ResourceName: cr.ResourceName, PatternType: cr.ResourcePatternType,
			Principal: cr.Principal, Host: cr.Host, Operation: cr.Operation, Permission: cr.PermissionType}
		if err := b.Validate(); err != nil {
			msg := err.Error()
			r.ErrorCode, r.ErrorMessage = kerr.InvalidRequest.Code, &msg
		} else if !existing[b] {
			existing[b] = true
			id := newID()
			for used[id] || hasACL(img, id) {
				id = newID()
			}
			used[id] = true
			records = append(records, metadata.NewAccessControlEntryRecord(id, b))
		}
		resp.Results = append(resp.Results, r)
	}
	return records, resp
}

func hasACL(img *metadata.Image, id [16]byte) bool {
	_, ok := img.ACLs[id]
	return ok
}

// DeleteAcls deletes the ACLs matching each filter (Kafka's
// AclControlManager.deleteAcls) with RemoveAccessControlEntryRecords, one
// batch for the request. Each filter gets a result in request order: the
// bindings it matched and deleted, or INVALID_REQUEST for a filter with an
// UNKNOWN element. An ACL matched by several filters is listed in each and
// removed once.
func (c *Controller) DeleteAcls(ctx context.Context, req *kmsg.DeleteACLsRequest) *kmsg.DeleteACLsResponse {
	return write(c, ctx, false,
		func(img *metadata.Image) ([]metadata.Record, *kmsg.DeleteACLsResponse) {
			return deleteAcls(img, req)
		},
		func(e *kerr.Error) *kmsg.DeleteACLsResponse {
			resp := req.ResponseKind().(*kmsg.DeleteACLsResponse)
			for range req.Filters {
				r := kmsg.NewDeleteACLsResponseResult()
				r.ErrorCode = e.Code
				resp.Results = append(resp.Results, r)
			}
			return resp
		})
}

// deleteFilter is the acl.Filter a DeleteAcls filter sends.
func deleteFilter(f *kmsg.DeleteACLsRequestFilter) acl.Filter {
	return acl.Filter{ResourceType: f.ResourceType, ResourceName: f.ResourceName, PatternType: f.ResourcePatternType,
		Principal: f.Principal, Host: f.Host, Operation: f.Operation, Permission: f.PermissionType}
}

func deleteAcls(img *metadata.Image, req *kmsg.DeleteACLsRequest) ([]metadata.Record, *kmsg.DeleteACLsResponse) {
	ids := slices.SortedFunc(maps.Keys(img.ACLs), func(a, b [16]byte) int { return bytes.Compare(a[:], b[:]) })
	removed := map[[16]byte]bool{}
	var records []metadata.Record
	resp := req.ResponseKind().(*kmsg.DeleteACLsResponse)
	for i := range req.Filters {
		r := kmsg.NewDeleteACLsResponseResult()
		f := deleteFilter(&req.Filters[i])
		if err := f.Validate(); err != nil {
			msg := err.Error()
			r.ErrorCode, r.ErrorMessage = kerr.InvalidRequest.Code, &msg
			resp.Results = append(resp.Results, r)
			continue
		}
		for _, id := range ids {
			b := img.ACLs[id]
			if !f.Matches(b) {
				continue
			}
			m := kmsg.NewDeleteACLsResponseResultMatchingACL()
			m.ResourceType, m.ResourceName, m.ResourcePatternType = b.ResourceType, b.ResourceName, b.PatternType
			m.Principal, m.Host, m.Operation, m.PermissionType = b.Principal, b.Host, b.Operation, b.Permission
			r.MatchingACLs = append(r.MatchingACLs, m)
			if !removed[id] {
				removed[id] = true
				records = append(records, &metadata.RemoveAccessControlEntryRecord{ID: id})
			}
		}
		resp.Results = append(resp.Results, r)
	}
	return records, resp
}
