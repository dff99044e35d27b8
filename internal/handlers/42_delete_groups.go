package handlers

// DeleteGroups (key 42), versions 0-2: deletes empty groups and their offsets
// (NON_EMPTY_GROUP while members remain, GROUP_ID_NOT_FOUND for unknown ones).
// An empty share group's share-partition state is deleted from the
// share-group state persister first, then its records (as Kafka's
// deleteShareGroups); a persister error is the group's error. Its topics
// are marked deleting before the state goes, so that a member joining
// meanwhile is not assigned partitions whose state is being deleted: the
// deletion then ends NON_EMPTY_GROUP and the member's next heartbeat
// initializes them anew.
//
// Each group needs DELETE, else GROUP_AUTHORIZATION_FAILED (as Kafka).

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/coordinator/group"
	"gregor/internal/network"
	"gregor/internal/sharestate"
)

var deleteGroupsAPI = api{key: 42, min: 0, max: 2, handle: (*Handlers).deleteGroups}

func (h *Handlers) deleteGroups(ctx context.Context, req *network.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.DeleteGroupsRequest)
	resp := kmsg.NewPtrDeleteGroupsResponse()
	resp.Version = r.Version
	for _, id := range r.Groups {
		rg := kmsg.NewDeleteGroupsResponseGroup()
		rg.Group = id
		if code := h.deleteShareGroupState(ctx, req, id); code != 0 {
			rg.ErrorCode = code
			resp.Groups = append(resp.Groups, rg)
			continue
		}
		code := h.onAuthorizedGroupShard(ctx, req, kmsg.ACLOperationDelete, id, func(s *group.Shard, w group.Writer) {
			c, res := s.DeleteGroup(nowMs(), id)
			if err := finish(w, res); err != nil {
				c = group.AppendErrorCode(err)
			}
			rg.ErrorCode = c
		})
		if code != 0 {
			rg.ErrorCode = code
		}
		if rg.ErrorCode == 0 && h.d.Shares != nil {
			// This broker's share-partitions of the group go with it.
			h.d.Shares.GroupDeleted(id)
		}
		resp.Groups = append(resp.Groups, rg)
	}
	return resp, nil
}

// deleteShareGroupState deletes the share-partition state of groupID if it
// is an empty share group, and returns the code that ends its deletion (0
// for a group of another kind, or one whose state is gone: the shard's
// DeleteGroup goes on). State never initialized or already deleted
// (UNKNOWN_TOPIC_OR_PARTITION) is no error.
func (h *Handlers) deleteShareGroupState(ctx context.Context, req *network.Request, groupID string) int16 {
	var (
		parts group.SharePartitions
		stop  int16
	)
	isShare := false
	code := h.onAuthorizedGroupShard(ctx, req, kmsg.ACLOperationDelete, groupID, func(s *group.Shard, w group.Writer) {
		if !s.IsShareGroup(groupID) {
			return
		}
		isShare = true
		if h.d.SharePersister == nil {
			stop = kerr.CoordinatorNotAvailable.Code
			return
		}
		var res group.Result
		parts, stop, res = s.ShareGroupStateToDelete(groupID)
		if err := finish(w, res); err != nil && stop == 0 {
			// The mark is not written; the in-flight count it took is
			// given back, as for a failed deletion.
			s.ShareGroupStateDeleteFailed(groupID)
			stop = group.AppendErrorCode(err)
		}
	})
	if code != 0 {
		return code
	}
	if stop != 0 || !isShare {
		return stop
	}
	if code, _ := h.deleteSharePartitions(ctx, groupID, parts); code != 0 {
		h.onAuthorizedGroupShard(ctx, req, kmsg.ACLOperationDelete, groupID, func(s *group.Shard, _ group.Writer) {
			s.ShareGroupStateDeleteFailed(groupID)
		})
		return code
	}
	return 0
}

// deleteSharePartitions deletes the share-partition state of a group's
// partitions from the persister: 0, or the code (and message) of the first
// failure. State never initialized or already deleted
// (UNKNOWN_TOPIC_OR_PARTITION) is no error.
func (h *Handlers) deleteSharePartitions(ctx context.Context, groupID string, parts group.SharePartitions) (int16, *string) {
	for topic, ps := range parts {
		for _, p := range ps {
			err := h.d.SharePersister.Delete(ctx, sharestate.Key{GroupID: groupID, TopicID: topic, Partition: p})
			if err == nil || errors.Is(err, kerr.UnknownTopicOrPartition) {
				continue
			}
			code, msg := shareStateCode(err)
			if code == kerr.UnknownServerError.Code {
				h.d.Logger.Warn("delete share-partition state", "group", groupID, "err", err)
			}
			return code, msg
		}
	}
	return 0, nil
}
