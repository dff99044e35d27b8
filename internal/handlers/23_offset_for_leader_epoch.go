package handlers

// OffsetForLeaderEpoch (key 23): for each partition, where the requested
// leader epoch ends in the leader's log (Kafka's endOffsetFor), so a
// follower or a consumer that saw another leader can find where its log
// diverged. Answered by the leader only; a stale or future current leader
// epoch is FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH.
//
// Authorization (Kafka's): a follower (replica id >= 0) needs CLUSTER_ACTION
// on the cluster (else CLUSTER_AUTHORIZATION_FAILED on every partition), a
// client DESCRIBE on each topic (else TOPIC_AUTHORIZATION_FAILED).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/network"
)

var offsetForLeaderEpochAPI = api{key: 23, min: 2, max: 4, handle: (*Handlers).offsetForLeaderEpoch}

func (h *Handlers) offsetForLeaderEpoch(ctx context.Context, req *network.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.OffsetForLeaderEpochRequest)
	resp := r.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	var names []string
	for _, t := range r.Topics {
		names = append(names, t.Topic)
	}
	var refused func(topic string) int16
	if r.Version >= 3 && r.ReplicaID >= 0 {
		ok := h.authorizedCluster(ctx, req, kmsg.ACLOperationClusterAction)
		refused = func(string) int16 {
			if ok {
				return 0
			}
			return kerr.ClusterAuthorizationFailed.Code
		}
	} else {
		describable := h.authorizedTopics(ctx, req, kmsg.ACLOperationDescribe, names)
		refused = func(topic string) int16 {
			if describable[topic] {
				return 0
			}
			return kerr.TopicAuthorizationFailed.Code
		}
	}
	for _, t := range r.Topics {
		if code := refused(t.Topic); code != 0 {
			rt := kmsg.NewOffsetForLeaderEpochResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
				rp.Partition, rp.ErrorCode, rp.LeaderEpoch, rp.EndOffset = p.Partition, code, -1, -1
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
			continue
		}
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
