package handlers

// FindCoordinator (key 10), versions 0-6. A group's coordinator is the
// leader of partition abs(hash(group)) % N of __consumer_offsets, a
// transactional id's (key type 1) that of __transaction_state, a
// share-partition's (key type 2, v6+, "groupId:topicId:partition", asked by
// brokers' share-group state persisters) that of __share_group_state, hashed
// over the key as Kafka re-formats it; the first request creates the topic
// and answers COORDINATOR_NOT_AVAILABLE until it exists and has a leader.
// The topic waits for as many registered brokers as its replication factor
// (internal_topics.go), the answer's message saying so. v4+ batches keys.
// An empty transactional id is INVALID_REQUEST, as are a share key before
// v6, a malformed share key and other key types.
//
// A group key needs DESCRIBE on the group (GROUP_AUTHORIZATION_FAILED), a
// transactional id DESCRIBE on it (TRANSACTIONAL_ID_AUTHORIZATION_FAILED),
// a share key CLUSTER_ACTION on the cluster (CLUSTER_AUTHORIZATION_FAILED),
// as Kafka.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/coordinator/sharecoord"
	"gregor/internal/network"
)

var findCoordinatorAPI = api{key: 10, min: 0, max: 6, handle: (*Handlers).findCoordinator}

func (h *Handlers) findCoordinator(ctx context.Context, req *network.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.FindCoordinatorRequest)
	resp := kmsg.NewPtrFindCoordinatorResponse()
	resp.Version = r.Version
	keys := r.CoordinatorKeys
	if r.Version < 4 {
		keys = []string{r.CoordinatorKey}
	}
	for _, key := range keys {
		var c kmsg.FindCoordinatorResponseCoordinator
		switch {
		case r.CoordinatorType == 0 && !h.authorized(ctx, req, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeGroup, key):
			c = coordinatorRefused(key, kerr.GroupAuthorizationFailed)
		case r.CoordinatorType == 1 && !h.authorized(ctx, req, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTransactionalId, key):
			c = coordinatorRefused(key, kerr.TransactionalIDAuthorizationFailed)
		case r.CoordinatorType == 2 && r.Version < 6:
			c = coordinatorRefused(key, kerr.InvalidRequest)
		case r.CoordinatorType == 2 && !h.authorizedCluster(ctx, req, kmsg.ACLOperationClusterAction):
			c = coordinatorRefused(key, kerr.ClusterAuthorizationFailed)
		default:
			c = h.coordinatorFor(ctx, r.CoordinatorType, key, req.Listener)
		}
		resp.Coordinators = append(resp.Coordinators, c)
	}
	if r.Version < 4 {
		c := resp.Coordinators[0]
		resp.Coordinators = nil
		resp.ErrorCode, resp.ErrorMessage, resp.NodeID, resp.Host, resp.Port = c.ErrorCode, c.ErrorMessage, c.NodeID, c.Host, c.Port
	}
	return resp, nil
}

func coordinatorRefused(key string, e *kerr.Error) kmsg.FindCoordinatorResponseCoordinator {
	c := kmsg.NewFindCoordinatorResponseCoordinator()
	c.Key, c.NodeID, c.Port, c.ErrorCode, c.ErrorMessage = key, -1, -1, e.Code, kmsg.StringPtr(e.Message)
	return c
}

func (h *Handlers) coordinatorFor(ctx context.Context, keyType int8, key, listener string) kmsg.FindCoordinatorResponseCoordinator {
	c := kmsg.NewFindCoordinatorResponseCoordinator()
	c.Key, c.NodeID, c.Port = key, -1, -1
	node, e, why := h.coordinatorNode(ctx, keyType, key)
	if e == nil {
		// A newer image may have lost the broker meanwhile.
		if b := h.image().Brokers[node]; b != nil {
			for _, ep := range b.Listeners {
				if ep.Name == listener {
					c.NodeID, c.Host, c.Port = node, ep.Host, int32(ep.Port)
					return c
				}
			}
		}
		e = kerr.CoordinatorNotAvailable
	}
	c.ErrorCode = e.Code
	msg := e.Message
	if why != "" {
		msg += ": " + why
	}
	c.ErrorMessage = &msg
	return c
}

// coordinatorNode is the live broker coordinating a key, or the error (and
// why, "" for Kafka's own message) to answer.
func (h *Handlers) coordinatorNode(ctx context.Context, keyType int8, key string) (int32, *kerr.Error, string) {
	topic, ensure, partition := OffsetsTopic, h.ensureOffsetsTopic, h.groupPartition
	switch keyType {
	case 0:
	case 1:
		if key == "" {
			return -1, kerr.InvalidRequest, ""
		}
		topic, ensure, partition = TransactionStateTopic, h.ensureTxnTopic, h.txnPartition
	case 2:
		k, err := parseShareKey(key)
		if err != nil {
			return -1, kerr.InvalidRequest, err.Error()
		}
		key = sharecoord.CoordinatorKey(k)
		topic, ensure, partition = ShareStateTopic, h.ensureShareStateTopic, h.shareStatePartition
	default:
		return -1, kerr.InvalidRequest, ""
	}
	img := h.image()
	t := img.Topics.Topic(topic)
	if t == nil {
		return -1, kerr.CoordinatorNotAvailable, ensure(ctx)
	}
	p := t.Partition(partition(key))
	if p == nil || p.Leader < 0 {
		return -1, kerr.CoordinatorNotAvailable, ""
	}
	b := img.Brokers[p.Leader]
	if b == nil || b.Fenced {
		return -1, kerr.CoordinatorNotAvailable, ""
	}
	return p.Leader, nil, ""
}
