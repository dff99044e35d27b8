package handlers

// DeleteRecords (key 21), v0-2 (v0 is Kafka 4.0's floor; v2 is flexible).
// For each partition: raise the log start offset to the requested offset
// (-1: the high watermark), delete the segments wholly below it, and answer
// the low watermark, the lowest log start offset among the replicas — here
// the leader's, since a partition has one replica until follower fetching
// exists, so the answer never waits for timeout_ms. Errors, as Kafka:
// UNKNOWN_TOPIC_OR_PARTITION for a partition the metadata lacks,
// INVALID_TOPIC_EXCEPTION for internal topics, OFFSET_OUT_OF_RANGE above the
// high watermark or below -1, POLICY_VIOLATION when cleanup.policy lacks
// "delete", NOT_LEADER_OR_FOLLOWER, KAFKA_STORAGE_ERROR for an offline log
// dir; each with low watermark -1. A partition named twice is answered once,
// for its last offset (Kafka keys the request by partition).
//
// Each topic needs DELETE on it, else TOPIC_AUTHORIZATION_FAILED for its
// partitions, checked before whether it exists (as Kafka).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/network"
)

var deleteRecordsAPI = api{key: 21, min: 0, max: 2, handle: (*Handlers).deleteRecords}

func (h *Handlers) deleteRecords(ctx context.Context, req *network.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.DeleteRecordsRequest)
	names := make([]string, 0, len(r.Topics))
	for _, t := range r.Topics {
		names = append(names, t.Topic)
	}
	deletable := h.authorizedTopics(ctx, req, kmsg.ACLOperationDelete, names)
	resp := r.ResponseKind().(*kmsg.DeleteRecordsResponse)
	img := h.image()
	topicIndex := map[string]int{}
	partIndex := map[string]map[int32]int{}
	for _, t := range r.Topics {
		ti, ok := topicIndex[t.Topic]
		if !ok {
			ti = len(resp.Topics)
			topicIndex[t.Topic] = ti
			partIndex[t.Topic] = map[int32]int{}
			rt := kmsg.NewDeleteRecordsResponseTopic()
			rt.Topic = t.Topic
			resp.Topics = append(resp.Topics, rt)
		}
		rt := &resp.Topics[ti]
		for _, p := range t.Partitions {
			pi, seen := partIndex[t.Topic][p.Partition]
			if !seen {
				pi = len(rt.Partitions)
				partIndex[t.Topic][p.Partition] = pi
				rp := kmsg.NewDeleteRecordsResponseTopicPartition()
				rp.Partition = p.Partition
				rt.Partitions = append(rt.Partitions, rp)
			}
			rp := &rt.Partitions[pi]
			rp.LowWatermark, rp.ErrorCode = -1, 0
			known := false
			if it := img.Topics.Topic(t.Topic); it != nil {
				known = it.Partition(p.Partition) != nil
			}
			switch {
			case !deletable[t.Topic]:
				rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			case !known:
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case isInternalTopic(t.Topic):
				rp.ErrorCode = kerr.InvalidTopicException.Code
			default:
				lw, err := h.d.Replica.DeleteRecords(t.Topic, p.Partition, p.Offset)
				rp.ErrorCode = errorCode(err)
				if err == nil {
					rp.LowWatermark = lw
				}
			}
		}
	}
	return resp, nil
}
