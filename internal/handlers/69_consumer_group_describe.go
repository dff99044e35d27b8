package handlers

// ConsumerGroupDescribe (key 69), versions 0-1: KIP-848 groups with their
// epochs, assignor, and each member's current and target assignment.
//
// Each group needs DESCRIBE, else GROUP_AUTHORIZATION_FAILED (as Kafka).
// Asked for them, a group answered without error carries the principal's
// authorized operations on it (KIP-430); the others keep the omitted
// value, as in Kafka.
//
// While group.version is 0 the request is answered UNSUPPORTED_VERSION (features.go),
// as Kafka answers it.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/coordinator/group"
	"gregor/internal/network"
)

var consumerGroupDescribeAPI = api{key: 69, min: 0, max: 1, handle: (*Handlers).consumerGroupDescribe}

func (h *Handlers) consumerGroupDescribe(ctx context.Context, req *network.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.ConsumerGroupDescribeRequest)
	resp := kmsg.NewPtrConsumerGroupDescribeResponse()
	resp.Version = r.Version
	if !h.consumerGroupProtocolEnabled() {
		// Kafka's getErrorResponse: every group, the code alone.
		for _, id := range r.Groups {
			rg := kmsg.NewConsumerGroupDescribeResponseGroup()
			rg.Group, rg.ErrorCode = id, kerr.UnsupportedVersion.Code
			resp.Groups = append(resp.Groups, rg)
		}
		return resp, nil
	}
	for _, id := range r.Groups {
		var rg kmsg.ConsumerGroupDescribeResponseGroup
		code := h.onAuthorizedGroupShard(ctx, req, kmsg.ACLOperationDescribe, id, func(s *group.Shard, _ group.Writer) {
			rg = s.ConsumerGroupDescribe(r.Version, id)
		})
		if code != 0 {
			rg = kmsg.NewConsumerGroupDescribeResponseGroup()
			rg.Group, rg.ErrorCode = id, code
		}
		if r.IncludeAuthorizedOperations && rg.ErrorCode == 0 {
			rg.AuthorizedOperations = h.authorizedOperations(ctx, req, kmsg.ACLResourceTypeGroup, id)
		}
		resp.Groups = append(resp.Groups, rg)
	}
	// Assignments carry topic names next to the ids, as Kafka's do; the
	// shard knows only ids.
	img := h.image()
	name := func(a *kmsg.Assignment) {
		for i := range a.TopicPartitions {
			if t := img.Topics.TopicByID(a.TopicPartitions[i].TopicID); t != nil {
				a.TopicPartitions[i].Topic = t.Name
			}
		}
	}
	for gi := range resp.Groups {
		for mi := range resp.Groups[gi].Members {
			m := &resp.Groups[gi].Members[mi]
			name(&m.Assignment)
			name(&m.TargetAssignment)
		}
	}
	return resp, nil
}
