package sharecoord

import (
	"encoding/binary"
	"errors"
	"fmt"

	"gregor/internal/sharestate"
)

// __share_group_state records are Kafka's share coordinator records
// (ShareSnapshotKey/Value and ShareUpdateKey/Value, coordinator record types
// 0 and 1), so Kafka's tools read Gregor's records. kmsg does not carry them:
// they are encoded here by hand, in Kafka's frame. A key is the record type
// (int16) followed by the key fields (version 0, not flexible): the group id
// (int16-length string), the topic id (16 bytes) and the partition (int32).
// A value is its version (int16, always 0) followed by the fields of a
// flexible version: compact arrays, and a tagged-field section after each
// struct in which DeliveryCompleteCount (Kafka 4.2, KIP-1226) is tag 0.
const (
	recordTypeSnapshot int16 = 0
	recordTypeUpdate   int16 = 1

	valueVersion int16 = 0

	tagDeliveryCompleteCount = 0
)

// snapshot is a share-partition's complete state (Kafka's ShareGroupOffset
// as a ShareSnapshotValue carries it).
type snapshot struct {
	SnapshotEpoch         int32
	StateEpoch            int32
	LeaderEpoch           int32
	StartOffset           int64
	DeliveryCompleteCount int32 // -1: not known
	CreateTimestamp       int64
	WriteTimestamp        int64
	Batches               []sharestate.Batch
}

// update is an incremental change (a ShareUpdateValue): its batches merge
// into the state; StartOffset -1 leaves the start offset as it is.
type update struct {
	SnapshotEpoch         int32
	LeaderEpoch           int32
	StartOffset           int64
	DeliveryCompleteCount int32
	Batches               []sharestate.Batch
}

// ErrUnknownRecord is returned for a record type or value version this
// coordinator does not know; loading skips such records, as Kafka does.
var ErrUnknownRecord = errors.New("unknown __share_group_state record")

func encodeKey(recordType int16, k sharestate.Key) []byte {
	b := make([]byte, 0, 2+2+len(k.GroupID)+16+4)
	b = binary.BigEndian.AppendUint16(b, uint16(recordType))
	b = binary.BigEndian.AppendUint16(b, uint16(len(k.GroupID)))
	b = append(b, k.GroupID...)
	b = append(b, k.TopicID[:]...)
	return binary.BigEndian.AppendUint32(b, uint32(k.Partition))
}

func decodeKey(b []byte) (recordType int16, k sharestate.Key, err error) {
	r := reader{b: b}
	recordType = r.int16()
	if r.err == nil && recordType != recordTypeSnapshot && recordType != recordTypeUpdate {
		return recordType, k, fmt.Errorf("%w: key type %d", ErrUnknownRecord, recordType)
	}
	n := r.int16()
	if n < 0 {
		r.fail("negative group id length")
	}
	k.GroupID = string(r.bytes(int(n)))
	copy(k.TopicID[:], r.bytes(16))
	k.Partition = r.int32()
	if r.err == nil && len(r.b) > 0 {
		r.fail("trailing bytes")
	}
	if r.err != nil {
		return 0, sharestate.Key{}, fmt.Errorf("read __share_group_state key: %w", r.err)
	}
	return recordType, k, nil
}

func encodeSnapshot(s snapshot) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(valueVersion))
	b = binary.BigEndian.AppendUint32(b, uint32(s.SnapshotEpoch))
	b = binary.BigEndian.AppendUint32(b, uint32(s.StateEpoch))
	b = binary.BigEndian.AppendUint32(b, uint32(s.LeaderEpoch))
	b = binary.BigEndian.AppendUint64(b, uint64(s.StartOffset))
	b = binary.BigEndian.AppendUint64(b, uint64(s.CreateTimestamp))
	b = binary.BigEndian.AppendUint64(b, uint64(s.WriteTimestamp))
	b = appendBatches(b, s.Batches)
	return appendCompleteCountTag(b, s.DeliveryCompleteCount)
}

func encodeUpdate(u update) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(valueVersion))
	b = binary.BigEndian.AppendUint32(b, uint32(u.SnapshotEpoch))
	b = binary.BigEndian.AppendUint32(b, uint32(u.LeaderEpoch))
	b = binary.BigEndian.AppendUint64(b, uint64(u.StartOffset))
	b = appendBatches(b, u.Batches)
	return appendCompleteCountTag(b, u.DeliveryCompleteCount)
}

func appendBatches(b []byte, batches []sharestate.Batch) []byte {
	b = binary.AppendUvarint(b, uint64(len(batches))+1)
	for _, sb := range batches {
		b = binary.BigEndian.AppendUint64(b, uint64(sb.FirstOffset))
		b = binary.BigEndian.AppendUint64(b, uint64(sb.LastOffset))
		b = append(b, byte(sb.DeliveryState))
		b = binary.BigEndian.AppendUint16(b, uint16(sb.DeliveryCount))
		b = append(b, 0) // no tagged fields
	}
	return b
}

// appendCompleteCountTag writes the struct's tagged fields: only
// DeliveryCompleteCount, and only when it is not its default -1.
func appendCompleteCountTag(b []byte, count int32) []byte {
	if count == -1 {
		return append(b, 0)
	}
	b = binary.AppendUvarint(b, 1)
	b = binary.AppendUvarint(b, tagDeliveryCompleteCount)
	b = binary.AppendUvarint(b, 4)
	return binary.BigEndian.AppendUint32(b, uint32(count))
}

func decodeSnapshot(b []byte) (snapshot, error) {
	r := reader{b: b}
	if v := r.int16(); r.err == nil && v != valueVersion {
		return snapshot{}, fmt.Errorf("%w: ShareSnapshotValue version %d", ErrUnknownRecord, v)
	}
	s := snapshot{
		SnapshotEpoch: r.int32(), StateEpoch: r.int32(), LeaderEpoch: r.int32(),
		StartOffset: r.int64(), CreateTimestamp: r.int64(), WriteTimestamp: r.int64(),
	}
	s.Batches = r.batches()
	s.DeliveryCompleteCount = r.completeCountTag()
	if r.err != nil {
		return snapshot{}, fmt.Errorf("read ShareSnapshotValue: %w", r.err)
	}
	return s, nil
}

func decodeUpdate(b []byte) (update, error) {
	r := reader{b: b}
	if v := r.int16(); r.err == nil && v != valueVersion {
		return update{}, fmt.Errorf("%w: ShareUpdateValue version %d", ErrUnknownRecord, v)
	}
	u := update{SnapshotEpoch: r.int32(), LeaderEpoch: r.int32(), StartOffset: r.int64()}
	u.Batches = r.batches()
	u.DeliveryCompleteCount = r.completeCountTag()
	if r.err != nil {
		return update{}, fmt.Errorf("read ShareUpdateValue: %w", r.err)
	}
	return u, nil
}

// reader decodes big-endian fields; the first error sticks.
type reader struct {
	b   []byte
	err error
}

func (r *reader) fail(why string) {
	if r.err == nil {
		r.err = errors.New(why)
	}
	r.b = nil
}

func (r *reader) bytes(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n > len(r.b) {
		r.fail("truncated")
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *reader) int16() int16 {
	if b := r.bytes(2); b != nil {
		return int16(binary.BigEndian.Uint16(b))
	}
	return 0
}

func (r *reader) int32() int32 {
	if b := r.bytes(4); b != nil {
		return int32(binary.BigEndian.Uint32(b))
	}
	return 0
}

func (r *reader) int64() int64 {
	if b := r.bytes(8); b != nil {
		return int64(binary.BigEndian.Uint64(b))
	}
	return 0
}

func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail("bad varint")
		return 0
	}
	r.b = r.b[n:]
	return v
}

// skipTags skips a tagged-field section of fields this reader ignores.
func (r *reader) skipTags() {
	for n := r.uvarint(); n > 0 && r.err == nil; n-- {
		r.uvarint()
		r.bytes(int(min(r.uvarint(), uint64(len(r.b))+1)))
	}
}

func (r *reader) batches() []sharestate.Batch {
	n := r.uvarint()
	if r.err != nil {
		return nil
	}
	if n == 0 {
		r.fail("null state batches")
		return nil
	}
	n--
	// Each batch is at least 20 bytes: a count beyond that is corrupt.
	if n > uint64(len(r.b)/20) {
		r.fail("state batch count beyond the record")
		return nil
	}
	out := make([]sharestate.Batch, 0, n)
	for range n {
		sb := sharestate.Batch{FirstOffset: r.int64(), LastOffset: r.int64()}
		if b := r.bytes(1); b != nil {
			sb.DeliveryState = sharestate.DeliveryState(int8(b[0]))
		}
		sb.DeliveryCount = r.int16()
		r.skipTags()
		out = append(out, sb)
	}
	return out
}

// completeCountTag reads the value's tagged fields: DeliveryCompleteCount
// (tag 0), -1 when absent; others are skipped.
func (r *reader) completeCountTag() int32 {
	count := int32(-1)
	for n := r.uvarint(); n > 0 && r.err == nil; n-- {
		tag, size := r.uvarint(), r.uvarint()
		if size > uint64(len(r.b)) {
			r.fail("truncated tagged field")
			break
		}
		field := r.bytes(int(size))
		if tag == tagDeliveryCompleteCount && len(field) == 4 {
			count = int32(binary.BigEndian.Uint32(field))
		}
	}
	if r.err == nil && len(r.b) > 0 {
		r.fail("trailing bytes")
	}
	return count
}

func isUnknown(err error) bool { return errors.Is(err, ErrUnknownRecord) }
