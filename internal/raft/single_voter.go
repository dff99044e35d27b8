package raft

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/log"
	"gregor/internal/metadata"
	"gregor/internal/record"
)

// SingleVoterConfig configures a one-voter quorum.
type SingleVoterConfig struct {
	// Dir is the metadata log's directory, <metadata.log.dir>/__cluster_metadata-0.
	Dir    string
	NodeID int32
	Logger *slog.Logger
	// Now is the clock for batch timestamps; nil means time.Now.
	Now func() time.Time
}

// Kafka's control record types (ControlRecordType) used here.
const (
	controlRecordVersion       = 0
	controlTypeLeaderChange    = 2
	leaderChangeMessageVersion = 0
)

// readChunkBytes bounds one read of the log during replay.
const readChunkBytes = 1 << 20

// SingleVoter is the quorum of one voter: this node. It is leader from Start
// until Close; an append is committed once the batch is written and fsynced,
// and is then handed to the listeners before Append returns.
//
// Each Start is a new election of the one voter: the epoch is one more than
// any epoch in the hard state or the log, the hard state is written, and a
// LeaderChangeMessage control batch opens the epoch, as KRaft does.
type SingleVoter struct {
	cfg    SingleVoterConfig
	logger *slog.Logger

	// mu serializes appends and listener calls, so listeners see batches in
	// offset order, one at a time.
	mu        sync.Mutex
	log       *log.Log
	listeners []Listener
	started   bool
	closed    bool
	failed    error // a write error leaves the log's tail unknown: stop appending
	epoch     int32

	leader        atomic.Int32
	leaderEpoch   atomic.Int32
	highWatermark watermark
	// idle is raft-metrics poll-idle-ratio: a single voter has no loop of
	// its own, it is busy while it appends.
	idle *pollIdle
}

// NewSingleVoter opens (or creates) the metadata log in cfg.Dir. Nothing is
// replayed until Start.
func NewSingleVoter(cfg SingleVoterConfig) (*SingleVoter, error) {
	if cfg.Dir == "" {
		return nil, errors.New("single voter: no metadata log directory")
	}
	if cfg.NodeID < 0 {
		return nil, fmt.Errorf("single voter: invalid node id %d", cfg.NodeID)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	logger = logger.With("component", "raft", "node", cfg.NodeID)
	st, err := readQuorumState(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("single voter: %w", err)
	}
	// No recovery point is kept for the metadata log: after an unclean
	// shutdown the log package rescans it whole and cuts a torn tail. The
	// metadata log is small, and a bad tail must never reach a listener.
	l, err := log.Open(cfg.Dir, log.DefaultConfig(), 0, 0, logger)
	if err != nil {
		return nil, fmt.Errorf("single voter: %w", err)
	}
	v := &SingleVoter{cfg: cfg, logger: logger, log: l, epoch: st.LeaderEpoch, highWatermark: newWatermark(), idle: newPollIdle(time.Now())}
	v.leader.Store(-1)
	v.leaderEpoch.Store(st.LeaderEpoch)
	return v, nil
}

// Register adds a listener; after Start it is first replayed the committed log.
func (v *SingleVoter) Register(l Listener) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.listeners = append(v.listeners, l)
	if v.started && !v.closed {
		if _, err := v.replayLocked(context.Background(), []Listener{l}); err != nil {
			v.logger.Error("replay to a late listener failed", "err", err)
		}
	}
}

// Start replays the log to the listeners, then elects this voter leader of a
// new epoch.
func (v *SingleVoter) Start(ctx context.Context) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.started || v.closed {
		return errors.New("single voter: already started or closed")
	}
	maxEpoch, err := v.replayLocked(ctx, v.listeners)
	if err != nil {
		return fmt.Errorf("single voter: %w", err)
	}
	epoch := max(v.epoch, maxEpoch) + 1
	st := quorumState{
		LeaderID:      v.cfg.NodeID,
		LeaderEpoch:   epoch,
		VotedID:       v.cfg.NodeID, // it voted for itself in this election
		CurrentVoters: []voter{{VoterID: v.cfg.NodeID}},
	}
	// The hard state is durable before the epoch is used, so a restart never
	// reuses an epoch.
	if err := writeQuorumState(v.cfg.Dir, st); err != nil {
		return fmt.Errorf("single voter: %w", err)
	}
	v.epoch = epoch
	if err := v.appendLeaderChangeLocked(); err != nil {
		return fmt.Errorf("single voter: %w", err)
	}
	v.started = true
	v.leader.Store(v.cfg.NodeID)
	v.leaderEpoch.Store(epoch)
	v.logger.Info("elected leader of the metadata quorum", "epoch", epoch, "highWatermark", v.highWatermark.Load())
	for _, l := range v.listeners {
		l.HandleLeaderChange(v.cfg.NodeID, epoch)
	}
	return nil
}

// replayLocked hands every committed data batch of the log to listeners and
// returns the highest epoch seen in the log. Control batches are skipped.
func (v *SingleVoter) replayLocked(ctx context.Context, listeners []Listener) (int32, error) {
	maxEpoch := int32(0)
	offset, end := v.log.LogStartOffset(), v.log.LogEndOffset()
	for offset < end {
		if err := ctx.Err(); err != nil {
			return 0, fmt.Errorf("replay metadata log: %w", err)
		}
		info, err := v.log.Read(offset, readChunkBytes, end, true)
		if err != nil {
			return 0, fmt.Errorf("replay metadata log at %d: %w", offset, err)
		}
		if len(info.Records) == 0 {
			return 0, fmt.Errorf("replay metadata log: nothing readable at %d below the log end %d", offset, end)
		}
		for rest := info.Records; len(rest) > 0; {
			h, err := record.ParseHeader(rest)
			if err != nil {
				return 0, fmt.Errorf("replay metadata log at %d: %w", offset, err)
			}
			raw := rest[:h.Size()]
			rest = rest[h.Size():]
			maxEpoch = max(maxEpoch, h.PartitionLeaderEpoch)
			offset = h.NextOffset()
			if h.IsControl() {
				continue
			}
			b, err := decodeBatch(raw)
			if err != nil {
				return 0, fmt.Errorf("replay metadata log: %w", err)
			}
			for _, l := range listeners {
				l.HandleCommit(b)
			}
		}
	}
	v.highWatermark.Store(end)
	v.log.SetHighWatermark(end)
	return maxEpoch, nil
}

// decodeBatch turns a data batch of the metadata log into a Batch.
func decodeBatch(raw []byte) (Batch, error) {
	h, recs, err := record.ReadRecords(raw)
	if err != nil {
		return Batch{}, fmt.Errorf("batch at %d: %w", h.BaseOffset, err)
	}
	b := Batch{BaseOffset: h.BaseOffset, LastOffset: h.LastOffset(), Epoch: h.PartitionLeaderEpoch,
		AppendTimestamp: h.MaxTimestamp, Records: make([]metadata.Record, 0, len(recs))}
	for _, r := range recs {
		if int64(r.OffsetDelta) != int64(len(b.Records)) {
			return Batch{}, fmt.Errorf("batch at %d: record offset delta %d out of sequence", h.BaseOffset, r.OffsetDelta)
		}
		m, err := metadata.Decode(r.Value)
		if err != nil {
			return Batch{}, fmt.Errorf("record at offset %d: %w", h.BaseOffset+int64(r.OffsetDelta), err)
		}
		b.Records = append(b.Records, m)
	}
	return b, nil
}

// Append writes records as one batch at the log end, fsyncs it (which
// commits it: this voter is the whole quorum), and hands it to every listener.
func (v *SingleVoter) Append(ctx context.Context, records []metadata.Record) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if len(records) == 0 {
		return 0, errors.New("append to the metadata log: no records")
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	start := time.Now()
	defer func() { v.idle.busy(start, time.Now()) }()
	if !v.started || v.closed {
		return 0, ErrNotLeader
	}
	if v.failed != nil {
		return 0, fmt.Errorf("append to the metadata log: an earlier write failed: %w", v.failed)
	}
	base := v.log.LogEndOffset()
	now := v.cfg.Now().UnixMilli()
	bld := record.NewBuilder(v.batchOptions(base, false))
	for _, r := range records {
		bld.Append(now, nil, metadata.Encode(r), nil)
	}
	raw, err := bld.Build()
	if err != nil {
		return 0, fmt.Errorf("append to the metadata log: %w", err)
	}
	if len(raw) > MaxBatchSizeBytes {
		return 0, fmt.Errorf("append to the metadata log: %d records of %d bytes: %w", len(records), len(raw), ErrBatchTooLarge)
	}
	// Listeners get the records as replay from disk would give them, so the
	// in-memory state can never depend on something the log did not keep.
	batch, err := decodeBatch(raw)
	if err != nil {
		return 0, fmt.Errorf("append to the metadata log: %w", err)
	}
	if err := v.writeLocked(raw); err != nil {
		return 0, err
	}
	for _, l := range v.listeners {
		l.HandleCommit(batch)
	}
	return batch.LastOffset, nil
}

// appendLeaderChangeLocked opens the epoch with a LeaderChangeMessage control
// batch (control record key type 2), as KRaft's new leader does.
func (v *SingleVoter) appendLeaderChangeLocked() error {
	msg := kmsg.LeaderChangeMessage{
		Version:        leaderChangeMessageVersion,
		LeaderID:       v.cfg.NodeID,
		Voters:         []kmsg.LeaderChangeMessageVoter{{VoterID: v.cfg.NodeID}},
		GrantingVoters: []kmsg.LeaderChangeMessageVoter{{VoterID: v.cfg.NodeID}},
	}
	key := binary.BigEndian.AppendUint16(nil, controlRecordVersion)
	key = binary.BigEndian.AppendUint16(key, controlTypeLeaderChange)
	bld := record.NewBuilder(v.batchOptions(v.log.LogEndOffset(), true))
	bld.Append(v.cfg.Now().UnixMilli(), key, msg.AppendTo(nil), nil)
	raw, err := bld.Build()
	if err != nil {
		return fmt.Errorf("build leader change batch: %w", err)
	}
	return v.writeLocked(raw)
}

func (v *SingleVoter) batchOptions(base int64, control bool) record.BuilderOptions {
	return record.BuilderOptions{
		BaseOffset:           base,
		Codec:                record.CodecNone,
		ProducerID:           record.NoProducerID,
		ProducerEpoch:        record.NoProducerEpoch,
		BaseSequence:         record.NoSequence,
		Control:              control,
		PartitionLeaderEpoch: v.epoch,
	}
}

// writeLocked appends a batch and fsyncs it; then it is committed.
func (v *SingleVoter) writeLocked(raw []byte) error {
	if _, err := v.log.AppendAsFollower(raw); err != nil {
		v.failed = err
		return fmt.Errorf("append to the metadata log: %w", err)
	}
	if err := v.log.Flush(); err != nil {
		v.failed = err
		return fmt.Errorf("flush the metadata log: %w", err)
	}
	end := v.log.LogEndOffset()
	v.log.SetHighWatermark(end)
	v.highWatermark.Store(end)
	return nil
}

// Leader returns this node while it leads, else -1, and the current epoch.
func (v *SingleVoter) Leader() (int32, int32) {
	return v.leader.Load(), v.leaderEpoch.Load()
}

// PollIdleRatio is raft-metrics poll-idle-ratio-avg: the share of the
// last 30 to 60 s the voter was not appending (pollIdle).
func (v *SingleVoter) PollIdleRatio() float64 { return v.idle.ratio(time.Now()) }

// HighWatermark returns the offset after the last committed batch.
func (v *SingleVoter) HighWatermark() int64 { return v.highWatermark.Load() }

// WaitHighWatermark waits until the high watermark passes offset (Node.WaitHighWatermark).
func (v *SingleVoter) WaitHighWatermark(ctx context.Context, offset int64) error {
	return v.highWatermark.wait(ctx, offset)
}

// PurgatorySize is the number of metadata long polls waiting.
func (v *SingleVoter) PurgatorySize() int { return v.highWatermark.waiting.Size() }

// Close resigns and closes the log.
func (v *SingleVoter) Close() error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.closed {
		return nil
	}
	v.closed = true
	v.leader.Store(-1)
	v.highWatermark.close()
	if err := v.log.Close(); err != nil {
		return fmt.Errorf("single voter: %w", err)
	}
	return nil
}

// Status reports the one-voter quorum: this node leads and is caught up.
func (v *SingleVoter) Status() QuorumStatus {
	leader, epoch := v.Leader()
	hw := v.HighWatermark()
	now := v.cfg.Now().UnixMilli()
	return QuorumStatus{LeaderID: leader, LeaderEpoch: epoch, HighWatermark: hw,
		Voters: []VoterStatus{{ReplicaID: v.cfg.NodeID, LogEndOffset: hw, LastFetchTimestamp: now, LastCaughtUpTimestamp: now}}}
}
