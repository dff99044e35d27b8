package handlers

// OffsetDelete (key 47), version 0: deletes a group's committed offsets,
// except for topics the group still subscribes to (GROUP_SUBSCRIBED_TO_TOPIC).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/coordinator/group"
	"gregor/internal/network"
)

var offsetDeleteAPI = api{key: 47, min: 0, max: 0, handle: (*Handlers).offsetDelete}

func (h *Handlers) offsetDelete(ctx context.Context, req *network.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.OffsetDeleteRequest)
	var resp *kmsg.OffsetDeleteResponse
	code := h.onGroupShard(ctx, r.Group, func(s *group.Shard, w group.Writer) {
		var res group.Result
		resp, res = s.OffsetDelete(r)
		if err := finish(w, res); err != nil {
			resp = kmsg.NewPtrOffsetDeleteResponse()
			resp.ErrorCode = group.AppendErrorCode(err)
		}
	})
	if code != 0 {
		resp = kmsg.NewPtrOffsetDeleteResponse()
		resp.ErrorCode = code
	}
	resp.Version = r.Version
	return resp, nil
}
