package log

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// CleanShutdownFileName marks a log.dir whose logs were all flushed and
// closed by a clean shutdown (Kafka's LogLoader.CleanShutdownFile). It lives
// in the log.dir, the parent of each partition directory.
const CleanShutdownFileName = ".kafka_cleanshutdown"

// Open loads (or creates) the log in dir. recoveryPoint and logStartOffset
// come from the log.dir's checkpoint files (0 when unknown).
//
// Loading costs no descriptor and reads no segment below the recovery
// point: segment files are measured, not opened (file_cache.go opens them
// when used), and the indexes of segments that need no recovery are only
// checked to exist, as Kafka does since KAFKA-7283 (a lookup never trusts an
// index entry that does not point at its batch; see translateOffset). If
// the clean-shutdown marker is present in dir's parent, every segment is
// trusted but the active one, whose indexes are sanity-checked and whose tail
// is validated (validateTail): a clean shutdown does not vouch for bytes a
// disk or an operator cut afterwards. Otherwise every segment from the one
// holding the recovery point on is rescanned: batches are checked (header,
// offsets, CRC), the first bad or torn batch and everything after it (later
// segments too) is cut off, and the indexes are rebuilt. Leftover .cleaned
// and .deleted files are removed and .swap files completed, as Kafka's
// LogLoader does.
//
// The log's segment files are opened without a descriptor budget; a
// Manager's logs share the broker's budget instead.
func Open(dir string, cfg Config, recoveryPoint, logStartOffset int64, logger *slog.Logger) (*Log, error) {
	return openLog(dir, cfg, recoveryPoint, logStartOffset, logger, newFileCache(0), shutdownUnknown)
}

// shutdownState is what the caller of openLog knows of the log's
// directory: nothing (openLog makes the directory if missing and looks for
// the log.dir's clean-shutdown marker), or that it exists and how the
// log.dir was shut down. A log.dir's load knows it for all its logs, which
// spares 100,000 partitions two system calls each.
type shutdownState int

const (
	shutdownUnknown shutdownState = iota
	shutdownClean
	shutdownUnclean
)

func openLog(dir string, cfg Config, recoveryPoint, logStartOffset int64, logger *slog.Logger, files *fileCache, shutdown shutdownState) (*Log, error) {
	cfg = cfg.withDefaults()
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if shutdown == shutdownUnknown {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("open log: %w", err)
		}
		shutdown = shutdownUnclean
		if _, err := os.Stat(filepath.Join(filepath.Dir(dir), CleanShutdownFileName)); err == nil {
			shutdown = shutdownClean
		}
	}
	hadCleanShutdown := shutdown == shutdownClean
	l := &Log{dir: dir, logger: logger, files: files, health: newDirHealth(filepath.Dir(dir), logger)}
	l.cfg.Store(&cfg)
	logStartOffset = max(logStartOffset, 0)
	recoveryPoint = max(recoveryPoint, 0)

	listing, swapped, err := l.removeTempFilesAndCompleteSwaps()
	if err != nil {
		return nil, fmt.Errorf("open log %s: %w", dir, err)
	}
	segs, err := l.loadSegments(cfg, hadCleanShutdown, recoveryPoint, listing, swapped)
	if err != nil {
		closeSegments(segs)
		return nil, fmt.Errorf("open log %s: %w", dir, err)
	}
	if !hadCleanShutdown {
		if segs, err = l.recoverSegments(segs, recoveryPoint); err != nil {
			closeSegments(segs)
			return nil, fmt.Errorf("recover log %s: %w", dir, err)
		}
	}
	leo, leoKnown := logStartOffset, false
	if hadCleanShutdown && len(segs) > 0 {
		if leo, leoKnown, err = l.recoverTornTail(segs[len(segs)-1]); err != nil {
			closeSegments(segs)
			return nil, fmt.Errorf("recover log %s: %w", dir, err)
		}
	}
	if len(segs) > 0 && !leoKnown {
		if leo, err = segs[len(segs)-1].readNextOffset(); err != nil {
			closeSegments(segs)
			return nil, fmt.Errorf("open log %s: %w", dir, err)
		}
	}
	if len(segs) > 0 && leo < logStartOffset {
		// Everything on disk is below the checkpointed log start offset (the
		// log was deleted up to it): start over there.
		logger.Warn("log end offset below log start offset; truncating fully", "dir", dir, "log_end_offset", leo, "log_start_offset", logStartOffset)
		for _, s := range segs {
			if err := s.closeAndDelete(); err != nil {
				return nil, fmt.Errorf("open log %s: %w", dir, err)
			}
		}
		segs, leo = nil, logStartOffset
	}
	if len(segs) == 0 {
		seg, err := openSegment(dir, logStartOffset, cfg, rollJitter(cfg), files)
		if err != nil {
			return nil, fmt.Errorf("open log %s: %w", dir, err)
		}
		segs = []*segment{seg}
		l.dirNeedsSync.Store(true)
	}
	active := segs[len(segs)-1]
	if err := active.resizeIndexes(int(cfg.SegmentIndexBytes)); err != nil {
		closeSegments(segs)
		return nil, fmt.Errorf("open log %s: %w", dir, err)
	}
	active.rollJitterMs = rollJitter(cfg)

	l.segments, l.leo = segs, leo
	logStart := max(logStartOffset, segs[0].baseOffset)
	l.logStartOffset.Store(logStart)
	l.highWatermark.Store(logStart)
	if hadCleanShutdown {
		l.recoveryPoint.Store(leo)
	} else {
		l.recoveryPoint.Store(min(recoveryPoint, leo))
	}
	l.flushTarget.Store(l.recoveryPoint.Load())
	if err := l.rebuildTxnIndexes(segs, logStart); err != nil {
		closeSegments(segs)
		return nil, fmt.Errorf("open log %s: rebuild transaction indexes: %w", dir, err)
	}
	if err := l.loadProducerStateLocked(hadCleanShutdown, listing); err != nil {
		closeSegments(segs)
		return nil, fmt.Errorf("open log %s: load producer state: %w", dir, err)
	}
	if err := l.loadLeaderEpochsLocked(hadCleanShutdown, recoveryPoint); err != nil {
		closeSegments(segs)
		return nil, fmt.Errorf("open log %s: load leader epochs: %w", dir, err)
	}
	// Recovery and the producer state and epoch rebuilds may have mapped
	// indexes; drop every map until a reader or an append needs it (lazy
	// indexes): 100,000 partitions loaded must not hold 200,000 maps. What
	// was written through them is fsynced by the next flush.
	for _, s := range segs {
		if err := errors.Join(s.offsetIdx.unmap(), s.timeIdx.unmap()); err != nil {
			closeSegments(segs)
			return nil, fmt.Errorf("open log %s: %w", dir, err)
		}
	}
	l.lastFlushMs.Store(active.created.UnixMilli())
	logger.Debug("loaded log", "dir", dir, "segments", len(segs), "log_start_offset", logStart,
		"log_end_offset", leo, "clean_shutdown", hadCleanShutdown)
	return l, nil
}

func closeSegments(segs []*segment) {
	for _, s := range segs {
		s.close()
	}
}

// parseSegmentBase reads the base offset from a "%020d.<suffix>" file name.
func parseSegmentBase(name string) (int64, bool) {
	i := strings.IndexByte(name, '.')
	if i != 20 {
		return 0, false
	}
	n, err := strconv.ParseInt(name[:i], 10, 64)
	return n, err == nil && n >= 0
}

// loadSegments cleans up temporary files, completes swaps, and opens every
// segment. Indexes that are missing are rebuilt, and so are the active
// segment's when they fail their sanity check, except in segments the crash
// recovery will rescan anyway.
func (l *Log) loadSegments(cfg Config, hadCleanShutdown bool, recoveryPoint int64, entries []os.DirEntry, swapped []int64) ([]*segment, error) {
	present := make(map[string]bool, len(entries))
	for _, e := range entries {
		present[e.Name()] = true
	}
	var bases []int64
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() {
			continue
		}
		base, ok := parseSegmentBase(name)
		if !ok {
			continue
		}
		switch filepath.Ext(name) {
		case logFileSuffix:
			bases = append(bases, base)
		case indexFileSuffix, timeIndexFileSuffix, txnIndexFileSuffix:
			if !present[fmt.Sprintf("%020d%s", base, logFileSuffix)] {
				l.logger.Warn("deleting index without segment", "dir", l.dir, "file", name)
				if err := os.Remove(filepath.Join(l.dir, name)); err != nil {
					return nil, fmt.Errorf("delete orphan index: %w", err)
				}
			}
		}
	}
	slices.Sort(bases)
	segs := make([]*segment, 0, len(bases))
	for i, base := range bases {
		idxName := fmt.Sprintf("%020d%s", base, indexFileSuffix)
		timeIdxName := fmt.Sprintf("%020d%s", base, timeIndexFileSuffix)
		indexesPresent := present[idxName] && present[timeIdxName]
		seg, err := openListedSegment(l.dir, base, cfg, 0, l.files, present[fmt.Sprintf("%020d%s", base, txnIndexFileSuffix)])
		if err != nil {
			return segs, err
		}
		segs = append(segs, seg)
		if !hadCleanShutdown && (i+1 == len(bases) || bases[i+1] > recoveryPoint) {
			continue // recoverSegments rescans it
		}
		var reason error
		switch {
		case !indexesPresent:
			reason = errors.New("index files missing")
		case i == len(bases)-1:
			// The active segment: appends will write to its indexes.
			reason = errors.Join(seg.offsetIdx.sanityCheck(seg.size.Load()), seg.timeIdx.sanityCheck(), seg.txnIdx.sanityCheck())
		}
		if reason == nil {
			continue
		}
		l.logger.Warn("rebuilding segment indexes", "dir", l.dir, "base_offset", base, "reason", reason)
		if _, _, err := seg.recover(); err != nil {
			return segs, err
		}
	}
	// A completed swap replaces the segments whose offsets it covers.
	for _, base := range swapped {
		i := slices.IndexFunc(segs, func(s *segment) bool { return s.baseOffset == base })
		if i < 0 {
			continue
		}
		next, err := segs[i].readNextOffset()
		if err != nil {
			return segs, err
		}
		kept := segs[:0]
		for _, s := range segs {
			if s.baseOffset > base && s.baseOffset < next {
				if err := s.closeAndDelete(); err != nil {
					return kept, err
				}
				continue
			}
			kept = append(kept, s)
		}
		segs = kept
	}
	return segs, nil
}

// removeTempFilesAndCompleteSwaps deletes .deleted and .cleaned files and
// renames .log.swap files into place (dropping their stale indexes and all
// index swaps, which are rebuilt). It returns the directory's entries
// afterwards (listed again only if it changed them) and the swapped-in base
// offsets.
func (l *Log) removeTempFilesAndCompleteSwaps() ([]os.DirEntry, []int64, error) {
	entries, err := os.ReadDir(l.dir)
	if err != nil {
		return nil, nil, fmt.Errorf("list log dir: %w", err)
	}
	changed := false
	var swapped []int64
	for _, e := range entries {
		name := e.Name()
		path := filepath.Join(l.dir, name)
		if e.IsDir() {
			continue
		}
		switch {
		case strings.HasSuffix(name, deletedFileSuffix), strings.HasSuffix(name, cleanedFileSuffix):
			if err := os.Remove(path); err != nil {
				return nil, nil, fmt.Errorf("delete leftover file: %w", err)
			}
			changed = true
		case strings.HasSuffix(name, logFileSuffix+swapFileSuffix):
			base, ok := parseSegmentBase(name)
			if !ok {
				continue
			}
			l.logger.Info("completing segment swap", "dir", l.dir, "file", name)
			if err := os.Rename(path, strings.TrimSuffix(path, swapFileSuffix)); err != nil {
				return nil, nil, fmt.Errorf("complete swap: %w", err)
			}
			for _, suffix := range []string{indexFileSuffix, timeIndexFileSuffix} {
				if err := os.Remove(segmentFileName(l.dir, base, suffix)); err != nil && !errors.Is(err, os.ErrNotExist) {
					return nil, nil, fmt.Errorf("delete stale index: %w", err)
				}
			}
			swapped = append(swapped, base)
			changed = true
		case strings.HasSuffix(name, swapFileSuffix):
			if err := os.Remove(path); err != nil {
				return nil, nil, fmt.Errorf("delete index swap: %w", err)
			}
			changed = true
		}
	}
	if changed {
		if entries, err = os.ReadDir(l.dir); err != nil {
			return nil, nil, fmt.Errorf("list log dir: %w", err)
		}
	}
	return entries, swapped, nil
}

// recoverSegments rescans the segments from the one holding the recovery
// point on (Kafka's LogLoader.recoverLog). At the first segment that loses
// bytes, every later segment is deleted: it was written after the damage.
func (l *Log) recoverSegments(segs []*segment, recoveryPoint int64) ([]*segment, error) {
	start := max(floorSegment(segs, recoveryPoint), 0)
	for i := start; i < len(segs); i++ {
		truncated, reason, err := segs[i].recover()
		if err != nil {
			return segs, err
		}
		if truncated == 0 {
			continue
		}
		l.logger.Warn("truncated invalid bytes during recovery", "dir", l.dir, "base_offset", segs[i].baseOffset,
			"file", segs[i].logPath, "position", segs[i].size.Load(), "bytes", truncated, "reason", reason)
		for _, s := range segs[i+1:] {
			l.logger.Warn("deleting segment after recovery truncation", "dir", l.dir, "base_offset", s.baseOffset)
			if err := s.closeAndDelete(); err != nil {
				return segs[:i+1], err
			}
		}
		return segs[:i+1], nil
	}
	return segs, nil
}

// recoverTornTail validates the active segment's batches after its last
// offset index entry — about index.interval.bytes, whatever the segment's
// size — and recovers the segment when they are not whole, valid batches up
// to its end. After a clean shutdown this is the only check of the data: a
// tail cut or damaged after the shutdown would otherwise hide the segment's
// batches behind garbage and let the next append follow it. A valid tail
// gives the log end offset too (ok); after a recovery it is to be read.
func (l *Log) recoverTornTail(active *segment) (logEnd int64, ok bool, err error) {
	next, reason, err := active.validateTail()
	if err != nil || reason == nil {
		return next, err == nil, err
	}
	truncated, _, err := active.recover()
	if err != nil {
		return 0, false, err
	}
	l.logger.Warn("truncated invalid tail of the active segment after a clean shutdown", "dir", l.dir,
		"base_offset", active.baseOffset, "position", active.size.Load(), "bytes", truncated, "reason", reason)
	return 0, false, nil
}

// validateTail returns why the segment's tail (from its last offset index
// entry to its size) is not a run of whole batches with valid CRCs, or nil
// when it is, with the offset after the last batch. err is an I/O error.
func (s *segment) validateTail() (next int64, reason, err error) {
	_, start, err := s.offsetIdx.lastEntry()
	if err != nil {
		return 0, nil, err
	}
	next = s.baseOffset
	end := s.size.Load()
	sc, err := s.scanner(start, end)
	if err != nil {
		return 0, nil, err
	}
	defer sc.release()
	for sc.next() {
		b, err := sc.batch()
		if err != nil {
			return 0, nil, fmt.Errorf("segment %s: %w", s.logPath, err)
		}
		if err := validateBatch(b, sc.hdr); err != nil {
			return 0, err, nil
		}
		next = sc.hdr.NextOffset()
	}
	switch {
	case sc.err != nil && errors.Is(sc.err, errCorruptBatch):
		return 0, sc.err, nil
	case sc.err != nil:
		return 0, nil, fmt.Errorf("segment %s: %w", s.logPath, sc.err)
	case sc.partial || sc.pos != end:
		return 0, fmt.Errorf("torn batch at position %d of %d", sc.pos, end), nil
	}
	if start > 0 && next == s.baseOffset {
		// No batch after the last index entry: an index entry names a
		// batch, so the index is wrong; let the log end be scanned for.
		return 0, errors.New("no batch at the last offset index entry"), nil
	}
	return next, nil, nil
}
