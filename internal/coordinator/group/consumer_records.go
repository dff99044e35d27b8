package group

// KIP-848 group state in __consumer_offsets, in Kafka's record formats (the
// group-coordinator module's coordinator records; kmsg has no types for
// them). A key is the record type as an int16 followed by the key's fields
// (non-flexible); a value is version 0 in the flexible encoding. The shard
// writes the difference between the group's records before and after each
// operation, so the state is rebuilt on load by replaying them.
//
// Of the consumer group records Kafka 4.0 writes, Gregor writes all that
// carry state it keeps: types 3 and 5-8 and the subscription metadata (4).
// Not written: ConsumerGroupRegularExpression (16), Kafka's cache of each
// regex's resolution, made asynchronously and refreshed at most every 10 s;
// Gregor resolves regexes against the topics on every heartbeat and keeps
// no resolution to persist (the subscription metadata it writes covers the
// topics they matched). Types 9-15 are the share groups' (share_records.go).
// Unknown types are skipped on load.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
)

// Record types (key versions) of the consumer group records.
const (
	cgMetadataType                 = 3 // ConsumerGroupMetadata: group epoch
	cgPartitionMetadataType        = 4 // ConsumerGroupPartitionMetadata: subscription metadata (Kafka 4.0; 4.1 replaced it by a hash)
	cgMemberMetadataType           = 5 // ConsumerGroupMemberMetadata
	cgTargetAssignmentMetadataType = 6 // ConsumerGroupTargetAssignmentMetadata: assignment epoch
	cgTargetAssignmentMemberType   = 7 // ConsumerGroupTargetAssignmentMember
	cgCurrentMemberAssignmentType  = 8 // ConsumerGroupCurrentMemberAssignment
)

// memberStateCode is Kafka's MemberState value.
var memberStateCode = map[string]int8{memberStable: 0, memberUnrevokedPartitions: 1, memberUnreleasedPartition: 2}

type enc struct{ b []byte }

func (e *enc) i8(v int8)   { e.b = append(e.b, byte(v)) }
func (e *enc) i16(v int16) { e.b = binary.BigEndian.AppendUint16(e.b, uint16(v)) }
func (e *enc) i32(v int32) { e.b = binary.BigEndian.AppendUint32(e.b, uint32(v)) }
func (e *enc) uv(v int)    { e.b = binary.AppendUvarint(e.b, uint64(v)) }
func (e *enc) str(s string) {
	e.i16(int16(len(s)))
	e.b = append(e.b, s...)
}
func (e *enc) cstr(s string) { e.uv(len(s) + 1); e.b = append(e.b, s...) }
func (e *enc) cnstr(s *string) {
	if s == nil {
		e.uv(0)
		return
	}
	e.cstr(*s)
}
func (e *enc) cbytes(b []byte) { e.uv(len(b) + 1); e.b = append(e.b, b...) }
func (e *enc) tags()           { e.uv(0) }
func (e *enc) partitions(a assignment) {
	ids, parts := a.byTopic()
	e.uv(len(ids) + 1)
	for _, id := range ids {
		e.b = append(e.b, id[:]...)
		e.uv(len(parts[id]) + 1)
		for _, p := range parts[id] {
			e.i32(p)
		}
		e.tags()
	}
}

type dec struct {
	b   []byte
	err error
}

func (d *dec) take(n int) []byte {
	if d.err != nil || n < 0 || n > len(d.b) {
		d.err = errors.New("record too short")
		return nil
	}
	out := d.b[:n]
	d.b = d.b[n:]
	return out
}
func (d *dec) i8() int8 {
	if b := d.take(1); b != nil {
		return int8(b[0])
	}
	return 0
}
func (d *dec) i16() int16 {
	if b := d.take(2); b != nil {
		return int16(binary.BigEndian.Uint16(b))
	}
	return 0
}
func (d *dec) i32() int32 {
	if b := d.take(4); b != nil {
		return int32(binary.BigEndian.Uint32(b))
	}
	return 0
}
func (d *dec) uv() int {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = errors.New("bad varint")
		return 0
	}
	d.b = d.b[n:]
	return int(v)
}
func (d *dec) str() string { return string(d.take(int(d.i16()))) }
func (d *dec) cnstr() *string {
	n := d.uv()
	if n == 0 {
		return nil
	}
	s := string(d.take(n - 1))
	return &s
}
func (d *dec) cstr() string {
	if s := d.cnstr(); s != nil {
		return *s
	}
	return ""
}
func (d *dec) tags() {
	for n := d.uv(); n > 0 && d.err == nil; n-- {
		d.uv()
		d.take(d.uv())
	}
}
func (d *dec) partitions() assignment {
	a := assignment{}
	for n := d.uv() - 1; n > 0 && d.err == nil; n-- {
		var id [16]byte
		copy(id[:], d.take(16))
		for k := d.uv() - 1; k > 0 && d.err == nil; k-- {
			a[tp{id, d.i32()}] = true
		}
		d.tags()
	}
	return a
}

func cgKey(typ int16, groupID string, memberID *string) string {
	e := enc{}
	e.i16(typ)
	e.str(groupID)
	if memberID != nil {
		e.str(*memberID)
	}
	return string(e.b)
}

func valueV0() *enc { e := &enc{}; e.i16(0); return e }

// consumerRecords is the group's KIP-848 state as records, by key.
func (g *group) consumerRecords() map[string][]byte {
	out := map[string][]byte{}
	c := g.consumer
	if c == nil {
		return out
	}
	e := valueV0()
	e.i32(c.epoch)
	e.tags()
	out[cgKey(cgMetadataType, g.id, nil)] = e.b
	e = valueV0()
	e.i32(c.assignmentEpoch)
	e.tags()
	out[cgKey(cgTargetAssignmentMetadataType, g.id, nil)] = e.b
	if c.subscription != nil {
		out[cgKey(cgPartitionMetadataType, g.id, nil)] = subscriptionValue(c.subscription)
	}
	for id, m := range c.members {
		e = valueV0()
		e.cnstr(m.instanceID)
		e.cnstr(m.rackID)
		e.cstr(m.clientID)
		e.cstr(m.clientHost)
		e.uv(len(m.topicNames) + 1)
		for _, t := range m.topicNames {
			e.cstr(t)
		}
		if m.regex != "" {
			e.cstr(m.regex)
		} else {
			e.cnstr(nil)
		}
		e.i32(m.rebalanceTimeoutMs)
		if m.serverAssignor != "" {
			e.cstr(m.serverAssignor)
		} else {
			e.cnstr(nil)
		}
		if m.classic != nil {
			e.classicMemberTag(m.classic)
		} else {
			e.tags()
		}
		out[cgKey(cgMemberMetadataType, g.id, &id)] = e.b

		e = valueV0()
		e.partitions(c.target[id])
		e.tags()
		out[cgKey(cgTargetAssignmentMemberType, g.id, &id)] = e.b

		e = valueV0()
		e.i32(m.epoch)
		e.i32(m.previousEpoch)
		e.i8(memberStateCode[m.state])
		e.partitions(m.assigned)
		e.partitions(m.revoking)
		e.tags()
		out[cgKey(cgCurrentMemberAssignmentType, g.id, &id)] = e.b
	}
	return out
}

// classicMemberTag writes a classic member's ClassicMemberMetadata, the
// member metadata value's one tagged field (tag 0): session timeout and
// supported protocols.
func (e *enc) classicMemberTag(cm *classicMember) {
	f := enc{}
	f.i32(cm.sessionTimeoutMs)
	f.uv(len(cm.protocols) + 1)
	for _, p := range cm.protocols {
		f.cstr(p.name)
		f.cbytes(p.metadata)
		f.tags()
	}
	f.tags()
	e.uv(1) // one tagged field
	e.uv(0) // tag 0
	e.uv(len(f.b))
	e.b = append(e.b, f.b...)
}

// readMemberTags reads the member metadata value's tagged fields: the
// classic member metadata (tag 0) if present; others are skipped.
func readMemberTags(d *dec) *classicMember {
	var cm *classicMember
	for n := d.uv(); n > 0 && d.err == nil; n-- {
		tag, size := d.uv(), d.uv()
		field := d.take(size)
		if tag != 0 || d.err != nil {
			continue
		}
		fd := dec{b: field}
		cm = &classicMember{sessionTimeoutMs: fd.i32()}
		for k := fd.uv() - 1; k > 0 && fd.err == nil; k-- {
			name := fd.cstr()
			meta := fd.take(fd.uv() - 1)
			fd.tags()
			cm.protocols = append(cm.protocols, protocol{name: name, metadata: append([]byte(nil), meta...)})
		}
		fd.tags()
		if fd.err != nil {
			d.err = fmt.Errorf("read classic member metadata: %w", fd.err)
		}
	}
	return cm
}

// subscriptionValue is a ConsumerGroupPartitionMetadataValue: the topics
// by name, each with its id, name, partition count and an empty
// PartitionMetadata (racks; unused since Kafka 4.0).
func subscriptionValue(topics Topics) []byte {
	names := make([]string, 0, len(topics))
	for n := range topics {
		names = append(names, n)
	}
	sort.Strings(names)
	e := valueV0()
	e.uv(len(names) + 1)
	for _, n := range names {
		t := topics[n]
		e.b = append(e.b, t.ID[:]...)
		e.cstr(n)
		e.i32(t.Partitions)
		e.uv(1) // PartitionMetadata: empty
		e.tags()
	}
	e.tags()
	return e.b
}

// readSubscription reads a ConsumerGroupPartitionMetadataValue after its
// version (a Kafka-written one may list racks: skipped).
func readSubscription(d *dec) Topics {
	out := Topics{}
	for n := d.uv() - 1; n > 0 && d.err == nil; n-- {
		var t TopicInfo
		copy(t.ID[:], d.take(16))
		name := d.cstr()
		t.Partitions = d.i32()
		for k := d.uv() - 1; k > 0 && d.err == nil; k-- {
			d.i32()
			for r := d.uv() - 1; r > 0 && d.err == nil; r-- {
				d.cstr()
			}
			d.tags()
		}
		d.tags()
		out[name] = t
	}
	d.tags()
	return out
}

// diffRecords are the records that turn before into after: changed and new
// values by record type (metadata before members, members before their
// assignments), then tombstones in the reverse order.
func diffRecords(before, after map[string][]byte) []Record {
	var puts, dels []string
	for k, v := range after {
		if old, ok := before[k]; !ok || string(old) != string(v) {
			puts = append(puts, k)
		}
	}
	for k := range before {
		if _, ok := after[k]; !ok {
			dels = append(dels, k)
		}
	}
	sort.Strings(puts)
	sort.Sort(sort.Reverse(sort.StringSlice(dels)))
	out := make([]Record, 0, len(puts)+len(dels))
	for _, k := range puts {
		out = append(out, Record{Key: []byte(k), Value: after[k]})
	}
	for _, k := range dels {
		out = append(out, Record{Key: []byte(k)})
	}
	return out
}

// replayConsumer applies one consumer group record while loading.
func (s *Shard) replayConsumer(now int64, typ int16, key, value []byte) error {
	kd := dec{b: key[2:]}
	groupID := kd.str()
	var memberID string
	if typ == cgMemberMetadataType || typ == cgTargetAssignmentMemberType || typ == cgCurrentMemberAssignmentType {
		memberID = kd.str()
	}
	if kd.err != nil {
		return fmt.Errorf("read consumer group record key (type %d): %w", typ, kd.err)
	}
	g := s.groups[groupID]
	if value == nil {
		if g == nil || g.consumer == nil {
			return nil
		}
		c := g.consumer
		switch typ {
		case cgMetadataType:
			g.consumer = nil
			s.maybeDropEmpty(g)
		case cgMemberMetadataType:
			// A static member's replacement may already hold the
			// instance id (its records can come first).
			if m := c.members[memberID]; m != nil && m.instanceID != nil && c.static[*m.instanceID] == memberID {
				delete(c.static, *m.instanceID)
			}
			delete(c.members, memberID)
		case cgTargetAssignmentMemberType:
			delete(c.target, memberID)
		case cgPartitionMetadataType:
			c.subscription = nil
		}
		return nil
	}
	if g == nil {
		g = newGroup(groupID, now)
		s.groups[groupID] = g
	}
	if g.consumer == nil {
		g.consumer = newConsumerGroup()
	}
	c := g.consumer
	vd := dec{b: value}
	vd.i16() // version
	member := func() *cmember {
		m := c.members[memberID]
		if m == nil {
			m = &cmember{id: memberID, state: memberStable, assigned: assignment{}, revoking: assignment{},
				sessionDue: now + int64(s.cfg.ConsumerSessionTimeoutMs)}
			c.members[memberID] = m
		}
		return m
	}
	switch typ {
	case cgMetadataType:
		c.epoch = vd.i32()
	case cgTargetAssignmentMetadataType:
		c.assignmentEpoch = vd.i32()
	case cgPartitionMetadataType:
		c.subscription = readSubscription(&vd)
		for n, t := range c.subscription {
			c.names[n] = t.ID
		}
	case cgMemberMetadataType:
		m := member()
		m.instanceID, m.rackID = vd.cnstr(), vd.cnstr()
		m.clientID, m.clientHost = vd.cstr(), vd.cstr()
		m.topicNames = nil
		for n := vd.uv() - 1; n > 0 && vd.err == nil; n-- {
			m.topicNames = append(m.topicNames, vd.cstr())
		}
		m.regex = vd.cstr()
		m.rebalanceTimeoutMs = vd.i32()
		m.serverAssignor = vd.cstr()
		m.classic = readMemberTags(&vd)
		if m.classic != nil {
			// A classic member's session is its own; it has no revocation
			// timer (its join and sync timers are not persisted: it is
			// told to rejoin if it must).
			m.sessionDue = now + int64(m.classic.sessionTimeoutMs)
			m.revokeDue = 0
		}
		if m.instanceID != nil {
			c.static[*m.instanceID] = memberID
		}
	case cgTargetAssignmentMemberType:
		member()
		c.target[memberID] = vd.partitions()
	case cgCurrentMemberAssignmentType:
		m := member()
		m.epoch, m.previousEpoch = vd.i32(), vd.i32()
		st := vd.i8()
		m.state = memberStable
		for name, code := range memberStateCode {
			if code == st {
				m.state = name
			}
		}
		m.assigned, m.revoking = vd.partitions(), vd.partitions()
		m.assignedAt = map[[16]byte]map[int32]int32{}
		for p := range m.assigned {
			if m.assignedAt[p.topic] == nil {
				m.assignedAt[p.topic] = map[int32]int32{}
			}
			m.assignedAt[p.topic][p.partition] = m.epoch
		}
		// A member still revoking gets a new rebalance timeout from the
		// load (Kafka's onLoaded); a later record may show it done.
		m.revokeDue = 0
		if len(m.revoking) > 0 && m.classic == nil {
			m.revokeDue = now + int64(m.rebalanceTimeoutMs)
		}
	}
	if vd.err != nil {
		return fmt.Errorf("read consumer group record of %s (type %d): %w", groupID, typ, vd.err)
	}
	return nil
}
