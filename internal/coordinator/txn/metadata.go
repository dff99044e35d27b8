package txn

import (
	"fmt"
	"math"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// txnState is the persisted part of a transactional id's state; a pending
// transition is a txnState that becomes current once written (Kafka's
// TxnTransitMetadata).
type txnState struct {
	producerID, prevProducerID, nextProducerID int64
	producerEpoch, lastProducerEpoch           int16
	timeoutMs                                  int32
	state                                      State
	partitions                                 map[TopicPartition]struct{}
	startTs, updateTs                          int64
	tv                                         int16
}

func (t txnState) clone() txnState {
	c := t
	c.partitions = make(map[TopicPartition]struct{}, len(t.partitions))
	for tp := range t.partitions {
		c.partitions[tp] = struct{}{}
	}
	return c
}

func (t txnState) sortedPartitions() []TopicPartition {
	out := make([]TopicPartition, 0, len(t.partitions))
	for tp := range t.partitions {
		out = append(out, tp)
	}
	sortPartitions(out)
	return out
}

// txnMetadata is one transactional id (Kafka's TransactionMetadata).
type txnMetadata struct {
	id string
	txnState
	// pending is the state being moved to, set from prepare until the
	// write's outcome (Kafka's pendingState).
	pending    State
	hasPending bool
	// completion is the prepared CompleteCommit / CompleteAbort while the
	// markers are written.
	completion *txnState
	// hasFailedEpochFence: a fencing epoch bump was not written, so the
	// next fence reuses that epoch instead of bumping again.
	hasFailedEpochFence bool
}

func newTxnMetadata(id string, producerID int64, timeoutMs int32, now int64) *txnMetadata {
	return &txnMetadata{id: id, txnState: txnState{
		producerID: producerID, prevProducerID: noProducerID, nextProducerID: noProducerID,
		producerEpoch: noProducerEpoch, lastProducerEpoch: noProducerEpoch, timeoutMs: timeoutMs,
		state: Empty, partitions: map[TopicPartition]struct{}{}, startTs: -1, updateTs: now,
	}}
}

func (t *txnMetadata) snapshot() Metadata {
	return Metadata{
		TransactionalID: t.id, ProducerID: t.producerID, PrevProducerID: t.prevProducerID, NextProducerID: t.nextProducerID,
		ProducerEpoch: t.producerEpoch, LastProducerEpoch: t.lastProducerEpoch, TimeoutMs: t.timeoutMs, State: t.state,
		Partitions: t.sortedPartitions(), TxnStartTimestamp: t.startTs, LastUpdateTimestamp: t.updateTs, ClientTransactionVersion: t.tv,
	}
}

// prepare makes next the pending transition after checking it is legal
// (Kafka's prepareTransitionTo). The previous producer id of every
// transition is the current one.
func (t *txnMetadata) prepare(next txnState) (txnState, error) {
	if t.hasPending {
		return txnState{}, fmt.Errorf("transactional id %s: transition to %s while %s is pending", t.id, next.state, t.pending)
	}
	if next.producerID < 0 {
		return txnState{}, fmt.Errorf("transactional id %s: illegal producer id %d", t.id, next.producerID)
	}
	if next.state != Dead && next.producerEpoch < 0 {
		return txnState{}, fmt.Errorf("transactional id %s: illegal producer epoch %d", t.id, next.producerEpoch)
	}
	if !slices.Contains(validPrevious[next.state], t.state) {
		return txnState{}, fmt.Errorf("transactional id %s: illegal transition from %s to %s", t.id, t.state, next.state)
	}
	next.prevProducerID = t.producerID
	t.pending, t.hasPending = next.state, true
	return next, nil
}

// complete makes a written transition current (Kafka's completeTransitionTo).
func (t *txnMetadata) complete(next txnState) error {
	if !t.hasPending || t.pending != next.state {
		return fmt.Errorf("transactional id %s: completing a transition to %s that is not pending", t.id, next.state)
	}
	t.txnState = next
	t.hasPending = false
	return nil
}

// revert forgets a pending transition whose write failed.
func (t *txnMetadata) revert() { t.hasPending = false }

// base is the current state with a new target state, for the prepare* helpers.
func (t *txnMetadata) base(state State) txnState {
	n := t.txnState.clone()
	n.state = state
	return n
}

func (t *txnMetadata) prepareFenceProducerEpoch() (txnState, error) {
	n := t.base(PrepareEpochFence)
	if !t.hasFailedEpochFence && t.producerEpoch != math.MaxInt16 {
		n.producerEpoch = t.producerEpoch + 1
	}
	return t.prepare(n)
}

// prepareIncrementProducerEpoch is InitProducerId's epoch bump; expected
// is the epoch a KIP-360 client says it has, nil if it has none.
func (t *txnMetadata) prepareIncrementProducerEpoch(timeoutMs int32, expected *int16, now int64) (txnState, error) {
	if epochExhausted(t.producerEpoch) {
		return txnState{}, fmt.Errorf("transactional id %s: producer id %d has no epochs left", t.id, t.producerID)
	}
	n := t.base(Empty)
	bumped := t.producerEpoch + 1
	switch {
	case expected == nil:
		n.producerEpoch, n.lastProducerEpoch = bumped, noProducerEpoch
	case t.producerEpoch == noProducerEpoch || *expected == t.producerEpoch:
		// The producer continues after an error and nobody else took over.
		n.producerEpoch, n.lastProducerEpoch = bumped, t.producerEpoch
	case *expected == t.lastProducerEpoch:
		// A retry of a bump that succeeded: answer the same epoch again.
		n.producerEpoch, n.lastProducerEpoch = t.producerEpoch, t.lastProducerEpoch
	default:
		return txnState{}, kerr.ProducerFenced
	}
	n.timeoutMs = timeoutMs
	n.partitions = map[TopicPartition]struct{}{}
	n.startTs, n.updateTs = -1, now
	return t.prepare(n)
}

func (t *txnMetadata) prepareProducerIDRotation(newProducerID int64, timeoutMs int32, now int64, recordLastEpoch bool) (txnState, error) {
	if t.state == Ongoing || t.state == PrepareAbort || t.state == PrepareCommit {
		return txnState{}, fmt.Errorf("transactional id %s: cannot rotate the producer id while a transaction is %s", t.id, t.state)
	}
	n := t.base(Empty)
	n.producerID, n.producerEpoch = newProducerID, 0
	n.lastProducerEpoch = noProducerEpoch
	if recordLastEpoch {
		n.lastProducerEpoch = t.producerEpoch
	}
	n.timeoutMs = timeoutMs
	n.partitions = map[TopicPartition]struct{}{}
	n.startTs, n.updateTs = -1, now
	return t.prepare(n)
}

func (t *txnMetadata) prepareAddPartitions(added []TopicPartition, now int64, tv int16) (txnState, error) {
	n := t.base(Ongoing)
	if t.state == Empty || t.state == CompleteAbort || t.state == CompleteCommit {
		n.startTs = now
	}
	for _, tp := range added {
		n.partitions[tp] = struct{}{}
	}
	n.updateTs, n.tv = now, tv
	return t.prepare(n)
}

// prepareAbortOrCommit moves to PrepareCommit / PrepareAbort. Transaction
// version 2 bumps the epoch here (KIP-890 part 2), except for the abort of
// a fenced epoch, which the fence has bumped already (KAFKA-19367: a
// second bump could overflow the epoch); nextProducerID is set when that
// bump uses up the producer id's epochs.
func (t *txnMetadata) prepareAbortOrCommit(state State, tv int16, nextProducerID int64, now int64, noPartitionAdded, epochFenced bool) (txnState, error) {
	n := t.base(state)
	if tv >= 2 && !epochFenced {
		// An abort at Short.MaxValue (a fenced producer at the very end of
		// its epochs) goes through without a bump so the id can recover.
		if !(t.producerEpoch == math.MaxInt16 && state == PrepareAbort) {
			n.producerEpoch = t.producerEpoch + 1
		}
		n.lastProducerEpoch = t.producerEpoch
	}
	if noPartitionAdded {
		// A version 2 abort with no partition has no start time of its own.
		n.startTs = now
	}
	n.nextProducerID, n.updateTs, n.tv = nextProducerID, now, tv
	return t.prepare(n)
}

// prepareComplete moves a written Prepare state on to its Complete state;
// at the end of a producer id's epochs the producer moves to the next id.
func (t *txnMetadata) prepareComplete(now int64) (txnState, error) {
	t.hasFailedEpochFence = false
	n := t.base(CompleteAbort)
	if t.state == PrepareCommit {
		n.state = CompleteCommit
	}
	if t.tv >= 2 && t.nextProducerID != noProducerID {
		n.producerID, n.producerEpoch = t.nextProducerID, 0
	}
	n.nextProducerID = noProducerID
	n.partitions = map[TopicPartition]struct{}{}
	n.updateTs = now
	return t.prepare(n)
}

func (t *txnMetadata) prepareDead() (txnState, error) {
	n := t.base(Dead)
	n.partitions = map[TopicPartition]struct{}{}
	return t.prepare(n)
}
