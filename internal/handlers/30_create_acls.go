package handlers

// CreateAcls (key 30), v1-3. The active controller validates each creation
// and commits AccessControlEntryRecords (see controller.CreateAcls for the
// per-creation errors). Brokers forward the request; a controller listener
// answers it itself. A forward that fails answers every creation with the
// error (NOT_CONTROLLER, or REQUEST_TIMED_OUT when the wait ran out).
//
// Authorization: ALTER on CLUSTER, else every creation is
// CLUSTER_AUTHORIZATION_FAILED (without an authorizer SECURITY_DISABLED, as Kafka).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/network"
)

var createACLsAPI = api{key: 30, min: 1, max: 3, handle: (*Handlers).createACLs}

func (h *Handlers) createACLs(ctx context.Context, req *network.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.CreateACLsRequest)
	if code := h.aclAPIError(ctx, req, kmsg.ACLOperationAlter); code != 0 {
		return createACLsFailed(r, code, nil), nil
	}
	return h.d.Controller.CreateAcls(ctx, r), nil
}

func (f forwarding) CreateAcls(ctx context.Context, req *kmsg.CreateACLsRequest) *kmsg.CreateACLsResponse {
	kresp, err := f.forward(ctx, req)
	if err == nil {
		return kresp.(*kmsg.CreateACLsResponse)
	}
	msg := err.Error()
	return createACLsFailed(req, failure(err), &msg)
}

// createACLsFailed answers every creation of req with code and msg (nil: none).
func createACLsFailed(req *kmsg.CreateACLsRequest, code int16, msg *string) *kmsg.CreateACLsResponse {
	resp := req.ResponseKind().(*kmsg.CreateACLsResponse)
	for range req.Creations {
		res := kmsg.NewCreateACLsResponseResult()
		res.ErrorCode, res.ErrorMessage = code, msg
		resp.Results = append(resp.Results, res)
	}
	return resp
}
