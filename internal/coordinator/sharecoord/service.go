package sharecoord

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"gregor/internal/coordinator"
	"gregor/internal/sharestate"
)

// Coordinated adapts a Shard to the coordinator runtime
// (coordinator.Shard, coordinator.PositionedShard). Its one timer prunes
// the partition: every prune interval it deletes the state of
// share-partitions whose topic was deleted, snapshots the share-partitions
// written less recently than the cold snapshot interval, then, once that is
// committed, deletes the records no state needs any more (Kafka's
// share.coordinator.state.topic.prune.interval.ms and
// share.coordinator.cold.partition.snapshot.interval.ms): the partition's
// cleanup policy is delete with infinite retention, so this is what bounds
// it, and what a new coordinator replays.
type Coordinated struct {
	*Shard
	prune *pruner
}

// coldSnapshotsPerBatch bounds the snapshots a pruning writes in one batch.
const coldSnapshotsPerBatch = 16

type pruner struct {
	interval, coldInterval time.Duration
	next                   time.Time
	// deleted is the log start offset the last deletion set.
	deleted int64
}

var (
	_ coordinator.Shard           = Coordinated{}
	_ coordinator.PositionedShard = Coordinated{}
)

// NewCoordinated adapts sh; pruneInterval 0 never prunes.
func NewCoordinated(sh *Shard, now time.Time, pruneInterval, coldSnapshotInterval time.Duration) Coordinated {
	c := Coordinated{Shard: sh}
	if pruneInterval > 0 {
		c.prune = &pruner{interval: pruneInterval, coldInterval: coldSnapshotInterval, next: now.Add(pruneInterval)}
	}
	return c
}

// Replay implements coordinator.Shard; the runtime calls ReplayAt instead.
func (c Coordinated) Replay(_ time.Time, key, value []byte) error {
	return fmt.Errorf("share coordinator record replayed without its offset")
}

// ReplayAt implements coordinator.PositionedShard.
func (c Coordinated) ReplayAt(_ time.Time, offset int64, key, value []byte) error {
	return c.Shard.Replay(offset, key, value)
}

// Tick implements coordinator.Shard: the pruning.
func (c Coordinated) Tick(now time.Time, w *coordinator.Writer) {
	if c.prune == nil || now.Before(c.prune.next) {
		return
	}
	c.prune.next = now.Add(c.prune.interval)
	if recs := c.Shard.OrphanTombstones(); len(recs) > 0 {
		if err := writeAndApply(c.Shard, w, recs); err != nil {
			return // the next tick tries again
		}
	}
	// Snapshots can be large: a few per batch, so that no batch outgrows
	// the topic's max.message.bytes.
	recs := c.Shard.ColdSnapshots(now.UnixMilli(), c.prune.coldInterval.Milliseconds())
	for len(recs) > 0 {
		n := min(len(recs), coldSnapshotsPerBatch)
		if err := writeAndApply(c.Shard, w, recs[:n]); err != nil {
			return
		}
		recs = recs[n:]
	}
	offset := c.Shard.RedundantOffset(w.Written())
	if offset <= c.prune.deleted {
		return
	}
	w.AfterCommit(func(err error) {
		if err == nil && w.DeleteRecordsBefore(offset) == nil {
			c.prune.deleted = offset
		}
	})
}

// NextDeadline implements coordinator.Shard: the next pruning.
func (c Coordinated) NextDeadline() time.Time {
	if c.prune == nil {
		return time.Time{}
	}
	return c.prune.next
}

// Unload implements coordinator.Shard: nothing waits on a share shard
// between operations.
func (Coordinated) Unload() {}

// writeAndApply appends records as one batch and, once appended, replays
// them into the shard at their offsets.
func writeAndApply(sh *Shard, w *coordinator.Writer, recs []coordinator.Record) error {
	if err := w.Write(recs); err != nil {
		return appendError(err)
	}
	base := w.Written() - int64(len(recs))
	for i, r := range recs {
		if err := sh.Replay(base+int64(i), r.Key, r.Value); err != nil {
			return fmt.Errorf("%w: apply the share coordinator's own record: %w", kerr.UnknownServerError, err)
		}
	}
	return nil
}

// Service runs share-partition state operations on this broker's shards of
// __share_group_state. Each answers only once its records (and every
// earlier write of the shard) are committed: a nil error means the change
// survives a failover of the share coordinator. Errors are the shard's
// (wrapped kerr values) or the runtime's: NOT_COORDINATOR,
// COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE.
type Service struct {
	rt         *coordinator.Runtime
	partitions func() int32
	now        func() time.Time
}

// NewService returns the service of a runtime whose shards are
// Coordinated; partitions is the partition count of __share_group_state
// (its actual count once created, share.coordinator.state.topic.num.partitions
// before).
func NewService(rt *coordinator.Runtime, partitions func() int32, now func() time.Time) *Service {
	if now == nil {
		now = time.Now
	}
	return &Service{rt: rt, partitions: partitions, now: now}
}

// Partition is the __share_group_state partition that coordinates a
// share-partition: abs(hash("group:topicId:partition")) % partitions, as
// Kafka's ShareCoordinatorService.partitionFor.
func (s *Service) Partition(k sharestate.Key) int32 {
	return coordinator.PartitionFor(CoordinatorKey(k), s.partitions())
}

// Initialize implements InitializeShareGroupState for one share-partition.
func (s *Service) Initialize(ctx context.Context, k sharestate.Key, stateEpoch int32, startOffset int64) error {
	return s.do(ctx, k, func(sh *Shard, now int64) ([]coordinator.Record, error) {
		return sh.Initialize(k, stateEpoch, startOffset, now)
	})
}

// Read implements ReadShareGroupState for one share-partition.
func (s *Service) Read(ctx context.Context, k sharestate.Key, leaderEpoch int32) (sharestate.State, error) {
	var st sharestate.State
	err := s.do(ctx, k, func(sh *Shard, now int64) ([]coordinator.Record, error) {
		var (
			recs []coordinator.Record
			err  error
		)
		st, recs, err = sh.Read(k, leaderEpoch, now)
		return recs, err
	})
	return st, err
}

// Write implements WriteShareGroupState for one share-partition.
func (s *Service) Write(ctx context.Context, k sharestate.Key, u sharestate.Update) error {
	return s.do(ctx, k, func(sh *Shard, now int64) ([]coordinator.Record, error) {
		return sh.Write(k, u, now)
	})
}

// ReadSummary implements ReadShareGroupStateSummary for one
// share-partition.
func (s *Service) ReadSummary(ctx context.Context, k sharestate.Key) (sharestate.Summary, error) {
	var sum sharestate.Summary
	err := s.do(ctx, k, func(sh *Shard, _ int64) ([]coordinator.Record, error) {
		var err error
		sum, err = sh.ReadSummary(k)
		return nil, err
	})
	return sum, err
}

// Delete implements DeleteShareGroupState for one share-partition.
func (s *Service) Delete(ctx context.Context, k sharestate.Key) error {
	return s.do(ctx, k, func(sh *Shard, _ int64) ([]coordinator.Record, error) {
		return sh.Delete(k)
	})
}

// do runs op on the key's shard, writes its records and applies them once
// appended; Do then waits until they are committed.
func (s *Service) do(ctx context.Context, k sharestate.Key, op func(sh *Shard, nowMs int64) ([]coordinator.Record, error)) error {
	var opErr error
	err := s.rt.Do(ctx, s.Partition(k), func(cs coordinator.Shard, w *coordinator.Writer) {
		sh := cs.(Coordinated).Shard
		recs, err := op(sh, s.now().UnixMilli())
		if err != nil {
			opErr = err
			return
		}
		if len(recs) > 0 {
			opErr = writeAndApply(sh, w, recs)
		}
	})
	if err != nil {
		return err
	}
	return opErr
}

// appendError maps a failed append to __share_group_state to the
// coordinator's answer, as Kafka's coordinator runtime does: not enough
// replicas or a timeout is COORDINATOR_NOT_AVAILABLE, lost leadership
// NOT_COORDINATOR (both retriable), an oversized batch UNKNOWN_SERVER_ERROR.
func appendError(err error) error {
	var ke *kerr.Error
	if !errors.As(err, &ke) {
		return fmt.Errorf("%w: %w", kerr.UnknownServerError, err)
	}
	switch ke {
	case kerr.UnknownTopicOrPartition, kerr.NotEnoughReplicas, kerr.NotEnoughReplicasAfterAppend, kerr.RequestTimedOut:
		return fmt.Errorf("%w: %w", kerr.CoordinatorNotAvailable, err)
	case kerr.NotLeaderForPartition, kerr.KafkaStorageError:
		return fmt.Errorf("%w: %w", kerr.NotCoordinator, err)
	case kerr.MessageTooLarge, kerr.RecordListTooLarge:
		return fmt.Errorf("%w: %w", kerr.UnknownServerError, err)
	}
	return err
}
