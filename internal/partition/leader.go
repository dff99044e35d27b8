package partition

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Hooks connect a partition to its broker: what the leader bookkeeping needs
// to know about other brokers, and where its ISR changes go.
type Hooks struct {
	// Brokers answers ISR eligibility from the metadata image.
	Brokers BrokerRegistry
	// LocalBrokerEpoch is this broker's registration epoch.
	LocalBrokerEpoch func() int64
	// ReplicaLagTimeMaxMs is replica.lag.time.max.ms.
	ReplicaLagTimeMaxMs int64
	// ProposeISR sends an ISR change with AlterPartition, without
	// blocking; the answer comes back through OnAlterPartitionResponse.
	ProposeISR func(p *Partition, prop *AlterPartitionProposal)
}

// SetHooks installs the broker's hooks; call before the first Update.
func (p *Partition) SetHooks(h Hooks) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.hooks = h
	if p.state != nil {
		p.state.SetConfig(p.leaderConfigLocked())
	}
}

func (p *Partition) leaderConfigLocked() LeaderConfig {
	cfg := LeaderConfig{
		ReplicaLagTimeMaxMs: p.hooks.ReplicaLagTimeMaxMs,
		MinInsyncReplicas:   p.cfg.MinInsyncReplicas,
		LocalBrokerEpoch:    -1,
		Brokers:             p.hooks.Brokers,
	}
	if cfg.ReplicaLagTimeMaxMs <= 0 {
		cfg.ReplicaLagTimeMaxMs = 30000
	}
	if p.hooks.LocalBrokerEpoch != nil {
		cfg.LocalBrokerEpoch = p.hooks.LocalBrokerEpoch()
	}
	return cfg
}

// FollowerFetch records a follower's fetch on the leader: its log end
// offset moves the high watermark, and a follower that caught up is
// proposed for the ISR. It reports whether the high watermark rose.
func (p *Partition) FollowerFetch(f FollowerFetch) (bool, error) {
	p.mu.Lock()
	if p.state == nil {
		p.mu.Unlock()
		return false, fmt.Errorf("%s: %w", p.TopicPartition, errNotLeader)
	}
	u, err := p.state.UpdateFollowerFetch(f, p.log.HighWatermark())
	if err != nil {
		p.mu.Unlock()
		return false, err
	}
	if u.HighWatermarkIncreased {
		p.raiseHighWatermarkLocked(u.HighWatermark)
	}
	propose := p.hooks.ProposeISR
	p.mu.Unlock()
	if u.ExpandISR != nil && propose != nil {
		propose(p, u.ExpandISR)
	}
	return u.HighWatermarkIncreased, nil
}

// MaybeShrinkISR proposes dropping followers that lag more than
// replica.lag.time.max.ms (called periodically by the replica manager).
func (p *Partition) MaybeShrinkISR(nowMs int64) {
	p.mu.Lock()
	if p.state == nil {
		p.mu.Unlock()
		return
	}
	prop := p.state.MaybeShrinkISR(p.log.LogEndOffset(), nowMs)
	propose := p.hooks.ProposeISR
	p.mu.Unlock()
	if prop != nil && propose != nil {
		propose(p, prop)
	}
}

// OnAlterPartitionResponse applies the controller's answer to an ISR change
// and reports whether to send it again.
func (p *Partition) OnAlterPartitionResponse(sent *AlterPartitionProposal, result LeaderAndISR, err error, nowMs int64) (retry bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.state == nil {
		return false
	}
	out := p.state.OnAlterPartitionResponse(sent, result, err, p.log.LogEndOffset(), p.log.HighWatermark(), nowMs)
	if out.Committed {
		p.isr = append(p.isr[:0], result.ISR...)
	}
	if out.HighWatermarkIncreased {
		p.raiseHighWatermarkLocked(out.HighWatermark)
	}
	return out.Retry
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
