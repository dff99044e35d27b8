package handlers

// ConsumerGroupHeartbeat (key 68), versions 0-1: the KIP-848 consumer group
// protocol's one request: join, heartbeat, report owned partitions, receive
// the member epoch and assignment, leave (epoch -1, static -2). v1 adds
// SubscribedTopicRegex, resolved by the broker. The group's state is written
// to __consumer_offsets in Kafka's record formats before the answer.
//
// Needs READ on the group (else GROUP_AUTHORIZATION_FAILED) and DESCRIBE on
// every subscribed topic named (else TOPIC_AUTHORIZATION_FAILED naming them),
// as Kafka.
//
// While group.version is 0 the request is answered UNSUPPORTED_VERSION (features.go),
// as Kafka answers it.

import (
	"context"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/coordinator/group"
	"gregor/internal/network"
)

var consumerGroupHeartbeatAPI = api{key: 68, min: 0, max: 1, handle: (*Handlers).consumerGroupHeartbeat}

// groupTopics are the cluster's topics as the consumer group assignors see them.
func (h *Handlers) groupTopics() group.Topics {
	img := h.image()
	out := make(group.Topics, img.Topics.Len())
	for name, t := range img.Topics.All() {
		out[name] = group.TopicInfo{ID: t.ID, Partitions: int32(t.NumPartitions())}
	}
	return out
}

func (h *Handlers) consumerGroupHeartbeat(ctx context.Context, req *network.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.ConsumerGroupHeartbeatRequest)
	if !h.consumerGroupProtocolEnabled() {
		resp := kmsg.NewPtrConsumerGroupHeartbeatResponse()
		resp.Version, resp.ErrorCode = r.Version, kerr.UnsupportedVersion.Code
		return resp, nil
	}
	clientID, clientHost := clientInfo(req)
	topics := h.groupTopics()
	if !h.authorized(ctx, req, kmsg.ACLOperationRead, kmsg.ACLResourceTypeGroup, r.Group) {
		resp := kmsg.NewPtrConsumerGroupHeartbeatResponse()
		resp.Version, resp.ErrorCode = r.Version, kerr.GroupAuthorizationFailed.Code
		return resp, nil
	}
	if len(r.SubscribedTopicNames) > 0 {
		var denied []string
		for _, n := range r.SubscribedTopicNames {
			if !h.authorized(ctx, req, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, n) {
				denied = append(denied, n)
			}
		}
		if len(denied) > 0 {
			resp := kmsg.NewPtrConsumerGroupHeartbeatResponse()
			resp.Version, resp.ErrorCode = r.Version, kerr.TopicAuthorizationFailed.Code
			resp.ErrorMessage = kmsg.StringPtr("The following topics are unauthorized for subscription: " + strings.Join(denied, ", "))
			return resp, nil
		}
	}
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
