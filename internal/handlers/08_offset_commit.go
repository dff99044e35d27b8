package handlers

// OffsetCommit (key 8), versions 2-9 (Kafka 4.0 removed 0-1, KIP-896):
// commits from group members (generation checked) and from consumers outside
// any group (generation -1) while the group is empty. An offset is
// acknowledged once its record is in __consumer_offsets.
//
// Needs READ on the group (else GROUP_AUTHORIZATION_FAILED on every
// partition) and READ on each topic (else TOPIC_AUTHORIZATION_FAILED on its
// partitions, the others committed), as Kafka.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/coordinator/group"
	"gregor/internal/network"
)

var offsetCommitAPI = api{key: 8, min: 2, max: 9, handle: (*Handlers).offsetCommit}

func (h *Handlers) offsetCommit(ctx context.Context, req *network.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.OffsetCommitRequest)
	var denied []kmsg.OffsetCommitRequestTopic
	if h.d.Authorizer != nil && h.authorized(ctx, req, kmsg.ACLOperationRead, kmsg.ACLResourceTypeGroup, r.Group) {
		var names []string
		for _, t := range r.Topics {
			names = append(names, t.Topic)
		}
		readable := h.authorizedTopics(ctx, req, kmsg.ACLOperationRead, names)
		filtered := *r
		filtered.Topics = nil
		for _, t := range r.Topics {
			if readable[t.Topic] {
				filtered.Topics = append(filtered.Topics, t)
			} else {
				denied = append(denied, t)
			}
		}
		r = &filtered
	}
	respond, wait := awaitReply()
	code := h.onAuthorizedGroupShard(ctx, req, kmsg.ACLOperationRead, r.Group, func(s *group.Shard, w group.Writer) {
		_ = finish(w, s.OffsetCommit(nowMs(), r, respond))
	})
	if code != 0 {
		resp := kmsg.NewPtrOffsetCommitResponse()
		resp.Version = r.Version
		resp.Topics = offsetCommitFailed(r.Topics, code)
		return resp, nil
	}
	resp, err := wait(ctx)
	if oc, ok := resp.(*kmsg.OffsetCommitResponse); ok && err == nil {
		oc.Topics = append(oc.Topics, offsetCommitFailed(denied, kerr.TopicAuthorizationFailed.Code)...)
	}
	return resp, err
}

// offsetCommitFailed answers every partition of topics with code.
func offsetCommitFailed(topics []kmsg.OffsetCommitRequestTopic, code int16) []kmsg.OffsetCommitResponseTopic {
	out := make([]kmsg.OffsetCommitResponseTopic, 0, len(topics))
	for _, t := range topics {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, code
			rt.Partitions = append(rt.Partitions, rp)
		}
		out = append(out, rt)
	}
	return out
}
