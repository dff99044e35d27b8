package handlers

// ListOffsets (key 2), v1-8 (v1 is Kafka 4.0's floor). Per partition: the
// latest offset (-1: high watermark, or last stable offset under
// read_committed), the earliest (-2, and -4 "earliest local", the same
// without tiered storage), the max timestamp (-3, v7+), or the first offset
// at or after a timestamp via the time index. No match gives offset -1 with
// no error, as Kafka. A partition named twice in one request gets
// INVALID_REQUEST; a current leader epoch (v4+) is checked as in Fetch.
// Each topic needs DESCRIBE, else TOPIC_AUTHORIZATION_FAILED (as Kafka).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/network"
	"gregor/internal/replica"
)

var listOffsetsAPI = api{key: 2, min: 1, max: 8, handle: (*Handlers).listOffsets}

func (h *Handlers) listOffsets(ctx context.Context, req *network.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.ListOffsetsRequest)
	resp := r.ResponseKind().(*kmsg.ListOffsetsResponse)
	readCommitted := r.IsolationLevel == 1
	type key struct {
		topic string
		p     int32
	}
	count := make(map[key]int)
	var names []string
	for _, t := range r.Topics {
		names = append(names, t.Topic)
		for _, p := range t.Partitions {
			count[key{t.Topic, p.Partition}]++
		}
	}
	describable := h.authorizedTopics(ctx, req, kmsg.ACLOperationDescribe, names)
	for _, t := range r.Topics {
		rt := kmsg.NewListOffsetsResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewListOffsetsResponseTopicPartition()
			rp.Partition = p.Partition
			rp.Offset, rp.Timestamp, rp.LeaderEpoch = -1, -1, -1
			switch {
			case !describable[t.Topic]:
				rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			case count[key{t.Topic, p.Partition}] > 1:
				rp.ErrorCode = kerr.InvalidRequest.Code
			case p.Timestamp == replica.ListMaxTimestamp && r.Version < 7,
				p.Timestamp == replica.ListEarliestLocal && r.Version < 8:
				rp.ErrorCode = kerr.UnsupportedVersion.Code
			default:
				off, ts, epoch, found, err := h.d.Replica.ListOffset(t.Topic, p.Partition, p.CurrentLeaderEpoch, p.Timestamp, readCommitted)
				rp.ErrorCode = errorCode(err)
				if err == nil && found {
					rp.Offset, rp.Timestamp, rp.LeaderEpoch = off, ts, epoch
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}
