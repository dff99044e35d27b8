// Package record reads, writes and validates Kafka record batches (magic v2):
// the header, CRC32C, the four compression codecs and the default partitioner's
// murmur2. It knows nothing about logs or partitions; the log layer stores the
// bytes this package has checked.
package record

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
)

// Byte layout of a v2 record batch header (Kafka's DefaultRecordBatch).
const (
	baseOffsetPos           = 0
	lengthPos               = 8
	partitionLeaderEpochPos = 12
	magicPos                = 16
	crcPos                  = 17
	attributesPos           = 21
	lastOffsetDeltaPos      = 23
	baseTimestampPos        = 27
	maxTimestampPos         = 35
	producerIDPos           = 43
	producerEpochPos        = 51
	baseSequencePos         = 53
	recordsCountPos         = 57

	// HeaderSize is the size of a v2 batch header, records excluded.
	HeaderSize = 61
	// LogOverhead is the offset and length prefix every batch carries (Kafka's LOG_OVERHEAD).
	LogOverhead = 12
	// CurrentMagic is the only message format Gregor accepts, as Kafka 4.0.
	CurrentMagic = 2

	// headerSizeUpToMagic is how many bytes tell a batch's length and magic
	// (Kafka's HEADER_SIZE_UP_TO_MAGIC).
	headerSizeUpToMagic = magicPos + 1
)

// Attribute bits of a v2 batch.
const (
	compressionMask        = 0x07
	timestampTypeBit       = 0x08
	transactionalBit       = 0x10
	controlBit             = 0x20
	deleteHorizonBit       = 0x40
	NoTimestamp            = int64(-1)
	NoProducerID           = int64(-1)
	NoProducerEpoch        = int16(-1)
	NoSequence             = int32(-1)
	NoPartitionLeaderEpoch = int32(-1)
)

// castagnoli is the CRC32C table; a constant table, built once.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// BatchHeader is the fixed part of a v2 record batch.
type BatchHeader struct {
	BaseOffset           int64
	Length               int32 // bytes after the length field
	PartitionLeaderEpoch int32
	Magic                int8
	CRC                  uint32
	Attributes           int16
	LastOffsetDelta      int32
	BaseTimestamp        int64
	MaxTimestamp         int64
	ProducerID           int64
	ProducerEpoch        int16
	BaseSequence         int32
	NumRecords           int32
}

// ParseHeader reads the header at the start of b. It checks only the header:
// that it is present, that the magic is 2 and that the length field covers at
// least the header. It does not check the CRC or that b holds the whole batch.
//
// Errors: ErrShortBatch when b ends inside the header; ErrUnsupportedMagic for
// magic 0 or 1; ErrCorruptMessage for a magic outside 0..2 or a length below
// the header size.
func ParseHeader(b []byte) (BatchHeader, error) {
	if len(b) < headerSizeUpToMagic {
		return BatchHeader{}, ErrShortBatch
	}
	h := BatchHeader{
		BaseOffset:           int64(binary.BigEndian.Uint64(b[baseOffsetPos:])),
		Length:               int32(binary.BigEndian.Uint32(b[lengthPos:])),
		Magic:                int8(b[magicPos]),
		PartitionLeaderEpoch: int32(binary.BigEndian.Uint32(b[partitionLeaderEpochPos:])),
	}
	if h.Magic < 0 || h.Magic > CurrentMagic {
		return h, fmt.Errorf("%w: invalid magic %d", ErrCorruptMessage, h.Magic)
	}
	if h.Magic != CurrentMagic {
		return h, fmt.Errorf("%w: magic %d, only magic %d is accepted", ErrUnsupportedMagic, h.Magic, CurrentMagic)
	}
	if h.Length < HeaderSize-LogOverhead {
		return h, fmt.Errorf("%w: batch length %d is less than the batch header (%d)",
			ErrCorruptMessage, h.Length, HeaderSize-LogOverhead)
	}
	if len(b) < HeaderSize {
		return h, ErrShortBatch
	}
	h.CRC = binary.BigEndian.Uint32(b[crcPos:])
	h.Attributes = int16(binary.BigEndian.Uint16(b[attributesPos:]))
	h.LastOffsetDelta = int32(binary.BigEndian.Uint32(b[lastOffsetDeltaPos:]))
	h.BaseTimestamp = int64(binary.BigEndian.Uint64(b[baseTimestampPos:]))
	h.MaxTimestamp = int64(binary.BigEndian.Uint64(b[maxTimestampPos:]))
	h.ProducerID = int64(binary.BigEndian.Uint64(b[producerIDPos:]))
	h.ProducerEpoch = int16(binary.BigEndian.Uint16(b[producerEpochPos:]))
	h.BaseSequence = int32(binary.BigEndian.Uint32(b[baseSequencePos:]))
	h.NumRecords = int32(binary.BigEndian.Uint32(b[recordsCountPos:]))
	return h, nil
}

// Size is the whole batch's size on disk and on the wire.
func (h BatchHeader) Size() int { return int(h.Length) + LogOverhead }

// LastOffset is the offset of the batch's last record.
func (h BatchHeader) LastOffset() int64 { return h.BaseOffset + int64(h.LastOffsetDelta) }

// NextOffset is the offset after the batch.
func (h BatchHeader) NextOffset() int64 { return h.LastOffset() + 1 }

// Compression is the codec named by the attributes.
func (h BatchHeader) Compression() Codec { return Codec(h.Attributes & compressionMask) }

// LogAppendTime reports whether timestamps are the broker's append time.
func (h BatchHeader) LogAppendTime() bool { return h.Attributes&timestampTypeBit != 0 }

// IsTransactional reports the transactional attribute.
func (h BatchHeader) IsTransactional() bool { return h.Attributes&transactionalBit != 0 }

// IsControl reports whether the batch holds control records (transaction markers).
func (h BatchHeader) IsControl() bool { return h.Attributes&controlBit != 0 }

// HasDeleteHorizon reports whether BaseTimestamp is the cleaner's delete horizon.
func (h BatchHeader) HasDeleteHorizon() bool { return h.Attributes&deleteHorizonBit != 0 }

// ComputeCRC returns the CRC32C of the batch from the attributes to the end,
// which is what the header's CRC field must hold.
func ComputeCRC(batch []byte) uint32 {
	return crc32.Checksum(batch[attributesPos:], castagnoli)
}

// SetBaseOffset writes the base offset in place; the CRC does not cover it.
func SetBaseOffset(batch []byte, offset int64) {
	binary.BigEndian.PutUint64(batch[baseOffsetPos:], uint64(offset))
}

// SetPartitionLeaderEpoch writes the leader epoch in place; the CRC does not cover it.
func SetPartitionLeaderEpoch(batch []byte, epoch int32) {
	binary.BigEndian.PutUint32(batch[partitionLeaderEpochPos:], uint32(epoch))
}

// SetLogAppendTime marks the batch as stamped with the broker's time ts
// (max timestamp and the timestamp type bit) and rewrites the CRC, as Kafka
// does in place for LogAppendTime topics.
func SetLogAppendTime(batch []byte, ts int64) {
	setMaxTimestamp(batch, true, ts)
}

// setMaxTimestamp writes the timestamp type and max timestamp and rewrites the
// CRC only when either changed (Kafka's DefaultRecordBatch.setMaxTimestamp):
// the common CreateTime append, whose producer already wrote the right max
// timestamp, costs no CRC pass.
func setMaxTimestamp(batch []byte, logAppendTime bool, ts int64) {
	attrs := binary.BigEndian.Uint16(batch[attributesPos:])
	newAttrs := attrs &^ timestampTypeBit
	if logAppendTime {
		newAttrs |= timestampTypeBit
	}
	if attrs == newAttrs && int64(binary.BigEndian.Uint64(batch[maxTimestampPos:])) == ts {
		return
	}
	binary.BigEndian.PutUint16(batch[attributesPos:], newAttrs)
	binary.BigEndian.PutUint64(batch[maxTimestampPos:], uint64(ts))
	UpdateCRC(batch)
}

// UpdateCRC recomputes and stores the batch CRC.
func UpdateCRC(batch []byte) {
	binary.BigEndian.PutUint32(batch[crcPos:], ComputeCRC(batch))
}

// LastSequence is the sequence number of the batch's last record (Kafka's
// DefaultRecordBatch.lastSequence): the base sequence plus the last offset
// delta, wrapping past MaxInt32 to 0; NoSequence when the batch has none.
func (h BatchHeader) LastSequence() int32 {
	if h.BaseSequence == NoSequence {
		return NoSequence
	}
	return IncrementSequence(h.BaseSequence, h.LastOffsetDelta)
}

// IncrementSequence adds inc to a producer sequence number, wrapping from
// MaxInt32 to 0 as Kafka's DefaultRecordBatch.incrementSequence does.
func IncrementSequence(seq, inc int32) int32 {
	if seq > math.MaxInt32-inc {
		return inc - (math.MaxInt32 - seq) - 1
	}
	return seq + inc
}

// DecrementSequence subtracts dec from a producer sequence number, wrapping
// below 0 to MaxInt32 (Kafka's DefaultRecordBatch.decrementSequence).
func DecrementSequence(seq, dec int32) int32 {
	if seq < dec {
		return math.MaxInt32 - (dec - seq) + 1
	}
	return seq - dec
}
