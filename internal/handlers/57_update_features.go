package handlers

// UpdateFeatures (key 57), v0-2 (kafka-features upgrade / downgrade /
// disable). The active controller checks every update and finalizes the
// levels with FeatureLevelRecords in one batch, or answers
// INVALID_UPDATE_VERSION naming the first update that cannot be made (see
// controller.UpdateFeatures); validate_only only checks. Brokers forward
// the request; a controller listener answers it itself (Kafka serves it on
// both). v1 replaced AllowDowngrade with UpgradeType and added
// ValidateOnly; v2 answers at the top level only. A forward that fails
// answers with the error at the top level (NOT_CONTROLLER, or
// REQUEST_TIMED_OUT when the wait ran out).
//
// Needs ALTER on the cluster, else CLUSTER_AUTHORIZATION_FAILED (checked by
// the broker the client asked; see authz.go).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/network"
)

var updateFeaturesAPI = api{key: 57, min: 0, max: 2, handle: (*Handlers).updateFeatures}

func (h *Handlers) updateFeatures(ctx context.Context, req *network.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.UpdateFeaturesRequest)
	if !h.authorizedClusterAdmin(ctx, req, kmsg.ACLOperationAlter) {
		return updateFeaturesFailed(r, kerr.ClusterAuthorizationFailed.Code, nil), nil
	}
	return h.d.Controller.UpdateFeatures(ctx, r), nil
}

// updateFeaturesFailed is Kafka's UpdateFeaturesRequest.getErrorResponse:
// the error at the top level, no per-feature results.
func updateFeaturesFailed(req *kmsg.UpdateFeaturesRequest, code int16, msg *string) *kmsg.UpdateFeaturesResponse {
	resp := req.ResponseKind().(*kmsg.UpdateFeaturesResponse)
	resp.ErrorCode, resp.ErrorMessage = code, msg
	return resp
}

func (f forwarding) UpdateFeatures(ctx context.Context, req *kmsg.UpdateFeaturesRequest) *kmsg.UpdateFeaturesResponse {
	kresp, err := f.forward(ctx, req)
	if err == nil {
		return kresp.(*kmsg.UpdateFeaturesResponse)
	}
	msg := err.Error()
	return updateFeaturesFailed(req, failure(err), &msg)
}
