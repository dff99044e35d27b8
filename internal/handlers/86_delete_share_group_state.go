package handlers

// DeleteShareGroupState (key 86), v0: sent by the share group coordinator
// when a share group, or its offsets of a topic, is deleted. Writes a
// tombstone of each share-partition's state; deleting state that does not
// exist succeeds. Partitions this broker does not coordinate answer
// NOT_COORDINATOR; the answer waits until the tombstone is committed.
// Needs CLUSTER_ACTION (share_state.go).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/coordinator/sharecoord"
	"gregor/internal/network"
	"gregor/internal/sharestate"
)

var deleteShareGroupStateAPI = api{key: 86, min: 0, max: 0, handle: (*Handlers).deleteShareGroupStateRequest}

func (h *Handlers) deleteShareGroupStateRequest(ctx context.Context, req *network.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.DeleteShareGroupStateRequest)
	resp := r.ResponseKind().(*kmsg.DeleteShareGroupStateResponse)
	var keys []sharestate.Key
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			keys = append(keys, sharestate.Key{GroupID: r.GroupID, TopicID: t.TopicID, Partition: p.Partition})
		}
	}
	errs := h.shareStatePartitions(ctx, req, r.GroupID, keys, func(svc *sharecoord.Service, i int) error {
		return svc.Delete(ctx, keys[i])
	})
	i := 0
	for _, t := range r.Topics {
		rt := kmsg.NewDeleteShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewDeleteShareGroupStateResponseTopicPartition()
			rp.Partition = p.Partition
			rp.ErrorCode, rp.ErrorMessage = shareStateCode(errs[i])
			i++
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}
