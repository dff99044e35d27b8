// Package coordinator is the runtime shared by Gregor's coordinators: one
// shard per partition of an internal topic (__consumer_offsets,
// __transaction_state, __share_group_state) that this broker leads. A
// shard's state is rebuilt by
// replaying its partition when the shard is loaded; afterwards every change
// is appended through the normal log path (acks=-1: refused while the ISR is
// below min.insync.replicas) before the shard applies it. Each shard is
// owned by one goroutine that runs its operations one at a time and fires
// its timers; the shard is unloaded when this broker stops leading the
// partition. A shard may also keep state written inside transactions
// (TransactionalShard): such writes are transactional batches of the
// producer, and the transaction's marker is written and applied through the
// shard (CompleteTransaction), so records and markers apply in the
// partition's order, live as on reload.
//
// Nothing leaves a shard before the high watermark has passed every write
// the shard made so far (Kafka's deferred events): Do answers its caller
// only then, and what a shard hands out later (a rebalance's replies, a
// transaction's markers) waits in the shard's deferred queue (AfterCommit)
// until a committer goroutine sees the high watermark pass it. The shard
// goroutine does not wait meanwhile: it serves other operations. A write that
// is never committed here is lost only with this broker's leadership, and
// that unloads the shard: its state, which had applied the write, is dropped
// and the deferred answers fail (NOT_COORDINATOR); the next leader rebuilds
// the state from its own log. A write that fails to append is not applied
// (the shards apply a result only after its write succeeded), so a shard's
// state is always the replay of its log.
package coordinator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/metadata"
	"gregor/internal/record"
	"gregor/internal/replica"
)

// Record is one key/value record of an internal topic; nil Value is a tombstone.
type Record struct {
	Key, Value []byte
}

// Shard is one partition's coordinator state machine.
type Shard interface {
	// Replay applies one record while the shard loads.
	Replay(now time.Time, key, value []byte) error
	// Tick fires the timers due at now.
	Tick(now time.Time, w *Writer)
	// NextDeadline is when Tick is next due; the zero time: never.
	NextDeadline() time.Time
	// Unload answers whatever waits on the shard: it is going away.
	Unload()
}

// TransactionalShard is a Shard that also keeps state written inside
// transactions (the group coordinator's TxnOffsetCommit). Loading feeds it
// the records of transactional batches with their producer, and each
// transaction marker; a shard that does not implement it gets those
// records through Replay and never sees a marker.
type TransactionalShard interface {
	// ReplayTransactional applies one record of producerID's transaction.
	ReplayTransactional(now time.Time, producerID int64, producerEpoch int16, key, value []byte) error
	// ReplayEndTxn applies the transaction's marker: COMMIT or ABORT.
	ReplayEndTxn(producerID int64, commit bool) error
}

// PositionedShard is a Shard that keeps where its records sit in the
// partition (the share coordinator, to know which records are redundant):
// loading gives it each record's offset through ReplayAt instead of Replay.
type PositionedShard interface {
	ReplayAt(now time.Time, offset int64, key, value []byte) error
}

// Config configures a Runtime.
type Config struct {
	Topic   string
	NodeID  int32
	Replica *replica.Manager
	// NewShard makes the empty state machine of a partition.
	NewShard func(partition int32) Shard
	// Codec compresses the batches written (offsets.topic.compression.codec).
	Codec record.Codec
	// WriteTimeout bounds how long Do waits for an operation's writes to be
	// committed before it answers COORDINATOR_NOT_AVAILABLE (the group
	// coordinator's offsets.commit.timeout.ms); 0: 5 s.
	WriteTimeout time.Duration
	Logger       *slog.Logger
	Now          func() time.Time
}

// defaultWriteTimeout is offsets.commit.timeout.ms's default.
const defaultWriteTimeout = 5 * time.Second

// Runtime hosts the loaded shards of one internal topic.
type Runtime struct {
	cfg Config

	mu     sync.Mutex
	shards map[int32]*shard
	closed bool
	wg     sync.WaitGroup
}

type shard struct {
	partition   int32
	leaderEpoch int32
	impl        Shard
	ops         chan func()
	stop        chan struct{}
	done        chan struct{}
	loaded      chan struct{}
	// ctx ends when the shard is unloaded: the committer's wait gives up.
	ctx    context.Context
	cancel context.CancelFunc

	// Owned by the shard goroutine: the log end after the shard's last
	// write (or its load), and the callbacks waiting for the high
	// watermark to pass an offset, in offset order.
	lastWritten int64
	deferred    []deferredCall

	// The committer goroutine waits for the high watermark to reach
	// commitTarget (set with a wake), then stores it in committed and
	// signals the shard goroutine, which runs the deferred calls up to it.
	commitTarget atomic.Int64
	committed    atomic.Int64
	wake         chan struct{}
	commitSignal chan struct{}
}

// deferredCall is a callback waiting for its offset to be committed.
type deferredCall struct {
	offset int64
	fn     func(error)
}

// New returns a runtime with no shards; Publish loads them.
func New(cfg Config) *Runtime {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = defaultWriteTimeout
	}
	return &Runtime{cfg: cfg, shards: map[int32]*shard{}}
}

// Publish loads a shard for each partition of the topic this broker leads
// and unloads the others (metadata.Publisher). A new leader epoch reloads.
// It must come after the replica manager's Publish, which opens the logs.
func (r *Runtime) Publish(_ *metadata.Delta, img *metadata.Image) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	lead := map[int32]int32{}
	if t := img.Topics.Topic(r.cfg.Topic); t != nil {
		for id, p := range t.Partitions() {
			if p.Leader == r.cfg.NodeID {
				lead[id] = p.LeaderEpoch
			}
		}
	}
	for id, s := range r.shards {
		if epoch, ok := lead[id]; !ok || epoch != s.leaderEpoch {
			r.unloadLocked(s)
		}
	}
	for id, epoch := range lead {
		if _, ok := r.shards[id]; !ok {
			r.loadLocked(id, epoch)
		}
	}
}

func (r *Runtime) loadLocked(partition, epoch int32) {
	s := &shard{
		partition: partition, leaderEpoch: epoch, impl: r.cfg.NewShard(partition),
		ops: make(chan func()), stop: make(chan struct{}), done: make(chan struct{}), loaded: make(chan struct{}),
		wake: make(chan struct{}, 1), commitSignal: make(chan struct{}, 1),
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	r.shards[partition] = s
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer close(s.done)
		r.run(s)
	}()
}

func (r *Runtime) unloadLocked(s *shard) {
	delete(r.shards, s.partition)
	close(s.stop)
	s.cancel()
}

// Close unloads every shard and waits for their goroutines.
func (r *Runtime) Close() {
	r.mu.Lock()
	r.closed = true
	for _, s := range r.shards {
		r.unloadLocked(s)
	}
	r.mu.Unlock()
	r.wg.Wait()
}

// run is a shard's goroutine: load, then serve operations, timers and
// commits; on unload, fail what still waits for a commit.
func (r *Runtime) run(s *shard) {
	w := &Writer{r: r, s: s}
	defer s.impl.Unload()
	start := time.Now()
	logEnd, err := r.load(s)
	if err != nil {
		if errors.Is(err, errUnloadedWhileLoading) {
			// Leadership moved, or the broker is stopping: no failure.
			r.cfg.Logger.Info("coordinator load abandoned", "topic", r.cfg.Topic, "partition", s.partition, "err", err)
		} else {
			r.cfg.Logger.Error("coordinator load failed", "topic", r.cfg.Topic, "partition", s.partition, "err", err)
		}
		<-s.stop
		return
	}
	// What was loaded may not be committed yet (a new leader's high
	// watermark lags): nothing is answered before it is.
	s.lastWritten = logEnd
	var committer sync.WaitGroup
	committer.Add(1)
	go func() {
		defer committer.Done()
		r.commitLoop(s)
	}()
	defer func() {
		s.cancel()
		committer.Wait()
		s.failDeferred(fmt.Errorf("%s-%d unloaded before the write was committed: %w", r.cfg.Topic, s.partition, kerr.NotCoordinator))
	}()
	close(s.loaded)
	r.cfg.Logger.Info("coordinator loaded", "topic", r.cfg.Topic, "partition", s.partition, "took", time.Since(start))
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		var fire <-chan time.Time
		if d := s.impl.NextDeadline(); !d.IsZero() {
			timer.Reset(max(time.Until(d), 0))
			fire = timer.C
		}
		select {
		case <-s.stop:
			return
		case op := <-s.ops:
			op()
		case <-s.commitSignal:
			s.runCommitted(s.committed.Load())
		case <-fire:
			s.impl.Tick(r.cfg.Now(), w)
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
	}
}

// commitLoop is a shard's committer: it waits in the replica manager's
// purgatory for the high watermark to reach the latest deferred offset and
// tells the shard goroutine. It ends when the shard is unloaded or this
// broker no longer leads the partition (the unload follows).
func (r *Runtime) commitLoop(s *shard) {
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-s.wake:
		}
		target := s.commitTarget.Load()
		if err := r.cfg.Replica.WaitCommitted(s.ctx, r.cfg.Topic, s.partition, target); err != nil {
			if s.ctx.Err() == nil {
				r.cfg.Logger.Info("coordinator writes not committed here", "topic", r.cfg.Topic, "partition", s.partition, "err", err)
			}
			return
		}
		s.committed.Store(target)
		select {
		case s.commitSignal <- struct{}{}:
		default: // a signal is pending: it will read the newer offset
		}
	}
}

// afterCommit runs fn once the high watermark passes the shard's writes so
// far: at once if it already has, else from the deferred queue.
func (s *shard) afterCommit(fn func(error)) {
	if s.lastWritten <= s.committed.Load() {
		fn(nil)
		return
	}
	s.deferred = append(s.deferred, deferredCall{offset: s.lastWritten, fn: fn})
	s.commitTarget.Store(s.lastWritten)
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// runCommitted runs the deferred calls whose offset is committed.
func (s *shard) runCommitted(committed int64) {
	n := 0
	for n < len(s.deferred) && s.deferred[n].offset <= committed {
		n++
	}
	due := s.deferred[:n]
	s.deferred = s.deferred[n:]
	for _, d := range due {
		d.fn(nil)
	}
}

func (s *shard) failDeferred(err error) {
	due := s.deferred
	s.deferred = nil
	for _, d := range due {
		d.fn(err)
	}
}

// load replays the partition from its start to its log end (not the high
// watermark: a new leader's can lag what the previous leader committed;
// replica.Manager.ReadToLogEnd) and returns that log end. A
// TransactionalShard gets transactional records and markers as such.
// errUnloadedWhileLoading ends a load its shard's unload cut short.
var errUnloadedWhileLoading = errors.New("unloaded while loading")

func (r *Runtime) load(s *shard) (int64, error) {
	now := r.cfg.Now()
	txnShard, _ := s.impl.(TransactionalShard)
	positioned, _ := s.impl.(PositionedShard)
	offset := int64(-1)
	for {
		select {
		case <-s.stop:
			return 0, errUnloadedWhileLoading
		default:
		}
		if offset < 0 {
			start, _, _, _, err := r.cfg.Replica.ListOffset(r.cfg.Topic, s.partition, -1, replica.ListEarliest, false)
			if err != nil {
				return 0, fmt.Errorf("log start of %s-%d: %w", r.cfg.Topic, s.partition, err)
			}
			offset = start
		}
		records, logEnd, err := r.cfg.Replica.ReadToLogEnd(r.cfg.Topic, s.partition, offset, 1<<20)
		if err != nil {
			return 0, fmt.Errorf("load %s-%d: %w", r.cfg.Topic, s.partition, err)
		}
		if offset >= logEnd || len(records) == 0 {
			return max(offset, logEnd), nil
		}
		b := records
		for len(b) >= record.HeaderSize {
			h, err := record.ParseHeader(b)
			if err != nil || h.Size() > len(b) {
				break
			}
			batch := b[:h.Size()]
			b = b[h.Size():]
			offset = h.NextOffset()
			if h.IsControl() && (txnShard == nil || !h.IsTransactional()) {
				continue
			}
			_, recs, err := record.ReadRecords(batch)
			if err != nil {
				return 0, fmt.Errorf("read batch of %s-%d at %d: %w", r.cfg.Topic, s.partition, h.BaseOffset, err)
			}
			if h.IsControl() {
				for _, rec := range recs {
					commit, ok := markerType(rec.Key)
					if !ok {
						continue
					}
					if err := txnShard.ReplayEndTxn(h.ProducerID, commit); err != nil {
						return 0, fmt.Errorf("replay marker of producer %d at %d of %s-%d: %w", h.ProducerID, h.BaseOffset, r.cfg.Topic, s.partition, err)
					}
				}
				continue
			}
			for _, rec := range recs {
				switch {
				case txnShard != nil && h.IsTransactional():
					err = txnShard.ReplayTransactional(now, h.ProducerID, h.ProducerEpoch, rec.Key, rec.Value)
				case positioned != nil:
					err = positioned.ReplayAt(now, h.BaseOffset+int64(rec.OffsetDelta), rec.Key, rec.Value)
				default:
					err = s.impl.Replay(now, rec.Key, rec.Value)
				}
				if err != nil {
					return 0, err
				}
			}
		}
	}
}

// markerType reads a control record's key (version, type): COMMIT or ABORT
// for a transaction marker; ok is false for other control records.
func markerType(key []byte) (commit, ok bool) {
	var k kmsg.ControlRecordKey
	if err := k.ReadFrom(key); err != nil {
		return false, false
	}
	switch k.Type {
	case kmsg.ControlRecordKeyTypeCommit:
		return true, true
	case kmsg.ControlRecordKeyTypeAbort:
		return false, true
	}
	return false, false
}

// Do runs fn on a partition's shard goroutine, then waits until the high
// watermark passes every write the shard made so far, fn's included: what fn
// answers may depend on any of them, and none is acknowledged before it is
// committed. The shard serves other operations meanwhile. The shard is
// absent (NOT_COORDINATOR) unless this broker leads the partition, and
// answers COORDINATOR_LOAD_IN_PROGRESS until loaded. When the writes are not
// committed within the write timeout (or ctx ends first), Do returns
// COORDINATOR_NOT_AVAILABLE; when leadership moves first, NOT_COORDINATOR:
// the caller must then not answer what fn prepared (Kafka's coordinators
// answer these codes, retriable, for the same cases).
func (r *Runtime) Do(ctx context.Context, partition int32, fn func(s Shard, w *Writer)) error {
	var target int64
	s, err := r.onShard(ctx, partition, func(s *shard) {
		fn(s.impl, &Writer{r: r, s: s})
		target = s.lastWritten
	})
	if err != nil {
		return err
	}
	return r.waitCommitted(ctx, s, target)
}

// Read runs fn on a loaded shard's goroutine, as Do does, but for a look
// that writes nothing: it does not wait for the shard's pending writes to
// commit, so fn may see state whose records are not committed yet (what a
// metrics scrape may count, never what a client is answered).
func (r *Runtime) Read(ctx context.Context, partition int32, fn func(s Shard)) error {
	_, err := r.onShard(ctx, partition, func(s *shard) { fn(s.impl) })
	return err
}

// onShard runs op on the goroutine of partition's shard once it is loaded,
// and waits for it.
func (r *Runtime) onShard(ctx context.Context, partition int32, op func(s *shard)) (*shard, error) {
	r.mu.Lock()
	s := r.shards[partition]
	r.mu.Unlock()
	if s == nil {
		return nil, kerr.NotCoordinator
	}
	select {
	case <-s.loaded:
	default:
		return nil, kerr.CoordinatorLoadInProgress
	}
	done := make(chan struct{})
	run := func() {
		defer close(done)
		op(s)
	}
	select {
	case s.ops <- run:
	case <-s.done:
		return nil, kerr.NotCoordinator
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	<-done
	return s, nil
}

// waitCommitted waits for the high watermark to reach target and maps a
// failure to the coordinator's codes.
func (r *Runtime) waitCommitted(ctx context.Context, s *shard, target int64) error {
	if target <= s.committed.Load() {
		return nil
	}
	wctx, cancel := context.WithTimeout(ctx, r.cfg.WriteTimeout)
	defer cancel()
	err := r.cfg.Replica.WaitCommitted(wctx, r.cfg.Topic, s.partition, target)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, kerr.NotLeaderForPartition):
		return fmt.Errorf("%w: leadership of %s-%d moved before the write was committed: %w", kerr.NotCoordinator, r.cfg.Topic, s.partition, err)
	}
	return fmt.Errorf("%w: write to %s-%d not committed: %w", kerr.CoordinatorNotAvailable, r.cfg.Topic, s.partition, err)
}

// Writer appends records to a shard's partition. It is used only on the
// shard's goroutine, so writes keep the order of the operations. A write
// returns once the leader appended it; it is acknowledged to clients only
// once committed (Do, AfterCommit).
type Writer struct {
	r *Runtime
	s *shard
}

// AfterCommit runs fn on the shard goroutine once every write the shard
// made so far is committed, or with NOT_COORDINATOR if the shard is
// unloaded first: for what a shard hands out outside Do's answer (the
// replies of a completed rebalance, a transaction's markers).
func (w *Writer) AfterCommit(fn func(error)) { w.s.afterCommit(fn) }

// Written is the offset after the shard's last write (or the log end it
// loaded): a batch just written by Write ends right before it.
func (w *Writer) Written() int64 { return w.s.lastWritten }

// DeleteRecordsBefore raises the log start offset of the shard's partition
// to offset (DeleteRecords on the leader), for a shard whose older records
// are redundant; only offsets the high watermark has passed may go (call it
// from AfterCommit).
func (w *Writer) DeleteRecordsBefore(offset int64) error {
	if _, err := w.r.cfg.Replica.DeleteRecords(w.r.cfg.Topic, w.s.partition, offset); err != nil {
		return fmt.Errorf("delete records of %s-%d before %d: %w", w.r.cfg.Topic, w.s.partition, offset, err)
	}
	return nil
}

// appended notes a successful append ending before next.
func (w *Writer) appended(next int64) {
	w.s.lastWritten = max(w.s.lastWritten, next)
}

// Write appends records as one batch with acks=-1 (NOT_ENOUGH_REPLICAS while
// the ISR is below min.insync.replicas); see Writer for when it counts.
func (w *Writer) Write(records []Record) error {
	if len(records) == 0 {
		return nil
	}
	batch, err := w.build(record.BuilderOptions{ProducerID: record.NoProducerID, ProducerEpoch: record.NoProducerEpoch}, records)
	if err != nil {
		return err
	}
	res := w.r.cfg.Replica.Append(w.r.cfg.Topic, w.s.partition, -1, batch)
	if res.Err != nil {
		return fmt.Errorf("append to %s-%d: %w", w.r.cfg.Topic, w.s.partition, res.Err)
	}
	w.appended(res.Info.LastOffset + 1)
	return nil
}

// WriteTransactional appends records as one transactional batch of the
// producer (Kafka's transactional write operation). The log checks the
// producer epoch, not the sequence: the batch comes from the coordinator,
// not from the producer's own sequence.
func (w *Writer) WriteTransactional(producerID int64, producerEpoch int16, records []Record) error {
	if len(records) == 0 {
		return nil
	}
	batch, err := w.build(record.BuilderOptions{ProducerID: producerID, ProducerEpoch: producerEpoch, Transactional: true}, records)
	if err != nil {
		return err
	}
	res := w.r.cfg.Replica.AppendCoordinator(w.r.cfg.Topic, w.s.partition, batch)
	if res.Err != nil {
		return fmt.Errorf("append transactional batch of producer %d to %s-%d: %w", producerID, w.r.cfg.Topic, w.s.partition, res.Err)
	}
	w.appended(res.Info.LastOffset + 1)
	return nil
}

func (w *Writer) build(opts record.BuilderOptions, records []Record) ([]byte, error) {
	now := w.r.cfg.Now().UnixMilli()
	opts.Codec, opts.BaseSequence = w.r.cfg.Codec, record.NoSequence
	b := record.NewBuilder(opts)
	for _, rec := range records {
		b.Append(now, rec.Key, rec.Value, nil)
	}
	batch, err := b.Build()
	if err != nil {
		return nil, fmt.Errorf("build %s-%d batch: %w", w.r.cfg.Topic, w.s.partition, err)
	}
	return batch, nil
}

// WriteTxnMarker appends a transaction marker (a control batch).
func (w *Writer) WriteTxnMarker(marker replica.TxnMarker) error {
	res := w.r.cfg.Replica.AppendTxnMarker(w.r.cfg.Topic, w.s.partition, marker)
	if res.Err != nil {
		return fmt.Errorf("write marker of producer %d to %s-%d: %w", marker.ProducerID, w.r.cfg.Topic, w.s.partition, res.Err)
	}
	w.appended(res.Info.LastOffset + 1)
	return nil
}

// completeTransactionTimeout bounds CompleteTransaction when its caller
// sets no deadline: Kafka's request.timeout.ms default, the bound of its
// group coordinator's transaction completion.
const completeTransactionTimeout = 30 * time.Second

// CompleteTransaction writes a transaction marker to a partition through
// its shard, after the shard's earlier writes, and then applies it to the
// shard (Kafka's CoordinatorRuntime.scheduleTransactionCompletion), so the
// marker and the transaction's records apply in the partition's order.
// Errors: those of Do (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS), the
// marker write's (wrapped kerr errors), or the shard keeping no
// transactional state.
func (r *Runtime) CompleteTransaction(ctx context.Context, partition int32, marker replica.TxnMarker) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, completeTransactionTimeout)
		defer cancel()
	}
	var err error
	if doErr := r.Do(ctx, partition, func(s Shard, w *Writer) {
		ts, ok := s.(TransactionalShard)
		if !ok {
			err = fmt.Errorf("%s-%d keeps no transactional state", r.cfg.Topic, partition)
			return
		}
		if err = w.WriteTxnMarker(marker); err != nil {
			return
		}
		if err = ts.ReplayEndTxn(marker.ProducerID, marker.Commit); err != nil {
			err = fmt.Errorf("apply marker of producer %d to %s-%d: %w", marker.ProducerID, r.cfg.Topic, partition, err)
		}
	}); doErr != nil {
		return doErr
	}
	return err
}

// PartitionFor is the partition of a key, as Kafka computes it:
// Utils.abs(key.hashCode()) % partitions, where hashCode is Java's
// String.hashCode over UTF-16 code units and Utils.abs maps MinInt32 to 0.
func PartitionFor(key string, partitions int32) int32 {
	var h int32
	for _, r := range key {
		if r >= 0x10000 {
			r -= 0x10000
			h = 31*h + int32(0xD800+(r>>10))
			h = 31*h + int32(0xDC00+(r&0x3FF))
			continue
		}
		h = 31*h + int32(r)
	}
	if h == -2147483648 {
		h = 0
	} else if h < 0 {
		h = -h
	}
	return h % partitions
}

// Partitions lists the partitions with a shard, and whether any is still loading.
func (r *Runtime) Partitions() (partitions []int32, loading bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for id, s := range r.shards {
		select {
		case <-s.loaded:
			partitions = append(partitions, id)
		default:
			loading = true
		}
	}
	return partitions, loading
}
