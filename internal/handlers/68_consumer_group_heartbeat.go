package handlers

// ConsumerGroupHeartbeat (key 68), versions 0-1: the KIP-848 consumer group
// protocol's one request: join, heartbeat, report owned partitions, receive
// the member epoch and assignment, leave (epoch -1, static -2). v1 adds
// SubscribedTopicRegex, resolved by the broker. The group's state is written
// to __consumer_offsets in Kafka's record formats before the answer.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/coordinator/group"
	"gregor/internal/network"
)

var consumerGroupHeartbeatAPI = api{key: 68, min: 0, max: 1, handle: (*Handlers).consumerGroupHeartbeat}

// groupTopics are the cluster's topics as the consumer group assignors see them.
func (h *Handlers) groupTopics() group.Topics {
	img := h.image()
	out := make(group.Topics, len(img.Topics.ByName))
	for name, t := range img.Topics.ByName {
		out[name] = group.TopicInfo{ID: t.ID, Partitions: int32(len(t.Partitions))}
	}
	return out
}

func (h *Handlers) consumerGroupHeartbeat(ctx context.Context, req *network.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.ConsumerGroupHeartbeatRequest)
	clientID, clientHost := clientInfo(req)
	topics := h.groupTopics()
	respond, wait := awaitReply()
	code := h.onGroupShard(ctx, r.Group, func(s *group.Shard, w group.Writer) {
		_ = finish(w, s.ConsumerGroupHeartbeat(nowMs(), r, clientID, clientHost, topics, respond))
	})
	if code != 0 {
		resp := kmsg.NewPtrConsumerGroupHeartbeatResponse()
		resp.Version, resp.ErrorCode = r.Version, code
		return resp, nil
	}
	return wait(ctx)
}
