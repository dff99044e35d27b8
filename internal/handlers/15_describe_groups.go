package handlers

// DescribeGroups (key 15), versions 0-6: state, protocol and members (with
// metadata and assignment once Stable); v6 answers GROUP_ID_NOT_FOUND for
// unknown groups (KIP-1043), earlier versions the Dead state.
//
// Each group needs DESCRIBE, else GROUP_AUTHORIZATION_FAILED (as Kafka).
// Asked for them (v3+), a group answered without error carries the
// principal's authorized operations on it (KIP-430); the others keep the
// omitted value, as in Kafka.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/coordinator/group"
	"gregor/internal/network"
)

var describeGroupsAPI = api{key: 15, min: 0, max: 6, handle: (*Handlers).describeGroups}

func (h *Handlers) describeGroups(ctx context.Context, req *network.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.DescribeGroupsRequest)
	resp := kmsg.NewPtrDescribeGroupsResponse()
	resp.Version = r.Version
	for _, id := range r.Groups {
		var rg kmsg.DescribeGroupsResponseGroup
		code := h.onAuthorizedGroupShard(ctx, req, kmsg.ACLOperationDescribe, id, func(s *group.Shard, _ group.Writer) {
			rg = s.DescribeGroup(r.Version, id)
		})
		if code != 0 {
			rg = kmsg.NewDescribeGroupsResponseGroup()
			rg.Group, rg.ErrorCode = id, code
		}
		if r.Version >= 3 && r.IncludeAuthorizedOperations && rg.ErrorCode == 0 {
			rg.AuthorizedOperations = h.authorizedOperations(ctx, req, kmsg.ACLResourceTypeGroup, id)
		}
		resp.Groups = append(resp.Groups, rg)
	}
	return resp, nil
}
