package handlers

// OffsetFetch (key 9), versions 1-9 (Kafka 4.0 removed 0): committed offsets
// of one group, or of several (v8+). Null topics mean all of the group's
// offsets. require_stable (v7+) goes to the shard (see Shard.FetchOffsets):
// a partition with an offset in an open transaction (TxnOffsetCommit, no
// marker yet) answers UNSTABLE_OFFSET_COMMIT with offset -1, the group no
// error, as Kafka does. v9 names the
// member and its epoch: a KIP-848 group checks them first (Kafka's
// ConsumerGroup.validateOffsetFetch).
//
// Each group needs DESCRIBE (else GROUP_AUTHORIZATION_FAILED). Topics need
// DESCRIBE: a topic asked for without it gets TOPIC_AUTHORIZATION_FAILED on
// its partitions, and "all topics" leaves it out (as Kafka).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/coordinator/group"
	"gregor/internal/network"
)

var offsetFetchAPI = api{key: 9, min: 1, max: 9, handle: (*Handlers).offsetFetch}

func (h *Handlers) offsetFetch(ctx context.Context, req *network.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.OffsetFetchRequest)
	resp := kmsg.NewPtrOffsetFetchResponse()
	resp.Version = r.Version
	fetch := func(id string, memberID *string, memberEpoch int32, topics []kmsg.OffsetFetchRequestGroupTopic) kmsg.OffsetFetchResponseGroup {
		rg := kmsg.NewOffsetFetchResponseGroup()
		rg.Group = id
		var denied []kmsg.OffsetFetchRequestGroupTopic
		if topics != nil && h.d.Authorizer != nil {
			var names []string
			for _, t := range topics {
				names = append(names, t.Topic)
			}
			describable := h.authorizedTopics(ctx, req, kmsg.ACLOperationDescribe, names)
			var allowed []kmsg.OffsetFetchRequestGroupTopic
			for _, t := range topics {
				if describable[t.Topic] {
					allowed = append(allowed, t)
				} else {
					denied = append(denied, t)
				}
			}
			topics = append([]kmsg.OffsetFetchRequestGroupTopic{}, allowed...)
		}
		code := h.onAuthorizedGroupShard(ctx, req, kmsg.ACLOperationDescribe, id, func(s *group.Shard, _ group.Writer) {
			if rg.ErrorCode = s.ValidateOffsetFetch(id, memberID, memberEpoch); rg.ErrorCode != 0 {
				return
			}
			rg.ErrorCode, rg.Topics = s.FetchOffsets(id, topics, r.RequireStable)
		})
		if code != 0 {
			rg.ErrorCode, rg.Topics = code, nil
			return rg
		}
		if rg.ErrorCode != 0 {
			return rg
		}
		if topics == nil && h.d.Authorizer != nil {
			// All topics: only those the principal may describe.
			var names []string
			for _, t := range rg.Topics {
				names = append(names, t.Topic)
			}
			describable := h.authorizedTopics(ctx, req, kmsg.ACLOperationDescribe, names)
			kept := rg.Topics[:0]
			for _, t := range rg.Topics {
				if describable[t.Topic] {
					kept = append(kept, t)
				}
			}
			rg.Topics = kept
		}
		for _, t := range denied {
			rt := kmsg.NewOffsetFetchResponseGroupTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
				rp.Partition, rp.Offset, rp.LeaderEpoch, rp.ErrorCode = p, -1, -1, kerr.TopicAuthorizationFailed.Code
				rt.Partitions = append(rt.Partitions, rp)
			}
			rg.Topics = append(rg.Topics, rt)
		}
		return rg
	}
	if r.Version >= 8 {
		for _, g := range r.Groups {
			resp.Groups = append(resp.Groups, fetch(g.Group, g.MemberID, g.MemberEpoch, g.Topics))
		}
		return resp, nil
	}
	var topics []kmsg.OffsetFetchRequestGroupTopic
	if r.Topics != nil {
		topics = []kmsg.OffsetFetchRequestGroupTopic{}
		for _, t := range r.Topics {
			gt := kmsg.NewOffsetFetchRequestGroupTopic()
			gt.Topic, gt.Partitions = t.Topic, t.Partitions
			topics = append(topics, gt)
		}
	}
	rg := fetch(r.Group, nil, -1, topics)
	resp.ErrorCode = rg.ErrorCode
	for _, t := range rg.Topics {
		rt := kmsg.NewOffsetFetchResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetFetchResponseTopicPartition()
			rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata, rp.ErrorCode = p.Partition, p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if rg.ErrorCode != 0 && r.Version < 2 {
		// v0-1 have no top-level error: each partition carries it.
		for _, t := range r.Topics {
			rt := kmsg.NewOffsetFetchResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetFetchResponseTopicPartition()
				rp.Partition, rp.Offset, rp.LeaderEpoch, rp.ErrorCode = p, -1, -1, rg.ErrorCode
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
	}
	return resp, nil
}
