package handlers

// JoinGroup (key 11), versions 2-9 (Kafka 4.0 removed 0-1, KIP-896). The
// answer waits until the group's join phase completes, so the connection's
// next requests are let through first (network.Request.Dispatched).
//
// Needs READ on the group, else GROUP_AUTHORIZATION_FAILED (as Kafka).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/coordinator/group"
	"gregor/internal/network"
)

var joinGroupAPI = api{key: 11, min: 2, max: 9, handle: (*Handlers).joinGroup}

func (h *Handlers) joinGroup(ctx context.Context, req *network.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.JoinGroupRequest)
	clientID, clientHost := clientInfo(req)
	respond, wait := awaitReply()
	code := h.onAuthorizedGroupShard(ctx, req, kmsg.ACLOperationRead, r.Group, func(s *group.Shard, w group.Writer) {
		_ = finish(w, s.JoinGroup(nowMs(), r, clientID, clientHost, respond))
	})
	if code != 0 {
		resp := kmsg.NewPtrJoinGroupResponse()
		resp.Version, resp.ErrorCode, resp.Generation, resp.MemberID = r.Version, code, -1, r.MemberID
		return resp, nil
	}
	req.Dispatched()
	return wait(ctx)
}
