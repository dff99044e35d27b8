package metadata

import (
	"github.com/twmb/franz-go/pkg/kbin"
)

// TopicRecord (type 2, version 0) creates a topic.
type TopicRecord struct {
	Name    string
	TopicID [16]byte
}

func (*TopicRecord) Type() int16       { return TopicRecordType }
func (*TopicRecord) Version() int16    { return 0 }
func (*TopicRecord) maxVersion() int16 { return 0 }

func (r *TopicRecord) AppendTo(dst []byte) []byte {
	dst = kbin.AppendCompactString(dst, r.Name)
	dst = kbin.AppendUuid(dst, r.TopicID)
	return appendTags(dst, nil)
}

func (r *TopicRecord) readFrom(d *decoder, _ int16) {
	r.Name = d.compactString()
	r.TopicID = d.uuid()
	d.noTags()
}

// RemoveTopicRecord (type 9, version 0) deletes a topic, its partitions and
// its configs.
type RemoveTopicRecord struct {
	TopicID [16]byte
}

func (*RemoveTopicRecord) Type() int16       { return RemoveTopicRecordType }
func (*RemoveTopicRecord) Version() int16    { return 0 }
func (*RemoveTopicRecord) maxVersion() int16 { return 0 }

func (r *RemoveTopicRecord) AppendTo(dst []byte) []byte {
	dst = kbin.AppendUuid(dst, r.TopicID)
	return appendTags(dst, nil)
}

func (r *RemoveTopicRecord) readFrom(d *decoder, _ int16) {
	r.TopicID = d.uuid()
	d.noTags()
}

// Leader recovery states (PartitionRecord.LeaderRecoveryState).
const (
	LeaderRecovered  int8 = 0
	LeaderRecovering int8 = 1
)

// NoLeader is the Leader of a partition without a leader.
const NoLeader int32 = -1

// PartitionRecord (type 3, versions 0-2) creates a partition or replaces all of
// its state. Version 1 adds Directories (KIP-858), version 2 the eligible
// leader replicas (KIP-966). Gregor writes version 1, as Kafka 4.0 does with
// ELR disabled.
type PartitionRecord struct {
	RecordVersion       int16 // schema version to encode with; Decode sets it
	PartitionID         int32
	TopicID             [16]byte
	Replicas            []int32
	ISR                 []int32
	RemovingReplicas    []int32
	AddingReplicas      []int32
	Leader              int32
	LeaderRecoveryState int8 // tag 0
	LeaderEpoch         int32
	PartitionEpoch      int32
	Directories         [][16]byte // v1+
	// EligibleLeaderReplicas and LastKnownELR are v2+ tagged fields; nil
	// means null, which is not written.
	EligibleLeaderReplicas []int32 // v2+, tag 1
	LastKnownELR           []int32 // v2+, tag 2
}

// PartitionRecordVersion is the version Gregor writes (Kafka 4.0-IV3 without ELR).
const PartitionRecordVersion int16 = 1

func (*PartitionRecord) Type() int16       { return PartitionRecordType }
func (r *PartitionRecord) Version() int16  { return clampVersion(r.RecordVersion, 2) }
func (*PartitionRecord) maxVersion() int16 { return 2 }

func (r *PartitionRecord) AppendTo(dst []byte) []byte {
	v := r.Version()
	dst = kbin.AppendInt32(dst, r.PartitionID)
	dst = kbin.AppendUuid(dst, r.TopicID)
	dst = appendInt32s(dst, r.Replicas)
	dst = appendInt32s(dst, r.ISR)
	dst = appendInt32s(dst, r.RemovingReplicas)
	dst = appendInt32s(dst, r.AddingReplicas)
	dst = kbin.AppendInt32(dst, r.Leader)
	dst = kbin.AppendInt32(dst, r.LeaderEpoch)
	dst = kbin.AppendInt32(dst, r.PartitionEpoch)
	if v >= 1 {
		dst = appendUUIDs(dst, r.Directories)
	}
	var tags []taggedField
	if r.LeaderRecoveryState != LeaderRecovered {
		tags = append(tags, taggedField{0, kbin.AppendInt8(nil, r.LeaderRecoveryState)})
	}
	if v >= 2 && r.EligibleLeaderReplicas != nil {
		tags = append(tags, taggedField{1, appendNullableInt32s(nil, r.EligibleLeaderReplicas)})
	}
	if v >= 2 && r.LastKnownELR != nil {
		tags = append(tags, taggedField{2, appendNullableInt32s(nil, r.LastKnownELR)})
	}
	return appendTags(dst, tags)
}

func (r *PartitionRecord) readFrom(d *decoder, version int16) {
	r.RecordVersion = version
	r.PartitionID = d.int32()
	r.TopicID = d.uuid()
	r.Replicas = d.int32s(false)
	r.ISR = d.int32s(false)
	r.RemovingReplicas = d.int32s(false)
	r.AddingReplicas = d.int32s(false)
	r.Leader = d.int32()
	r.LeaderEpoch = d.int32()
	r.PartitionEpoch = d.int32()
	if version >= 1 {
		r.Directories = d.uuids(false)
	}
	d.tags(func(tag uint32, f *decoder) bool {
		switch {
		case tag == 0:
			r.LeaderRecoveryState = f.int8()
		case tag == 1 && version >= 2:
			r.EligibleLeaderReplicas = f.int32s(true)
		case tag == 2 && version >= 2:
			r.LastKnownELR = f.int32s(true)
		default:
			return false
		}
		return true
	})
}

// "No change" values of PartitionChangeRecord's tagged fields.
const (
	NoLeaderChange              int32 = -2
	NoLeaderRecoveryStateChange int8  = -1
)

// PartitionChangeRecord (type 5, versions 0-2) changes some fields of a
// partition; every field but the ids is tagged, and a null (nil) or default
// value means "unchanged". Build one with NewPartitionChangeRecord so Leader
// and LeaderRecoveryState start at their "no change" values.
type PartitionChangeRecord struct {
	RecordVersion          int16 // schema version to encode with; Decode sets it
	PartitionID            int32
	TopicID                [16]byte
	ISR                    []int32    // tag 0
	Leader                 int32      // tag 1; NoLeaderChange = unchanged
	Replicas               []int32    // tag 2
	RemovingReplicas       []int32    // tag 3
	AddingReplicas         []int32    // tag 4
	LeaderRecoveryState    int8       // tag 5; NoLeaderRecoveryStateChange = unchanged
	EligibleLeaderReplicas []int32    // v2+, tag 6
	LastKnownELR           []int32    // v2+, tag 7
	Directories            [][16]byte // v1+, tag 8
}

// NewPartitionChangeRecord returns a change record that changes nothing yet.
func NewPartitionChangeRecord(topicID [16]byte, partition int32) *PartitionChangeRecord {
	return &PartitionChangeRecord{
		RecordVersion:       PartitionRecordVersion,
		PartitionID:         partition,
		TopicID:             topicID,
		Leader:              NoLeaderChange,
		LeaderRecoveryState: NoLeaderRecoveryStateChange,
	}
}

func (*PartitionChangeRecord) Type() int16       { return PartitionChangeRecordType }
func (r *PartitionChangeRecord) Version() int16  { return clampVersion(r.RecordVersion, 2) }
func (*PartitionChangeRecord) maxVersion() int16 { return 2 }

func (r *PartitionChangeRecord) AppendTo(dst []byte) []byte {
	v := r.Version()
	dst = kbin.AppendInt32(dst, r.PartitionID)
	dst = kbin.AppendUuid(dst, r.TopicID)
	var tags []taggedField
	if r.ISR != nil {
		tags = append(tags, taggedField{0, appendNullableInt32s(nil, r.ISR)})
	}
	if r.Leader != NoLeaderChange {
		tags = append(tags, taggedField{1, kbin.AppendInt32(nil, r.Leader)})
	}
	if r.Replicas != nil {
		tags = append(tags, taggedField{2, appendNullableInt32s(nil, r.Replicas)})
	}
	if r.RemovingReplicas != nil {
		tags = append(tags, taggedField{3, appendNullableInt32s(nil, r.RemovingReplicas)})
	}
	if r.AddingReplicas != nil {
		tags = append(tags, taggedField{4, appendNullableInt32s(nil, r.AddingReplicas)})
	}
	if r.LeaderRecoveryState != NoLeaderRecoveryStateChange {
		tags = append(tags, taggedField{5, kbin.AppendInt8(nil, r.LeaderRecoveryState)})
	}
	if v >= 2 && r.EligibleLeaderReplicas != nil {
		tags = append(tags, taggedField{6, appendNullableInt32s(nil, r.EligibleLeaderReplicas)})
	}
	if v >= 2 && r.LastKnownELR != nil {
		tags = append(tags, taggedField{7, appendNullableInt32s(nil, r.LastKnownELR)})
	}
	if v >= 1 && r.Directories != nil {
		tags = append(tags, taggedField{8, appendNullableUUIDs(nil, r.Directories)})
	}
	return appendTags(dst, tags)
}

func (r *PartitionChangeRecord) readFrom(d *decoder, version int16) {
	r.RecordVersion = version
	r.Leader = NoLeaderChange
	r.LeaderRecoveryState = NoLeaderRecoveryStateChange
	r.PartitionID = d.int32()
	r.TopicID = d.uuid()
	d.tags(func(tag uint32, f *decoder) bool {
		switch {
		case tag == 0:
			r.ISR = f.int32s(true)
		case tag == 1:
			r.Leader = f.int32()
		case tag == 2:
			r.Replicas = f.int32s(true)
		case tag == 3:
			r.RemovingReplicas = f.int32s(true)
		case tag == 4:
			r.AddingReplicas = f.int32s(true)
		case tag == 5:
			r.LeaderRecoveryState = f.int8()
		case tag == 6 && version >= 2:
			r.EligibleLeaderReplicas = f.int32s(true)
		case tag == 7 && version >= 2:
			r.LastKnownELR = f.int32s(true)
		case tag == 8 && version >= 1:
			r.Directories = f.uuids(true)
		default:
			return false
		}
		return true
	})
}

// ClearElrRecord (type 28, version 0) clears the eligible leader replicas
// and last known ELR of every partition of a topic, or of every topic when
// TopicName is empty (KIP-966: written when min.insync.replicas changes,
// since the ELR's guarantee was made for the old value).
type ClearElrRecord struct {
	TopicName string
}

func (*ClearElrRecord) Type() int16       { return ClearElrRecordType }
func (*ClearElrRecord) Version() int16    { return 0 }
func (*ClearElrRecord) maxVersion() int16 { return 0 }

func (r *ClearElrRecord) AppendTo(dst []byte) []byte {
	dst = kbin.AppendCompactString(dst, r.TopicName)
	return appendTags(dst, nil)
}

func (r *ClearElrRecord) readFrom(d *decoder, _ int16) {
	r.TopicName = d.compactString()
	d.noTags()
}
