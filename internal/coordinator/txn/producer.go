package txn

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// codeOf is the Kafka error code of an error from this package or the
// producer id allocator; anything else is UNKNOWN_SERVER_ERROR (a broken
// invariant answers the one request, it never stops the broker).
func codeOf(err error) int16 {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	return kerr.UnknownServerError.Code
}

// appendErrorCode maps a failed write to __transaction_state to the code
// the client is told (Kafka's appendTransactionToLog).
func appendErrorCode(err error) int16 {
	var ke *kerr.Error
	if !errors.As(err, &ke) {
		return kerr.UnknownServerError.Code
	}
	switch ke {
	case kerr.UnknownTopicOrPartition, kerr.NotEnoughReplicas, kerr.NotEnoughReplicasAfterAppend, kerr.RequestTimedOut:
		return kerr.CoordinatorNotAvailable.Code
	case kerr.NotLeaderForPartition, kerr.KafkaStorageError:
		return kerr.NotCoordinator.Code
	case kerr.MessageTooLarge, kerr.RecordListTooLarge:
		return kerr.UnknownServerError.Code
	}
	return ke.Code
}

// mapCode rewrites the error code of a Result's outcome.
func (r Result) mapCode(f func(int16) int16) Result {
	if r.finish == nil {
		r.outcome.ErrorCode = f(r.outcome.ErrorCode)
		return r
	}
	finish := r.finish
	r.finish = func(err error) Outcome {
		o := finish(err)
		o.ErrorCode = f(o.ErrorCode)
		return o
	}
	return r
}

// fencedForOldClients answers INVALID_PRODUCER_EPOCH instead of
// PRODUCER_FENCED to request versions below firstVersion, which predate
// PRODUCER_FENCED (KIP-588) and treat the old code the same way.
func fencedForOldClients(r Result, version, firstVersion int16) Result {
	if version >= firstVersion {
		return r
	}
	return r.mapCode(func(c int16) int16 {
		if c == kerr.ProducerFenced.Code {
			return kerr.InvalidProducerEpoch.Code
		}
		return c
	})
}

// transition is a Result that writes next and, once written, makes it the
// transactional id's state and answers with ok.
func (s *Shard) transition(t *txnMetadata, next txnState, ok func() Outcome) Result {
	return Result{Records: []Record{s.record(t.id, next)}, finish: func(werr error) Outcome {
		if werr != nil {
			t.revert()
			return Outcome{ErrorCode: appendErrorCode(werr), ProducerID: noProducerID, ProducerEpoch: noProducerEpoch}
		}
		if err := t.complete(next); err != nil {
			return Outcome{ErrorCode: codeOf(err), ProducerID: noProducerID, ProducerEpoch: noProducerEpoch}
		}
		return ok()
	}}
}

// InitProducerID answers InitProducerId (Kafka's handleInitProducerId). A
// request without a transactional id gets a fresh producer id and epoch 0
// and touches no state. For a transactional id it bumps the epoch (fencing
// older producers), or takes a new producer id when the epochs run out; a
// KIP-360 producer that passes its current id and epoch keeps its id. An
// ongoing transaction is aborted first with a fencing epoch and the
// producer is told CONCURRENT_TRANSACTIONS to retry.
func (s *Shard) InitProducerID(now int64, req *kmsg.InitProducerIDRequest) Result {
	return fencedForOldClients(s.initProducerID(now, req), req.Version, 4)
}

func (s *Shard) initProducerID(now int64, req *kmsg.InitProducerIDRequest) Result {
	if req.TransactionalID == nil {
		pid, err := s.cfg.ProducerIDs.Generate()
		if err != nil {
			return answer(codeOf(err), noProducerID, noProducerEpoch)
		}
		return answer(0, pid, 0)
	}
	id := *req.TransactionalID
	if id == "" {
		return errAnswer(kerr.InvalidRequest)
	}
	timeout := req.TransactionTimeoutMillis
	if timeout <= 0 || timeout > s.cfg.TransactionMaxTimeoutMs {
		return errAnswer(kerr.InvalidTransactionTimeout)
	}
	var expected *struct {
		producerID int64
		epoch      int16
	}
	switch {
	case req.ProducerID == noProducerID && req.ProducerEpoch == noProducerEpoch:
	case req.ProducerID == noProducerID || req.ProducerEpoch == noProducerEpoch:
		return errAnswer(kerr.InvalidRequest)
	default:
		expected = &struct {
			producerID int64
			epoch      int16
		}{req.ProducerID, req.ProducerEpoch}
	}

	t := s.txns[id]
	if t == nil {
		pid, err := s.cfg.ProducerIDs.Generate()
		if err != nil {
			return answer(codeOf(err), noProducerID, noProducerEpoch)
		}
		// Like Kafka, the new id is cached before its first record is
		// written; until then it has no epoch.
		t = newTxnMetadata(id, pid, timeout, now)
		s.txns[id] = t
	}
	if t.hasPending {
		return errAnswer(kerr.ConcurrentTransactions)
	}
	// A producer that names its id and epoch (KIP-360) is fenced unless the
	// id is new here, is its current id, or is the id it had just before a
	// rotation whose answer it missed.
	if expected != nil && t.producerEpoch != noProducerEpoch && expected.producerID != t.producerID &&
		(expected.producerID != t.prevProducerID || !epochExhausted(expected.epoch)) {
		return errAnswer(kerr.ProducerFenced)
	}
	switch t.state {
	case PrepareAbort, PrepareCommit:
		return errAnswer(kerr.ConcurrentTransactions)
	case CompleteAbort, CompleteCommit, Empty:
		var next txnState
		var err error
		if epochExhausted(t.producerEpoch) && (expected == nil || expected.epoch == t.producerEpoch) {
			pid, gerr := s.cfg.ProducerIDs.Generate()
			if gerr != nil {
				return answer(codeOf(gerr), noProducerID, noProducerEpoch)
			}
			next, err = t.prepareProducerIDRotation(pid, timeout, now, expected != nil)
		} else {
			var epoch *int16
			if expected != nil {
				epoch = &expected.epoch
			}
			next, err = t.prepareIncrementProducerEpoch(timeout, epoch, now)
		}
		if err != nil {
			return answer(codeOf(err), noProducerID, noProducerEpoch)
		}
		return s.transition(t, next, func() Outcome {
			return Outcome{ProducerID: next.producerID, ProducerEpoch: next.producerEpoch}
		})
	case Ongoing:
		// The fencing epoch is never returned: the retry after the abort
		// bumps once more (and takes a new producer id if that runs out).
		return s.fenceAndAbort(now, t).mapCode(func(c int16) int16 {
			if c == 0 {
				return kerr.ConcurrentTransactions.Code
			}
			return c
		})
	}
	return errAnswer(kerr.UnknownServerError) // Dead, PrepareEpochFence: never a current state
}

// fenceAndAbort bumps the epoch of an ongoing transaction and aborts it
// with that epoch, so its producer can neither add to it nor end it
// (Kafka's prepareFenceProducerEpoch followed by endTransaction, used by
// InitProducerId and by transaction.timeout.ms).
func (s *Shard) fenceAndAbort(now int64, t *txnMetadata) Result {
	fence, err := t.prepareFenceProducerEpoch()
	if err != nil {
		return answer(codeOf(err), noProducerID, noProducerEpoch)
	}
	r := s.endTransaction(now, t.id, fence.producerID, fence.producerEpoch, false, false, s.transactionVersion())
	if len(r.Records) == 0 && t.hasPending && t.pending == PrepareEpochFence {
		t.revert() // the abort was refused before it took over the fence
	}
	return r
}
