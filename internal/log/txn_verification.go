package log

import (
	"fmt"
	"time"

	"gregor/internal/record"
)

// Transaction verification (KIP-890 part 1, Kafka's VerificationGuard and
// VerificationStateEntry): before a leader appends the first transactional
// batch of a producer that has no transaction open on the partition, it
// asks the transaction coordinator whether the partition is in the
// producer's ongoing transaction. A guard taken before asking must still be
// the producer's when the batch is appended: a marker (the transaction
// ended meanwhile) or a newer epoch drops it, so a late batch cannot open a
// transaction that nobody will ever end (a "hanging" transaction, which
// would hold the last stable offset back forever).

// VerificationGuard identifies one verification; the zero guard verifies
// nothing.
type VerificationGuard uint64

// verificationEntry is a producer's verification in flight.
type verificationEntry struct {
	guard     VerificationGuard
	epoch     int16
	createdMs int64
}

// MaybeStartTxnVerification returns the guard to append a transactional
// batch of the producer with, and whether the coordinator must verify the
// partition first. A producer whose transaction is already open here (at
// this epoch) needs no verification.
func (l *Log) MaybeStartTxnVerification(producerID int64, epoch int16) (VerificationGuard, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ps := l.producers
	if e := ps.producers[producerID]; e != nil && e.currentTxnFirstOffset >= 0 && e.epoch == epoch {
		return 0, false
	}
	if v := ps.verifications[producerID]; v != nil && v.epoch >= epoch {
		return v.guard, true
	}
	if ps.verifications == nil {
		ps.verifications = map[int64]*verificationEntry{}
	}
	l.nextGuard++
	v := &verificationEntry{guard: VerificationGuard(l.nextGuard), epoch: epoch, createdMs: time.Now().UnixMilli()}
	ps.verifications[producerID] = v
	return v.guard, true
}

// AppendAsLeaderVerified is AppendAsLeader for a producer whose transaction
// had to be verified: a transactional batch that does not continue a
// transaction open here must carry the producer's current guard, else it is
// ErrInvalidTxnState (Kafka's "Record was not part of an ongoing
// transaction").
func (l *Log) AppendAsLeaderVerified(records []byte, leaderEpoch int32, opts record.ValidateOptions, guard VerificationGuard) (AppendInfo, error) {
	return l.appendAsLeader(records, leaderEpoch, opts, &guard)
}

// checkVerified is the guard check of a transactional batch; the caller
// holds mu.
func (m *producerStateManager) checkVerified(h record.BatchHeader, guard VerificationGuard, tp string) error {
	if !h.IsTransactional() || h.IsControl() {
		return nil
	}
	if e := m.producers[h.ProducerID]; e != nil && e.currentTxnFirstOffset >= 0 && e.epoch == h.ProducerEpoch {
		return nil
	}
	if v := m.verifications[h.ProducerID]; guard != 0 && v != nil && v.guard == guard {
		return nil
	}
	return fmt.Errorf("%w: record of producer %d in %s was not part of an ongoing transaction (not verified with the transaction coordinator)",
		ErrInvalidTxnState, h.ProducerID, tp)
}

// endVerification forgets a producer's verification: its transaction
// started (or ended) here.
func (m *producerStateManager) endVerification(producerID int64) {
	delete(m.verifications, producerID)
}

// endVerificationAtMarker forgets a producer's verification when a marker
// ends its transaction here: a batch verified before the marker belonged to
// the transaction that ended and must not open another. With transactions
// v2 (KIP-890 part 2) the marker carries the bumped epoch, which is the
// epoch of the producer's next transaction: a verification at that epoch
// was started for the next transaction (its first batch came before this
// marker, and the coordinator adds the partition only once every marker of
// the previous transaction is written), so it stays.
func (m *producerStateManager) endVerificationAtMarker(producerID int64, markerEpoch, transactionVersion int16) {
	v := m.verifications[producerID]
	if v == nil || v.epoch > markerEpoch || (v.epoch == markerEpoch && transactionVersion >= 2) {
		return
	}
	delete(m.verifications, producerID)
}

// removeExpiredVerifications drops verifications older than
// producer.id.expiration.ms whose batch never came.
func (m *producerStateManager) removeExpiredVerifications(nowMs int64) {
	for id, v := range m.verifications {
		if nowMs-v.createdMs >= m.expirationMs {
			delete(m.verifications, id)
		}
	}
}
