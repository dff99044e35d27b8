package handlers

// IncrementalAlterConfigs (key 44), v0-1. SET, DELETE, APPEND and SUBTRACT
// of single topic or broker configs through the controller, validated and
// persisted as ConfigRecords.
//
// On a broker listener a broker resource names the cluster default or this
// broker (INVALID_REQUEST otherwise, config_node.go).
//
// Each resource needs ALTER_CONFIGS: on the topic for a topic
// (TOPIC_AUTHORIZATION_FAILED), on the cluster for a broker or broker
// logger (CLUSTER_AUTHORIZATION_FAILED), as Kafka.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/network"
)

var incrementalAlterConfigsAPI = api{key: 44, min: 0, max: 1, handle: (*Handlers).incrementalAlterConfigs}

func (h *Handlers) incrementalAlterConfigs(ctx context.Context, req *network.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.IncrementalAlterConfigsRequest)
	var foreign []kmsg.IncrementalAlterConfigsResponseResource
	if !h.controllerListener {
		own := *r
		own.Resources = nil
		for _, res := range r.Resources {
			if msg := h.foreignBrokerResource(res.ResourceType, res.ResourceName); msg != nil {
				rr := kmsg.NewIncrementalAlterConfigsResponseResource()
				rr.ResourceType, rr.ResourceName, rr.ErrorCode, rr.ErrorMessage = res.ResourceType, res.ResourceName, kerr.InvalidRequest.Code, msg
				foreign = append(foreign, rr)
				continue
			}
			own.Resources = append(own.Resources, res)
		}
		if len(foreign) > 0 && len(own.Resources) == 0 {
			resp := r.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
			resp.Resources = foreign
			return resp, nil
		}
		r = &own
	}
	if h.trustedAdmin(ctx, req) {
		resp := h.d.Controller.IncrementalAlterConfigs(ctx, r)
		resp.Resources = append(resp.Resources, foreign...)
		return resp, nil
	}
	allowed := *r
	allowed.Resources = nil
	denied := foreign
	for _, res := range r.Resources {
		code := h.configResourceDenied(ctx, req, kmsg.ACLOperationAlterConfigs, res.ResourceType, res.ResourceName)
		if code == 0 {
			allowed.Resources = append(allowed.Resources, res)
			continue
		}
		rr := kmsg.NewIncrementalAlterConfigsResponseResource()
		rr.ResourceType, rr.ResourceName, rr.ErrorCode = res.ResourceType, res.ResourceName, code
		rr.ErrorMessage = errorDescription(code)
		denied = append(denied, rr)
	}
	resp := r.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	if len(allowed.Resources) > 0 || len(denied) == 0 {
		resp = h.d.Controller.IncrementalAlterConfigs(ctx, &allowed)
	}
	resp.Resources = append(resp.Resources, denied...)
	return resp, nil
}
