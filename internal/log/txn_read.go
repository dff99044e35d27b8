package log

import "fmt"

// CollectAbortedTransactions returns the aborted transactions that overlap
// [startOffset, upperBoundOffset): those whose marker is at or after
// startOffset and whose first offset is below upperBoundOffset (Kafka's
// UnifiedLog.collectAbortedTransactions). The search starts at the segment
// holding startOffset and goes on through later segments, whose markers may
// end transactions that began earlier, until an entry's last stable offset
// reaches upperBoundOffset. The result is never nil.
func (l *Log) CollectAbortedTransactions(startOffset, upperBoundOffset int64) ([]AbortedTxn, error) {
	segs, _ := l.snapshot()
	return collectAbortedTxns(segs, max(floorSegment(segs, startOffset), 0), startOffset, upperBoundOffset)
}

func collectAbortedTxns(segs []*segment, from int, startOffset, upperBoundOffset int64) ([]AbortedTxn, error) {
	out := []AbortedTxn{}
	for _, seg := range segs[from:] {
		found, complete, err := seg.txnIdx.collect(startOffset, upperBoundOffset)
		if err != nil {
			return out, fmt.Errorf("collect aborted transactions of segment %d: %w", seg.baseOffset, err)
		}
		out = append(out, found...)
		if complete {
			break
		}
	}
	return out, nil
}

// AbortedTransactions returns the aborted transactions a read_committed
// consumer needs along with range r, read at fetchOffset (Kafka's
// LocalLog.addAbortedTransactions): those overlapping fetchOffset up to an
// upper bound past the range's last batch, which is the offset of the
// first offset index entry at or after the range's end, else the next
// segment's base offset, else the log end offset. An empty range needs
// none; the result is never nil.
func (l *Log) AbortedTransactions(fetchOffset int64, r FileRange) ([]AbortedTxn, error) {
	if r.ref == nil || r.Size == 0 {
		return []AbortedTxn{}, nil
	}
	seg := r.ref.seg
	segs, leo := l.snapshot()
	i := floorSegment(segs, seg.baseOffset)
	upper := leo
	if i >= 0 && segs[i] == seg && i+1 < len(segs) {
		upper = segs[i+1].baseOffset
	}
	if off, ok := seg.offsetIdx.fetchUpperBoundOffset(r.Position + r.Size); ok {
		upper = off
	}
	from := i
	if from < 0 || segs[from] != seg {
		// The segment was replaced (cleaned) since the read: search from
		// the one holding the fetch offset now.
		from = max(floorSegment(segs, fetchOffset), 0)
	}
	txns, err := collectAbortedTxns(segs, from, fetchOffset, upper)
	if err != nil {
		return txns, l.checkIO(fmt.Errorf("read %s at %d: %w", l.dir, fetchOffset, err))
	}
	return txns, nil
}

// fetchUpperBoundOffset is the offset of the first entry whose position is
// at or after pos (Kafka's OffsetIndex.fetchUpperBoundOffset): an offset
// beyond every batch that ends by pos.
func (x *offsetIndex) fetchUpperBoundOffset(pos int64) (int64, bool) {
	x.rlockMapped()
	defer x.mu.RUnlock()
	n := x.count()
	slot := x.binarySearch(n, pos-1, x.position) + 1
	if slot >= n {
		return 0, false
	}
	return x.baseOffset + x.relOffset(slot), true
}
