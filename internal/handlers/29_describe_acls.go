package handlers

// DescribeAcls (key 29), v1-3. Answered from this listener's metadata image
// (a broker's; a controller's on a controller listener): the ACLs matching
// the filter (see acl.Filter: ANY and MATCH patterns, nil strings match
// everything), grouped by resource pattern, sorted by resource type, name
// and pattern type, then by principal, host, operation and permission. A
// filter with an UNKNOWN element is INVALID_REQUEST.
//
// Authorization: DESCRIBE on CLUSTER, else CLUSTER_AUTHORIZATION_FAILED;
// without an authorizer SECURITY_DISABLED, as Kafka.

import (
	"cmp"
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/auth/acl"
	"gregor/internal/network"
)

var describeACLsAPI = api{key: 29, min: 1, max: 3, handle: (*Handlers).describeACLs}

func (h *Handlers) describeACLs(ctx context.Context, req *network.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.DescribeACLsRequest)
	resp := r.ResponseKind().(*kmsg.DescribeACLsResponse)
	if code := h.aclAPIError(ctx, req, kmsg.ACLOperationDescribe); code != 0 {
		resp.ErrorCode = code
		return resp, nil
	}
	f := acl.Filter{ResourceType: r.ResourceType, ResourceName: r.ResourceName, PatternType: r.ResourcePatternType,
		Principal: r.Principal, Host: r.Host, Operation: r.Operation, Permission: r.PermissionType}
	if err := f.Validate(); err != nil {
		msg := err.Error()
		resp.ErrorCode, resp.ErrorMessage = kerr.InvalidRequest.Code, &msg
		return resp, nil
	}
	var matched []acl.Binding
	for _, b := range h.image().ACLs {
		if f.Matches(b) {
			matched = append(matched, b)
		}
	}
	slices.SortFunc(matched, compareBindings)
	for _, b := range matched {
		n := len(resp.Resources)
		if n == 0 || resp.Resources[n-1].ResourceType != b.ResourceType || resp.Resources[n-1].ResourceName != b.ResourceName ||
			resp.Resources[n-1].ResourcePatternType != b.PatternType {
			res := kmsg.NewDescribeACLsResponseResource()
			res.ResourceType, res.ResourceName, res.ResourcePatternType = b.ResourceType, b.ResourceName, b.PatternType
			resp.Resources = append(resp.Resources, res)
			n++
		}
		a := kmsg.NewDescribeACLsResponseResourceACL()
		a.Principal, a.Host, a.Operation, a.PermissionType = b.Principal, b.Host, b.Operation, b.Permission
		resp.Resources[n-1].ACLs = append(resp.Resources[n-1].ACLs, a)
	}
	return resp, nil
}

func compareBindings(a, b acl.Binding) int {
	return cmp.Or(cmp.Compare(a.ResourceType, b.ResourceType), cmp.Compare(a.ResourceName, b.ResourceName),
		cmp.Compare(a.PatternType, b.PatternType), cmp.Compare(a.Principal, b.Principal), cmp.Compare(a.Host, b.Host),
		cmp.Compare(a.Operation, b.Operation), cmp.Compare(a.Permission, b.Permission))
}

// aclAPIError is what Kafka answers the ACL APIs before looking at them:
// SECURITY_DISABLED without an authorizer (authorizer.class.name unset:
// there is nothing for ACLs to act on), CLUSTER_AUTHORIZATION_FAILED
// without op (DESCRIBE or ALTER) on the CLUSTER, else 0.
func (h *Handlers) aclAPIError(ctx context.Context, req *network.Request, op kmsg.ACLOperation) int16 {
	switch {
	case h.d.Authorizer == nil:
		return kerr.SecurityDisabled.Code
	case !h.authorizedClusterAdmin(ctx, req, op):
		return kerr.ClusterAuthorizationFailed.Code
	}
	return 0
}
