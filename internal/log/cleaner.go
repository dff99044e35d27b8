package log

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"

	"gregor/internal/record"
)

// cleaner is one cleaner thread's worker (Kafka's Cleaner): it compacts one
// log at a time with its own offset map and I/O buffers.
//
// A clean (Kafka's doClean) has three passes over the log:
//  1. map: read the dirty section [first dirty offset, first uncleanable
//     offset) and record every key's latest offset, until the map reaches its
//     load factor; the map's latest offset + 1 is where this clean ends;
//  2. producers: read every batch header to find each producer's last data
//     batch, which must survive (it holds the producer's last sequence);
//  3. clean: rewrite the segments below the end, from the log's start, in
//     groups of at most segment.bytes, each group into one .cleaned segment
//     that is then swapped in (Log.replaceSegments).
//
// The active segment and anything at or past the upper bound (the last
// stable offset, so no open transaction is cleaned) are never cleaned:
// the first uncleanable offset is a segment base offset below both.
type cleaner struct {
	id           int
	offsetMap    *offsetMap
	ioBufferSize int
	loadFactor   float64
	logger       *slog.Logger
	// crashAt, set by tests, stops a swap at a step as a crash would.
	crashAt func(swapStep) bool

	readBuf  []byte
	writeBuf []byte
	filter   cleanFilter
}

func newCleaner(id int, dedupeBytes int64, ioBufferSize int, loadFactor float64, logger *slog.Logger) (*cleaner, error) {
	m, err := newOffsetMap(dedupeBytes)
	if err != nil {
		return nil, fmt.Errorf("log cleaner %d: %w", id, err)
	}
	if float64(m.slots)*loadFactor <= 1 {
		return nil, fmt.Errorf("log cleaner %d: offset map too small to hold one key; raise log.cleaner.dedupe.buffer.size or lower log.cleaner.threads", id)
	}
	return &cleaner{id: id, offsetMap: m, ioBufferSize: max(ioBufferSize, 4096), loadFactor: loadFactor, logger: logger}, nil
}

// logToClean is a log chosen for cleaning (Kafka's LogToClean).
type logToClean struct {
	tp                TopicPartition
	log               *Log
	dir               string // the log.dir, for the checkpoint
	firstDirtyOffset  int64
	needCompactionNow bool
	// firstUncleanableOffset is the base offset of the first segment that
	// may not be cleaned.
	firstUncleanableOffset int64
	cleanBytes             int64
	cleanableBytes         int64
}

func (c logToClean) totalBytes() int64 { return c.cleanBytes + c.cleanableBytes }

// cleanableRatio is the dirty share of the log, compared with
// min.cleanable.dirty.ratio.
func (c logToClean) cleanableRatio() float64 {
	if c.totalBytes() == 0 {
		return 0
	}
	return float64(c.cleanableBytes) / float64(c.totalBytes())
}

// checkDone reports an aborted clean.
func checkDone(ctx context.Context) error {
	if ctx.Err() != nil {
		return errCleaningAborted
	}
	return nil
}

// clean compacts ltc's log as of time now (ms) and returns the first offset
// not cleaned: the next clean's first dirty offset.
func (c *cleaner) clean(ctx context.Context, ltc logToClean, now int64, stats *CleanerStats) (int64, error) {
	l := ltc.log
	generation := l.cleanerState.generation.Load()
	cfg := l.config()
	segs, _ := l.snapshot()
	c.ensureBuffers()

	if err := c.buildOffsetMap(ctx, segs, ltc.firstDirtyOffset, ltc.firstUncleanableOffset, stats); err != nil {
		return 0, err
	}
	endOffset := c.offsetMap.latestOffset + 1
	if endOffset <= ltc.firstDirtyOffset {
		return ltc.firstDirtyOffset, nil
	}
	lastDataOffsets, err := c.lastDataOffsets(ctx, segs)
	if err != nil {
		return 0, err
	}
	c.filter = cleanFilter{
		offsetMap:         c.offsetMap,
		now:               now,
		deleteRetentionMs: cfg.DeleteRetentionMs,
		lastDataOffsets:   lastDataOffsets,
		markerEpochs:      l.lastMarkerEpochs(),
		upperBound:        ltc.firstUncleanableOffset,
		stats:             stats,
		keep:              c.filter.keep,
		scratch:           c.filter.scratch,
	}
	var toClean []*segment
	for _, s := range segs {
		if s.baseOffset < endOffset && s != segs[len(segs)-1] {
			toClean = append(toClean, s)
		}
	}
	for _, group := range groupSegmentsBySize(toClean, int64(cfg.SegmentBytes), int64(cfg.SegmentIndexBytes), ltc.firstUncleanableOffset) {
		if err := c.cleanSegments(ctx, l, cfg, group, generation, stats); err != nil {
			return 0, err
		}
	}
	stats.BufferUtilization = c.offsetMap.utilization()
	return endOffset, nil
}

// ensureBuffers allocates the I/O buffers: half of the thread's share of
// log.cleaner.io.buffer.size each for reading and writing, as Kafka.
func (c *cleaner) ensureBuffers() {
	if c.readBuf == nil {
		c.readBuf = make([]byte, c.ioBufferSize)
		c.writeBuf = make([]byte, 0, c.ioBufferSize)
	}
}

// scanner reads seg's batches in [start, end) through the thread's buffer,
// with the segment file pinned until the scanner's unpin.
func (c *cleaner) scanner(seg *segment, start, end int64) (*batchScanner, error) {
	f, err := seg.file.acquire()
	if err != nil {
		return nil, err
	}
	return &batchScanner{f: f, pos: start, end: end, buf: c.readBuf, pinned: seg.file}, nil
}

// buildOffsetMap fills the map from the dirty segments in [start, end)
// (Kafka's Cleaner.buildOffsetMap), stopping when the map reaches its load
// factor.
func (c *cleaner) buildOffsetMap(ctx context.Context, segs []*segment, start, end int64, stats *CleanerStats) error {
	c.offsetMap.clear()
	maxDesired := int(float64(c.offsetMap.slots) * c.loadFactor)
	txns := newCleanedTxnState(nil)
	for i := max(floorSegment(segs, start), 0); i < len(segs) && segs[i].baseOffset < end; i++ {
		nextStart := end
		if i+1 < len(segs) && segs[i+1].baseOffset < end {
			nextStart = segs[i+1].baseOffset
		}
		if err := txns.addSegment(segs, i); err != nil {
			return fmt.Errorf("build offset map of segment %d: %w", segs[i].baseOffset, err)
		}
		full, err := c.buildOffsetMapForSegment(ctx, segs[i], start, nextStart, maxDesired, txns, stats)
		if err != nil {
			return fmt.Errorf("build offset map of segment %d: %w", segs[i].baseOffset, err)
		}
		if full {
			c.logger.Debug("offset map full", "segment", segs[i].baseOffset, "latest_offset", c.offsetMap.latestOffset)
			return nil
		}
	}
	return nil
}

// buildOffsetMapForSegment maps one segment's keyed records at or after
// start and reports whether the map became full.
func (c *cleaner) buildOffsetMapForSegment(ctx context.Context, seg *segment, start, nextStart int64, maxDesired int, txns *cleanedTxnState, stats *CleanerStats) (bool, error) {
	_, pos := seg.offsetIdx.lookup(start)
	sc, err := c.scanner(seg, pos, seg.size.Load())
	if err != nil {
		return false, err
	}
	defer sc.unpin()
	for sc.next() {
		if err := checkDone(ctx); err != nil {
			return false, err
		}
		h := sc.hdr
		// Markers and aborted transactions' records never enter the map:
		// an aborted value must not make an older one look superseded.
		aborted := false
		if h.IsControl() {
			b, err := sc.batch()
			if err != nil {
				return false, err
			}
			marker, err := markerOf(b, h)
			if err != nil {
				return false, fmt.Errorf("batch at offset %d: %w", h.BaseOffset, err)
			}
			if _, err := txns.onControlBatch(h, marker, h.NumRecords == 0); err != nil {
				return false, err
			}
		} else {
			aborted = txns.onDataBatch(h)
		}
		if !h.IsControl() && !aborted && h.LastOffset() >= start {
			b, err := sc.batch()
			if err != nil {
				return false, err
			}
			_, recs, err := record.ReadRecords(b)
			if err != nil {
				return false, fmt.Errorf("batch at offset %d: %w", h.BaseOffset, err)
			}
			for i := range recs {
				offset := h.BaseOffset + int64(recs[i].OffsetDelta)
				if recs[i].Key == nil || offset < start {
					continue
				}
				if c.offsetMap.size() >= maxDesired {
					return true, nil
				}
				if err := c.offsetMap.put(recs[i].Key, offset); err != nil {
					return false, err
				}
				stats.MapMessagesRead++
			}
		}
		stats.MapBytesRead += sc.size
		if h.LastOffset() >= start {
			c.offsetMap.updateLatestOffset(h.LastOffset())
		}
	}
	if sc.err != nil {
		return false, sc.err
	}
	// Offsets up to the next segment are all seen, gaps included.
	c.offsetMap.updateLatestOffset(nextStart - 1)
	return false, nil
}

// lastDataOffsets returns, per producer id, the last offset of its last
// data batch in the log (the producer state Kafka's cleaner consults).
// Gregor keeps every producer as active: without expiry it may keep one
// empty batch more per producer than Kafka would.
func (c *cleaner) lastDataOffsets(ctx context.Context, segs []*segment) (map[int64]int64, error) {
	last := map[int64]int64{}
	for _, seg := range segs {
		if err := checkDone(ctx); err != nil {
			return nil, err
		}
		sc, err := c.scanner(seg, 0, seg.size.Load())
		if err != nil {
			return nil, err
		}
		for sc.next() {
			if h := sc.hdr; h.ProducerID >= 0 && !h.IsControl() {
				last[h.ProducerID] = h.LastOffset()
			}
		}
		sc.unpin()
		if sc.err != nil {
			return nil, fmt.Errorf("read producer state of segment %d: %w", seg.baseOffset, sc.err)
		}
	}
	return last, nil
}

// groupSegmentsBySize groups consecutive segments whose total log size and
// index sizes stay within segment.bytes and segment.index.bytes, and whose
// offsets fit one segment's 4-byte relative offsets (Kafka's
// Cleaner.groupSegmentsBySize), so that cleaning does not leave ever smaller
// segments behind.
func groupSegmentsBySize(segs []*segment, maxSize, maxIndexSize, firstUncleanableOffset int64) [][]*segment {
	var groups [][]*segment
	for len(segs) > 0 {
		group := []*segment{segs[0]}
		logSize, indexSize, timeIndexSize := segs[0].size.Load(), segs[0].offsetIndexBytes(), segs[0].timeIndexBytes()
		segs = segs[1:]
		for len(segs) > 0 {
			next := segs[0]
			lastOffset := firstUncleanableOffset - 1
			if len(segs) > 1 {
				lastOffset = segs[1].baseOffset - 1
			}
			if logSize+next.size.Load() > maxSize ||
				indexSize+next.offsetIndexBytes() > maxIndexSize ||
				timeIndexSize+next.timeIndexBytes() > maxIndexSize ||
				(next.size.Load() != 0 && lastOffset-group[0].baseOffset > math.MaxInt32) {
				break
			}
			group = append(group, next)
			logSize += next.size.Load()
			indexSize += next.offsetIndexBytes()
			timeIndexSize += next.timeIndexBytes()
			segs = segs[1:]
		}
		groups = append(groups, group)
	}
	return groups
}

func (s *segment) offsetIndexBytes() int64 { return s.offsetIdx.entries.Load() * offsetIndexEntrySize }
func (s *segment) timeIndexBytes() int64   { return s.timeIdx.entries.Load() * timeIndexEntrySize }

// cleanSegments cleans a group of segments into one new segment and swaps it
// in (Kafka's Cleaner.cleanSegments). On any failure the cleaned files are
// deleted, except after a simulated crash, which leaves them for the test.
func (c *cleaner) cleanSegments(ctx context.Context, l *Log, cfg Config, group []*segment, generation int64, stats *CleanerStats) (err error) {
	cleaned, err := createCleanedSegment(l.dir, group[0].baseOffset, cfg, l.files)
	if err != nil {
		return l.checkIO(err)
	}
	defer func() {
		if err != nil && !errors.Is(err, errSimulatedCrash) {
			if delErr := cleaned.closeAndDelete(); delErr != nil {
				c.logger.Warn("delete cleaned segment failed", "dir", l.dir, "err", delErr)
			}
		}
	}()
	w := cleanedWriter{seg: cleaned, buf: c.writeBuf[:0], flushAt: c.ioBufferSize, indexInterval: int64(cfg.IndexIntervalBytes),
		maxTimestamp: noTimestamp, offsetOfMaxTimestamp: cleaned.baseOffset}
	// The transaction state runs over the group; the kept aborted
	// transactions go into the cleaned segment's transaction index.
	c.filter.txns = newCleanedTxnState(cleaned.txnIdx)
	for _, seg := range group {
		segs, _ := l.snapshot()
		i := floorSegment(segs, seg.baseOffset)
		if i < 0 || segs[i] != seg {
			return fmt.Errorf("%w: segments of %s changed during cleaning", errCleaningAborted, l.dir)
		}
		if err := c.filter.txns.addSegment(segs, i); err != nil {
			return l.checkIO(fmt.Errorf("clean segment %d of %s: %w", seg.baseOffset, l.dir, err))
		}
		if err := c.cleanInto(ctx, seg, &w, stats); err != nil {
			return fmt.Errorf("clean segment %d of %s: %w", seg.baseOffset, l.dir, err)
		}
	}
	if err := w.finish(); err != nil {
		return l.checkIO(fmt.Errorf("write cleaned segment of %s: %w", l.dir, err))
	}
	c.writeBuf = w.buf[:0]
	stats.BytesWritten += w.written
	// Keep the last modified time of the newest replaced segment, as Kafka.
	if st, statErr := os.Stat(group[len(group)-1].logPath); statErr == nil {
		if err := os.Chtimes(cleaned.logPath, st.ModTime(), st.ModTime()); err != nil {
			c.logger.Debug("keep segment mtime failed", "dir", l.dir, "err", err)
		}
	}
	if err := checkDone(ctx); err != nil {
		return err
	}
	if err := l.replaceSegments(cleaned, group, generation, c.crashAt); err != nil {
		return err
	}
	stats.Segments++
	return nil
}

// cleanInto filters one source segment's batches into the cleaned segment
// (Kafka's Cleaner.cleanInto).
func (c *cleaner) cleanInto(ctx context.Context, seg *segment, w *cleanedWriter, stats *CleanerStats) error {
	sc, err := c.scanner(seg, 0, seg.size.Load())
	if err != nil {
		return err
	}
	defer sc.unpin()
	for sc.next() {
		if err := checkDone(ctx); err != nil {
			return err
		}
		b, err := sc.batch()
		if err != nil {
			return err
		}
		stats.BytesRead += sc.size
		start := len(w.buf)
		out, kept, ok, err := c.filter.filterBatch(w.buf, b, sc.hdr)
		if err != nil {
			return err
		}
		w.buf = out
		if ok {
			if err := w.batchAppended(start, kept); err != nil {
				return err
			}
		}
	}
	if sc.err != nil {
		return sc.err
	}
	if sc.partial {
		return fmt.Errorf("%w: partial batch at position %d of a non-active segment", record.ErrCorruptMessage, sc.pos)
	}
	return nil
}

// cleanedWriter appends batches to a cleaned segment through a buffer and
// indexes them as LogSegment.append does, one entry per batch that follows
// index.interval.bytes of unindexed data. The cleaned segment is private
// until it is swapped in, so no lock is needed.
type cleanedWriter struct {
	seg           *segment
	buf           []byte
	flushAt       int
	written       int64 // bytes already in the file
	indexInterval int64
	sinceIndex    int64

	maxTimestamp, offsetOfMaxTimestamp int64
}

// batchAppended indexes the batch just appended to buf at start.
func (w *cleanedWriter) batchAppended(start int, kept retainedBatch) error {
	if !w.seg.canConvertToRelativeOffset(kept.lastOffset) {
		return fmt.Errorf("offset %d overflows cleaned segment %d", kept.lastOffset, w.seg.baseOffset)
	}
	pos := w.written + int64(start)
	if kept.maxTimestamp > w.maxTimestamp {
		w.maxTimestamp, w.offsetOfMaxTimestamp = kept.maxTimestamp, kept.lastOffset
	}
	if w.sinceIndex > w.indexInterval {
		// A full index only makes the segment's index sparser.
		if !w.seg.offsetIdx.isFull() {
			if err := w.seg.offsetIdx.append(kept.lastOffset, pos); err != nil {
				return err
			}
		}
		if !w.seg.timeIdx.isFull() {
			if err := w.seg.timeIdx.maybeAppend(w.maxTimestamp, w.offsetOfMaxTimestamp, false); err != nil {
				return err
			}
		}
		w.sinceIndex = 0
	}
	w.sinceIndex += int64(len(w.buf) - start)
	if len(w.buf) >= w.flushAt {
		return w.flushBuf()
	}
	return nil
}

func (w *cleanedWriter) flushBuf() error {
	if len(w.buf) == 0 {
		return nil
	}
	if err := w.seg.file.withFile(func(f *os.File) error {
		_, err := f.WriteAt(w.buf, w.written)
		return err
	}); err != nil {
		return fmt.Errorf("write cleaned segment %s: %w", w.seg.logPath, err)
	}
	w.written += int64(len(w.buf))
	w.buf = w.buf[:0]
	return nil
}

// finish writes what is buffered, closes the segment to appends (the final
// time index entry, indexes trimmed) and fsyncs it before the swap.
func (w *cleanedWriter) finish() error {
	if err := w.flushBuf(); err != nil {
		return err
	}
	w.seg.size.Store(w.written)
	w.seg.setMaxTimestamp(w.maxTimestamp, w.offsetOfMaxTimestamp)
	if err := w.seg.onBecomeInactive(); err != nil {
		return err
	}
	return w.seg.flush()
}
