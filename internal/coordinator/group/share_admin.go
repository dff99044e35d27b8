package group

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// IsShareGroup is whether groupID names a share group of this shard.
func (s *Shard) IsShareGroup(groupID string) bool {
	_, ok := s.shares[groupID]
	return ok
}

// ShareGroupDescribe answers one group of a ShareGroupDescribe. Topic names
// of the assignments and the authorized operations are left for the
// caller, which knows the metadata and the principal.
func (s *Shard) ShareGroupDescribe(groupID string) kmsg.ShareGroupDescribeResponseGroup {
	rg := kmsg.NewShareGroupDescribeResponseGroup()
	rg.GroupID = groupID
	if groupID == "" {
		rg.ErrorCode = kerr.InvalidGroupID.Code
		return rg
	}
	sg := s.shares[groupID]
	if sg == nil {
		msg := "Group " + groupID + " not found."
		if g := s.groups[groupID]; g != nil && g.state != Dead {
			msg = "Group " + groupID + " is not a share group."
		}
		rg.ErrorCode, rg.ErrorMessage = kerr.GroupIDNotFound.Code, &msg
		return rg
	}
	rg.GroupState, rg.GroupEpoch, rg.AssignmentEpoch, rg.Assignor = sg.state(), sg.epoch, sg.assignmentEpoch, shareAssignorName
	for _, id := range sg.sortedMembers() {
		m := sg.members[id]
		rm := kmsg.NewShareGroupDescribeResponseGroupMember()
		rm.MemberID, rm.RackID, rm.MemberEpoch, rm.ClientID, rm.ClientHost = id, m.rackID, m.epoch, m.clientID, m.clientHost
		rm.SubscribedTopicNames = append([]string{}, m.topicNames...)
		ids, parts := m.assigned.byTopic()
		rm.Assignment.TopicPartitions = []kmsg.ShareGroupDescribeResponseGroupMemberAssignmentTopicPartition{}
		for _, tid := range ids {
			t := kmsg.NewShareGroupDescribeResponseGroupMemberAssignmentTopicPartition()
			t.TopicID, t.Partitions = tid, parts[tid]
			rm.Assignment.TopicPartitions = append(rm.Assignment.TopicPartitions, t)
		}
		rg.Members = append(rg.Members, rm)
	}
	return rg
}

// describeShareGroup is DescribeGroups on a share group: Kafka's classic
// describe does not know it (v6+: GROUP_ID_NOT_FOUND, "not a classic
// group"; older versions: Dead, as for an unknown group).
func describeShareGroup(version int16, rg *kmsg.DescribeGroupsResponseGroup) {
	rg.State = "Dead"
	if version >= 6 {
		rg.ErrorCode = kerr.GroupIDNotFound.Code
		msg := "Group " + rg.Group + " is not a classic group."
		rg.ErrorMessage = &msg
	}
}

// listShareGroups adds the share groups to a ListGroups answer, filtered by
// states and types as ListGroups does.
func (s *Shard) listShareGroups(match func(want []string, v string) bool, states, types []string) []kmsg.ListGroupsResponseGroup {
	var out []kmsg.ListGroupsResponseGroup
	for _, id := range s.sortedShareGroupIDs() {
		sg := s.shares[id]
		if !match(states, sg.state()) || !match(types, "share") {
			continue
		}
		lg := kmsg.NewListGroupsResponseGroup()
		lg.Group, lg.ProtocolType, lg.GroupState, lg.GroupType = id, "share", sg.state(), "share"
		out = append(out, lg)
	}
	return out
}

// ShareGroupStateToDelete starts a DeleteGroups of a share group (Kafka's
// shareGroupBuildPartitionDeleteRequest): the share-partitions whose state
// the persister must delete before the group's records go, or the code why
// the group cannot be deleted (GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP). Its
// topics move to the group's deleting topics, in the Result's
// ShareGroupStatePartitionMetadata record, so that a member joining while
// the state is deleted is neither assigned them nor has them initialized
// (an initialization the deletion could undo). The caller writes the
// Result, deletes the state, then calls DeleteGroup, or
// ShareGroupStateDeleteFailed when the deletion failed.
func (s *Shard) ShareGroupStateToDelete(groupID string) (SharePartitions, int16, Result) {
	var r Result
	sg := s.shares[groupID]
	if sg == nil {
		return nil, kerr.GroupIDNotFound.Code, r
	}
	if len(sg.members) > 0 {
		return nil, kerr.NonEmptyGroup.Code, r
	}
	before := sg.records()
	out := SharePartitions{}
	for _, ts := range []map[[16]byte]*shareTopic{sg.initialized, sg.initializing} {
		for id, t := range ts {
			for p := range t.partitions {
				out[id] = append(out[id], p)
			}
			sg.deleting[id] = t.name
		}
	}
	// Topics left deleting by an earlier DeleteGroups (cut short, or one
	// that failed): their partitions as the cluster has them now.
	if len(sg.deleting) > len(out) && s.cfg.Topics != nil {
		topics := s.cfg.Topics()
		for id, name := range sg.deleting {
			if t, ok := topics[name]; ok && t.ID == id && out[id] == nil {
				for p := int32(0); p < t.Partitions; p++ {
					out[id] = append(out[id], p)
				}
			}
		}
	}
	for id := range out {
		out[id] = sortedPartitions(toSet(out[id]))
	}
	sg.initialized, sg.initializing = map[[16]byte]*shareTopic{}, map[[16]byte]*shareTopic{}
	sg.deletionsInFlight++
	r.Records = shareDiff(before, sg.records())
	return out, 0, r
}

// ShareGroupStateDeleteFailed ends a DeleteGroups whose state deletion
// failed: the topics stay deleting (the next DeleteGroups deletes them
// again), and a member subscribing to one initializes it anew.
func (s *Shard) ShareGroupStateDeleteFailed(groupID string) {
	if sg := s.shares[groupID]; sg != nil && sg.deletionsInFlight > 0 {
		sg.deletionsInFlight--
	}
}

func toSet(ps []int32) map[int32]bool {
	m := make(map[int32]bool, len(ps))
	for _, p := range ps {
		m[p] = true
	}
	return m
}

// deleteShareGroup writes the tombstones of an empty share group, whose
// share-partition state the caller deleted (ShareGroupStateToDelete).
func (s *Shard) deleteShareGroup(sg *shareGroup) (int16, Result) {
	var r Result
	if sg.deletionsInFlight > 0 {
		sg.deletionsInFlight--
	}
	if len(sg.members) > 0 {
		// A member joined while the state was deleted: the group stays,
		// and initializes its topics anew.
		return kerr.NonEmptyGroup.Code, r
	}
	r.Records = shareDiff(sg.records(), nil)
	r.Apply = func() {
		if s.shares[sg.id] == sg {
			delete(s.shares, sg.id)
		}
	}
	return 0, r
}
