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
	own, foreign := splitForeignBrokers(h, r.Resources,
		func(res *kmsg.IncrementalAlterConfigsRequestResource) (kmsg.ConfigResourceType, string) {
			return res.ResourceType, res.ResourceName
		},
		func(res *kmsg.IncrementalAlterConfigsRequestResource, msg *string) kmsg.IncrementalAlterConfigsResponseResource {
			rr := kmsg.NewIncrementalAlterConfigsResponseResource()
			rr.ResourceType, rr.ResourceName, rr.ErrorCode, rr.ErrorMessage = res.ResourceType, res.ResourceName, kerr.InvalidRequest.Code, msg
			return rr
		})
	if len(foreign) > 0 {
		if len(own) == 0 {
			resp := r.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
			resp.Resources = foreign
			return resp, nil
		}
		rest := *r
		rest.Resources = own
		r = &rest
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
