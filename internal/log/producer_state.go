package log

import (
	"errors"
	"fmt"
	"math"
	"os"

	"gregor/internal/record"
)

// Producer state is Kafka's ProducerStateManager for one partition: per
// producer id the current epoch and the metadata of its last five batches,
// which is what makes an idempotent producer's retries safe. A leader checks
// every producer batch against it under the append lock, after the batch was
// validated and given offsets and before it is written (Kafka's
// UnifiedLog.analyzeAndValidateProducerState and ProducerAppendInfo):
//
//   - a batch whose epoch and sequence range equal one of the producer's last
//     five batches is a duplicate (a retry of a batch that was written): it is
//     not written again and is answered with the original offsets;
//   - an epoch below the producer's is INVALID_PRODUCER_EPOCH;
//   - at the producer's epoch, the first sequence must follow the last one
//     (MaxInt32 wraps to 0), else OUT_OF_ORDER_SEQUENCE_NUMBER;
//   - a new (higher) epoch must start at sequence 0, else
//     OUT_OF_ORDER_SEQUENCE_NUMBER; this is how an idempotent producer resets
//     its sequences after an error (KIP-360's client-side epoch bump);
//   - an unknown producer id (never seen, expired, or whose batches were all
//     deleted) is accepted at any epoch and sequence: since KIP-360 (Kafka
//     2.5) the broker no longer answers UNKNOWN_PRODUCER_ID on produce.
//
// Transactions (producer_state_txn.go): a producer's first transactional
// batch starts its transaction at that batch's first offset; a plain batch
// while it is open is INVALID_TXN_STATE; the transaction ends with a marker
// (a control batch, COMMIT or ABORT) that the transaction coordinator
// writes (AppendOrigin.COORDINATOR: epochs checked, no sequences), which may
// carry a bumped producer epoch (KIP-890) and must not carry an older
// coordinator epoch than the last one (TRANSACTION_COORDINATOR_FENCED).
//
// Followers and log recovery apply batches and markers without checks
// (Kafka's AppendOrigin.REPLICATION), so that every replica knows the same
// open transactions and so the same last stable offset.
//
// Producers are forgotten after producer.id.expiration.ms without a batch
// (by the batch's max timestamp, as Kafka). They are not forgotten when their
// batches leave the log by retention or DeleteRecords: KIP-360 keeps the
// state so that a quiet producer does not see UNKNOWN_PRODUCER_ID.
//
// Everything here is guarded by the owning Log's append lock (Log.mu).

// numBatchesToRetain is Kafka's ProducerStateEntry.NUM_BATCHES_TO_RETAIN,
// the same as the producer's max.in.flight.requests.per.connection limit
// for idempotence.
const numBatchesToRetain = 5

// Errors of the producer state checks, mapped to Kafka codes at the handler
// boundary.
var (
	// ErrOutOfOrderSequence is OUT_OF_ORDER_SEQUENCE_NUMBER.
	ErrOutOfOrderSequence = errors.New("out of order sequence number")
	// ErrInvalidProducerEpoch is INVALID_PRODUCER_EPOCH: the batch's epoch is
	// older than the producer's (Kafka 2.7+ answers this instead of
	// PRODUCER_FENCED on produce, KIP-588).
	ErrInvalidProducerEpoch = errors.New("invalid producer epoch")
	// ErrInvalidTxnState is INVALID_TXN_STATE: a non-transactional batch
	// from a producer whose transaction is open.
	ErrInvalidTxnState = errors.New("invalid transaction state")
	// ErrTransactionCoordinatorFenced is TRANSACTION_COORDINATOR_FENCED: a
	// marker from a coordinator epoch older than the last marker's.
	ErrTransactionCoordinatorFenced = errors.New("transaction coordinator fenced")
)

// batchMetadata is one appended batch of a producer (Kafka's BatchMetadata).
type batchMetadata struct {
	lastSeq     int32
	lastOffset  int64
	offsetDelta int32
	timestamp   int64 // the batch's max timestamp
}

func (b batchMetadata) firstSeq() int32    { return record.DecrementSequence(b.lastSeq, b.offsetDelta) }
func (b batchMetadata) firstOffset() int64 { return b.lastOffset - int64(b.offsetDelta) }

// producerStateEntry is one producer's state (Kafka's ProducerStateEntry).
type producerStateEntry struct {
	producerID       int64
	epoch            int16
	coordinatorEpoch int32
	lastTimestamp    int64
	// currentTxnFirstOffset is the first offset of the producer's ongoing
	// transaction, -1 for none.
	currentTxnFirstOffset int64
	// batches holds the last n batches, oldest first.
	batches [numBatchesToRetain]batchMetadata
	n       int
}

func newProducerStateEntry(producerID int64) *producerStateEntry {
	return &producerStateEntry{producerID: producerID, epoch: record.NoProducerEpoch,
		coordinatorEpoch: -1, lastTimestamp: record.NoTimestamp, currentTxnFirstOffset: -1}
}

func (e *producerStateEntry) isEmpty() bool { return e.n == 0 }

func (e *producerStateEntry) last() batchMetadata { return e.batches[e.n-1] }

// lastSeq is the last sequence written, NoSequence without batches.
func (e *producerStateEntry) lastSeq() int32 {
	if e.n == 0 {
		return record.NoSequence
	}
	return e.last().lastSeq
}

// lastDataOffset is the last offset written, -1 without batches.
func (e *producerStateEntry) lastDataOffset() int64 {
	if e.n == 0 {
		return -1
	}
	return e.last().lastOffset
}

func (e *producerStateEntry) lastOffsetDelta() int32 {
	if e.n == 0 {
		return 0
	}
	return e.last().offsetDelta
}

// addBatch records an appended batch; a new epoch forgets the old batches.
func (e *producerStateEntry) addBatch(epoch int16, b batchMetadata) {
	if e.epoch != epoch {
		e.n = 0
		e.epoch = epoch
	}
	if e.n == numBatchesToRetain {
		copy(e.batches[:], e.batches[1:])
		e.n--
	}
	e.batches[e.n] = b
	e.n++
	e.lastTimestamp = b.timestamp
}

// findDuplicate returns the retained batch with the same epoch and exact
// sequence range as h (Kafka's ProducerStateEntry.findDuplicateBatch).
func (e *producerStateEntry) findDuplicate(h record.BatchHeader) (batchMetadata, bool) {
	if h.ProducerEpoch != e.epoch {
		return batchMetadata{}, false
	}
	first, last := h.BaseSequence, h.LastSequence()
	for _, b := range e.batches[:e.n] {
		if b.firstSeq() == first && b.lastSeq == last {
			return b, true
		}
	}
	return batchMetadata{}, false
}

// producerStateManager holds a partition's producers, the offset up to which
// they reflect the log (mapEndOffset) and the snapshot files on disk.
type producerStateManager struct {
	dir          string
	expirationMs int64
	producers    map[int64]*producerStateEntry
	// txns are the open and the not yet replicated transactions, which
	// bound the last stable offset.
	txns txnTracker
	// verifications are the producers whose transaction a leader is
	// verifying with the coordinator (txn_verification.go).
	verifications map[int64]*verificationEntry
	// snapshots are the offsets of the .snapshot files in dir, ascending.
	snapshots []int64
	// lastMapOffset is the offset after the last batch the state reflects;
	// lastSnapOffset that of the latest snapshot written or loaded.
	lastMapOffset  int64
	lastSnapOffset int64
}

func newProducerStateManager(dir string, expirationMs int64) (*producerStateManager, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("list producer snapshots: %w", err)
	}
	return newProducerStateManagerListed(dir, expirationMs, entries), nil
}

// newProducerStateManagerListed is newProducerStateManager with the
// directory already listed (a log's load lists it once).
func newProducerStateManagerListed(dir string, expirationMs int64, entries []os.DirEntry) *producerStateManager {
	m := &producerStateManager{dir: dir, expirationMs: expirationMs, producers: map[int64]*producerStateEntry{}}
	m.snapshots = producerSnapshotOffsets(entries)
	return m
}

func (m *producerStateManager) isEmpty() bool { return len(m.producers) == 0 }

// checkClientBatch decides a producer's batch appended as leader (Kafka's
// AppendOrigin.CLIENT); see check.
func (m *producerStateManager) checkClientBatch(h record.BatchHeader, tp string) (dup batchMetadata, isDup bool, err error) {
	return m.check(h, nil, originClient, tp)
}

// check decides a producer batch whose offsets are already assigned
// (h.BaseOffset is its first offset) before it is written, by Kafka's rules
// for its origin (UnifiedLog.analyzeAndValidateProducerState and
// ProducerAppendInfo). It changes nothing. It returns the original batch when
// a client's batch is a duplicate, or the reason to refuse the batch. marker
// is the end transaction marker of a control batch, nil otherwise.
func (m *producerStateManager) check(h record.BatchHeader, marker *endTxnMarker, origin appendOrigin, tp string) (dup batchMetadata, isDup bool, err error) {
	if h.ProducerID < 0 || origin == originReplication {
		return batchMetadata{}, false, nil
	}
	e := m.producers[h.ProducerID]
	current := record.NoProducerEpoch
	coordinatorEpoch := int32(-1)
	ongoing := false
	if e != nil {
		if origin == originClient && !h.IsControl() {
			if d, ok := e.findDuplicate(h); ok {
				return d, true, nil
			}
		}
		current, coordinatorEpoch, ongoing = e.epoch, e.coordinatorEpoch, e.currentTxnFirstOffset >= 0
	}
	if h.IsControl() {
		if marker == nil {
			return batchMetadata{}, false, nil
		}
		return batchMetadata{}, false, checkMarker(h, *marker, current, coordinatorEpoch, ongoing, tp)
	}
	if h.ProducerEpoch < current {
		return batchMetadata{}, false, fmt.Errorf("%w: epoch of producer %d at offset %d in %s is %d, which is smaller than the last seen epoch %d",
			ErrInvalidProducerEpoch, h.ProducerID, h.BaseOffset, tp, h.ProducerEpoch, current)
	}
	if origin == originClient {
		if err := m.checkSequence(h, e, current, tp); err != nil {
			return batchMetadata{}, false, err
		}
	}
	if ongoing && !h.IsTransactional() {
		return batchMetadata{}, false, fmt.Errorf("%w: expected transactional write from producer %d at offset %d in %s",
			ErrInvalidTxnState, h.ProducerID, h.BaseOffset, tp)
	}
	return batchMetadata{}, false, nil
}

// checkSequence is Kafka's ProducerAppendInfo.checkSequence.
func (m *producerStateManager) checkSequence(h record.BatchHeader, e *producerStateEntry, current int16, tp string) error {
	first := h.BaseSequence
	if h.ProducerEpoch != current {
		// A new epoch starts its sequences over; an unknown producer
		// (current == NoProducerEpoch) may start anywhere.
		if first != 0 && current != record.NoProducerEpoch {
			return fmt.Errorf("%w: invalid sequence number for new epoch of producer %d at offset %d in %s: %d (request epoch), %d (seq. number), %d (current producer epoch)",
				ErrOutOfOrderSequence, h.ProducerID, h.BaseOffset, tp, h.ProducerEpoch, first, current)
		}
		return nil
	}
	lastSeq := record.NoSequence
	if e != nil {
		lastSeq = e.lastSeq()
	}
	// With no epoch on record any sequence is accepted (Kafka: the producer's
	// batches may all have been deleted by retention or DeleteRecords).
	if current != record.NoProducerEpoch && !inSequence(lastSeq, first) {
		return fmt.Errorf("%w: out of order sequence number for producer %d at offset %d in %s: %d (incoming seq. number), %d (current end sequence number)",
			ErrOutOfOrderSequence, h.ProducerID, h.BaseOffset, tp, first, lastSeq)
	}
	return nil
}

// checkMarker is Kafka's appendEndTxnMarker checks for a marker from the
// transaction coordinator: the producer epoch (at least the current one; for
// KIP-890 transactions, version 2, strictly above it, except a retry of the
// marker that ended the last transaction) and the coordinator epoch (no
// older than the last marker's, else the coordinator is a zombie).
func checkMarker(h record.BatchHeader, marker endTxnMarker, current int16, coordinatorEpoch int32, ongoing bool, tp string) error {
	invalid := h.ProducerEpoch < current
	if marker.transactionVersion >= 2 {
		invalid = h.ProducerEpoch <= current && !(h.ProducerEpoch == current && !ongoing)
	}
	if invalid {
		return fmt.Errorf("%w: epoch of producer %d at offset %d in %s is %d, which is smaller than the last seen epoch %d (transaction version %d)",
			ErrInvalidProducerEpoch, h.ProducerID, h.BaseOffset, tp, h.ProducerEpoch, current, marker.transactionVersion)
	}
	if coordinatorEpoch > marker.coordinatorEpoch {
		return fmt.Errorf("%w: invalid coordinator epoch for producer %d at offset %d in %s: %d (zombie), %d (current)",
			ErrTransactionCoordinatorFenced, h.ProducerID, h.BaseOffset, tp, marker.coordinatorEpoch, coordinatorEpoch)
	}
	return nil
}

// inSequence reports whether next follows last (Kafka's
// ProducerAppendInfo.inSequence): last+1, or 0 after MaxInt32.
func inSequence(last, next int32) bool {
	return int64(next) == int64(last)+1 || (next == 0 && last == math.MaxInt32)
}

// update records an appended producer batch (checked, or from replication
// or recovery, which are not checked): Kafka's ProducerAppendInfo.append
// followed by ProducerStateManager.update. A transactional data batch of a
// producer without an ongoing transaction starts one at its first offset; a
// marker (control batch with an end transaction marker) ends it, takes the
// marker's producer epoch (the coordinator bumps it with KIP-890) and
// coordinator epoch, and returns the completed transaction, if the producer
// had one: the caller indexes an abort and calls completeTxn. A control
// batch without a marker (emptied by the cleaner) changes nothing.
func (m *producerStateManager) update(h record.BatchHeader, marker *endTxnMarker) (completedTxn, bool) {
	if h.ProducerID < 0 || (h.IsControl() && marker == nil) {
		return completedTxn{}, false
	}
	e := m.producers[h.ProducerID]
	if e == nil {
		e = newProducerStateEntry(h.ProducerID)
		m.producers[h.ProducerID] = e
	}
	if h.IsControl() {
		var c completedTxn
		ok := e.currentTxnFirstOffset >= 0
		if ok {
			c = completedTxn{producerID: h.ProducerID, firstOffset: e.currentTxnFirstOffset, lastOffset: h.BaseOffset, aborted: !marker.commit}
		}
		if e.epoch != h.ProducerEpoch {
			e.n = 0
			e.epoch = h.ProducerEpoch
		}
		e.currentTxnFirstOffset = -1
		m.endVerificationAtMarker(h.ProducerID, h.ProducerEpoch, marker.transactionVersion)
		e.coordinatorEpoch = marker.coordinatorEpoch
		e.lastTimestamp = h.MaxTimestamp
		return c, ok
	}
	e.addBatch(h.ProducerEpoch, batchMetadata{
		lastSeq:     h.LastSequence(),
		lastOffset:  h.LastOffset(),
		offsetDelta: h.LastOffsetDelta,
		timestamp:   h.MaxTimestamp,
	})
	if h.IsTransactional() && e.currentTxnFirstOffset < 0 {
		m.endVerification(h.ProducerID)
		e.currentTxnFirstOffset = h.BaseOffset
		m.txns.begin(h.ProducerID, h.BaseOffset)
	}
	return completedTxn{}, false
}

// isExpired is Kafka's isProducerExpired: no ongoing transaction and no
// batch for producer.id.expiration.ms, by the batch timestamps.
func (m *producerStateManager) isExpired(nowMs int64, e *producerStateEntry) bool {
	return e.currentTxnFirstOffset < 0 && nowMs-e.lastTimestamp >= m.expirationMs
}

// removeExpired forgets the expired producers and returns how many.
func (m *producerStateManager) removeExpired(nowMs int64) int {
	m.removeExpiredVerifications(nowMs)
	n := 0
	for id, e := range m.producers {
		if m.isExpired(nowMs, e) {
			delete(m.producers, id)
			n++
		}
	}
	return n
}

// clear forgets every producer and transaction.
func (m *producerStateManager) clear() {
	clear(m.producers)
	m.txns.reset()
}
