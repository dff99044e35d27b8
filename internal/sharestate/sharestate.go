// Package sharestate is the contract between a share-partition leader, the
// share group coordinator and the share-group state persister (KIP-932):
// the durable state of one share-partition (a group's view of one topic
// partition) and the operations on it. The persister keeps it in the
// __share_group_state internal topic through the share coordinator; the
// partition leader reads it when it starts serving a share-partition and
// writes every change before it acknowledges the change to a client.
package sharestate

import "context"

// Key names one share-partition.
type Key struct {
	GroupID   string
	TopicID   [16]byte
	Partition int32
}

// DeliveryState is a persisted record state, with Kafka's wire values
// (RecordState). Acquired (1) is never persisted: an acquired record is
// written as Available, since its lock dies with its leader.
type DeliveryState int8

const (
	Available    DeliveryState = 0
	Acknowledged DeliveryState = 2
	Archived     DeliveryState = 4
)

// Batch is a run of offsets [FirstOffset, LastOffset] in one state with one
// delivery count.
type Batch struct {
	FirstOffset   int64
	LastOffset    int64
	DeliveryState DeliveryState
	DeliveryCount int16
}

// State is a share-partition's persisted state. StartOffset is the
// share-partition start offset (SPSO); -1 means not yet decided (the leader
// then applies share.auto.offset.reset). Batches cover only offsets at or
// above StartOffset, sorted, not overlapping.
type State struct {
	StateEpoch            int32
	LeaderEpoch           int32
	StartOffset           int64
	DeliveryCompleteCount int32
	Batches               []Batch
}

// Summary is what ReadShareGroupStateSummary returns (for admin offsets).
type Summary struct {
	StateEpoch            int32
	LeaderEpoch           int32
	StartOffset           int64
	DeliveryCompleteCount int32
}

// Update is one WriteShareGroupState for one share-partition: Batches are
// merged into the stored state (a later batch replaces the states of the
// offsets it covers), and offsets below StartOffset are dropped.
type Update struct {
	StateEpoch            int32
	LeaderEpoch           int32
	StartOffset           int64
	DeliveryCompleteCount int32
	Batches               []Batch
}

// Persister stores share-partition state. Errors are Kafka's, wrapped so
// that errors.Is matches the kerr value: kerr.FencedStateEpoch,
// kerr.FencedLeaderEpoch, kerr.UnknownTopicOrPartition (no state: never
// initialized, or deleted), kerr.CoordinatorNotAvailable /
// kerr.NotCoordinator / kerr.CoordinatorLoadInProgress (retriable), and
// kerr.InvalidRequest for a malformed call. A nil error means the change is
// committed (replicated to the __share_group_state partition's ISR) and
// survives a failover of the share coordinator.
type Persister interface {
	// Initialize creates or replaces a share-partition's state with no
	// batches (InitializeShareGroupState); stateEpoch must be greater than
	// the stored one.
	Initialize(ctx context.Context, key Key, stateEpoch int32, startOffset int64) error
	// Read returns the state and records leaderEpoch as the partition
	// leader's; a read or write with an older leader epoch is fenced
	// (ReadShareGroupState).
	Read(ctx context.Context, key Key, leaderEpoch int32) (State, error)
	// Write applies an Update (WriteShareGroupState).
	Write(ctx context.Context, key Key, u Update) error
	// ReadSummary returns the state without batches and fences nothing
	// (ReadShareGroupStateSummary).
	ReadSummary(ctx context.Context, key Key) (Summary, error)
	// Delete removes the state (DeleteShareGroupState).
	Delete(ctx context.Context, key Key) error
}
