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

// TestTxnVerificationAcrossTV2Marker: with transactions v2 the marker ends
// the transaction at the bumped epoch, which the producer's next
// transaction uses. A verification of that next transaction started before
// the marker landed survives it (the coordinator adds the partition only
// once the marker is written).
func TestTxnVerificationAcrossTV2Marker(t *testing.T) {
	raw, _ := openTestLog(t, testConfig())
	defer raw.Close()
	l := txnLog{t, raw}
	appendVerified := func(epoch int16, seq int32, guard VerificationGuard) error {
		_, err := l.AppendAsLeaderVerified(producerBatch(t, 1, epoch, seq, 1, txnNowMs, true), 0, leaderOptsAt(txnNowMs), guard)
		return err
	}
	tv2Marker := func(epoch int16) {
		t.Helper()
		b, err := BuildTxnMarker(1, epoch, 0, true, txnNowMs)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.AppendAsCoordinator(b, 0, 2, leaderOptsAt(txnNowMs)); err != nil {
			t.Fatalf("marker at epoch %d: %v", epoch, err)
		}
	}
	guard, _ := l.MaybeStartTxnVerification(1, 0)
	if err := appendVerified(0, 0, guard); err != nil {
		t.Fatalf("first transaction: %v", err)
	}
	// The next transaction's first batch (epoch 1) is verified while the
	// first transaction's marker (epoch 1) is still on its way.
	next, needed := l.MaybeStartTxnVerification(1, 1)
	if !needed {
		t.Fatal("the next epoch's batch needed no verification")
	}
	tv2Marker(1)
	if err := appendVerified(1, 0, next); err != nil {
		t.Fatalf("next transaction's batch verified before the marker: %v", err)
	}
	tv2Marker(2)

	l.replicateAll()
	l.wantLSO(l.LogEndOffset())
}
