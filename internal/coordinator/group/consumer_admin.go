package group

import (
	"regexp"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// validateCommit is Kafka's ConsumerGroup.validateOffsetCommit: the member
// must exist and commit with its current epoch (the request's generation).
// An older epoch is accepted when every partition committed has been
// assigned to the member since that epoch (KIP-1251's assignment epochs, Kafka
// 4.3): a commit sent just before the member's epoch moved on is not lost.
func (c *consumerGroup) validateCommit(memberID string, epoch int32, topics []kmsg.OffsetCommitRequestTopic) int16 {
	m := c.members[memberID]
	if m == nil {
		// Commits from outside the group (no member id) need it empty.
		return kerr.UnknownMemberID.Code
	}
	if m.classic != nil {
		// A classic member commits with its generation, the member epoch.
		if epoch != m.epoch {
			return kerr.IllegalGeneration.Code
		}
		return 0
	}
	switch {
	case epoch > m.epoch:
		return kerr.FencedMemberEpoch.Code
	case epoch < m.epoch:
		for _, t := range topics {
			for _, p := range t.Partitions {
				at, ok := m.assignedAt[c.names[t.Topic]][p.Partition]
				if !ok || at > epoch {
					return kerr.StaleMemberEpoch.Code
				}
			}
		}
	}
	return 0
}

// groupType is the group's type as ListGroups v5 names it.
func (g *group) groupType() string {
	if g.consumer != nil && len(g.members) == 0 {
		return "consumer"
	}
	return "classic"
}

// describeConsumer fills a DescribeGroups answer for a consumer group, as
// Kafka does: protocol type "consumer", no protocol, members without
// classic metadata.
func (g *group) describeConsumer(rg *kmsg.DescribeGroupsResponseGroup) {
	c := g.consumer
	rg.State = c.state()
	rg.ProtocolType = "consumer"
	for _, id := range c.sortedMembers() {
		m := c.members[id]
		rm := kmsg.NewDescribeGroupsResponseGroupMember()
		rm.MemberID, rm.InstanceID, rm.ClientID, rm.ClientHost = id, m.instanceID, m.clientID, m.clientHost
		rm.ProtocolMetadata, rm.MemberAssignment = []byte{}, []byte{}
		rg.Members = append(rg.Members, rm)
	}
}

func kmsgAssignment(a assignment) kmsg.Assignment {
	out := kmsg.NewAssignment()
	ids, parts := a.byTopic()
	out.TopicPartitions = []kmsg.AssignmentTopicPartition{}
	for _, id := range ids {
		t := kmsg.NewAssignmentTopicPartition()
		t.TopicID, t.Partitions = id, parts[id]
		out.TopicPartitions = append(out.TopicPartitions, t)
	}
	return out
}

// ConsumerGroupDescribe answers one group of a ConsumerGroupDescribe. The
// authorized operations are left for the caller, which knows the principal.
func (s *Shard) ConsumerGroupDescribe(version int16, groupID string) kmsg.ConsumerGroupDescribeResponseGroup {
	rg := kmsg.NewConsumerGroupDescribeResponseGroup()
	rg.Group = groupID
	if groupID == "" {
		rg.ErrorCode = kerr.InvalidGroupID.Code
		return rg
	}
	if s.shares[groupID] != nil {
		rg.ErrorCode = kerr.GroupIDNotFound.Code
		msg := "Group " + groupID + " is not a consumer group."
		rg.ErrorMessage = &msg
		return rg
	}
	g := s.groups[groupID]
	if g == nil || g.state == Dead || (g.consumer == nil && len(g.members) == 0 && g.protocolType == "") {
		rg.ErrorCode = kerr.GroupIDNotFound.Code
		msg := "Group " + groupID + " not found."
		rg.ErrorMessage = &msg
		return rg
	}
	if g.consumer == nil || len(g.members) > 0 {
		rg.ErrorCode = kerr.GroupIDNotFound.Code
		msg := "Group " + groupID + " is not a consumer group."
		rg.ErrorMessage = &msg
		return rg
	}
	c := g.consumer
	rg.State, rg.Epoch, rg.AssignmentEpoch, rg.AssignorName = c.state(), c.epoch, c.assignmentEpoch, s.groupAssignor(c)
	for _, id := range c.sortedMembers() {
		m := c.members[id]
		rm := kmsg.NewConsumerGroupDescribeResponseGroupMember()
		rm.MemberID, rm.InstanceID, rm.RackID, rm.MemberEpoch = id, m.instanceID, m.rackID, m.epoch
		rm.ClientID, rm.ClientHost = m.clientID, m.clientHost
		rm.SubscribedTopics = append([]string{}, m.topicNames...)
		sort.Strings(rm.SubscribedTopics)
		if m.regex != "" {
			re := m.regex
			rm.SubscribedTopicRegex = &re
		}
		rm.Assignment = kmsgAssignment(m.assigned)
		rm.TargetAssignment = kmsgAssignment(c.target[id])
		rm.MemberType = -1
		if version >= 1 {
			rm.MemberType = 1 // consumer
			if m.classic != nil {
				rm.MemberType = 0 // classic
			}
		}
		rg.Members = append(rg.Members, rm)
	}
	return rg
}

// ValidateOffsetFetch checks an OffsetFetch (v9+) that names a member
// against a consumer group, as Kafka's ConsumerGroup.validateOffsetFetch:
// no member id and a negative epoch (admin clients) pass; otherwise the
// member must exist and fetch with its current epoch.
func (s *Shard) ValidateOffsetFetch(groupID string, memberID *string, epoch int32) int16 {
	g := s.groups[groupID]
	if g == nil || g.consumer == nil || len(g.members) > 0 || (memberID == nil && epoch < 0) {
		return 0
	}
	if memberID == nil {
		return kerr.UnknownMemberID.Code
	}
	m := g.consumer.members[*memberID]
	switch {
	case m == nil:
		return kerr.UnknownMemberID.Code
	case m.classic != nil && epoch != m.epoch:
		return kerr.IllegalGeneration.Code
	case epoch > m.epoch:
		return kerr.FencedMemberEpoch.Code
	case epoch < m.epoch:
		return kerr.StaleMemberEpoch.Code
	}
	return 0
}

// expireConsumerOffsets is expireOffsets for a KIP-848 group (Kafka's
// ConsumerGroup offset expiration condition): an offset expires counted
// from its commit, never while a member subscribes to its topic; the group
// itself is deleted only once it has no members and no offsets left. The
// classic state of such a group is always Empty, so the classic rule would
// delete a live group that has not committed yet and fence all its members.
func (s *Shard) expireConsumerOffsets(now int64, g *group, r *Result) {
	c := g.consumer
	for topic, ps := range g.offsets {
		if c.subscribesTo(topic) {
			continue
		}
		for p, o := range ps {
			expired := now-o.commitTs >= s.cfg.OffsetsRetentionMs
			if o.expireTs >= 0 {
				expired = now >= o.expireTs
			}
			if expired && !g.hasTxnOffset(topic, p) {
				r.Records = append(r.Records, Record{Key: offsetKey(g.id, topic, p)})
				g.deleteOffset(topic, p)
			}
		}
	}
	if len(c.members) == 0 && len(g.offsets) == 0 && len(g.pending) == 0 && len(g.txnOffsets) == 0 {
		r.Records = append(r.Records, diffRecords(g.consumerRecords(), nil)...)
		r.Records = append(r.Records, Record{Key: groupKey(g.id)})
		g.transition(Dead, now)
		delete(s.groups, g.id)
	}
}

// subscribesTo is whether a member subscribes to the topic by name or by
// regex (Kafka's ConsumerGroup.isSubscribedToTopic).
func (c *consumerGroup) subscribesTo(topic string) bool {
	for _, m := range c.members {
		for _, n := range m.topicNames {
			if n == topic {
				return true
			}
		}
		if m.regex != "" {
			if re, err := regexp.Compile("^(?:" + m.regex + ")$"); err == nil && re.MatchString(topic) {
				return true
			}
		}
	}
	return false
}
