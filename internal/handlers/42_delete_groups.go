package handlers

// DeleteGroups (key 42), versions 0-2: deletes empty groups and their offsets
// (NON_EMPTY_GROUP while members remain, GROUP_ID_NOT_FOUND for unknown ones).
//
// Each group needs DELETE, else GROUP_AUTHORIZATION_FAILED (as Kafka).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/coordinator/group"
	"gregor/internal/network"
)

var deleteGroupsAPI = api{key: 42, min: 0, max: 2, handle: (*Handlers).deleteGroups}

func (h *Handlers) deleteGroups(ctx context.Context, req *network.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.DeleteGroupsRequest)
	resp := kmsg.NewPtrDeleteGroupsResponse()
	resp.Version = r.Version
	for _, id := range r.Groups {
		rg := kmsg.NewDeleteGroupsResponseGroup()
		rg.Group = id
		code := h.onAuthorizedGroupShard(ctx, req, kmsg.ACLOperationDelete, id, func(s *group.Shard, w group.Writer) {
			c, res := s.DeleteGroup(nowMs(), id)
			if err := finish(w, res); err != nil {
				c = group.AppendErrorCode(err)
			}
			rg.ErrorCode = c
		})
		if code != 0 {
			rg.ErrorCode = code
		}
		resp.Groups = append(resp.Groups, rg)
	}
	return resp, nil
}
