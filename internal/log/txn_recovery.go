package log

import (
	"math"
	"slices"
	"time"
)

// rebuildTxnIndexes refills the transaction indexes of the segments that
// recovery rescanned (Kafka's LogLoader.recoverSegment, which hands
// LogSegment.recover the producer state as of the segment's base offset): an
// abort marker's entry needs the transaction's first offset and the
// transactions open at that time, which may lie in older segments. A
// producer state of its own is loaded from the newest snapshot at or below
// the first such segment, brought up to its base by replay, then replayed
// through the rescanned segments, each abort going into its segment's index.
func (l *Log) rebuildTxnIndexes(segs []*segment, logStartOffset int64) error {
	first := slices.IndexFunc(segs, func(s *segment) bool { return s.txnIndexStale })
	if first < 0 {
		return nil
	}
	last := len(segs) - 1
	for !segs[last].txnIndexStale {
		last--
	}
	ps, err := newProducerStateManager(l.dir, l.config().ProducerIDExpirationMs)
	if err != nil {
		return err
	}
	base := segs[first].baseOffset
	if err := ps.loadSnapshotAtOrBelow(base, logStartOffset, time.Now().UnixMilli()); err != nil {
		return err
	}
	// Completed transactions need not wait for a high watermark here.
	const replicated = math.MaxInt64
	for i := 0; i < first; i++ {
		seg := segs[i]
		if i+1 < len(segs) && segs[i+1].baseOffset <= ps.lastMapOffset {
			continue
		}
		if err := replayProducerBatches(ps, seg, max(seg.baseOffset, ps.lastMapOffset), base, replicated, nil); err != nil {
			return err
		}
	}
	for i := first; i <= last; i++ {
		seg := segs[i]
		var onAbort func(AbortedTxn) error
		if seg.txnIndexStale {
			onAbort = seg.txnIdx.append
		}
		if err := replayProducerBatches(ps, seg, max(seg.baseOffset, logStartOffset), math.MaxInt64, replicated, onAbort); err != nil {
			return err
		}
		seg.txnIndexStale = false
	}
	return nil
}
