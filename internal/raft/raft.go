// Package raft is the metadata quorum: it stores the __cluster_metadata log,
// decides when a batch of metadata records is committed, and hands committed
// batches, in offset order, to its listeners (the controller and every
// broker's metadata loader).
//
// Quorum is the seam, with two implementations over the same on-disk log.
// Node is a voter, driving go.etcd.io/raft/v3: one Raft entry is one record
// batch, the Raft term is the batch's partition leader epoch, and Raft
// bookkeeping goes in control batches that listeners never see. The
// zero-config single node is a Node whose only voter is itself, so it runs
// the code a cluster runs. Observer follows the log without voting (a
// broker-only node), fetching it from the controllers.
package raft

import (
	"context"
	"errors"

	"gregor/internal/metadata"
)

// Batch is one committed batch of metadata records.
type Batch = metadata.Batch

// Snapshot is a metadata snapshot: the records that rebuild the state as of
// its end offset.
type Snapshot = metadata.Snapshot

// Listener follows the committed metadata log (Kafka's RaftClient.Listener).
// Its methods are called one at a time, in log order; they must not call
// back into the quorum's Append. metadata.Loader is a Listener.
type Listener interface {
	// HandleCommit receives a committed data batch.
	HandleCommit(b Batch)
	// HandleSnapshot replaces all earlier state with the snapshot's; later
	// commits continue after s.EndOffset.
	HandleSnapshot(s Snapshot)
	// HandleLeaderChange reports a new leader (-1: unknown) and epoch. When
	// the local node becomes leader it is called only once every entry of
	// earlier epochs is committed and handed to the listeners, so a
	// listener that acts as leader sees the whole committed log first.
	HandleLeaderChange(leader, epoch int32)
}

// Quorum is the metadata log as a replicated state machine log.
type Quorum interface {
	// Start replays the committed log to the registered listeners before
	// returning, then takes part in the quorum (a one-voter quorum's node
	// returns once it leads).
	Start(ctx context.Context) error
	// Register adds a listener. A listener registered after Start is first
	// brought up to date with the committed log.
	Register(l Listener)
	// Append writes records as one batch. Only the leader may append (else
	// ErrNotLeader). It returns after the batch is committed and every
	// listener has handled it (a QueuedListener by queueing it), with the
	// batch's last offset.
	Append(ctx context.Context, records []metadata.Record) (lastOffset int64, err error)
	// Leader returns the current leader (-1 if unknown) and epoch.
	Leader() (id int32, epoch int32)
	// HighWatermark returns the offset after the last committed record.
	HighWatermark() int64
	// Close stops the quorum; afterwards Append returns ErrNotLeader.
	Close() error
}

var (
	// ErrNotLeader means this node cannot append: it is not (or no longer)
	// the quorum's leader. The controller answers NOT_CONTROLLER.
	ErrNotLeader = errors.New("not the metadata quorum leader")
	// ErrBatchTooLarge means the records do not fit in one batch (Kafka's
	// KRaft limit of 8 MiB per batch).
	ErrBatchTooLarge = errors.New("metadata record batch too large")
)

// MaxBatchSizeBytes is KRaft's largest metadata batch (KafkaRaftClient's
// MAX_BATCH_SIZE_BYTES).
const MaxBatchSizeBytes = 8 << 20
