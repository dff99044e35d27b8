package log

import (
	"fmt"

	"gregor/internal/record"
)

// AppendAsCoordinator appends one batch that a coordinator built (Kafka's
// UnifiedLog.appendAsLeader with AppendOrigin.COORDINATOR): a transaction
// marker from the transaction coordinator, or a transactional offset commit
// from the group coordinator. Unlike a client's batch it may be a control
// batch and carry a producer id without sequence numbers. The batch is
// checked (size, CRC), given offsets from the log end in place, stamped with
// opts.Now on LogAppendTime topics, and checked against the producer state:
// the producer epoch (ErrInvalidProducerEpoch) and, for markers, the
// coordinator epoch (ErrTransactionCoordinatorFenced); transactionVersion is
// the marker's transaction version (2 for KIP-890, which wants a bumped
// producer epoch). A marker for a producer without an open transaction is
// written all the same, as Kafka does; one that ends an aborted transaction
// adds it to the active segment's transaction index.
func (l *Log) AppendAsCoordinator(records []byte, leaderEpoch int32, transactionVersion int16, opts record.ValidateOptions) (AppendInfo, error) {
	failed := AppendInfo{FirstOffset: -1, LastOffset: -1}
	h, err := record.ParseHeader(records)
	if err != nil {
		return failed, fmt.Errorf("append to %s: %w", l.dir, err)
	}
	if len(records) != h.Size() {
		return failed, fmt.Errorf("append to %s: %w: a coordinator appends exactly one batch (%d bytes, the batch is %d)",
			l.dir, record.ErrInvalidRecord, len(records), h.Size())
	}
	if err := validateBatch(records, h); err != nil {
		return failed, fmt.Errorf("append to %s: %w", l.dir, err)
	}
	if opts.MaxMessageBytes > 0 && len(records) > int(opts.MaxMessageBytes) {
		return failed, fmt.Errorf("append to %s: %w: the record batch is %d bytes, max.message.bytes is %d",
			l.dir, record.ErrMessageTooLarge, len(records), opts.MaxMessageBytes)
	}
	if h.LastOffsetDelta < 0 || h.NumRecords < 0 || int64(h.LastOffsetDelta)+1 < int64(h.NumRecords) {
		return failed, fmt.Errorf("append to %s: %w: inconsistent offset range [0, %d] for %d records",
			l.dir, record.ErrInvalidRecord, h.LastOffsetDelta, h.NumRecords)
	}
	marker, err := markerOf(records, h)
	if err != nil {
		return failed, fmt.Errorf("append to %s: %w", l.dir, err)
	}
	if marker != nil {
		marker.transactionVersion = transactionVersion
	}

	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return failed, ErrClosed
	}
	if err := l.OfflineError(); err != nil {
		return failed, err
	}
	_, leo := l.snapshot()
	h.BaseOffset = leo
	if _, _, err := l.producers.check(h, marker, originCoordinator, l.dir); err != nil {
		return failed, fmt.Errorf("append to %s: %w", l.dir, err)
	}
	record.SetBaseOffset(records, leo)
	record.SetPartitionLeaderEpoch(records, leaderEpoch)
	h.PartitionLeaderEpoch = leaderEpoch
	info := AppendInfo{
		FirstOffset:          leo,
		LastOffset:           h.LastOffset(),
		MaxTimestamp:         h.MaxTimestamp,
		OffsetOfMaxTimestamp: h.LastOffset(),
		LogAppendTime:        record.NoTimestamp,
		NumRecords:           int(h.NumRecords),
		Bytes:                len(records),
	}
	if opts.LogAppendTime {
		record.SetLogAppendTime(records, opts.Now)
		h.MaxTimestamp = opts.Now
		info.MaxTimestamp, info.LogAppendTime = opts.Now, opts.Now
	}
	if err := l.appendLocked(records, &info); err != nil {
		return info, err
	}
	segs, _ := l.snapshot()
	if c, ok := l.producers.update(h, marker); ok {
		if err := l.completeTxnLocked(segs[len(segs)-1], c); err != nil {
			return info, err
		}
	}
	l.producers.lastMapOffset = info.LastOffset + 1
	return info, nil
}
