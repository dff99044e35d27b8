package handlers

// DeleteAcls (key 31), v1-3. The active controller deletes the ACLs each
// filter matches with RemoveAccessControlEntryRecords and answers each
// filter with the bindings it deleted (see controller.DeleteAcls). Brokers
// forward the request; a controller listener answers it itself. A forward
// that fails answers every filter with the error (NOT_CONTROLLER, or
// REQUEST_TIMED_OUT when the wait ran out).
//
// Authorization: ALTER on CLUSTER, else every filter is
// CLUSTER_AUTHORIZATION_FAILED (without an authorizer SECURITY_DISABLED, as Kafka).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/network"
)

var deleteACLsAPI = api{key: 31, min: 1, max: 3, handle: (*Handlers).deleteACLs}

func (h *Handlers) deleteACLs(ctx context.Context, req *network.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.DeleteACLsRequest)
	if code := h.aclAPIError(ctx, req, kmsg.ACLOperationAlter); code != 0 {
		return deleteACLsFailed(r, code, nil), nil
	}
	return h.d.Controller.DeleteAcls(ctx, r), nil
}

func (f forwarding) DeleteAcls(ctx context.Context, req *kmsg.DeleteACLsRequest) *kmsg.DeleteACLsResponse {
	kresp, err := f.forward(ctx, req)
	if err == nil {
		return kresp.(*kmsg.DeleteACLsResponse)
	}
	msg := err.Error()
	return deleteACLsFailed(req, failure(err), &msg)
}

// deleteACLsFailed answers every filter of req with code and msg (nil: none).
func deleteACLsFailed(req *kmsg.DeleteACLsRequest, code int16, msg *string) *kmsg.DeleteACLsResponse {
	resp := req.ResponseKind().(*kmsg.DeleteACLsResponse)
	for range req.Filters {
		res := kmsg.NewDeleteACLsResponseResult()
		res.ErrorCode, res.ErrorMessage = code, msg
		resp.Results = append(resp.Results, res)
	}
	return resp
}
