package log

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// Retention (Kafka's UnifiedLog.deleteOldSegments) removes whole segments
// from the start of a log, oldest first, and moves the log start offset to
// the first segment kept:
//   - always: segments entirely below the log start offset (raised by
//     DeleteRecords);
//   - with cleanup.policy containing "delete": while the log stays at or
//     above retention.bytes without the segment, and segments whose largest
//     timestamp is older than retention.ms.
//
// A segment holding offsets at or above the high watermark is never deleted,
// so the log start offset never passes it. The active segment is deleted
// like any other when it qualifies: a new empty segment is rolled first, as
// a log always has one. Deleted segments are renamed *.deleted and removed
// after file.delete.delay.ms, so that reads in flight finish.

// DeleteOldSegments applies retention at time now and returns the number of
// segments deleted.
func (l *Log) DeleteOldSegments(now time.Time) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return 0, ErrClosed
	}
	if err := l.OfflineError(); err != nil {
		return 0, err
	}
	n, err := l.deleteLogStartOffsetBreachedLocked()
	cfg := l.config()
	if err != nil || !cfg.DeleteEnabled {
		return n, err
	}
	bySize, err := l.deleteRetentionSizeBreachedLocked(cfg.RetentionBytes)
	n += bySize
	if err != nil {
		return n, err
	}
	byTime, err := l.deleteRetentionMsBreachedLocked(now, cfg.RetentionMs)
	return n + byTime, err
}

// DeleteRecordsBefore is DeleteRecords on this log (Kafka's
// Partition.deleteRecordsOnLeader): offset -1 means the high watermark; an
// offset below zero or above the high watermark is ErrOffsetOutOfRange.
// The log start offset rises to offset (it never goes down), the segments
// entirely below it are deleted, and the new log start offset (the low
// watermark) is returned.
func (l *Log) DeleteRecordsBefore(offset int64) (int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return -1, ErrClosed
	}
	if err := l.OfflineError(); err != nil {
		return -1, err
	}
	hw := l.highWatermark.Load()
	if offset == -1 {
		offset = hw
	}
	if offset < 0 || offset > hw {
		return -1, fmt.Errorf("delete records of %s before %d (high watermark %d): %w", l.dir, offset, hw, ErrOffsetOutOfRange)
	}
	if old := l.logStartOffset.Load(); offset > old {
		l.logStartOffset.Store(offset)
		l.producers.onLogStartOffsetIncremented(offset)
		l.logger.Info("incremented log start offset", "dir", l.dir, "log_start_offset", offset,
			"old_log_start_offset", old, "reason", "client delete records")
		l.truncateEpochsFromStartLocked(offset)
	}
	_, err := l.deleteLogStartOffsetBreachedLocked()
	return l.logStartOffset.Load(), err
}

// deleteLogStartOffsetBreachedLocked deletes the segments whose next
// segment starts at or below the log start offset.
func (l *Log) deleteLogStartOffsetBreachedLocked() (int, error) {
	logStart := l.logStartOffset.Load()
	return l.deleteOldSegmentsLocked("log start offset breach", func(_, next *segment) bool {
		return next != nil && next.baseOffset <= logStart
	})
}

// deleteRetentionSizeBreachedLocked deletes the oldest segments as long as
// the log, without them, still holds at least retention.bytes.
func (l *Log) deleteRetentionSizeBreachedLocked(retentionBytes int64) (int, error) {
	size := l.Size()
	if retentionBytes < 0 || size < retentionBytes {
		return 0, nil
	}
	excess := size - retentionBytes
	return l.deleteOldSegmentsLocked("retention size breach", func(seg, _ *segment) bool {
		n := seg.size.Load()
		if excess-n < 0 {
			return false
		}
		excess -= n
		return true
	})
}

// deleteRetentionMsBreachedLocked deletes the oldest segments whose largest
// timestamp is more than retention.ms before now.
func (l *Log) deleteRetentionMsBreachedLocked(now time.Time, retentionMs int64) (int, error) {
	if retentionMs < 0 {
		return 0, nil
	}
	nowMs := now.UnixMilli()
	return l.deleteOldSegmentsLocked("retention time breach", func(seg, _ *segment) bool {
		return nowMs-seg.largestTimestamp() > retentionMs
	})
}

// deleteOldSegmentsLocked deletes the longest run of oldest segments that
// satisfy deletable (Kafka's deletableSegments and deleteSegments). The
// caller holds mu.
func (l *Log) deleteOldSegmentsLocked(reason string, deletable func(seg, next *segment) bool) (int, error) {
	segs, leo := l.snapshot()
	hw := l.highWatermark.Load()
	var doomed []*segment
	for i, seg := range segs {
		var next *segment
		upperBound := leo
		if i+1 < len(segs) {
			next = segs[i+1]
			upperBound = next.baseOffset
		}
		// Offsets at or above the high watermark stay, so that the log
		// start offset never passes it; and the predicate is asked only
		// about segments that may go (the size rule counts what it takes).
		if hw < upperBound || !deletable(seg, next) {
			break
		}
		if next == nil && seg.size.Load() == 0 {
			break // an empty active segment is already all that is left
		}
		doomed = append(doomed, seg)
	}
	if len(doomed) == 0 {
		return 0, nil
	}
	if len(doomed) == len(segs) {
		// The active segment goes too: roll a new (empty) one first, since
		// a log always has a segment to append to.
		if err := l.rollLocked(leo); err != nil {
			return 0, l.checkIO(fmt.Errorf("roll %s before deleting every segment: %w", l.dir, err))
		}
		segs, _ = l.snapshot()
		if last := doomed[len(doomed)-1]; last == segs[len(segs)-1] {
			doomed = doomed[:len(doomed)-1]
		}
		if len(doomed) == 0 {
			return 0, nil
		}
	}
	kept := slices.Clone(segs[len(doomed):])
	newStart := kept[0].baseOffset
	old := l.logStartOffset.Load()
	// Raise the start before the segments leave the published view, so that
	// no reader finds an offset that is gone inside the range.
	if newStart > old {
		l.logStartOffset.Store(newStart)
	}
	_, leo = l.snapshot()
	l.publishLocked(kept, leo)
	bases := make([]int64, len(doomed))
	for i, s := range doomed {
		bases[i] = s.baseOffset
	}
	l.deleteSegmentsLocked(doomed)
	l.deleteSegmentSnapshotsLocked(doomed)
	l.producers.onLogStartOffsetIncremented(l.logStartOffset.Load())
	l.logger.Info("deleting segments", "dir", l.dir, "reason", reason, "base_offsets", bases,
		"log_start_offset", l.logStartOffset.Load(), "old_log_start_offset", old)
	l.truncateEpochsFromStartLocked(l.logStartOffset.Load())
	return len(doomed), nil
}

// largestTimestamp is the largest batch timestamp in the segment or, when no
// batch carries one, the file's modification time (Kafka's
// LogSegment.largestTimestamp). A file that cannot be examined counts as
// new: retention keeps it.
func (s *segment) largestTimestamp() int64 {
	if ts, _ := s.maxTimestampAndOffset(); ts >= 0 {
		return ts
	}
	st, err := os.Stat(s.logPath)
	if err != nil {
		return math.MaxInt64
	}
	return st.ModTime().UnixMilli()
}

// cleanupLogs is Kafka's LogManager.cleanupLogs: retention for every log
// that has its topic's settings and an online directory. It returns the
// number of segments deleted.
func (m *Manager) cleanupLogs(now time.Time) int {
	m.mu.Lock()
	logs := make(map[TopicPartition]*Log, len(m.logs))
	for tp, ml := range m.logs {
		if ml.claimed && ml.dir.offline() == nil {
			logs[tp] = ml.log
		}
	}
	m.mu.Unlock()
	total := 0
	for tp, l := range logs {
		n, err := l.DeleteOldSegments(now)
		total += n
		if err != nil && !errors.Is(err, ErrClosed) && !errors.Is(err, ErrKafkaStorage) {
			m.logger.Error("retention failed", "partition", tp.String(), "err", err)
		}
	}
	if total > 0 {
		m.logger.Debug("log retention completed", "segments_deleted", total, "took", time.Since(now))
	}
	return total
}

// loadFailed takes a log.dir that failed to load offline (Kafka's loadLogs
// on an IOException): the logs already opened from it are released, and its
// partitions are remembered so that they are not recreated empty elsewhere.
func (m *Manager) loadFailed(d *logDir, err error) {
	d.health.fail(fmt.Errorf("load: %w", err))
	for tp, ml := range m.logs {
		if ml.dir == d {
			ml.log.Close() // offline: releases the files without writing
			delete(m.logs, tp)
		}
	}
	entries, _ := os.ReadDir(d.path)
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		if tp, perr := parseTopicPartition(e.Name()); perr == nil {
			if m.offlinePartitions == nil {
				m.offlinePartitions = map[TopicPartition]string{}
			}
			m.offlinePartitions[tp] = filepath.Join(d.path, e.Name())
		}
	}
}
