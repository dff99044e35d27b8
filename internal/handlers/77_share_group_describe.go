package handlers

// ShareGroupDescribe (key 77), version 1: share groups with their epochs,
// assignor ("simple") and each member's subscription and assignment.
//
// Each group needs DESCRIBE, else GROUP_AUTHORIZATION_FAILED; a group any
// of whose assigned topics the principal may not DESCRIBE is answered with
// TOPIC_AUTHORIZATION_FAILED alone, nothing of it shown (as Kafka). Asked
// for them, a group answered without error carries the principal's
// authorized operations on it (KIP-430).
//
// While share.version is 0 the request is answered UNSUPPORTED_VERSION (features.go),
// as Kafka answers it.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/coordinator/group"
	"gregor/internal/network"
)

var shareGroupDescribeAPI = api{key: 77, min: 1, max: 1, handle: (*Handlers).shareGroupDescribe, needs: hasShares}

func (h *Handlers) shareGroupDescribe(ctx context.Context, req *network.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.ShareGroupDescribeRequest)
	resp := kmsg.NewPtrShareGroupDescribeResponse()
	resp.Version = r.Version
	if !h.shareGroupsEnabled() {
		// Kafka's getErrorResponse: every group, the code alone.
		for _, id := range r.GroupIDs {
			rg := kmsg.NewShareGroupDescribeResponseGroup()
			rg.GroupID, rg.ErrorCode = id, kerr.UnsupportedVersion.Code
			resp.Groups = append(resp.Groups, rg)
		}
		return resp, nil
	}
	img := h.image()
	for _, id := range r.GroupIDs {
		var rg kmsg.ShareGroupDescribeResponseGroup
		code := h.onAuthorizedGroupShard(ctx, req, kmsg.ACLOperationDescribe, id, func(s *group.Shard, _ group.Writer) {
			rg = s.ShareGroupDescribe(id)
		})
		if code != 0 {
			rg = kmsg.NewShareGroupDescribeResponseGroup()
			rg.GroupID, rg.ErrorCode = id, code
		}
		// Assignments carry topic names next to the ids, as Kafka's do.
		denied := false
		for mi := range rg.Members {
			for ti := range rg.Members[mi].Assignment.TopicPartitions {
				t := &rg.Members[mi].Assignment.TopicPartitions[ti]
				if tt := img.Topics.TopicByID(t.TopicID); tt != nil {
					t.Topic = tt.Name
				}
				if !h.authorized(ctx, req, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, t.Topic) {
					denied = true
				}
			}
		}
		if denied {
			rg = kmsg.NewShareGroupDescribeResponseGroup()
			rg.GroupID, rg.ErrorCode = id, kerr.TopicAuthorizationFailed.Code
		}
		if r.IncludeAuthorizedOperations && rg.ErrorCode == 0 {
			rg.AuthorizedOperations = h.authorizedOperations(ctx, req, kmsg.ACLResourceTypeGroup, id)
		}
		resp.Groups = append(resp.Groups, rg)
	}
	return resp, nil
}
