// Package partition is one partition's state as this broker sees it: the log,
// the leader epoch, the replica set and ISR, and the high watermark rule.
// It is driven by the replica manager, which owns goroutines and time.
//
// LeaderState (leader_state.go, isr_change.go, replicas.go) is the leader's
// replica bookkeeping as a pure state machine: followers' fetch state, the
// high watermark, ISR expand/shrink proposals for AlterPartition, and the
// min.insync.replicas checks for acks=all. The follower's decisions
// (follower_state.go) are pure functions next to it: what to do with a
// fetch answer (append, truncate to a diverging epoch's end, start over at
// the leader's log start) and which high watermark and log start to adopt.
//
// Partition never calls up into its driver: its operations return Effects
// (effects.go) — complete the delayed operations, send an AlterPartition —
// and the broker's settings come in as plain values (ReplicationConfig).
// The high watermark lives only in the log, which readers load without a
// lock; the leader bookkeeping computes the next one from it.
package partition

import (
	"fmt"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"

	"gregor/internal/config"
	"gregor/internal/log"
	"gregor/internal/record"
)

// Partition is a partition hosted on this broker.
type Partition struct {
	TopicPartition log.TopicPartition
	TopicID        [16]byte
	nodeID         int32
	log            *log.Log

	mu          sync.RWMutex
	leader      int32
	leaderEpoch int32
	replicas    []int32
	isr         []int32
	cfg         config.Topic
	// state is the leader's replica bookkeeping while this broker leads.
	state *LeaderState
	repl  ReplicationConfig
}

// New wraps an opened log. The partition is not leader until MakeLeader.
func New(tp log.TopicPartition, topicID [16]byte, nodeID int32, l *log.Log, cfg config.Topic) *Partition {
	return &Partition{TopicPartition: tp, TopicID: topicID, nodeID: nodeID, log: l, leader: -1, cfg: cfg,
		repl: ReplicationConfig{LocalBrokerEpoch: -1}}
}

// Log is the partition's local log.
func (p *Partition) Log() *log.Log { return p.log }

// Update applies the metadata's view of the partition (leader, epochs,
// replicas, ISR). Becoming leader starts the replica bookkeeping, with
// localBrokerEpoch as this broker's registration epoch; a later update of
// the same leadership is applied to it; losing leadership drops it. It
// returns no Effects: any update may change what waiting requests see (the
// leader, the epoch, the high watermark a new leader computes), so the
// caller tries them again after every one.
func (p *Partition) Update(st LeaderAndISR, localBrokerEpoch, nowMs int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.repl.LocalBrokerEpoch = localBrokerEpoch
	p.leader, p.leaderEpoch = st.Leader, st.LeaderEpoch
	p.replicas = append(p.replicas[:0], st.Replicas...)
	p.isr = append(p.isr[:0], st.ISR...)
	if st.Leader != p.nodeID {
		p.state = nil
		return
	}
	leo, hw := p.log.LogEndOffset(), p.log.HighWatermark()
	var res ApplyResult
	if p.state == nil || st.LeaderEpoch > p.state.LeaderEpoch() {
		// The new epoch starts at our log end (Kafka's makeLeader), so
		// followers diverging from us are told where to truncate.
		if err := p.log.AssignEpochStartOffset(st.LeaderEpoch, leo); err != nil {
			p.state = nil
			return
		}
		s, r, err := NewLeaderState(p.nodeID, st, leo, hw, nowMs, p.leaderConfigLocked())
		if err != nil {
			p.state = nil
			return
		}
		p.state, res = s, r
	} else {
		r, err := p.state.ApplyLeaderAndISR(st, leo, hw, nowMs)
		if err != nil {
			return
		}
		res = r
	}
	if res.HighWatermarkIncreased {
		p.raiseHighWatermarkLocked(res.HighWatermark)
	}
}

// UpdateConfig applies a changed topic configuration.
func (p *Partition) UpdateConfig(cfg config.Topic) {
	p.mu.Lock()
	p.cfg = cfg
	p.mu.Unlock()
	p.log.UpdateConfig(LogConfig(cfg))
}

// Config is the partition's effective topic configuration.
func (p *Partition) Config() config.Topic {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.cfg
}

// LeaderEpoch is the current leader epoch.
func (p *Partition) LeaderEpoch() int32 {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.leaderEpoch
}

// IsLeader reports whether this broker leads the partition.
func (p *Partition) IsLeader() bool {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.leader == p.nodeID
}

// CheckLeaderEpoch compares a client's current leader epoch (KIP-320) with
// ours: newer than ours is UNKNOWN_LEADER_EPOCH (we are behind), older is
// FENCED_LEADER_EPOCH (the client is behind); -1 skips the check.
func (p *Partition) CheckLeaderEpoch(current int32) error {
	if current < 0 {
		return nil
	}
	epoch := p.LeaderEpoch()
	switch {
	case current > epoch:
		return kerr.UnknownLeaderEpoch
	case current < epoch:
		return kerr.FencedLeaderEpoch
	}
	return nil
}

// AppendAsLeader validates and appends a produce request's records. With
// acks=-1 the ISR must hold at least min.insync.replicas replicas.
func (p *Partition) AppendAsLeader(records []byte, acks int16, now int64) (log.AppendInfo, error) {
	return p.appendAsLeader(acks, now, func(epoch int32, opts record.ValidateOptions) (log.AppendInfo, error) {
		return p.log.AppendAsLeader(records, epoch, opts)
	})
}

// AppendAsLeaderVerified is AppendAsLeader for a transactional producer
// whose partition was verified with the transaction coordinator under
// guard (log.Log.AppendAsLeaderVerified).
func (p *Partition) AppendAsLeaderVerified(records []byte, acks int16, now int64, guard log.VerificationGuard) (log.AppendInfo, error) {
	return p.appendAsLeader(acks, now, func(epoch int32, opts record.ValidateOptions) (log.AppendInfo, error) {
		return p.log.AppendAsLeaderVerified(records, epoch, opts, guard)
	})
}

// AppendAsCoordinator appends one batch a coordinator built (a transaction
// marker, a transactional offset commit: Kafka's AppendOrigin.COORDINATOR)
// with acks=-1 (log.Log.AppendAsCoordinator).
func (p *Partition) AppendAsCoordinator(records []byte, transactionVersion int16, now int64) (log.AppendInfo, error) {
	return p.appendAsLeader(-1, now, func(epoch int32, opts record.ValidateOptions) (log.AppendInfo, error) {
		return p.log.AppendAsCoordinator(records, epoch, transactionVersion, opts)
	})
}

// appendAsLeader checks leadership and, for acks=-1, min.insync.replicas,
// appends with the current leader epoch, and moves the high watermark. It
// returns no Effects: an append always moves the log end, which waiting
// follower fetches watch, so the caller tries the partition's waiters after
// every append whether the high watermark rose or not.
func (p *Partition) appendAsLeader(acks int16, now int64, appendFn func(epoch int32, opts record.ValidateOptions) (log.AppendInfo, error)) (log.AppendInfo, error) {
	p.mu.RLock()
	if p.leader != p.nodeID {
		p.mu.RUnlock()
		return log.AppendInfo{}, kerr.NotLeaderForPartition
	}
	if p.state != nil {
		if err := p.state.CheckEnoughReplicasForAppend(acks); err != nil {
			p.mu.RUnlock()
			return log.AppendInfo{}, err
		}
	}
	opts := ValidateOptions(p.cfg, now)
	opts.PartitionLeaderEpoch = p.leaderEpoch
	epoch := p.leaderEpoch
	p.mu.RUnlock()

	info, err := appendFn(epoch, opts)
	if err != nil {
		return info, fmt.Errorf("append to %s: %w", p.TopicPartition, err)
	}
	p.mu.Lock()
	if p.state != nil {
		if hw, raised := p.state.MaybeIncrementHighWatermark(p.log.LogEndOffset(), p.log.HighWatermark(), now); raised {
			p.raiseHighWatermarkLocked(hw)
		}
	}
	p.mu.Unlock()
	return info, nil
}

// raiseHighWatermarkLocked stores a high watermark the leader bookkeeping
// raised in the log: the log holds the partition's only high watermark, read
// without a lock by fetches, the replication-offset-checkpoint and the
// answers to followers. The bookkeeping computed hw from the log's value
// under p.mu, the only lock a leader's high watermark moves under, so the
// check only guards against the log having lowered it meanwhile (a
// truncation); SetHighWatermark bounds it by the log end.
func (p *Partition) raiseHighWatermarkLocked(hw int64) {
	if hw > p.log.HighWatermark() {
		p.log.SetHighWatermark(hw)
	}
}

// HighWatermark is the offset below which records are committed. It is the
// log's, read without a lock; the leader bookkeeping keeps no copy.
func (p *Partition) HighWatermark() int64 { return p.log.HighWatermark() }

// LastStableOffset bounds read_committed consumers: the first offset of the
// oldest transaction that is open or whose marker is not yet replicated,
// capped by the high watermark (Kafka's UnifiedLog.lastStableOffset). A
// follower computes it the same way from the markers it replicated and the
// high watermark it learnt from its leader.
func (p *Partition) LastStableOffset() int64 { return p.log.LastStableOffset() }

// LogConfig maps a topic configuration to the log's settings.
func LogConfig(t config.Topic) log.Config {
	return log.Config{
		SegmentBytes:          t.SegmentBytes,
		SegmentMs:             t.SegmentMs,
		SegmentJitterMs:       t.SegmentJitterMs,
		SegmentIndexBytes:     t.SegmentIndexBytes,
		IndexIntervalBytes:    t.IndexIntervalBytes,
		FlushIntervalMessages: t.FlushMessages,
		FlushIntervalMs:       t.FlushMs,
		Preallocate:           t.Preallocate,
		FileDeleteDelayMs:     t.FileDeleteDelayMs,
		DeleteEnabled:         t.Delete(),
		RetentionMs:           t.RetentionMs,
		RetentionBytes:        t.RetentionBytes,

		Compact:                t.Compact(),
		DeleteRetentionMs:      t.DeleteRetentionMs,
		MinCompactionLagMs:     t.MinCompactionLagMs,
		MaxCompactionLagMs:     t.MaxCompactionLagMs,
		MinCleanableDirtyRatio: t.MinCleanableDirtyRatio,
	}
}

// ValidateOptions maps a topic configuration to the produce validator's options.
func ValidateOptions(t config.Topic, now int64) record.ValidateOptions {
	opts := record.ValidateOptions{
		Now:                  now,
		MaxMessageBytes:      t.MaxMessageBytes,
		LogAppendTime:        t.MessageTimestampType == "LogAppendTime",
		TimestampBeforeMaxMs: t.MessageTimestampBeforeMaxMs,
		TimestampAfterMaxMs:  t.MessageTimestampAfterMaxMs,
	}
	opts.Compacted = t.Compact()
	switch t.CompressionType {
	case "producer", "":
		opts.UseProducerCodec = true
	case "uncompressed":
		opts.TargetCodec = record.CodecNone
	default:
		c, err := record.ParseCodec(t.CompressionType)
		if err != nil {
			// The config layer validated the value; fall back to keeping
			// the producer's codec rather than refusing every produce.
			opts.UseProducerCodec = true
		}
		opts.TargetCodec = c
	}
	return opts
}
