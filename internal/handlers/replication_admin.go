package handlers

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/network"
)

// Replication is what a controller listener asks of this node's controller
// for replication: ISR changes from leaders, leader elections, partition
// reassignments.
type Replication interface {
	AlterPartition(ctx context.Context, req *kmsg.AlterPartitionRequest) *kmsg.AlterPartitionResponse
	ElectLeaders(ctx context.Context, req *kmsg.ElectLeadersRequest) *kmsg.ElectLeadersResponse
	AlterPartitionReassignments(ctx context.Context, req *kmsg.AlterPartitionAssignmentsRequest) *kmsg.AlterPartitionAssignmentsResponse
	ListPartitionReassignments(ctx context.Context, req *kmsg.ListPartitionReassignmentsRequest) *kmsg.ListPartitionReassignmentsResponse
}

var alterPartitionAPI = api{key: 56, min: 0, max: 3, handle: (*Handlers).alterPartition}

// alterPartition is a leader's ISR change, answered by the active
// controller (node to node; brokers send it to the controller listener).
//
// Node to node: CLUSTER_ACTION on the cluster, else
// CLUSTER_AUTHORIZATION_FAILED.
func (h *Handlers) alterPartition(ctx context.Context, req *network.Request) (kmsg.Response, error) {
	if !h.nodeToNode(ctx, req) {
		resp := req.Body.ResponseKind().(*kmsg.AlterPartitionResponse)
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	return h.d.Replication.AlterPartition(ctx, req.Body.(*kmsg.AlterPartitionRequest)), nil
}

var electLeadersAPI = api{key: 43, min: 0, max: 2, handle: (*Handlers).electLeaders}

// electLeaders runs preferred or unclean leader elections (kafka-leader-
// election.sh); a broker forwards it to the active controller.
//
// Needs ALTER on the cluster, else CLUSTER_AUTHORIZATION_FAILED (checked by
// the broker the client asked; see authz.go).
func (h *Handlers) electLeaders(ctx context.Context, req *network.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.ElectLeadersRequest)
	if !h.authorizedClusterAdmin(ctx, req, kmsg.ACLOperationAlter) {
		resp := r.ResponseKind().(*kmsg.ElectLeadersResponse)
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		for _, t := range r.Topics {
			rt := kmsg.NewElectLeadersResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewElectLeadersResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p, kerr.ClusterAuthorizationFailed.Code
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	}
	if h.controllerListener {
		return h.d.Replication.ElectLeaders(ctx, r), nil
	}
	kresp, err := h.d.Forward(ctx, r)
	if err == nil {
		return kresp, nil
	}
	resp := r.ResponseKind().(*kmsg.ElectLeadersResponse)
	resp.ErrorCode = failure(err)
	if resp.ErrorCode == kerr.NotController.Code {
		resp.ErrorCode = kerr.RequestTimedOut.Code
	}
	return resp, nil
}
