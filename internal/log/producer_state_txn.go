package log

import (
	"encoding/binary"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"gregor/internal/record"
)

// appendOrigin is Kafka's AppendOrigin: who wrote a batch decides how much
// of it the producer state checks.
type appendOrigin int8

const (
	// originClient is a producer's Produce request: epoch, sequence,
	// duplicate and transaction state checks.
	originClient appendOrigin = iota
	// originCoordinator is a batch from the group or transaction
	// coordinator (markers, transactional offset commits): epochs are
	// checked, sequences are not (coordinators write none).
	originCoordinator
	// originReplication is a follower's fetch or log recovery: nothing is
	// checked, the leader already did.
	originReplication
)

// Control record types (Kafka's ControlRecordType) of end transaction
// markers; the key of a control record is version int16 (0) and type int16.
const (
	controlTypeAbort  = 0
	controlTypeCommit = 1
)

// endTxnMarker is the end transaction marker of a control batch (Kafka's
// EndTransactionMarker): its value is version int16 (0) and the
// coordinator epoch int32.
type endTxnMarker struct {
	commit           bool
	coordinatorEpoch int32
	// transactionVersion comes with the WriteTxnMarkers request, not from
	// the log: 2 (KIP-890) wants a bumped producer epoch. Replicated and
	// recovered markers have 0.
	transactionVersion int16
}

// parseEndTxnMarker reads the marker of control batch b. ok is false for an
// empty control batch (the cleaner removed its record) and for control
// records that are not transaction markers.
func parseEndTxnMarker(b []byte) (m endTxnMarker, ok bool, err error) {
	_, recs, err := record.ReadRecords(b)
	if err != nil {
		return endTxnMarker{}, false, fmt.Errorf("read control batch: %w", err)
	}
	if len(recs) == 0 {
		return endTxnMarker{}, false, nil
	}
	key, value := recs[0].Key, recs[0].Value
	if len(key) < 4 {
		return endTxnMarker{}, false, fmt.Errorf("%w: control record key of %d bytes", record.ErrCorruptMessage, len(key))
	}
	switch int16(binary.BigEndian.Uint16(key[2:])) {
	case controlTypeAbort, controlTypeCommit:
	default:
		return endTxnMarker{}, false, nil
	}
	if len(value) < 6 {
		return endTxnMarker{}, false, fmt.Errorf("%w: end transaction marker of %d bytes", record.ErrCorruptMessage, len(value))
	}
	return endTxnMarker{
		commit:           int16(binary.BigEndian.Uint16(key[2:])) == controlTypeCommit,
		coordinatorEpoch: int32(binary.BigEndian.Uint32(value[2:])),
	}, true, nil
}

// markerOf returns the marker of batch b (header h) when it is a control
// batch of a producer, else nil.
func markerOf(b []byte, h record.BatchHeader) (*endTxnMarker, error) {
	if !h.IsControl() || h.ProducerID < 0 {
		return nil, nil
	}
	m, ok, err := parseEndTxnMarker(b)
	if err != nil || !ok {
		return nil, err
	}
	return &m, nil
}

// BuildTxnMarker builds the control batch of an end transaction marker as
// the transaction coordinator writes it (Kafka's
// MemoryRecords.withEndTransactionMarker): producer id and epoch, no
// sequence, transactional and control flags, one record whose key is the
// control type and whose value the coordinator epoch, at timestamp ts.
func BuildTxnMarker(producerID int64, producerEpoch int16, coordinatorEpoch int32, commit bool, ts int64) ([]byte, error) {
	controlType := uint16(controlTypeAbort)
	if commit {
		controlType = controlTypeCommit
	}
	key := binary.BigEndian.AppendUint16(binary.BigEndian.AppendUint16(nil, 0), controlType)
	value := binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint16(nil, 0), uint32(coordinatorEpoch))
	b := record.NewBuilder(record.BuilderOptions{ProducerID: producerID, ProducerEpoch: producerEpoch,
		BaseSequence: record.NoSequence, Transactional: true, Control: true, PartitionLeaderEpoch: -1})
	b.Append(ts, key, value, nil)
	out, err := b.Build()
	if err != nil {
		return nil, fmt.Errorf("build transaction marker: %w", err)
	}
	return out, nil
}

// completedTxn is a transaction a marker ended (Kafka's CompletedTxn).
type completedTxn struct {
	producerID  int64
	firstOffset int64
	lastOffset  int64 // the marker's offset
	aborted     bool
}

// txnMetadata is an open transaction (lastOffset -1) or a completed one
// whose marker is not yet below the high watermark (Kafka's TxnMetadata).
type txnMetadata struct {
	producerID  int64
	firstOffset int64
	lastOffset  int64
}

// txnTracker holds the transactions that keep the last stable offset back
// (Kafka's ProducerStateManager ongoingTxns and unreplicatedTxns), ordered by
// first offset. Appends change it under the log's append lock; fetches read
// it under its own lock only, so that they never wait for an append.
type txnTracker struct {
	mu           sync.Mutex
	ongoing      []txnMetadata
	unreplicated []txnMetadata
	// n counts both lists, so that logs without transactions answer
	// without the lock.
	n atomic.Int32
}

func insertByFirstOffset(s []txnMetadata, t txnMetadata) []txnMetadata {
	i, _ := slices.BinarySearchFunc(s, t.firstOffset, func(x txnMetadata, off int64) int {
		switch {
		case x.firstOffset < off:
			return -1
		case x.firstOffset > off:
			return 1
		}
		return 0
	})
	return slices.Insert(s, i, t)
}

func (t *txnTracker) count() {
	t.n.Store(int32(len(t.ongoing) + len(t.unreplicated)))
}

// begin records a transaction opened at firstOffset.
func (t *txnTracker) begin(producerID, firstOffset int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.ongoing = insertByFirstOffset(t.ongoing, txnMetadata{producerID: producerID, firstOffset: firstOffset, lastOffset: -1})
	t.count()
}

// lastStableOffset is the last stable offset once c's marker is written
// (Kafka's ProducerStateManager.lastStableOffset): the first offset of the
// oldest other open transaction, else the offset after the marker.
func (t *txnTracker) lastStableOffset(c completedTxn) int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, o := range t.ongoing {
		if o.producerID != c.producerID {
			return o.firstOffset
		}
	}
	return c.lastOffset + 1
}

// complete moves c's transaction from open to completed; it stays until the
// high watermark passes its marker (Kafka's completeTxn).
func (t *txnTracker) complete(c completedTxn, highWatermark int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.ongoing = slices.DeleteFunc(t.ongoing, func(o txnMetadata) bool {
		return o.producerID == c.producerID && o.firstOffset == c.firstOffset
	})
	t.pruneLocked(highWatermark)
	if c.lastOffset >= highWatermark {
		t.unreplicated = insertByFirstOffset(t.unreplicated, txnMetadata{producerID: c.producerID, firstOffset: c.firstOffset, lastOffset: c.lastOffset})
	}
	t.count()
}

// pruneLocked forgets completed transactions whose marker is below the high
// watermark (Kafka's onHighWatermarkUpdated).
func (t *txnTracker) pruneLocked(highWatermark int64) {
	t.unreplicated = slices.DeleteFunc(t.unreplicated, func(u txnMetadata) bool { return u.lastOffset < highWatermark })
}

// firstUnstableOffset is the first offset of the oldest transaction that is
// open or whose marker is not yet replicated (Kafka's firstUnstableOffset).
func (t *txnTracker) firstUnstableOffset(highWatermark int64) (int64, bool) {
	if t.n.Load() == 0 {
		return 0, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.pruneLocked(highWatermark)
	t.count()
	first, ok := int64(0), false
	if len(t.ongoing) > 0 {
		first, ok = t.ongoing[0].firstOffset, true
	}
	if len(t.unreplicated) > 0 && (!ok || t.unreplicated[0].firstOffset < first) {
		first, ok = t.unreplicated[0].firstOffset, true
	}
	return first, ok
}

// ongoingTxns returns the open transactions, oldest first.
func (t *txnTracker) ongoingTxns() []txnMetadata {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.ongoing)
}

// reset forgets every transaction (the state is being reloaded).
func (t *txnTracker) reset() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.ongoing, t.unreplicated = nil, nil
	t.count()
}

// completeTxnLocked finishes a transaction a marker in seg ended (Kafka's
// UnifiedLog.append after the write): an abort is added to seg's
// transaction index with the last stable offset it leaves, then the
// transaction stops holding the last stable offset back once replicated.
// The caller holds mu.
func (l *Log) completeTxnLocked(seg *segment, c completedTxn) error {
	ps := l.producers
	if c.aborted {
		a := AbortedTxn{ProducerID: c.producerID, FirstOffset: c.firstOffset, LastOffset: c.lastOffset,
			LastStableOffset: ps.txns.lastStableOffset(c)}
		if err := seg.txnIdx.append(a); err != nil {
			return l.checkIO(fmt.Errorf("index aborted transaction in %s: %w", l.dir, err))
		}
	}
	ps.txns.complete(c, l.highWatermark.Load())
	return nil
}

// applyProducerBatchesLocked records the producer batches of records, just
// written to seg, in the producer state, unchecked (a follower's append;
// Kafka's AppendOrigin.REPLICATION), completing the transactions their
// markers end.
func (l *Log) applyProducerBatchesLocked(seg *segment, records []byte) error {
	for rest := records; len(rest) > 0; {
		h, err := record.ParseHeader(rest)
		if err != nil || len(rest) < h.Size() {
			return nil
		}
		if err := l.applyProducerBatchLocked(seg, rest[:h.Size()], h); err != nil {
			return err
		}
		rest = rest[h.Size():]
	}
	return nil
}

// applyProducerBatchLocked records one written batch in the producer state.
func (l *Log) applyProducerBatchLocked(seg *segment, b []byte, h record.BatchHeader) error {
	if h.ProducerID < 0 {
		return nil
	}
	marker, err := markerOf(b, h)
	if err != nil {
		// A marker that cannot be read was still written (it passed its
		// CRC); treat it as Kafka treats an empty control batch.
		l.logger.Warn("unreadable transaction marker", "dir", l.dir, "offset", h.BaseOffset, "err", err)
	}
	if c, ok := l.producers.update(h, marker); ok {
		return l.completeTxnLocked(seg, c)
	}
	return nil
}

// FirstUnstableOffset is the first offset of the oldest transaction that is
// open, or whose marker the ISR does not have yet; ok is false when there is
// none (Kafka's UnifiedLog.firstUnstableOffset). It is never below the log
// start offset.
func (l *Log) FirstUnstableOffset() (offset int64, ok bool) {
	ps := l.producers
	if ps == nil {
		return 0, false
	}
	off, ok := ps.txns.firstUnstableOffset(l.highWatermark.Load())
	if !ok {
		return 0, false
	}
	return max(off, l.logStartOffset.Load()), true
}

// LastStableOffset bounds what read_committed consumers read: the first
// unstable offset when it is below the high watermark, else the high
// watermark (Kafka's UnifiedLog.lastStableOffset).
func (l *Log) LastStableOffset() int64 {
	hw := l.highWatermark.Load()
	if off, ok := l.FirstUnstableOffset(); ok && off < hw {
		return off
	}
	return hw
}
