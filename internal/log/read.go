package log

import (
	"errors"
	"fmt"
	"os"

	"gregor/internal/record"
)

// ReadInfo is the result of a read.
type ReadInfo struct {
	// Records holds whole batches only.
	Records []byte
	// FirstBatchOffset is the base offset of the first batch in Records (it
	// may be below the offset asked for, which lies inside that batch), or -1
	// when Records is empty.
	FirstBatchOffset int64
}

// Read returns batches starting with the one that holds offset, following
// Kafka's LocalLog.read and LogSegment.read:
//   - offset below the log start offset or above the log end offset is
//     ErrOffsetOutOfRange; offset equal to the log end offset reads nothing.
//   - the batches come from one segment: the one holding offset (found with
//     the sparse offset index and a scan), or the next one when offset lies in
//     a gap at the end of a segment.
//   - only batches entirely below maxOffset (exclusive; the high watermark for
//     consumers) are returned, in at most maxBytes, but whole batches only.
//   - minOneBatch returns the first batch even when it exceeds maxBytes, so a
//     consumer can always make progress.
func (l *Log) Read(offset int64, maxBytes int32, maxOffset int64, minOneBatch bool) (ReadInfo, error) {
	empty := ReadInfo{FirstBatchOffset: -1}
	r, err := l.ReadFileRange(offset, maxBytes, maxOffset, minOneBatch)
	if err != nil {
		return empty, err
	}
	defer r.Release()
	if r.Size == 0 {
		return empty, nil
	}
	buf, err := r.ReadAll()
	if err != nil {
		return empty, err
	}
	return ReadInfo{Records: buf, FirstBatchOffset: r.FirstBatchOffset}, nil
}

var errShortRead = errors.New("short read")

// OffsetForTimestamp finds the first record whose timestamp is >= ts (Kafka's
// ListOffsets by timestamp): the first segment whose largest timestamp
// reaches ts, its time index for a starting point, then a scan of batches and,
// inside the first batch whose max timestamp reaches ts, of its records. ok is
// false when no record qualifies.
func (l *Log) OffsetForTimestamp(ts int64) (offset, timestamp int64, ok bool) {
	segs, _ := l.snapshot()
	logStart := l.logStartOffset.Load()
	for _, seg := range segs {
		if maxTs, _ := seg.maxTimestampAndOffset(); maxTs < ts {
			continue
		}
		off, recTs, found, err := seg.findOffsetByTimestamp(ts, logStart)
		if err != nil {
			l.logger.Warn("timestamp search failed", "dir", l.dir, "base_offset", seg.baseOffset, "err", err)
			return -1, -1, false
		}
		if found {
			return off, recTs, true
		}
	}
	return -1, -1, false
}

// MaxTimestamp is ListOffsets' MAX_TIMESTAMP: the largest timestamp in the
// log and the offset of the first record carrying it; (-1, -1) when no batch
// has a timestamp.
func (l *Log) MaxTimestamp() (timestamp, offset int64) {
	segs, _ := l.snapshot()
	var best *segment
	bestTs, bestOff := noTimestamp, int64(-1)
	for _, seg := range segs {
		if ts, off := seg.maxTimestampAndOffset(); ts > bestTs {
			best, bestTs, bestOff = seg, ts, off
		}
	}
	if best == nil {
		return -1, -1
	}
	// The segment knows the batch; the record is found inside it.
	off, found, err := best.offsetOfTimestampInBatch(bestTs, bestOff)
	if err != nil || !found {
		if err != nil {
			l.logger.Warn("max timestamp search failed", "dir", l.dir, "err", err)
		}
		return -1, -1
	}
	return bestTs, off
}

// findOffsetByTimestamp is Kafka's LogSegment.findOffsetByTimestamp: the
// first record at or after startingOffset whose timestamp is >= ts.
func (s *segment) findOffsetByTimestamp(ts, startingOffset int64) (offset, timestamp int64, found bool, err error) {
	_, idxOffset := s.timeIdx.lookup(ts)
	_, pos := s.offsetIdx.lookup(max(idxOffset, startingOffset))
	sc, err := s.scanner(pos, s.size.Load())
	if err != nil {
		return 0, 0, false, err
	}
	defer sc.release()
	for sc.next() {
		if sc.hdr.MaxTimestamp < ts || sc.hdr.LastOffset() < startingOffset {
			continue
		}
		b, err := sc.batch()
		if err != nil {
			return 0, 0, false, err
		}
		off, recTs, ok, err := firstRecordAtOrAfter(b, ts, startingOffset)
		if err != nil {
			return 0, 0, false, fmt.Errorf("segment %s: %w", s.logPath, err)
		}
		if ok {
			return off, recTs, true, nil
		}
	}
	if sc.err != nil {
		return 0, 0, false, fmt.Errorf("segment %s: %w", s.logPath, sc.err)
	}
	return 0, 0, false, nil
}

// offsetOfTimestampInBatch finds the batch holding lastOffset and returns the
// offset of its first record with timestamp ts (Kafka's
// RecordBatch.offsetOfMaxTimestamp).
func (s *segment) offsetOfTimestampInBatch(ts, lastOffset int64) (int64, bool, error) {
	bp, found, err := s.translateOffset(lastOffset, s.size.Load())
	if err != nil || !found {
		return 0, false, err
	}
	b := make([]byte, bp.size)
	if err := s.file.withFile(func(f *os.File) error {
		_, err := f.ReadAt(b, bp.pos)
		return err
	}); err != nil {
		return 0, false, fmt.Errorf("read batch in %s: %w", s.logPath, err)
	}
	off, recTs, ok, err := firstRecordAtOrAfter(b, ts, bp.hdr.BaseOffset)
	if err != nil || !ok || recTs != ts {
		return 0, false, err
	}
	return off, true, nil
}

// firstRecordAtOrAfter returns the first record of batch b with timestamp >=
// ts and offset >= minOffset. Records of a LogAppendTime batch all carry the
// batch's max timestamp, as Kafka reads them.
//
// The batch is read as a stream (record.EachRecord): a lookup holds one
// record, however far a compressed batch expands.
func firstRecordAtOrAfter(b []byte, ts, minOffset int64) (offset, timestamp int64, found bool, err error) {
	hdr, err := record.ParseHeader(b)
	if err != nil {
		return 0, 0, false, err
	}
	_, err = record.EachRecord(b, func(r record.Record) bool {
		recTs := hdr.BaseTimestamp + r.TimestampDelta
		if hdr.LogAppendTime() {
			recTs = hdr.MaxTimestamp
		}
		off := hdr.BaseOffset + int64(r.OffsetDelta)
		if recTs >= ts && off >= minOffset {
			offset, timestamp, found = off, recTs, true
			return false
		}
		return true
	})
	if err != nil {
		return 0, 0, false, err
	}
	return offset, timestamp, found, nil
}
