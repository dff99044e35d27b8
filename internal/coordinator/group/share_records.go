package group

// Share group state in __consumer_offsets, in Kafka's record formats (the
// group-coordinator module's ShareGroup* coordinator records): the key is
// the record type as an int16 and the group id (and member id), the value
// version 0 in the flexible encoding, as for the consumer group records.
// The shard writes the difference between a group's records before and
// after each operation; loading replays them.
//
// Written: ShareGroupMemberMetadata (10), ShareGroupMetadata (11),
// ShareGroupTargetAssignmentMetadata (12), ShareGroupTargetAssignmentMember
// (13), ShareGroupCurrentMemberAssignment (14) and
// ShareGroupStatePartitionMetadata (15: initializing, initialized and
// deleting topics, as Kafka 4.1+). ShareGroupPartitionMetadata (9), which
// Kafka 4.1 replaced by a metadata hash, is neither written nor read.

import (
	"fmt"
	"sort"
)

const (
	sgPartitionMetadataType        = 9
	sgMemberMetadataType           = 10
	sgMetadataType                 = 11
	sgTargetAssignmentMetadataType = 12
	sgTargetAssignmentMemberType   = 13
	sgCurrentMemberAssignmentType  = 14
	sgStatePartitionMetadataType   = 15
)

// records is the group's state as records, by key.
func (sg *shareGroup) records() map[string][]byte {
	out := map[string][]byte{}
	e := valueV0()
	e.i32(sg.epoch)
	e.tags()
	out[cgKey(sgMetadataType, sg.id, nil)] = e.b
	e = valueV0()
	e.i32(sg.assignmentEpoch)
	e.tags()
	out[cgKey(sgTargetAssignmentMetadataType, sg.id, nil)] = e.b
	if len(sg.initializing) > 0 || len(sg.initialized) > 0 || len(sg.deleting) > 0 {
		e = valueV0()
		e.shareTopics(sg.initializing)
		e.shareTopics(sg.initialized)
		e.deletingTopics(sg.deleting)
		e.tags()
		out[cgKey(sgStatePartitionMetadataType, sg.id, nil)] = e.b
	}
	for id, m := range sg.members {
		e = valueV0()
		e.cnstr(m.rackID)
		e.cstr(m.clientID)
		e.cstr(m.clientHost)
		e.uv(len(m.topicNames) + 1)
		for _, t := range m.topicNames {
			e.cstr(t)
		}
		e.tags()
		out[cgKey(sgMemberMetadataType, sg.id, &id)] = e.b

		e = valueV0()
		e.partitions(sg.target[id])
		e.tags()
		out[cgKey(sgTargetAssignmentMemberType, sg.id, &id)] = e.b

		e = valueV0()
		e.i32(m.epoch)
		e.i32(m.previousEpoch)
		e.i8(0) // MemberState stable: share members never revoke
		e.partitions(m.assigned)
		e.tags()
		out[cgKey(sgCurrentMemberAssignmentType, sg.id, &id)] = e.b
	}
	return out
}

// shareTopics writes a []TopicPartitionsInfo: topic id, name, partitions.
func (e *enc) shareTopics(ts map[[16]byte]*shareTopic) {
	ids := sortedTopicIDs(ts)
	e.uv(len(ids) + 1)
	for _, id := range ids {
		t := ts[id]
		e.b = append(e.b, id[:]...)
		e.cstr(t.name)
		ps := sortedPartitions(t.partitions)
		e.uv(len(ps) + 1)
		for _, p := range ps {
			e.i32(p)
		}
		e.tags()
	}
}

// deletingTopics writes a []TopicInfo: topic id and name.
func (e *enc) deletingTopics(ts map[[16]byte]string) {
	ids := make([][16]byte, 0, len(ts))
	for id := range ts {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return string(ids[i][:]) < string(ids[j][:]) })
	e.uv(len(ids) + 1)
	for _, id := range ids {
		e.b = append(e.b, id[:]...)
		e.cstr(ts[id])
		e.tags()
	}
}

func readDeletingTopics(d *dec) map[[16]byte]string {
	out := map[[16]byte]string{}
	for n := d.uv() - 1; n > 0 && d.err == nil; n-- {
		var id [16]byte
		copy(id[:], d.take(16))
		out[id] = d.cstr()
		d.tags()
	}
	return out
}

func readShareTopics(d *dec) map[[16]byte]*shareTopic {
	out := map[[16]byte]*shareTopic{}
	for n := d.uv() - 1; n > 0 && d.err == nil; n-- {
		var id [16]byte
		copy(id[:], d.take(16))
		t := &shareTopic{name: d.cstr(), partitions: map[int32]bool{}, startOffset: -1}
		for k := d.uv() - 1; k > 0 && d.err == nil; k-- {
			t.partitions[d.i32()] = true
		}
		d.tags()
		out[id] = t
	}
	return out
}

// isShareRecord is whether a record type belongs to share groups.
func isShareRecord(typ int16) bool {
	return typ >= sgPartitionMetadataType && typ <= sgStatePartitionMetadataType
}

// replayShare applies one share group record while loading.
func (s *Shard) replayShare(now int64, typ int16, key, value []byte) error {
	if typ == sgPartitionMetadataType {
		return nil // Kafka 4.0's subscription metadata: recomputed instead
	}
	kd := dec{b: key[2:]}
	groupID := kd.str()
	var memberID string
	if typ == sgMemberMetadataType || typ == sgTargetAssignmentMemberType || typ == sgCurrentMemberAssignmentType {
		memberID = kd.str()
	}
	if kd.err != nil {
		return fmt.Errorf("read share group record key (type %d): %w", typ, kd.err)
	}
	sg := s.shares[groupID]
	if value == nil {
		if sg == nil {
			return nil
		}
		switch typ {
		case sgMetadataType:
			delete(s.shares, groupID)
		case sgMemberMetadataType:
			delete(sg.members, memberID)
		case sgTargetAssignmentMemberType:
			delete(sg.target, memberID)
		case sgStatePartitionMetadataType:
			sg.initializing, sg.initialized = map[[16]byte]*shareTopic{}, map[[16]byte]*shareTopic{}
			sg.deleting = map[[16]byte]string{}
		}
		return nil
	}
	if sg == nil {
		sg = newShareGroup(groupID)
		s.shares[groupID] = sg
	}
	sessionMs, _ := s.shareTimeouts(groupID)
	member := func() *shareMember {
		m := sg.members[memberID]
		if m == nil {
			m = &shareMember{id: memberID, assigned: assignment{}, sessionDue: now + int64(sessionMs)}
			sg.members[memberID] = m
		}
		return m
	}
	vd := dec{b: value}
	vd.i16() // version
	switch typ {
	case sgMetadataType:
		sg.epoch = vd.i32()
	case sgTargetAssignmentMetadataType:
		sg.assignmentEpoch = vd.i32()
	case sgStatePartitionMetadataType:
		sg.initializing = readShareTopics(&vd)
		sg.initialized = readShareTopics(&vd)
		sg.deleting = readDeletingTopics(&vd)
		for id, t := range sg.initializing {
			if sg.initialized[id] != nil {
				t.startOffset = 0
			}
		}
		sg.initializeAsked = 0
	case sgMemberMetadataType:
		m := member()
		m.rackID = vd.cnstr()
		m.clientID, m.clientHost = vd.cstr(), vd.cstr()
		m.topicNames = nil
		for n := vd.uv() - 1; n > 0 && vd.err == nil; n-- {
			m.topicNames = append(m.topicNames, vd.cstr())
		}
		sort.Strings(m.topicNames)
	case sgTargetAssignmentMemberType:
		member()
		sg.target[memberID] = vd.partitions()
	case sgCurrentMemberAssignmentType:
		m := member()
		m.epoch, m.previousEpoch = vd.i32(), vd.i32()
		vd.i8() // state: always stable
		m.assigned = vd.partitions()
		m.sent = nil
	}
	if vd.err != nil {
		return fmt.Errorf("read share group record of %s (type %d): %w", groupID, typ, vd.err)
	}
	return nil
}

// shareDiff is diffRecords for a share group, with the group's metadata
// tombstone last: Kafka orders a group's tombstones so that the group
// record goes after its members' (type 11 sorts after the member metadata,
// type 10).
func shareDiff(before, after map[string][]byte) []Record {
	out := diffRecords(before, after)
	for i, r := range out {
		if r.Value == nil && len(r.Key) >= 2 && r.Key[0] == 0 && r.Key[1] == sgMetadataType {
			out = append(append(out[:i:i], out[i+1:]...), r)
			break
		}
	}
	return out
}
