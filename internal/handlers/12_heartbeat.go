package handlers

// Heartbeat (key 12), versions 0-4: keeps a member's session alive and tells
// it when the group rebalances.
//
// Needs READ on the group, else GROUP_AUTHORIZATION_FAILED (as Kafka).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/coordinator/group"
	"gregor/internal/network"
)

var heartbeatAPI = api{key: 12, min: 0, max: 4, handle: (*Handlers).heartbeat}

func (h *Handlers) heartbeat(ctx context.Context, req *network.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.HeartbeatRequest)
	var resp *kmsg.HeartbeatResponse
	code := h.onAuthorizedGroupShard(ctx, req, kmsg.ACLOperationRead, r.Group, func(s *group.Shard, _ group.Writer) {
		resp = s.Heartbeat(nowMs(), r)
	})
	if code != 0 {
		resp = kmsg.NewPtrHeartbeatResponse()
		resp.Version, resp.ErrorCode = r.Version, code
	}
	return resp, nil
}
