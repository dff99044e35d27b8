package replica

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/log"
	"gregor/internal/partition"
)

// ReplicationConfig connects the replica manager to the rest of the broker
// for replication: how to reach the controller and the other brokers.
type ReplicationConfig struct {
	// AlterPartition sends an ISR change to the active controller.
	AlterPartition func(ctx context.Context, req *kmsg.AlterPartitionRequest) (*kmsg.AlterPartitionResponse, error)
	// BrokerEpoch is this broker's registration epoch (-1 before).
	BrokerEpoch func() int64
	// ReplicaLagTimeMaxMs is replica.lag.time.max.ms.
	ReplicaLagTimeMaxMs int64
	// OnISRChange, if set, hears of each committed ISR change of a
	// partition this broker leads: "expand" or "shrink" (metrics).
	OnISRChange func(change string)
	Fetcher     FetcherConfig
	// LeaderQuota and FollowerQuota are the replication throttles
	// (quota.Replication, KIP-73): the leader side applies to the fetch
	// answers this broker sends followers, the follower side to the
	// fetches its replica fetchers make. Nil: no throttle.
	LeaderQuota, FollowerQuota ReplicationQuota
}

// ReplicationQuota is one side's replication throttle (quota.Replication):
// which partitions it throttles here, whether its rate is over its bound,
// and the throttled bytes moved.
type ReplicationQuota interface {
	IsThrottled(topic string, partition int32) bool
	IsQuotaExceeded() bool
	Record(bytes int)
}

// leaderThrottled is Kafka's shouldLeaderThrottle: a follower outside the
// ISR of a throttled partition gets no records while the leader's rate is
// over its bound. An ISR member always does: throttling it would hold back
// the high watermark.
func (m *Manager) leaderThrottled(topic string, p int32, part *partition.Partition, follower int32) bool {
	q := m.repl.LeaderQuota
	return q != nil && q.IsThrottled(topic, p) && !slices.Contains(part.ISR(), follower) && q.IsQuotaExceeded()
}

// imageBrokers answers the leader bookkeeping's questions about brokers
// from the latest metadata image.
type imageBrokers struct{ m *Manager }

func (b imageBrokers) AliveBrokerEpoch(id int32) (int64, bool) {
	r, ok := b.m.Image().Brokers[id]
	if !ok {
		return 0, false
	}
	return r.Epoch, true
}

func (b imageBrokers) IsBrokerFenced(id int32) bool {
	r, ok := b.m.Image().Brokers[id]
	return !ok || r.Fenced
}

func (b imageBrokers) IsBrokerShuttingDown(id int32) bool {
	r, ok := b.m.Image().Brokers[id]
	return ok && r.InControlledShutdown
}

// replicationConfig is what the partitions' leader bookkeeping reads of
// this broker (before StartReplication: no broker epoch yet, the default
// lag time).
func (m *Manager) replicationConfig() partition.ReplicationConfig {
	return partition.ReplicationConfig{
		Brokers:             imageBrokers{m},
		ReplicaLagTimeMaxMs: m.repl.ReplicaLagTimeMaxMs,
		LocalBrokerEpoch:    m.localBrokerEpoch(),
	}
}

// localBrokerEpoch is this broker's registration epoch, -1 before it
// registered or before StartReplication.
func (m *Manager) localBrokerEpoch() int64 {
	if m.repl.BrokerEpoch == nil {
		return -1
	}
	return m.repl.BrokerEpoch()
}

// applyEffects carries out what a partition operation decided: requests
// waiting on the partition are tried again when its high watermark rose,
// and an ISR change goes to the controller.
func (m *Manager) applyEffects(p *partition.Partition, eff partition.Effects) {
	if eff.HighWatermarkIncreased {
		m.partitionChanged(p.TopicPartition)
	}
	if eff.AlterPartition != nil {
		m.alterPartition(p, eff.AlterPartition)
	}
}

// alterPartition sends an ISR change to the controller in the background
// and hands each answer back to the partition, resending while the
// partition's Effects ask for it.
func (m *Manager) alterPartition(p *partition.Partition, prop *partition.AlterPartitionProposal) {
	if m.repl.AlterPartition == nil {
		return
	}
	m.bg.Add(1)
	go func() {
		defer m.bg.Done()
		for attempt := 0; ; attempt++ {
			result, err := m.sendAlterPartition(p, prop)
			eff := p.OnAlterPartitionResponse(prop, result, err, m.cfg.Now().UnixMilli())
			if eff.ISRCommitted != 0 {
				m.cfg.Logger.Info("ISR changed", "partition", p.TopicPartition, "change", eff.ISRCommitted, "isr", result.ISR, "partitionEpoch", result.PartitionEpoch)
				if m.repl.OnISRChange != nil {
					m.repl.OnISRChange(eff.ISRCommitted.String())
				}
			}
			if eff.HighWatermarkIncreased {
				m.partitionChanged(p.TopicPartition)
			}
			if eff.AlterPartition == nil {
				if err != nil {
					m.cfg.Logger.Warn("ISR change not applied", "partition", p.TopicPartition, "change", prop.Change, "err", err)
				}
				return
			}
			prop = eff.AlterPartition
			select {
			case <-m.stopping:
				return
			case <-time.After(min(time.Duration(attempt+1)*100*time.Millisecond, time.Second)):
			}
		}
	}()
}

func (m *Manager) sendAlterPartition(p *partition.Partition, prop *partition.AlterPartitionProposal) (partition.LeaderAndISR, error) {
	req := kmsg.NewPtrAlterPartitionRequest()
	req.Version = 3
	req.BrokerID, req.BrokerEpoch = m.cfg.NodeID, m.repl.BrokerEpoch()
	t := kmsg.NewAlterPartitionRequestTopic()
	t.TopicID = p.TopicID
	rp := kmsg.NewAlterPartitionRequestTopicPartition()
	rp.Partition = p.TopicPartition.Partition
	rp.LeaderEpoch, rp.PartitionEpoch = prop.LeaderEpoch, prop.PartitionEpoch
	for _, mem := range prop.NewISR {
		e := kmsg.NewAlterPartitionRequestTopicPartitionNewEpochISR()
		e.BrokerID, e.BrokerEpoch = mem.BrokerID, mem.BrokerEpoch
		rp.NewEpochISR = append(rp.NewEpochISR, e)
	}
	t.Partitions = append(t.Partitions, rp)
	req.Topics = append(req.Topics, t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := m.repl.AlterPartition(ctx, req)
	if err != nil {
		return partition.LeaderAndISR{}, err
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return partition.LeaderAndISR{}, err
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return partition.LeaderAndISR{}, errors.New("AlterPartition answer without the partition")
	}
	ap := resp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(ap.ErrorCode); err != nil {
		return partition.LeaderAndISR{}, err
	}
	return partition.LeaderAndISR{Leader: ap.LeaderID, LeaderEpoch: ap.LeaderEpoch, PartitionEpoch: ap.PartitionEpoch,
		Replicas: prop.Replicas, ISR: ap.ISR}, nil
}

// shrinkLoop drops lagging followers from the ISRs this broker leads,
// checking every half replica.lag.time.max.ms as Kafka does.
func (m *Manager) shrinkLoop(ctx context.Context) {
	interval := time.Duration(max(m.repl.ReplicaLagTimeMaxMs/2, 10)) * time.Millisecond
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := m.cfg.Now().UnixMilli()
		m.mu.RLock()
		parts := make([]*partition.Partition, 0, len(m.partitions))
		for _, p := range m.partitions {
			parts = append(parts, p)
		}
		m.mu.RUnlock()
		for _, p := range parts {
			m.applyEffects(p, p.MaybeShrinkISR(now))
		}
	}
}

// ReplicaFetch is one partition of a follower's Fetch.
type ReplicaFetch struct {
	ReplicaID          int32
	BrokerEpoch        int64
	CurrentLeaderEpoch int32
	FetchOffset        int64
	LogStartOffset     int64
	LastFetchedEpoch   int32
	MaxBytes           int32
	MinOneBatch        bool
}

// ReadAsReplica answers a follower's fetch on the leader: records up to the
// log end (not the high watermark), a diverging epoch when the follower's
// log went another way (KIP-320), and the follower's progress recorded,
// which may move the high watermark and grow the ISR. The records are
// copied into FetchResult.Records.
func (m *Manager) ReadAsReplica(topic string, p int32, f ReplicaFetch) (FetchResult, *kmsg.FetchResponseTopicPartitionDivergingEpoch) {
	return m.readAsReplica(topic, p, f, false)
}

// ReadFileRangeAsReplica is ReadAsReplica with the records left in their
// segment file (FetchResult.File, released by the caller once sent): a
// follower's fetch is sent with sendfile like a consumer's.
func (m *Manager) ReadFileRangeAsReplica(topic string, p int32, f ReplicaFetch) (FetchResult, *kmsg.FetchResponseTopicPartitionDivergingEpoch) {
	return m.readAsReplica(topic, p, f, true)
}

func (m *Manager) readAsReplica(topic string, p int32, f ReplicaFetch, zeroCopy bool) (FetchResult, *kmsg.FetchResponseTopicPartitionDivergingEpoch) {
	part, err := m.Leader(topic, p)
	if err != nil {
		return FetchResult{Err: err, HighWatermark: -1, LastStableOffset: -1, LogStartOffset: -1}, nil
	}
	l := part.Log()
	if err := part.CheckLeaderEpoch(f.CurrentLeaderEpoch); err != nil {
		return FetchResult{Err: err, HighWatermark: -1, LastStableOffset: -1, LogStartOffset: -1}, nil
	}
	if d := divergingEpoch(l, f.LastFetchedEpoch, f.FetchOffset); d != nil {
		return FetchResult{HighWatermark: part.HighWatermark(), LastStableOffset: part.LastStableOffset(), LogStartOffset: l.LogStartOffset()}, d
	}
	now := m.cfg.Now().UnixMilli()
	if f.FetchOffset >= l.LogStartOffset() && f.FetchOffset <= l.LogEndOffset() {
		eff, err := part.FollowerFetch(partition.FollowerFetch{ReplicaID: f.ReplicaID, FetchOffset: f.FetchOffset,
			LogStartOffset: f.LogStartOffset, BrokerEpoch: f.BrokerEpoch, LeaderLogEndOffset: l.LogEndOffset(), NowMs: now})
		if err != nil {
			return FetchResult{Err: err, HighWatermark: -1, LastStableOffset: -1, LogStartOffset: -1}, nil
		}
		m.applyEffects(part, eff)
	}
	res := FetchResult{HighWatermark: part.HighWatermark(), LastStableOffset: part.LastStableOffset(), LogStartOffset: l.LogStartOffset(),
		File: log.FileRange{FirstBatchOffset: -1}}
	if m.leaderThrottled(topic, p, part, f.ReplicaID) {
		// The follower's progress is recorded above; it just gets no
		// records this time (Kafka answers an empty record set).
		return res, nil
	}
	if zeroCopy {
		res.File, err = l.ReadFileRange(f.FetchOffset, f.MaxBytes, l.LogEndOffset(), f.MinOneBatch)
	} else {
		var info log.ReadInfo
		info, err = l.Read(f.FetchOffset, f.MaxBytes, l.LogEndOffset(), f.MinOneBatch)
		res.Records = info.Records
	}
	if err != nil {
		if errors.Is(err, log.ErrOffsetOutOfRange) {
			err = kerr.OffsetOutOfRange
		}
		res.Err = err
	}
	if q := m.repl.LeaderQuota; q != nil && q.IsThrottled(topic, p) {
		// Kafka records the throttled partitions' bytes of each answer
		// sent. A follower's fetch is answered by this read unless it read
		// less than replica.fetch.min.bytes (1 by default: nothing); with
		// a larger setting a short read is read again after the wait and
		// counts twice, which only makes the throttle stricter.
		q.Record(int(res.File.Size) + len(res.Records))
	}
	return res, nil
}

// divergingEpoch is Kafka's KIP-320 check: the fetcher's last fetched epoch
// ends earlier here than its fetch offset (or is unknown here), so its log
// diverged; the answer tells it where ours ends for that epoch.
func divergingEpoch(l *log.Log, lastFetchedEpoch int32, fetchOffset int64) *kmsg.FetchResponseTopicPartitionDivergingEpoch {
	if lastFetchedEpoch < 0 {
		return nil
	}
	epoch, end := l.EndOffsetForEpoch(lastFetchedEpoch)
	if epoch == log.UndefinedEpoch || end < 0 {
		return nil
	}
	if end < fetchOffset || epoch < lastFetchedEpoch {
		d := kmsg.NewFetchResponseTopicPartitionDivergingEpoch()
		d.Epoch, d.EndOffset = epoch, end
		return &d
	}
	return nil
}

// DivergingEpoch is the KIP-320 check for a consumer's fetch.
func (m *Manager) DivergingEpoch(topic string, p int32, lastFetchedEpoch int32, fetchOffset int64) *kmsg.FetchResponseTopicPartitionDivergingEpoch {
	part, err := m.Leader(topic, p)
	if err != nil {
		return nil
	}
	return divergingEpoch(part.Log(), lastFetchedEpoch, fetchOffset)
}

// OffsetForLeaderEpoch answers Kafka's OffsetForLeaderEpoch for one
// partition: the end offset of the requested epoch in the leader's log.
func (m *Manager) OffsetForLeaderEpoch(topic string, p int32, currentLeaderEpoch, leaderEpoch int32) (epoch int32, endOffset int64, err error) {
	part, err := m.Leader(topic, p)
	if err != nil {
		return -1, -1, err
	}
	if err := part.CheckLeaderEpoch(currentLeaderEpoch); err != nil {
		return -1, -1, err
	}
	epoch, endOffset = part.Log().EndOffsetForEpoch(leaderEpoch)
	return epoch, endOffset, nil
}

// StartReplication starts following leaders and checking the ISRs this
// broker leads; partitions hosted from then on take part. Close stops it.
func (m *Manager) StartReplication(cfg ReplicationConfig) {
	if cfg.BrokerEpoch == nil {
		cfg.BrokerEpoch = func() int64 { return -1 }
	}
	if cfg.ReplicaLagTimeMaxMs <= 0 {
		cfg.ReplicaLagTimeMaxMs = 30000
	}
	m.repl = cfg
	m.fetchMu.Lock()
	m.fetchers = map[fetcherKey]*fetcher{}
	m.following = map[log.TopicPartition]fetcherKey{}
	m.numFetchers = max(cfg.Fetcher.NumFetchers, 1)
	m.fetchMu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	m.stopRepl = cancel
	m.bg.Add(1)
	go func() {
		defer m.bg.Done()
		m.shrinkLoop(ctx)
	}()
	// Partitions hosted before now pick up the settings and their leaders.
	m.mu.RLock()
	parts := make([]*partition.Partition, 0, len(m.partitions))
	for _, p := range m.partitions {
		parts = append(parts, p)
	}
	m.mu.RUnlock()
	img := m.Image()
	for _, p := range parts {
		p.SetReplicationConfig(m.replicationConfig())
		if t := img.Topics.TopicByID(p.TopicID); t != nil {
			if mp := t.Partition(p.TopicPartition.Partition); mp != nil && mp.Leader >= 0 && mp.Leader != m.cfg.NodeID {
				m.follow(p, mp.Leader)
			}
		}
	}
}

// Close stops the fetchers and the background ISR work, and waits.
func (m *Manager) Close() {
	select {
	case <-m.stopping:
		return
	default:
		close(m.stopping)
	}
	if m.stopRepl != nil {
		m.stopRepl()
	}
	for _, p := range m.delayed.all() {
		p.Close()
	}
	m.fetchMu.Lock()
	fetchers := m.fetchers
	m.fetchers, m.following = nil, nil
	m.fetchMu.Unlock()
	for _, f := range fetchers {
		f.close()
	}
	m.bg.Wait()
}

// PreferredReadReplica is Kafka's RackAwareReplicaSelector on the leader:
// for a consumer in clientRack, an in-sync replica in that rack that has
// the fetch offset, the most caught up first; -1 when the leader itself is
// in that rack, or no such replica exists (the leader serves the fetch).
func (m *Manager) PreferredReadReplica(topic string, p int32, clientRack string, fetchOffset int64) int32 {
	if clientRack == "" {
		return -1
	}
	part, err := m.Leader(topic, p)
	if err != nil {
		return -1
	}
	img := m.Image()
	rackOf := func(id int32) string {
		if b, ok := img.Brokers[id]; ok && b.Rack != nil && !b.Fenced {
			return *b.Rack
		}
		return ""
	}
	if rackOf(m.cfg.NodeID) == clientRack {
		return -1
	}
	best, bestLEO := int32(-1), int64(-1)
	for _, id := range part.ISR() {
		if id == m.cfg.NodeID || rackOf(id) != clientRack {
			continue
		}
		f, ok := part.Follower(id)
		if !ok || f.LogEndOffset < fetchOffset || f.LogStartOffset > fetchOffset {
			continue
		}
		if f.LogEndOffset > bestLEO {
			best, bestLEO = id, f.LogEndOffset
		}
	}
	return best
}

// DescribeProducers lists the producers a partition this broker leads
// remembers (Kafka's DescribeProducers, answered by the leader).
func (m *Manager) DescribeProducers(topic string, p int32) ([]log.ProducerInfo, error) {
	part, err := m.Leader(topic, p)
	if err != nil {
		return nil, err
	}
	return part.Log().Producers(), nil
}
