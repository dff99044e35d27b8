// Package replica is the driver for the partitions hosted on this broker
// (Kafka's ReplicaManager): it follows the metadata image to create, lead and
// delete partitions, routes produce, fetch and list-offsets to them, and lets
// long-polling fetches wait for appends.
package replica

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"gregor/internal/config"
	"gregor/internal/log"
	"gregor/internal/metadata"
	"gregor/internal/partition"
)

// Config is what the replica manager needs from the broker configuration.
type Config struct {
	NodeID int32
	// Static holds server.properties as given: the static layer under topic
	// and dynamic broker configs.
	Static map[string]string
	Logger *slog.Logger
	Now    func() time.Time
}

// Manager hosts this broker's partitions.
type Manager struct {
	cfg   Config
	logs  *log.Manager
	image atomic.Pointer[metadata.Image]

	mu         sync.RWMutex
	partitions map[log.TopicPartition]*partition.Partition

	// delayed holds the requests waiting on partitions (delayed.go).
	delayed purgatories

	// Replication (StartReplication): followers' fetchers by leader and
	// fetcher id, the partitions followed, background ISR changes.
	repl      ReplicationConfig
	fetchMu   sync.Mutex
	fetchers  map[fetcherKey]*fetcher
	following map[log.TopicPartition]fetcherKey
	// numFetchers is num.replica.fetchers, under fetchMu.
	numFetchers int
	// replicationBytesIn counts the bytes appended as a follower.
	replicationBytesIn atomic.Int64
	bg                 sync.WaitGroup
	stopping           chan struct{}
	stopRepl           context.CancelFunc

	// reconciled is set once an image has been reconciled in full; later
	// images are applied by their deltas. Publish's caller serializes it.
	reconciled bool
}

// New returns a manager over the opened logs. It hosts nothing until the
// first metadata image is published.
func New(cfg Config, logs *log.Manager) *Manager {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	m := &Manager{cfg: cfg, logs: logs, partitions: make(map[log.TopicPartition]*partition.Partition), stopping: make(chan struct{})}
	m.image.Store(metadata.EmptyImage())
	m.delayed = newPurgatories()
	return m
}

// Image is the latest metadata image this broker has applied.
func (m *Manager) Image() *metadata.Image { return m.image.Load() }

// Layers are the configuration layers of a topic in an image, most specific first.
func (m *Manager) Layers(img *metadata.Image, topic string) config.Layers {
	return config.Layers{
		Topic:          img.TopicConfigs(topic),
		DynamicBroker:  img.BrokerConfigs(m.cfg.NodeID),
		DynamicDefault: img.ClusterConfigs(),
		Static:         m.cfg.Static,
	}
}

// reconcileAll reconciles every hosted partition with an image: it creates
// the logs of partitions assigned here, applies leadership and configs, and
// deletes logs whose topic is gone (or was recreated under a new id). It
// costs O(partitions in the image); Publish uses it only for the first
// image (publish.go). The requests waiting on the partitions it hosts or
// drops are tried again; those waiting on others have nothing new to see.
func (m *Manager) reconcileAll(img *metadata.Image) {
	m.image.Store(img)
	want := make(map[log.TopicPartition]bool)
	var work []func()
	for _, t := range img.Topics.All() {
		cfg, err := config.ResolveTopic(m.Layers(img, t.Name))
		if err != nil {
			m.cfg.Logger.Error("resolve topic config", "topic", t.Name, "err", err)
			continue
		}
		for id, p := range t.Partitions() {
			if !contains(p.Replicas, m.cfg.NodeID) {
				continue
			}
			tp := log.TopicPartition{Topic: t.Name, Partition: id}
			want[tp] = true
			topicID := t.ID
			work = append(work, func() {
				if err := m.host(tp, topicID, cfg, p); err != nil {
					m.cfg.Logger.Error("host partition", "partition", tp.String(), "err", err)
				}
				m.partitionChanged(tp)
			})
		}
	}
	// As in applyDelta: each touches only its own partition, and a broker
	// starting with many partitions (or leading many at once) waits on
	// their files side by side, not one after another.
	runParallel(work, applyWorkers)
	m.mu.Lock()
	var gone []log.TopicPartition
	for tp := range m.partitions {
		if !want[tp] {
			gone = append(gone, tp)
			delete(m.partitions, tp)
		}
	}
	m.mu.Unlock()
	for _, tp := range gone {
		m.unfollow(tp)
		m.deleteLog(tp)
		m.partitionChanged(tp)
	}
}

// RemoveStrayLogs deletes logs on disk that the current image does not
// assign to this broker: topics deleted while it was down. It must run only
// once the metadata log has been replayed in full: an image from the middle
// of the replay lacks topics that are created later in the log.
func (m *Manager) RemoveStrayLogs() {
	for tp := range m.logs.All() {
		if _, ok := m.Hosted(tp); !ok {
			m.cfg.Logger.Info("removing stray log", "partition", tp.String())
			m.deleteLog(tp)
		}
	}
}

func (m *Manager) deleteLog(tp log.TopicPartition) {
	if _, ok := m.logs.Get(tp); !ok {
		return
	}
	if err := m.logs.Delete(tp); err != nil {
		m.cfg.Logger.Error("delete partition log", "partition", tp.String(), "err", err)
		return
	}
	m.cfg.Logger.Info("deleted partition log", "partition", tp.String())
}

func (m *Manager) host(tp log.TopicPartition, topicID [16]byte, cfg config.Topic, p *metadata.Partition) error {
	m.mu.RLock()
	part, ok := m.partitions[tp]
	m.mu.RUnlock()
	if ok && part.TopicID != topicID {
		// Same name, new topic: the old log must go before the new one is made.
		m.mu.Lock()
		delete(m.partitions, tp)
		m.mu.Unlock()
		if err := m.logs.Delete(tp); err != nil {
			return fmt.Errorf("delete log of replaced topic: %w", err)
		}
		ok = false
	}
	if !ok {
		if id, found := m.logs.TopicID(tp); found && id != topicID {
			if err := m.logs.Delete(tp); err != nil {
				return fmt.Errorf("delete stale log: %w", err)
			}
		}
		l, err := m.logs.GetOrCreate(tp, topicID, partition.LogConfig(cfg))
		if err != nil {
			return fmt.Errorf("open log: %w", err)
		}
		part = partition.New(tp, topicID, m.cfg.NodeID, l, cfg)
		part.SetReplicationConfig(m.replicationConfig())
		m.mu.Lock()
		m.partitions[tp] = part
		m.mu.Unlock()
	} else if !reflect.DeepEqual(part.Config(), cfg) {
		part.UpdateConfig(cfg)
	}
	part.Update(partition.LeaderAndISR{Leader: p.Leader, LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch,
		Replicas: p.Replicas, ISR: p.ISR, AddingReplicas: p.AddingReplicas}, m.localBrokerEpoch(), m.cfg.Now().UnixMilli())
	if p.Leader >= 0 && p.Leader != m.cfg.NodeID {
		m.follow(part, p.Leader)
	} else {
		m.unfollow(tp)
	}
	return nil
}

func contains(s []int32, v int32) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// Leader returns the partition if this broker leads it, or Kafka's error:
// UNKNOWN_TOPIC_OR_PARTITION when the image has no such partition,
// NOT_LEADER_OR_FOLLOWER when another broker (or none) leads it.
func (m *Manager) Leader(topic string, p int32) (*partition.Partition, error) {
	img := m.Image()
	t := img.Topics.Topic(topic)
	if t == nil {
		return nil, kerr.UnknownTopicOrPartition
	}
	if t.Partition(p) == nil {
		return nil, kerr.UnknownTopicOrPartition
	}
	m.mu.RLock()
	part, ok := m.partitions[log.TopicPartition{Topic: topic, Partition: p}]
	m.mu.RUnlock()
	if ok && part.Log().OfflineError() != nil {
		// Kafka's HostedPartition.Offline: the log's directory failed.
		return nil, kerr.KafkaStorageError
	}
	if !ok || !part.IsLeader() {
		return nil, kerr.NotLeaderForPartition
	}
	return part, nil
}

// Replica returns a partition this broker leads or follows (for fetches a
// follower may answer).
func (m *Manager) Replica(topic string, p int32) (*partition.Partition, error) {
	part, err := m.Leader(topic, p)
	if err == nil || !errors.Is(err, kerr.NotLeaderForPartition) {
		return part, err
	}
	m.mu.RLock()
	part, ok := m.partitions[log.TopicPartition{Topic: topic, Partition: p}]
	m.mu.RUnlock()
	if !ok {
		return nil, kerr.NotLeaderForPartition
	}
	return part, nil
}

// DeleteRecords raises a partition's log start offset to offset (-1: the
// high watermark) and returns the new low watermark (Kafka's
// Partition.deleteRecordsOnLeader). With one replica the low watermark is
// the leader's log start offset, so the answer needs no waiting.
func (m *Manager) DeleteRecords(topic string, p int32, offset int64) (lowWatermark int64, err error) {
	part, err := m.Leader(topic, p)
	if err != nil {
		return -1, err
	}
	if !part.Config().Delete() {
		return -1, kerr.PolicyViolation
	}
	lw, err := part.Log().DeleteRecordsBefore(offset)
	if errors.Is(err, log.ErrOffsetOutOfRange) {
		return -1, kerr.OffsetOutOfRange
	}
	if err != nil {
		return -1, fmt.Errorf("delete records of %s-%d: %w", topic, p, err)
	}
	return lw, nil
}

// HostedPartitions returns every partition hosted here (a copy of the map).
func (m *Manager) HostedPartitions() map[log.TopicPartition]*partition.Partition {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make(map[log.TopicPartition]*partition.Partition, len(m.partitions))
	for tp, p := range m.partitions {
		out[tp] = p
	}
	return out
}

// Hosted returns the partition if this broker has a replica of it.
func (m *Manager) Hosted(tp log.TopicPartition) (*partition.Partition, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	p, ok := m.partitions[tp]
	return p, ok
}

// ProduceResult is one partition's answer to a produce.
type ProduceResult struct {
	Info           log.AppendInfo
	LogStartOffset int64
	Err            error
}

// Append appends a produce request's records to a partition this broker leads.
func (m *Manager) Append(topic string, p int32, acks int16, records []byte) ProduceResult {
	part, err := m.Leader(topic, p)
	if err != nil {
		return ProduceResult{Err: err, LogStartOffset: -1}
	}
	info, err := part.AppendAsLeader(records, acks, m.cfg.Now().UnixMilli())
	res := ProduceResult{Info: info, LogStartOffset: part.Log().LogStartOffset(), Err: err}
	if err == nil {
		m.partitionChanged(part.TopicPartition)
	}
	return res
}

// FetchResult is one partition's answer to a fetch.
type FetchResult struct {
	HighWatermark    int64
	LastStableOffset int64
	LogStartOffset   int64
	Records          []byte
	// File holds the records instead of Records after ReadFileRange: a
	// range of a segment file for a zero-copy send, which the caller
	// releases (File.Release) once sent.
	File log.FileRange
	// AbortedTransactions, for read_committed reads only (nil otherwise),
	// are the aborted transactions whose records the answer may hold, which
	// the consumer drops (Kafka's FetchResponse AbortedTransactions).
	AbortedTransactions []AbortedTxn
	Err                 error
}

// AbortedTxn is an aborted transaction as a fetch response lists it.
type AbortedTxn struct {
	ProducerID  int64
	FirstOffset int64
}

// Read reads from a partition this broker leads, bounded by the high
// watermark (or the last stable offset for read_committed).
func (m *Manager) Read(topic string, p int32, currentLeaderEpoch int32, offset int64, maxBytes int32, readCommitted, minOneBatch bool) FetchResult {
	return m.read(topic, p, currentLeaderEpoch, offset, maxBytes, readCommitted, minOneBatch, false)
}

// ReadFileRange is Read with the records left in their segment file
// (FetchResult.File), for fetch responses sent with sendfile.
func (m *Manager) ReadFileRange(topic string, p int32, currentLeaderEpoch int32, offset int64, maxBytes int32, readCommitted, minOneBatch bool) FetchResult {
	return m.read(topic, p, currentLeaderEpoch, offset, maxBytes, readCommitted, minOneBatch, true)
}

// ReadFileRangeAnyReplica is ReadFileRange answered by the leader or a
// follower (KIP-392 fetch from follower).
func (m *Manager) ReadFileRangeAnyReplica(topic string, p int32, currentLeaderEpoch int32, offset int64, maxBytes int32, readCommitted, minOneBatch bool) FetchResult {
	return m.readReplica(topic, p, currentLeaderEpoch, offset, maxBytes, readCommitted, minOneBatch, true, true)
}

func (m *Manager) read(topic string, p int32, currentLeaderEpoch int32, offset int64, maxBytes int32, readCommitted, minOneBatch, zeroCopy bool) FetchResult {
	return m.readReplica(topic, p, currentLeaderEpoch, offset, maxBytes, readCommitted, minOneBatch, zeroCopy, false)
}

// readReplica is read; fromFollower lets a follower of the partition
// answer too (a consumer fetching from its closest replica, KIP-392),
// bounded by the high watermark it learnt from its leader.
func (m *Manager) readReplica(topic string, p int32, currentLeaderEpoch int32, offset int64, maxBytes int32, readCommitted, minOneBatch, zeroCopy, fromFollower bool) FetchResult {
	var part *partition.Partition
	var err error
	if fromFollower {
		part, err = m.Replica(topic, p)
	} else {
		part, err = m.Leader(topic, p)
	}
	if err != nil {
		return FetchResult{Err: err, HighWatermark: -1, LastStableOffset: -1, LogStartOffset: -1}
	}
	l := part.Log()
	res := FetchResult{HighWatermark: part.HighWatermark(), LastStableOffset: part.LastStableOffset(), LogStartOffset: l.LogStartOffset()}
	if err := part.CheckLeaderEpoch(currentLeaderEpoch); err != nil {
		res.Err = err
		return res
	}
	bound := res.HighWatermark
	if readCommitted {
		bound = res.LastStableOffset
		// Kafka answers read_committed reads with a list, empty when there
		// is nothing to drop (null is for read_uncommitted).
		res.AbortedTransactions = []AbortedTxn{}
	}
	// An offset between the bound and the log end is valid but has nothing
	// to return yet; only offsets outside the log are out of range.
	if offset > bound && offset <= l.LogEndOffset() {
		return res
	}
	if offset > bound && !part.IsLeader() {
		// A follower behind the leader has nothing yet for an offset the
		// consumer learnt from the leader; it will, once it catches up.
		return res
	}
	var info log.ReadInfo
	switch {
	case readCommitted:
		res.File, err = l.ReadFileRange(offset, maxBytes, bound, minOneBatch)
		if err == nil {
			res.AbortedTransactions, err = abortedTransactions(l, offset, res.File)
		}
		if err == nil && !zeroCopy {
			info.Records, err = res.File.ReadAll()
			res.File.Release()
			res.File = log.FileRange{FirstBatchOffset: -1}
		}
		if err != nil {
			res.File.Release()
		}
	case zeroCopy:
		res.File, err = l.ReadFileRange(offset, maxBytes, bound, minOneBatch)
	default:
		info, err = l.Read(offset, maxBytes, bound, minOneBatch)
	}
	if err != nil {
		if errors.Is(err, log.ErrOffsetOutOfRange) {
			err = kerr.OffsetOutOfRange
		}
		// As Kafka: a failed read reports no offsets.
		return FetchResult{Err: err, HighWatermark: -1, LastStableOffset: -1, LogStartOffset: -1}
	}
	if len(info.Records) > 0 {
		res.Records = info.Records
	}
	return res
}

// abortedTransactions lists the aborted transactions a read_committed
// consumer needs with range r read at offset.
func abortedTransactions(l *log.Log, offset int64, r log.FileRange) ([]AbortedTxn, error) {
	txns, err := l.AbortedTransactions(offset, r)
	if err != nil {
		return nil, err
	}
	out := make([]AbortedTxn, len(txns))
	for i, t := range txns {
		out[i] = AbortedTxn{ProducerID: t.ProducerID, FirstOffset: t.FirstOffset}
	}
	return out, nil
}

// ListOffset answers one partition of a ListOffsets request: the special
// timestamps -1 (latest: the high watermark, or the last stable offset for
// read_committed), -2 (earliest), -3 (max timestamp) and -4 (earliest local,
// the same as earliest without tiered storage); otherwise the first offset
// whose timestamp is at or after ts. Found is false when no record matches.
func (m *Manager) ListOffset(topic string, p int32, currentLeaderEpoch int32, ts int64, readCommitted bool) (offset, timestamp int64, leaderEpoch int32, found bool, err error) {
	part, err := m.Leader(topic, p)
	if err != nil {
		return -1, -1, -1, false, err
	}
	if err := part.CheckLeaderEpoch(currentLeaderEpoch); err != nil {
		return -1, -1, -1, false, err
	}
	l := part.Log()
	epoch := part.LeaderEpoch()
	switch ts {
	case ListLatest:
		if readCommitted {
			return part.LastStableOffset(), -1, epoch, true, nil
		}
		return part.HighWatermark(), -1, epoch, true, nil
	case ListEarliest, ListEarliestLocal:
		return l.LogStartOffset(), -1, epoch, true, nil
	case ListMaxTimestamp:
		ts, off := l.MaxTimestamp()
		if off < 0 {
			return -1, -1, -1, false, nil
		}
		return off, ts, epoch, true, nil
	}
	if ts < 0 {
		return -1, -1, -1, false, kerr.InvalidRequest
	}
	// Kafka's Partition.fetchOffsetForTimestamp: only offsets a consumer of
	// this isolation level may read count.
	lastFetchable := part.HighWatermark()
	if readCommitted {
		lastFetchable = part.LastStableOffset()
	}
	off, recordTs, ok := l.OffsetForTimestamp(ts)
	if !ok || off >= lastFetchable {
		return -1, -1, -1, false, nil
	}
	return off, recordTs, epoch, true, nil
}

// The special timestamps of ListOffsets.
const (
	ListLatest        = -1
	ListEarliest      = -2
	ListMaxTimestamp  = -3
	ListEarliestLocal = -4
)
