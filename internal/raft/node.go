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

	etcdraft "go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"

	"gregor/internal/log"
	"gregor/internal/metadata"
	"gregor/internal/record"
)

// NodeConfig configures a voter of a multi-node metadata quorum.
type NodeConfig struct {
	// Dir is <metadata.log.dir>/__cluster_metadata-0: log segments,
	// quorum-state and snapshots.
	Dir       string
	NodeID    int32
	ClusterID string
	// Voters is the static voter set (controller.quorum.voters); NodeID is
	// one of them.
	Voters    []int32
	Transport Transport
	// TickInterval is the Raft clock's tick (50ms when zero).
	TickInterval time.Duration
	// ElectionTimeout is controller.quorum.election.timeout.ms (1s when
	// zero); etcd raft randomizes it in [timeout, 2*timeout).
	ElectionTimeout time.Duration
	// SnapshotMaxNewRecordBytes is
	// metadata.log.max.record.bytes.between.snapshots (20 MiB when zero).
	SnapshotMaxNewRecordBytes int64
	// SnapshotMaxInterval is metadata.log.max.snapshot.interval.ms; 0 is off.
	SnapshotMaxInterval time.Duration
	// SegmentBytes is metadata.log.segment.bytes (1 GiB when zero); only
	// whole segments below a snapshot are deleted.
	SegmentBytes int32
	// Snapshot is the state machine's side of a snapshot: the encoded
	// records (opaque to the quorum) that rebuild its state as of
	// endOffset, the offset after the last batch the listeners handled; ok
	// is false when its state is not exactly there. It is called on the
	// node's goroutine right after the listeners handled a batch, when a
	// snapshot is due. Nil: no snapshots are taken.
	Snapshot SnapshotSource
	// LeaderProbe, when set, turns on elections on the leader's exit
	// (gregor.controller.quorum.election.on.leader.exit, see
	// leader_exit.go): it reports whether a voter's process is gone.
	LeaderProbe LeaderProbe
	// OnElection, if set, is told how long each election took as this
	// node saw it: from the moment it knew no leader (its start, or the
	// leader's loss) until it knew the new one (raft-metrics
	// election-latency). It runs on the node's goroutine.
	OnElection func(latency time.Duration)
	// OnFetchedRecords, if set, is told of the metadata records this node
	// received from the leader, as a follower (raft-metrics
	// fetch-records-rate). It runs on the node's goroutine.
	OnFetchedRecords func(records int)
	Logger           *slog.Logger
	Now              func() time.Time
}

// SnapshotSource hands the quorum a snapshot's records, encoded, as of an
// end offset (NodeConfig.Snapshot).
type SnapshotSource func(endOffset int64) (values [][]byte, ok bool)

// Transport sends Raft messages to other voters. Send must not block; it may
// drop messages (Raft retries). After a failed MsgSnap it should call the
// sender's ReportSnapshot(to, true), and ReportUnreachable for a peer it
// cannot reach.
type Transport interface {
	Send(msgs []raftpb.Message)
}

// Defaults (Kafka's config defaults where Kafka has the setting).
const (
	defaultTickInterval              = 50 * time.Millisecond
	defaultElectionTimeout           = time.Second
	defaultSnapshotMaxNewRecordBytes = 20 << 20
	maxRaftMessageBytes              = 1 << 20
	maxInflightMessages              = 256
)

var (
	// ErrOffsetBehindSnapshot means the offset asked for is compacted into
	// a snapshot: fetch the snapshot (LatestSnapshot) instead.
	ErrOffsetBehindSnapshot = errors.New("offset is behind the latest metadata snapshot")
	// ErrOffsetOutOfRange means the offset is beyond the high watermark.
	ErrOffsetOutOfRange = errors.New("metadata offset out of range")
)

// Node is one voter of the metadata quorum: an etcd raft RawNode driven by one
// goroutine (ticks, incoming messages, proposals, Ready handling), with its
// entries stored as record batches in the metadata log, its hard state in
// quorum-state, and its snapshots as Kafka snapshot files.
//
// Durability: entries and hard state are written and fsynced before the
// messages of the same Ready (votes, append acknowledgements) are sent, and
// a failed write stops the node for good: it sends nothing more, so it never
// acknowledges what it could not store.
type Node struct {
	cfg    NodeConfig
	logger *slog.Logger
	log    *log.Log

	// Owned by the run goroutine once started (before: by Start).
	rn           *etcdraft.RawNode
	storage      *raftStorage
	offsets      entryOffsets
	hardState    raftpb.HardState
	storedLeader int32 // the leader quorum-state names
	lead         uint64
	raftState    etcdraft.StateType
	applied      uint64
	announced    leaderAndEpoch // last HandleLeaderChange
	pending      []*proposal
	newBytes     int64 // data bytes applied since the last snapshot
	lastSnap     time.Time
	prevSnap     snapshotPoint // the latest snapshot; compaction goes up to the one before
	peerContact  map[uint64]peerTimes
	failed       error
	// leaderlessSince is when this node last came to know no leader; zero
	// while it knows one (timeElection).
	leaderlessSince time.Time
	// idle is raft-metrics poll-idle-ratio: run's time waiting in select.
	idle *pollIdle

	// mu guards listeners and the lifecycle flags.
	mu        sync.Mutex
	listeners []Listener
	started   bool
	closed    bool
	logClosed bool

	loaded loadedState // from open until Start

	propc   chan *proposal
	ledc    chan struct{} // closed when this node's listeners first learn it leads
	failc   chan struct{} // closed when a storage failure stops the node
	recvc   chan raftpb.Message
	funcc   chan func()
	reportc chan func()
	stopc   chan struct{}
	donec   chan struct{}
	stopped atomic.Bool

	leaderID      atomic.Int32
	leaderEpoch   atomic.Int32
	highWatermark watermark
	errv          atomic.Pointer[error]

	// peerConns is the connection each voter's messages last came on,
	// watched for the leader's exit (guarded by mu); bg owns the watchers
	// and probes, which end when bgCtx does (Close).
	peerConns map[int32]peerConn
	bg        sync.WaitGroup
	bgCtx     context.Context
	bgCancel  context.CancelFunc

	snapMu   sync.Mutex
	snapID   SnapshotID
	snapData []byte
}

type leaderAndEpoch struct{ leader, epoch int32 }

type peerTimes struct{ lastFetch, lastCaughtUp int64 }

// proposal is an Append waiting for its entry to be committed and applied.
type proposal struct {
	data []byte
	term uint64
	done chan proposalResult // buffered: the loop never blocks on a waiter
}

type proposalResult struct {
	lastOffset int64
	err        error
}

// NewNode opens the metadata log in cfg.Dir and loads the snapshot, the log
// and the hard state. Nothing reaches a listener until Start.
func NewNode(cfg NodeConfig) (*Node, error) {
	if cfg.Dir == "" {
		return nil, errors.New("raft node: no metadata log directory")
	}
	if !slices.Contains(cfg.Voters, cfg.NodeID) {
		return nil, fmt.Errorf("raft node: node %d is not one of the voters %v", cfg.NodeID, cfg.Voters)
	}
	if cfg.Transport == nil {
		if len(cfg.Voters) > 1 {
			return nil, errors.New("raft node: no transport")
		}
		cfg.Transport = noTransport{} // the only voter has no one to talk to
	}
	if cfg.TickInterval <= 0 {
		cfg.TickInterval = defaultTickInterval
	}
	if cfg.ElectionTimeout <= 0 {
		cfg.ElectionTimeout = defaultElectionTimeout
	}
	if cfg.SnapshotMaxNewRecordBytes <= 0 {
		cfg.SnapshotMaxNewRecordBytes = defaultSnapshotMaxNewRecordBytes
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	logger = logger.With("component", "raft", "node", cfg.NodeID)
	qs, err := readQuorumState(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("raft node: %w", err)
	}
	if err := checkStoredVoters(qs, cfg.Voters); err != nil {
		return nil, fmt.Errorf("raft node: %w", err)
	}
	logCfg := log.DefaultConfig()
	if cfg.SegmentBytes > 0 {
		logCfg.SegmentBytes = cfg.SegmentBytes
	}
	// No recovery point is kept: the whole (small) log is rescanned on
	// open, and a torn tail is cut before anything is read.
	l, err := log.Open(cfg.Dir, logCfg, 0, 0, logger)
	if err != nil {
		return nil, fmt.Errorf("raft node: %w", err)
	}
	st, err := loadState(cfg.Dir, l, qs)
	if err != nil {
		l.Close()
		return nil, fmt.Errorf("raft node: %w", err)
	}
	if len(cfg.Voters) == 1 {
		// The only voter's log is the quorum's: every entry in it is
		// committed, or will be by the voter's next term, and no other
		// voter can replace it. So the whole log is replayed at Start, and
		// the commit index need not be written on every commit
		// (soleVoterCommitOnly). A log of the former one-voter
		// implementation, whose quorum-state never held an applied
		// offset, loads the same way.
		st.hardState.Commit = st.offsets.last()
	}
	n := &Node{
		cfg: cfg, logger: logger, log: l, loaded: st,
		offsets:      st.offsets,
		hardState:    st.hardState,
		peerContact:  make(map[uint64]peerTimes),
		announced:    leaderAndEpoch{-1, -1},
		storedLeader: qs.LeaderID,
		// A node starts knowing no leader: its first election counts.
		leaderlessSince: cfg.Now(),
		propc:           make(chan *proposal),
		ledc:            make(chan struct{}),
		failc:           make(chan struct{}),
		recvc:           make(chan raftpb.Message, 256),
		funcc:           make(chan func()),
		reportc:         make(chan func(), 64),
		stopc:           make(chan struct{}),
		donec:           make(chan struct{}),
		highWatermark:   newWatermark(),
		idle:            newPollIdle(time.Now()),
	}
	n.bgCtx, n.bgCancel = context.WithCancel(context.Background())
	n.leaderID.Store(-1)
	n.leaderEpoch.Store(int32(st.hardState.Term))
	n.highWatermark.Store(st.offsets.ends[0])
	if st.snapshot != nil {
		n.snapID, n.snapData = st.snapshotID, st.snapshot.Data
	}
	return n, nil
}

// Register adds a listener. After Start it is first brought up to date: the
// snapshot, the applied entries after it, and the current leader.
func (n *Node) Register(l Listener) {
	n.mu.Lock()
	if !n.started || n.closed {
		n.listeners = append(n.listeners, l)
		n.mu.Unlock()
		return
	}
	n.mu.Unlock()
	n.onLoop(func() {
		if err := n.replay([]Listener{l}, n.applied); err != nil {
			n.logger.Error("replay to a late listener failed", "err", err)
		}
		if n.announced.epoch >= 0 {
			l.HandleLeaderChange(n.announced.leader, n.announced.epoch)
		}
		n.mu.Lock()
		n.listeners = append(n.listeners, l)
		n.mu.Unlock()
	})
}

// onLoop runs f on the node's goroutine and waits; after Close it does not run.
func (n *Node) onLoop(f func()) bool {
	done := make(chan struct{})
	select {
	case n.funcc <- func() { f(); close(done) }:
	case <-n.donec:
		return false
	}
	<-done
	return true
}

// Start hands the snapshot and the committed entries to the listeners, then
// starts the Raft node and its goroutine.
func (n *Node) Start(ctx context.Context) (err error) {
	n.mu.Lock()
	if n.started || n.closed {
		n.mu.Unlock()
		return errors.New("raft node: already started or closed")
	}
	n.started = true
	n.mu.Unlock()
	running := false // the node's goroutine was started
	defer func() {
		if err != nil {
			// No goroutine runs (a started one is stopped): Close must
			// not wait for one.
			n.mu.Lock()
			n.started = false
			n.closed = true
			n.mu.Unlock()
			n.stopped.Store(true)
			n.leaderID.Store(-1)
			if running {
				close(n.stopc)
			} else {
				close(n.donec)
			}
			<-n.donec
		}
	}()
	if err := ctx.Err(); err != nil {
		return err
	}
	st := n.loaded
	n.loaded = loadedState{}
	n.storage = &raftStorage{MemoryStorage: etcdraft.NewMemoryStorage()}
	for _, v := range n.cfg.Voters {
		n.storage.conf.Voters = append(n.storage.conf.Voters, RaftID(v))
	}
	if st.snapshot != nil {
		st.snapshot.Metadata.ConfState = n.storage.conf
		if err := n.storage.ApplySnapshot(*st.snapshot); err != nil {
			return fmt.Errorf("raft node: %w", err)
		}
	}
	if err := n.storage.Append(st.entries); err != nil {
		return fmt.Errorf("raft node: %w", err)
	}
	if err := n.storage.SetHardState(st.hardState); err != nil {
		return fmt.Errorf("raft node: %w", err)
	}
	n.applied = st.offsets.first
	n.prevSnap = snapshotPoint{index: st.offsets.first, end: st.offsets.ends[0]}
	if err := n.replay(n.listenersCopy(), st.hardState.Commit); err != nil {
		return fmt.Errorf("raft node: %w", err)
	}
	n.applied = st.hardState.Commit
	n.lastSnap = n.cfg.Now()
	electionTicks := max(int(n.cfg.ElectionTimeout/n.cfg.TickInterval), 2)
	rn, err := etcdraft.NewRawNode(&etcdraft.Config{
		ID:                        RaftID(n.cfg.NodeID),
		ElectionTick:              electionTicks,
		HeartbeatTick:             max(electionTicks/10, 1),
		Storage:                   n.storage,
		Applied:                   n.applied,
		MaxSizePerMsg:             maxRaftMessageBytes,
		MaxInflightMsgs:           maxInflightMessages,
		MaxUncommittedEntriesSize: 4 * MaxBatchSizeBytes,
		CheckQuorum:               true,
		PreVote:                   true,
		Logger:                    raftLogger{n.logger},
	})
	if err != nil {
		return fmt.Errorf("raft node: %w", err)
	}
	n.rn = rn
	if len(n.cfg.Voters) == 1 {
		// The only voter need not wait an election timeout.
		if err := rn.Campaign(); err != nil {
			return fmt.Errorf("raft node: %w", err)
		}
	}
	n.logger.Info("metadata quorum node started", "voters", n.cfg.Voters, "term", st.hardState.Term,
		"commit_index", st.hardState.Commit, "high_watermark", n.highWatermark.Load())
	go n.run()
	running = true
	if len(n.cfg.Voters) == 1 {
		// The only voter leads as soon as its term's first entry is
		// written: Start returns a leader, ready to append.
		select {
		case <-n.ledc:
		case <-n.failc:
			return fmt.Errorf("raft node: %w", n.Err())
		case <-n.donec:
			return fmt.Errorf("raft node: %w", ErrNotLeader)
		case <-ctx.Done():
			return fmt.Errorf("raft node: waiting to lead: %w", ctx.Err())
		}
	}
	return nil
}

func (n *Node) listenersCopy() []Listener {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.listeners)
}

// replay hands the snapshot and the data entries up to index to listeners.
func (n *Node) replay(ls []Listener, upTo uint64) error {
	snap, err := n.storage.Snapshot()
	if err != nil {
		return err
	}
	if !etcdraft.IsEmptySnap(snap) {
		s, err := DecodeSnapshot(snap.Data)
		if err != nil {
			return err
		}
		for _, l := range ls {
			l.HandleSnapshot(s)
		}
	}
	first := n.offsets.first
	if upTo <= first {
		n.highWatermark.Store(n.offsets.ends[0])
		return nil
	}
	ents, err := n.storage.Entries(first+1, upTo+1, 1<<62)
	if err != nil {
		return fmt.Errorf("replay entries %d..%d: %w", first+1, upTo, err)
	}
	for _, e := range ents {
		base, _ := n.offsets.end(e.Index - 1)
		if len(e.Data) > 0 {
			b, err := decodeEntry(e, base)
			if err != nil {
				return fmt.Errorf("replay: %w", err)
			}
			for _, l := range ls {
				l.HandleCommit(b)
			}
		}
	}
	end, _ := n.offsets.end(upTo)
	n.highWatermark.Store(end)
	n.log.SetHighWatermark(end)
	return nil
}

// run is the node's goroutine: it alone touches the RawNode.
func (n *Node) run() {
	defer close(n.donec)
	ticker := time.NewTicker(n.cfg.TickInterval)
	defer ticker.Stop()
	for {
		var busyFrom time.Time
		select {
		case <-ticker.C:
			busyFrom = time.Now()
			if n.failed == nil {
				n.rn.Tick()
			}
		case m := <-n.recvc:
			busyFrom = time.Now()
			if n.failed == nil {
				n.step(m)
			}
		case p := <-n.propc:
			busyFrom = time.Now()
			n.propose(p)
		case f := <-n.funcc:
			busyFrom = time.Now()
			f()
		case f := <-n.reportc:
			busyFrom = time.Now()
			if n.failed == nil {
				f()
			}
		case <-n.stopc:
			n.failPending(ErrNotLeader)
			return
		}
		for n.failed == nil && n.rn.HasReady() {
			if err := n.handleReady(n.rn.Ready()); err != nil {
				n.fail(err)
			}
		}
		n.idle.busy(busyFrom, time.Now())
	}
}

// step feeds an incoming message and notes when a voter last reached the
// leader (for DescribeQuorum).
func (n *Node) step(m raftpb.Message) {
	if err := n.rn.Step(m); err != nil && !errors.Is(err, etcdraft.ErrStepPeerNotFound) {
		n.logger.Debug("raft step failed", "type", m.Type, "from", NodeIDOf(m.From), "err", err)
		return
	}
	if m.Type != raftpb.MsgAppResp && m.Type != raftpb.MsgHeartbeatResp || n.raftState != etcdraft.StateLeader {
		return
	}
	now := n.cfg.Now().UnixMilli()
	t := n.peerContact[m.From]
	t.lastFetch = now
	last, _ := n.storage.LastIndex()
	if pr, ok := n.rn.Status().Progress[m.From]; ok && pr.Match >= last {
		t.lastCaughtUp = now
	}
	n.peerContact[m.From] = t
}

// propose starts an Append on the loop.
func (n *Node) propose(p *proposal) {
	// Only a leader whose listeners were told of this very term appends:
	// re-elected, it waits for its new term's first entry like any leader.
	if n.failed != nil || n.raftState != etcdraft.StateLeader ||
		n.announced != (leaderAndEpoch{n.cfg.NodeID, int32(n.hardState.Term)}) {
		p.done <- proposalResult{err: ErrNotLeader}
		return
	}
	p.term = n.hardState.Term
	if err := n.rn.Propose(p.data); err != nil {
		p.done <- proposalResult{err: fmt.Errorf("%w: %w", ErrNotLeader, err)}
		return
	}
	n.pending = append(n.pending, p)
}

func (n *Node) failPending(err error) {
	for _, p := range n.pending {
		p.done <- proposalResult{err: err}
	}
	n.pending = nil
}

// fail stops the node after a storage error: no more messages, no more
// acknowledgements; appends fail. The process should exit (Kafka does).
func (n *Node) fail(err error) {
	n.failed = err
	e := fmt.Errorf("%w: %w", errNodeFailed, err)
	n.errv.Store(&e)
	close(n.failc)
	n.logger.Error("metadata quorum node failed; it stops taking part", "err", err)
	n.failPending(ErrNotLeader)
	n.leaderID.Store(-1)
	n.notifyLeader(-1, n.announced.epoch)
}

// Err returns the storage failure that stopped the node, or nil.
func (n *Node) Err() error {
	if p := n.errv.Load(); p != nil {
		return *p
	}
	return nil
}

// Append proposes records as one batch and returns after it is committed and
// every listener has handled it. Only the leader whose leadership the
// listeners were told about may append.
func (n *Node) Append(ctx context.Context, records []metadata.Record) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if len(records) == 0 {
		return 0, errors.New("append to the metadata log: no records")
	}
	if n.leaderID.Load() != n.cfg.NodeID || n.stopped.Load() {
		return 0, ErrNotLeader
	}
	now := n.cfg.Now().UnixMilli()
	bld := record.NewBuilder(record.BuilderOptions{Codec: record.CodecNone, ProducerID: record.NoProducerID,
		ProducerEpoch: record.NoProducerEpoch, BaseSequence: record.NoSequence,
		PartitionLeaderEpoch: record.NoPartitionLeaderEpoch})
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
	p := &proposal{data: raw, done: make(chan proposalResult, 1)}
	select {
	case n.propc <- p:
	case <-n.donec:
		return 0, ErrNotLeader
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	select {
	case r := <-p.done:
		return r.lastOffset, r.err
	case <-n.donec:
		return 0, ErrNotLeader
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// Step feeds a message from another voter (the transport calls it).
func (n *Node) Step(ctx context.Context, m raftpb.Message) error {
	select {
	case n.recvc <- m:
		return nil
	case <-n.donec:
		return ErrNotLeader
	case <-ctx.Done():
		return ctx.Err()
	}
}

// ReportUnreachable tells Raft that a message to id could not be sent. It
// never blocks (a transport may call it from Send): when the node is busy
// the report is dropped, and Raft finds out by itself later.
func (n *Node) ReportUnreachable(id uint64) {
	n.report(func() { n.rn.ReportUnreachable(id) })
}

// ReportSnapshot tells Raft whether sending a snapshot to id failed. Like
// ReportUnreachable it never blocks.
func (n *Node) ReportSnapshot(id uint64, failed bool) {
	status := etcdraft.SnapshotFinish
	if failed {
		status = etcdraft.SnapshotFailure
	}
	n.report(func() { n.rn.ReportSnapshot(id, status) })
}

func (n *Node) report(f func()) {
	select {
	case n.reportc <- f:
	default:
	}
}

// Leader returns the leader the listeners were last told about (-1:
// unknown) and its epoch.
func (n *Node) Leader() (int32, int32) { return n.leaderID.Load(), n.leaderEpoch.Load() }

// HighWatermark is the offset after the last committed batch the listeners
// have handled.
func (n *Node) HighWatermark() int64 { return n.highWatermark.Load() }

// PollIdleRatio is raft-metrics poll-idle-ratio-avg: the share of the last
// 30 to 60 s the node's goroutine waited for work (pollIdle).
func (n *Node) PollIdleRatio() float64 { return n.idle.ratio(time.Now()) }

// WaitHighWatermark waits until the high watermark passes offset: a
// metadata long poll. It returns ctx's error at its end, and
// purgatory.ErrClosed once the node closes.
func (n *Node) WaitHighWatermark(ctx context.Context, offset int64) error {
	return n.highWatermark.wait(ctx, offset)
}

// PurgatorySize is the number of metadata long polls waiting.
func (n *Node) PurgatorySize() int { return n.highWatermark.waiting.Size() }

// Close stops the node's goroutine (pending appends fail with ErrNotLeader)
// and closes the log.
func (n *Node) Close() error {
	n.mu.Lock()
	if n.logClosed {
		n.mu.Unlock()
		return nil
	}
	n.logClosed = true
	wasClosed, started := n.closed, n.started
	n.closed = true
	n.mu.Unlock()
	n.stopped.Store(true)
	n.leaderID.Store(-1)
	n.highWatermark.close()
	switch {
	case started:
		close(n.stopc)
		<-n.donec
	case !wasClosed:
		close(n.donec)
	}
	n.bgCancel()
	n.bg.Wait()
	if err := n.log.Close(); err != nil {
		return fmt.Errorf("raft node: %w", err)
	}
	return nil
}

// noTransport is the transport of a one-voter quorum: there is no peer.
type noTransport struct{}

func (noTransport) Send([]raftpb.Message) {}

// checkStoredVoters refuses a voter set that differs from the one the
// quorum-state file recorded: a static quorum cannot change its voters by
// configuration (Kafka's dynamic quorums, KIP-853, are not supported), and
// a node that silently joined another voter set could elect a second leader.
func checkStoredVoters(qs quorumState, voters []int32) error {
	if len(qs.CurrentVoters) == 0 {
		return nil
	}
	stored := make([]int32, 0, len(qs.CurrentVoters))
	for _, v := range qs.CurrentVoters {
		stored = append(stored, v.VoterID)
	}
	slices.Sort(stored)
	want := slices.Sorted(slices.Values(voters))
	if !slices.Equal(stored, want) {
		return fmt.Errorf("controller.quorum.voters names voters %v, but %s records the voter set %v: the voter set of a static quorum cannot be changed", want, QuorumStateFileName, stored)
	}
	return nil
}
