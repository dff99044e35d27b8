package record

import (
	"bufio"
	"errors"
	"fmt"
	"math"
)

// Kafka's defaults for the topic configs ValidateOptions carries. The
// options are taken literally (a zero TimestampAfterMaxMs allows no future
// timestamps at all), so callers start from these.
const (
	DefaultMaxMessageBytes      = 1048588       // max.message.bytes
	DefaultTimestampBeforeMaxMs = math.MaxInt64 // message.timestamp.before.max.ms
	DefaultTimestampAfterMaxMs  = 3600000       // message.timestamp.after.max.ms
)

// ValidateOptions are the broker clock and the topic configs that decide how
// a produced batch is checked and stored.
type ValidateOptions struct {
	Now int64 // broker time, ms
	// MaxMessageBytes is max.message.bytes: a larger batch (before or after
	// recompression), or a record of a compressed batch larger than this
	// once decompressed, is ErrMessageTooLarge.
	MaxMessageBytes int32
	// LogAppendTime is message.timestamp.type=LogAppendTime.
	LogAppendTime bool
	// TimestampBeforeMaxMs and TimestampAfterMaxMs are
	// message.timestamp.before.max.ms and message.timestamp.after.max.ms
	// (KIP-937), checked for CreateTime topics.
	TimestampBeforeMaxMs, TimestampAfterMaxMs int64
	// Compacted is cleanup.policy containing compact: keyless records are
	// ErrInvalidRecord.
	Compacted bool
	// TargetCodec is the topic's compression.type; UseProducerCodec is
	// compression.type=producer. The batch is recompressed only when the
	// target differs from the producer's codec.
	TargetCodec      Codec
	UseProducerCodec bool
	// PartitionLeaderEpoch is written into every batch.
	PartitionLeaderEpoch int32
	// Decompression is the broker's budget for decompressed data
	// (budget.go). nil: none is shared, and a batch may decompress to
	// MaxDecompressedSize.
	Decompression *DecompressionBudget
}

// ValidateResult is what ValidateAndAssign found and did.
type ValidateResult struct {
	// Records holds the validated batch with offsets assigned: the input
	// itself, changed in place, unless Recompressed.
	Records      []byte
	FirstOffset  int64
	LastOffset   int64
	MaxTimestamp int64
	// OffsetOfMaxTimestamp is Kafka's shallowOffsetOfMaxTimestamp: the last
	// offset of the batch holding MaxTimestamp (-1 when no record has a
	// timestamp), which is what the time index stores. Kafka 3.7.0 briefly
	// returned the exact record's offset (KAFKA-16310) and 3.7.1/3.8 went back
	// to the batch's last offset; ListOffsets(MAX_TIMESTAMP) finds the record
	// by reading the batch.
	OffsetOfMaxTimestamp int64
	// LogAppendTime is the broker time stamped on the batch, -1 for CreateTime.
	LogAppendTime int64
	NumRecords    int
	NumBatches    int
	// Recompressed reports that the batch was rebuilt: recompressed to the
	// topic's codec, or given fresh offset deltas because the producer's were
	// not 0..n-1. Records is then a new slice.
	Recompressed bool
	// RecordErrors names the rejected records when the error is
	// ErrInvalidRecord or ErrInvalidTimestamp from a record check, as Kafka's
	// ProduceResponse v8+ record_errors.
	RecordErrors []RecordError
}

// RecordError is one rejected record: BatchIndex is the record's index in its
// batch (Kafka's name), Message says why.
type RecordError struct {
	BatchIndex int32
	Message    string
}

// ValidateAndAssign checks a produce request's records for one partition and
// assigns offsets from nextOffset, as Kafka's UnifiedLog.analyzeAndValidateRecords
// and LogValidator.validateMessagesAndAssignOffsets do for magic v2 from a
// client:
//
//   - records hold exactly one v2 batch (Kafka rejects more for magic v2 with
//     INVALID_RECORD); bytes after it are ErrCorruptMessage (Kafka silently
//     trims a partial trailing batch; Gregor refuses to guess).
//   - the batch: base offset 0, size within max.message.bytes, CRC32C, codec
//     0..4, lastOffsetDelta+1 == record count > 0, not a control batch, a
//     sequence when it has a producer id.
//   - every record: well formed; a key when compacted; a CreateTime timestamp
//     within now-before..now+after; no producer-set LogAppendTime. All record
//     errors are collected in RecordErrors before failing.
//   - a compressed batch is read as a stream (Kafka's streaming iterator),
//     holding the codec's state and one record: a record larger than
//     max.message.bytes decompressed, or a batch decompressing to more
//     than the DecompressionBudget's capacity, is ErrMessageTooLarge (Kafka
//     bounds only the compressed batch; its JVM heap bounds the rest).
//     Memory for decompressed data is reserved from opts.Decompression.
//   - offsets: in place when the codec stays (base offset, partition leader
//     epoch, max timestamp and timestamp type rewritten, CRC only when the
//     covered bytes changed); otherwise the batch is rebuilt with the target
//     codec keeping producer id, epoch, base sequence and transactional flag.
//
// On error the input is left unchanged. The uncompressed in-place path does
// not allocate; a rebuilt compressed batch is decompressed whole (a second
// time) once its size is known.
func ValidateAndAssign(records []byte, nextOffset int64, opts ValidateOptions) (ValidateResult, error) {
	res := ValidateResult{
		FirstOffset:          nextOffset,
		LastOffset:           nextOffset - 1,
		MaxTimestamp:         NoTimestamp,
		OffsetOfMaxTimestamp: -1,
		LogAppendTime:        NoTimestamp,
	}
	h, err := ParseHeader(records)
	if err != nil {
		return res, fmt.Errorf("validate records: %w", err)
	}
	if len(records) < h.Size() {
		return res, fmt.Errorf("validate records: %w: batch of %d bytes, %d present", ErrShortBatch, h.Size(), len(records))
	}
	batch, rest := records[:h.Size()], records[h.Size():]
	if len(rest) > 0 {
		if next, err := ParseHeader(rest); err == nil && len(rest) >= next.Size() {
			return res, fmt.Errorf("validate records: %w: produce requests may hold exactly one record batch per partition", ErrInvalidRecord)
		}
		return res, fmt.Errorf("validate records: %w: %d bytes after the record batch", ErrCorruptMessage, len(rest))
	}
	res.NumBatches = 1
	if err := checkBatchFromClient(batch, h, opts); err != nil {
		return res, fmt.Errorf("validate records: %w", err)
	}

	source := h.Compression()
	target := opts.TargetCodec
	if opts.UseProducerCodec {
		target = source
	}
	// data is the records section, uncompressed: the batch's own bytes, or
	// (compressed) read once as a stream to validate and decompressed
	// whole only if the batch is rebuilt.
	var data []byte
	var scan recordScan
	var decompressed int64
	if source == CodecNone {
		data = batch[HeaderSize:]
		scan, err = scanRecords(h, &recordSource{iter: newRecordIter(data, h.NumRecords)}, opts)
	} else {
		scan, decompressed, err = scanCompressed(h, batch[HeaderSize:], opts)
	}
	if err != nil {
		res.RecordErrors = scan.recordErrors
		return res, fmt.Errorf("validate records: %w", err)
	}

	count := int64(h.NumRecords)
	res.NumRecords = int(count)
	res.LastOffset = nextOffset + count - 1
	if opts.LogAppendTime {
		res.LogAppendTime = opts.Now
	}
	// The max timestamp the batch header will carry.
	maxTimestamp := scan.maxTimestamp
	if opts.LogAppendTime {
		maxTimestamp = opts.Now
	}

	if source != target || !scan.offsetsInOrder {
		if data == nil {
			// The decompressed records, the rebuilt batch's records and
			// their compressed form are held at once: about three times
			// the decompressed size, which must fit in the budget.
			if limit := opts.Decompression.batchLimit(); 3*decompressed > limit {
				return res, fmt.Errorf("validate records: %w: recompressing the batch holds about %d bytes, more than the %d allowed",
					ErrMessageTooLarge, 3*decompressed, limit)
			}
			release := opts.Decompression.reserve(3 * decompressed)
			defer release()
			if data, err = decompressLimited(source, batch[HeaderSize:], int(decompressed)); err != nil {
				return res, fmt.Errorf("validate records: %w", err)
			}
		}
		rebuilt, err := rebuild(h, data, target, nextOffset, opts)
		if err != nil {
			return res, fmt.Errorf("validate records: %w", err)
		}
		if opts.LogAppendTime {
			setMaxTimestamp(rebuilt, true, opts.Now)
		}
		// Kafka checks the size again when the batch changed (UnifiedLog.append).
		if len(rebuilt) > int(opts.MaxMessageBytes) {
			return res, fmt.Errorf("validate records: %w: the batch is %d bytes after recompression, max.message.bytes is %d",
				ErrMessageTooLarge, len(rebuilt), opts.MaxMessageBytes)
		}
		batch = rebuilt
		res.Recompressed = true
	} else {
		// In place: the base offset and leader epoch are outside the CRC;
		// the max timestamp and timestamp type are inside it.
		SetBaseOffset(batch, nextOffset)
		SetPartitionLeaderEpoch(batch, opts.PartitionLeaderEpoch)
		setMaxTimestamp(batch, opts.LogAppendTime, maxTimestamp)
	}
	res.Records = batch
	if maxTimestamp != NoTimestamp || (source != CodecNone && !res.Recompressed) {
		// Kafka's compressed in-place path reports the last offset even
		// without timestamps; the others report -1 then.
		res.MaxTimestamp = maxTimestamp
		res.OffsetOfMaxTimestamp = res.LastOffset
	}
	return res, nil
}

// checkBatchFromClient applies the batch-level checks, in Kafka's order:
// analyzeAndValidateRecords (base offset, size, CRC), then LogValidator's
// validateBatch for a client append.
func checkBatchFromClient(batch []byte, h BatchHeader, opts ValidateOptions) error {
	if h.BaseOffset != 0 {
		return fmt.Errorf("%w: the base offset of the record batch should be 0, but it is %d", ErrInvalidRecord, h.BaseOffset)
	}
	if len(batch) > int(opts.MaxMessageBytes) {
		return fmt.Errorf("%w: the record batch is %d bytes, max.message.bytes is %d", ErrMessageTooLarge, len(batch), opts.MaxMessageBytes)
	}
	if _, err := checkBatch(batch); err != nil {
		return err
	}
	countFromOffsets := int64(h.LastOffsetDelta) + 1
	switch {
	case countFromOffsets <= 0:
		return errRecordStructure("batch has an invalid offset range: [0, %d]", h.LastOffsetDelta)
	case h.NumRecords <= 0:
		return errRecordStructure("invalid reported count for record batch: %d", h.NumRecords)
	case countFromOffsets != int64(h.NumRecords):
		return errRecordStructure("inconsistent batch offset range [0, %d] and count of records %d", h.LastOffsetDelta, h.NumRecords)
	case h.IsControl():
		return fmt.Errorf("%w: clients are not allowed to write control records", ErrInvalidRecord)
	case h.ProducerID >= 0 && h.BaseSequence < 0:
		return fmt.Errorf("%w: invalid sequence number %d in record batch with producerId %d", ErrInvalidRecord, h.BaseSequence, h.ProducerID)
	}
	return nil
}

// recordScan is what one pass over a batch's records found.
type recordScan struct {
	maxTimestamp   int64
	offsetsInOrder bool // offset deltas are 0..n-1
	recordErrors   []RecordError
}

// recordSource yields a batch's records: from bytes in memory (iter), or
// from a decompressor (stream). A struct rather than an interface keeps
// the uncompressed path free of allocations.
type recordSource struct {
	iter   recordIter
	stream *recordStream
}

func (s *recordSource) next(r *rawRecord) (bool, error) {
	if s.stream != nil {
		return s.stream.next(r)
	}
	return s.iter.next(r)
}

// scanCompressed scans the records of a compressed batch as they stream out
// of the decompressor, and returns how many bytes they decompressed to.
// What it holds is bounded and reserved from opts.Decompression first: the
// codec's state and one record, at most max.message.bytes (a larger record
// is ErrMessageTooLarge: no producer sends one, as the Java producer's
// max.request.size check counts the uncompressed record). The whole batch
// may decompress to at most the budget's capacity, else ErrMessageTooLarge.
func scanCompressed(h BatchHeader, src []byte, opts ValidateOptions) (recordScan, int64, error) {
	c := h.Compression()
	limit := opts.Decompression.batchLimit()
	state, total, known := decompressState(c, src)
	if known && total > limit {
		return recordScan{}, 0, fmt.Errorf("%w: the batch decompresses to %d bytes, more than the %d allowed", ErrMessageTooLarge, total, limit)
	}
	state += streamBufferSize
	maxRecord, maxName := int64(opts.MaxMessageBytes), "max.message.bytes"
	if state+maxRecord > limit {
		maxRecord, maxName = limit-state, "the decompression budget's room"
		if maxRecord <= 0 {
			return recordScan{}, 0, fmt.Errorf("%w: decompressing the batch needs %d bytes, more than the %d allowed", ErrMessageTooLarge, state, limit)
		}
	}
	held := maxRecord
	if known {
		held = min(held, total)
	}
	release := opts.Decompression.reserve(state + held)
	defer release()
	r, done, err := newDecompressReader(c, src)
	if err != nil {
		if errors.Is(err, ErrUnsupportedCompression) {
			return recordScan{}, 0, err
		}
		return recordScan{}, 0, fmt.Errorf("%w: %s decompress: %w", ErrCorruptMessage, c, err)
	}
	defer done()
	// A declared size (zstd's, snappy's) is held to: the reservation
	// trusted it.
	br := &boundedReader{r: r, codec: c, limit: limit}
	if known {
		br.limit = total
	}
	stream := &recordStream{r: bufio.NewReaderSize(br, streamBufferSize), left: h.NumRecords, maxRecord: int(maxRecord), maxName: maxName}
	scan, err := scanRecords(h, &recordSource{stream: stream}, opts)
	return scan, br.read, err
}

// scanRecords checks every record of the batch (Kafka's validateRecord) and
// collects the max timestamp. Malformed bytes fail at once; key and timestamp
// errors are collected for all records first, as Kafka's processRecordErrors.
func scanRecords(h BatchHeader, it *recordSource, opts ValidateOptions) (recordScan, error) {
	scan := recordScan{maxTimestamp: NoTimestamp, offsetsInOrder: true}
	producerLogAppendTime := h.LogAppendTime()
	timestampErrors := false
	var r rawRecord
	for index := int32(0); ; index++ {
		ok, err := it.next(&r)
		if err != nil {
			return scan, err
		}
		if !ok {
			break
		}
		if r.OffsetDelta != index {
			scan.offsetsInOrder = false
		}
		// A LogAppendTime batch's records all carry its max timestamp.
		ts := h.BaseTimestamp + r.TimestampDelta
		if producerLogAppendTime {
			ts = h.MaxTimestamp
		}
		switch {
		case opts.Compacted && r.Key == nil:
			scan.recordErrors = append(scan.recordErrors, RecordError{BatchIndex: index,
				Message: "Compacted topic cannot accept message without key"})
		case !opts.LogAppendTime && ts != NoTimestamp:
			if diff := opts.Now - ts; diff > opts.TimestampBeforeMaxMs || -diff > opts.TimestampAfterMaxMs {
				timestampErrors = true
				scan.recordErrors = append(scan.recordErrors, RecordError{BatchIndex: index,
					Message: fmt.Sprintf("Timestamp %d of message with offset %d is out of range. The timestamp should be within [%d, %d]",
						ts, r.OffsetDelta, opts.Now-opts.TimestampBeforeMaxMs, opts.Now+opts.TimestampAfterMaxMs)})
			}
		case producerLogAppendTime:
			timestampErrors = true
			scan.recordErrors = append(scan.recordErrors, RecordError{BatchIndex: index,
				Message: "Invalid timestamp type in message. Producer should not set timestamp type to LogAppendTime."})
		}
		if ts > scan.maxTimestamp {
			scan.maxTimestamp = ts
		}
	}
	if n := len(scan.recordErrors); n > 0 {
		if timestampErrors {
			return scan, fmt.Errorf("%w: one or more records have been rejected due to invalid timestamp", ErrInvalidTimestamp)
		}
		return scan, fmt.Errorf("%w: one or more records have been rejected due to %d record errors, the first: %s",
			ErrInvalidRecord, n, scan.recordErrors[0].Message)
	}
	return scan, nil
}

// rebuild writes the batch's records into a new batch with the target codec
// and offsets from nextOffset, keeping the producer fields (Kafka's
// buildRecordsAndAssignOffsets). Record attributes are reset, as there.
func rebuild(h BatchHeader, data []byte, target Codec, nextOffset int64, opts ValidateOptions) ([]byte, error) {
	b := NewBuilder(BuilderOptions{
		BaseOffset:           nextOffset,
		Codec:                target,
		LogAppendTime:        opts.LogAppendTime,
		ProducerID:           h.ProducerID,
		ProducerEpoch:        h.ProducerEpoch,
		BaseSequence:         h.BaseSequence,
		Transactional:        h.IsTransactional(),
		PartitionLeaderEpoch: opts.PartitionLeaderEpoch,
	})
	// A larger first guess saves regrowing for the common sizes.
	b.buf = slicesGrow(b.buf, len(data))
	it := newRecordIter(data, h.NumRecords)
	var r rawRecord
	for {
		ok, err := it.next(&r)
		if err != nil {
			return nil, err // scanRecords read the same bytes; cannot happen
		}
		if !ok {
			break
		}
		ts := h.BaseTimestamp + r.TimestampDelta
		if h.LogAppendTime() {
			ts = h.MaxTimestamp
		}
		b.appendRaw(ts, r.Key, r.Value, r.NumHeaders, r.headers)
	}
	return b.Build()
}
