package raft

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/metadata"
	"gregor/internal/record"
	"gregor/internal/rpc"
)

// MetadataTopic is the metadata log's topic name on the wire.
const MetadataTopic = "__cluster_metadata"

// ObserverConfig configures an Observer.
type ObserverConfig struct {
	NodeID    int32
	ClusterID string
	// Security is how this node authenticates to the controller listener.
	Security rpc.Security
	// Voters maps each controller's id to its controller listener (host:port).
	Voters map[int32]string
	// FetchMaxWait is how long a fetch waits at the log end for new records.
	FetchMaxWait time.Duration
	// RequestTimeout bounds one request (controller.quorum.request.timeout.ms).
	RequestTimeout time.Duration
	// RetryBackoff is the pause after a failed fetch (controller.quorum.retry.backoff.ms).
	RetryBackoff time.Duration
	// OnFetchedRecords, if set, is told of the metadata records fetched
	// from the leader and handed to the listeners (raft-metrics
	// fetch-records-rate).
	OnFetchedRecords func(records int)
	Logger           *slog.Logger
}

// Observer follows the metadata log of a quorum it does not vote in, as a
// broker-only node does (Kafka's observers): it fetches committed batches
// from the controllers with Fetch on __cluster_metadata-0, and the snapshot
// with FetchSnapshot when the log it needs was cleaned away behind one. It
// keeps nothing on disk: a restarted broker fetches the log again.
//
// Observer implements Quorum; it never leads, so Append is ErrNotLeader.
type Observer struct {
	cfg    ObserverConfig
	logger *slog.Logger

	mu        sync.Mutex // serializes listener calls with Register
	listeners []Listener

	next        atomic.Int64 // next offset to fetch = end of what listeners have
	leader      atomic.Int32
	leaderEpoch atomic.Int32
	hw          atomic.Int64 // the quorum's high watermark as last reported
	// idle is raft-metrics poll-idle-ratio: busy while applying what a
	// fetch brought, idle while waiting for the leader's answer.
	idle *pollIdle

	stop    context.CancelFunc
	done    chan struct{}
	started atomic.Bool
	// fatal carries an answer that retrying cannot fix (another
	// cluster's controllers) to Start.
	fatal chan error
}

// NewObserver returns an observer; Start begins fetching.
func NewObserver(cfg ObserverConfig) *Observer {
	if cfg.FetchMaxWait <= 0 {
		cfg.FetchMaxWait = 500 * time.Millisecond
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = 2 * time.Second
	}
	if cfg.RetryBackoff <= 0 {
		cfg.RetryBackoff = 20 * time.Millisecond
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	o := &Observer{cfg: cfg, logger: logger.With("component", "raft-observer", "node", cfg.NodeID), done: make(chan struct{}), fatal: make(chan error, 1),
		idle: newPollIdle(time.Now())}
	o.leader.Store(-1)
	return o
}

// Register adds a listener. Registering after Start is not supported: an
// observer keeps no log to replay.
func (o *Observer) Register(l Listener) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.started.Load() {
		panic("raft observer: Register after Start")
	}
	o.listeners = append(o.listeners, l)
}

// Start fetches until the listeners have everything the quorum had
// committed when the first fetch was answered (or ctx ends), then keeps
// following in the background until Close.
func (o *Observer) Start(ctx context.Context) error {
	if !o.started.CompareAndSwap(false, true) {
		return errors.New("raft observer: already started")
	}
	runCtx, cancel := context.WithCancel(context.Background())
	o.stop = cancel
	caughtUp := make(chan struct{})
	go func() {
		defer close(o.done)
		o.run(runCtx, caughtUp)
	}()
	select {
	case <-caughtUp:
		return nil
	case err := <-o.fatal:
		o.stop()
		<-o.done
		o.stop = nil
		return err
	case <-ctx.Done():
		return fmt.Errorf("catch up with the metadata log: %w", ctx.Err())
	}
}

func (o *Observer) run(ctx context.Context, caughtUp chan struct{}) {
	target := int64(-1)
	clients := map[int32]*rpc.Client{}
	defer func() {
		for _, c := range clients {
			c.Close()
		}
	}()
	ids := slices.Sorted(func(yield func(int32) bool) {
		for id := range o.cfg.Voters {
			if !yield(id) {
				return
			}
		}
	})
	turn := 0
	var lastErr string
	for ctx.Err() == nil {
		// Fetch from the leader when known, else try the voters in turn.
		id := o.leader.Load()
		if _, ok := o.cfg.Voters[id]; !ok {
			id = ids[turn%len(ids)]
			turn++
		}
		c := clients[id]
		if c == nil {
			c = rpc.NewClient(o.cfg.Voters[id], fmt.Sprintf("gregor-observer-%d", o.cfg.NodeID), o.cfg.Security)
			clients[id] = c
		}
		hw, err := o.fetchOnce(ctx, c)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if errors.Is(err, kerr.InconsistentClusterID) && caughtUp != nil {
				o.fatal <- fmt.Errorf("controller %d at %s belongs to another cluster than this node's cluster.id=%s (meta.properties): %w", id, o.cfg.Voters[id], o.cfg.ClusterID, err)
				return
			}
			if msg := err.Error(); msg != lastErr {
				o.logger.Warn("metadata fetch failed", "controller", id, "err", err)
				lastErr = msg
			}
			o.leader.Store(-1)
			select {
			case <-ctx.Done():
				return
			case <-time.After(o.cfg.RetryBackoff):
			}
			continue
		}
		lastErr = ""
		if target < 0 {
			target = hw
		}
		if caughtUp != nil && o.next.Load() >= target {
			close(caughtUp)
			caughtUp = nil
		}
	}
}

// fetchOnce does one Fetch (and a snapshot transfer if the answer points to
// one) and hands what it got to the listeners; it returns the quorum's high
// watermark.
func (o *Observer) fetchOnce(ctx context.Context, c *rpc.Client) (int64, error) {
	req := kmsg.NewPtrFetchRequest()
	req.Version = 12
	req.ClusterID = &o.cfg.ClusterID
	req.ReplicaID = o.cfg.NodeID
	req.MaxWaitMillis = int32(o.cfg.FetchMaxWait.Milliseconds())
	req.MinBytes = 1
	req.MaxBytes = MaxBatchSizeBytes
	t := kmsg.NewFetchRequestTopic()
	t.Topic = MetadataTopic
	p := kmsg.NewFetchRequestTopicPartition()
	p.Partition = 0
	p.FetchOffset = o.next.Load()
	p.CurrentLeaderEpoch = -1
	p.LastFetchedEpoch = -1
	p.PartitionMaxBytes = MaxBatchSizeBytes
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)

	rctx, cancel := context.WithTimeout(ctx, o.cfg.RequestTimeout+o.cfg.FetchMaxWait)
	defer cancel()
	kresp, err := c.Request(rctx, req)
	if err != nil {
		return 0, err
	}
	resp := kresp.(*kmsg.FetchResponse)
	if resp.ErrorCode != 0 {
		return 0, fmt.Errorf("fetch metadata log: %w", kerr.ErrorForCode(resp.ErrorCode))
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return 0, errors.New("fetch metadata log: response without the metadata partition")
	}
	rp := &resp.Topics[0].Partitions[0]
	if l := rp.CurrentLeader; l.LeaderID >= 0 && (l.LeaderID != o.leader.Load() || l.LeaderEpoch != o.leaderEpoch.Load()) {
		o.leader.Store(l.LeaderID)
		o.leaderEpoch.Store(l.LeaderEpoch)
		o.mu.Lock()
		for _, ls := range o.listeners {
			ls.HandleLeaderChange(l.LeaderID, l.LeaderEpoch)
		}
		o.mu.Unlock()
	}
	if rp.ErrorCode != 0 {
		return 0, fmt.Errorf("fetch metadata log: %w", kerr.ErrorForCode(rp.ErrorCode))
	}
	o.hw.Store(rp.HighWatermark)
	if rp.SnapshotID.EndOffset >= 0 && rp.SnapshotID.EndOffset > o.next.Load() {
		if err := o.fetchSnapshot(ctx, c, rp.SnapshotID.EndOffset, rp.SnapshotID.Epoch); err != nil {
			return 0, err
		}
		return rp.HighWatermark, nil
	}
	if err := o.apply(rp.RecordBatches); err != nil {
		return 0, err
	}
	return rp.HighWatermark, nil
}

// apply hands the data batches to the listeners and moves next past every
// batch, control batches included.
func (o *Observer) apply(raw []byte) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	start := time.Now()
	defer func() { o.idle.busy(start, time.Now()) }()
	for len(raw) > 0 {
		h, err := record.ParseHeader(raw)
		if err != nil {
			return fmt.Errorf("metadata batch at %d: %w", o.next.Load(), err)
		}
		if h.Size() > len(raw) {
			return nil // a partial batch at the end of the answer
		}
		batch := raw[:h.Size()]
		raw = raw[h.Size():]
		if h.BaseOffset != o.next.Load() {
			return fmt.Errorf("metadata batch at %d, expected %d", h.BaseOffset, o.next.Load())
		}
		if !h.IsControl() {
			b, err := decodeBatch(batch)
			if err != nil {
				return fmt.Errorf("metadata log: %w", err)
			}
			for _, l := range o.listeners {
				l.HandleCommit(b)
			}
			if o.cfg.OnFetchedRecords != nil {
				o.cfg.OnFetchedRecords(int(h.NumRecords))
			}
		}
		o.next.Store(h.NextOffset())
	}
	return nil
}

// fetchSnapshot transfers a snapshot with FetchSnapshot, in chunks, and
// loads it into the listeners.
func (o *Observer) fetchSnapshot(ctx context.Context, c *rpc.Client, endOffset int64, epoch int32) error {
	var data []byte
	for {
		req := kmsg.NewPtrFetchSnapshotRequest()
		req.Version = 0
		req.ClusterID = &o.cfg.ClusterID
		req.ReplicaID = o.cfg.NodeID
		req.MaxBytes = MaxBatchSizeBytes
		t := kmsg.NewFetchSnapshotRequestTopic()
		t.Topic = MetadataTopic
		p := kmsg.NewFetchSnapshotRequestTopicPartition()
		p.CurrentLeaderEpoch = -1
		p.SnapshotID.EndOffset, p.SnapshotID.Epoch = endOffset, epoch
		p.Position = int64(len(data))
		t.Partitions = append(t.Partitions, p)
		req.Topics = append(req.Topics, t)
		rctx, cancel := context.WithTimeout(ctx, o.cfg.RequestTimeout)
		kresp, err := c.Request(rctx, req)
		cancel()
		if err != nil {
			return err
		}
		resp := kresp.(*kmsg.FetchSnapshotResponse)
		if resp.ErrorCode != 0 {
			return fmt.Errorf("fetch metadata snapshot: %w", kerr.ErrorForCode(resp.ErrorCode))
		}
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			return errors.New("fetch metadata snapshot: response without the metadata partition")
		}
		rp := &resp.Topics[0].Partitions[0]
		if rp.ErrorCode != 0 {
			return fmt.Errorf("fetch metadata snapshot %d-%d: %w", endOffset, epoch, kerr.ErrorForCode(rp.ErrorCode))
		}
		if rp.Position != int64(len(data)) {
			return fmt.Errorf("fetch metadata snapshot: chunk at %d, asked %d", rp.Position, len(data))
		}
		data = append(data, rp.Bytes...)
		if int64(len(data)) >= rp.Size {
			break
		}
		if len(rp.Bytes) == 0 {
			return errors.New("fetch metadata snapshot: empty chunk before the end")
		}
	}
	snap, err := DecodeSnapshot(data)
	if err != nil {
		return fmt.Errorf("metadata snapshot %d-%d: %w", endOffset, epoch, err)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, l := range o.listeners {
		l.HandleSnapshot(snap)
	}
	o.next.Store(snap.EndOffset)
	o.logger.Info("loaded metadata snapshot", "endOffset", snap.EndOffset, "epoch", snap.Epoch, "bytes", len(data))
	return nil
}

// Append is refused: an observer never leads.
func (o *Observer) Append(context.Context, []metadata.Record) (int64, error) {
	return 0, ErrNotLeader
}

// Leader returns the leader last reported by a controller.
func (o *Observer) Leader() (int32, int32) { return o.leader.Load(), o.leaderEpoch.Load() }

// PollIdleRatio is raft-metrics poll-idle-ratio-avg: the share of the
// last 30 to 60 s the observer was not applying fetched records (pollIdle).
func (o *Observer) PollIdleRatio() float64 { return o.idle.ratio(time.Now()) }

// HighWatermark returns the offset after the last record the listeners have.
func (o *Observer) HighWatermark() int64 { return o.next.Load() }

// Close stops fetching and waits.
func (o *Observer) Close() error {
	if o.stop != nil {
		o.stop()
		<-o.done
	}
	return nil
}
