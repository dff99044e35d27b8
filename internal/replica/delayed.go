package replica

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"gregor/internal/log"
	"gregor/internal/purgatory"
)

// Delayed operations (Kafka's DelayedProduce and DelayedFetch, and the
// coordinators' writes) park in the manager's purgatories, keyed by
// partition. Every change to what they wait for is followed by a check of
// that partition only (partitionChanged): a leader append (log end, and the
// high watermark of a lone replica), a follower's fetch that moves the high
// watermark, an ISR change that moves it, a follower's append, a metadata
// change of the partition. A request waiting on one partition is never woken
// by others. The partition's own decisions say when (partition.Effects).

// Purgatory names, Kafka's delayedOperation labels where Kafka has one.
const (
	PurgatoryProduce          = "Produce"
	PurgatoryFetch            = "Fetch"
	PurgatoryCoordinatorWrite = "CoordinatorWrite"
)

type purgatories struct {
	produce *purgatory.Purgatory[log.TopicPartition]
	fetch   *purgatory.Purgatory[log.TopicPartition]
	commit  *purgatory.Purgatory[log.TopicPartition]
}

func newPurgatories() purgatories {
	return purgatories{
		produce: purgatory.New[log.TopicPartition](PurgatoryProduce),
		fetch:   purgatory.New[log.TopicPartition](PurgatoryFetch),
		commit:  purgatory.New[log.TopicPartition](PurgatoryCoordinatorWrite),
	}
}

func (p purgatories) all() []*purgatory.Purgatory[log.TopicPartition] {
	return []*purgatory.Purgatory[log.TopicPartition]{p.produce, p.fetch, p.commit}
}

// PurgatorySizes reports the operations parked in each purgatory, by
// delayedOperation label (kafka.server:type=DelayedOperationPurgatory,name=PurgatorySize).
func (m *Manager) PurgatorySizes() map[string]int {
	out := map[string]int{}
	for _, p := range m.delayed.all() {
		out[p.Name()] = p.Size()
	}
	return out
}

// ReleaseFetches answers every waiting fetch now, and every later one at
// once, with what it can read: a broker shutting down does not wait out
// consumers' fetch.max.wait.ms (which a client may set to days) before it
// can close its connections.
func (m *Manager) ReleaseFetches() { m.delayed.fetch.Close() }

// partitionChanged tries again the operations waiting on a partition.
func (m *Manager) partitionChanged(tp log.TopicPartition) {
	for _, p := range m.delayed.all() {
		p.Check(tp)
	}
}

// WaitReplicated waits until an acks=all append ending before
// requiredOffset is replicated to the ISR (Kafka's DelayedProduce): nil
// once the high watermark passes it, NOT_ENOUGH_REPLICAS_AFTER_APPEND if
// the ISR shrank below min.insync.replicas, NOT_LEADER_OR_FOLLOWER once
// this broker no longer leads the partition or shuts down meanwhile (the
// client retries with the next leader), REQUEST_TIMED_OUT at ctx's end.
func (m *Manager) WaitReplicated(ctx context.Context, topic string, p int32, requiredOffset int64) error {
	return m.waitReached(ctx, m.delayed.produce, topic, p, requiredOffset, true)
}

// WaitCommitted waits until the high watermark of a partition this broker
// leads passes requiredOffset: what a coordinator waits for before it
// answers a write or acts on it. Unlike WaitReplicated, an ISR below
// min.insync.replicas is no error once the high watermark passed (the write
// is committed: every replica that can become leader has it). Errors:
// NOT_LEADER_OR_FOLLOWER when leadership moved, REQUEST_TIMED_OUT at ctx's
// end, NOT_LEADER_OR_FOLLOWER at shutdown.
func (m *Manager) WaitCommitted(ctx context.Context, topic string, p int32, requiredOffset int64) error {
	return m.waitReached(ctx, m.delayed.commit, topic, p, requiredOffset, false)
}

func (m *Manager) waitReached(ctx context.Context, pg *purgatory.Purgatory[log.TopicPartition], topic string, p int32, requiredOffset int64, checkMinISR bool) error {
	tp := log.TopicPartition{Topic: topic, Partition: p}
	var result error
	err := pg.Wait(ctx, []log.TopicPartition{tp}, func() bool {
		part, err := m.Leader(topic, p)
		if err != nil {
			result = err
			return true
		}
		var done bool
		if checkMinISR {
			done, err = part.ReachedOffset(requiredOffset)
		} else {
			done, err = part.ReachedHighWatermark(requiredOffset)
		}
		result = err
		return done || err != nil
	})
	switch {
	case errors.Is(err, purgatory.ErrClosed):
		return fmt.Errorf("%s-%d: broker shutting down: %w", topic, p, kerr.NotLeaderForPartition)
	case err != nil:
		return fmt.Errorf("%s-%d: replication to the ISR: %w", topic, p, kerr.RequestTimedOut)
	}
	return result
}

// FetchWatch is one partition a waiting fetch reads.
type FetchWatch struct {
	Topic     string
	Partition int32
	// Replica is a follower's fetch: it reads to the log end.
	Replica bool
	// ReadCommitted reads to the last stable offset; otherwise a consumer
	// reads to the high watermark.
	ReadCommitted bool
}

// FetchPosition is what a fetch could read of a partition at one moment;
// a fetch waits for any of its partitions to move on.
type FetchPosition struct {
	bound  int64 // log end, high watermark or last stable offset
	epoch  int32
	leader bool
	hosted bool
}

func (m *Manager) fetchPosition(w FetchWatch) FetchPosition {
	part, ok := m.Hosted(log.TopicPartition{Topic: w.Topic, Partition: w.Partition})
	if !ok {
		return FetchPosition{}
	}
	pos := FetchPosition{hosted: true, epoch: part.LeaderEpoch(), leader: part.IsLeader()}
	switch {
	case w.Replica:
		pos.bound = part.Log().LogEndOffset()
	case w.ReadCommitted:
		pos.bound = part.LastStableOffset()
	default:
		pos.bound = part.HighWatermark()
	}
	return pos
}

// FetchPositions takes the positions of a fetch's partitions, before it
// reads them: WaitFetchable then waits for any to move past what the read
// could see.
func (m *Manager) FetchPositions(ws []FetchWatch) []FetchPosition {
	out := make([]FetchPosition, len(ws))
	for i, w := range ws {
		out[i] = m.fetchPosition(w)
	}
	return out
}

// WaitFetchable parks a fetch (Kafka's DelayedFetch) until one of its
// partitions moves on from seen: more to read, a new leader epoch, a
// partition gone or come. It returns nil then, ctx.Err() at the fetch's
// max wait, purgatory.ErrClosed at shutdown.
func (m *Manager) WaitFetchable(ctx context.Context, ws []FetchWatch, seen []FetchPosition) error {
	keys := make([]log.TopicPartition, len(ws))
	for i, w := range ws {
		keys[i] = log.TopicPartition{Topic: w.Topic, Partition: w.Partition}
	}
	return m.delayed.fetch.Wait(ctx, keys, func() bool {
		for i, w := range ws {
			if m.fetchPosition(w) != seen[i] {
				return true
			}
		}
		return false
	})
}
