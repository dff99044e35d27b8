package record

import (
	"fmt"
)

// RecordHeader is one header of a record. A nil Value is a null value.
type RecordHeader struct {
	Key   string
	Value []byte
}

// Record is one record of a v2 batch, as ReadRecords returns it. TimestampDelta
// and OffsetDelta are relative to the batch's base timestamp and offset. Key
// and Value are nil for null.
type Record struct {
	Attributes     int8
	TimestampDelta int64
	OffsetDelta    int32
	Key, Value     []byte
	Headers        []RecordHeader
}

// minRecordSize is the smallest encoded record: a one-byte length varint,
// attributes, and one-byte timestamp delta, offset delta, key length, value
// length and header count. It bounds how many records a byte count can hold.
const minRecordSize = 7

// errRecordStructure reports a malformed record inside a batch. Kafka throws
// InvalidRecordException for these (INVALID_RECORD), a subclass of
// CorruptRecordException, so the error matches both sentinels.
func errRecordStructure(format string, args ...any) error {
	return fmt.Errorf("%w: %w: "+format, append([]any{ErrInvalidRecord, ErrCorruptMessage}, args...)...)
}

// rawRecord is one record as it lies in the batch. Key, Value and headers
// alias the batch bytes; nothing is copied.
type rawRecord struct {
	Attributes     int8
	TimestampDelta int64
	OffsetDelta    int32
	Key, Value     []byte
	NumHeaders     int32
	headers        []byte // the header section, already checked
}

// recordIter walks the records section of one batch without allocating:
// both validation and ReadRecords read records through it, so both accept
// exactly the same bytes.
type recordIter struct {
	rest  []byte // bytes not read yet
	left  int32  // records still to read
	index int32  // index in the batch of the next record
}

func newRecordIter(data []byte, numRecords int32) recordIter {
	return recordIter{rest: data, left: numRecords}
}

// next reads the next record into r. It returns false after the last record,
// and an error when the bytes do not hold the declared records exactly, as
// Kafka's DefaultRecord.readFrom and its record iterator check.
func (it *recordIter) next(r *rawRecord) (bool, error) {
	if it.left <= 0 {
		if len(it.rest) != 0 {
			return false, errRecordStructure("incorrect declared batch size, %d bytes remain after the last record", len(it.rest))
		}
		return false, nil
	}
	size, n := readVarint(it.rest)
	if n <= 0 {
		if len(it.rest) == 0 {
			return false, errRecordStructure("incorrect declared batch size, premature EOF reached at record %d", it.index)
		}
		return false, errRecordStructure("bad record length varint at record %d", it.index)
	}
	if size < 0 || int(size) > len(it.rest)-n {
		return false, errRecordStructure("invalid record size %d at record %d, %d bytes remain", size, it.index, len(it.rest)-n)
	}
	body := it.rest[n : n+int(size)]
	if err := parseRecordBody(body, r); err != nil {
		return false, fmt.Errorf("record %d: %w", it.index, err)
	}
	it.rest = it.rest[n+int(size):]
	it.left--
	it.index++
	return true, nil
}

// parseRecordBody reads the record body b (everything after the length)
// and checks that the fields fill it exactly.
func parseRecordBody(b []byte, r *rawRecord) error {
	if len(b) < 1 {
		return errRecordStructure("found invalid record structure: empty record")
	}
	r.Attributes = int8(b[0])
	p := 1
	var n int
	if r.TimestampDelta, n = readVarlong(b[p:]); n <= 0 {
		return errRecordStructure("found invalid record structure: timestamp delta")
	}
	p += n
	if r.OffsetDelta, n = readVarint(b[p:]); n <= 0 {
		return errRecordStructure("found invalid record structure: offset delta")
	}
	p += n
	var err error
	if r.Key, p, err = readBytes(b, p, "key"); err != nil {
		return err
	}
	if r.Value, p, err = readBytes(b, p, "value"); err != nil {
		return err
	}
	if r.NumHeaders, n = readVarint(b[p:]); n <= 0 {
		return errRecordStructure("found invalid record structure: header count")
	}
	p += n
	if r.NumHeaders < 0 || int(r.NumHeaders) > len(b)-p {
		return errRecordStructure("found invalid number of record headers %d", r.NumHeaders)
	}
	start := p
	for i := int32(0); i < r.NumHeaders; i++ {
		keyLen, n := readVarint(b[p:])
		if n <= 0 {
			return errRecordStructure("found invalid record structure: header key length")
		}
		p += n
		if keyLen < 0 {
			return errRecordStructure("invalid negative header key size %d", keyLen)
		}
		if int(keyLen) > len(b)-p {
			return errRecordStructure("found invalid record structure: header key of %d bytes, %d remain", keyLen, len(b)-p)
		}
		p += int(keyLen)
		if _, p, err = readBytes(b, p, "header value"); err != nil {
			return err
		}
	}
	r.headers = b[start:p]
	if p != len(b) {
		return errRecordStructure("invalid record size: expected to read %d bytes in record payload, but instead read %d", len(b), p)
	}
	return nil
}

// readBytes reads a varint length and that many bytes at b[p:]. A negative
// length is null, as Kafka's Utils.readBytes.
func readBytes(b []byte, p int, what string) ([]byte, int, error) {
	l, n := readVarint(b[p:])
	if n <= 0 {
		return nil, p, errRecordStructure("found invalid record structure: %s length", what)
	}
	p += n
	if l < 0 {
		return nil, p, nil
	}
	if int(l) > len(b)-p {
		return nil, p, errRecordStructure("found invalid record structure: %s of %d bytes, %d remain", what, l, len(b)-p)
	}
	return b[p : p+int(l) : p+int(l)], p + int(l), nil
}

// appendHeaders decodes the checked header section of r.
func (r *rawRecord) appendHeaders(dst []RecordHeader) []RecordHeader {
	b := r.headers
	for i := int32(0); i < r.NumHeaders; i++ {
		keyLen, n := readVarint(b)
		b = b[n:]
		key := string(b[:keyLen])
		b = b[keyLen:]
		value, p, _ := readBytes(b, 0, "header value")
		b = b[p:]
		dst = append(dst, RecordHeader{Key: key, Value: value})
	}
	return dst
}

// readVarint reads a zigzag varint of at most 5 bytes, as Kafka's
// ByteUtils.readVarint: bits past 32 in the fifth byte are dropped. n is 0
// when b ends first and -1 when the varint is too long.
func readVarint(b []byte) (v int32, n int) {
	if len(b) > 0 && b[0] < 0x80 {
		x := uint32(b[0])
		return int32(x>>1) ^ -int32(x&1), 1
	}
	var x uint32
	var shift uint
	for i := 0; i < 5; i++ {
		if i == len(b) {
			return 0, 0
		}
		c := b[i]
		x |= uint32(c&0x7f) << shift
		if c < 0x80 {
			return int32(x>>1) ^ -int32(x&1), i + 1
		}
		shift += 7
	}
	return 0, -1
}

// readVarlong reads a zigzag varint of at most 10 bytes, as Kafka's
// ByteUtils.readVarlong.
func readVarlong(b []byte) (v int64, n int) {
	if len(b) > 0 && b[0] < 0x80 {
		x := uint64(b[0])
		return int64(x>>1) ^ -int64(x&1), 1
	}
	var x uint64
	var shift uint
	for i := 0; i < 10; i++ {
		if i == len(b) {
			return 0, 0
		}
		c := b[i]
		x |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return int64(x>>1) ^ -int64(x&1), i + 1
		}
		shift += 7
	}
	return 0, -1
}

// checkBatch checks that batch is exactly one whole v2 batch with a good CRC
// and a codec Kafka defines (Kafka's DefaultRecordBatch.ensureValid and
// CompressionType.forId), and returns its header.
func checkBatch(batch []byte) (BatchHeader, error) {
	h, err := ParseHeader(batch)
	if err != nil {
		return h, err
	}
	if len(batch) < h.Size() {
		return h, fmt.Errorf("%w: batch of %d bytes, %d present", ErrShortBatch, h.Size(), len(batch))
	}
	if len(batch) > h.Size() {
		return h, fmt.Errorf("%w: %d bytes after the batch", ErrCorruptMessage, len(batch)-h.Size())
	}
	if crc := ComputeCRC(batch); crc != h.CRC {
		return h, fmt.Errorf("%w: record is corrupt (stored crc = %d, computed crc = %d)", ErrCorruptMessage, h.CRC, crc)
	}
	if c := h.Compression(); c > CodecZstd {
		return h, fmt.Errorf("%w: codec id %d", ErrUnsupportedCompression, int8(c))
	}
	return h, nil
}

// recordsData returns the records section of a checked batch, decompressed
// when the batch is compressed.
func recordsData(batch []byte, h BatchHeader) ([]byte, error) {
	data := batch[HeaderSize:]
	if h.Compression() == CodecNone {
		return data, nil
	}
	return Decompress(h.Compression(), data)
}

// ReadRecords checks one whole batch (length, CRC, codec, record structure)
// and returns its header and records, decompressing when needed. Keys, values
// and header values alias batch (or the decompressed copy); copy them to keep
// them past batch's reuse.
func ReadRecords(batch []byte) (BatchHeader, []Record, error) {
	h, err := checkBatch(batch)
	if err != nil {
		return h, nil, err
	}
	data, err := recordsData(batch, h)
	if err != nil {
		return h, nil, err
	}
	if h.NumRecords < 0 {
		return h, nil, errRecordStructure("invalid record count %d", h.NumRecords)
	}
	records := make([]Record, 0, min(int(h.NumRecords), len(data)/minRecordSize))
	it := newRecordIter(data, h.NumRecords)
	var r rawRecord
	for {
		ok, err := it.next(&r)
		if err != nil {
			return h, nil, err
		}
		if !ok {
			return h, records, nil
		}
		rec := Record{
			Attributes:     r.Attributes,
			TimestampDelta: r.TimestampDelta,
			OffsetDelta:    r.OffsetDelta,
			Key:            r.Key,
			Value:          r.Value,
		}
		if r.NumHeaders > 0 {
			rec.Headers = r.appendHeaders(make([]RecordHeader, 0, r.NumHeaders))
		}
		records = append(records, rec)
	}
}
