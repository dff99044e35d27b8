package handlers

// ReadShareGroupState (key 84), v0: sent by a partition leader when it
// starts serving a share-partition. Answers the share-partition's state
// epoch, start offset and state batches, and records the leader epoch the
// read carries: from then on reads and writes with an older one are
// FENCED_LEADER_EPOCH. A share-partition without state (never initialized,
// or deleted) is INVALID_REQUEST, as Kafka. Partitions this broker does not
// coordinate answer NOT_COORDINATOR; the answer waits until what it reports
// is committed. Needs CLUSTER_ACTION (share_state.go).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/coordinator/sharecoord"
	"gregor/internal/network"
	"gregor/internal/sharestate"
)

var readShareGroupStateAPI = api{key: 84, min: 0, max: 0, handle: (*Handlers).readShareGroupState}

func (h *Handlers) readShareGroupState(ctx context.Context, req *network.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.ReadShareGroupStateRequest)
	resp := r.ResponseKind().(*kmsg.ReadShareGroupStateResponse)
	var keys []sharestate.Key
	var epochs []int32
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			keys = append(keys, sharestate.Key{GroupID: r.GroupID, TopicID: t.TopicID, Partition: p.Partition})
			epochs = append(epochs, p.LeaderEpoch)
		}
	}
	states := make([]sharestate.State, len(keys))
	errs := h.shareStatePartitions(ctx, req, r.GroupID, keys, func(svc *sharecoord.Service, i int) error {
		var err error
		states[i], err = svc.Read(ctx, keys[i], epochs[i])
		return err
	})
	i := 0
	for _, t := range r.Topics {
		rt := kmsg.NewReadShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewReadShareGroupStateResponseTopicPartition()
			rp.Partition = p.Partition
			rp.ErrorCode, rp.ErrorMessage = shareStateCode(errs[i])
			if errs[i] == nil {
				st := states[i]
				rp.StateEpoch, rp.StartOffset = st.StateEpoch, st.StartOffset
				for _, b := range st.Batches {
					sb := kmsg.NewReadShareGroupStateResponseTopicPartitionStateBatch()
					sb.FirstOffset, sb.LastOffset, sb.DeliveryState, sb.DeliveryCount = b.FirstOffset, b.LastOffset, int8(b.DeliveryState), b.DeliveryCount
					rp.StateBatches = append(rp.StateBatches, sb)
				}
			} else {
				rp.StartOffset = -1
			}
			i++
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}
