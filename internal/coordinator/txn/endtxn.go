package txn

import (
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// EndTxn commits or aborts a transaction (Kafka's handleEndTransaction):
// PrepareCommit / PrepareAbort is written, the client is answered, and the
// Outcome's markers go to the transaction's partitions. EndTxn v5+ is
// transaction version 2 (KIP-890 part 2): the epoch is bumped by every
// EndTxn, the answer carries the producer id and epoch for the next
// transaction, a retried EndTxn is recognised by its epoch being one
// behind, and an abort is accepted with no transaction ongoing.
func (s *Shard) EndTxn(now int64, req *kmsg.EndTxnRequest) Result {
	tv := int16(0)
	if req.Version > 4 {
		tv = 2
	}
	r := s.endTransaction(now, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit, true, tv)
	return fencedForOldClients(r, req.Version, 2)
}

// endTransaction is EndTxn for clients and for the coordinator's own
// aborts (fromClient false, with the fencing epoch pending).
func (s *Shard) endTransaction(now int64, id string, pid int64, epoch int16, commit, fromClient bool, tv int16) Result {
	if id == "" {
		return errAnswer(kerr.InvalidRequest)
	}
	t := s.txns[id]
	if t == nil {
		return errAnswer(kerr.InvalidProducerIDMapping)
	}
	if tv >= 2 {
		return s.endTransactionV2(now, t, pid, epoch, commit, fromClient)
	}
	isEpochFence := t.hasPending && t.pending == PrepareEpochFence
	switch {
	case t.producerID != pid:
		return errAnswer(kerr.InvalidProducerIDMapping)
	// A version 0/1 client never bumps its epoch itself: it must match.
	case (fromClient && epoch != t.producerEpoch) || epoch < t.producerEpoch:
		return errAnswer(kerr.ProducerFenced)
	case t.hasPending && !isEpochFence:
		return errAnswer(kerr.ConcurrentTransactions)
	}
	switch t.state {
	case Ongoing:
		return s.prepareEnd(now, t, commit, epoch, 0, isEpochFence, false)
	case CompleteCommit:
		return alreadyDone(commit, noProducerID, noProducerEpoch)
	case CompleteAbort:
		return alreadyDone(!commit, noProducerID, noProducerEpoch)
	case PrepareCommit:
		return inProgress(commit)
	case PrepareAbort:
		return inProgress(!commit)
	case Empty:
		return errAnswer(kerr.InvalidTxnState)
	}
	return errAnswer(kerr.UnknownServerError) // Dead, PrepareEpochFence: never a current state
}

// alreadyDone answers a repeated EndTxn: no error when it asks for the
// result the transaction already has, INVALID_TXN_STATE otherwise.
func alreadyDone(same bool, pid int64, epoch int16) Result {
	if same {
		return answer(0, pid, epoch)
	}
	return errAnswer(kerr.InvalidTxnState)
}

// inProgress answers an EndTxn while the markers of the same result are
// being written: retry later; a different result is INVALID_TXN_STATE.
func inProgress(same bool) Result {
	if same {
		return errAnswer(kerr.ConcurrentTransactions)
	}
	return errAnswer(kerr.InvalidTxnState)
}

// endTransactionV2 follows Kafka's table for transaction version 2, where
// "retry" is an EndTxn whose epoch is one behind the bumped epoch:
//
//	                 Abort            Commit
//	                 Retry  Current   Retry  Current
//	Empty            FENCED bump      FENCED INVALID_TXN_STATE
//	CompleteAbort    NONE   bump      FENCED INVALID_TXN_STATE
//	CompleteCommit   ITS    bump      NONE   INVALID_TXN_STATE
func (s *Shard) endTransactionV2(now int64, t *txnMetadata, pid int64, epoch int16, commit, fromClient bool) Result {
	isEpochFence := t.hasPending && t.pending == PrepareEpochFence
	// A retry across a producer id rotation: the client still has the old
	// id at the last epoch, the coordinator has the new id at epoch 0.
	retryOnOverflow := !isEpochFence && t.prevProducerID == pid && epoch == math.MaxInt16-1 && t.producerEpoch == 0
	retryOnEpochBump := !isEpochFence && int32(t.producerEpoch) == int32(epoch)+1
	var validEpoch bool
	if isEpochFence {
		validEpoch = (!fromClient || epoch == t.producerEpoch) && epoch >= t.producerEpoch
	} else {
		switch t.state {
		case PrepareCommit, PrepareAbort:
			validEpoch = retryOnEpochBump
		case CompleteCommit, CompleteAbort:
			validEpoch = retryOnEpochBump || retryOnOverflow || epoch == t.producerEpoch
		default:
			validEpoch = epoch == t.producerEpoch
		}
	}
	isRetry := retryOnEpochBump || retryOnOverflow
	// A transition in progress (markers still being written) is checked
	// before the epoch (KAFKA-18464): the producer's next EndTxn, at the
	// epoch the last one answered, may come before the last one's markers
	// are all written, and must wait rather than be fenced.
	switch {
	case t.producerID != pid && !retryOnOverflow:
		return errAnswer(kerr.InvalidProducerIDMapping)
	case (t.hasPending || t.completion != nil) && !isEpochFence:
		return errAnswer(kerr.ConcurrentTransactions)
	case !validEpoch:
		return errAnswer(kerr.ProducerFenced)
	}
	switch t.state {
	case Ongoing:
		return s.prepareEnd(now, t, commit, epoch, 2, isEpochFence, false)
	case CompleteCommit:
		if commit {
			return alreadyDone(isRetry, t.producerID, t.producerEpoch)
		}
		if isRetry {
			return errAnswer(kerr.InvalidTxnState)
		}
		return s.prepareEnd(now, t, false, epoch, 2, false, true)
	case CompleteAbort:
		if commit && isRetry {
			// A commit that crossed an abort the coordinator made itself
			// (a timeout): the producer was fenced, which it can recover
			// from (KAFKA-20785).
			return errAnswer(kerr.ProducerFenced)
		}
		if commit {
			return errAnswer(kerr.InvalidTxnState)
		}
		if isRetry {
			return answer(0, t.producerID, t.producerEpoch)
		}
		return s.prepareEnd(now, t, false, epoch, 2, false, true)
	case PrepareCommit:
		return inProgress(commit)
	case PrepareAbort:
		return inProgress(!commit)
	case Empty:
		if commit {
			return errAnswer(kerr.InvalidTxnState)
		}
		return s.prepareEnd(now, t, false, epoch, 2, false, true)
	}
	return errAnswer(kerr.UnknownServerError)
}

// prepareEnd writes PrepareCommit / PrepareAbort. Once written, the
// Complete state is prepared (pending until the markers are all written)
// and the Outcome carries the markers, with the epoch of the Prepare
// record so the partition leaders fence older epochs.
func (s *Shard) prepareEnd(now int64, t *txnMetadata, commit bool, epoch int16, tv int16, isEpochFence, noPartitionAdded bool) Result {
	state := PrepareAbort
	if commit {
		state = PrepareCommit
	}
	nextPID := noProducerID
	if tv >= 2 && !isEpochFence && epochExhausted(t.producerEpoch) {
		pid, err := s.cfg.ProducerIDs.Generate()
		if err != nil {
			return answer(codeOf(err), noProducerID, noProducerEpoch)
		}
		nextPID = pid
	}
	if state == PrepareAbort && isEpochFence {
		// The fence becomes the abort: its bumped epoch is taken now (and
		// kept in memory even if the write fails, never given to a client).
		t.revert()
		t.producerEpoch, t.lastProducerEpoch = epoch, noProducerEpoch
	}
	next, err := t.prepareAbortOrCommit(state, tv, nextPID, now, noPartitionAdded, isEpochFence)
	if err != nil {
		return answer(codeOf(err), noProducerID, noProducerEpoch)
	}
	return Result{Records: []Record{s.record(t.id, next)}, finish: func(werr error) Outcome {
		if werr != nil {
			t.revert()
			if isEpochFence {
				t.hasFailedEpochFence = true
			}
			return Outcome{ErrorCode: appendErrorCode(werr), ProducerID: noProducerID, ProducerEpoch: noProducerEpoch}
		}
		if err := t.complete(next); err != nil {
			return Outcome{ErrorCode: codeOf(err), ProducerID: noProducerID, ProducerEpoch: noProducerEpoch}
		}
		completion, err := t.prepareComplete(now)
		if err != nil {
			return Outcome{ErrorCode: codeOf(err), ProducerID: noProducerID, ProducerEpoch: noProducerEpoch}
		}
		t.completion = &completion
		out := Outcome{ProducerID: noProducerID, ProducerEpoch: noProducerEpoch, Markers: s.markersFor(t, commit)}
		if tv >= 2 {
			// The producer's next transaction uses these; past the last
			// epoch that is the next producer id at epoch 0.
			out.ProducerID, out.ProducerEpoch = t.producerID, t.producerEpoch
			if t.nextProducerID != noProducerID {
				out.ProducerID, out.ProducerEpoch = t.nextProducerID, 0
			}
		}
		if len(t.partitions) == 0 {
			s.completions[t.id] = now // nothing to mark: complete on the next Tick
		}
		return out
	}}
}
