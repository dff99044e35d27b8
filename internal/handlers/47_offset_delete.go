package handlers

// OffsetDelete (key 47), version 0: deletes a group's committed offsets,
// except for topics the group still subscribes to (GROUP_SUBSCRIBED_TO_TOPIC).
//
// Needs DELETE on the group (else GROUP_AUTHORIZATION_FAILED for the
// request) and READ on each topic (else TOPIC_AUTHORIZATION_FAILED on its
// partitions, the others deleted), as Kafka.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/coordinator/group"
	"gregor/internal/network"
)

var offsetDeleteAPI = api{key: 47, min: 0, max: 0, handle: (*Handlers).offsetDelete}

func (h *Handlers) offsetDelete(ctx context.Context, req *network.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.OffsetDeleteRequest)
	var denied []kmsg.OffsetDeleteRequestTopic
	if h.d.Authorizer != nil {
		readable := h.authorizedTopics(ctx, req, kmsg.ACLOperationRead, offsetDeleteTopics(r))
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
	var resp *kmsg.OffsetDeleteResponse
	code := h.onAuthorizedGroupShard(ctx, req, kmsg.ACLOperationDelete, r.Group, func(s *group.Shard, w group.Writer) {
		var res group.Result
		resp, res = s.OffsetDelete(r)
		if err := finish(w, res); err != nil {
			resp = kmsg.NewPtrOffsetDeleteResponse()
			resp.ErrorCode = group.AppendErrorCode(err)
		}
	})
	if code != 0 {
		resp = kmsg.NewPtrOffsetDeleteResponse()
		resp.ErrorCode = code
	}
	resp.Version = r.Version
	if resp.ErrorCode == 0 {
		for _, t := range denied {
			rt := kmsg.NewOffsetDeleteResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetDeleteResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, kerr.TopicAuthorizationFailed.Code
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
	}
	return resp, nil
}

func offsetDeleteTopics(r *kmsg.OffsetDeleteRequest) []string {
	var names []string
	for _, t := range r.Topics {
		names = append(names, t.Topic)
	}
	return names
}
