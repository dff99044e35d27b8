package handlers

// CreatePartitions (key 37), v0-3. Adds partitions to existing topics
// through the controller (INVALID_PARTITIONS when the count does not grow,
// UNKNOWN_TOPIC_OR_PARTITION, validate_only).
//
// Each topic needs ALTER on it, else TOPIC_AUTHORIZATION_FAILED (as
// Kafka; a name given twice is left for the controller to reject).
//
// The client's controller_mutation_rate quota counts the partitions each
// topic gains; from v3 on a topic over it gets THROTTLING_QUOTA_EXCEEDED
// (quotas.go).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/network"
)

var createPartitionsAPI = api{key: 37, min: 0, max: 3, handle: (*Handlers).createPartitions}

func (h *Handlers) createPartitions(ctx context.Context, req *network.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.CreatePartitionsRequest)
	names := make([]string, 0, len(r.Topics))
	for _, t := range r.Topics {
		names = append(names, t.Topic)
	}
	dup := duplicates(names)
	allowed := r
	var denied []kmsg.CreatePartitionsResponseTopic
	if !h.trustedAdmin(ctx, req) {
		alterable := h.authorizedTopics(ctx, req, kmsg.ACLOperationAlter, names)
		allowed = &kmsg.CreatePartitionsRequest{}
		*allowed = *r
		allowed.Topics = nil
		for _, t := range r.Topics {
			if alterable[t.Topic] || dup[t.Topic] {
				allowed.Topics = append(allowed.Topics, t)
				continue
			}
			rt := kmsg.NewCreatePartitionsResponseTopic()
			rt.Topic, rt.ErrorCode = t.Topic, kerr.TopicAuthorizationFailed.Code
			denied = append(denied, rt)
		}
	}
	mq := h.mutationQuota(ctx, req, 3)
	allowed, throttled, charged := h.admitCreatePartitions(mq, allowed, dup)
	resp := r.ResponseKind().(*kmsg.CreatePartitionsResponse)
	if len(allowed.Topics) > 0 || (len(denied) == 0 && len(throttled) == 0) {
		resp = h.d.Controller.CreatePartitions(ctx, allowed)
	}
	for _, t := range resp.Topics {
		if n, ok := charged[t.Topic]; ok {
			mq.settle(n, t.ErrorCode == 0)
		}
	}
	mq.finish()
	resp.Topics = append(resp.Topics, denied...)
	resp.Topics = append(resp.Topics, throttled...)
	return resp, nil
}

// admitCreatePartitions asks the controller mutation quota about each
// topic of r, by the partitions it would gain over those the image knows
// (a topic that would not grow is the controller's to answer): it returns
// the topics to grow, the answers of those it refuses, and the partitions
// it counted per topic.
func (h *Handlers) admitCreatePartitions(mq *mutations, r *kmsg.CreatePartitionsRequest, dup map[string]bool) (*kmsg.CreatePartitionsRequest, []kmsg.CreatePartitionsResponseTopic, map[string]int) {
	if mq == nil {
		return r, nil, nil
	}
	img := h.image()
	admitted := *r
	admitted.Topics = nil
	var throttled []kmsg.CreatePartitionsResponseTopic
	charged := map[string]int{}
	for _, t := range r.Topics {
		n := 0
		if it := img.Topics.Topic(t.Topic); it != nil && !dup[t.Topic] {
			n = max(int(t.Count)-it.NumPartitions(), 0)
		}
		if !mq.admit(n) {
			rt := kmsg.NewCreatePartitionsResponseTopic()
			rt.Topic, rt.ErrorCode, rt.ErrorMessage = t.Topic, kerr.ThrottlingQuotaExceeded.Code, kmsg.StringPtr(throttledTopicMessage)
			throttled = append(throttled, rt)
			continue
		}
		charged[t.Topic] = n
		admitted.Topics = append(admitted.Topics, t)
	}
	return &admitted, throttled, charged
}
