package txn

import (
	"sort"
)

// markersFor is the WriteTxnMarkers entry for a transaction's partitions,
// nil when it has none.
func (s *Shard) markersFor(t *txnMetadata, commit bool) []Markers {
	if len(t.partitions) == 0 {
		return nil
	}
	return []Markers{{
		TransactionalID: t.id, ProducerID: t.producerID, ProducerEpoch: t.producerEpoch, Commit: commit,
		CoordinatorEpoch: s.cfg.CoordinatorEpoch, TransactionVersion: t.tv, Partitions: t.sortedPartitions(),
	}}
}

// MarkerWritten reports that a partition's leader appended the marker of a
// transaction (or that the partition is gone, which Kafka also counts as
// done). When the last partition is marked, the Result writes the
// transaction's CompleteCommit / CompleteAbort. Reports that match no
// marker being written are ignored.
func (s *Shard) MarkerWritten(now int64, transactionalID string, producerID int64, producerEpoch int16, tp TopicPartition) Result {
	t := s.txns[transactionalID]
	if t == nil || t.completion == nil || t.producerID != producerID || t.producerEpoch != producerEpoch {
		return Result{}
	}
	if _, ok := t.partitions[tp]; !ok {
		return Result{}
	}
	delete(t.partitions, tp)
	if len(t.partitions) > 0 {
		return Result{}
	}
	return s.completionResult(now, t)
}

// completionResult writes the prepared Complete state. A failed write
// keeps it pending and is retried by Tick: the markers are written, so
// the transaction must complete.
func (s *Shard) completionResult(now int64, t *txnMetadata) Result {
	c := *t.completion
	return Result{Records: []Record{s.record(t.id, c)}, finish: func(werr error) Outcome {
		if werr != nil {
			s.completions[t.id] = now + completionRetryBackoffMs
			return Outcome{ErrorCode: appendErrorCode(werr), ProducerID: noProducerID, ProducerEpoch: noProducerEpoch}
		}
		t.completion = nil
		if err := t.complete(c); err != nil {
			return Outcome{ErrorCode: codeOf(err), ProducerID: noProducerID, ProducerEpoch: noProducerEpoch}
		}
		return Outcome{ProducerID: t.producerID, ProducerEpoch: t.producerEpoch}
	}}
}

// NextDeadline is when Tick is next due, in milliseconds. Before the first
// Tick it is 1 (due at once): that Tick resumes what the loaded log left
// in a Prepare state.
func (s *Shard) NextDeadline() int64 {
	if !s.started {
		return 1
	}
	d := min(s.nextAbortCheckMs, s.nextExpireMs)
	for _, due := range s.completions {
		d = min(d, due)
	}
	return d
}

// Tick does what is due at now, each as a Result to write and finish in
// order:
//   - on the first Tick after loading, the markers of transactions found in
//     PrepareCommit / PrepareAbort are sent again (Kafka does this when it
//     loads a partition);
//   - Complete records whose markers are all written (or have none) and
//     failed completion writes are written;
//   - every transaction.abort.timed.out.transaction.cleanup.interval.ms,
//     transactions open longer than their transaction.timeout.ms are
//     fenced and aborted (Kafka's abortTimedOutTransactions);
//   - every transaction.remove.expired.transaction.cleanup.interval.ms,
//     transactional ids idle for transactional.id.expiration.ms with no
//     transaction in flight are removed with tombstones.
func (s *Shard) Tick(now int64) []Result {
	var out []Result
	if !s.started {
		s.started = true
		s.nextAbortCheckMs = now + s.cfg.AbortTimedOutTransactionsIntervalMs
		s.nextExpireMs = now + s.cfg.RemoveExpiredTransactionalIDsIntervalMs
		for _, id := range s.sortedIDs() {
			t := s.txns[id]
			if (t.state != PrepareCommit && t.state != PrepareAbort) || t.hasPending {
				continue
			}
			c, err := t.prepareComplete(now)
			if err != nil {
				continue
			}
			t.completion = &c
			if len(t.partitions) == 0 {
				s.completions[id] = now
				continue
			}
			out = append(out, Result{outcome: Outcome{Markers: s.markersFor(t, t.state == PrepareCommit)}})
		}
	}
	var due []string
	for id, at := range s.completions {
		if at <= now {
			due = append(due, id)
		}
	}
	sort.Strings(due)
	for _, id := range due {
		delete(s.completions, id)
		if t := s.txns[id]; t != nil && t.completion != nil {
			out = append(out, s.completionResult(now, t))
		}
	}
	if now >= s.nextAbortCheckMs {
		s.nextAbortCheckMs = now + s.cfg.AbortTimedOutTransactionsIntervalMs
		out = append(out, s.abortTimedOut(now)...)
	}
	if now >= s.nextExpireMs {
		s.nextExpireMs = now + s.cfg.RemoveExpiredTransactionalIDsIntervalMs
		if r, ok := s.expireTransactionalIDs(now); ok {
			out = append(out, r)
		}
	}
	return out
}

// abortTimedOut fences and aborts every ongoing transaction older than its
// timeout, with the cluster's transaction version.
func (s *Shard) abortTimedOut(now int64) []Result {
	var out []Result
	for _, id := range s.sortedIDs() {
		t := s.txns[id]
		if t.hasPending || t.state != Ongoing || t.startTs+int64(t.timeoutMs) >= now {
			continue
		}
		if r := s.fenceAndAbort(now, t); len(r.Records) > 0 {
			out = append(out, r)
		}
	}
	return out
}

// expireTransactionalIDs writes tombstones for idle transactional ids
// (Kafka's removeExpiredTransactionalIds); they are forgotten once written.
func (s *Shard) expireTransactionalIDs(now int64) (Result, bool) {
	var records []Record
	var dead []*txnMetadata
	for _, id := range s.sortedIDs() {
		t := s.txns[id]
		if t.hasPending || !t.state.expirationAllowed() || t.updateTs > now-s.cfg.TransactionalIDExpirationMs {
			continue
		}
		if _, err := t.prepareDead(); err != nil {
			continue
		}
		records = append(records, Record{Key: Key(id)})
		dead = append(dead, t)
	}
	if len(dead) == 0 {
		return Result{}, false
	}
	return Result{Records: records, finish: func(werr error) Outcome {
		for _, t := range dead {
			if werr == nil && s.txns[t.id] == t {
				delete(s.txns, t.id)
			} else {
				t.revert()
			}
		}
		if werr != nil {
			return Outcome{ErrorCode: appendErrorCode(werr), ProducerID: noProducerID, ProducerEpoch: noProducerEpoch}
		}
		return Outcome{ProducerID: noProducerID, ProducerEpoch: noProducerEpoch}
	}}, true
}
