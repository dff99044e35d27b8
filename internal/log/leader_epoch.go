package log

import (
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"sync"

	"gregor/internal/record"
)

// The leader epoch cache (Kafka's LeaderEpochFileCache) maps each leader
// epoch of the partition to the first offset written in it. A follower asks
// its leader for the end offset of its latest epoch (OffsetsForLeaderEpoch)
// and truncates to that, instead of to its high watermark, which is what
// loses acknowledged data or lets replicas diverge in the high-watermark-only
// design (KIP-101, KIP-279). Fetch's diverging-epoch check (KIP-320) asks
// the same question.
//
// The cache is kept by the Log, under its append lock:
//   - every appended batch, as leader and as follower, assigns its
//     partition leader epoch at its base offset (Kafka's
//     maybeAssignEpochStartOffset); a new leader assigns its epoch at its
//     log end offset before it appends anything (AssignEpochStartOffset);
//   - truncation from the end (TruncateTo) drops the entries starting at or
//     after the new end; a full truncation clears the cache;
//   - a rising log start offset (retention, DeleteRecords) drops the entries
//     before it and moves the epoch that covers it to start there;
//   - every change is written to the leader-epoch-checkpoint file
//     (leader_epoch_checkpoint.go) by the next flush, before the recovery
//     point passes the records of a new epoch (markEpochsDirty); the
//     cache is checked against the log, and rebuilt from it where needed,
//     when the log is opened.

// Kafka's OffsetsForLeaderEpoch answer when the epoch or its end is unknown.
const (
	UndefinedEpoch       int32 = -1
	UndefinedEpochOffset int64 = -1
)

// EpochEntry is one leader epoch and the first offset written in it.
type EpochEntry struct {
	Epoch       int32
	StartOffset int64
}

func (e EpochEntry) String() string {
	return fmt.Sprintf("EpochEntry(epoch=%d, startOffset=%d)", e.Epoch, e.StartOffset)
}

// leaderEpochCache holds the entries in memory. Invariant: both the epochs
// and the start offsets strictly increase along entries. Its mutators are
// called by one writer at a time (the Log's append lock); its own lock lets
// readers (OffsetsForLeaderEpoch, fetch) in concurrently.
type leaderEpochCache struct {
	dir    string // for log messages
	logger *slog.Logger

	mu      sync.RWMutex
	entries []EpochEntry
}

func newLeaderEpochCache(dir string, logger *slog.Logger) *leaderEpochCache {
	return &leaderEpochCache{dir: dir, logger: logger}
}

// assign records that epoch starts at startOffset and reports whether the
// cache changed. An epoch already latest at an offset at or below
// startOffset changes nothing; otherwise the entries the new one would break
// monotonicity with (an epoch at or above it, or a start at or after it) are
// removed first, as Kafka does.
func (c *leaderEpochCache) assign(epoch int32, startOffset int64) (bool, error) {
	if epoch < 0 || startOffset < 0 {
		return false, fmt.Errorf("invalid partition leader epoch entry %v", EpochEntry{epoch, startOffset})
	}
	// Nearly every append finds its epoch already latest: check that under
	// the shared lock so that readers are not held up. Only one caller
	// mutates at a time (the Log's append lock), so the answer holds.
	if !c.updateNeeded(epoch, startOffset) {
		return false, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	entry := EpochEntry{epoch, startOffset}
	keep := len(c.entries)
	for keep > 0 && (c.entries[keep-1].Epoch >= epoch || c.entries[keep-1].StartOffset >= startOffset) {
		keep--
	}
	removed := c.entries[keep:]
	// Removing only the entry at the same start offset is expected: that
	// epoch wrote nothing. Anything else means a conflicting history.
	if len(removed) > 1 || (len(removed) == 1 && removed[0].StartOffset != startOffset) {
		c.logger.Warn("new leader epoch entry truncated conflicting entries", "dir", c.dir,
			"entry", entry, "removed", slices.Clone(removed))
	}
	c.entries = append(c.entries[:keep], entry)
	return true, nil
}

// updateNeeded reports whether assigning (epoch, startOffset) changes the
// cache: unless epoch is the latest and already starts at or before it.
func (c *leaderEpochCache) updateNeeded(epoch int32, startOffset int64) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	n := len(c.entries)
	return n == 0 || c.entries[n-1].Epoch != epoch || startOffset < c.entries[n-1].StartOffset
}

// latest is the entry of the latest epoch.
func (c *leaderEpochCache) latest() (EpochEntry, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if len(c.entries) == 0 {
		return EpochEntry{}, false
	}
	return c.entries[len(c.entries)-1], true
}

// endOffsetFor answers OffsetsForLeaderEpoch exactly as Kafka's
// LeaderEpochFileCache.endOffsetFor: the largest epoch at or below the
// requested one, and the start offset of the first epoch above the
// requested one, or logEndOffset when the requested epoch is the latest.
//   - UndefinedEpoch requested, or an epoch above every known one:
//     (UndefinedEpoch, UndefinedEpochOffset);
//   - an epoch below the first known one: the requested epoch itself with
//     the first entry's start offset (the older data is gone; the follower
//     replicates from the leader's start).
func (c *leaderEpochCache) endOffsetFor(requested int32, logEndOffset int64) (int32, int64) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if requested == UndefinedEpoch {
		return UndefinedEpoch, UndefinedEpochOffset
	}
	n := len(c.entries)
	if n > 0 && c.entries[n-1].Epoch == requested {
		return requested, logEndOffset
	}
	// higher is the first entry with an epoch above the requested one.
	higher := sort.Search(n, func(i int) bool { return c.entries[i].Epoch > requested })
	if higher == n {
		return UndefinedEpoch, UndefinedEpochOffset
	}
	if higher == 0 {
		return requested, c.entries[0].StartOffset
	}
	return c.entries[higher-1].Epoch, c.entries[higher].StartOffset
}

// truncateFromEnd removes the entries starting at or after endOffset (a
// log truncated to endOffset) and reports whether any went.
func (c *leaderEpochCache) truncateFromEnd(endOffset int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	keep := len(c.entries)
	for endOffset >= 0 && keep > 0 && c.entries[keep-1].StartOffset >= endOffset {
		keep--
	}
	if keep == len(c.entries) {
		return false
	}
	c.logger.Debug("truncated leader epoch cache from end", "dir", c.dir, "end_offset", endOffset,
		"removed", slices.Clone(c.entries[keep:]))
	c.entries = c.entries[:keep]
	return true
}

// truncateFromStart drops what lies before a new log start offset: the
// entries starting at or below startOffset go, and the last of them comes
// back starting at startOffset, since its epoch covers the new first offset
// (so an entry at exactly startOffset is kept). It reports whether the
// entries changed.
func (c *leaderEpochCache) truncateFromStart(startOffset int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	drop := 0
	for drop < len(c.entries) && c.entries[drop].StartOffset <= startOffset {
		drop++
	}
	if drop == 0 {
		return false
	}
	first := EpochEntry{Epoch: c.entries[drop-1].Epoch, StartOffset: startOffset}
	if drop == 1 && c.entries[0] == first {
		return false
	}
	c.logger.Debug("truncated leader epoch cache from start", "dir", c.dir, "start_offset", startOffset,
		"removed", slices.Clone(c.entries[:drop]), "first", first)
	c.entries = append([]EpochEntry{first}, c.entries[drop:]...)
	return true
}

// clear removes every entry and reports whether there were any.
func (c *leaderEpochCache) clear() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	had := len(c.entries) > 0
	c.entries = nil
	return had
}

// epochEntries is a copy of the entries, oldest first.
func (c *leaderEpochCache) epochEntries() []EpochEntry {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return slices.Clone(c.entries)
}

// LatestEpoch is the latest leader epoch in the log's epoch cache, and false
// when the cache is empty (Kafka's UnifiedLog.latestEpoch).
func (l *Log) LatestEpoch() (int32, bool) {
	e, ok := l.epochs.latest()
	return e.Epoch, ok
}

// EndOffsetForEpoch answers OffsetsForLeaderEpoch for this log (Kafka's
// UnifiedLog.endOffsetForEpoch): the largest epoch at or below epoch and the
// offset where it ended, the log end offset for the latest epoch; or
// (UndefinedEpoch, UndefinedEpochOffset) when unknown. The rules are
// leaderEpochCache.endOffsetFor's.
func (l *Log) EndOffsetForEpoch(epoch int32) (int32, int64) {
	// Under stateMu the log end offset cannot move between being read and
	// being paired with the cache's answer.
	l.stateMu.RLock()
	defer l.stateMu.RUnlock()
	return l.epochs.endOffsetFor(epoch, l.leo)
}

// EpochEntries is the leader epoch cache, oldest epoch first, for tests and
// tools.
func (l *Log) EpochEntries() []EpochEntry { return l.epochs.epochEntries() }

// AssignEpochStartOffset records that leader epoch epoch starts at
// startOffset, and writes the checkpoint if that changed the cache. A
// broker becoming leader calls it with its log end offset before it appends
// (Kafka's Partition.makeLeader -> maybeAssignEpochStartOffset), so that
// followers asking for the previous epoch's end get this offset even before
// the new leader wrote anything.
func (l *Log) AssignEpochStartOffset(epoch int32, startOffset int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	if err := l.OfflineError(); err != nil {
		return err
	}
	changed, err := l.epochs.assign(epoch, startOffset)
	if err != nil {
		return fmt.Errorf("assign leader epoch in %s: %w", l.dir, err)
	}
	if changed {
		l.markEpochsDirty()
	}
	return nil
}

// assignBatchEpochsLocked assigns the partition leader epoch of each batch
// in b at its base offset, before the batches are written (Kafka's order in
// UnifiedLog.append, for leader and follower appends alike). Batches without
// an epoch (-1) are skipped. The caller holds mu.
func (l *Log) assignBatchEpochsLocked(b []byte) error {
	changed := false
	for rest := b; len(rest) > 0; {
		h, err := record.ParseHeader(rest)
		if err != nil || len(rest) < h.Size() {
			break // the append path validated b; nothing to assign past this
		}
		rest = rest[h.Size():]
		if h.Magic < 2 || h.PartitionLeaderEpoch < 0 {
			continue
		}
		c, err := l.epochs.assign(h.PartitionLeaderEpoch, h.BaseOffset)
		if err != nil {
			return fmt.Errorf("assign leader epoch in %s: %w", l.dir, err)
		}
		changed = changed || c
	}
	if changed {
		l.markEpochsDirty()
	}
	return nil
}

// truncateEpochsFromEndLocked keeps the cache in step with a log truncated
// to endOffset. The caller holds mu.
func (l *Log) truncateEpochsFromEndLocked(endOffset int64) {
	if l.epochs.truncateFromEnd(endOffset) {
		l.markEpochsDirty()
	}
}

// truncateEpochsFromStartLocked keeps the cache in step with a log start
// offset that rose to startOffset. The caller holds mu.
func (l *Log) truncateEpochsFromStartLocked(startOffset int64) {
	if l.epochs.truncateFromStart(startOffset) {
		l.markEpochsDirty()
	}
}

// clearEpochsLocked empties the cache of a log truncated fully. The caller
// holds mu.
func (l *Log) clearEpochsLocked() {
	if l.epochs.clear() {
		l.markEpochsDirty()
	}
}

// markEpochsDirty records that the cache changed; the next flush
// writes leader-epoch-checkpoint, before it moves the recovery point
// (flushUpTo). Kafka writes and fsyncs the file at every new epoch instead;
// what that buys is that an epoch's entry is never lost while its records
// are below the recovery point, where a restart does not rescan them. The
// same holds here: until the flush, the records of the change are above the
// recovery point, and a restart after a crash reassigns their epochs from
// the batches it rescans (and drops entries past the log end, as after a
// truncation the file did not see). An epoch that has no records yet tells
// a follower nothing its log does not. Kafka defers the same way for
// truncations (LeaderEpochFileCache's async flush). It matters at scale: a
// broker that takes over 100,000 leaderships in one metadata change wrote
// and fsynced a file for each before serving any.
func (l *Log) markEpochsDirty() { l.epochsDirty.Store(true) }
