package log

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// CleanerOffsetCheckpointFile is the per-log.dir file of each compacted
// log's first dirty offset (Kafka's LogCleanerManager.OFFSET_CHECKPOINT_FILE),
// in the offset checkpoint format.
const CleanerOffsetCheckpointFile = "cleaner-offset-checkpoint"

// CleanerConfig is the broker's log.cleaner.* settings. The zero value runs
// no cleaner.
type CleanerConfig struct {
	Enable  bool // log.cleaner.enable
	Threads int  // log.cleaner.threads
	// DedupeBufferSize is log.cleaner.dedupe.buffer.size, shared by the
	// threads: each gets an offset map of DedupeBufferSize/Threads bytes.
	DedupeBufferSize int64
	// IOBufferSize is log.cleaner.io.buffer.size, shared likewise; half of a
	// thread's share reads, half writes.
	IOBufferSize int64
	// IOBufferLoadFactor is log.cleaner.io.buffer.load.factor, how full the
	// offset map may get before a clean stops early.
	IOBufferLoadFactor float64
	BackoffMs          int64 // log.cleaner.backoff.ms
	// UpperBound returns the offset a log may be cleaned up to (exclusive):
	// Kafka's last stable offset. Nil means the log's last stable offset
	// (LastStableOffset: the high watermark, or the first offset of the
	// oldest transaction not yet complete and replicated).
	UpperBound func(TopicPartition, *Log) int64
	// Now is the cleaner's clock, for tests; nil means time.Now.
	Now func() time.Time
}

func (c CleanerConfig) withDefaults() CleanerConfig {
	if c.Threads < 0 {
		c.Threads = 0
	}
	if c.DedupeBufferSize <= 0 {
		c.DedupeBufferSize = 128 << 20
	}
	if c.IOBufferSize <= 0 {
		c.IOBufferSize = 512 << 10
	}
	if c.IOBufferLoadFactor <= 0 || c.IOBufferLoadFactor > 1 {
		c.IOBufferLoadFactor = 0.9
	}
	if c.BackoffMs <= 0 {
		c.BackoffMs = 15000
	}
	if c.UpperBound == nil {
		c.UpperBound = func(_ TopicPartition, l *Log) int64 { return l.LastStableOffset() }
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// CleanerStats are the log cleaner's counters, summed over every clean
// since the manager started (Kafka reports them per run in the cleaner log
// and as kafka.log:type=LogCleaner metrics).
type CleanerStats struct {
	Runs     int64 // cleans that finished
	Aborted  int64 // cleans stopped by shutdown, deletion, truncation or retention
	Failed   int64 // cleans that failed; their partitions are uncleanable until restart
	Segments int64 // cleaned segments swapped in

	MapBytesRead     int64 // bytes read to build offset maps
	MapMessagesRead  int64 // keyed records put in offset maps
	BytesRead        int64 // bytes of segments rewritten
	BytesWritten     int64 // bytes of cleaned segments
	MessagesRead     int64
	MessagesRetained int64
	// InvalidMessages counts records without a key, which the cleaner drops.
	InvalidMessages int64

	// BufferUtilization is the offset map's fill at the end of the last
	// clean; MaxDirtyPercent the dirtiest log's dirty share at the last pick.
	BufferUtilization float64
	MaxDirtyPercent   int
	Elapsed           time.Duration
}

func (s *CleanerStats) add(o CleanerStats) {
	s.Segments += o.Segments
	s.MapBytesRead += o.MapBytesRead
	s.MapMessagesRead += o.MapMessagesRead
	s.BytesRead += o.BytesRead
	s.BytesWritten += o.BytesWritten
	s.MessagesRead += o.MessagesRead
	s.MessagesRetained += o.MessagesRetained
	s.InvalidMessages += o.InvalidMessages
	s.BufferUtilization = o.BufferUtilization
	s.Elapsed += o.Elapsed
}

// logCleaner runs the cleaner threads of a Manager and keeps the state
// Kafka's LogCleanerManager keeps: the logs being cleaned, the uncleanable
// ones, and the cleaner offset checkpoints.
//
// Lock order: logCleaner.mu, then Manager.mu (for the list of logs). The
// Manager never calls into the cleaner while holding its mu.
type logCleaner struct {
	m        *Manager
	cfg      CleanerConfig
	cleaners []*cleaner

	mu          sync.Mutex
	inProgress  map[TopicPartition]context.CancelFunc
	uncleanable map[TopicPartition]bool
	checkpoints map[string]map[TopicPartition]int64 // by log.dir path
	stats       CleanerStats
}

func newLogCleaner(m *Manager, cfg CleanerConfig) (*logCleaner, error) {
	cfg = cfg.withDefaults()
	lc := &logCleaner{m: m, cfg: cfg, inProgress: map[TopicPartition]context.CancelFunc{},
		uncleanable: map[TopicPartition]bool{}, checkpoints: map[string]map[TopicPartition]int64{}}
	threads := max(cfg.Threads, 1)
	for i := 0; i < cfg.Threads; i++ {
		dedupe := min(cfg.DedupeBufferSize/int64(threads), math.MaxInt32)
		c, err := newCleaner(i, dedupe, int(cfg.IOBufferSize/int64(threads)/2), cfg.IOBufferLoadFactor,
			m.logger.With("component", "log-cleaner", "thread", i))
		if err != nil {
			return nil, err
		}
		lc.cleaners = append(lc.cleaners, c)
	}
	for _, d := range m.dirs {
		if d.offline() != nil {
			continue
		}
		offsets, err := readCheckpoint(filepath.Join(d.path, CleanerOffsetCheckpointFile))
		if err != nil {
			m.logger.Warn("resetting cleaner checkpoints", "dir", d.path, "err", err)
			offsets = map[TopicPartition]int64{}
		}
		lc.checkpoints[d.path] = offsets
	}
	return lc, nil
}

// start runs one goroutine per cleaner thread until ctx ends; wg waits for them.
func (lc *logCleaner) start(ctx context.Context, wg *sync.WaitGroup) {
	for _, c := range lc.cleaners {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lc.run(ctx, c)
		}()
	}
}

// run is a cleaner thread (Kafka's CleanerThread.doWork): clean the
// dirtiest log, or sleep log.cleaner.backoff.ms when none qualifies.
func (lc *logCleaner) run(ctx context.Context, c *cleaner) {
	t := time.NewTimer(0)
	defer t.Stop()
	<-t.C
	for {
		cleaned := lc.cleanFilthiestLog(ctx, c)
		if ctx.Err() != nil {
			return
		}
		if cleaned {
			continue
		}
		t.Reset(time.Duration(lc.cfg.BackoffMs) * time.Millisecond)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// cleanFilthiestLog picks a log and cleans it; false if none qualified.
func (lc *logCleaner) cleanFilthiestLog(ctx context.Context, c *cleaner) bool {
	now := lc.cfg.Now()
	ltc, ok := lc.grabFilthiestCompactedLog(now)
	if !ok {
		return false
	}
	lc.cleanLog(ctx, c, ltc, now)
	return true
}

// candidate is a compacted log in an online log.dir.
type candidate struct {
	tp  TopicPartition
	log *Log
	dir string
}

func (m *Manager) compactedLogs() []candidate {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []candidate
	for tp, ml := range m.logs {
		if ml.log.config().Compact && ml.dir.offline() == nil {
			out = append(out, candidate{tp: tp, log: ml.log, dir: ml.dir.path})
		}
	}
	return out
}

// grabFilthiestCompactedLog is Kafka's LogCleanerManager method of that
// name: among compacted logs not being cleaned and not uncleanable, the one
// with the largest dirty ratio above its min.cleanable.dirty.ratio, or any
// with dirty bytes that max.compaction.lag.ms says must be compacted now. It
// is marked in progress.
func (lc *logCleaner) grabFilthiestCompactedLog(now time.Time) (logToClean, bool) {
	logs := lc.m.compactedLogs()
	lc.mu.Lock()
	defer lc.mu.Unlock()
	var best logToClean
	found := false
	maxRatio := 0.0
	for _, cand := range logs {
		if _, busy := lc.inProgress[cand.tp]; busy || lc.uncleanable[cand.tp] {
			continue
		}
		checkpoint, has := lc.checkpoints[cand.dir][cand.tp]
		ltc, forceCheckpoint := cleanableOffsets(cand.log, checkpoint, has, now.UnixMilli(), lc.cfg.UpperBound(cand.tp, cand.log))
		ltc.tp, ltc.dir = cand.tp, cand.dir
		if forceCheckpoint {
			lc.updateCheckpointLocked(cand.dir, cand.tp, ltc.firstDirtyOffset)
		}
		if ltc.totalBytes() == 0 {
			continue
		}
		ratio := ltc.cleanableRatio()
		maxRatio = max(maxRatio, ratio)
		cfg := cand.log.config()
		if !(ltc.needCompactionNow && ltc.cleanableBytes > 0) && !(ratio > cfg.MinCleanableDirtyRatio) {
			continue
		}
		if !found || ratio > best.cleanableRatio() {
			best, found = ltc, true
		}
	}
	lc.stats.MaxDirtyPercent = int(100 * maxRatio)
	if found {
		lc.inProgress[best.tp] = nil
	}
	return best, found
}

// cleanableOffsets is Kafka's LogCleanerManager.cleanableOffsets plus
// LogToClean's sizes. The first dirty offset is the checkpoint, reset to the
// log start when it is out of range or when the log was truncated below it.
// The first uncleanable offset is the lowest of the upper bound, the active
// segment, and the first dirty segment whose newest record is younger than
// min.compaction.lag.ms, rounded down to its segment's base offset.
func cleanableOffsets(l *Log, checkpoint int64, hasCheckpoint bool, now, upperBound int64) (ltc logToClean, forceCheckpoint bool) {
	cfg := l.config()
	segs, leo := l.snapshot()
	logStart := l.LogStartOffset()
	firstDirty := logStart
	if hasCheckpoint {
		firstDirty = checkpoint
	}
	if truncatedTo, ok := l.takeTruncation(); ok && truncatedTo < firstDirty {
		firstDirty, forceCheckpoint = truncatedTo, true
	}
	if firstDirty < logStart || firstDirty > leo {
		firstDirty, forceCheckpoint = logStart, true
	}
	active := segs[len(segs)-1]
	uncleanable := min(upperBound, active.baseOffset)
	if cfg.MinCompactionLagMs > 0 {
		for i := max(floorSegment(segs, firstDirty), 0); i < len(segs)-1; i++ {
			if ts, _ := segs[i].maxTimestampAndOffset(); ts > now-cfg.MinCompactionLagMs {
				uncleanable = min(uncleanable, segs[i].baseOffset)
				break
			}
		}
	}
	uncleanable = max(uncleanable, firstDirty)
	// Round down to a segment base (Kafka's calculateCleanableBytes).
	firstUncleanable := active.baseOffset
	if i := floorSegment(segs, uncleanable); i >= 0 && i < len(segs)-1 {
		firstUncleanable = segs[i].baseOffset
	}
	ltc = logToClean{log: l, firstDirtyOffset: firstDirty, firstUncleanableOffset: firstUncleanable}
	for i, s := range segs {
		if s.baseOffset < firstDirty {
			ltc.cleanBytes += s.size.Load()
		}
		overlapsDirty := i+1 >= len(segs) || segs[i+1].baseOffset > min(firstDirty, firstUncleanable)
		if overlapsDirty && s.baseOffset < firstUncleanable {
			ltc.cleanableBytes += s.size.Load()
		}
	}
	ltc.needCompactionNow = maxCompactionDelay(segs, firstDirty, now, cfg.MaxCompactionLagMs) > 0
	return ltc, forceCheckpoint
}

// maxCompactionDelay is how long past max.compaction.lag.ms the oldest
// dirty record is: the earliest first-batch timestamp among the dirty
// non-active segments against now - max.compaction.lag.ms.
func maxCompactionDelay(segs []*segment, firstDirty, now, maxLagMs int64) int64 {
	if maxLagMs >= now {
		return 0 // no record can be that old; spare the reads (the default is "never")
	}
	earliest := int64(math.MaxInt64)
	for i := max(floorSegment(segs, firstDirty), 0); i < len(segs)-1; i++ {
		if ts := firstBatchMaxTimestamp(segs[i]); ts > 0 {
			earliest = min(earliest, ts)
		}
	}
	cleanUntil := now - max(maxLagMs, 0)
	if earliest < cleanUntil {
		return cleanUntil - earliest
	}
	return 0
}

// firstBatchMaxTimestamp reads the max timestamp of a segment's first batch
// (Kafka's LogSegment.getFirstBatchTimestamp) without touching the
// appender's cached copy.
func firstBatchMaxTimestamp(s *segment) int64 {
	sc, err := s.scanner(0, s.size.Load())
	if err != nil {
		return noTimestamp // unreadable now: the compaction lag check waits
	}
	defer sc.release()
	if sc.next() {
		return sc.hdr.MaxTimestamp
	}
	return noTimestamp
}

// cleanLog cleans one log and records the outcome (Kafka's
// CleanerThread.cleanLog and LogCleanerManager.doneCleaning): the new first
// dirty offset is checkpointed after a clean that finished; an abort leaves
// the checkpoint; any other failure marks the partition uncleanable.
func (lc *logCleaner) cleanLog(ctx context.Context, c *cleaner, ltc logToClean, now time.Time) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	lc.mu.Lock()
	lc.inProgress[ltc.tp] = cancel
	lc.mu.Unlock()

	start := time.Now()
	var st CleanerStats
	endOffset, err := c.clean(ctx, ltc, now.UnixMilli(), &st)
	st.Elapsed = time.Since(start)

	lc.mu.Lock()
	defer lc.mu.Unlock()
	delete(lc.inProgress, ltc.tp)
	lc.stats.add(st)
	switch {
	case err == nil:
		lc.stats.Runs++
		lc.updateCheckpointLocked(ltc.dir, ltc.tp, endOffset)
		c.logger.Info("cleaned log", "partition", ltc.tp.String(), "first_dirty_offset", ltc.firstDirtyOffset,
			"end_offset", endOffset, "bytes_read", st.BytesRead, "bytes_written", st.BytesWritten,
			"messages_read", st.MessagesRead, "messages_retained", st.MessagesRetained, "elapsed", st.Elapsed)
	case ctx.Err() != nil, errors.Is(err, errCleaningAborted), errors.Is(err, ErrClosed), errors.Is(err, os.ErrClosed),
		errors.Is(err, ErrKafkaStorage):
		// Stopped, deleted, truncated, or segments closed by retention or
		// deletion under the clean: nothing is wrong with the log.
		lc.stats.Aborted++
		c.logger.Info("log cleaning aborted", "partition", ltc.tp.String(), "reason", err)
	default:
		lc.stats.Failed++
		lc.uncleanable[ltc.tp] = true
		c.logger.Error("log cleaning failed; partition marked uncleanable", "partition", ltc.tp.String(), "err", err)
	}
}

// updateCheckpointLocked records a log's first dirty offset and rewrites
// its log.dir's checkpoint file, dropping logs no longer hosted there.
func (lc *logCleaner) updateCheckpointLocked(dir string, tp TopicPartition, offset int64) {
	offsets := lc.checkpoints[dir]
	if offsets == nil {
		offsets = map[TopicPartition]int64{}
		lc.checkpoints[dir] = offsets
	}
	offsets[tp] = offset
	hosted := lc.m.logsIn(dir)
	for p := range offsets {
		if !hosted[p] {
			delete(offsets, p)
		}
	}
	if err := writeCheckpoint(filepath.Join(dir, CleanerOffsetCheckpointFile), offsets); err != nil {
		lc.m.logger.Error("write cleaner offset checkpoint failed", "dir", dir, "err", err)
	}
}

// logsIn is the set of partitions hosted in a log.dir.
func (m *Manager) logsIn(dir string) map[TopicPartition]bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[TopicPartition]bool{}
	for tp, ml := range m.logs {
		if ml.dir.path == dir {
			out[tp] = true
		}
	}
	return out
}

// abort cancels the partition's clean, if one runs (Kafka's abortCleaning);
// the clean deletes its .cleaned files and swaps nothing in.
func (lc *logCleaner) abort(tp TopicPartition) {
	if lc == nil {
		return
	}
	lc.mu.Lock()
	defer lc.mu.Unlock()
	if cancel := lc.inProgress[tp]; cancel != nil {
		cancel()
	}
	delete(lc.uncleanable, tp)
}

// CleanerStats returns the log cleaner's counters; zero without a cleaner.
func (m *Manager) CleanerStats() CleanerStats {
	if m.cleaner == nil {
		return CleanerStats{}
	}
	m.cleaner.mu.Lock()
	defer m.cleaner.mu.Unlock()
	return m.cleaner.stats
}

// CleanerCheckpoint returns a compacted log's first dirty offset as the
// cleaner last checkpointed it.
func (m *Manager) CleanerCheckpoint(tp TopicPartition) (int64, bool) {
	if m.cleaner == nil {
		return 0, false
	}
	m.mu.Lock()
	ml, ok := m.logs[tp]
	m.mu.Unlock()
	if !ok {
		return 0, false
	}
	m.cleaner.mu.Lock()
	defer m.cleaner.mu.Unlock()
	off, ok := m.cleaner.checkpoints[ml.dir.path][tp]
	return off, ok
}
