package handlers

// DescribeCluster (key 60), v0-2. The cluster id, the controller id and the
// endpoints of the requested type (v1): brokers on a broker listener,
// controllers (the quorum voters) on a controller listener (KIP-919); the
// other type is MISMATCHED_ENDPOINT_TYPE and an unknown one
// UNSUPPORTED_ENDPOINT_TYPE, as Kafka's AuthHelper answers. The brokers
// listed are the unfenced ones; v2 asking IncludeFencedBrokers (KIP-1073)
// gets the fenced ones too, marked IsFenced: a broker that was killed or
// shut down stays registered, fenced, until it comes back.
//
// Anyone may describe the cluster. Asked for the cluster's authorized
// operations, the principal gets them only with DESCRIBE on the cluster,
// else 0 (as Kafka's AuthHelper).

import (
	"context"
	"fmt"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/network"
)

var describeClusterAPI = api{key: 60, min: 0, max: 2, handle: (*Handlers).describeCluster}

const (
	endpointTypeBrokers     = 1
	endpointTypeControllers = 2
)

func (h *Handlers) describeCluster(ctx context.Context, req *network.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.DescribeClusterRequest)
	resp := r.ResponseKind().(*kmsg.DescribeClusterResponse)
	resp.ClusterID = h.d.ClusterID
	resp.ControllerID = h.d.NodeID
	if h.controllerListener && h.d.Quorum != nil {
		// KIP-919: a controller names the active controller.
		resp.ControllerID, _ = h.d.Quorum.Leader()
	}
	want := int8(endpointTypeBrokers)
	if r.Version >= 1 {
		want = r.EndpointType
		resp.EndpointType = want
	}
	served := int8(endpointTypeBrokers)
	if h.controllerListener {
		served = endpointTypeControllers
	}
	if want != served {
		// An unknown type is UNSUPPORTED_ENDPOINT_TYPE, a known one of the
		// other listener kind MISMATCHED_ENDPOINT_TYPE (v0 cannot ask for
		// another type).
		resp.ErrorCode = kerr.MismatchedEndpointType.Code
		msg := fmt.Sprintf("endpoint type %d is not served on this listener, which serves type %d", want, served)
		if want != endpointTypeBrokers && want != endpointTypeControllers {
			resp.ErrorCode = kerr.UnsupportedEndpointType.Code
			msg = fmt.Sprintf("unsupported endpoint type %d", want)
		}
		resp.ErrorMessage = &msg
		return resp, nil
	}
	if r.IncludeClusterAuthorizedOperations {
		resp.ClusterAuthorizedOperations = h.clusterAuthorizedOperations(ctx, req)
	}
	if served == endpointTypeControllers {
		for _, v := range h.d.Broker.ControllerQuorumVoters {
			b := kmsg.NewDescribeClusterResponseBroker()
			b.NodeID, b.Host, b.Port = v.ID, v.Host, int32(v.Port)
			resp.Brokers = append(resp.Brokers, b)
		}
		return resp, nil
	}
	img := h.image()
	for id, reg := range img.Brokers {
		if reg.Fenced && !r.IncludeFencedBrokers {
			continue
		}
		for _, ep := range reg.Listeners {
			if ep.Name == req.Listener {
				b := kmsg.NewDescribeClusterResponseBroker()
				b.NodeID, b.Host, b.Port, b.Rack = id, ep.Host, int32(ep.Port), reg.Rack
				b.IsFenced = reg.Fenced
				resp.Brokers = append(resp.Brokers, b)
			}
		}
	}
	sort.Slice(resp.Brokers, func(i, j int) bool { return resp.Brokers[i].NodeID < resp.Brokers[j].NodeID })
	return resp, nil
}
