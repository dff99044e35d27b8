package partition

// This file is the leader's side of ISR changes: deciding to expand or
// shrink the ISR, the AlterPartition proposal that goes to the controller,
// and applying the controller's answer. Only one change is in flight at a
// time (Kafka's PendingExpandIsr / PendingShrinkIsr vs
// CommittedPartitionState); while one is, no other is proposed.

import (
	"errors"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// ISRChange is the kind of an ISR change in flight.
type ISRChange int8

const (
	// ISRExpand adds a caught-up follower.
	ISRExpand ISRChange = iota + 1
	// ISRShrink removes followers that lag more than replica.lag.time.max.ms.
	ISRShrink
)

func (c ISRChange) String() string {
	switch c {
	case ISRExpand:
		return "expand"
	case ISRShrink:
		return "shrink"
	}
	return fmt.Sprintf("ISRChange(%d)", int8(c))
}

// ISRMember is one entry of AlterPartition's NewIsrWithEpochs (KIP-903):
// the broker and the broker epoch its fetches carried, -1 when unknown.
type ISRMember struct {
	BrokerID    int32
	BrokerEpoch int64
}

// AlterPartitionProposal is an ISR change in flight: the AlterPartition
// partition entry to send (leader recovery state is always RECOVERED from a
// leader) and what it changes.
type AlterPartitionProposal struct {
	Change ISRChange
	// Replicas are the follower added (expand) or those removed (shrink).
	Replicas       []int32
	LeaderID       int32
	LeaderEpoch    int32
	PartitionEpoch int32
	NewISR         []ISRMember
}

// NewISRIDs is the proposed ISR without broker epochs.
func (p *AlterPartitionProposal) NewISRIDs() []int32 {
	ids := make([]int32, len(p.NewISR))
	for i, m := range p.NewISR {
		ids[i] = m.BrokerID
	}
	return ids
}

// Pending is the ISR change in flight, nil when the state is committed.
func (s *LeaderState) Pending() *AlterPartitionProposal { return s.pending }

// maybeExpandISR proposes adding a follower that just fetched (Kafka's
// maybeExpandIsr). A follower joins when it is eligible, not already in the
// ISR, its LEO has reached the high watermark, and its LEO has reached the
// start of the current leader epoch. The last rule matters after an
// election: committed records may sit between the new leader's high
// watermark and its LEO, and a follower admitted before holding them could be
// elected and lose them. Lag time is not checked: a follower decides it is
// in sync by the high watermark alone, and the leader agrees.
func (s *LeaderState) maybeExpandISR(r *ReplicaState, highWatermark int64) *AlterPartitionProposal {
	if s.pending != nil || slices.Contains(s.isr, r.BrokerID) || !s.isReplicaISREligible(r) {
		return nil
	}
	if r.LogEndOffset < highWatermark || r.LogEndOffset < s.epochStartOffset {
		return nil
	}
	// The new member counts toward the high watermark at once (the maximal
	// ISR): should the controller refuse, the stricter set did no harm.
	return s.propose(ISRExpand, []int32{r.BrokerID}, append(slices.Clone(s.isr), r.BrokerID))
}

// OutOfSyncReplicas lists the ISR followers that have not been caught up
// within maxLagMs (Kafka's getOutOfSyncReplicas). That covers a stuck
// follower (no fetch for maxLagMs) and a slow one (fetching, but never
// reaching the LEO for maxLagMs); a follower at the leader's LEO is never out
// of sync. Empty while an ISR change is in flight.
func (s *LeaderState) OutOfSyncReplicas(leaderLogEndOffset, nowMs, maxLagMs int64) []int32 {
	if s.pending != nil {
		return nil
	}
	var out []int32
	for _, id := range s.isr {
		if id == s.localID {
			continue
		}
		r, ok := s.followers[id]
		if !ok || !r.IsCaughtUp(leaderLogEndOffset, nowMs, maxLagMs) {
			out = append(out, id)
		}
	}
	return out
}

// MaybeShrinkISR proposes removing the followers that lag more than
// replica.lag.time.max.ms (Kafka's maybeShrinkIsr, run by the replica
// manager every half lag time). Nil when none lag or a change is in flight.
// Until the controller commits it, the removed followers still count for
// the high watermark: were the change refused, advancing without them would
// have exposed records they never had.
func (s *LeaderState) MaybeShrinkISR(leaderLogEndOffset, nowMs int64) *AlterPartitionProposal {
	out := s.OutOfSyncReplicas(leaderLogEndOffset, nowMs, s.cfg.ReplicaLagTimeMaxMs)
	if len(out) == 0 {
		return nil
	}
	newISR := slices.DeleteFunc(slices.Clone(s.isr), func(id int32) bool { return slices.Contains(out, id) })
	return s.propose(ISRShrink, out, newISR)
}

// propose marks a change in flight and builds its AlterPartition entry.
func (s *LeaderState) propose(change ISRChange, replicas, newISR []int32) *AlterPartitionProposal {
	p := &AlterPartitionProposal{
		Change:         change,
		Replicas:       replicas,
		LeaderID:       s.localID,
		LeaderEpoch:    s.leaderEpoch,
		PartitionEpoch: s.partitionEpoch,
		NewISR:         make([]ISRMember, len(newISR)),
	}
	for i, id := range newISR {
		p.NewISR[i] = ISRMember{BrokerID: id, BrokerEpoch: s.brokerEpochForISR(id)}
	}
	s.pending = p
	return p
}

// brokerEpochForISR is the broker epoch sent for an ISR member. A member
// that has not fetched in this leadership is sent -1: if it crashed
// meanwhile, the controller has removed it and bumped the partition epoch,
// which rejects this request anyway.
func (s *LeaderState) brokerEpochForISR(id int32) int64 {
	if id == s.localID {
		return s.cfg.LocalBrokerEpoch
	}
	if r, ok := s.followers[id]; ok && r.BrokerEpoch != NoBrokerEpoch {
		return r.BrokerEpoch
	}
	return -1
}

// AlterPartitionOutcome says what the controller's answer did.
type AlterPartitionOutcome struct {
	// Ignored is set when the answer was for a proposal no longer in flight
	// (metadata replaced it), or carried a stale leader or partition epoch.
	Ignored bool
	// Committed is set when the answer became the committed ISR; the caller
	// marks IsrExpandsPerSec or IsrShrinksPerSec by the proposal's Change.
	Committed bool
	// Reverted is set when the controller said the change was not applied
	// and the state went back to the last committed ISR, so a new change
	// can be proposed.
	Reverted bool
	// Retry asks the caller to send the same proposal again.
	Retry bool
	// Failed counts toward the failed-ISR-update metric.
	Failed bool
	// HighWatermarkIncreased is set when HighWatermark is above the high
	// watermark the call was given: the caller stores it in the log and
	// completes delayed operations.
	HighWatermarkIncreased bool
	// HighWatermark is the high watermark after the answer.
	HighWatermark int64
}

// OnAlterPartitionResponse applies the controller's answer to sent (Kafka's
// submitAlterPartition completion): result is the partition state the
// controller returned when err is nil. An answer to anything but the change
// in flight is ignored. On success the committed ISR and partition epoch are
// replaced (an equal partition epoch means the controller already had this
// ISR); a different leader epoch or an older partition epoch leaves the
// change in flight until metadata arrives. OPERATION_NOT_ATTEMPTED and
// INELIGIBLE_REPLICA mean the controller did not apply it and the epoch is
// right, so the state reverts to the last committed ISR. Other Kafka errors
// the controller can answer (FENCED_LEADER_EPOCH, INVALID_UPDATE_VERSION,
// UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_ID, INVALID_REQUEST,
// NEW_LEADER_ELECTED) leave it in flight until metadata arrives; anything
// else (a timeout, a lost connection) asks for a retry. highWatermark is the
// log's current high watermark.
func (s *LeaderState) OnAlterPartitionResponse(sent *AlterPartitionProposal, result LeaderAndISR, err error, leaderLogEndOffset, highWatermark, nowMs int64) AlterPartitionOutcome {
	if sent == nil || sent != s.pending {
		return AlterPartitionOutcome{Ignored: true, HighWatermark: highWatermark}
	}
	if err != nil {
		switch {
		case errors.Is(err, kerr.OperationNotAttempted), errors.Is(err, kerr.IneligibleReplica):
			s.pending = nil
			return AlterPartitionOutcome{Reverted: true, Failed: true, HighWatermark: highWatermark}
		case errors.Is(err, kerr.UnknownTopicOrPartition), errors.Is(err, kerr.UnknownTopicID),
			errors.Is(err, kerr.FencedLeaderEpoch), errors.Is(err, kerr.InvalidUpdateVersion),
			errors.Is(err, kerr.InvalidRequest), errors.Is(err, kerr.NewLeaderElected):
			return AlterPartitionOutcome{Failed: true, HighWatermark: highWatermark}
		default:
			return AlterPartitionOutcome{Retry: true, Failed: true, HighWatermark: highWatermark}
		}
	}
	if result.LeaderEpoch != s.leaderEpoch || result.PartitionEpoch < s.partitionEpoch {
		return AlterPartitionOutcome{Ignored: true, Failed: true, HighWatermark: highWatermark}
	}
	s.isr = slices.Clone(result.ISR)
	s.partitionEpoch = result.PartitionEpoch
	s.pending = nil
	out := AlterPartitionOutcome{Committed: true}
	out.HighWatermark, out.HighWatermarkIncreased = s.maybeIncrementHighWatermark(leaderLogEndOffset, highWatermark, nowMs)
	return out
}
