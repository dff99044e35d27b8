package handlers

// AlterConfigs (key 33), v0-2. Replaces the whole set of dynamic configs of
// a topic or a broker (this node's id, or "" for the cluster default; on a
// broker listener another id is INVALID_REQUEST, config_node.go) through
// the controller, which validates and persists them as
// ConfigRecords.
//
// Each resource needs ALTER_CONFIGS: on the topic for a topic
// (TOPIC_AUTHORIZATION_FAILED), on the cluster for a broker
// (CLUSTER_AUTHORIZATION_FAILED), as Kafka's ControllerApis.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/network"
)

var alterConfigsAPI = api{key: 33, min: 0, max: 2, handle: (*Handlers).alterConfigs}

func (h *Handlers) alterConfigs(ctx context.Context, req *network.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.AlterConfigsRequest)
	own, foreign := splitForeignBrokers(h, r.Resources,
		func(res *kmsg.AlterConfigsRequestResource) (kmsg.ConfigResourceType, string) {
			return res.ResourceType, res.ResourceName
		},
		func(res *kmsg.AlterConfigsRequestResource, msg *string) kmsg.AlterConfigsResponseResource {
			rr := kmsg.NewAlterConfigsResponseResource()
			rr.ResourceType, rr.ResourceName, rr.ErrorCode, rr.ErrorMessage = res.ResourceType, res.ResourceName, kerr.InvalidRequest.Code, msg
			return rr
		})
	if len(foreign) > 0 {
		if len(own) == 0 {
			resp := r.ResponseKind().(*kmsg.AlterConfigsResponse)
			resp.Resources = foreign
			return resp, nil
		}
		rest := *r
		rest.Resources = own
		r = &rest
	}
	if h.trustedAdmin(ctx, req) {
		resp := h.d.Controller.AlterConfigs(ctx, r)
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
		rr := kmsg.NewAlterConfigsResponseResource()
		rr.ResourceType, rr.ResourceName, rr.ErrorCode = res.ResourceType, res.ResourceName, code
		rr.ErrorMessage = errorDescription(code)
		denied = append(denied, rr)
	}
	resp := r.ResponseKind().(*kmsg.AlterConfigsResponse)
	if len(allowed.Resources) > 0 || len(denied) == 0 {
		resp = h.d.Controller.AlterConfigs(ctx, &allowed)
	}
	resp.Resources = append(resp.Resources, denied...)
	return resp, nil
}
