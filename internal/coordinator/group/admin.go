package group

import (
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeGroup answers one group of a DescribeGroups request. Members'
// metadata and assignments are shown only once the group is Stable, as in
// Kafka. Unknown groups are Dead (v6+: GROUP_ID_NOT_FOUND, KIP-1043). The
// authorized operations are left for the caller, which knows the principal.
func (s *Shard) DescribeGroup(version int16, groupID string) kmsg.DescribeGroupsResponseGroup {
	rg := kmsg.NewDescribeGroupsResponseGroup()
	rg.Group = groupID
	if s.shares[groupID] != nil {
		describeShareGroup(version, &rg)
		return rg
	}
	g := s.groups[groupID]
	if g == nil || g.state == Dead {
		rg.State = "Dead"
		if version >= 6 {
			rg.ErrorCode = kerr.GroupIDNotFound.Code
			msg := "Group " + groupID + " not found."
			rg.ErrorMessage = &msg
		}
		return rg
	}
	if g.consumer != nil && len(g.members) == 0 {
		g.describeConsumer(&rg)
		return rg
	}
	rg.State = g.state.String()
	rg.ProtocolType = g.protocolType
	if g.state == Stable {
		rg.Protocol = g.protocolName
	}
	for _, id := range g.order {
		m := g.members[id]
		rm := kmsg.NewDescribeGroupsResponseGroupMember()
		rm.MemberID, rm.InstanceID, rm.ClientID, rm.ClientHost = id, m.instanceID, m.clientID, m.clientHost
		rm.ProtocolMetadata, rm.MemberAssignment = []byte{}, []byte{}
		if g.state == Stable {
			rm.ProtocolMetadata = m.metadataFor(g.protocolName)
			if m.assignment != nil {
				rm.MemberAssignment = m.assignment
			}
		}
		rg.Members = append(rg.Members, rm)
	}
	return rg
}

// ListGroups lists the shard's groups, filtered by state names (v4+,
// case-insensitive) and group types (v5+: "classic", "consumer" or
// "share").
func (s *Shard) ListGroups(states, types []string) []kmsg.ListGroupsResponseGroup {
	var out []kmsg.ListGroupsResponseGroup
	match := func(want []string, v string) bool {
		if len(want) == 0 {
			return true
		}
		for _, w := range want {
			if strings.EqualFold(w, v) {
				return true
			}
		}
		return false
	}
	for _, id := range s.sortedGroupIDs() {
		g := s.groups[id]
		state, protocolType := g.state.String(), g.protocolType
		if g.groupType() == "consumer" {
			state, protocolType = g.consumer.state(), "consumer"
		}
		if g.state == Dead || !match(states, state) || !match(types, g.groupType()) {
			continue
		}
		lg := kmsg.NewListGroupsResponseGroup()
		lg.Group, lg.ProtocolType, lg.GroupState, lg.GroupType = id, protocolType, state, g.groupType()
		out = append(out, lg)
	}
	return append(out, s.listShareGroups(match, states, types)...)
}

// DeleteGroup deletes an empty group and its offsets: tombstones for each
// offset, for each partition only an open transaction holds an offset of
// (an open transaction does not keep a group from deletion, as in Kafka),
// and for the group metadata. A share group's records are deleted the same
// way, once the caller deleted its share-partition state
// (ShareGroupStateToDelete).
func (s *Shard) DeleteGroup(now int64, groupID string) (int16, Result) {
	var r Result
	if sg := s.shares[groupID]; sg != nil {
		return s.deleteShareGroup(sg)
	}
	g := s.groups[groupID]
	if g == nil || g.state == Dead {
		return kerr.GroupIDNotFound.Code, r
	}
	if g.state != Empty || (g.consumer != nil && len(g.consumer.members) > 0) {
		return kerr.NonEmptyGroup.Code, r
	}
	for topic, ps := range g.offsets {
		for p := range ps {
			r.Records = append(r.Records, Record{Key: offsetKey(g.id, topic, p)})
		}
	}
	for _, tp := range g.txnOnlyPartitions() {
		r.Records = append(r.Records, Record{Key: offsetKey(g.id, tp.topic, tp.partition)})
	}
	r.Records = append(r.Records, diffRecords(g.consumerRecords(), nil)...)
	r.Records = append(r.Records, Record{Key: groupKey(g.id)})
	r.Apply = func() {
		g.transition(Dead, now)
		if s.groups[g.id] == g {
			delete(s.groups, g.id)
		}
	}
	return 0, r
}
