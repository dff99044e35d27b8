package handlers

// InitializeShareGroupState (key 83), v0: sent by the share group
// coordinator to the share coordinator of each share-partition it is about
// to assign, and when share group offsets are reset. Each share-partition's
// state starts afresh with the given state epoch and start offset (a
// ShareSnapshot in __share_group_state); a state epoch below the stored
// one is FENCED_STATE_EPOCH. Partitions this broker does not coordinate
// answer NOT_COORDINATOR; the answer waits until the write is committed.
// Needs CLUSTER_ACTION (share_state.go).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/coordinator/sharecoord"
	"gregor/internal/network"
	"gregor/internal/sharestate"
)

var initializeShareGroupStateAPI = api{key: 83, min: 0, max: 0, handle: (*Handlers).initializeShareGroupState}

func (h *Handlers) initializeShareGroupState(ctx context.Context, req *network.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.InitializeShareGroupStateRequest)
	resp := r.ResponseKind().(*kmsg.InitializeShareGroupStateResponse)
	var keys []sharestate.Key
	var parts []kmsg.InitializeShareGroupStateRequestTopicPartition
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			keys = append(keys, sharestate.Key{GroupID: r.GroupID, TopicID: t.TopicID, Partition: p.Partition})
			parts = append(parts, p)
		}
	}
	errs := h.shareStatePartitions(ctx, req, r.GroupID, keys, func(svc *sharecoord.Service, i int) error {
		return svc.Initialize(ctx, keys[i], parts[i].StateEpoch, parts[i].StartOffset)
	})
	i := 0
	for _, t := range r.Topics {
		rt := kmsg.NewInitializeShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewInitializeShareGroupStateResponseTopicPartition()
			rp.Partition = p.Partition
			rp.ErrorCode, rp.ErrorMessage = shareStateCode(errs[i])
			i++
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}
