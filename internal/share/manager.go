// Package share is the share-partition leader of KIP-932 share groups
// (Kafka's SharePartitionManager and SharePartition): on the broker that
// leads a topic partition, one share-partition per share group reading it
// hands records to the group's members under acquisition locks, takes their
// acknowledgements, redelivers released and timed-out records up to the
// delivery count limit, and keeps the share sessions of ShareFetch and
// ShareAcknowledge.
//
// The state machine of one share-partition (partition.go) is pure; the
// Manager drives it: it loads a share-partition's state from the
// sharestate.Persister the first time the share-partition is used under a
// leader epoch, reads the log through internal/replica, and writes every
// change of the persisted state (acknowledgements, releases, lock expiry)
// to the persister before it answers the client. A change whose write
// fails is dropped: the in-memory state stays the persisted one (a lock
// timeout, as in Kafka, takes effect anyway). A share-partition whose
// partition this broker no longer leads (or leads under a new epoch) is
// dropped and loaded again when used.
//
// The server owns the Manager's one goroutine (Run: lock timeouts,
// releases, leadership checks). The share group coordinator tells it of
// members that left (MemberLeft) and groups deleted (GroupDeleted); a
// group's configs come from Options.GroupConfig (ConfigOf over the
// broker's group.share.* defaults).
package share

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"gregor/internal/config"
	"gregor/internal/record"
	"gregor/internal/replica"
	"gregor/internal/sharestate"
)

// Config is a share group's configs that the share-partition leader
// applies (Kafka's group configs share.*, defaulted by the broker's
// group.share.*).
type Config struct {
	// RecordLockDuration is share.record.lock.duration.ms.
	RecordLockDuration time.Duration
	// DeliveryCountLimit is share.delivery.count.limit.
	DeliveryCountLimit int16
	// PartitionMaxRecordLocks is share.partition.max.record.locks.
	PartitionMaxRecordLocks int32
	// AutoOffsetReset is share.auto.offset.reset: latest, earliest or
	// by_duration:<ISO 8601 duration>, that duration parsed in
	// AutoOffsetResetDuration.
	AutoOffsetReset         string
	AutoOffsetResetDuration time.Duration
	// ReadCommitted is share.isolation.level=read_committed.
	ReadCommitted bool
}

// DefaultConfig is Kafka 4.2's broker defaults
// (group.share.record.lock.duration.ms, group.share.delivery.count.limit,
// group.share.partition.max.record.locks, share.auto.offset.reset,
// share.isolation.level).
func DefaultConfig() Config {
	return Config{
		RecordLockDuration:      30 * time.Second,
		DeliveryCountLimit:      5,
		PartitionMaxRecordLocks: 2000,
		AutoOffsetReset:         "latest",
	}
}

// ConfigOf is the share-partition leader's part of a share group's
// effective settings (config.Broker.ShareGroup).
func ConfigOf(sg config.ShareGroupConfig) Config {
	return Config{
		RecordLockDuration:      time.Duration(sg.RecordLockDurationMs) * time.Millisecond,
		DeliveryCountLimit:      int16(sg.DeliveryCountLimit),
		PartitionMaxRecordLocks: sg.PartitionMaxRecordLocks,
		AutoOffsetReset:         sg.AutoOffsetReset,
		AutoOffsetResetDuration: sg.AutoOffsetResetDuration,
		ReadCommitted:           sg.ReadCommitted,
	}
}

func (c Config) partition() PartitionConfig {
	return PartitionConfig{
		RecordLockDurationMs: c.RecordLockDuration.Milliseconds(),
		DeliveryCountLimit:   c.DeliveryCountLimit,
		MaxRecordLocks:       int64(c.PartitionMaxRecordLocks),
	}
}

// DefaultMaxSessions is the share session cache size when Options leaves
// it unset (Kafka's group.share.max.share.sessions default).
const DefaultMaxSessions = 2000

// Options are a Manager's parts.
type Options struct {
	Replica   *replica.Manager
	Persister sharestate.Persister
	// GroupConfig returns a group's configs; nil applies Defaults to every
	// group.
	GroupConfig func(groupID string) Config
	// Defaults are the broker's defaults (zero: DefaultConfig).
	Defaults Config
	// MaxSessions bounds the share sessions (0: DefaultMaxSessions).
	MaxSessions int
	Now         func() time.Time
	Logger      *slog.Logger
	// Meters is told what Kafka's ShareGroupMetrics and
	// SharePartitionMetrics meter; nil counts nothing.
	Meters Meters
}

// Meters counts the share-partition leader's events (Kafka's
// kafka.server:type=ShareGroupMetrics and SharePartitionMetrics meters).
type Meters interface {
	// RecordsAcknowledged counts records acknowledged with one type:
	// Accept, Release, Reject or Renew (RecordAcknowledgementsPerSec).
	RecordsAcknowledged(ackType string, records int64)
	// LocksTimedOut counts records of a share-partition whose acquisition
	// lock ended (AcquisitionLockTimeoutPerSec).
	LocksTimedOut(group, topic string, partition int32, records int64)
	// PartitionLoaded records how long a share-partition took to load on
	// this leader: its state read from the persister, and, for one never
	// consumed, its start offset decided and written (PartitionLoadTimeMs).
	PartitionLoaded(d time.Duration)
	// FetchLockReleased records one hold of a share-partition's fetch lock
	// by a share fetch (Kafka's SharePartition fetch lock, here the
	// entry's mutex across Fetch): how long it was held (FetchLockTimeMs),
	// and that in percent of the time since the previous fetch released it
	// (FetchLockRatio).
	FetchLockReleased(group, topic string, partition int32, held time.Duration, percent float64)
	// ShareGroupDeleted drops the deleted group's share-partition meters,
	// as Kafka removes a SharePartition's metrics with it.
	ShareGroupDeleted(group string)
}

type noMeters struct{}

func (noMeters) RecordsAcknowledged(string, int64)                               {}
func (noMeters) LocksTimedOut(string, string, int32, int64)                      {}
func (noMeters) PartitionLoaded(time.Duration)                                   {}
func (noMeters) FetchLockReleased(string, string, int32, time.Duration, float64) {}
func (noMeters) ShareGroupDeleted(string)                                        {}

// TopicPartition names a partition by name and id.
type TopicPartition struct {
	Topic     string
	TopicID   [16]byte
	Partition int32
}

type entryKey struct {
	group     string
	topicID   [16]byte
	partition int32
}

// entry is one share-partition on this leader. mu is held across a
// persister write, so the writes of one share-partition are made in order.
// Lock order: an entry's mu, then the Manager's mu.
type entry struct {
	mu          sync.Mutex
	group       string
	tp          TopicPartition
	p           *Partition // nil until loaded
	leaderEpoch int32
	// written is p's persisted view as last read or written: a change
	// whose view equals it needs no write.
	written sharestate.Update
	// dropped is set once the entry left the Manager's map: whoever holds
	// it then takes the key's new entry instead (lockEntry).
	dropped bool
	// fetchReleased is when a fetch last let go of mu (at first, when the
	// entry was made): FetchLockRatio's time between holds.
	fetchReleased time.Time
}

// Manager is the share-partition leader of every partition this broker
// leads. Run drives its acquisition lock timeouts.
type Manager struct {
	o        Options
	sessions *Sessions

	mu      sync.Mutex
	entries map[entryKey]*entry
	// changed has a channel per group, closed when records of the group
	// became available again (released, timed out, lock room freed).
	changed map[string]chan struct{}
	// left are the members that left their group (MemberLeft) whose
	// records Run has yet to release.
	left []SessionKey
	// kick wakes Run when a lock was taken that may end before its next
	// sweep, or a member left.
	kick chan struct{}
}

// New returns a Manager.
func New(o Options) *Manager {
	if o.Defaults == (Config{}) {
		o.Defaults = DefaultConfig()
	}
	if o.MaxSessions <= 0 {
		o.MaxSessions = DefaultMaxSessions
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Meters == nil {
		o.Meters = noMeters{}
	}
	return &Manager{
		o:        o,
		sessions: NewSessions(o.MaxSessions, evictIdleAfter),
		entries:  map[entryKey]*entry{},
		changed:  map[string]chan struct{}{},
		kick:     make(chan struct{}, 1),
	}
}

// Sessions are the broker's share sessions.
func (m *Manager) Sessions() *Sessions { return m.sessions }

// GroupConfig is a group's configs (the broker defaults without a lookup).
func (m *Manager) GroupConfig(group string) Config {
	if m.o.GroupConfig == nil {
		return m.o.Defaults
	}
	return m.o.GroupConfig(group)
}

// Changed returns a channel closed when records of group become
// available again, for a share fetch waiting for records.
func (m *Manager) Changed(group string) <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	ch, ok := m.changed[group]
	if !ok {
		ch = make(chan struct{})
		m.changed[group] = ch
	}
	return ch
}

func (m *Manager) notify(group string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if ch, ok := m.changed[group]; ok {
		close(ch)
		delete(m.changed, group)
	}
}

// lockEntry returns the share-partition's entry, made if new, with its mu
// held: never an entry dropped meanwhile, so that one share-partition has
// one state on this broker.
func (m *Manager) lockEntry(group string, tp TopicPartition) *entry {
	for {
		m.mu.Lock()
		k := entryKey{group, tp.TopicID, tp.Partition}
		e, ok := m.entries[k]
		if !ok {
			e = &entry{group: group, tp: tp, fetchReleased: m.o.Now()}
			m.entries[k] = e
		}
		m.mu.Unlock()
		e.mu.Lock()
		if !e.dropped {
			return e
		}
		e.mu.Unlock()
	}
}

// drop removes e, whose mu the caller holds, from the Manager.
func (m *Manager) drop(e *entry) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := entryKey{e.group, e.tp.TopicID, e.tp.Partition}
	if m.entries[k] == e {
		delete(m.entries, k)
	}
	e.p = nil
	e.dropped = true
}

func (e *entry) key() sharestate.Key {
	return sharestate.Key{GroupID: e.group, TopicID: e.tp.TopicID, Partition: e.tp.Partition}
}

// load makes e's state current under e.mu: this broker must lead the
// partition; a share-partition loaded under an older leader epoch is
// loaded again from the persister. It returns the partition's log start
// offset.
func (m *Manager) load(ctx context.Context, e *entry, cfg Config) (int64, error) {
	part, err := m.o.Replica.Leader(e.tp.Topic, e.tp.Partition)
	if err != nil {
		e.p = nil
		return -1, err
	}
	epoch := part.LeaderEpoch()
	logStart := part.Log().LogStartOffset()
	if e.p != nil && e.leaderEpoch == epoch {
		e.p.SetConfig(cfg.partition())
		return logStart, nil
	}
	e.p = nil
	loadStart := m.o.Now()
	st, err := m.o.Persister.Read(ctx, e.key(), epoch)
	if err != nil {
		return -1, fmt.Errorf("read state of share-partition %s:%s-%d: %w", e.group, e.tp.Topic, e.tp.Partition, persisterError(err))
	}
	if st.StartOffset < 0 {
		// Never consumed: share.auto.offset.reset decides, and the
		// decision is persisted so that a new leader keeps it.
		off, err := m.resetOffset(e.tp, epoch, cfg)
		if err != nil {
			return -1, err
		}
		u := sharestate.Update{StateEpoch: st.StateEpoch, LeaderEpoch: epoch, StartOffset: off, Batches: []sharestate.Batch{}}
		if err := m.o.Persister.Write(ctx, e.key(), u); err != nil {
			return -1, fmt.Errorf("write start offset of share-partition %s:%s-%d: %w", e.group, e.tp.Topic, e.tp.Partition, persisterError(err))
		}
		st.StartOffset, st.Batches = off, nil
	}
	e.p = NewPartition(cfg.partition(), st)
	e.leaderEpoch = epoch
	e.written = e.p.Persisted(epoch)
	m.o.Meters.PartitionLoaded(m.o.Now().Sub(loadStart))
	return logStart, nil
}

// resetOffset applies share.auto.offset.reset.
func (m *Manager) resetOffset(tp TopicPartition, epoch int32, cfg Config) (int64, error) {
	ts := int64(replica.ListLatest)
	switch {
	case cfg.AutoOffsetReset == "earliest":
		ts = replica.ListEarliest
	case strings.HasPrefix(cfg.AutoOffsetReset, "by_duration:"):
		ts = m.o.Now().Add(-cfg.AutoOffsetResetDuration).UnixMilli()
	}
	off, _, _, found, err := m.o.Replica.ListOffset(tp.Topic, tp.Partition, epoch, ts, cfg.ReadCommitted)
	if err == nil && !found {
		// No record at or after the time: start at the end.
		off, _, _, _, err = m.o.Replica.ListOffset(tp.Topic, tp.Partition, epoch, replica.ListLatest, cfg.ReadCommitted)
	}
	if err != nil {
		return -1, fmt.Errorf("share.auto.offset.reset of %s-%d: %w", tp.Topic, tp.Partition, err)
	}
	return off, nil
}

// commit makes next e's state once its persisted view is written (no write
// when the view is the one last written). A fenced write drops the
// share-partition: another leader (or a reset of the group's offsets) owns
// the state now; so does a write to state that is gone (the group was
// deleted, maybe by another broker).
func (m *Manager) commit(ctx context.Context, e *entry, next *Partition) error {
	view := next.Persisted(e.leaderEpoch)
	if !samePersisted(e.written, view) {
		if err := m.o.Persister.Write(ctx, e.key(), view); err != nil {
			if errors.Is(err, kerr.FencedStateEpoch) || errors.Is(err, kerr.FencedLeaderEpoch) || errors.Is(err, kerr.UnknownTopicOrPartition) {
				e.p = nil
			}
			return fmt.Errorf("write state of share-partition %s:%s-%d: %w", e.group, e.tp.Topic, e.tp.Partition, persisterError(err))
		}
		e.written = view
	}
	e.p = next
	return nil
}

// persisterError is the error a client gets for a persister's, as Kafka's
// SharePartition maps them: the share coordinator unavailable, loading or
// moved is COORDINATOR_NOT_AVAILABLE (retriable); a fenced state or leader
// epoch is NOT_LEADER_OR_FOLLOWER (this leader's state is stale);
// UNKNOWN_TOPIC_OR_PARTITION (no state) and GROUP_ID_NOT_FOUND pass; other
// Kafka errors are UNKNOWN_SERVER_ERROR.
func persisterError(err error) error {
	var ke *kerr.Error
	switch {
	case errors.Is(err, kerr.NotCoordinator), errors.Is(err, kerr.CoordinatorNotAvailable), errors.Is(err, kerr.CoordinatorLoadInProgress):
		return fmt.Errorf("%v: %w", err, kerr.CoordinatorNotAvailable)
	case errors.Is(err, kerr.FencedLeaderEpoch), errors.Is(err, kerr.FencedStateEpoch):
		return fmt.Errorf("%v: %w", err, kerr.NotLeaderForPartition)
	case errors.Is(err, kerr.UnknownTopicOrPartition), errors.Is(err, kerr.GroupIDNotFound):
		return err
	case errors.As(err, &ke):
		return fmt.Errorf("%v: %w", err, kerr.UnknownServerError)
	}
	return err
}

func samePersisted(a, b sharestate.Update) bool {
	return a.StartOffset == b.StartOffset && a.DeliveryCompleteCount == b.DeliveryCompleteCount && slices.Equal(a.Batches, b.Batches)
}

// expire releases e's timed-out locks under e.mu, and reports whether
// records were released. As Kafka, a timeout takes effect even if its
// write fails (it only moves delivery counts past what is persisted; an
// acquired record is persisted as available anyway): the next write carries
// it.
func (m *Manager) expire(ctx context.Context, e *entry) bool {
	next := e.p.Clone()
	now := m.o.Now().UnixMilli()
	timedOut := next.TimedOutRecords(now)
	if !next.ExpireLocks(now) {
		return false
	}
	m.o.Meters.LocksTimedOut(e.group, e.tp.Topic, e.tp.Partition, timedOut)
	if err := m.commit(ctx, e, next); err != nil {
		m.o.Logger.Warn("share-partition lock timeout not persisted", "group", e.group, "topic", e.tp.Topic, "partition", e.tp.Partition, "err", err)
		if e.p != nil {
			e.p = next
		}
	}
	return true
}

// Fetched is one share-partition's answer to a share fetch: the records
// acquired for the member and the batches holding them.
type Fetched struct {
	Acquired []AcquiredRange
	Records  []byte
}

// Fetch acquires up to maxRecords records of a share-partition for member,
// reading at most maxBytes of the log (at least one batch). strict stops at
// exactly maxRecords (record-limit acquire mode); otherwise on a batch
// boundary. Errors are Kafka's: NOT_LEADER_OR_FOLLOWER,
// UNKNOWN_TOPIC_OR_PARTITION, KAFKA_STORAGE_ERROR, or the persister's.
func (m *Manager) Fetch(ctx context.Context, group, member string, tp TopicPartition, maxRecords int64, maxBytes int32, strict bool) (Fetched, error) {
	cfg := m.GroupConfig(group)
	e := m.lockEntry(group, tp)
	defer e.mu.Unlock()
	defer m.fetchLockReleased(e, m.o.Now())
	logStart, err := m.load(ctx, e, cfg)
	if err != nil {
		if e.p == nil {
			m.drop(e)
		}
		return Fetched{}, err
	}
	if m.expire(ctx, e) {
		defer m.notify(group)
	}
	if e.p == nil {
		// The timeout's write was fenced: another leader owns the state.
		return Fetched{}, fmt.Errorf("share-partition %s:%s-%d: %w", group, tp.Topic, tp.Partition, kerr.NotLeaderForPartition)
	}
	now := m.o.Now().UnixMilli()
	next := e.p.Clone()
	next.ArchiveBefore(logStart)
	var out Fetched
	taken := int64(0)
	from := next.StartOffset()
	budget := maxBytes
	lastIncluded := int64(-1) // base offset of the last batch put in Records
	// Each pass reads from the first acquirable offset; a pass that finds
	// only records already handed out moves on past them.
	for pass := 0; pass < maxFetchPasses && taken < maxRecords && (budget > 0 || pass == 0); pass++ {
		off := next.NextFetchOffset(from)
		if off < 0 {
			break
		}
		res := m.o.Replica.Read(tp.Topic, tp.Partition, e.leaderEpoch, off, max(budget, 1), cfg.ReadCommitted, pass == 0)
		if res.Err != nil {
			if errors.Is(res.Err, kerr.OffsetOutOfRange) {
				break // deleted meanwhile; the next fetch archives it
			}
			return Fetched{}, res.Err
		}
		batches, raw, err := logBatches(res.Records, res.AbortedTransactions, cfg.ReadCommitted)
		if err != nil {
			return Fetched{}, fmt.Errorf("read %s-%d for share group %s: %w", tp.Topic, tp.Partition, group, err)
		}
		if len(batches) == 0 {
			break
		}
		got, scanned, stop := next.Acquire(member, now, off, batches, maxRecords, taken, strict)
		for i, b := range batches {
			if b.FirstOffset > lastIncluded && overlaps(got, b) {
				out.Records = append(out.Records, raw[i]...)
				lastIncluded = b.FirstOffset
			}
		}
		for _, a := range got {
			taken += a.LastOffset - a.FirstOffset + 1
		}
		out.Acquired = appendMerged(out.Acquired, got)
		budget -= int32(len(res.Records))
		if scanned < 0 || stop {
			break
		}
		from = scanned + 1
	}
	// Acquisition changes no persisted state but the records it archived
	// (control and aborted batches, offsets with no record), which a new
	// leader derives again from the log.
	e.p = next
	if len(out.Acquired) > 0 {
		m.wake()
	}
	return out, nil
}

// fetchLockReleased meters a fetch's hold of e.mu, taken at acquired, as
// it ends: the time held, and that in percent of the time since the
// previous fetch let go.
func (m *Manager) fetchLockReleased(e *entry, acquired time.Time) {
	now := m.o.Now()
	held := now.Sub(acquired)
	percent := 100.0 // no time between two holds: never free
	if total := now.Sub(e.fetchReleased); total > 0 {
		percent = 100 * float64(held) / float64(total)
	}
	m.o.Meters.FetchLockReleased(e.group, e.tp.Topic, e.tp.Partition, held, percent)
	e.fetchReleased = now
}

// maxFetchPasses bounds the log reads of one share-partition in one fetch.
const maxFetchPasses = 8

func overlaps(rs []AcquiredRange, b LogBatch) bool {
	for _, r := range rs {
		if r.FirstOffset <= b.LastOffset && r.LastOffset >= b.FirstOffset {
			return true
		}
	}
	return false
}

// logBatches reads the batch headers of records read from the log: each
// batch's offsets and raw bytes, skipped if it is a control batch, or,
// under read_committed, a batch of an aborted transaction (by the aborted
// transactions the read listed, as a read_committed consumer filters).
func logBatches(records []byte, aborted []replica.AbortedTxn, readCommitted bool) ([]LogBatch, [][]byte, error) {
	aborted = slices.Clone(aborted)
	slices.SortFunc(aborted, func(a, b replica.AbortedTxn) int { return cmp.Compare(a.FirstOffset, b.FirstOffset) })
	abortedProducers := map[int64]bool{}
	var out []LogBatch
	var raw [][]byte
	for len(records) > 0 {
		h, err := record.ParseHeader(records)
		if errors.Is(err, record.ErrShortBatch) || (err == nil && h.Size() > len(records)) {
			break // a partial batch at the end of the read
		}
		if err != nil {
			return nil, nil, err
		}
		for len(aborted) > 0 && aborted[0].FirstOffset <= h.LastOffset() {
			abortedProducers[aborted[0].ProducerID] = true
			aborted = aborted[1:]
		}
		b := LogBatch{FirstOffset: h.BaseOffset, LastOffset: h.LastOffset()}
		switch {
		case h.IsControl():
			// The transaction's marker ends its abort.
			delete(abortedProducers, h.ProducerID)
			b.Skip = true
		case readCommitted && h.IsTransactional() && abortedProducers[h.ProducerID]:
			b.Skip = true
		}
		out = append(out, b)
		raw = append(raw, records[:h.Size()])
		records = records[h.Size():]
	}
	return out, raw, nil
}

// Acknowledge applies a member's acknowledgements to a share-partition,
// persisted before it returns. Errors: INVALID_RECORD_STATE for records the
// member does not hold, NOT_LEADER_OR_FOLLOWER and the like, or the
// persister's (the acknowledgement then did not happen).
func (m *Manager) Acknowledge(ctx context.Context, group, member string, tp TopicPartition, batches []AckBatch) error {
	e := m.lockEntry(group, tp)
	defer e.mu.Unlock()
	if _, err := m.load(ctx, e, m.GroupConfig(group)); err != nil {
		if e.p == nil {
			m.drop(e)
		}
		return err
	}
	next := e.p.Clone()
	now := m.o.Now().UnixMilli()
	timedOut := next.TimedOutRecords(now)
	next.ExpireLocks(now)
	if err := next.Acknowledge(member, now, batches); err != nil {
		return err
	}
	if err := m.commit(ctx, e, next); err != nil {
		return err
	}
	if timedOut > 0 {
		m.o.Meters.LocksTimedOut(group, tp.Topic, tp.Partition, timedOut)
	}
	m.meterAcks(batches)
	m.notify(group)
	return nil
}

// ackTypeNames are Kafka's names of the acknowledgement types, as its
// RecordAcknowledgementsPerSec tags them (gaps are not counted).
var ackTypeNames = map[AckType]string{AckAccept: "Accept", AckRelease: "Release", AckReject: "Reject", AckRenew: "Renew"}

// meterAcks counts the records of applied acknowledgement batches by type,
// as Kafka counts them: a batch's whole range (offsets below SPSO, skipped,
// included).
func (m *Manager) meterAcks(batches []AckBatch) {
	counts := map[AckType]int64{}
	for _, b := range batches {
		if len(b.Types) == 1 {
			counts[b.Types[0]] += b.LastOffset - b.FirstOffset + 1
			continue
		}
		for _, t := range b.Types {
			counts[t]++
		}
	}
	for t, n := range counts {
		if name, ok := ackTypeNames[t]; ok && n > 0 {
			m.o.Meters.RecordsAcknowledged(name, n)
		}
	}
}

// PartitionStats is one share-partition as its leader holds it now
// (Kafka's SharePartitionMetrics gauges).
type PartitionStats struct {
	Group     string
	Topic     string
	Partition int32
	// StartOffset is the share-partition start offset (SPSO).
	StartOffset int64
	// InFlightRecords counts the records from SPSO to SPEO
	// (InFlightMessageCount); InFlightBatches the batches holding them
	// (InFlightBatchCount).
	InFlightRecords int64
	InFlightBatches int
}

// Stats lists the share-partitions loaded on this leader. A share-partition
// busy now (its lock held by a fetch, an acknowledgement or a state write)
// is left out rather than waited for.
func (m *Manager) Stats() []PartitionStats {
	m.mu.Lock()
	es := make([]*entry, 0, len(m.entries))
	for _, e := range m.entries {
		es = append(es, e)
	}
	m.mu.Unlock()
	out := make([]PartitionStats, 0, len(es))
	for _, e := range es {
		if !e.mu.TryLock() {
			continue
		}
		if e.p != nil && !e.dropped {
			out = append(out, PartitionStats{Group: e.group, Topic: e.tp.Topic, Partition: e.tp.Partition,
				StartOffset: e.p.StartOffset(), InFlightRecords: e.p.InFlightRecords(), InFlightBatches: e.p.InFlightBatches()})
		}
		e.mu.Unlock()
	}
	slices.SortFunc(out, func(a, b PartitionStats) int {
		return cmp.Or(cmp.Compare(a.Group, b.Group), cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	return out
}

// ReleasePartitions releases the records member holds in the given
// share-partitions (named by topic id and partition; a share session
// closed), persisted.
func (m *Manager) ReleasePartitions(ctx context.Context, group, member string, tps []TopicPartition) error {
	var errs []error
	for _, tp := range tps {
		m.mu.Lock()
		e := m.entries[entryKey{group, tp.TopicID, tp.Partition}]
		m.mu.Unlock()
		if e != nil {
			errs = append(errs, m.release(ctx, e, member))
		}
	}
	m.notify(group)
	return errors.Join(errs...)
}

// ReleaseMember releases every record member holds in group's
// share-partitions on this broker and drops its share session: the hook
// the share group coordinator calls when a member leaves or is fenced.
func (m *Manager) ReleaseMember(ctx context.Context, group, member string) error {
	m.sessions.Remove(SessionKey{Group: group, Member: member})
	m.mu.Lock()
	var es []*entry
	for k, e := range m.entries {
		if k.group == group {
			es = append(es, e)
		}
	}
	m.mu.Unlock()
	var errs []error
	for _, e := range es {
		errs = append(errs, m.release(ctx, e, member))
	}
	m.notify(group)
	return errors.Join(errs...)
}

// MemberLeft is the hook the share group coordinator calls when a member
// leaves its group or is fenced: the member's share session goes at once,
// and Run releases its records (persisted) without holding up the caller.
func (m *Manager) MemberLeft(groupID, memberID string) {
	key := SessionKey{Group: groupID, Member: memberID}
	m.sessions.Remove(key)
	m.mu.Lock()
	m.left = append(m.left, key)
	m.mu.Unlock()
	m.wake()
}

// GroupDeleted is the hook the share group coordinator calls when a share
// group is deleted (its state deleted from the persister): the group's
// share-partitions and share sessions on this broker are dropped, so that
// a group made again under the same id starts from its new state.
func (m *Manager) GroupDeleted(groupID string) {
	m.mu.Lock()
	var es []*entry
	for k, e := range m.entries {
		if k.group == groupID {
			es = append(es, e)
		}
	}
	m.mu.Unlock()
	for _, e := range es {
		e.mu.Lock()
		m.drop(e)
		e.mu.Unlock()
	}
	m.sessions.RemoveGroup(groupID)
	m.o.Meters.ShareGroupDeleted(groupID)
}

func (m *Manager) wake() {
	select {
	case m.kick <- struct{}{}:
	default:
	}
}

func (m *Manager) release(ctx context.Context, e *entry, member string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.p == nil {
		return nil
	}
	next := e.p.Clone()
	if !next.ReleaseMember(member) {
		return nil
	}
	return m.commit(ctx, e, next)
}

// Sweep bounds: locks are checked at least every sweepMax, and at most
// every sweepMin.
const (
	sweepMax = time.Second
	sweepMin = 5 * time.Millisecond
)

// Run times out acquisition locks (persisting the records released),
// releases the records of members that left (MemberLeft) and of share
// sessions whose client closed its connection, and drops the
// share-partitions of partitions this broker no longer leads, until ctx
// ends.
func (m *Manager) Run(ctx context.Context) {
	t := time.NewTimer(sweepMax)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-m.kick:
			t.Stop()
		}
		m.mu.Lock()
		left := m.left
		m.left = nil
		m.mu.Unlock()
		for _, k := range left {
			if err := m.ReleaseMember(ctx, k.Group, k.Member); err != nil {
				// Their locks still end and release them.
				m.o.Logger.Warn("records of a member that left not released", "group", k.Group, "member", k.Member, "err", err)
			}
		}
		for _, c := range m.sessions.TakeClosed() {
			tps := make([]TopicPartition, len(c.Parts))
			for i, p := range c.Parts {
				tps[i] = TopicPartition{TopicID: p.TopicID, Partition: p.Partition}
			}
			if err := m.ReleasePartitions(ctx, c.Key.Group, c.Key.Member, tps); err != nil {
				m.o.Logger.Warn("records of a closed share session not released", "group", c.Key.Group, "member", c.Key.Member, "err", err)
			}
		}
		next := m.sweep(ctx)
		wait := sweepMax
		if next >= 0 {
			wait = min(max(time.Duration(next-m.o.Now().UnixMilli())*time.Millisecond, sweepMin), sweepMax)
		}
		t.Reset(wait)
	}
}

// sweep expires the locks due and returns the earliest lock deadline left
// (-1: none).
func (m *Manager) sweep(ctx context.Context) int64 {
	m.mu.Lock()
	es := make([]*entry, 0, len(m.entries))
	for _, e := range m.entries {
		es = append(es, e)
	}
	m.mu.Unlock()
	next := int64(-1)
	for _, e := range es {
		e.mu.Lock()
		if e.p != nil {
			part, err := m.o.Replica.Leader(e.tp.Topic, e.tp.Partition)
			if err != nil || part.LeaderEpoch() != e.leaderEpoch {
				// Leadership moved: the new leader loads the state.
				m.drop(e)
				e.mu.Unlock()
				continue
			}
			if m.expire(ctx, e) {
				m.notify(e.group)
			}
			if e.p != nil {
				if d := e.p.NextLockDeadline(); d >= 0 && (next < 0 || d < next) {
					next = d
				}
			}
		}
		e.mu.Unlock()
	}
	return next
}
