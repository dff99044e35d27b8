package partition

// This file is the leader's replica bookkeeping for one partition (the
// leader half of Kafka's Partition class): followers' fetch state, the high
// watermark, the min.insync.replicas checks for acks=all, and the metrics
// predicates. ISR changes (AlterPartition) are in isr_change.go.
//
// LeaderState is a pure state machine: no goroutines, no locks, no clock, no
// log. Every call takes the current time and, where it matters, the leader's
// log end offset and high watermark. The high watermark lives in one place,
// the log (which fetch, the replication-offset-checkpoint and the followers
// read without a lock): LeaderState computes it from the followers' state but
// keeps no copy, each call that may raise it takes the log's value and
// returns the new one. The caller (Partition, driven by the replica manager)
// serialises calls, stores a raised high watermark in the log, and returns
// the rest as Effects: complete delayed operations when the high watermark
// rose, send the AlterPartition proposals.

import (
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// LeaderAndISR is the partition state the controller committed, as this
// broker learns it from the metadata log (PartitionRecord and
// PartitionChangeRecord) or from an AlterPartition response.
type LeaderAndISR struct {
	Leader         int32
	LeaderEpoch    int32
	PartitionEpoch int32
	// Replicas is the assignment in preference order, leader included.
	Replicas []int32
	// ISR is the committed in-sync replica set, leader included.
	ISR []int32
	// AddingReplicas are replicas a reassignment is adding; they do not
	// count toward the replication factor (UnderReplicatedPartitions).
	AddingReplicas []int32
}

// BrokerRegistry is what the leader needs to know about other brokers from
// the metadata image for KIP-841 and KIP-903: only a registered, unfenced,
// not-shutting-down broker whose fetch carries its current broker epoch may
// join the ISR.
type BrokerRegistry interface {
	// AliveBrokerEpoch is the epoch of the broker's current registration;
	// false when the broker is not registered.
	AliveBrokerEpoch(brokerID int32) (int64, bool)
	IsBrokerFenced(brokerID int32) bool
	IsBrokerShuttingDown(brokerID int32) bool
}

// LeaderConfig holds the settings the bookkeeping reads.
type LeaderConfig struct {
	// ReplicaLagTimeMaxMs is replica.lag.time.max.ms (Kafka's default 30000).
	ReplicaLagTimeMaxMs int64
	// MinInsyncReplicas is the topic's min.insync.replicas.
	MinInsyncReplicas int32
	// LocalBrokerEpoch is this broker's registration epoch, sent for the
	// leader in AlterPartition's NewIsrWithEpochs.
	LocalBrokerEpoch int64
	// Brokers answers ISR eligibility and broker epoch fencing. Nil means
	// every broker is eligible and no fetch is fenced.
	Brokers BrokerRegistry
}

// LeaderState is the leader's bookkeeping for one partition.
//
// Invariants: the high watermark it returns is never below the one it was
// given and never exceeds the leader's LEO; it rises only while the committed
// ISR has at least min(min.insync.replicas, replication factor) members; at
// most one ISR change (AlterPartition) is in flight.
type LeaderState struct {
	localID          int32
	leaderEpoch      int32
	partitionEpoch   int32
	epochStartOffset int64
	cfg              LeaderConfig

	replicas       []int32
	addingReplicas []int32
	// followers holds every assigned replica but the leader.
	followers map[int32]*ReplicaState
	// isr is the ISR the controller committed, in the controller's order.
	isr []int32
	// pending is the ISR change in flight; nil when the state is committed
	// (Kafka's CommittedPartitionState vs PendingExpandIsr/PendingShrinkIsr).
	pending *AlterPartitionProposal
}

// NewLeaderState starts the bookkeeping when this broker becomes leader
// (Kafka's Partition.makeLeader on a broker that was not leader).
// leaderLogEndOffset becomes the leader epoch's start offset; highWatermark
// is the log's current high watermark, which the result may raise (a lone
// leader's log end is committed at once). Followers in the ISR count as
// caught up now; their LEOs are unknown, which holds the high watermark
// until each has fetched.
func NewLeaderState(localID int32, p LeaderAndISR, leaderLogEndOffset, highWatermark, nowMs int64, cfg LeaderConfig) (*LeaderState, ApplyResult, error) {
	if p.Leader != localID {
		return nil, ApplyResult{}, fmt.Errorf("become leader on broker %d: metadata names leader %d", localID, p.Leader)
	}
	s := &LeaderState{
		localID:     localID,
		leaderEpoch: p.LeaderEpoch,
		cfg:         cfg,
		followers:   make(map[int32]*ReplicaState),
	}
	s.setAssignment(p)
	s.startEpoch(p.LeaderEpoch, leaderLogEndOffset, nowMs, true)
	s.partitionEpoch = p.PartitionEpoch
	res := ApplyResult{NewLeaderEpoch: true}
	res.HighWatermark, res.HighWatermarkIncreased = s.maybeIncrementHighWatermark(leaderLogEndOffset, highWatermark, nowMs)
	return s, res, nil
}

// ApplyResult says what NewLeaderState or ApplyLeaderAndISR did.
type ApplyResult struct {
	// Skipped is set when the update carried an older partition epoch than
	// the one this leader already knows and was ignored.
	Skipped bool
	// NewLeaderEpoch is set when the update started a new leader epoch.
	NewLeaderEpoch bool
	// HighWatermarkIncreased is set when HighWatermark is above the high
	// watermark the call was given: the caller stores it in the log and
	// completes delayed operations.
	HighWatermarkIncreased bool
	// HighWatermark is the high watermark after the call.
	HighWatermark int64
}

// ApplyLeaderAndISR applies new metadata for a partition this broker still
// leads (Kafka's makeLeader on an existing leader). An older partition epoch
// is ignored; an equal one is accepted because an AlterPartition response may
// have taught us the epoch before the metadata log did. Any ISR change in
// flight is abandoned: the metadata is the committed truth. A new leader
// epoch starts at leaderLogEndOffset and resets the followers' timers.
// highWatermark is the log's current high watermark.
func (s *LeaderState) ApplyLeaderAndISR(p LeaderAndISR, leaderLogEndOffset, highWatermark, nowMs int64) (ApplyResult, error) {
	if p.Leader != s.localID {
		return ApplyResult{}, fmt.Errorf("apply leader and ISR on broker %d: metadata names leader %d", s.localID, p.Leader)
	}
	if p.PartitionEpoch < s.partitionEpoch {
		return ApplyResult{Skipped: true, HighWatermark: highWatermark}, nil
	}
	var res ApplyResult
	s.setAssignment(p)
	if p.LeaderEpoch > s.leaderEpoch {
		s.startEpoch(p.LeaderEpoch, leaderLogEndOffset, nowMs, false)
		res.NewLeaderEpoch = true
	}
	s.partitionEpoch = p.PartitionEpoch
	res.HighWatermark, res.HighWatermarkIncreased = s.maybeIncrementHighWatermark(leaderLogEndOffset, highWatermark, nowMs)
	return res, nil
}

// setAssignment installs replicas and the committed ISR (Kafka's
// updateAssignmentAndIsr); new followers start empty, removed ones are
// forgotten.
func (s *LeaderState) setAssignment(p LeaderAndISR) {
	s.replicas = slices.Clone(p.Replicas)
	s.addingReplicas = slices.Clone(p.AddingReplicas)
	for id := range s.followers {
		if !slices.Contains(p.Replicas, id) {
			delete(s.followers, id)
		}
	}
	for _, id := range p.Replicas {
		if id == s.localID {
			continue
		}
		if _, ok := s.followers[id]; !ok {
			r := emptyReplicaState(id)
			s.followers[id] = &r
		}
	}
	s.isr = slices.Clone(p.ISR)
	s.pending = nil
}

// startEpoch records a new leader epoch starting at leaderLogEndOffset and
// resets every follower's fetch state.
func (s *LeaderState) startEpoch(epoch int32, leaderLogEndOffset, nowMs int64, newLeader bool) {
	s.leaderEpoch = epoch
	s.epochStartOffset = leaderLogEndOffset
	for id, r := range s.followers {
		r.reset(nowMs, leaderLogEndOffset, newLeader, slices.Contains(s.isr, id))
	}
}

// FollowerFetch is one partition of a follower's Fetch request, as the
// leader sees it when the request arrives.
type FollowerFetch struct {
	ReplicaID int32
	// FetchOffset is the follower's LEO.
	FetchOffset int64
	// LogStartOffset is the follower's log start offset.
	LogStartOffset int64
	// BrokerEpoch is the ReplicaState.ReplicaEpoch of the request (KIP-903),
	// -1 when absent.
	BrokerEpoch int64
	// LeaderLogEndOffset is the leader's LEO when the fetch was read.
	LeaderLogEndOffset int64
	NowMs              int64
}

// FetchUpdate says what a follower fetch changed.
type FetchUpdate struct {
	// HighWatermarkIncreased is set when HighWatermark is above the high
	// watermark the call was given: the caller stores it in the log and
	// completes delayed produce and fetch operations.
	HighWatermarkIncreased bool
	// HighWatermark is the high watermark after the fetch.
	HighWatermark int64
	// ExpandISR is a proposal to add the follower to the ISR, already marked
	// in flight; the caller sends it with AlterPartition and reports the
	// outcome to OnAlterPartitionResponse.
	ExpandISR *AlterPartitionProposal
}

// UpdateFollowerFetch records a follower's fetch (Kafka's
// Partition.updateFollowerFetchState): update its state, propose adding it to
// the ISR if it caught up, and recompute the high watermark if its LEO moved.
// A replica outside the assignment gets UNKNOWN_LEADER_EPOCH (the follower
// retries until metadata agrees; a Fetch too old to carry a leader epoch maps
// it to NOT_LEADER_OR_FOLLOWER); a fetch with a broker epoch older than the
// broker's registration gets NOT_LEADER_OR_FOLLOWER. highWatermark is the
// log's current high watermark.
func (s *LeaderState) UpdateFollowerFetch(f FollowerFetch, highWatermark int64) (FetchUpdate, error) {
	r, ok := s.followers[f.ReplicaID]
	if !ok {
		return FetchUpdate{}, fmt.Errorf("fetch from replica %d, not assigned in leader epoch %d partition epoch %d: %w",
			f.ReplicaID, s.leaderEpoch, s.partitionEpoch, kerr.UnknownLeaderEpoch)
	}
	if s.cfg.Brokers != nil && f.BrokerEpoch != -1 {
		if registered, ok := s.cfg.Brokers.AliveBrokerEpoch(f.ReplicaID); ok && registered > f.BrokerEpoch {
			return FetchUpdate{}, fmt.Errorf("fetch from replica %d with stale broker epoch %d, registered %d: %w",
				f.ReplicaID, f.BrokerEpoch, registered, kerr.NotLeaderForPartition)
		}
	}
	prevLEO := r.LogEndOffset
	r.updateFetchState(f.FetchOffset, f.LogStartOffset, f.NowMs, f.LeaderLogEndOffset, f.BrokerEpoch)

	u := FetchUpdate{HighWatermark: highWatermark}
	u.ExpandISR = s.maybeExpandISR(r, highWatermark)
	if prevLEO != r.LogEndOffset {
		u.HighWatermark, u.HighWatermarkIncreased = s.maybeIncrementHighWatermark(f.LeaderLogEndOffset, highWatermark, f.NowMs)
	}
	return u, nil
}

// MaybeIncrementHighWatermark recomputes the high watermark after the
// leader's LEO moved (an append): it returns the new high watermark, and
// whether it is above highWatermark, the log's current one.
func (s *LeaderState) MaybeIncrementHighWatermark(leaderLogEndOffset, highWatermark, nowMs int64) (int64, bool) {
	return s.maybeIncrementHighWatermark(leaderLogEndOffset, highWatermark, nowMs)
}

// maybeIncrementHighWatermark is Kafka's maybeIncrementLeaderHW. The
// candidate is the minimum LEO over the leader, the maximal ISR (the
// committed ISR plus a replica being added), and every eligible follower
// that is caught up though not yet in the ISR. Waiting for the last group
// lets a lone leader's follower catch up instead of chasing a high watermark
// that always runs ahead; counting a pending addition is safe because a
// larger ISR only makes the high watermark harder to advance. Nothing moves
// while the committed ISR is below the effective min.insync.replicas, and
// it never goes below highWatermark, the log's current one.
func (s *LeaderState) maybeIncrementHighWatermark(leaderLogEndOffset, highWatermark, nowMs int64) (int64, bool) {
	if s.IsUnderMinISR() {
		return highWatermark, false
	}
	candidate := leaderLogEndOffset
	for _, id := range s.replicas {
		r, ok := s.followers[id]
		if !ok || r.LogEndOffset >= candidate {
			continue
		}
		if s.inMaximalISR(id) ||
			(r.IsCaughtUp(leaderLogEndOffset, nowMs, s.cfg.ReplicaLagTimeMaxMs) && s.isReplicaISREligible(r)) {
			candidate = r.LogEndOffset
		}
	}
	if candidate > highWatermark {
		return candidate, true
	}
	return highWatermark, false
}

// CheckEnoughReplicasForAppend is the check before a leader append: with
// acks=-1 the committed ISR must hold at least the effective
// min.insync.replicas, else NOT_ENOUGH_REPLICAS and nothing is written.
func (s *LeaderState) CheckEnoughReplicasForAppend(acks int16) error {
	if acks != -1 {
		return nil
	}
	if minISR := s.effectiveMinISR(); int32(len(s.isr)) < minISR {
		return fmt.Errorf("ISR %v is smaller than min.insync.replicas %d: %w", s.isr, minISR, kerr.NotEnoughReplicas)
	}
	return nil
}

// CheckEnoughReplicasReachOffset decides an acks=-1 delayed produce whose
// last batch ends before requiredOffset (its last offset + 1; Kafka's
// checkEnoughReplicasReachOffset). It completes once highWatermark, the
// log's, reaches requiredOffset; if the maximal ISR shrank below the
// effective min.insync.replicas since the append, it completes with
// NOT_ENOUGH_REPLICAS_AFTER_APPEND.
func (s *LeaderState) CheckEnoughReplicasReachOffset(highWatermark, requiredOffset int64) (done bool, err error) {
	if highWatermark < requiredOffset {
		return false, nil
	}
	maximal := s.MaximalISR()
	if minISR := s.effectiveMinISR(); int32(len(maximal)) < minISR {
		return true, fmt.Errorf("ISR %v is smaller than min.insync.replicas %d: %w", maximal, minISR, kerr.NotEnoughReplicasAfterAppend)
	}
	return true, nil
}

// effectiveMinISR caps min.insync.replicas at the replication factor, as
// Kafka does: a setting larger than the assignment cannot be met at all.
func (s *LeaderState) effectiveMinISR() int32 {
	return min(s.cfg.MinInsyncReplicas, int32(len(s.followers)+1))
}

// IsUnderMinISR reports whether the committed ISR is smaller than the
// effective min.insync.replicas (UnderMinIsrPartitionCount).
func (s *LeaderState) IsUnderMinISR() bool { return int32(len(s.isr)) < s.effectiveMinISR() }

// IsAtMinISR reports whether the committed ISR is exactly the effective
// min.insync.replicas (AtMinIsrPartitionCount).
func (s *LeaderState) IsAtMinISR() bool { return int32(len(s.isr)) == s.effectiveMinISR() }

// IsUnderReplicated reports whether the committed ISR is smaller than the
// replication factor, replicas being added by a reassignment not counted
// (UnderReplicatedPartitions).
func (s *LeaderState) IsUnderReplicated() bool {
	rf := 0
	for _, id := range s.replicas {
		if !slices.Contains(s.addingReplicas, id) {
			rf++
		}
	}
	return rf-len(s.isr) > 0
}

// LowWatermark is the smallest log start offset over the leader and the
// followers on registered brokers; a DeleteRecords request completes when it
// passes the requested offset. A follower that has not fetched yet counts as
// UnknownOffset, as in Kafka.
func (s *LeaderState) LowWatermark(leaderLogStartOffset int64) int64 {
	low := leaderLogStartOffset
	for _, id := range s.replicas {
		r, ok := s.followers[id]
		if !ok {
			continue
		}
		if s.cfg.Brokers != nil {
			if _, alive := s.cfg.Brokers.AliveBrokerEpoch(id); !alive {
				continue
			}
		}
		low = min(low, r.LogStartOffset)
	}
	return low
}

// SetConfig applies changed settings (a topic's min.insync.replicas, the
// broker's replica.lag.time.max.ms). The next call that recomputes the high
// watermark uses them.
func (s *LeaderState) SetConfig(cfg LeaderConfig) { s.cfg = cfg }

// LeaderEpoch is the current leader epoch.
func (s *LeaderState) LeaderEpoch() int32 { return s.leaderEpoch }

// PartitionEpoch is the partition epoch of the committed state; an
// AlterPartition must carry it.
func (s *LeaderState) PartitionEpoch() int32 { return s.partitionEpoch }

// EpochStartOffset is the leader's LEO when the current leader epoch began.
func (s *LeaderState) EpochStartOffset() int64 { return s.epochStartOffset }

// Replicas is the assignment, leader included.
func (s *LeaderState) Replicas() []int32 { return slices.Clone(s.replicas) }

// ISR is the committed ISR: what Metadata and DescribeTopics report, and
// what the append-time min.insync.replicas check counts.
func (s *LeaderState) ISR() []int32 { return slices.Clone(s.isr) }

// MaximalISR is the committed ISR plus a replica whose addition is in
// flight: the set the high watermark and acks=-1 wait for (KIP-497). A
// removal in flight does not shrink it, since it may yet fail.
func (s *LeaderState) MaximalISR() []int32 {
	isr := slices.Clone(s.isr)
	if s.pending != nil && s.pending.Change == ISRExpand {
		isr = append(isr, s.pending.Replicas...)
	}
	return isr
}

// Follower returns the fetch state of an assigned follower.
func (s *LeaderState) Follower(id int32) (ReplicaState, bool) {
	r, ok := s.followers[id]
	if !ok {
		return ReplicaState{}, false
	}
	return *r, true
}

func (s *LeaderState) inMaximalISR(id int32) bool {
	return slices.Contains(s.isr, id) ||
		(s.pending != nil && s.pending.Change == ISRExpand && slices.Contains(s.pending.Replicas, id))
}

// isReplicaISREligible is Kafka's KRaft isReplicaIsrEligible: the broker is
// registered, not fenced, not shutting down, and the follower's last fetch
// carried its current broker epoch or -1.
func (s *LeaderState) isReplicaISREligible(r *ReplicaState) bool {
	b := s.cfg.Brokers
	if b == nil {
		return true
	}
	registered, ok := b.AliveBrokerEpoch(r.BrokerID)
	if !ok || b.IsBrokerFenced(r.BrokerID) || b.IsBrokerShuttingDown(r.BrokerID) {
		return false
	}
	return r.BrokerEpoch != NoBrokerEpoch && (r.BrokerEpoch == -1 || r.BrokerEpoch == registered)
}
