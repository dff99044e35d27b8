package handlers

// OffsetForLeaderEpoch (key 23): for each partition, where the requested
// leader epoch ends in the leader's log (Kafka's endOffsetFor), so a
// follower or a consumer that saw another leader can find where its log
// diverged. Answered by the leader only; a stale or future current leader
// epoch is FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/network"
)

var offsetForLeaderEpochAPI = api{key: 23, min: 2, max: 4, handle: (*Handlers).offsetForLeaderEpoch}

func (h *Handlers) offsetForLeaderEpoch(_ context.Context, req *network.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.OffsetForLeaderEpochRequest)
	resp := r.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	for _, t := range r.Topics {
		rt := kmsg.NewOffsetForLeaderEpochResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			rp.Partition = p.Partition
			epoch, end, err := h.d.Replica.OffsetForLeaderEpoch(t.Topic, p.Partition, p.CurrentLeaderEpoch, p.LeaderEpoch)
			rp.ErrorCode, rp.LeaderEpoch, rp.EndOffset = errorCode(err), epoch, end
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}
