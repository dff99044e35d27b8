package handlers

// AlterPartitionReassignments (key 45), v0-1, and ListPartitionReassignments
// (key 46), v0 (KIP-455; v1 of key 45 adds AllowReplicationFactorChange,
// KIP-860). The active controller answers them (controller listener);
// brokers forward them. A forward that fails answers every partition of an
// AlterPartitionReassignments, and the top level of both, with the error
// (REQUEST_TIMED_OUT when no controller could be reached), as Kafka's
// getErrorResponse does.
//
// Altering needs ALTER on the cluster, listing DESCRIBE, else
// CLUSTER_AUTHORIZATION_FAILED (as Kafka; checked by the broker the client
// asked, see authz.go).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/network"
)

var alterPartitionReassignmentsAPI = api{key: 45, min: 0, max: 1, handle: (*Handlers).alterPartitionReassignments}

func (h *Handlers) alterPartitionReassignments(ctx context.Context, req *network.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.AlterPartitionAssignmentsRequest)
	if !h.authorizedClusterAdmin(ctx, req, kmsg.ACLOperationAlter) {
		resp := r.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		resp.AllowReplicationFactorChange = r.Version < 1 || r.AllowReplicationFactorChange
		return resp, nil
	}
	if h.controllerListener {
		return h.d.Replication.AlterPartitionReassignments(ctx, r), nil
	}
	kresp, err := h.d.Forward(ctx, r)
	if err == nil {
		return kresp, nil
	}
	code := forwardFailure(err)
	msg := kerr.ErrorForCode(code).(*kerr.Error).Description
	resp := r.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
	resp.ErrorCode, resp.ErrorMessage = code, &msg
	resp.AllowReplicationFactorChange = r.Version < 1 || r.AllowReplicationFactorChange
	for _, t := range r.Topics {
		rt := kmsg.NewAlterPartitionAssignmentsResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
			rp.Partition, rp.ErrorCode, rp.ErrorMessage = p.Partition, code, &msg
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

var listPartitionReassignmentsAPI = api{key: 46, min: 0, max: 0, handle: (*Handlers).listPartitionReassignments}

func (h *Handlers) listPartitionReassignments(ctx context.Context, req *network.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.ListPartitionReassignmentsRequest)
	if !h.authorizedClusterAdmin(ctx, req, kmsg.ACLOperationDescribe) {
		resp := r.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	if h.controllerListener {
		return h.d.Replication.ListPartitionReassignments(ctx, r), nil
	}
	kresp, err := h.d.Forward(ctx, r)
	if err == nil {
		return kresp, nil
	}
	code := forwardFailure(err)
	msg := kerr.ErrorForCode(code).(*kerr.Error).Description
	resp := r.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
	resp.ErrorCode, resp.ErrorMessage = code, &msg
	return resp, nil
}

// forwardFailure is the code a failed forward answers with: the client
// retries a timeout, where NOT_CONTROLLER from a broker would mislead it.
func forwardFailure(err error) int16 {
	code := failure(err)
	if code == kerr.NotController.Code {
		code = kerr.RequestTimedOut.Code
	}
	return code
}
