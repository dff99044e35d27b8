package handlers

// WriteShareGroupState (key 85), v0-1: sent by a partition leader before it
// acknowledges a change of a share-partition's delivery state. The state
// batches merge into the stored ones (on overlap the higher delivery count,
// then state, wins), offsets below the new start offset are dropped; v1
// (Kafka 4.2, KIP-1226) carries the delivery-complete count. A leader or
// state epoch older than the stored one is FENCED_LEADER_EPOCH /
// FENCED_STATE_EPOCH; a share-partition without state is INVALID_REQUEST.
// Partitions this broker does not coordinate answer NOT_COORDINATOR; the
// answer waits until the write is committed. Needs CLUSTER_ACTION
// (share_state.go).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/coordinator/sharecoord"
	"gregor/internal/network"
	"gregor/internal/sharestate"
)

var writeShareGroupStateAPI = api{key: 85, min: 0, max: 1, handle: (*Handlers).writeShareGroupState}

func (h *Handlers) writeShareGroupState(ctx context.Context, req *network.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.WriteShareGroupStateRequest)
	resp := r.ResponseKind().(*kmsg.WriteShareGroupStateResponse)
	var keys []sharestate.Key
	var updates []sharestate.Update
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			keys = append(keys, sharestate.Key{GroupID: r.GroupID, TopicID: t.TopicID, Partition: p.Partition})
			u := sharestate.Update{StateEpoch: p.StateEpoch, LeaderEpoch: p.LeaderEpoch, StartOffset: p.StartOffset, DeliveryCompleteCount: -1}
			if r.Version >= 1 {
				u.DeliveryCompleteCount = p.DeliveryCompleteCount
			}
			for _, b := range p.StateBatches {
				u.Batches = append(u.Batches, sharestate.Batch{
					FirstOffset: b.FirstOffset, LastOffset: b.LastOffset,
					DeliveryState: sharestate.DeliveryState(b.DeliveryState), DeliveryCount: b.DeliveryCount,
				})
			}
			updates = append(updates, u)
		}
	}
	errs := h.shareStatePartitions(ctx, req, r.GroupID, keys, func(svc *sharecoord.Service, i int) error {
		return svc.Write(ctx, keys[i], updates[i])
	})
	i := 0
	for _, t := range r.Topics {
		rt := kmsg.NewWriteShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewWriteShareGroupStateResponseTopicPartition()
			rp.Partition = p.Partition
			rp.ErrorCode, rp.ErrorMessage = shareStateCode(errs[i])
			i++
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}
