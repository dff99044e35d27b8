package handlers

// CreatePartitions (key 37), v0-3. Adds partitions to existing topics
// through the controller (INVALID_PARTITIONS when the count does not grow,
// UNKNOWN_TOPIC_OR_PARTITION, validate_only).
//
// Each topic needs ALTER on it, else TOPIC_AUTHORIZATION_FAILED (as
// Kafka; a name given twice is left for the controller to reject).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/network"
)

var createPartitionsAPI = api{key: 37, min: 0, max: 3, handle: (*Handlers).createPartitions}

func (h *Handlers) createPartitions(ctx context.Context, req *network.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.CreatePartitionsRequest)
	if h.trustedAdmin(ctx, req) {
		return h.d.Controller.CreatePartitions(ctx, r), nil
	}
	names := make([]string, 0, len(r.Topics))
	for _, t := range r.Topics {
		names = append(names, t.Topic)
	}
	alterable := h.authorizedTopics(ctx, req, kmsg.ACLOperationAlter, names)
	dup := duplicates(names)
	allowed := *r
	allowed.Topics = nil
	var denied []kmsg.CreatePartitionsResponseTopic
	for _, t := range r.Topics {
		if alterable[t.Topic] || dup[t.Topic] {
			allowed.Topics = append(allowed.Topics, t)
			continue
		}
		rt := kmsg.NewCreatePartitionsResponseTopic()
		rt.Topic, rt.ErrorCode = t.Topic, kerr.TopicAuthorizationFailed.Code
		denied = append(denied, rt)
	}
	resp := r.ResponseKind().(*kmsg.CreatePartitionsResponse)
	if len(allowed.Topics) > 0 || len(denied) == 0 {
		resp = h.d.Controller.CreatePartitions(ctx, &allowed)
	}
	resp.Topics = append(resp.Topics, denied...)
	return resp, nil
}
