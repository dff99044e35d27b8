package handlers

// ReadShareGroupStateSummary (key 87), v0-1: sent by the share group
// coordinator to describe share group offsets. Answers each
// share-partition's state epoch, leader epoch and start offset, and from v1
// (Kafka 4.2, KIP-1226) its delivery-complete count; it fences nothing. A
// share-partition without state answers start offset -1, as Kafka.
// Partitions this broker does not coordinate answer NOT_COORDINATOR; the
// answer waits until what it reports is committed. Needs CLUSTER_ACTION
// (share_state.go).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/coordinator/sharecoord"
	"gregor/internal/network"
	"gregor/internal/sharestate"
)

var readShareGroupStateSummaryAPI = api{key: 87, min: 0, max: 1, handle: (*Handlers).readShareGroupStateSummary}

func (h *Handlers) readShareGroupStateSummary(ctx context.Context, req *network.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.ReadShareGroupStateSummaryRequest)
	resp := r.ResponseKind().(*kmsg.ReadShareGroupStateSummaryResponse)
	var keys []sharestate.Key
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			keys = append(keys, sharestate.Key{GroupID: r.GroupID, TopicID: t.TopicID, Partition: p.Partition})
		}
	}
	sums := make([]sharestate.Summary, len(keys))
	errs := h.shareStatePartitions(ctx, req, r.GroupID, keys, func(svc *sharecoord.Service, i int) error {
		var err error
		sums[i], err = svc.ReadSummary(ctx, keys[i])
		return err
	})
	i := 0
	for _, t := range r.Topics {
		rt := kmsg.NewReadShareGroupStateSummaryResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewReadShareGroupStateSummaryResponseTopicPartition()
			rp.Partition = p.Partition
			rp.ErrorCode, rp.ErrorMessage = shareStateCode(errs[i])
			if errs[i] == nil {
				s := sums[i]
				rp.StateEpoch, rp.LeaderEpoch, rp.StartOffset, rp.DeliveryCompleteCount = s.StateEpoch, s.LeaderEpoch, s.StartOffset, s.DeliveryCompleteCount
			} else {
				rp.LeaderEpoch, rp.StartOffset = -1, -1
			}
			i++
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}
