package handlers

// SyncGroup (key 14), versions 0-5. Members wait for the leader's
// assignment, which is stored in __consumer_offsets before it is handed out.
//
// Needs READ on the group, else GROUP_AUTHORIZATION_FAILED (as Kafka).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/coordinator/group"
	"gregor/internal/network"
)

var syncGroupAPI = api{key: 14, min: 0, max: 5, handle: (*Handlers).syncGroup}

func (h *Handlers) syncGroup(ctx context.Context, req *network.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.SyncGroupRequest)
	respond, wait := awaitReply()
	code := h.onAuthorizedGroupShard(ctx, req, kmsg.ACLOperationRead, r.Group, func(s *group.Shard, w group.Writer) {
		_ = finish(w, s.SyncGroup(nowMs(), r, respond))
	})
	if code != 0 {
		resp := kmsg.NewPtrSyncGroupResponse()
		resp.Version, resp.ErrorCode, resp.MemberAssignment = r.Version, code, []byte{}
		return resp, nil
	}
	req.Dispatched()
	return wait(ctx)
}
