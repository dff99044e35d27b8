package partition

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
)

// ReplicationConfig is what a partition's leader bookkeeping reads of its
// broker: plain values the replica manager passes in. Nothing in a
// partition calls up into the replica manager; what it decides comes back
// as Effects.
type ReplicationConfig struct {
	// Brokers answers ISR eligibility from the metadata image; nil makes
	// every broker eligible.
	Brokers BrokerRegistry
	// ReplicaLagTimeMaxMs is replica.lag.time.max.ms; 0 means Kafka's
	// default, 30000.
	ReplicaLagTimeMaxMs int64
	// LocalBrokerEpoch is this broker's registration epoch, -1 before it
	// registered; Update takes a newer one when it starts a leadership.
	LocalBrokerEpoch int64
}

// SetReplicationConfig installs the broker's replication settings, in the
// leader bookkeeping too if the partition is led here already; call it
// before the first Update.
func (p *Partition) SetReplicationConfig(c ReplicationConfig) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.repl = c
	if p.state != nil {
		p.state.SetConfig(p.leaderConfigLocked())
	}
}

func (p *Partition) leaderConfigLocked() LeaderConfig {
	cfg := LeaderConfig{
		ReplicaLagTimeMaxMs: p.repl.ReplicaLagTimeMaxMs,
		MinInsyncReplicas:   p.cfg.MinInsyncReplicas,
		LocalBrokerEpoch:    p.repl.LocalBrokerEpoch,
		Brokers:             p.repl.Brokers,
	}
	if cfg.ReplicaLagTimeMaxMs <= 0 {
		cfg.ReplicaLagTimeMaxMs = 30000
	}
	return cfg
}

// FollowerFetch records a follower's fetch on the leader: its log end
// offset may raise the high watermark (stored in the log before it
// returns), and a follower that caught up is proposed for the ISR. The
// Effects say what the caller must do about either.
func (p *Partition) FollowerFetch(f FollowerFetch) (Effects, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.state == nil {
		return Effects{}, fmt.Errorf("%s: %w", p.TopicPartition, errNotLeader)
	}
	u, err := p.state.UpdateFollowerFetch(f, p.log.HighWatermark())
	if err != nil {
		return Effects{}, err
	}
	if u.HighWatermarkIncreased {
		p.raiseHighWatermarkLocked(u.HighWatermark)
	}
	return Effects{HighWatermarkIncreased: u.HighWatermarkIncreased, AlterPartition: u.ExpandISR}, nil
}

// MaybeShrinkISR decides whether to drop followers that lag more than
// replica.lag.time.max.ms (the replica manager asks periodically); the
// Effects carry the AlterPartition proposal to send, if any.
func (p *Partition) MaybeShrinkISR(nowMs int64) Effects {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.state == nil {
		return Effects{}
	}
	return Effects{AlterPartition: p.state.MaybeShrinkISR(p.log.LogEndOffset(), nowMs)}
}

// OnAlterPartitionResponse applies the controller's answer to sent. The
// Effects say whether the ISR change was committed, whether the high
// watermark rose (stored in the log before it returns), and, when the answer
// asks for it, to send sent again.
func (p *Partition) OnAlterPartitionResponse(sent *AlterPartitionProposal, result LeaderAndISR, err error, nowMs int64) Effects {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.state == nil {
		return Effects{}
	}
	out := p.state.OnAlterPartitionResponse(sent, result, err, p.log.LogEndOffset(), p.log.HighWatermark(), nowMs)
	eff := Effects{HighWatermarkIncreased: out.HighWatermarkIncreased}
	if out.Committed {
		p.isr = append(p.isr[:0], result.ISR...)
		eff.ISRCommitted = sent.Change
	}
	if out.HighWatermarkIncreased {
		p.raiseHighWatermarkLocked(out.HighWatermark)
	}
	if out.Retry {
		eff.AlterPartition = sent
	}
	return eff
}

// ReachedOffset reports whether an acks=all append ending before
// requiredOffset is acknowledged: the high watermark passed it (done), or
// the ISR fell below min.insync.replicas (an error).
func (p *Partition) ReachedOffset(requiredOffset int64) (bool, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.state == nil {
		return false, fmt.Errorf("%s: %w", p.TopicPartition, errNotLeader)
	}
	return p.state.CheckEnoughReplicasReachOffset(p.log.HighWatermark(), requiredOffset)
}

// ReachedHighWatermark reports whether the high watermark of a led
// partition passed requiredOffset: the records before it are committed.
func (p *Partition) ReachedHighWatermark(requiredOffset int64) (bool, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.state == nil {
		return false, fmt.Errorf("%s: %w", p.TopicPartition, errNotLeader)
	}
	return p.log.HighWatermark() >= requiredOffset, nil
}

// IsUnderReplicated reports a led partition whose ISR is smaller than its
// replica set (UnderReplicatedPartitions).
func (p *Partition) IsUnderReplicated() bool {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.state != nil && p.state.IsUnderReplicated()
}

// errNotLeader is NOT_LEADER_OR_FOLLOWER for calls that need leadership.
var errNotLeader = kerr.NotLeaderForPartition

// IsUnderMinISR reports a led partition whose ISR is below
// min.insync.replicas (UnderMinIsrPartitionCount).
func (p *Partition) IsUnderMinISR() bool {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.state != nil && p.state.IsUnderMinISR()
}

// IsAtMinISR reports a led partition whose ISR is exactly
// min.insync.replicas (AtMinIsrPartitionCount).
func (p *Partition) IsAtMinISR() bool {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.state != nil && p.state.IsAtMinISR()
}

// Follower returns a follower's fetch state as the leader knows it.
func (p *Partition) Follower(id int32) (ReplicaState, bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.state == nil {
		return ReplicaState{}, false
	}
	return p.state.Follower(id)
}

// ISR is the committed in-sync replica set as this broker knows it.
func (p *Partition) ISR() []int32 {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return append([]int32(nil), p.isr...)
}

// AsFollower runs fn while this broker follows the partition in leader
// epoch epoch, holding off leadership changes until it returns; once the
// partition is led here or its epoch moved on, fn is not run (false). A
// fetch answer from a former leader thus never lands in a log that has
// started its own epoch.
func (p *Partition) AsFollower(epoch int32, fn func() error) (bool, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.leader == p.nodeID || p.leaderEpoch != epoch {
		return false, nil
	}
	return true, fn()
}
