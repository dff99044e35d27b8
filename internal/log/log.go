package log

import (
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"gregor/internal/record"
)

// Log is one partition's log (Kafka's UnifiedLog over LocalLog): its
// segments, the active segment at the end, the log start and end offsets, the
// high watermark and the recovery point.
//
// Lock order: mu (the append lock: appends, roll, truncate, config, close),
// then flushMu (flushes and the recovery point), then stateMu (the published
// view that readers snapshot). Readers take only stateMu, shared and
// briefly, so reads run concurrently with appends and see only batches whose
// bytes are completely written. The leader epoch cache's own lock comes
// last; the cache changes only under mu.
type Log struct {
	dir    string
	logger *slog.Logger
	// files opens and closes the segment files under the broker's
	// descriptor budget (file_cache.go), shared by every log of a Manager.
	files *fileCache
	// decompression is the broker's budget for decompressed data that
	// produce validation holds (nil for a log opened alone: no shared
	// budget).
	decompression *record.DecompressionBudget
	// health is the log.dir's online state, shared with the other logs in
	// the same log.dir when a Manager owns them (logdir_failure.go).
	health *dirHealth

	mu     sync.Mutex
	cfg    atomic.Pointer[Config]
	closed bool
	// pendingDeletes are segments renamed to .deleted whose files stay open
	// until file.delete.delay.ms has passed, so that in-flight reads finish.
	pendingDeletes []pendingDelete
	// cleanerState tells the log cleaner about truncations (cleaner_swap.go).
	cleanerState cleanerLogState
	// nextGuard numbers transaction verifications (txn_verification.go).
	nextGuard uint64
	// producers is the partition's producer state (producer_state.go).
	producers *producerStateManager
	// epochs is the leader epoch cache, kept in leader-epoch-checkpoint
	// (leader_epoch.go).
	epochs *leaderEpochCache

	stateMu  sync.RWMutex
	segments []*segment // by base offset; the last is active; replaced, never mutated
	leo      int64

	logStartOffset atomic.Int64
	highWatermark  atomic.Int64
	recoveryPoint  atomic.Int64
	lastFlushMs    atomic.Int64

	// flushMu serializes flushes; dirNeedsSync asks the next flush to fsync
	// the directory because a segment file was created.
	flushMu      sync.Mutex
	dirNeedsSync atomic.Bool
	// epochsDirty asks the next flush to write leader-epoch-checkpoint
	// before it moves the recovery point: see markEpochsDirty.
	epochsDirty atomic.Bool
	// filesClosed is set, under flushMu, once Close has released the files.
	filesClosed bool
	// unsyncedSnapshots are producer snapshots written at roll, fsynced by
	// the next flush (guarded by flushMu).
	unsyncedSnapshots []string

	// Flushes of rolled segments run in the background (Kafka schedules
	// "flush-log" on roll); bg tracks the one goroutine that may run them.
	bg           sync.WaitGroup
	flushTarget  atomic.Int64
	flushRunning atomic.Bool
}

type pendingDelete struct {
	seg      *segment
	deadline time.Time
}

// config returns the log's current settings.
func (l *Log) config() Config { return *l.cfg.Load() }

// rollJitter draws a segment's roll jitter as Kafka's randomSegmentJitter:
// uniform below min(segment.jitter.ms, segment.ms).
func rollJitter(cfg Config) int64 {
	if cfg.SegmentJitterMs <= 0 {
		return 0
	}
	return rand.Int64N(min(cfg.SegmentJitterMs, cfg.SegmentMs))
}

// snapshot returns the segments and the log end offset as one consistent view.
func (l *Log) snapshot() ([]*segment, int64) {
	l.stateMu.RLock()
	defer l.stateMu.RUnlock()
	return l.segments, l.leo
}

// floorSegment returns the index of the last segment whose base offset is <=
// offset, or -1.
func floorSegment(segs []*segment, offset int64) int {
	return sort.Search(len(segs), func(i int) bool { return segs[i].baseOffset > offset }) - 1
}

// Dir is the log's directory.
func (l *Log) Dir() string { return l.dir }

// LogStartOffset is the first offset readable.
func (l *Log) LogStartOffset() int64 { return l.logStartOffset.Load() }

// LogEndOffset is the offset the next appended record gets (LEO).
func (l *Log) LogEndOffset() int64 {
	l.stateMu.RLock()
	defer l.stateMu.RUnlock()
	return l.leo
}

// HighWatermark is the offset below which records are committed.
func (l *Log) HighWatermark() int64 { return l.highWatermark.Load() }

// SetHighWatermark sets the high watermark, clamped to [log start, LEO].
func (l *Log) SetHighWatermark(off int64) {
	l.stateMu.RLock()
	defer l.stateMu.RUnlock()
	l.highWatermark.Store(max(l.logStartOffset.Load(), min(off, l.leo)))
}

// RecoveryPoint is the offset below which everything is fsynced; recovery
// after a crash starts at the segment holding it.
func (l *Log) RecoveryPoint() int64 { return l.recoveryPoint.Load() }

// Size is the bytes of all segments.
func (l *Log) Size() int64 {
	segs, _ := l.snapshot()
	var n int64
	for _, s := range segs {
		n += s.size.Load()
	}
	return n
}

// UpdateConfig applies new topic settings; segment-level settings take effect
// for the active segment's next index entry and the next roll.
func (l *Log) UpdateConfig(cfg Config) {
	cfg = cfg.withDefaults()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cfg.Store(&cfg)
	segs, _ := l.snapshot()
	segs[len(segs)-1].indexIntervalBytes = int64(cfg.IndexIntervalBytes)
}

// publishLocked installs a new segment list and log end offset for readers.
// The caller holds mu.
func (l *Log) publishLocked(segs []*segment, leo int64) {
	l.stateMu.Lock()
	l.segments, l.leo = segs, leo
	if hw := l.highWatermark.Load(); hw > leo {
		l.highWatermark.Store(leo)
	}
	l.stateMu.Unlock()
}

// Roll closes the active segment to appends and starts a new one at the log
// end offset.
func (l *Log) Roll() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	_, leo := l.snapshot()
	return l.checkIO(l.rollLocked(leo))
}

// rollLocked is Kafka's LocalLog.roll: the new segment starts at
// max(expectedNextOffset, LEO); an empty active segment at that same offset
// is replaced rather than kept.
func (l *Log) rollLocked(expectedNextOffset int64) error {
	segs, leo := l.snapshot()
	newBase := max(expectedNextOffset, leo)
	active := segs[len(segs)-1]
	cfg := l.config()
	if active.baseOffset == newBase {
		if active.size.Load() != 0 {
			return fmt.Errorf("roll %s: segment %d already exists", l.dir, newBase)
		}
		// Kafka replaces an empty active segment at the same offset so that
		// its age starts over; resetting the age is the same thing.
		active.created = time.Now()
		active.rollJitterMs = rollJitter(cfg)
		active.rollingTimestampLoaded = false
		return nil
	}
	if newBase < active.baseOffset {
		return fmt.Errorf("roll %s: offset %d below the active segment %d", l.dir, newBase, active.baseOffset)
	}
	if err := active.onBecomeInactive(); err != nil {
		return fmt.Errorf("roll %s: %w", l.dir, err)
	}
	// Index files left at the new offset by an earlier truncation are stale.
	for _, suffix := range []string{indexFileSuffix, timeIndexFileSuffix, txnIndexFileSuffix} {
		if err := os.Remove(segmentFileName(l.dir, newBase, suffix)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("roll %s: %w", l.dir, err)
		}
	}
	if _, err := os.Stat(segmentFileName(l.dir, newBase, logFileSuffix)); err == nil {
		return fmt.Errorf("roll %s: segment file for offset %d already exists", l.dir, newBase)
	}
	// A producer snapshot at the new base offset, so that recovering the
	// new segment starts from it (Kafka takes it at roll); it is fsynced by
	// the background flush of the rolled segment, not under this lock.
	l.producers.lastMapOffset = newBase
	snap, err := l.producers.takeSnapshot(false)
	if err != nil {
		return fmt.Errorf("roll %s: %w", l.dir, err)
	}
	if snap != "" {
		l.flushMu.Lock()
		l.unsyncedSnapshots = append(l.unsyncedSnapshots, snap)
		l.flushMu.Unlock()
	}
	seg, err := openSegment(l.dir, newBase, cfg, rollJitter(cfg), l.files)
	if err != nil {
		return fmt.Errorf("roll %s: %w", l.dir, err)
	}
	l.dirNeedsSync.Store(true)
	next := make([]*segment, len(segs), len(segs)+1)
	copy(next, segs)
	l.publishLocked(append(next, seg), leo)
	l.logger.Debug("rolled segment", "dir", l.dir, "base_offset", newBase)
	// The rolled segments are complete: fsync them soon, off the append path.
	l.scheduleFlush(newBase)
	// A log without a manager (the metadata log) sweeps deleted segments here.
	l.deleteExpiredSegmentsLocked(time.Now())
	return nil
}

// scheduleFlush flushes up to offset in the background, coalescing requests
// into the one goroutine that may be running.
func (l *Log) scheduleFlush(offset int64) {
	for {
		cur := l.flushTarget.Load()
		if offset <= cur || l.flushTarget.CompareAndSwap(cur, offset) {
			break
		}
	}
	if !l.flushRunning.CompareAndSwap(false, true) {
		return
	}
	l.bg.Add(1)
	go func() {
		defer l.bg.Done()
		for {
			target := l.flushTarget.Load()
			if err := l.flushUpTo(target, true); err != nil {
				l.logger.Error("background flush failed", "dir", l.dir, "err", err)
			}
			l.flushRunning.Store(false)
			// A request that raced with the store above is served by
			// whoever wins the flag.
			if l.flushTarget.Load() == target || !l.flushRunning.CompareAndSwap(false, true) {
				return
			}
		}
	}()
}

// Flush fsyncs every segment up to the log end offset and moves the recovery
// point there.
func (l *Log) Flush() error {
	_, leo := l.snapshot()
	return l.flushUpTo(leo, true)
}

// flushUpTo fsyncs the segments holding offsets in [recovery point, offset)
// and advances the recovery point to offset (Kafka's LocalLog.flush).
// Without sync it only advances the recovery point, and forgets what it
// would have fsynced: the caller makes the whole file system durable
// before anything records that recovery point (Manager.Close).
func (l *Log) flushUpTo(offset int64, sync bool) error {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	if l.filesClosed {
		return ErrClosed
	}
	if err := l.OfflineError(); err != nil {
		return err
	}
	for _, snap := range l.unsyncedSnapshots {
		if !sync {
			break
		}
		if err := syncFile(snap); err != nil {
			return l.checkIO(fmt.Errorf("flush %s: %w", l.dir, err))
		}
	}
	l.unsyncedSnapshots = l.unsyncedSnapshots[:0]
	// Before any record of a new epoch goes below the recovery point, the
	// checkpoint naming that epoch is written and durable
	// (markEpochsDirty). Also when the recovery point does not move:
	// Close flushes, and a clean shutdown trusts the checkpoint without a
	// rescan.
	if l.epochsDirty.Swap(false) {
		// Changes after the swap set it again, for the next flush.
		if err := writeLeaderEpochCheckpoint(l.dir, l.epochs.epochEntries(), sync); err != nil {
			l.epochsDirty.Store(true)
			return l.checkIO(fmt.Errorf("flush %s: write leader epoch checkpoint: %w", l.dir, err))
		}
	}
	// A truncation may have moved the end below a flush asked for earlier.
	segs, leo := l.snapshot()
	offset = min(offset, leo)
	rp := l.recoveryPoint.Load()
	if offset <= rp {
		return nil
	}
	first := max(floorSegment(segs, rp), 0)
	for i := first; sync && i < len(segs) && segs[i].baseOffset < offset; i++ {
		if err := segs[i].flush(); err != nil {
			return l.checkIO(fmt.Errorf("flush %s: %w", l.dir, err))
		}
	}
	if l.dirNeedsSync.Swap(false) && sync {
		if err := syncDir(l.dir); err != nil {
			l.dirNeedsSync.Store(true)
			return l.checkIO(fmt.Errorf("flush %s: %w", l.dir, err))
		}
	}
	l.recoveryPoint.Store(offset)
	l.lastFlushMs.Store(time.Now().UnixMilli())
	return nil
}

// syncDir fsyncs a directory so that created and renamed entries survive a crash.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open dir for fsync: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("fsync dir %s: %w", dir, err)
	}
	return nil
}

// firstSegmentBase is the base offset of the oldest segment.
func (l *Log) firstSegmentBase() int64 {
	segs, _ := l.snapshot()
	return segs[0].baseOffset
}

// maybeFlushByTime flushes when flush.ms has passed since the last flush; the
// manager's flush scheduler calls it.
func (l *Log) maybeFlushByTime(now time.Time) error {
	cfg := l.config()
	if l.OfflineError() != nil || now.UnixMilli()-l.lastFlushMs.Load() < cfg.FlushIntervalMs {
		return nil
	}
	return l.Flush()
}

// TruncateTo removes every record at or above offset (a follower diverging
// from its leader). A target at or beyond the log end offset changes nothing.
func (l *Log) TruncateTo(offset int64) error {
	if offset < 0 {
		return fmt.Errorf("truncate %s to negative offset %d", l.dir, offset)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	segs, leo := l.snapshot()
	if offset >= leo {
		// Nothing to cut, but an epoch this broker assigned at its end as
		// leader, before it wrote anything, conflicts with the new leader's
		// history: Kafka truncates the epoch cache at the end all the same.
		l.truncateEpochsFromEndLocked(leo)
		return nil
	}
	if segs[0].baseOffset > offset {
		return l.truncateFullyAndStartAtLocked(offset)
	}
	i := floorSegment(segs, offset)
	removed := segs[i+1:]
	keep := segs[: i+1 : i+1]
	seg := keep[i]
	// Kafka sets the log end offset to the target; when the target lies
	// inside a batch, that whole batch goes, so the end is its base offset.
	newLeo := offset
	cut, found, err := seg.translateOffset(offset, seg.size.Load())
	if err != nil {
		return fmt.Errorf("truncate %s to %d: %w", l.dir, offset, err)
	}
	if found {
		newLeo = min(newLeo, cut.hdr.BaseOffset)
	}
	// Publish the shorter view first so readers stop before the bytes go.
	l.publishLocked(keep, newLeo)
	if _, err := seg.truncateTo(offset); err != nil {
		return fmt.Errorf("truncate %s to %d: %w", l.dir, offset, err)
	}
	l.deleteSegmentsLocked(removed)
	l.flushMu.Lock()
	l.flushTarget.Store(min(l.flushTarget.Load(), newLeo))
	if l.recoveryPoint.Load() > newLeo {
		l.recoveryPoint.Store(newLeo)
	}
	l.flushMu.Unlock()
	if l.logStartOffset.Load() > newLeo {
		l.logStartOffset.Store(newLeo)
	}
	l.noteTruncation(newLeo)
	l.truncateEpochsFromEndLocked(newLeo)
	if err := l.rebuildProducerStateLocked(newLeo, false, time.Now()); err != nil {
		return l.checkIO(fmt.Errorf("truncate %s to %d: %w", l.dir, offset, err))
	}
	l.logger.Info("truncated log", "dir", l.dir, "offset", offset, "log_end_offset", newLeo, "old_log_end_offset", leo)
	return nil
}

// truncateFullyAndStartAtLocked deletes every segment and starts an empty
// one at offset; the log start, recovery point and high watermark move there.
func (l *Log) truncateFullyAndStartAtLocked(offset int64) error {
	segs, _ := l.snapshot()
	cfg := l.config()
	l.noteTruncation(offset)
	l.deleteSegmentsLocked(segs)
	if err := l.producers.truncateFullyAndStartAt(offset); err != nil {
		l.logger.Warn("deleting producer snapshots failed", "dir", l.dir, "err", err)
	}
	seg, err := openSegment(l.dir, offset, cfg, rollJitter(cfg), l.files)
	if err != nil {
		return fmt.Errorf("truncate %s fully to %d: %w", l.dir, offset, err)
	}
	l.dirNeedsSync.Store(true)
	l.logStartOffset.Store(offset)
	l.publishLocked([]*segment{seg}, offset)
	l.highWatermark.Store(offset)
	l.flushMu.Lock()
	l.flushTarget.Store(offset)
	l.recoveryPoint.Store(offset)
	l.flushMu.Unlock()
	l.clearEpochsLocked()
	return nil
}

// deleteSegmentsLocked renames segments to .deleted and queues them for
// removal after file.delete.delay.ms (Kafka's asynchronous segment delete).
func (l *Log) deleteSegmentsLocked(segs []*segment) {
	deadline := time.Now().Add(time.Duration(l.config().FileDeleteDelayMs) * time.Millisecond)
	for _, s := range segs {
		if err := s.renameWithSuffix(deletedFileSuffix); err != nil {
			l.logger.Warn("rename segment for deletion failed", "dir", l.dir, "base_offset", s.baseOffset, "err", err)
		}
		l.pendingDeletes = append(l.pendingDeletes, pendingDelete{seg: s, deadline: deadline})
	}
}

// deleteExpiredSegments removes the .deleted segments whose delay has passed.
func (l *Log) deleteExpiredSegments(now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.deleteExpiredSegmentsLocked(now)
}

func (l *Log) deleteExpiredSegmentsLocked(now time.Time) {
	kept := l.pendingDeletes[:0]
	var due []*segment
	for _, p := range l.pendingDeletes {
		if now.Before(p.deadline) {
			kept = append(kept, p)
			continue
		}
		due = append(due, p.seg)
	}
	if len(due) > 0 {
		// A background flush may still hold these segments from a snapshot
		// taken before they were replaced; close them once it is done.
		l.flushMu.Lock()
		for _, s := range due {
			if err := s.closeAndDelete(); err != nil {
				l.logger.Warn("delete segment failed", "dir", l.dir, "base_offset", s.baseOffset, "err", err)
			}
		}
		l.flushMu.Unlock()
	}
	clear(l.pendingDeletes[len(kept):])
	l.pendingDeletes = kept
}

// Close flushes, trims the indexes to their entries, and closes every file.
// Segments waiting for deletion are deleted now.
func (l *Log) Close() error { return l.close(true) }

// closeUnsynced is Close without a single fsync: for a caller that syncs
// the log's whole file system next, before it records the recovery point
// or a clean shutdown (Manager.Close). A broker stopping with 100,000
// partitions written to would otherwise wait for several fsyncs of each.
func (l *Log) closeUnsynced() error { return l.close(false) }

func (l *Log) close(sync bool) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	l.bg.Wait()
	if l.OfflineError() != nil {
		return l.releaseFilesLocked()
	}
	_, leo := l.snapshot()
	err := l.flushUpTo(leo, sync)
	if err == nil {
		// Kafka snapshots the producer state at the log end on close, so
		// that the next start needs no replay.
		l.producers.lastMapOffset = leo
		_, err = l.producers.takeSnapshot(sync)
	}
	l.flushMu.Lock()
	l.filesClosed = true
	l.flushMu.Unlock()
	segs, _ := l.snapshot()
	for _, s := range segs {
		err = errors.Join(err, s.close())
	}
	for _, p := range l.pendingDeletes {
		err = errors.Join(err, p.seg.closeAndDelete())
	}
	l.pendingDeletes = nil
	if err != nil {
		return fmt.Errorf("close %s: %w", l.dir, err)
	}
	return nil
}
