package log

import (
	"encoding/binary"
	"fmt"
	"math"

	"gregor/internal/record"
)

// cleanFilter decides what a clean keeps of each batch: Kafka's cleaner
// RecordFilter (Cleaner.cleanInto) applied as MemoryRecords.filterTo does.
//
// Kafka's rules followed here:
//   - a record at an offset past the map's latest offset is kept (it was not
//     looked at when the map was built);
//   - a keyed record is kept if it has the latest offset of its key and it
//     either has a value or is a tombstone whose batch has no delete horizon
//     yet, or one still in the future;
//   - a record without a key is dropped and counted as invalid
//     (Cleaner.shouldRetainRecord's stats.invalidMessage): compacted topics
//     refuse such records at produce time, so only old data holds them;
//   - a batch keeping every record, and needing no delete horizon, is copied
//     byte for byte; otherwise it is rebuilt with the retained records (see
//     appendRetainedBatch);
//   - a batch left empty is dropped, except the last data batch of a producer
//     (it carries the producer's last sequence) and the batch that ends right
//     at the round's upper bound, which are kept as an empty header
//     (BatchRetention.RETAIN_EMPTY);
//   - the first clean that keeps a tombstone stamps its batch with the delete
//     horizon now + delete.retention.ms (KIP-534: the horizon is the base
//     timestamp, flagged by attribute bit 6); a later clean at or past the
//     horizon drops the tombstone.
//
// Transactions (cleaner_txn.go, Kafka's CleanedTransactionMetadata): the
// batches of aborted transactions are dropped whole (an empty header stays
// when it is the producer's last data batch); committed transactional
// batches are cleaned like any other; markers are kept while their
// transaction still has batches, else stamped with a delete horizon and
// dropped by a clean past it. A producer's last marker stays, at least as an
// empty batch, when the producer state holds no data batch of it (its epoch
// fences zombies). Cleaning never passes the last stable offset (the
// manager's upper bound), so no open transaction is ever cleaned.
type cleanFilter struct {
	offsetMap         *offsetMap
	now               int64
	deleteRetentionMs int64
	// lastDataOffsets maps each producer id to the last offset of its last
	// data batch in the log (Kafka's lastRecordsOfActiveProducers).
	lastDataOffsets map[int64]int64
	// markerEpochs maps the producers whose state holds no data batch to
	// their epoch: a marker of that epoch is their last entry.
	markerEpochs map[int64]int16
	// txns follows transactions through the group being cleaned.
	txns *cleanedTxnState
	// upperBound is the round's first uncleanable offset.
	upperBound int64
	stats      *CleanerStats

	keep    []int
	scratch []byte
}

// retainedBatch describes one batch written by filterBatch.
type retainedBatch struct {
	lastOffset   int64
	maxTimestamp int64
}

// filterBatch appends to dst what survives of batch b, whose header is h.
// ok is false when nothing of the batch is kept.
func (f *cleanFilter) filterBatch(dst, b []byte, h record.BatchHeader) (out []byte, kept retainedBatch, ok bool, err error) {
	kept = retainedBatch{lastOffset: h.LastOffset(), maxTimestamp: h.MaxTimestamp}
	if h.IsControl() {
		return f.filterControlBatch(dst, b, h)
	}
	lastOfProducer := false
	if h.ProducerID >= 0 {
		last, found := f.lastDataOffsets[h.ProducerID]
		lastOfProducer = found && last == h.LastOffset()
	}
	retainEmpty := lastOfProducer || h.NextOffset() == f.upperBound
	if f.txns != nil && f.txns.onDataBatch(h) {
		// An aborted transaction's batch: no record of it survives.
		f.stats.MessagesRead += int64(h.NumRecords)
		if retainEmpty {
			return appendEmptyBatch(dst, h), kept, true, nil
		}
		return dst, kept, false, nil
	}

	_, recs, err := record.ReadRecords(b)
	if err != nil {
		return dst, kept, false, fmt.Errorf("batch at offset %d: %w", h.BaseOffset, err)
	}
	f.stats.MessagesRead += int64(len(recs))
	f.keep = f.keep[:0]
	tombstones := false
	for i := range recs {
		if f.shouldRetain(h, &recs[i]) {
			f.keep = append(f.keep, i)
			tombstones = tombstones || recs[i].Value == nil
		}
	}
	f.stats.MessagesRetained += int64(len(f.keep))
	switch {
	case len(f.keep) > 0:
		needHorizon := tombstones && !h.HasDeleteHorizon()
		if len(f.keep) == len(recs) && !needHorizon {
			return append(dst, b...), kept, true, nil
		}
		horizon := record.NoTimestamp
		if needHorizon {
			horizon = saturatingAdd(f.now, f.deleteRetentionMs)
		} else if h.HasDeleteHorizon() {
			horizon = h.BaseTimestamp
		}
		out, f.scratch, kept.maxTimestamp, err = appendRetainedBatch(dst, f.scratch, h, recs, f.keep, horizon)
		return out, kept, err == nil, err
	case retainEmpty:
		return appendEmptyBatch(dst, h), kept, true, nil
	default:
		return dst, kept, false, nil
	}
}

// filterControlBatch keeps, stamps or drops a control batch (Kafka's
// Cleaner.cleanInto checkBatchRetention for control batches): a marker that
// may go gets a delete horizon first and is dropped by a clean past it; the
// producer's last marker stays as an empty batch even then.
func (f *cleanFilter) filterControlBatch(dst, b []byte, h record.BatchHeader) (out []byte, kept retainedBatch, ok bool, err error) {
	kept = retainedBatch{lastOffset: h.LastOffset(), maxTimestamp: h.MaxTimestamp}
	f.stats.MessagesRead += int64(h.NumRecords)
	canDiscard := false
	if f.txns != nil {
		marker, err := markerOf(b, h)
		if err != nil {
			return dst, kept, false, fmt.Errorf("batch at offset %d: %w", h.BaseOffset, err)
		}
		if canDiscard, err = f.txns.onControlBatch(h, marker, h.NumRecords == 0); err != nil {
			return dst, kept, false, err
		}
	}
	lastOfProducer := false
	if epoch, found := f.markerEpochs[h.ProducerID]; found && h.ProducerID >= 0 {
		lastOfProducer = epoch == h.ProducerEpoch
	}
	discard := canDiscard && h.HasDeleteHorizon() && h.BaseTimestamp <= f.now
	switch {
	case discard && (lastOfProducer || h.NextOffset() == f.upperBound):
		return appendEmptyBatch(dst, h), kept, true, nil
	case discard:
		return dst, kept, false, nil
	case canDiscard && !h.HasDeleteHorizon() && h.NumRecords > 0:
		_, recs, err := record.ReadRecords(b)
		if err != nil {
			return dst, kept, false, fmt.Errorf("batch at offset %d: %w", h.BaseOffset, err)
		}
		f.keep = f.keep[:0]
		for i := range recs {
			f.keep = append(f.keep, i)
		}
		f.stats.MessagesRetained += int64(len(recs))
		out, f.scratch, kept.maxTimestamp, err = appendRetainedBatch(dst, f.scratch, h, recs, f.keep, saturatingAdd(f.now, f.deleteRetentionMs))
		return out, kept, err == nil, err
	}
	f.stats.MessagesRetained += int64(h.NumRecords)
	return append(dst, b...), kept, true, nil
}

// shouldRetain is Kafka's Cleaner.shouldRetainRecord for magic v2.
func (f *cleanFilter) shouldRetain(h record.BatchHeader, r *record.Record) bool {
	offset := h.BaseOffset + int64(r.OffsetDelta)
	if offset > f.offsetMap.latestOffset {
		return true
	}
	if r.Key == nil {
		f.stats.InvalidMessages++
		return false
	}
	if offset < f.offsetMap.get(r.Key) {
		return false
	}
	return r.Value != nil || !h.HasDeleteHorizon() || f.now < h.BaseTimestamp
}

func saturatingAdd(a, b int64) int64 {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// Byte layout of a v2 batch header (Kafka's DefaultRecordBatch).
const (
	hdrLengthPos          = 8
	hdrLeaderEpochPos     = 12
	hdrMagicPos           = 16
	hdrAttributesPos      = 21
	hdrLastOffsetDeltaPos = 23
	hdrBaseTimestampPos   = 27
	hdrMaxTimestampPos    = 35
	hdrProducerIDPos      = 43
	hdrProducerEpochPos   = 51
	hdrBaseSequencePos    = 53
	hdrRecordsCountPos    = 57

	attrTimestampType = 0x08
	attrTransactional = 0x10
	attrControl       = 0x20
	attrDeleteHorizon = 0x40
)

// appendRetainedBatch appends a batch holding recs[keep...] of the batch h,
// as Kafka's MemoryRecords.buildRetainedRecordsInto: the same base offset and
// last offset delta (overrideLastOffset, so the producer's last sequence
// stays where it was), producer id, epoch, base sequence, leader epoch,
// timestamp type, transactional and control flags, and codec (the records
// are compressed again with it). Each record keeps its offset and timestamp;
// the base timestamp is the delete horizon when there is one (>= 0), else
// the first retained record's timestamp. The max timestamp is the retained
// records' maximum, or the original for LogAppendTime batches. scratch is
// reused for the uncompressed records and returned.
func appendRetainedBatch(dst, scratch []byte, h record.BatchHeader, recs []record.Record, keep []int, horizon int64) (out, scratchOut []byte, maxTimestamp int64, err error) {
	logAppendTime := h.LogAppendTime()
	timestampOf := func(r *record.Record) int64 {
		if logAppendTime {
			return h.MaxTimestamp
		}
		return h.BaseTimestamp + r.TimestampDelta
	}
	baseTimestamp := horizon
	if horizon < 0 {
		baseTimestamp = timestampOf(&recs[keep[0]])
	}
	maxTimestamp = record.NoTimestamp
	if logAppendTime {
		maxTimestamp = h.MaxTimestamp
	}

	codec := h.Compression()
	body := scratch[:0]
	start := len(dst)
	if codec == record.CodecNone {
		// Write the records straight after the header.
		dst = append(dst, make([]byte, record.HeaderSize)...)
		body = dst
	}
	for _, i := range keep {
		r := &recs[i]
		ts := timestampOf(r)
		if !logAppendTime && ts > maxTimestamp {
			maxTimestamp = ts
		}
		body = record.AppendRecord(body, r, ts-baseTimestamp)
	}
	if codec == record.CodecNone {
		dst = body
	} else {
		scratch = body
		dst = append(dst, make([]byte, record.HeaderSize)...)
		if dst, err = record.Compress(codec, dst, body); err != nil {
			return dst[:start], scratch, 0, fmt.Errorf("recompress batch at offset %d with %s: %w", h.BaseOffset, codec, err)
		}
	}

	attrs := uint16(codec)
	if logAppendTime {
		attrs |= attrTimestampType
	}
	if h.IsTransactional() {
		attrs |= attrTransactional
	}
	if h.IsControl() {
		attrs |= attrControl
	}
	if horizon >= 0 {
		attrs |= attrDeleteHorizon
	}
	batch := dst[start:]
	writeBatchHeader(batch, h, attrs, baseTimestamp, maxTimestamp, int32(len(keep)))
	return dst, scratch, maxTimestamp, nil
}

// appendEmptyBatch appends a header-only batch standing for h, as Kafka's
// DefaultRecordBatch.writeEmptyHeader: same offsets, producer fields, leader
// epoch, timestamp type and flags, no codec, both timestamps the original
// max timestamp, no records.
func appendEmptyBatch(dst []byte, h record.BatchHeader) []byte {
	start := len(dst)
	dst = append(dst, make([]byte, record.HeaderSize)...)
	attrs := uint16(0)
	if h.LogAppendTime() {
		attrs |= attrTimestampType
	}
	if h.IsTransactional() {
		attrs |= attrTransactional
	}
	if h.IsControl() {
		attrs |= attrControl
	}
	writeBatchHeader(dst[start:], h, attrs, h.MaxTimestamp, h.MaxTimestamp, 0)
	return dst
}

// writeBatchHeader fills the header of batch (records already after it) from
// h's offsets and producer fields, and sets the CRC.
func writeBatchHeader(batch []byte, h record.BatchHeader, attrs uint16, baseTimestamp, maxTimestamp int64, count int32) {
	be := binary.BigEndian
	record.SetBaseOffset(batch, h.BaseOffset)
	be.PutUint32(batch[hdrLengthPos:], uint32(len(batch)-record.LogOverhead))
	be.PutUint32(batch[hdrLeaderEpochPos:], uint32(h.PartitionLeaderEpoch))
	batch[hdrMagicPos] = record.CurrentMagic
	be.PutUint16(batch[hdrAttributesPos:], attrs)
	be.PutUint32(batch[hdrLastOffsetDeltaPos:], uint32(h.LastOffsetDelta))
	be.PutUint64(batch[hdrBaseTimestampPos:], uint64(baseTimestamp))
	be.PutUint64(batch[hdrMaxTimestampPos:], uint64(maxTimestamp))
	be.PutUint64(batch[hdrProducerIDPos:], uint64(h.ProducerID))
	be.PutUint16(batch[hdrProducerEpochPos:], uint16(h.ProducerEpoch))
	be.PutUint32(batch[hdrBaseSequencePos:], uint32(h.BaseSequence))
	be.PutUint32(batch[hdrRecordsCountPos:], uint32(count))
	record.UpdateCRC(batch)
}
