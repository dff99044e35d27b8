package log

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"
)

// How a Log keeps its producer state (producer_state.go) in step with its
// segments, as Kafka's UnifiedLog and LogLoader do:
//
//   - open: stray snapshots (no segment at their offset, except the newest
//     one above every segment, which a clean shutdown wrote) are deleted;
//     then the state is loaded from the newest snapshot at or below the log
//     end and the batches from there to the log end are replayed. A log
//     that shut down cleanly but has no snapshot at all (written before
//     producer state existed) gets empty snapshots instead of a full scan
//     (Kafka's upgrade shortcut).
//   - roll: a snapshot at the new segment's base offset, fsynced by the
//     background flush of the rolled segment, off the append lock.
//   - close (clean shutdown): a snapshot at the log end, fsynced.
//   - truncation: the state is rebuilt from the newest snapshot left.
//   - segment deletion (retention, compaction): the deleted segments'
//     snapshots go too; after each recovery-point checkpoint the snapshots
//     below min(the segment before the active one, the segment before the
//     recovery point) are deleted, so the last two segments keep theirs.

// loadProducerStateLocked builds the producer state of a log being opened.
func (l *Log) loadProducerStateLocked(hadCleanShutdown bool, listing []os.DirEntry) error {
	ps := newProducerStateManagerListed(l.dir, l.config().ProducerIDExpirationMs, listing)
	l.producers = ps
	segs, leo := l.snapshot()
	bases := make([]int64, len(segs))
	for i, s := range segs {
		bases[i] = s.baseOffset
	}
	if err := ps.removeStraySnapshots(bases); err != nil {
		return err
	}
	return l.rebuildProducerStateLocked(leo, hadCleanShutdown, time.Now())
}

// rebuildProducerStateLocked makes the producer state reflect the log up to
// lastOffset (Kafka's UnifiedLog.rebuildProducerState). The caller holds mu
// (or owns the log being opened).
func (l *Log) rebuildProducerStateLocked(lastOffset int64, reloadFromCleanShutdown bool, now time.Time) error {
	ps := l.producers
	segs, _ := l.snapshot()
	// The snapshots worth having: the last two segments' bases and the end.
	var offsetsToSnapshot []int64
	if len(segs) > 1 {
		offsetsToSnapshot = append(offsetsToSnapshot, segs[len(segs)-2].baseOffset)
	}
	offsetsToSnapshot = append(offsetsToSnapshot, segs[len(segs)-1].baseOffset, lastOffset)

	if _, ok := ps.latestSnapshot(); !ok && reloadFromCleanShutdown {
		for _, off := range offsetsToSnapshot {
			ps.lastMapOffset = off
			if _, err := ps.takeSnapshot(true); err != nil {
				return err
			}
		}
		return nil
	}
	logStart := l.logStartOffset.Load()
	isEmptyBeforeTruncation := ps.isEmpty() && ps.lastMapOffset >= lastOffset
	if err := ps.truncateAndReload(logStart, lastOffset, now.UnixMilli()); err != nil {
		return err
	}
	if lastOffset > ps.lastMapOffset && !isEmptyBeforeTruncation {
		for i, seg := range segs {
			if i+1 < len(segs) && segs[i+1].baseOffset <= ps.lastMapOffset {
				continue
			}
			if seg.baseOffset >= lastOffset {
				break
			}
			start := max(seg.baseOffset, ps.lastMapOffset, logStart)
			ps.lastMapOffset = start
			if slices.Contains(offsetsToSnapshot, seg.baseOffset) {
				if _, err := ps.takeSnapshot(true); err != nil {
					return err
				}
			}
			if err := replayProducerBatches(ps, seg, start, lastOffset, l.highWatermark.Load(), nil); err != nil {
				return err
			}
		}
	}
	ps.lastMapOffset = lastOffset
	_, err := ps.takeSnapshot(true)
	return err
}

// replayProducerBatches applies the producer batches of seg in [from, to)
// without checks (Kafka's loadProducersFromRecords). Transactions that
// markers end are completed; onAbort, if set, hears of each aborted one
// first, with the last stable offset it left (segment recovery indexes
// them).
func replayProducerBatches(ps *producerStateManager, seg *segment, from, to, highWatermark int64, onAbort func(AbortedTxn) error) error {
	first, found, err := seg.translateOffset(from, seg.size.Load())
	if err != nil {
		return fmt.Errorf("rebuild producer state: %w", err)
	}
	if !found {
		return nil
	}
	sc, err := seg.scanner(first.pos, seg.size.Load())
	if err != nil {
		return fmt.Errorf("rebuild producer state: %w", err)
	}
	defer sc.release()
	for sc.next() {
		h := sc.hdr
		if h.BaseOffset >= to {
			break
		}
		if h.ProducerID < 0 {
			continue
		}
		var marker *endTxnMarker
		if h.IsControl() {
			b, err := sc.batch()
			if err != nil {
				return fmt.Errorf("rebuild producer state from segment %d: %w", seg.baseOffset, err)
			}
			// An unreadable marker is skipped, as an empty control batch.
			marker, _ = markerOf(b, h)
		}
		c, ok := ps.update(h, marker)
		if !ok {
			continue
		}
		if c.aborted && onAbort != nil {
			a := AbortedTxn{ProducerID: c.producerID, FirstOffset: c.firstOffset, LastOffset: c.lastOffset, LastStableOffset: ps.txns.lastStableOffset(c)}
			if err := onAbort(a); err != nil {
				return err
			}
		}
		ps.txns.complete(c, highWatermark)
	}
	if sc.err != nil {
		return fmt.Errorf("rebuild producer state from segment %d: %w", seg.baseOffset, sc.err)
	}
	return nil
}

// RemoveExpiredProducers forgets the producers without a batch for
// producer.id.expiration.ms (Kafka's removeExpiredProducers) and returns how
// many.
func (l *Log) RemoveExpiredProducers(now time.Time) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return 0
	}
	return l.producers.removeExpired(now.UnixMilli())
}

// ActiveProducers is the number of producer ids the partition remembers.
func (l *Log) ActiveProducers() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.producers.producers)
}

// deleteSnapshotsAfterRecoveryPointCheckpoint deletes the snapshots no
// longer needed (Kafka's method of that name): those below both the segment
// before the active one and the segment before the recovery point.
func (l *Log) deleteSnapshotsAfterRecoveryPointCheckpoint() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed || l.OfflineError() != nil {
		return nil
	}
	segs, _ := l.snapshot()
	twoSegmentsMin := segs[max(len(segs)-2, 0)].baseOffset
	rp := l.recoveryPoint.Load()
	recoveryMin := rp
	if i := lowerSegment(segs, rp); i >= 0 {
		recoveryMin = segs[i].baseOffset
	}
	if err := l.producers.deleteSnapshotsBefore(min(recoveryMin, twoSegmentsMin)); err != nil {
		return l.checkIO(fmt.Errorf("delete producer snapshots of %s: %w", l.dir, err))
	}
	return nil
}

// lowerSegment is the index of the last segment whose base offset is
// strictly below offset, or -1 (Kafka's lowerSegment).
func lowerSegment(segs []*segment, offset int64) int {
	return floorSegment(segs, offset-1)
}

// deleteSegmentSnapshotsLocked deletes the snapshots at the base offsets of
// segments leaving the log (Kafka's deleteProducerSnapshots).
func (l *Log) deleteSegmentSnapshotsLocked(segs []*segment) {
	for _, s := range segs {
		if err := l.producers.deleteSnapshot(s.baseOffset); err != nil {
			l.logger.Warn("deleting producer snapshot failed", "dir", l.dir, "offset", s.baseOffset, "err", err)
		}
	}
}

// removeExpiredProducers runs the expiry over every log and returns the
// number of producers forgotten.
func (m *Manager) removeExpiredProducers(now time.Time) int {
	n := 0
	for _, l := range m.All() {
		n += l.RemoveExpiredProducers(now)
	}
	return n
}

// deleteProducerSnapshots runs deleteSnapshotsAfterRecoveryPointCheckpoint
// on every log, after the recovery points were checkpointed.
func (m *Manager) deleteProducerSnapshots() error {
	var errs []error
	for tp, l := range m.All() {
		if err := l.deleteSnapshotsAfterRecoveryPointCheckpoint(); err != nil && !errors.Is(err, ErrClosed) {
			errs = append(errs, fmt.Errorf("%s: %w", tp, err))
		}
	}
	return errors.Join(errs...)
}

// ProducerInfo is one producer the partition remembers (DescribeProducers).
type ProducerInfo struct {
	ProducerID            int64
	ProducerEpoch         int16
	LastSequence          int32 // -1 when no batch is retained
	LastTimestamp         int64
	CoordinatorEpoch      int32
	CurrentTxnStartOffset int64 // -1 outside a transaction
}

// Producers lists the producers the partition remembers, by producer id.
func (l *Log) Producers() []ProducerInfo {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]ProducerInfo, 0, len(l.producers.producers))
	for _, e := range l.producers.producers {
		info := ProducerInfo{ProducerID: e.producerID, ProducerEpoch: e.epoch, LastSequence: -1,
			LastTimestamp: e.lastTimestamp, CoordinatorEpoch: e.coordinatorEpoch, CurrentTxnStartOffset: e.currentTxnFirstOffset}
		if !e.isEmpty() {
			info.LastSequence = e.lastSeq()
		}
		out = append(out, info)
	}
	slices.SortFunc(out, func(a, b ProducerInfo) int { return cmp.Compare(a.ProducerID, b.ProducerID) })
	return out
}
