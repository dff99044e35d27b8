package handlers

// FindCoordinator (key 10), versions 0-5. A group's coordinator is the
// leader of partition abs(hash(group)) % N of __consumer_offsets, a
// transactional id's (key type 1) that of __transaction_state; the first
// request creates the topic and answers COORDINATOR_NOT_AVAILABLE until it
// exists and has a leader. The topic waits for as many registered brokers
// as its replication factor (internal_topics.go), the answer's message
// saying so. v4+ batches keys. An empty transactional id is
// INVALID_REQUEST, as are other key types (share groups, v6).
//
// A group key needs DESCRIBE on the group (GROUP_AUTHORIZATION_FAILED), a
// transactional id DESCRIBE on it (TRANSACTIONAL_ID_AUTHORIZATION_FAILED),
// as Kafka.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/network"
)

var findCoordinatorAPI = api{key: 10, min: 0, max: 5, handle: (*Handlers).findCoordinator}

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
	failWhy := func(e *kerr.Error, why string) kmsg.FindCoordinatorResponseCoordinator {
		c.ErrorCode = e.Code
		msg := e.Message
		if why != "" {
			msg += ": " + why
		}
		c.ErrorMessage = &msg
		return c
	}
	fail := func(e *kerr.Error) kmsg.FindCoordinatorResponseCoordinator { return failWhy(e, "") }
	topic, ensure, partition := OffsetsTopic, h.ensureOffsetsTopic, h.groupPartition
	switch keyType {
	case 0:
	case 1:
		if key == "" {
			return fail(kerr.InvalidRequest)
		}
		topic, ensure, partition = TransactionStateTopic, h.ensureTxnTopic, h.txnPartition
	default:
		return fail(kerr.InvalidRequest)
	}
	img := h.image()
	t := img.Topics.Topic(topic)
	if t == nil {
		return failWhy(kerr.CoordinatorNotAvailable, ensure(ctx))
	}
	p := t.Partition(partition(key))
	if p == nil || p.Leader < 0 {
		return fail(kerr.CoordinatorNotAvailable)
	}
	b := img.Brokers[p.Leader]
	if b == nil || b.Fenced {
		return fail(kerr.CoordinatorNotAvailable)
	}
	for _, ep := range b.Listeners {
		if ep.Name == listener {
			c.NodeID, c.Host, c.Port = p.Leader, ep.Host, int32(ep.Port)
			return c
		}
	}
	return fail(kerr.CoordinatorNotAvailable)
}
