package handlers

// DescribeShareGroupOffsets (key 90), versions 0-1: each share group's
// share-partition start offsets (SPSO) and leader epochs, read from the
// share-group state persister (ReadShareGroupStateSummary), as Kafka's
// GroupCoordinatorService.describeShareGroupOffsets. Version 1 (Kafka 4.2,
// KIP-1226) adds each share-partition's lag: the records from SPSO to the
// partition's end (its high watermark, asked of its leader with ListOffsets
// as Kafka's coordinator does) that are not delivery-complete, that is
// end - SPSO - the persisted delivery-complete count (records acknowledged
// or archived past SPSO), never below 0; -1 when one of those is not known
// (no state, a count the leader never persisted, a leader that did not
// answer).
//
// Topics null asks for every topic the group has state for; those the
// principal may not DESCRIBE are left out. Named topics answer each
// partition: UNKNOWN_TOPIC_OR_PARTITION for a topic or partition that does
// not exist, TOPIC_AUTHORIZATION_FAILED without DESCRIBE on the topic,
// start offset -1 for a partition the group has no state for.
//
// Each group needs DESCRIBE (else GROUP_AUTHORIZATION_FAILED); an id that
// names no share group is GROUP_ID_NOT_FOUND.
//
// While share.version is 0 the request is answered UNSUPPORTED_VERSION (features.go),
// as Kafka answers it.

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/coordinator/group"
	"gregor/internal/network"
	"gregor/internal/replica"
	"gregor/internal/sharestate"
)

var describeShareGroupOffsetsAPI = api{key: 90, min: 0, max: 1, handle: (*Handlers).describeShareGroupOffsets, needs: hasShares}

func (h *Handlers) describeShareGroupOffsets(ctx context.Context, req *network.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.DescribeShareGroupOffsetsRequest)
	resp := kmsg.NewPtrDescribeShareGroupOffsetsResponse()
	resp.Version = r.Version
	enabled := h.shareGroupsEnabled()
	for _, rg := range r.Groups {
		if !enabled {
			out := kmsg.NewDescribeShareGroupOffsetsResponseGroup()
			msg := kerr.UnsupportedVersion.Description
			out.GroupID, out.ErrorCode, out.ErrorMessage = rg.GroupID, kerr.UnsupportedVersion.Code, &msg
			resp.Groups = append(resp.Groups, out)
			continue
		}
		resp.Groups = append(resp.Groups, h.describeShareGroupOffsetsGroup(ctx, req, r.Version, rg))
	}
	return resp, nil
}

func (h *Handlers) describeShareGroupOffsetsGroup(ctx context.Context, req *network.Request, version int16, rg kmsg.DescribeShareGroupOffsetsRequestGroup) kmsg.DescribeShareGroupOffsetsResponseGroup {
	out := kmsg.NewDescribeShareGroupOffsetsResponseGroup()
	out.GroupID = rg.GroupID
	var (
		topics []group.ShareStateTopic
		gcode  int16
		gmsg   string
	)
	code := h.onAuthorizedGroupShard(ctx, req, kmsg.ACLOperationDescribe, rg.GroupID, func(s *group.Shard, _ group.Writer) {
		topics, gcode, gmsg = s.ShareGroupStateTopics(rg.GroupID, false)
	})
	if code == 0 && gcode != 0 {
		code = gcode
		out.ErrorMessage = &gmsg
	}
	if code != 0 {
		out.ErrorCode = code
		return out
	}
	initialized := map[[16]byte]map[int32]bool{}
	for _, t := range topics {
		ps := make(map[int32]bool, len(t.Initialized))
		for _, p := range t.Initialized {
			ps[p] = true
		}
		initialized[t.ID] = ps
	}
	img := h.image()
	// Version 1's lag: the partitions with a start offset and a count,
	// whose end offsets are asked for once all are read.
	type lagOf struct {
		topic, partition int
		tp               shareLagPartition
		notDone          int64 // end offset minus this
	}
	var lags []lagOf
	if rg.Topics == nil {
		for _, t := range topics {
			mt := img.Topics.TopicByID(t.ID)
			if len(t.Initialized) == 0 || mt == nil || !h.authorized(ctx, req, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, mt.Name) {
				continue
			}
			rg.Topics = append(rg.Topics, kmsg.DescribeShareGroupOffsetsRequestGroupTopic{Topic: mt.Name, Partitions: t.Initialized})
		}
	}
	for _, rt := range rg.Topics {
		ot := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopic()
		ot.Topic = rt.Topic
		mt := img.Topics.Topic(rt.Topic)
		var topicCode int16
		switch {
		case !h.authorized(ctx, req, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, rt.Topic):
			topicCode = kerr.TopicAuthorizationFailed.Code
		case mt == nil:
			topicCode = kerr.UnknownTopicOrPartition.Code
		default:
			ot.TopicID = mt.ID
		}
		for _, p := range rt.Partitions {
			op := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopicPartition()
			op.Partition, op.StartOffset, op.LeaderEpoch, op.Lag = p, -1, -1, -1
			switch {
			case topicCode != 0:
				op.ErrorCode = topicCode
			case mt.Partition(p) == nil:
				op.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case initialized[mt.ID][p]:
				sum, err := h.d.SharePersister.ReadSummary(ctx, sharestate.Key{GroupID: rg.GroupID, TopicID: mt.ID, Partition: p})
				switch {
				case err == nil:
					op.StartOffset, op.LeaderEpoch = sum.StartOffset, sum.LeaderEpoch
					if sum.StartOffset >= 0 && sum.DeliveryCompleteCount >= 0 {
						lags = append(lags, lagOf{topic: len(out.Topics), partition: len(ot.Partitions),
							tp: shareLagPartition{mt.Name, p}, notDone: sum.StartOffset + int64(sum.DeliveryCompleteCount)})
					}
				case errors.Is(err, kerr.UnknownTopicOrPartition):
					// The state is gone: no start offset, as never initialized.
				default:
					op.ErrorCode, op.ErrorMessage = shareStateCode(err)
				}
			}
			ot.Partitions = append(ot.Partitions, op)
		}
		out.Topics = append(out.Topics, ot)
	}
	if version >= 1 && len(lags) > 0 {
		want := make([]shareLagPartition, len(lags))
		for i, l := range lags {
			want[i] = l.tp
		}
		ends := h.partitionEnds(ctx, want)
		for _, l := range lags {
			if end, ok := ends[l.tp]; ok {
				out.Topics[l.topic].Partitions[l.partition].Lag = max(0, end-l.notDone)
			}
		}
	}
	return out
}

// shareLagPartition names a partition whose end offset a lag needs.
type shareLagPartition struct {
	topic     string
	partition int32
}

// partitionEnds are the partitions' end offsets (high watermarks, what
// ListOffsets LATEST answers under read_uncommitted): read here for the
// partitions this broker leads, asked of their leaders for the others. A
// partition whose leader is unknown or did not answer is left out.
func (h *Handlers) partitionEnds(ctx context.Context, parts []shareLagPartition) map[shareLagPartition]int64 {
	out := map[shareLagPartition]int64{}
	img := h.image()
	remote := map[int32]map[string][]int32{} // leader -> topic -> partitions
	for _, tp := range parts {
		t := img.Topics.Topic(tp.topic)
		if t == nil || t.Partition(tp.partition) == nil {
			continue
		}
		leader := t.Partition(tp.partition).Leader
		switch {
		case leader == h.d.NodeID:
			if off, _, _, _, err := h.d.Replica.ListOffset(tp.topic, tp.partition, -1, replica.ListLatest, false); err == nil {
				out[tp] = off
			}
		case leader >= 0 && h.d.Peers != nil:
			if remote[leader] == nil {
				remote[leader] = map[string][]int32{}
			}
			remote[leader][tp.topic] = append(remote[leader][tp.topic], tp.partition)
		}
	}
	for leader, topics := range remote {
		req := kmsg.NewPtrListOffsetsRequest()
		req.Version, req.ReplicaID = 7, -1
		for topic, ps := range topics {
			rt := kmsg.NewListOffsetsRequestTopic()
			rt.Topic = topic
			for _, p := range ps {
				rp := kmsg.NewListOffsetsRequestTopicPartition()
				rp.Partition, rp.Timestamp = p, replica.ListLatest
				rt.Partitions = append(rt.Partitions, rp)
			}
			req.Topics = append(req.Topics, rt)
		}
		kresp, err := h.d.Peers.Request(ctx, leader, req)
		if err != nil {
			h.d.Logger.Debug("share group lag: list end offsets", "leader", leader, "err", err)
			continue
		}
		for _, rt := range kresp.(*kmsg.ListOffsetsResponse).Topics {
			for _, rp := range rt.Partitions {
				if rp.ErrorCode == 0 {
					out[shareLagPartition{rt.Topic, rp.Partition}] = rp.Offset
				}
			}
		}
	}
	return out
}
