package log

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"gregor/internal/record"
)

// File suffixes, as Kafka names them.
const (
	logFileSuffix       = ".log"
	indexFileSuffix     = ".index"
	timeIndexFileSuffix = ".timeindex"
	txnIndexFileSuffix  = ".txnindex"
	deletedFileSuffix   = ".deleted"
	cleanedFileSuffix   = ".cleaned"
	swapFileSuffix      = ".swap"
)

// segmentFileName is Kafka's "%020d<suffix>".
func segmentFileName(dir string, baseOffset int64, suffix string) string {
	return filepath.Join(dir, fmt.Sprintf("%020d%s", baseOffset, suffix))
}

// segment is one .log file and its indexes (Kafka's LogSegment). Every
// offset in it is >= baseOffset and below the next segment's base offset.
//
// The appender (holding the log's append lock) is the only writer; readers
// use size as the end of readable data, and the log publishes size together
// with the log end offset so that readers never see a batch beyond it.
type segment struct {
	baseOffset int64
	dir        string

	// file is the .log, opened on demand under the broker's descriptor
	// budget (file_cache.go); every use pins it.
	file      *cachedFile
	logPath   string
	offsetIdx *offsetIndex
	timeIdx   *timeIndex
	txnIdx    *txnIndex

	size atomic.Int64 // bytes of complete batches

	// Appender state, guarded by the log's append lock.
	indexIntervalBytes       int64
	bytesSinceLastIndexEntry int64
	rollingBasedTimestamp    int64 // max timestamp of the first batch; noTimestamp if unknown
	rollingTimestampLoaded   bool
	created                  time.Time
	rollJitterMs             int64
	preallocated             bool
	// txnIndexStale is set by recover, which empties the transaction
	// index; the log rebuilds it with the producer state of the time
	// (rebuildTxnIndexes).
	txnIndexStale bool

	// tsMu guards the largest timestamp seen and the offset of the batch
	// holding it; readers use it for ListOffsets and the timestamp search.
	tsMu                      sync.Mutex
	maxTimestampSoFar         int64
	offsetOfMaxTimestampSoFar int64
	maxTimestampLoaded        bool
}

// openSegment opens (or creates) the segment files for baseOffset in dir.
// It holds no descriptor afterwards: an existing file is only measured, a
// new one created and closed; files opens the .log when it is first used.
// A new file is preallocated to segment.bytes when preallocate is set; its
// size is tracked here, not by the file length.
func openSegment(dir string, baseOffset int64, cfg Config, rollJitterMs int64, files *fileCache) (*segment, error) {
	return openListedSegment(dir, baseOffset, cfg, rollJitterMs, files, true)
}

// openListedSegment is openSegment for a caller that listed the directory:
// txnIndexListed false says the segment has no transaction index, which
// then is not looked for (most segments have none; a load of 100,000
// partitions saves a stat each).
func openListedSegment(dir string, baseOffset int64, cfg Config, rollJitterMs int64, files *fileCache, txnIndexListed bool) (*segment, error) {
	s := &segment{
		baseOffset:            baseOffset,
		dir:                   dir,
		logPath:               segmentFileName(dir, baseOffset, logFileSuffix),
		indexIntervalBytes:    int64(cfg.IndexIntervalBytes),
		rollingBasedTimestamp: noTimestamp,
		created:               time.Now(),
		rollJitterMs:          rollJitterMs,
		maxTimestampSoFar:     noTimestamp,
	}
	st, err := os.Stat(s.logPath)
	switch {
	case errors.Is(err, os.ErrNotExist):
		f, err := os.OpenFile(s.logPath, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return nil, fmt.Errorf("open segment: %w", err)
		}
		if err := f.Close(); err != nil {
			return nil, fmt.Errorf("create segment %s: %w", s.logPath, err)
		}
	case err != nil:
		return nil, fmt.Errorf("open segment: %w", err)
	default:
		s.size.Store(st.Size())
	}
	if s.size.Load() == 0 && cfg.Preallocate {
		if err := os.Truncate(s.logPath, int64(cfg.SegmentBytes)); err != nil {
			return nil, fmt.Errorf("preallocate segment %s: %w", s.logPath, err)
		}
		s.preallocated = true
	}
	s.file = files.file(s.logPath)
	s.offsetIdx, err = openOffsetIndex(segmentFileName(dir, baseOffset, indexFileSuffix), baseOffset, int(cfg.SegmentIndexBytes))
	if err != nil {
		return nil, err
	}
	s.timeIdx, err = openTimeIndex(segmentFileName(dir, baseOffset, timeIndexFileSuffix), baseOffset, int(cfg.SegmentIndexBytes))
	if err != nil {
		s.offsetIdx.close()
		return nil, err
	}
	txnIdxPath := segmentFileName(dir, baseOffset, txnIndexFileSuffix)
	if txnIndexListed {
		s.txnIdx, err = openTxnIndex(txnIdxPath, baseOffset, files)
	} else {
		s.txnIdx = newTxnIndex(txnIdxPath, baseOffset, files)
	}
	if err != nil {
		s.timeIdx.close()
		s.offsetIdx.close()
		return nil, err
	}
	return s, nil
}

// scanner is a batch scanner over the segment file from start to end, with
// the file pinned until the scanner's release. An empty range needs no file.
func (s *segment) scanner(start, end int64) (*batchScanner, error) {
	if start >= end {
		return &batchScanner{pos: start, end: end}, nil
	}
	f, err := s.file.acquire()
	if err != nil {
		return nil, err
	}
	sc := newBatchScanner(f, start, end)
	sc.pinned = s.file
	return sc, nil
}

// maxTimestampAndOffset is the largest batch timestamp in the segment and
// the last offset of the batch that holds it; without batches (-1, base).
func (s *segment) maxTimestampAndOffset() (ts, offset int64) {
	s.tsMu.Lock()
	defer s.tsMu.Unlock()
	if !s.maxTimestampLoaded {
		// A cleanly closed segment's last time index entry is its maximum.
		s.maxTimestampSoFar, s.offsetOfMaxTimestampSoFar = s.timeIdx.lastEntry()
		s.maxTimestampLoaded = true
		if s.timeIdx.isCorrupt() {
			// Not with a damaged index (a padded one would say 1970 and
			// let retention delete the segment): read the batches.
			if ts, off, err := s.readLargestTimestamp(); err == nil {
				s.maxTimestampSoFar, s.offsetOfMaxTimestampSoFar = ts, off
			} else {
				s.maxTimestampLoaded = false // try again at the next call
			}
		}
	}
	return s.maxTimestampSoFar, s.offsetOfMaxTimestampSoFar
}

func (s *segment) setMaxTimestamp(ts, offset int64) {
	s.tsMu.Lock()
	s.maxTimestampSoFar, s.offsetOfMaxTimestampSoFar, s.maxTimestampLoaded = ts, offset, true
	s.tsMu.Unlock()
}

// canConvertToRelativeOffset reports whether offset fits the indexes'
// 4-byte relative offsets.
func (s *segment) canConvertToRelativeOffset(offset int64) bool {
	return s.offsetIdx.canAppendOffset(offset)
}

// append writes batches (already validated, offsets assigned) at the end and
// adds index entries every index.interval.bytes, as Kafka's LogSegment.append:
// one offset index entry per append that follows enough unindexed bytes,
// mapping the append's last offset to its start position. The new size is
// returned for the caller to publish.
func (s *segment) append(b []byte, largestOffset, largestTimestamp, shallowOffsetOfMaxTimestamp int64) (int64, error) {
	pos := s.size.Load()
	if len(b) == 0 {
		return pos, nil
	}
	if !s.canConvertToRelativeOffset(largestOffset) {
		return pos, fmt.Errorf("segment %s: offset %d overflows base offset %d", s.logPath, largestOffset, s.baseOffset)
	}
	if pos == 0 {
		s.rollingBasedTimestamp, s.rollingTimestampLoaded = largestTimestamp, true
	}
	if err := s.file.withFile(func(f *os.File) error {
		_, err := f.WriteAt(b, pos)
		return err
	}); err != nil {
		return pos, fmt.Errorf("write segment %s at %d: %w", s.logPath, pos, err)
	}
	maxTs, maxTsOffset := s.maxTimestampAndOffset()
	if largestTimestamp > maxTs {
		maxTs, maxTsOffset = largestTimestamp, shallowOffsetOfMaxTimestamp
		s.setMaxTimestamp(maxTs, maxTsOffset)
	}
	if s.bytesSinceLastIndexEntry > s.indexIntervalBytes {
		if err := s.offsetIdx.append(largestOffset, pos); err != nil {
			return pos, err
		}
		if err := s.timeIdx.maybeAppend(maxTs, maxTsOffset, false); err != nil {
			return pos, err
		}
		s.bytesSinceLastIndexEntry = 0
	}
	s.bytesSinceLastIndexEntry += int64(len(b))
	return pos + int64(len(b)), nil
}

// firstBatchTimestamp is the max timestamp of the segment's first batch,
// read once from the file when unknown (Kafka's loadFirstBatchTimestamp).
func (s *segment) firstBatchTimestamp() int64 {
	if !s.rollingTimestampLoaded {
		sc, err := s.scanner(0, s.size.Load())
		if err != nil {
			// Unknown for now (the file cannot be opened): the roll
			// decision falls back to the segment's age, and a later call
			// tries again.
			return noTimestamp
		}
		if sc.next() {
			s.rollingBasedTimestamp = sc.hdr.MaxTimestamp
			s.rollingTimestampLoaded = true
		}
		sc.release()
	}
	return s.rollingBasedTimestamp
}

// timeWaitedForRoll is how long the segment has been open for the roll
// decision: the new batch's timestamp minus the first batch's, or wall-clock
// time since creation when the first batch has no timestamp.
func (s *segment) timeWaitedForRoll(now time.Time, batchTimestamp int64) int64 {
	if ts := s.firstBatchTimestamp(); ts >= 0 {
		return batchTimestamp - ts
	}
	return now.Sub(s.created).Milliseconds()
}

// shouldRoll is Kafka's LogSegment.shouldRoll: the append would overflow
// segment.bytes, segment.ms (less this segment's jitter) has passed on a
// non-empty segment, an index is full, or the last offset cannot be stored
// relative to the base offset.
func (s *segment) shouldRoll(cfg Config, now time.Time, appendBytes int, maxTimestamp, maxOffset int64) bool {
	size := s.size.Load()
	reachedRollMs := s.timeWaitedForRoll(now, maxTimestamp) > cfg.SegmentMs-s.rollJitterMs
	return size > int64(cfg.SegmentBytes)-int64(appendBytes) ||
		(size > 0 && reachedRollMs) ||
		s.offsetIdx.isFull() || s.timeIdx.isFull() ||
		!s.canConvertToRelativeOffset(maxOffset)
}

// batchPosition describes one batch found in the file.
type batchPosition struct {
	pos  int64
	size int64
	hdr  record.BatchHeader
}

// translateOffset finds the first batch whose last offset is >= offset,
// starting from the offset index's hint and reading no further than limit.
func (s *segment) translateOffset(offset, limit int64) (batchPosition, bool, error) {
	_, start := s.offsetIdx.lookup(offset)
	if start > limit {
		// The index is ahead of what this reader may see (a concurrent
		// append); scan from the start instead.
		start = 0
	}
	bp, found, err := s.scanForOffset(offset, start, limit)
	if start != 0 && (errors.Is(err, errCorruptBatch) || found && bp.pos == start && bp.hdr.BaseOffset > offset) {
		// The index entry does not point at the batch holding its offset (a
		// damaged index that passed the sanity checks): the log, not the
		// index, is the truth, so scan from the segment start.
		return s.scanForOffset(offset, 0, limit)
	}
	return bp, found, err
}

// scanForOffset scans from position start for the batch holding offset (or
// the first one after it).
func (s *segment) scanForOffset(offset, start, limit int64) (batchPosition, bool, error) {
	sc, err := s.scanner(start, limit)
	if err != nil {
		return batchPosition{}, false, err
	}
	defer sc.release()
	for sc.next() {
		if sc.hdr.LastOffset() >= offset {
			return batchPosition{pos: sc.pos, size: sc.size, hdr: sc.hdr}, true, nil
		}
	}
	if sc.err != nil {
		return batchPosition{}, false, fmt.Errorf("segment %s: %w", s.logPath, sc.err)
	}
	return batchPosition{}, false, nil
}

// readNextOffset is the offset after the segment's last batch, found by
// scanning from the last index entry (Kafka's readNextOffset), or from the
// segment start when that entry does not point at a batch.
func (s *segment) readNextOffset() (int64, error) {
	_, start, err := s.offsetIdx.lastEntry()
	if err != nil {
		return 0, err
	}
	if start > s.size.Load() {
		start = 0 // an index entry past the data: scan it all
	}
	next, err := s.scanNextOffset(start)
	if err != nil && start != 0 && errors.Is(err, errCorruptBatch) {
		return s.scanNextOffset(0)
	}
	return next, err
}

func (s *segment) scanNextOffset(start int64) (int64, error) {
	sc, err := s.scanner(start, s.size.Load())
	if err != nil {
		return 0, err
	}
	defer sc.release()
	next := s.baseOffset
	for sc.next() {
		next = sc.hdr.NextOffset()
	}
	if sc.err != nil {
		return 0, fmt.Errorf("segment %s: %w", s.logPath, sc.err)
	}
	return next, nil
}

// recover rebuilds the indexes from the batches and truncates the file at the
// first batch that is torn, fails its CRC, or breaks offset order (Kafka's
// LogSegment.recover). It returns the number of bytes cut off and, when
// that is not zero because of a bad batch, the reason. The index entries
// are built in memory and written with one write each (replaceEntries): no
// mapping, no page faults into a sparse file, for each of the partitions a
// crash leaves to recover.
func (s *segment) recover() (truncated int64, reason error, err error) {
	s.offsetIdx.truncateEntries(0)
	s.timeIdx.truncateEntries(0)
	// The transaction index needs the producer state at the segment's
	// start; the log rebuilds it after recovery (rebuildTxnIndexes).
	if err := s.txnIdx.reset(); err != nil {
		return 0, nil, err
	}
	s.txnIndexStale = true
	offsetCap := s.offsetIdx.maxIndexSize / offsetIndexEntrySize
	timeCap := s.timeIdx.maxIndexSize / timeIndexEntrySize
	var offsetEntries, timeEntries []byte
	lastIndexedTs := noTimestamp
	appendTimeEntry := func(ts, offset int64, skipFullCheck bool) error {
		n := len(timeEntries) / timeIndexEntrySize
		if !skipFullCheck && n >= timeCap-1 {
			return fmt.Errorf("append to full time index %s", s.timeIdx.path)
		}
		if ts <= lastIndexedTs || n >= timeCap {
			return nil
		}
		timeEntries = binary.BigEndian.AppendUint64(timeEntries, uint64(ts))
		timeEntries = binary.BigEndian.AppendUint32(timeEntries, uint32(offset-s.baseOffset))
		lastIndexedTs = ts
		return nil
	}
	f, err := s.file.acquire()
	if err != nil {
		return 0, nil, err
	}
	defer s.file.release()
	st, err := f.Stat()
	if err != nil {
		return 0, nil, fmt.Errorf("stat segment %s: %w", s.logPath, err)
	}
	fileSize := st.Size()
	maxTs, maxTsOffset := noTimestamp, s.baseOffset
	var validBytes, lastIndexEntry int64
	prevLast := s.baseOffset - 1
	// Recovery reads every byte; read ahead further than a lookup does, but
	// no further than the file (10,000 nearly empty active segments must not
	// cost 10,000 MiB of buffers at start-up).
	sc := &batchScanner{f: f, end: fileSize, buf: make([]byte, min(1<<20, max(fileSize, 4096)))}
	var invalid error
	for sc.next() {
		b, err := sc.batch()
		if err != nil {
			return 0, nil, err
		}
		if err := validateBatch(b, sc.hdr); err != nil {
			invalid = err
			break
		}
		if sc.hdr.BaseOffset <= prevLast || !s.canConvertToRelativeOffset(sc.hdr.LastOffset()) {
			invalid = fmt.Errorf("%w: batch offsets %d..%d out of order after %d in segment %d",
				record.ErrCorruptMessage, sc.hdr.BaseOffset, sc.hdr.LastOffset(), prevLast, s.baseOffset)
			break
		}
		prevLast = sc.hdr.LastOffset()
		if sc.hdr.MaxTimestamp > maxTs {
			maxTs, maxTsOffset = sc.hdr.MaxTimestamp, sc.hdr.LastOffset()
		}
		if validBytes-lastIndexEntry > s.indexIntervalBytes {
			if len(offsetEntries)/offsetIndexEntrySize >= offsetCap {
				return 0, nil, fmt.Errorf("append to full offset index %s", s.offsetIdx.path)
			}
			offsetEntries = binary.BigEndian.AppendUint32(offsetEntries, uint32(sc.hdr.LastOffset()-s.baseOffset))
			offsetEntries = binary.BigEndian.AppendUint32(offsetEntries, uint32(validBytes))
			if err := appendTimeEntry(maxTs, maxTsOffset, false); err != nil {
				return 0, nil, err
			}
			lastIndexEntry = validBytes
		}
		validBytes += sc.size
	}
	if invalid == nil && sc.err != nil {
		invalid = sc.err
		if !errors.Is(sc.err, errCorruptBatch) {
			return 0, nil, sc.err
		}
	}
	truncated = fileSize - validBytes
	// Only when there is something to cut: a truncate dirties the inode.
	if truncated > 0 {
		if err := f.Truncate(validBytes); err != nil {
			return 0, nil, fmt.Errorf("truncate segment %s: %w", s.logPath, err)
		}
	}
	s.size.Store(validBytes)
	s.preallocated = false
	s.setMaxTimestamp(maxTs, maxTsOffset)
	s.rollingTimestampLoaded = false
	s.bytesSinceLastIndexEntry = validBytes - lastIndexEntry
	if err := appendTimeEntry(maxTs, maxTsOffset, true); err != nil {
		return 0, nil, err
	}
	if err := s.offsetIdx.replaceEntries(offsetEntries); err != nil {
		return 0, nil, err
	}
	if err := s.timeIdx.replaceEntries(timeEntries); err != nil {
		return 0, nil, err
	}
	if invalid == nil && truncated > 0 {
		invalid = fmt.Errorf("%w: torn batch at position %d", record.ErrShortBatch, validBytes)
	}
	return truncated, invalid, nil
}

// truncateTo removes every batch with offsets >= offset (Kafka's
// LogSegment.truncateTo); the segment becomes the active one, so its indexes
// regain their full size. It returns the bytes removed.
func (s *segment) truncateTo(offset int64) (int64, error) {
	bp, found, err := s.translateOffset(offset, s.size.Load())
	if err != nil {
		return 0, err
	}
	s.offsetIdx.truncateTo(offset)
	s.timeIdx.truncateTo(offset)
	if err := s.txnIdx.truncateTo(offset); err != nil {
		return 0, err
	}
	if err := s.resizeIndexes(s.offsetIdx.maxIndexSize); err != nil {
		return 0, err
	}
	if !found {
		return 0, nil
	}
	old := s.size.Load()
	if err := s.file.withFile(func(f *os.File) error { return f.Truncate(bp.pos) }); err != nil {
		return 0, fmt.Errorf("truncate segment %s: %w", s.logPath, err)
	}
	s.size.Store(bp.pos)
	s.preallocated = false
	if bp.pos == 0 {
		s.created = time.Now()
		s.rollingBasedTimestamp, s.rollingTimestampLoaded = noTimestamp, false
	}
	s.bytesSinceLastIndexEntry = 0
	ts, off, err := s.readLargestTimestamp()
	if err != nil {
		return 0, err
	}
	s.setMaxTimestamp(ts, off)
	return old - bp.pos, nil
}

// readLargestTimestamp recomputes the largest batch timestamp from the last
// time index entry and the batches after it.
func (s *segment) readLargestTimestamp() (ts, offset int64, err error) {
	ts, offset = s.timeIdx.lastEntry()
	_, start := s.offsetIdx.lookup(offset)
	sc, err := s.scanner(start, s.size.Load())
	if err != nil {
		return 0, 0, err
	}
	defer sc.release()
	for sc.next() {
		if sc.hdr.MaxTimestamp > ts {
			ts, offset = sc.hdr.MaxTimestamp, sc.hdr.LastOffset()
		}
	}
	if sc.err != nil {
		return 0, 0, fmt.Errorf("segment %s: %w", s.logPath, sc.err)
	}
	return ts, offset, nil
}

// onBecomeInactive writes the final time index entry and trims the indexes
// and a preallocated file to their real sizes.
func (s *segment) onBecomeInactive() error {
	ts, off := s.maxTimestampAndOffset()
	if err := s.timeIdx.maybeAppend(ts, off, true); err != nil {
		return err
	}
	if err := s.offsetIdx.trimToValidSize(); err != nil {
		return err
	}
	if err := s.timeIdx.trimToValidSize(); err != nil {
		return err
	}
	return s.trimLogFile()
}

func (s *segment) trimLogFile() error {
	if !s.preallocated {
		return nil
	}
	if err := s.file.withFile(func(f *os.File) error { return f.Truncate(s.size.Load()) }); err != nil {
		return fmt.Errorf("trim segment %s: %w", s.logPath, err)
	}
	s.preallocated = false
	return nil
}

// resizeIndexes gives the indexes of the (new) active segment their full
// size, on disk when they are first written to (growOnWrite).
func (s *segment) resizeIndexes(size int) error {
	if err := s.offsetIdx.growOnWrite(size); err != nil {
		return err
	}
	return s.timeIdx.growOnWrite(size)
}

// flush fsyncs the data file and the indexes.
func (s *segment) flush() error {
	if err := s.file.withFile((*os.File).Sync); err != nil {
		return fmt.Errorf("fsync segment %s: %w", s.logPath, err)
	}
	if err := s.offsetIdx.flush(); err != nil {
		return err
	}
	if err := s.txnIdx.flush(); err != nil {
		return err
	}
	return s.timeIdx.flush()
}

// close writes the final time index entry, trims, and releases the files.
func (s *segment) close() error {
	var errs []error
	s.tsMu.Lock()
	loaded := s.maxTimestampLoaded
	s.tsMu.Unlock()
	if loaded {
		ts, off := s.maxTimestampAndOffset()
		errs = append(errs, s.timeIdx.maybeAppend(ts, off, true))
	}
	errs = append(errs, s.offsetIdx.close(), s.timeIdx.close(), s.txnIdx.close(), s.trimLogFile(), s.file.close())
	return errors.Join(errs...)
}

// renameWithSuffix renames the segment's files by appending suffix (".deleted").
func (s *segment) renameWithSuffix(suffix string) error {
	if err := s.file.rename(s.logPath+suffix, false); err != nil {
		return err
	}
	s.logPath += suffix
	if err := s.offsetIdx.rename(s.offsetIdx.path + suffix); err != nil {
		return err
	}
	if err := s.timeIdx.rename(s.timeIdx.path + suffix); err != nil {
		return err
	}
	return s.txnIdx.rename(s.txnIdx.path + suffix)
}

// closeAndDelete closes the segment and removes its files, whatever their
// current suffix. Nothing is written first (no final time index entry, no
// trim): the files are going, and with indexes mapped on demand, writing
// would open them again by a path that a later deleted segment of the same
// base offset may have taken over.
func (s *segment) closeAndDelete() error {
	err := errors.Join(s.release(), s.txnIdx.close())
	for _, p := range []string{s.logPath, s.offsetIdx.path, s.timeIdx.path} {
		if rmErr := os.Remove(p); rmErr != nil && !errors.Is(rmErr, os.ErrNotExist) {
			err = errors.Join(err, fmt.Errorf("delete segment file: %w", rmErr))
		}
	}
	return errors.Join(err, s.txnIdx.delete())
}
