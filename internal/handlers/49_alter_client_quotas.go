package handlers

// AlterClientQuotas (key 49), v0-1. The active controller validates each
// entity and its ops and commits ClientQuotaRecords (see
// controller.AlterClientQuotas for the per-entity errors); validate_only
// only validates. Brokers forward the request; a controller listener
// answers it itself (Kafka serves it on both). A forward that fails
// answers every entry with the error (NOT_CONTROLLER, or REQUEST_TIMED_OUT
// when the wait ran out).
//
// Authorization: ALTER_CONFIGS on CLUSTER, else every entry is
// CLUSTER_AUTHORIZATION_FAILED.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/network"
)

var alterClientQuotasAPI = api{key: 49, min: 0, max: 1, handle: (*Handlers).alterClientQuotas}

func (h *Handlers) alterClientQuotas(ctx context.Context, req *network.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.AlterClientQuotasRequest)
	if !h.authorizedClusterAdmin(ctx, req, kmsg.ACLOperationAlterConfigs) {
		return alterClientQuotasFailed(r, kerr.ClusterAuthorizationFailed.Code, nil), nil
	}
	return h.d.Controller.AlterClientQuotas(ctx, r), nil
}

// alterClientQuotasFailed answers every entry of req with one error, its
// entity as the request gave it (Kafka's AlterClientQuotasRequest
// getErrorResponse).
func alterClientQuotasFailed(req *kmsg.AlterClientQuotasRequest, code int16, msg *string) *kmsg.AlterClientQuotasResponse {
	resp := req.ResponseKind().(*kmsg.AlterClientQuotasResponse)
	for _, entry := range req.Entries {
		res := kmsg.NewAlterClientQuotasResponseEntry()
		res.ErrorCode, res.ErrorMessage = code, msg
		for _, p := range entry.Entity {
			e := kmsg.NewAlterClientQuotasResponseEntryEntity()
			e.Type, e.Name = p.Type, p.Name
			res.Entity = append(res.Entity, e)
		}
		resp.Entries = append(resp.Entries, res)
	}
	return resp
}

func (f forwarding) AlterClientQuotas(ctx context.Context, req *kmsg.AlterClientQuotasRequest) *kmsg.AlterClientQuotasResponse {
	kresp, err := f.forward(ctx, req)
	if err == nil {
		return kresp.(*kmsg.AlterClientQuotasResponse)
	}
	msg := err.Error()
	return alterClientQuotasFailed(req, failure(err), &msg)
}
