package handlers

// UnregisterBroker (key 64), version 0: kafka-cluster unregister removes a
// broker's registration (Lifecycle.UnregisterBroker). The active controller
// answers it (controller listener); brokers forward it, as Kafka's
// forwardToControllerOrFail does. A forward that fails answers with its
// error (REQUEST_TIMED_OUT when no controller could be reached).
//
// Needs ALTER on the cluster, else CLUSTER_AUTHORIZATION_FAILED (checked by
// the broker the client asked; see authz.go).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/network"
)

var unregisterBrokerAPI = api{key: 64, min: 0, max: 0, handle: (*Handlers).unregisterBroker}

func (h *Handlers) unregisterBroker(ctx context.Context, req *network.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.UnregisterBrokerRequest)
	if !h.authorizedClusterAdmin(ctx, req, kmsg.ACLOperationAlter) {
		resp := r.ResponseKind().(*kmsg.UnregisterBrokerResponse)
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	if h.controllerListener {
		return h.d.Lifecycle.UnregisterBroker(ctx, r), nil
	}
	kresp, err := h.d.Forward(ctx, r)
	if err == nil {
		return kresp, nil
	}
	code := forwardFailure(err)
	msg := kerr.ErrorForCode(code).(*kerr.Error).Description
	resp := r.ResponseKind().(*kmsg.UnregisterBrokerResponse)
	resp.ErrorCode, resp.ErrorMessage = code, &msg
	return resp, nil
}
