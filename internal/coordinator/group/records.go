package group

import (
	"encoding/binary"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/record"
)

// Key versions of __consumer_offsets records, as Kafka's
// GroupCoordinatorRecordSerde reads them: 0 and 1 are offset commits, 2 is
// group metadata; 3-8 belong to the KIP-848 protocol (consumer_records.go),
// 9-15 to share groups (share_records.go).
const (
	offsetCommitKeyVersion  = 1
	groupMetadataKeyVersion = 2
)

func offsetKey(groupID, topic string, partition int32) []byte {
	k := kmsg.NewOffsetCommitKey()
	k.Version, k.Group, k.Topic, k.Partition = offsetCommitKeyVersion, groupID, topic, partition
	return k.AppendTo(nil)
}

func offsetRecord(groupID, topic string, partition int32, c committed) Record {
	v := kmsg.NewOffsetCommitValue()
	v.Offset, v.LeaderEpoch, v.Metadata, v.CommitTimestamp = c.offset, c.leaderEpoch, c.metadata, c.commitTs
	v.Version = 3
	if c.expireTs >= 0 {
		// Only v1 carries an explicit expiry (OffsetCommit v2-v4 retention).
		v.Version, v.ExpireTimestamp = 1, c.expireTs
	}
	return Record{Key: offsetKey(groupID, topic, partition), Value: v.AppendTo(nil)}
}

func groupKey(groupID string) []byte {
	k := kmsg.NewGroupMetadataKey()
	k.Version, k.Group = groupMetadataKeyVersion, groupID
	return k.AppendTo(nil)
}

// metadataRecord is the group's GroupMetadataValue (v3: with static
// members' instance ids), written when a generation's assignment is stored
// or the group becomes empty.
func (g *group) metadataRecord(now int64) Record {
	v := kmsg.NewGroupMetadataValue()
	v.Version = 3
	v.ProtocolType = g.protocolType
	v.Generation = g.generation
	if g.protocolName != "" {
		p := g.protocolName
		v.Protocol = &p
	}
	if g.leader != "" {
		l := g.leader
		v.Leader = &l
	}
	v.CurrentStateTimestamp = now
	for _, id := range g.order {
		m := g.members[id]
		vm := kmsg.NewGroupMetadataValueMember()
		vm.MemberID, vm.InstanceID, vm.ClientID, vm.ClientHost = m.id, m.instanceID, m.clientID, m.clientHost
		vm.RebalanceTimeoutMillis, vm.SessionTimeoutMillis = m.rebalanceTimeoutMs, m.sessionTimeoutMs
		vm.Subscription = m.metadataFor(g.protocolName)
		vm.Assignment = m.assignment
		if vm.Subscription == nil {
			vm.Subscription = []byte{}
		}
		if vm.Assignment == nil {
			vm.Assignment = []byte{}
		}
		v.Members = append(v.Members, vm)
	}
	return Record{Key: groupKey(g.id), Value: v.AppendTo(nil)}
}

// Replay applies one record read from the partition while the shard loads.
// now is the load time: loaded members' sessions start then.
func (s *Shard) Replay(now int64, key, value []byte) error {
	if len(key) < 2 {
		return fmt.Errorf("__consumer_offsets record key of %d bytes", len(key))
	}
	typ := int16(binary.BigEndian.Uint16(key))
	if isShareRecord(typ) {
		return s.replayShare(now, typ, key, value)
	}
	switch typ {
	case cgMetadataType, cgPartitionMetadataType, cgMemberMetadataType, cgTargetAssignmentMetadataType, cgTargetAssignmentMemberType, cgCurrentMemberAssignmentType:
		return s.replayConsumer(now, typ, key, value)
	case 0, 1:
		return s.replayOffsetCommit(now, record.NoProducerID, key, value)
	case 2:
		var k kmsg.GroupMetadataKey
		if err := k.ReadFrom(key); err != nil {
			return fmt.Errorf("read group metadata key: %w", err)
		}
		if value == nil {
			if g := s.groups[k.Group]; g != nil {
				s.resetGroup(g)
				s.maybeDropEmpty(g)
			}
			return nil
		}
		var v kmsg.GroupMetadataValue
		if err := v.ReadFrom(value); err != nil {
			return fmt.Errorf("read group metadata value of %s: %w", k.Group, err)
		}
		g := s.groups[k.Group]
		if g == nil {
			g = newGroup(k.Group, now)
			s.groups[k.Group] = g
		}
		s.resetGroup(g)
		g.protocolType, g.generation = v.ProtocolType, v.Generation
		if v.Protocol != nil {
			g.protocolName = *v.Protocol
		}
		ts := now
		if v.CurrentStateTimestamp > 0 {
			ts = v.CurrentStateTimestamp
		}
		for _, vm := range v.Members {
			m := &member{
				id: vm.MemberID, instanceID: vm.InstanceID, clientID: vm.ClientID, clientHost: vm.ClientHost,
				rebalanceTimeoutMs: vm.RebalanceTimeoutMillis, sessionTimeoutMs: vm.SessionTimeoutMillis,
				protocolType: v.ProtocolType, protocols: []protocol{{name: g.protocolName, metadata: vm.Subscription}},
				assignment: vm.Assignment, heartbeatDue: now + int64(vm.SessionTimeoutMillis),
			}
			if v.Version < 1 {
				m.rebalanceTimeoutMs = m.sessionTimeoutMs
			}
			g.addMember(m)
		}
		if v.Leader != nil && g.members[*v.Leader] != nil {
			g.leader = *v.Leader
		}
		if len(g.members) > 0 {
			g.transition(Stable, ts)
		} else {
			g.transition(Empty, ts)
		}
	}
	return nil
}

// replayOffsetCommit applies an offset commit record, one of producerID's
// open transaction unless it is record.NoProducerID (Kafka's
// OffsetMetadataManager.replay). A tombstone deletes the committed offset
// and every open transaction's offset of the partition.
func (s *Shard) replayOffsetCommit(now int64, producerID int64, key, value []byte) error {
	var k kmsg.OffsetCommitKey
	if err := k.ReadFrom(key); err != nil {
		return fmt.Errorf("read offset commit key: %w", err)
	}
	if value == nil {
		if g := s.groups[k.Group]; g != nil {
			g.deleteOffset(k.Topic, k.Partition)
			g.dropTxnOffset(k.Topic, k.Partition)
			s.maybeDropEmpty(g)
		}
		return nil
	}
	var v kmsg.OffsetCommitValue
	if err := v.ReadFrom(value); err != nil {
		return fmt.Errorf("read offset commit value of %s: %w", k.Group, err)
	}
	expire := int64(-1)
	if v.Version == 1 {
		expire = v.ExpireTimestamp
	}
	leaderEpoch := int32(-1)
	if v.Version >= 3 {
		leaderEpoch = v.LeaderEpoch
	}
	g := s.groups[k.Group]
	if g == nil {
		// A commit without membership makes a simple group.
		g = newGroup(k.Group, now)
		s.groups[k.Group] = g
	}
	c := committed{offset: v.Offset, leaderEpoch: leaderEpoch, metadata: v.Metadata, commitTs: v.CommitTimestamp, expireTs: expire}
	if producerID == record.NoProducerID {
		g.setOffset(k.Topic, k.Partition, s.stamp(c))
	} else {
		s.addTxnOffset(g, producerID, k.Topic, k.Partition, s.stamp(c))
	}
	return nil
}

// resetGroup forgets a group's membership, keeping its offsets.
func (s *Shard) resetGroup(g *group) {
	g.members, g.order, g.static, g.pending, g.pendingSync = map[string]*member{}, nil, map[string]string{}, map[string]int64{}, map[string]bool{}
	g.leader, g.protocolName, g.protocolType, g.generation = "", "", "", 0
	g.state = Empty
}

// maybeDropEmpty forgets a group with no members, no offsets and no offset
// in an open transaction (a group's tombstone follows those of its open
// transactions' offsets, see DeleteGroup).
func (s *Shard) maybeDropEmpty(g *group) {
	if g.consumer != nil {
		return // a consumer group lives until DeleteGroups
	}
	if g.state == Empty && len(g.members) == 0 && len(g.pending) == 0 && len(g.offsets) == 0 && !g.hasTxnOffsets() && g.generation == 0 {
		delete(s.groups, g.id)
	}
}
