package handlers

// LeaveGroup (key 13), versions 0-5; v3+ removes several members at once,
// by member id or (static members) group.instance.id.
//
// Needs READ on the group, else GROUP_AUTHORIZATION_FAILED (as Kafka).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/coordinator/group"
	"gregor/internal/network"
)

var leaveGroupAPI = api{key: 13, min: 0, max: 5, handle: (*Handlers).leaveGroup}

func (h *Handlers) leaveGroup(ctx context.Context, req *network.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.LeaveGroupRequest)
	var resp *kmsg.LeaveGroupResponse
	code := h.onAuthorizedGroupShard(ctx, req, kmsg.ACLOperationRead, r.Group, func(s *group.Shard, w group.Writer) {
		var res group.Result
		resp, res = s.LeaveGroup(nowMs(), r)
		_ = finish(w, res)
	})
	if code != 0 {
		resp = kmsg.NewPtrLeaveGroupResponse()
		resp.Version, resp.ErrorCode = r.Version, code
	}
	return resp, nil
}
