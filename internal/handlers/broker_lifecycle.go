package handlers

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/controller"
	"gregor/internal/network"
	"gregor/internal/raft"
)

// Lifecycle is what a controller listener asks of this node's controller
// for brokers: registration, heartbeats, producer id blocks, and an
// operator's unregistration (64_unregister_broker.go).
type Lifecycle interface {
	RegisterBroker(ctx context.Context, req *kmsg.BrokerRegistrationRequest) *kmsg.BrokerRegistrationResponse
	// BrokerHeartbeat's peerClosed is the request's
	// network.Request.PeerClosed (nil in process).
	BrokerHeartbeat(ctx context.Context, req *kmsg.BrokerHeartbeatRequest, peerClosed <-chan struct{}) *kmsg.BrokerHeartbeatResponse
	AllocateProducerIDs(ctx context.Context, brokerID int32, brokerEpoch int64) (controller.ProducerIDsBlock, error)
	UnregisterBroker(ctx context.Context, req *kmsg.UnregisterBrokerRequest) *kmsg.UnregisterBrokerResponse
}

var brokerRegistrationAPI = api{key: 62, min: 0, max: 4, handle: (*Handlers).brokerRegistration}

// brokerRegistration registers a broker with the active controller
// (NOT_CONTROLLER elsewhere; the broker tries the next controller). Node
// to node, as the two below: CLUSTER_ACTION on the cluster, else
// CLUSTER_AUTHORIZATION_FAILED.
func (h *Handlers) brokerRegistration(ctx context.Context, req *network.Request) (kmsg.Response, error) {
	if !h.nodeToNode(ctx, req) {
		resp := req.Body.ResponseKind().(*kmsg.BrokerRegistrationResponse)
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	return h.d.Lifecycle.RegisterBroker(ctx, req.Body.(*kmsg.BrokerRegistrationRequest)), nil
}

var brokerHeartbeatAPI = api{key: 63, min: 0, max: 1, handle: (*Handlers).brokerHeartbeat}

// brokerHeartbeat keeps a broker's session alive and carries its state
// changes: caught up (unfence), controlled shutdown. The controller also
// learns the connection the heartbeat came on: when the broker's side of it
// closes, the broker is fenced at once (see controller.Config.FenceOnConnectionClose).
func (h *Handlers) brokerHeartbeat(ctx context.Context, req *network.Request) (kmsg.Response, error) {
	if !h.nodeToNode(ctx, req) {
		resp := req.Body.ResponseKind().(*kmsg.BrokerHeartbeatResponse)
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	return h.d.Lifecycle.BrokerHeartbeat(ctx, req.Body.(*kmsg.BrokerHeartbeatRequest), req.PeerClosed), nil
}

var allocateProducerIDsAPI = api{key: 67, min: 0, max: 0, handle: (*Handlers).allocateProducerIDs}

// allocateProducerIDs hands a broker its next block of producer ids.
func (h *Handlers) allocateProducerIDs(ctx context.Context, req *network.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.AllocateProducerIDsRequest)
	resp := r.ResponseKind().(*kmsg.AllocateProducerIDsResponse)
	if !h.nodeToNode(ctx, req) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	b, err := h.d.Lifecycle.AllocateProducerIDs(ctx, r.BrokerID, r.BrokerEpoch)
	switch {
	case err == nil:
		resp.ProducerIDStart, resp.ProducerIDLen = b.FirstProducerID, b.Size
	case errors.Is(err, raft.ErrNotLeader):
		resp.ErrorCode = kerr.NotController.Code
	default:
		resp.ErrorCode = errorCode(err)
	}
	return resp, nil
}
