package log

import (
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"
)

// cleanerLogState is what the cleaner needs to know about truncations, kept
// in the Log (field cleanerState) and written by the truncation paths.
type cleanerLogState struct {
	// generation changes with every truncation. A clean that started under
	// another generation built its offset map from records that may be gone,
	// so its swap is refused.
	generation atomic.Int64
	// truncatedTo is 1 + the lowest offset truncated to since the cleaner
	// last looked, or 0. The cleaner moves its checkpoint back to it, as
	// Kafka's LogCleanerManager.maybeTruncateCheckpoint.
	truncatedTo atomic.Int64
}

// noteTruncation records that the log was truncated to offset. Callers hold mu.
func (l *Log) noteTruncation(offset int64) {
	l.cleanerState.generation.Add(1)
	for {
		cur := l.cleanerState.truncatedTo.Load()
		if cur != 0 && cur-1 <= offset {
			return
		}
		if l.cleanerState.truncatedTo.CompareAndSwap(cur, offset+1) {
			return
		}
	}
}

// takeTruncation returns and forgets the lowest offset truncated to.
func (l *Log) takeTruncation() (int64, bool) {
	v := l.cleanerState.truncatedTo.Swap(0)
	return v - 1, v != 0
}

// errCleaningAborted is Kafka's LogCleaningAbortedException: the clean was
// cancelled (shutdown, partition deleted) or the log changed under it.
var errCleaningAborted = errors.New("log cleaning aborted")

// swapStep names the points of a segment swap at which a test may stop it,
// as a crash would.
type swapStep int

const (
	swapStepCleaned    swapStep = iota // cleaned files written and fsynced, still .cleaned
	swapStepSwap                       // renamed .swap, the old segments untouched
	swapStepOldDeleted                 // after each old segment is renamed .deleted
	swapStepLogRenamed                 // the .log is in place, its indexes still .swap
)

// errSimulatedCrash is returned when a test's crash hook stops a swap; the
// files are left exactly as they are.
var errSimulatedCrash = errors.New("simulated crash")

// createCleanedSegment creates the empty destination of a clean,
// <base>.log.cleaned with its .index.cleaned and .timeindex.cleaned (Kafka's
// LogCleaner createNewCleanedSegment). Leftovers of an earlier attempt are
// removed first.
func createCleanedSegment(dir string, baseOffset int64, cfg Config, files *fileCache) (*segment, error) {
	s := &segment{
		baseOffset:            baseOffset,
		dir:                   dir,
		logPath:               segmentFileName(dir, baseOffset, logFileSuffix) + cleanedFileSuffix,
		indexIntervalBytes:    int64(cfg.IndexIntervalBytes),
		rollingBasedTimestamp: noTimestamp,
		created:               time.Now(),
		maxTimestampSoFar:     noTimestamp,
	}
	idxPath := segmentFileName(dir, baseOffset, indexFileSuffix) + cleanedFileSuffix
	timeIdxPath := segmentFileName(dir, baseOffset, timeIndexFileSuffix) + cleanedFileSuffix
	txnIdxPath := segmentFileName(dir, baseOffset, txnIndexFileSuffix) + cleanedFileSuffix
	for _, p := range []string{idxPath, timeIdxPath, txnIdxPath} {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("remove leftover cleaned index: %w", err)
		}
	}
	f, err := os.OpenFile(s.logPath, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("create cleaned segment: %w", err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("create cleaned segment: %w", err)
	}
	s.file = files.file(s.logPath)
	if s.offsetIdx, err = openOffsetIndex(idxPath, baseOffset, int(cfg.SegmentIndexBytes)); err != nil {
		return nil, err
	}
	if s.timeIdx, err = openTimeIndex(timeIdxPath, baseOffset, int(cfg.SegmentIndexBytes)); err != nil {
		s.offsetIdx.close()
		return nil, err
	}
	if s.txnIdx, err = openTxnIndex(txnIdxPath, baseOffset, files); err != nil {
		s.timeIdx.close()
		s.offsetIdx.close()
		return nil, err
	}
	return s, nil
}

// changeFileSuffix renames the segment's .log, .index, .timeindex and .txnindex from
// one suffix to another (Kafka's LogSegment.changeFileSuffixes), the log
// first: the loader completes a swap from the .log.swap alone.
func (s *segment) changeFileSuffix(from, to string, afterLog func() bool) error {
	logPath := segmentFileName(s.dir, s.baseOffset, logFileSuffix) + to
	if err := s.file.rename(logPath, false); err != nil {
		return err
	}
	s.logPath = logPath
	if afterLog != nil && afterLog() {
		return errSimulatedCrash
	}
	if err := s.offsetIdx.rename(segmentFileName(s.dir, s.baseOffset, indexFileSuffix) + to); err != nil {
		return err
	}
	if err := s.txnIdx.rename(segmentFileName(s.dir, s.baseOffset, txnIndexFileSuffix) + to); err != nil {
		return err
	}
	return s.timeIdx.rename(segmentFileName(s.dir, s.baseOffset, timeIndexFileSuffix) + to)
}

// replaceSegments swaps the cleaned segment in for old, a run of contiguous
// segments that it covers, crash-safely as Kafka's LocalLog.replaceSegments:
//
//  1. the cleaned files (fsynced by the caller) are renamed .cleaned -> .swap;
//  2. the new segment list is published to readers;
//  3. the old segments are renamed .deleted (their files stay open until
//     file.delete.delay.ms, so reads in flight finish);
//  4. the .swap files are renamed to their final names.
//
// A crash before 1 leaves .cleaned files, which the loader deletes: the old
// segments stay. A crash after 1 leaves a .log.swap, which the loader renames
// into place, deleting every segment whose base offset lies inside the range
// it covers (the old ones, whether still there or already .deleted). Either
// way every record that should be there is there.
//
// The swap is refused (errCleaningAborted) when the log changed in a way
// that voids the clean: it was closed or truncated since generation, or old
// is no longer a run of its non-active segments (retention deleted some).
func (l *Log) replaceSegments(cleaned *segment, old []*segment, generation int64, crashAt func(swapStep) bool) error {
	crash := func(step swapStep) bool { return crashAt != nil && crashAt(step) }
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return fmt.Errorf("%w: %w", errCleaningAborted, ErrClosed)
	}
	if err := l.OfflineError(); err != nil {
		return err
	}
	if l.cleanerState.generation.Load() != generation {
		return fmt.Errorf("%w: %s was truncated during cleaning", errCleaningAborted, l.dir)
	}
	segs, leo := l.snapshot()
	first := floorSegment(segs, old[0].baseOffset)
	if first < 0 || first+len(old) >= len(segs) {
		return fmt.Errorf("%w: segments of %s changed during cleaning", errCleaningAborted, l.dir)
	}
	for i, s := range old {
		if segs[first+i] != s {
			return fmt.Errorf("%w: segments of %s changed during cleaning", errCleaningAborted, l.dir)
		}
	}
	if crash(swapStepCleaned) {
		return errSimulatedCrash
	}
	if err := cleaned.changeFileSuffix(cleanedFileSuffix, swapFileSuffix, nil); err != nil {
		return l.checkIO(fmt.Errorf("swap cleaned segment into %s: %w", l.dir, err))
	}
	if err := syncDir(l.dir); err != nil {
		return l.checkIO(fmt.Errorf("swap cleaned segment into %s: %w", l.dir, err))
	}
	if crash(swapStepSwap) {
		return errSimulatedCrash
	}

	next := make([]*segment, 0, len(segs)-len(old)+1)
	next = append(next, segs[:first]...)
	next = append(next, cleaned)
	next = append(next, segs[first+len(old):]...)
	l.publishLocked(next, leo)

	for _, s := range old {
		if s.baseOffset != cleaned.baseOffset {
			l.deleteSegmentSnapshotsLocked([]*segment{s})
		}
		l.deleteSegmentsLocked([]*segment{s})
		if crash(swapStepOldDeleted) {
			return errSimulatedCrash
		}
	}
	if err := cleaned.changeFileSuffix(swapFileSuffix, "", func() bool { return crash(swapStepLogRenamed) }); err != nil {
		if errors.Is(err, errSimulatedCrash) {
			return err
		}
		return l.checkIO(fmt.Errorf("swap cleaned segment into %s: %w", l.dir, err))
	}
	if err := syncDir(l.dir); err != nil {
		return l.checkIO(fmt.Errorf("swap cleaned segment into %s: %w", l.dir, err))
	}
	l.logger.Debug("swapped in cleaned segment", "dir", l.dir, "base_offset", cleaned.baseOffset, "replaced", len(old))
	return nil
}
