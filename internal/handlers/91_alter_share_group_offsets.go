package handlers

// AlterShareGroupOffsets (key 91), version 0: sets share-partition start
// offsets of an empty share group, as Kafka's
// GroupCoordinatorService.alterShareGroupOffsets: the group's epoch is
// bumped (an unused id becomes an empty share group), each share-partition
// is initialized in the share-group state persister with that epoch as its
// state epoch and the new start offset (InitializeShareGroupState: its
// in-flight records are dropped, and a partition leader holding the old
// state is fenced), and the partitions initialized are recorded in the
// group's state-partition metadata.
//
// Needs READ on the group (else GROUP_AUTHORIZATION_FAILED for the request)
// and READ on each topic (else TOPIC_AUTHORIZATION_FAILED for its
// partitions). A group with members is NON_EMPTY_GROUP; a classic or
// consumer group's id is GROUP_ID_NOT_FOUND; a topic or partition that
// does not exist is UNKNOWN_TOPIC_OR_PARTITION; a start offset below -1
// (-1: decided by share.auto.offset.reset) is INVALID_REQUEST.
//
// While share.version is 0 the request is answered UNSUPPORTED_VERSION (features.go),
// as Kafka answers it.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/coordinator/group"
	"gregor/internal/network"
	"gregor/internal/sharestate"
)

var alterShareGroupOffsetsAPI = api{key: 91, min: 0, max: 0, handle: (*Handlers).alterShareGroupOffsets, needs: hasShares}

func (h *Handlers) alterShareGroupOffsets(ctx context.Context, req *network.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.AlterShareGroupOffsetsRequest)
	resp := kmsg.NewPtrAlterShareGroupOffsetsResponse()
	resp.Version = r.Version
	code := int16(0)
	switch {
	case !h.shareGroupsEnabled():
		code = kerr.UnsupportedVersion.Code
	case !h.authorized(ctx, req, kmsg.ACLOperationRead, kmsg.ACLResourceTypeGroup, r.GroupID):
		code = kerr.GroupAuthorizationFailed.Code
	}
	if code != 0 {
		// The whole request fails, every partition with it (as Kafka).
		resp.ErrorCode = code
		for _, rt := range r.Topics {
			ot := kmsg.NewAlterShareGroupOffsetsResponseTopic()
			ot.Topic = rt.Topic
			for _, p := range rt.Partitions {
				op := kmsg.NewAlterShareGroupOffsetsResponseTopicPartition()
				op.Partition, op.ErrorCode = p.Partition, resp.ErrorCode
				ot.Partitions = append(ot.Partitions, op)
			}
			resp.Topics = append(resp.Topics, ot)
		}
		return resp, nil
	}
	img := h.image()
	// Answer every partition asked for; todo are those still valid.
	type part struct {
		rp     *kmsg.AlterShareGroupOffsetsResponseTopicPartition
		offset int64
	}
	todo := map[int][]part{} // by index in resp.Topics
	for _, rt := range r.Topics {
		ot := kmsg.NewAlterShareGroupOffsetsResponseTopic()
		ot.Topic = rt.Topic
		mt := img.Topics.Topic(rt.Topic)
		var topicCode int16
		switch {
		case !h.authorized(ctx, req, kmsg.ACLOperationRead, kmsg.ACLResourceTypeTopic, rt.Topic):
			topicCode = kerr.TopicAuthorizationFailed.Code
		case mt == nil:
			topicCode = kerr.UnknownTopicOrPartition.Code
		default:
			ot.TopicID = mt.ID
		}
		for _, p := range rt.Partitions {
			op := kmsg.NewAlterShareGroupOffsetsResponseTopicPartition()
			op.Partition = p.Partition
			switch {
			case topicCode != 0:
				op.ErrorCode = topicCode
			case mt.Partition(p.Partition) == nil:
				op.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case p.StartOffset < -1:
				op.ErrorCode = kerr.InvalidRequest.Code
				msg := "The start offset must be -1 or more."
				op.ErrorMessage = &msg
			}
			ot.Partitions = append(ot.Partitions, op)
		}
		resp.Topics = append(resp.Topics, ot)
	}
	for ti, rt := range r.Topics {
		for pi, p := range rt.Partitions {
			if op := &resp.Topics[ti].Partitions[pi]; op.ErrorCode == 0 {
				todo[ti] = append(todo[ti], part{rp: op, offset: p.StartOffset})
			}
		}
	}
	failAll := func(code int16, msg *string) (kmsg.Response, error) {
		resp.ErrorCode, resp.ErrorMessage = code, msg
		for ti := range resp.Topics {
			for pi := range resp.Topics[ti].Partitions {
				if op := &resp.Topics[ti].Partitions[pi]; op.ErrorCode == 0 {
					op.ErrorCode, op.ErrorMessage = code, msg
				}
			}
		}
		return resp, nil
	}
	var (
		epoch int32
		gcode int16
		gmsg  string
	)
	code = h.onAuthorizedGroupShard(ctx, req, kmsg.ACLOperationRead, r.GroupID, func(s *group.Shard, w group.Writer) {
		var res group.Result
		epoch, gcode, gmsg, res = s.AlterShareGroupOffsets(r.GroupID)
		if gcode == 0 {
			if err := finish(w, res); err != nil {
				gcode, gmsg = group.AppendErrorCode(err), ""
			}
		}
	})
	if code != 0 {
		return failAll(code, nil)
	}
	if gcode != 0 {
		var msg *string
		if gmsg != "" {
			msg = &gmsg
		}
		return failAll(gcode, msg)
	}
	for ti, parts := range todo {
		ot := &resp.Topics[ti]
		var done []int32
		for _, p := range parts {
			key := sharestate.Key{GroupID: r.GroupID, TopicID: ot.TopicID, Partition: p.rp.Partition}
			if err := h.d.SharePersister.Initialize(ctx, key, epoch, p.offset); err != nil {
				p.rp.ErrorCode, p.rp.ErrorMessage = shareStateCode(err)
				continue
			}
			done = append(done, p.rp.Partition)
		}
		if len(done) == 0 {
			continue
		}
		// The state is initialized: record it even if the client has gone.
		var recCode int16
		code := h.onGroupShard(context.WithoutCancel(ctx), r.GroupID, func(s *group.Shard, w group.Writer) {
			if err := finish(w, s.ShareGroupOffsetsAltered(r.GroupID, ot.TopicID, ot.Topic, done)); err != nil {
				recCode = group.AppendErrorCode(err)
			}
		})
		if code == 0 {
			code = recCode
		}
		if code != 0 {
			for _, p := range parts {
				if p.rp.ErrorCode == 0 {
					p.rp.ErrorCode = code
				}
			}
		}
	}
	return resp, nil
}
