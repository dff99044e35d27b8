package handlers

// DescribeProducers (key 61, KIP-664): the producers a partition's leader
// remembers — producer id, epoch, last sequence and timestamp, and the
// start offset of an ongoing transaction (-1 for none) — as
// kafka-transactions.sh describe-producers shows them. Only the leader
// answers (NOT_LEADER_OR_FOLLOWER elsewhere).
//
// Each topic needs READ, else TOPIC_AUTHORIZATION_FAILED (as Kafka).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/network"
)

var describeProducersAPI = api{key: 61, min: 0, max: 0, handle: (*Handlers).describeProducers}

func (h *Handlers) describeProducers(ctx context.Context, req *network.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.DescribeProducersRequest)
	resp := r.ResponseKind().(*kmsg.DescribeProducersResponse)
	var names []string
	for _, t := range r.Topics {
		names = append(names, t.Topic)
	}
	readable := h.authorizedTopics(ctx, req, kmsg.ACLOperationRead, names)
	for _, t := range r.Topics {
		rt := kmsg.NewDescribeProducersResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewDescribeProducersResponseTopicPartition()
			rp.Partition = p
			rp.ActiveProducers = []kmsg.DescribeProducersResponseTopicPartitionActiveProducer{}
			if !readable[t.Topic] {
				rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			producers, err := h.d.Replica.DescribeProducers(t.Topic, p)
			rp.ErrorCode, rp.ErrorMessage = errorCode(err), errorMessage(err)
			rp.ActiveProducers = []kmsg.DescribeProducersResponseTopicPartitionActiveProducer{}
			for _, pi := range producers {
				ap := kmsg.NewDescribeProducersResponseTopicPartitionActiveProducer()
				ap.ProducerID, ap.ProducerEpoch, ap.LastSequence = pi.ProducerID, int32(pi.ProducerEpoch), pi.LastSequence
				ap.LastTimestamp, ap.CoordinatorEpoch, ap.CurrentTxnStartOffset = pi.LastTimestamp, pi.CoordinatorEpoch, pi.CurrentTxnStartOffset
				rp.ActiveProducers = append(rp.ActiveProducers, ap)
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}
