package log

import (
	"errors"
	"fmt"
	"time"

	"gregor/internal/record"
)

// AppendInfo describes what an append wrote.
type AppendInfo struct {
	FirstOffset, LastOffset int64
	// MaxTimestamp is the largest batch timestamp and OffsetOfMaxTimestamp the
	// last offset of its batch (Kafka's shallow offset); -1 without timestamps.
	MaxTimestamp, OffsetOfMaxTimestamp int64
	// LogAppendTime is the broker time stamped on the batches, or -1.
	LogAppendTime int64
	NumRecords    int
	Bytes         int
	// RecordErrors names rejected records when validation fails on them.
	RecordErrors []record.RecordError
	// Duplicate reports an idempotent producer's retry of a batch already in
	// the log: nothing was written, the offsets are the original batch's.
	Duplicate bool
}

// AppendAsLeader validates a producer's records and assigns them offsets from
// the log end offset, under the append lock so that offsets are handed out in
// write order (Kafka's UnifiedLog.append with origin CLIENT). The records are
// changed in place unless the validator rebuilt them.
//
// A batch with a producer id is then checked against the producer state
// (producer_state.go): a duplicate of one of the producer's last five
// batches is not written, and the answer carries the original batch's
// offsets, with its max timestamp as LogAppendTime, as Kafka answers;
// a sequence gap is ErrOutOfOrderSequence, an old epoch
// ErrInvalidProducerEpoch, a plain batch from a producer with an open
// transaction ErrInvalidTxnState. A transactional batch opens the
// producer's transaction if none is open.
func (l *Log) AppendAsLeader(records []byte, leaderEpoch int32, opts record.ValidateOptions) (AppendInfo, error) {
	return l.appendAsLeader(records, leaderEpoch, opts, nil)
}

// appendAsLeader appends a client's batch; guard, when set, is the
// transaction verification the batch must pass (txn_verification.go).
func (l *Log) appendAsLeader(records []byte, leaderEpoch int32, opts record.ValidateOptions, guard *VerificationGuard) (AppendInfo, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return AppendInfo{}, ErrClosed
	}
	if err := l.OfflineError(); err != nil {
		return AppendInfo{FirstOffset: -1, LastOffset: -1}, err
	}
	_, leo := l.snapshot()
	opts.PartitionLeaderEpoch = leaderEpoch
	opts.Decompression = l.decompression
	res, err := record.ValidateAndAssign(records, leo, opts)
	if err != nil {
		return AppendInfo{RecordErrors: res.RecordErrors, FirstOffset: -1, LastOffset: -1}, fmt.Errorf("append to %s: %w", l.dir, err)
	}
	// Offsets are assigned; the producer state decides, as in Kafka's
	// order, before anything is written.
	h, err := record.ParseHeader(res.Records)
	if err != nil {
		return AppendInfo{FirstOffset: -1, LastOffset: -1}, fmt.Errorf("append to %s: %w", l.dir, err)
	}
	if h.ProducerID >= 0 {
		dup, isDup, err := l.producers.checkClientBatch(h, l.dir)
		if err != nil {
			return AppendInfo{FirstOffset: -1, LastOffset: -1}, fmt.Errorf("append to %s: %w", l.dir, err)
		}
		if !isDup && guard != nil {
			if err := l.producers.checkVerified(h, *guard, l.dir); err != nil {
				return AppendInfo{FirstOffset: -1, LastOffset: -1}, fmt.Errorf("append to %s: %w", l.dir, err)
			}
		}
		if isDup {
			return AppendInfo{
				FirstOffset:          dup.firstOffset(),
				LastOffset:           dup.lastOffset,
				MaxTimestamp:         dup.timestamp,
				OffsetOfMaxTimestamp: dup.lastOffset,
				LogAppendTime:        dup.timestamp,
				Duplicate:            true,
			}, nil
		}
	}
	info := AppendInfo{
		FirstOffset:          res.FirstOffset,
		LastOffset:           res.LastOffset,
		MaxTimestamp:         res.MaxTimestamp,
		OffsetOfMaxTimestamp: res.OffsetOfMaxTimestamp,
		LogAppendTime:        res.LogAppendTime,
		NumRecords:           res.NumRecords,
		Bytes:                len(res.Records),
	}
	if err := l.appendLocked(res.Records, &info); err != nil {
		return info, err
	}
	// Clients cannot write control batches, so no transaction completes.
	l.producers.update(h, nil)
	l.producers.lastMapOffset = info.LastOffset + 1
	return info, nil
}

// AppendAsFollower appends batches that already carry their offsets (from
// the leader, or from the metadata quorum). Each batch is checked for size and
// CRC; the batches must be strictly increasing and start at or after the log
// end offset (gaps are fine: the leader's log may be compacted). A partial
// batch at the end, which a fetch response may carry, is dropped.
func (l *Log) AppendAsFollower(records []byte) (AppendInfo, error) {
	info := AppendInfo{FirstOffset: -1, LastOffset: -1, MaxTimestamp: record.NoTimestamp,
		OffsetOfMaxTimestamp: -1, LogAppendTime: record.NoTimestamp}
	valid := 0
	monotonic := true
	for rest := records; len(rest) > 0; {
		h, err := record.ParseHeader(rest)
		if err != nil {
			if errors.Is(err, record.ErrShortBatch) {
				break
			}
			return info, fmt.Errorf("append to %s: %w", l.dir, err)
		}
		if h.Length < minBatchSize-record.LogOverhead {
			return info, fmt.Errorf("append to %s: %w: batch length %d below the minimum", l.dir, record.ErrCorruptMessage, h.Length)
		}
		if len(rest) < h.Size() {
			break
		}
		batch := rest[:h.Size()]
		if err := validateBatch(batch, h); err != nil {
			return info, fmt.Errorf("append to %s: %w", l.dir, err)
		}
		if h.LastOffsetDelta < 0 {
			return info, fmt.Errorf("append to %s: %w: negative last offset delta", l.dir, record.ErrCorruptMessage)
		}
		if info.FirstOffset < 0 {
			info.FirstOffset = h.BaseOffset
		}
		if info.LastOffset >= h.LastOffset() {
			monotonic = false
		}
		info.LastOffset = h.LastOffset()
		if h.MaxTimestamp > info.MaxTimestamp {
			info.MaxTimestamp, info.OffsetOfMaxTimestamp = h.MaxTimestamp, h.LastOffset()
		}
		info.NumRecords += int(h.NumRecords)
		valid += h.Size()
		rest = rest[h.Size():]
	}
	info.Bytes = valid
	if valid == 0 {
		return info, nil
	}
	if !monotonic {
		return info, fmt.Errorf("append to %s: %w: batches up to offset %d", l.dir, ErrOffsetsOutOfOrder, info.LastOffset)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return info, ErrClosed
	}
	if err := l.OfflineError(); err != nil {
		return info, err
	}
	if _, leo := l.snapshot(); info.FirstOffset < leo {
		return info, fmt.Errorf("append to %s: %w: first offset %d is below the log end offset %d",
			l.dir, ErrUnexpectedAppendOffset, info.FirstOffset, leo)
	}
	if err := l.appendLocked(records[:valid], &info); err != nil {
		return info, err
	}
	segs, _ := l.snapshot()
	if err := l.applyProducerBatchesLocked(segs[len(segs)-1], records[:valid]); err != nil {
		return info, err
	}
	l.producers.lastMapOffset = info.LastOffset + 1
	return info, nil
}

// appendLocked writes validated batches with offsets info.FirstOffset..
// info.LastOffset: roll if the active segment cannot take them, write, index,
// publish the new log end offset, and flush when flush.messages is reached.
func (l *Log) appendLocked(b []byte, info *AppendInfo) error {
	cfg := l.config()
	if len(b) > int(cfg.SegmentBytes) {
		return fmt.Errorf("append to %s: %w: %d bytes, segment.bytes is %d", l.dir, ErrRecordBatchTooLarge, len(b), cfg.SegmentBytes)
	}
	// Epochs are assigned before the bytes are written, as Kafka does: a
	// crash in between leaves an entry past the log end, which loading
	// drops, never a batch whose epoch the cache lacks.
	if err := l.assignBatchEpochsLocked(b); err != nil {
		return fmt.Errorf("append to %s: %w", l.dir, err)
	}
	segs, _ := l.snapshot()
	active := segs[len(segs)-1]
	if active.shouldRoll(cfg, time.Now(), len(b), info.MaxTimestamp, info.LastOffset) {
		if err := l.rollLocked(info.FirstOffset); err != nil {
			return l.failAppendLocked(err)
		}
		segs, _ = l.snapshot()
		active = segs[len(segs)-1]
	}
	newSize, err := active.append(b, info.LastOffset, info.MaxTimestamp, info.OffsetOfMaxTimestamp)
	if err != nil {
		return l.failAppendLocked(fmt.Errorf("append to %s: %w", l.dir, err))
	}
	l.stateMu.Lock()
	active.size.Store(newSize)
	l.leo = info.LastOffset + 1
	l.stateMu.Unlock()

	if info.LastOffset+1-l.recoveryPoint.Load() >= cfg.FlushIntervalMessages {
		if err := l.Flush(); err != nil {
			return fmt.Errorf("append to %s: %w", l.dir, err)
		}
	}
	return nil
}
