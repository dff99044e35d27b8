package handlers

// DescribeShareGroupOffsets (key 90), version 0: each share group's
// share-partition start offsets (SPSO) and leader epochs, read from the
// share-group state persister (ReadShareGroupStateSummary), as Kafka's
// GroupCoordinatorService.describeShareGroupOffsets. Version 1 adds the
// lag (KIP-1226), which needs each partition's high watermark from its
// leader; it is not served, so v1 is not advertised.
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
	"gregor/internal/sharestate"
)

var describeShareGroupOffsetsAPI = api{key: 90, min: 0, max: 0, handle: (*Handlers).describeShareGroupOffsets, needs: hasShares}

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
		resp.Groups = append(resp.Groups, h.describeShareGroupOffsetsGroup(ctx, req, rg))
	}
	return resp, nil
}

func (h *Handlers) describeShareGroupOffsetsGroup(ctx context.Context, req *network.Request, rg kmsg.DescribeShareGroupOffsetsRequestGroup) kmsg.DescribeShareGroupOffsetsResponseGroup {
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
	return out
}
