package handlers

// DescribeAcls (key 29), v1-3. Answered from this listener's metadata image
// (a broker's; a controller's on a controller listener): the ACLs matching
// the filter (see acl.Filter: ANY and MATCH patterns, nil strings match
// everything), grouped by resource pattern, sorted by resource type, name
// and pattern type, then by principal, host, operation and permission. A
// filter with an UNKNOWN element is INVALID_REQUEST.
//
// Authorization: DESCRIBE on CLUSTER, else CLUSTER_AUTHORIZATION_FAILED
// (when the listener has an authorizer).

import (
	"cmp"
	"context"
	"net"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/auth/acl"
	"gregor/internal/network"
)

var describeACLsAPI = api{key: 29, min: 1, max: 3, handle: (*Handlers).describeACLs}

func (h *Handlers) describeACLs(_ context.Context, req *network.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.DescribeACLsRequest)
	resp := r.ResponseKind().(*kmsg.DescribeACLsResponse)
	if !h.aclAPIAllowed(req, kmsg.ACLOperationDescribe) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
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

// aclAPIAllowed checks what Kafka requires of the ACL APIs: op (DESCRIBE
// or ALTER) on the CLUSTER resource. Without an authorizer everything is
// allowed.
func (h *Handlers) aclAPIAllowed(req *network.Request, op kmsg.ACLOperation) bool {
	if h.d.Authorizer == nil {
		return true
	}
	host := ""
	if req.ClientAddr != nil {
		host = req.ClientAddr.String()
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
	}
	return h.d.Authorizer.Authorize(req.Principal, host, op, kmsg.ACLResourceTypeCluster, acl.ClusterName)
}
