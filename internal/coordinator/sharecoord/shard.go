// Package sharecoord is the share coordinator (KIP-932): the durable state
// of share-partitions (a share group's view of one topic partition), kept
// in the __share_group_state internal topic, one shard per partition of
// that topic on the coordinator runtime, as Kafka's ShareCoordinatorShard.
//
// Shard is the state machine. It is pure: no goroutines, sockets or clocks;
// the driver passes the time. An operation validates and returns the
// records to write; the driver appends them and, once appended, replays
// them into the shard (Kafka's CoordinatorResult), so the state is always
// the replay of the partition, live as on reload. Each write of a
// share-partition is a ShareUpdate record, and every
// share.coordinator.snapshot.update.records.per.snapshot updates a
// ShareSnapshot carrying the whole state; loading replays both. State
// epochs (set by InitializeShareGroupState) and leader epochs (set by a
// partition leader's ReadShareGroupState) fence stale writers.
//
// Service runs the operations on the runtime and answers once the records
// are committed; Persister is the sharestate.Persister brokers use, local or
// over the wire; the handlers of APIs 83-87 call Service.
package sharecoord

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"

	"gregor/internal/coordinator"
	"gregor/internal/sharestate"
)

// DefaultSnapshotUpdateRecordsPerSnapshot is Kafka's default of
// share.coordinator.snapshot.update.records.per.snapshot.
const DefaultSnapshotUpdateRecordsPerSnapshot = 500

// Config configures a Shard.
type Config struct {
	// SnapshotUpdateRecordsPerSnapshot is how many ShareUpdate records of
	// a share-partition are written before the next write is a
	// ShareSnapshot (share.coordinator.snapshot.update.records.per.snapshot);
	// 0: Kafka's default.
	SnapshotUpdateRecordsPerSnapshot int
	// TopicPartitions is the partition count of a topic id, false for a
	// topic the cluster does not have: state of an unknown partition is
	// UNKNOWN_TOPIC_OR_PARTITION. nil checks nothing.
	TopicPartitions func(topicID [16]byte) (int32, bool)
}

// Shard holds the share-partitions whose key hashes to one partition of
// __share_group_state.
type Shard struct {
	cfg    Config
	states map[sharestate.Key]*snapshot
	// The highest leader and state epochs seen per share-partition
	// (Kafka's leaderEpochMap and stateEpochMap): they only rise, also
	// when a new snapshot carries a lower one.
	leaderEpochs map[sharestate.Key]int32
	stateEpochs  map[sharestate.Key]int32
	// updates counts the ShareUpdate records since the share-partition's
	// last ShareSnapshot.
	updates map[sharestate.Key]int
	// since is the offset of the oldest record a share-partition's state
	// still needs: its last snapshot (or its first update, without one).
	// Records before the least of them are redundant (Kafka's
	// ShareCoordinatorOffsetsManager).
	since map[sharestate.Key]int64
}

// New returns an empty shard.
func New(cfg Config) *Shard {
	cfg.SnapshotUpdateRecordsPerSnapshot = max(cfg.SnapshotUpdateRecordsPerSnapshot, 0)
	return &Shard{
		cfg:          cfg,
		states:       map[sharestate.Key]*snapshot{},
		leaderEpochs: map[sharestate.Key]int32{},
		stateEpochs:  map[sharestate.Key]int32{},
		updates:      map[sharestate.Key]int{},
		since:        map[sharestate.Key]int64{},
	}
}

// CoordinatorKey is the FindCoordinator key of a share-partition (key type
// SHARE): "groupId:topicId:partition", the topic id in Kafka's text form
// (URL-safe base64, no padding), as Kafka's SharePartitionKey writes it.
func CoordinatorKey(k sharestate.Key) string {
	return fmt.Sprintf("%s:%s:%d", k.GroupID, base64.RawURLEncoding.EncodeToString(k.TopicID[:]), k.Partition)
}

// uninitializedError is a read or write of a share-partition that has no
// state (never initialized, or deleted). Kafka answers INVALID_REQUEST; the
// sharestate.Persister contract calls it UNKNOWN_TOPIC_OR_PARTITION, so it
// matches both with errors.Is (and INVALID_REQUEST with errors.As, the wire
// code).
type uninitializedError struct{ op string }

func (e uninitializedError) Error() string {
	return e.op + " of a share-partition that has no state (never initialized, or deleted)"
}
func (e uninitializedError) Unwrap() error        { return kerr.InvalidRequest }
func (e uninitializedError) Is(target error) bool { return target == kerr.UnknownTopicOrPartition }

// uninitializedMessage is how an answer names an uninitialized
// share-partition, so that a persister on another broker recognises it.
func uninitializedMessage(op string) string { return uninitializedError{op: op}.Error() }

const (
	opRead  = "read"
	opWrite = "write"
)

// validate checks what every operation checks (Kafka's maybeGet*Error):
// a topic id and a partition index, of a partition the cluster has.
func (s *Shard) validate(k sharestate.Key) error {
	if k.TopicID == ([16]byte{}) {
		return fmt.Errorf("%w: the topic id is missing", kerr.InvalidRequest)
	}
	if k.Partition < 0 {
		return fmt.Errorf("%w: partition %d is negative", kerr.InvalidRequest, k.Partition)
	}
	return nil
}

// exists reports UNKNOWN_TOPIC_OR_PARTITION for a partition the cluster
// does not have.
func (s *Shard) exists(k sharestate.Key) error {
	if s.cfg.TopicPartitions == nil {
		return nil
	}
	if n, ok := s.cfg.TopicPartitions(k.TopicID); !ok || k.Partition >= n {
		return fmt.Errorf("%w: no partition %d of topic %s", kerr.UnknownTopicOrPartition, k.Partition, base64.RawURLEncoding.EncodeToString(k.TopicID[:]))
	}
	return nil
}

// Initialize returns the ShareSnapshot that starts a share-partition's
// state afresh (InitializeShareGroupState): no batches, the given start
// offset (-1: not decided yet) and state epoch, no leader epoch. A state
// epoch below the one stored is FENCED_STATE_EPOCH (an equal one
// re-initializes, as Kafka: a retried initialize succeeds).
func (s *Shard) Initialize(k sharestate.Key, stateEpoch int32, startOffset int64, nowMs int64) ([]coordinator.Record, error) {
	if err := s.validate(k); err != nil {
		return nil, err
	}
	if cur, ok := s.stateEpochs[k]; ok && stateEpoch != -1 && cur > stateEpoch {
		return nil, fmt.Errorf("%w: state epoch %d is below the share-partition's %d", kerr.FencedStateEpoch, stateEpoch, cur)
	}
	if err := s.exists(k); err != nil {
		return nil, err
	}
	var snapshotEpoch int32
	if cur, ok := s.states[k]; ok {
		snapshotEpoch = cur.SnapshotEpoch + 1
	}
	return []coordinator.Record{{
		Key: encodeKey(recordTypeSnapshot, k),
		Value: encodeSnapshot(snapshot{
			SnapshotEpoch: snapshotEpoch, StateEpoch: stateEpoch, LeaderEpoch: -1, StartOffset: startOffset,
			DeliveryCompleteCount: -1, CreateTimestamp: nowMs, WriteTimestamp: nowMs,
		}),
	}}, nil
}

// Read returns a share-partition's state for its partition leader
// (ReadShareGroupState) and, when leaderEpoch is newer than the one
// stored, the record that stores it: from then on reads and writes of an
// older leader epoch are FENCED_LEADER_EPOCH. The state returned carries
// the leader epoch the read was made with (the stored one for -1).
func (s *Shard) Read(k sharestate.Key, leaderEpoch int32, nowMs int64) (sharestate.State, []coordinator.Record, error) {
	if err := s.validate(k); err != nil {
		return sharestate.State{}, nil, err
	}
	cur, ok := s.states[k]
	if !ok {
		return sharestate.State{}, nil, uninitializedError{op: opRead}
	}
	if stored, ok := s.leaderEpochs[k]; ok && stored > leaderEpoch {
		return sharestate.State{}, nil, fmt.Errorf("%w: leader epoch %d is below the share-partition's %d", kerr.FencedLeaderEpoch, leaderEpoch, stored)
	}
	if err := s.exists(k); err != nil {
		return sharestate.State{}, nil, err
	}
	st := sharestate.State{
		StateEpoch: cur.StateEpoch, LeaderEpoch: max(cur.LeaderEpoch, leaderEpoch), StartOffset: cur.StartOffset,
		DeliveryCompleteCount: cur.DeliveryCompleteCount, Batches: append([]sharestate.Batch(nil), cur.Batches...),
	}
	if stored, ok := s.leaderEpochs[k]; leaderEpoch == -1 || ok && stored == leaderEpoch {
		return st, nil, nil
	}
	rec := s.stateRecord(k, cur, sharestate.Update{StateEpoch: cur.StateEpoch, LeaderEpoch: leaderEpoch, StartOffset: cur.StartOffset, DeliveryCompleteCount: -1}, true, nowMs)
	return st, []coordinator.Record{rec}, nil
}

// Write returns the record of a partition leader's change
// (WriteShareGroupState): a ShareUpdate, or a ShareSnapshot of the merged
// state when the share-partition has had
// share.coordinator.snapshot.update.records.per.snapshot updates since its
// last snapshot. Epochs older than the stored ones are fenced (-1 checks
// none); a share-partition without state is refused.
func (s *Shard) Write(k sharestate.Key, u sharestate.Update, nowMs int64) ([]coordinator.Record, error) {
	if err := s.validate(k); err != nil {
		return nil, err
	}
	for _, b := range u.Batches {
		if b.FirstOffset < 0 || b.FirstOffset > b.LastOffset {
			return nil, fmt.Errorf("%w: state batch [%d, %d]", kerr.InvalidRequest, b.FirstOffset, b.LastOffset)
		}
	}
	cur, ok := s.states[k]
	if !ok {
		return nil, uninitializedError{op: opWrite}
	}
	if stored, ok := s.leaderEpochs[k]; ok && u.LeaderEpoch != -1 && stored > u.LeaderEpoch {
		return nil, fmt.Errorf("%w: leader epoch %d is below the share-partition's %d", kerr.FencedLeaderEpoch, u.LeaderEpoch, stored)
	}
	if stored, ok := s.stateEpochs[k]; ok && u.StateEpoch != -1 && stored > u.StateEpoch {
		return nil, fmt.Errorf("%w: state epoch %d is below the share-partition's %d", kerr.FencedStateEpoch, u.StateEpoch, stored)
	}
	if err := s.exists(k); err != nil {
		return nil, err
	}
	return []coordinator.Record{s.stateRecord(k, cur, u, false, nowMs)}, nil
}

// stateRecord is the record of a change (Kafka's generateShareStateRecord):
// a ShareSnapshot once the updates since the last one reach the limit, else
// a ShareUpdate of the change's own batches (merged among themselves). A
// write keeps the stored leader epoch (a read records a new one:
// newLeaderEpoch).
func (s *Shard) stateRecord(k sharestate.Key, cur *snapshot, u sharestate.Update, newLeaderEpoch bool, nowMs int64) coordinator.Record {
	leaderEpoch := cur.LeaderEpoch
	if newLeaderEpoch && u.LeaderEpoch != -1 {
		leaderEpoch = u.LeaderEpoch
	}
	completeCount := resolveCompleteCount(cur, u.StartOffset, u.DeliveryCompleteCount)
	if s.updates[k] >= s.cfg.SnapshotUpdateRecordsPerSnapshot {
		start := u.StartOffset
		if start == -1 {
			start = cur.StartOffset
		}
		return coordinator.Record{
			Key: encodeKey(recordTypeSnapshot, k),
			Value: encodeSnapshot(snapshot{
				SnapshotEpoch: cur.SnapshotEpoch + 1, StateEpoch: cur.StateEpoch, LeaderEpoch: leaderEpoch,
				StartOffset: start, DeliveryCompleteCount: completeCount,
				CreateTimestamp: nowMs, WriteTimestamp: nowMs,
				Batches: combineBatches(cur.Batches, u.Batches, start),
			}),
		}
	}
	return coordinator.Record{
		Key: encodeKey(recordTypeUpdate, k),
		Value: encodeUpdate(update{
			SnapshotEpoch: cur.SnapshotEpoch, LeaderEpoch: leaderEpoch, StartOffset: u.StartOffset,
			DeliveryCompleteCount: completeCount,
			Batches:               combineBatches(nil, u.Batches, u.StartOffset),
		}),
	}
}

// resolveCompleteCount is the delivery-complete count after a write (as
// Kafka's share coordinator): the count is not monotonic, so a write that
// moves the start offset forward sets it, one at the same start offset
// can only raise it, and one behind the stored start offset (arriving out
// of order) leaves it.
func resolveCompleteCount(cur *snapshot, startOffset int64, count int32) int32 {
	switch {
	case startOffset == -1 || startOffset == cur.StartOffset:
		return max(cur.DeliveryCompleteCount, count)
	case startOffset > cur.StartOffset:
		return count
	}
	return cur.DeliveryCompleteCount
}

// ReadSummary returns a share-partition's state without its batches
// (ReadShareGroupStateSummary); it fences nothing. A share-partition
// without state answers start offset -1, leader epoch -1, state epoch 0,
// as Kafka.
func (s *Shard) ReadSummary(k sharestate.Key) (sharestate.Summary, error) {
	if err := s.validate(k); err != nil {
		return sharestate.Summary{}, err
	}
	if err := s.exists(k); err != nil {
		return sharestate.Summary{}, err
	}
	cur, ok := s.states[k]
	if !ok {
		return sharestate.Summary{StateEpoch: 0, LeaderEpoch: -1, StartOffset: -1, DeliveryCompleteCount: -1}, nil
	}
	return sharestate.Summary{StateEpoch: cur.StateEpoch, LeaderEpoch: cur.LeaderEpoch, StartOffset: cur.StartOffset, DeliveryCompleteCount: cur.DeliveryCompleteCount}, nil
}

// Delete returns the tombstone that removes a share-partition's state
// (DeleteShareGroupState); deleting state that does not exist writes
// nothing and succeeds.
func (s *Shard) Delete(k sharestate.Key) ([]coordinator.Record, error) {
	if err := s.validate(k); err != nil {
		return nil, err
	}
	if err := s.exists(k); err != nil {
		return nil, err
	}
	if _, ok := s.states[k]; !ok {
		return nil, nil
	}
	return []coordinator.Record{{Key: encodeKey(recordTypeSnapshot, k)}}, nil
}

// Replay applies the record at offset of __share_group_state: while the
// shard loads, and after each successful write. Records of unknown types or
// versions are skipped, as Kafka does (ErrUnknownRecord is not returned).
func (s *Shard) Replay(offset int64, key, value []byte) error {
	recordType, k, err := decodeKey(key)
	if err != nil {
		if isUnknown(err) {
			return nil
		}
		return err
	}
	switch recordType {
	case recordTypeSnapshot:
		if value == nil {
			delete(s.states, k)
			delete(s.leaderEpochs, k)
			delete(s.stateEpochs, k)
			delete(s.updates, k)
			delete(s.since, k)
			return nil
		}
		v, err := decodeSnapshot(value)
		if err != nil {
			if isUnknown(err) {
				return nil
			}
			return err
		}
		s.raiseLeaderEpoch(k, v.LeaderEpoch)
		if cur, ok := s.stateEpochs[k]; !ok || v.StateEpoch > cur {
			s.stateEpochs[k] = v.StateEpoch
		}
		s.states[k] = &v
		s.updates[k] = 0
		s.since[k] = offset
	case recordTypeUpdate:
		if value == nil {
			return nil
		}
		v, err := decodeUpdate(value)
		if err != nil {
			if isUnknown(err) {
				return nil
			}
			return err
		}
		s.raiseLeaderEpoch(k, v.LeaderEpoch)
		cur, ok := s.states[k]
		if !ok {
			// An update without a snapshot before it (its snapshot was
			// removed from the log): the update is the state.
			s.states[k] = &snapshot{
				SnapshotEpoch: v.SnapshotEpoch, StateEpoch: 0, LeaderEpoch: v.LeaderEpoch, StartOffset: v.StartOffset,
				DeliveryCompleteCount: v.DeliveryCompleteCount, Batches: v.Batches,
			}
		} else {
			next := *cur
			if v.StartOffset != -1 {
				next.StartOffset = v.StartOffset
			}
			if v.LeaderEpoch != -1 {
				next.LeaderEpoch = v.LeaderEpoch
			}
			next.DeliveryCompleteCount = v.DeliveryCompleteCount
			next.Batches = combineBatches(cur.Batches, v.Batches, next.StartOffset)
			s.states[k] = &next
		}
		s.updates[k]++
		if _, ok := s.since[k]; !ok {
			s.since[k] = offset
		}
	}
	return nil
}

// RedundantOffset is the offset before which every record of the
// partition is redundant: the oldest record a share-partition's state
// still needs, or next (the offset after the last record) when no
// share-partition has state.
func (s *Shard) RedundantOffset(next int64) int64 {
	offset := next
	for _, o := range s.since {
		offset = min(offset, o)
	}
	return offset
}

// OrphanTombstones returns the tombstones of the share-partitions whose
// topic the cluster no longer has (Kafka's maybeCleanupShareState on a
// topic deletion); nothing when topics are not checked.
func (s *Shard) OrphanTombstones() []coordinator.Record {
	if s.cfg.TopicPartitions == nil {
		return nil
	}
	var keys []sharestate.Key
	for k := range s.states {
		if _, ok := s.cfg.TopicPartitions(k.TopicID); !ok {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool { return lessKey(keys[i], keys[j]) })
	recs := make([]coordinator.Record, 0, len(keys))
	for _, k := range keys {
		recs = append(recs, coordinator.Record{Key: encodeKey(recordTypeSnapshot, k)})
	}
	return recs
}

// ColdSnapshots returns fresh ShareSnapshots of the share-partitions not
// written for intervalMs (Kafka's cold partition snapshots), so that their
// old snapshot and updates become redundant and the partition can be
// pruned. When every share-partition's last snapshot was already such a
// snapshot the partition is quiet and nothing is written.
func (s *Shard) ColdSnapshots(nowMs, intervalMs int64) []coordinator.Record {
	keys := make([]sharestate.Key, 0, len(s.states))
	allCold := true
	for k, st := range s.states {
		if st.CreateTimestamp == st.WriteTimestamp {
			allCold = false
		}
		if nowMs-st.WriteTimestamp >= intervalMs {
			keys = append(keys, k)
		}
	}
	if allCold {
		return nil
	}
	sort.Slice(keys, func(i, j int) bool { return lessKey(keys[i], keys[j]) })
	recs := make([]coordinator.Record, 0, len(keys))
	for _, k := range keys {
		v := *s.states[k]
		v.SnapshotEpoch++
		v.WriteTimestamp = nowMs
		recs = append(recs, coordinator.Record{Key: encodeKey(recordTypeSnapshot, k), Value: encodeSnapshot(v)})
	}
	return recs
}

func lessKey(a, b sharestate.Key) bool {
	if a.GroupID != b.GroupID {
		return a.GroupID < b.GroupID
	}
	if c := bytes.Compare(a.TopicID[:], b.TopicID[:]); c != 0 {
		return c < 0
	}
	return a.Partition < b.Partition
}

func (s *Shard) raiseLeaderEpoch(k sharestate.Key, epoch int32) {
	if cur, ok := s.leaderEpochs[k]; !ok || epoch > cur {
		s.leaderEpochs[k] = epoch
	}
}

// Len is how many share-partitions have state in this shard.
func (s *Shard) Len() int { return len(s.states) }
