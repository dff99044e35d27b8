package record

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// BuilderOptions are the batch-level fields of a batch to build. The zero
// value is not "no producer": ProducerID 0 is a real producer id, so callers
// writing non-idempotent batches set ProducerID NoProducerID, ProducerEpoch
// NoProducerEpoch and BaseSequence NoSequence, as Kafka's builder is told.
type BuilderOptions struct {
	BaseOffset    int64
	Codec         Codec
	LogAppendTime bool // timestamp type bit; the max timestamp is still the records' max
	ProducerID    int64
	ProducerEpoch int16
	BaseSequence  int32
	Transactional bool
	Control       bool
	// PartitionLeaderEpoch is the leader epoch, or the Raft term for the
	// metadata log.
	PartitionLeaderEpoch int32
	// BaseTimestamp, when not zero, is written as the base timestamp and the
	// record timestamps are stored relative to it. Zero means the first
	// record's timestamp, as Kafka's MemoryRecordsBuilder does.
	BaseTimestamp int64
}

// Builder builds one v2 batch: Append the records, then Build once.
type Builder struct {
	opts BuilderOptions
	// buf holds the encoded records; uncompressed batches keep HeaderSize
	// bytes in front of them so Build need not copy.
	buf           []byte
	count         int32
	baseTimestamp int64
	maxTimestamp  int64
}

// NewBuilder starts a batch.
func NewBuilder(opts BuilderOptions) *Builder {
	b := &Builder{opts: opts, baseTimestamp: opts.BaseTimestamp, maxTimestamp: NoTimestamp}
	if opts.Codec == CodecNone {
		b.buf = make([]byte, HeaderSize, 512)
	} else {
		b.buf = make([]byte, 0, 512)
	}
	return b
}

// Append adds a record with the next offset delta. A nil key or value is
// null; timestamp is the record's CreateTime (or append time).
func (b *Builder) Append(timestamp int64, key, value []byte, headers []RecordHeader) {
	hdrSize := headersSize(headers)
	b.appendRecordStart(timestamp, key, value, len(headers), hdrSize)
	b.buf = appendHeaders(b.buf, headers)
}

// AppendRecord encodes one record (Kafka's DefaultRecord.writeTo) with its
// own attributes and offset delta and the given timestamp delta, for callers
// that rewrite batches keeping each record's offset (the log cleaner).
func AppendRecord(dst []byte, r *Record, timestampDelta int64) []byte {
	hdrSize := headersSize(r.Headers)
	size := 1 + varintSize(timestampDelta) + varintSize(int64(r.OffsetDelta)) +
		bytesSize(r.Key) + bytesSize(r.Value) + varintSize(int64(len(r.Headers))) + hdrSize
	dst = binary.AppendVarint(dst, int64(size))
	dst = append(dst, byte(r.Attributes))
	dst = binary.AppendVarint(dst, timestampDelta)
	dst = binary.AppendVarint(dst, int64(r.OffsetDelta))
	dst = appendBytes(dst, r.Key)
	dst = appendBytes(dst, r.Value)
	dst = binary.AppendVarint(dst, int64(len(r.Headers)))
	return appendHeaders(dst, r.Headers)
}

func headersSize(headers []RecordHeader) int {
	n := 0
	for _, h := range headers {
		n += varintSize(int64(len(h.Key))) + len(h.Key) + bytesSize(h.Value)
	}
	return n
}

func appendHeaders(dst []byte, headers []RecordHeader) []byte {
	for _, h := range headers {
		dst = binary.AppendVarint(dst, int64(len(h.Key)))
		dst = append(dst, h.Key...)
		dst = appendBytes(dst, h.Value)
	}
	return dst
}

// appendRaw adds a record whose header section is already encoded, so
// recompression copies headers without decoding them.
func (b *Builder) appendRaw(timestamp int64, key, value []byte, numHeaders int32, headers []byte) {
	b.appendRecordStart(timestamp, key, value, int(numHeaders), len(headers))
	b.buf = append(b.buf, headers...)
}

// appendRecordStart writes a record up to its header count and reserves room
// for hdrSize bytes of headers, which the caller appends.
func (b *Builder) appendRecordStart(timestamp int64, key, value []byte, numHeaders, hdrSize int) {
	if b.count == 0 && b.opts.BaseTimestamp == 0 {
		b.baseTimestamp = timestamp
	}
	if timestamp > b.maxTimestamp {
		b.maxTimestamp = timestamp
	}
	tsDelta := timestamp - b.baseTimestamp
	offsetDelta := int64(b.count)
	bodySize := 1 + varintSize(tsDelta) + varintSize(offsetDelta) +
		bytesSize(key) + bytesSize(value) + varintSize(int64(numHeaders)) + hdrSize
	b.buf = slicesGrow(b.buf, binary.MaxVarintLen32+bodySize)
	b.buf = binary.AppendVarint(b.buf, int64(bodySize))
	b.buf = append(b.buf, 0) // record attributes: unused in v2
	b.buf = binary.AppendVarint(b.buf, tsDelta)
	b.buf = binary.AppendVarint(b.buf, offsetDelta)
	b.buf = appendBytes(b.buf, key)
	b.buf = appendBytes(b.buf, value)
	b.buf = binary.AppendVarint(b.buf, int64(numHeaders))
	b.count++
}

// Build returns the whole batch (base offset and length included, CRC set).
// The Builder must not be used after Build.
func (b *Builder) Build() ([]byte, error) {
	if b.count == 0 {
		return nil, errors.New("build record batch: no records")
	}
	var batch []byte
	if b.opts.Codec == CodecNone {
		batch = b.buf
	} else {
		out := make([]byte, HeaderSize, HeaderSize+len(b.buf)/2+64)
		var err error
		if batch, err = Compress(b.opts.Codec, out, b.buf); err != nil {
			return nil, fmt.Errorf("build record batch: %w", err)
		}
	}
	b.buf = nil
	attrs := uint16(b.opts.Codec) & compressionMask
	if b.opts.LogAppendTime {
		attrs |= timestampTypeBit
	}
	if b.opts.Transactional {
		attrs |= transactionalBit
	}
	if b.opts.Control {
		attrs |= controlBit
	}
	be := binary.BigEndian
	be.PutUint64(batch[baseOffsetPos:], uint64(b.opts.BaseOffset))
	be.PutUint32(batch[lengthPos:], uint32(len(batch)-LogOverhead))
	be.PutUint32(batch[partitionLeaderEpochPos:], uint32(b.opts.PartitionLeaderEpoch))
	batch[magicPos] = CurrentMagic
	be.PutUint16(batch[attributesPos:], attrs)
	be.PutUint32(batch[lastOffsetDeltaPos:], uint32(b.count-1))
	be.PutUint64(batch[baseTimestampPos:], uint64(b.baseTimestamp))
	be.PutUint64(batch[maxTimestampPos:], uint64(b.maxTimestamp))
	be.PutUint64(batch[producerIDPos:], uint64(b.opts.ProducerID))
	be.PutUint16(batch[producerEpochPos:], uint16(b.opts.ProducerEpoch))
	be.PutUint32(batch[baseSequencePos:], uint32(b.opts.BaseSequence))
	be.PutUint32(batch[recordsCountPos:], uint32(b.count))
	UpdateCRC(batch)
	return batch, nil
}

// varintSize is the length of v as a zigzag varint. For values in int32 range
// Kafka's 32-bit varint and the 64-bit varlong encode the same bytes.
func varintSize(v int64) int {
	u := uint64(v<<1) ^ uint64(v>>63)
	n := 1
	for u >= 0x80 {
		u >>= 7
		n++
	}
	return n
}

// bytesSize is the encoded size of a nullable byte field.
func bytesSize(b []byte) int {
	if b == nil {
		return 1
	}
	return varintSize(int64(len(b))) + len(b)
}

func appendBytes(dst, b []byte) []byte {
	if b == nil {
		return binary.AppendVarint(dst, -1)
	}
	dst = binary.AppendVarint(dst, int64(len(b)))
	return append(dst, b...)
}
