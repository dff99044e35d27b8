package handlers

// DescribeTopicPartitions (key 75, KIP-966): topics and their partitions,
// in pages: topics sorted by name, partitions by id, at most
// ResponsePartitionLimit partitions per answer (capped at
// max.request.partition.size.limit), continued from a cursor with the
// NextCursor of the previous answer. An empty topic list means every
// topic. Kafka 4.0's kafka-topics.sh --describe uses it. Each partition
// carries its eligible leader replicas and last known ELR.
//
// Each topic needs DESCRIBE on it: every topic lists only those; a topic
// named without it is TOPIC_AUTHORIZATION_FAILED whether it exists or not
// (as Kafka, and Metadata). Every other topic answered carries the
// principal's authorized operations on it (KIP-430): Kafka fills them in
// always, the request has no switch for them.

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/network"
)

var describeTopicPartitionsAPI = api{key: 75, min: 0, max: 0, handle: (*Handlers).describeTopicPartitions}

// maxRequestPartitionSizeLimit is Kafka's max.request.partition.size.limit
// default.
const maxRequestPartitionSizeLimit = 2000

func (h *Handlers) describeTopicPartitions(ctx context.Context, req *network.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.DescribeTopicPartitionsRequest)
	resp := r.ResponseKind().(*kmsg.DescribeTopicPartitionsResponse)
	img := h.image()

	var names []string
	if len(r.Topics) == 0 {
		for name := range img.Topics.Names() {
			names = append(names, name)
		}
	} else {
		for _, t := range r.Topics {
			names = append(names, t.Topic)
		}
	}
	slices.Sort(names)
	names = slices.Compact(names)
	describable := h.authorizedTopics(ctx, req, kmsg.ACLOperationDescribe, names)
	if len(r.Topics) == 0 {
		names = slices.DeleteFunc(names, func(n string) bool { return !describable[n] })
	}

	limit := int(r.ResponsePartitionLimit)
	if limit <= 0 || limit > maxRequestPartitionSizeLimit {
		limit = maxRequestPartitionSizeLimit
	}
	startTopic, startPartition := "", int32(0)
	if r.Cursor != nil {
		startTopic, startPartition = r.Cursor.Topic, r.Cursor.Partition
	}
	for i, name := range names {
		if name < startTopic {
			continue
		}
		first := int32(0)
		if name == startTopic {
			first = startPartition
		}
		rt := kmsg.NewDescribeTopicPartitionsResponseTopic()
		topic := name
		rt.Topic = &topic
		if !describable[name] {
			rt.ErrorCode = kerr.TopicAuthorizationFailed.Code
			resp.Topics = append(resp.Topics, rt)
			continue
		}
		rt.AuthorizedOperations = h.authorizedOperations(ctx, req, kmsg.ACLResourceTypeTopic, name)
		t := img.Topics.Topic(name)
		if t == nil {
			rt.ErrorCode = kerr.UnknownTopicOrPartition.Code
			resp.Topics = append(resp.Topics, rt)
			continue
		}
		if limit == 0 {
			// The page is full: continue with this topic next time.
			c := kmsg.NewDescribeTopicPartitionsResponseNextCursor()
			c.Topic, c.Partition = name, first
			resp.NextCursor = &c
			break
		}
		meta := h.describeTopic(img, t)
		rt.TopicID, rt.IsInternal = meta.TopicID, meta.IsInternal
		rt.Partitions = []kmsg.DescribeTopicPartitionsResponseTopicPartition{}
		for _, mp := range meta.Partitions {
			if mp.Partition < first {
				continue
			}
			if limit == 0 {
				c := kmsg.NewDescribeTopicPartitionsResponseNextCursor()
				c.Topic, c.Partition = name, mp.Partition
				resp.NextCursor = &c
				break
			}
			rp := kmsg.NewDescribeTopicPartitionsResponseTopicPartition()
			rp.ErrorCode, rp.Partition, rp.LeaderID, rp.LeaderEpoch = mp.ErrorCode, mp.Partition, mp.Leader, mp.LeaderEpoch
			rp.Replicas, rp.ISR, rp.OfflineReplicas = mp.Replicas, mp.ISR, mp.OfflineReplicas
			// KIP-966's eligible leader replicas, as the controller keeps
			// them (empty while eligible.leader.replicas.version is 0).
			rp.EligibleLeaderReplicas, rp.LastKnownELR = []int32{}, []int32{}
			if ip := t.Partition(mp.Partition); ip != nil {
				rp.EligibleLeaderReplicas = append(rp.EligibleLeaderReplicas, ip.EligibleLeaderReplicas...)
				rp.LastKnownELR = append(rp.LastKnownELR, ip.LastKnownELR...)
			}
			rt.Partitions = append(rt.Partitions, rp)
			limit--
		}
		resp.Topics = append(resp.Topics, rt)
		if resp.NextCursor != nil {
			break
		}
		if limit == 0 && i+1 < len(names) {
			c := kmsg.NewDescribeTopicPartitionsResponseNextCursor()
			c.Topic, c.Partition = names[i+1], 0
			resp.NextCursor = &c
			break
		}
	}
	return resp, nil
}
