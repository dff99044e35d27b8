package handlers

// DeleteShareGroupOffsets (key 92), version 0: deletes an empty share
// group's share-partition state of the topics named, as Kafka's
// GroupCoordinatorService.deleteShareGroupOffsets: each share-partition's
// state is deleted from the share-group state persister
// (DeleteShareGroupState), then the topics leave the group's
// state-partition metadata, so a member subscribing to them again starts
// from share.auto.offset.reset.
//
// Needs DELETE on the group (else GROUP_AUTHORIZATION_FAILED for the
// request) and READ on each topic (else TOPIC_AUTHORIZATION_FAILED for it),
// as OffsetDelete. An id naming no share group is GROUP_ID_NOT_FOUND, a
// group with members NON_EMPTY_GROUP; a topic that does not exist, or that
// the group has no state for, is UNKNOWN_TOPIC_OR_PARTITION.
//
// While share.version is 0 the request is answered UNSUPPORTED_VERSION (features.go),
// as Kafka answers it.

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/coordinator/group"
	"gregor/internal/network"
)

var deleteShareGroupOffsetsAPI = api{key: 92, min: 0, max: 0, handle: (*Handlers).deleteShareGroupOffsets, needs: hasShares}

func (h *Handlers) deleteShareGroupOffsets(ctx context.Context, req *network.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.DeleteShareGroupOffsetsRequest)
	resp := kmsg.NewPtrDeleteShareGroupOffsetsResponse()
	resp.Version = r.Version
	var (
		topics []group.ShareStateTopic
		gcode  int16
		gmsg   string
	)
	var code int16
	if !h.shareGroupsEnabled() {
		code = kerr.UnsupportedVersion.Code
		msg := kerr.UnsupportedVersion.Description
		resp.ErrorMessage = &msg
	} else {
		code = h.onAuthorizedGroupShard(ctx, req, kmsg.ACLOperationDelete, r.GroupID, func(s *group.Shard, _ group.Writer) {
			topics, gcode, gmsg = s.ShareGroupStateTopics(r.GroupID, true)
		})
		if code == 0 && gcode != 0 {
			code = gcode
			resp.ErrorMessage = &gmsg
		}
	}
	if code != 0 {
		resp.ErrorCode = code
		for _, rt := range r.Topics {
			ot := kmsg.NewDeleteShareGroupOffsetsResponseTopic()
			ot.Topic, ot.ErrorCode = rt.Topic, code
			resp.Topics = append(resp.Topics, ot)
		}
		return resp, nil
	}
	img := h.image()
	var deleted [][16]byte
	var deletedAt []int // their indexes in resp.Topics
	for _, rt := range r.Topics {
		ot := kmsg.NewDeleteShareGroupOffsetsResponseTopic()
		ot.Topic = rt.Topic
		mt := img.Topics.Topic(rt.Topic)
		var st *group.ShareStateTopic
		if mt != nil {
			ot.TopicID = mt.ID
			for i := range topics {
				if topics[i].ID == mt.ID {
					st = &topics[i]
				}
			}
		}
		switch {
		case !h.authorized(ctx, req, kmsg.ACLOperationRead, kmsg.ACLResourceTypeTopic, rt.Topic):
			ot.ErrorCode = kerr.TopicAuthorizationFailed.Code
		case st == nil:
			ot.ErrorCode = kerr.UnknownTopicOrPartition.Code
			msg := "The group has no state for topic " + rt.Topic + "."
			ot.ErrorMessage = &msg
		default:
			parts := group.SharePartitions{st.ID: append(slices.Clone(st.Initialized), st.Initializing...)}
			ot.ErrorCode, ot.ErrorMessage = h.deleteSharePartitions(ctx, r.GroupID, parts)
		}
		if ot.ErrorCode == 0 {
			deleted = append(deleted, st.ID)
			deletedAt = append(deletedAt, len(resp.Topics))
		}
		resp.Topics = append(resp.Topics, ot)
	}
	if len(deleted) == 0 {
		return resp, nil
	}
	// The state is deleted: record it even if the client has gone.
	var recCode int16
	code = h.onGroupShard(context.WithoutCancel(ctx), r.GroupID, func(s *group.Shard, w group.Writer) {
		c, res := s.ShareGroupOffsetsDeleted(r.GroupID, deleted)
		if c == 0 {
			if err := finish(w, res); err != nil {
				c = group.AppendErrorCode(err)
			}
		}
		recCode = c
	})
	if code == 0 {
		code = recCode
	}
	if code != 0 {
		for _, i := range deletedAt {
			resp.Topics[i].ErrorCode = code
		}
	}
	return resp, nil
}
