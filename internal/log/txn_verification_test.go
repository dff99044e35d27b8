package log

import (
	"errors"
	"testing"
)

// TestTxnVerificationGuard: a transactional batch appended with a guard is
// written only while the guard is the producer's; a marker in between (the
// transaction ended while the coordinator was asked) or a missing guard
// refuses it, and a producer whose transaction is open needs no guard.
func TestTxnVerificationGuard(t *testing.T) {
	raw, _ := openTestLog(t, testConfig())
	defer raw.Close()
	l := txnLog{t, raw}
	appendVerified := func(seq int32, guard VerificationGuard) error {
		_, err := l.AppendAsLeaderVerified(producerBatch(t, 1, 0, seq, 1, txnNowMs, true), 0, leaderOptsAt(txnNowMs), guard)
		return err
	}

	if err := appendVerified(0, 0); !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("unverified batch: %v", err)
	}
	guard, needed := l.MaybeStartTxnVerification(1, 0)
	if !needed || guard == 0 {
		t.Fatalf("verification not started: %d %v", guard, needed)
	}
	if again, _ := l.MaybeStartTxnVerification(1, 0); again != guard {
		t.Fatalf("a retry took guard %d, want the same %d", again, guard)
	}
	if err := appendVerified(0, guard+1); !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("another guard: %v", err)
	}
	if err := appendVerified(0, guard); err != nil {
		t.Fatalf("verified batch: %v", err)
	}
	// The transaction is open: later batches need no verification.
	if g, needed := l.MaybeStartTxnVerification(1, 0); needed || g != 0 {
		t.Fatalf("open transaction asked for verification: %d %v", g, needed)
	}
	if err := appendVerified(1, 0); err != nil {
		t.Fatalf("batch in the open transaction: %v", err)
	}
	l.mustMarker(1, 0, false)

	// Verification starts, the coordinator's marker lands before the batch:
	// the guard is gone and the late batch would open a hanging transaction.
	guard, _ = l.MaybeStartTxnVerification(1, 0)
	l.mustMarker(1, 0, false)
	if err := appendVerified(2, guard); !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("batch verified before a marker: %v", err)
	}
	l.replicateAll()
	l.wantLSO(l.LogEndOffset())
}
