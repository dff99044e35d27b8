package consumer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"gregor/client/internal/cluster"
	"gregor/internal/record"
)

// resetKind says how a partition's position is to be found.
type resetKind int8

const (
	posKnown     resetKind = iota // position holds the next offset
	posCommitted                  // the group's committed offset, else auto.offset.reset
	posEarliest                   // the log start offset
	posLatest                     // the end (the last stable offset under read_committed)
)

// chunk is the part of one fetched batch not yet returned by Poll.
type chunk struct {
	h    record.BatchHeader
	recs []record.Record // from the first record not yet returned
	size int             // the batch's bytes, counted against the buffer
}

// partState is the consumer's state for one assigned partition: Kafka's
// TopicPartitionState in SubscriptionState plus the fetch buffer.
type partState struct {
	tp     TopicPartition
	paused bool
	reset  resetKind
	// position is the offset of the next record Poll returns; epoch the
	// leader epoch of the last record returned (-1 when none).
	position int64
	epoch    int32
	// fetchPos is the offset the next fetch asks for: position, or past
	// what is buffered.
	fetchPos int64
	buf      []chunk
	bufBytes int
	inFlight bool
	// gen changes whenever the application moves the position (Seek,
	// SeekTo*, Assign); a response or offset lookup made for an older
	// generation is dropped.
	gen      uint64
	needMeta bool  // the leader is unknown or refused the partition
	err      error // returned by Poll until the application seeks
}

// engine is the untyped consumer: assignment, positions, the fetcher and
// commits. Consumer[K, V] adds deserializers and interceptors.
type engine struct {
	cfg       Config
	cl        *cluster.Cluster
	isolation int8
	onCommit  func(map[TopicPartition]OffsetAndMetadata) // interceptors; nil when none

	mu       sync.Mutex
	parts    map[TopicPartition]*partState
	order    []*partState // assignment order, for round-robin draining
	rr       int          // where the next drain starts in order
	nextGen  uint64
	changed  chan struct{} // closed and replaced when data or positions change
	results  []fetchResult // fetch responses the fetcher has not processed
	brokerIn map[int32]bool
	closed   bool

	nextAutoCommit time.Time
	commits        []commitReq // queued CommitAsync requests, in order
	coord          int32       // the group coordinator's node, -1 when unknown

	wake       chan struct{} // cap 1: wakes the fetcher
	commitWake chan struct{} // cap 1: wakes the committer
	ctx        context.Context
	cancel     context.CancelFunc
	wg         sync.WaitGroup // the fetcher and the committer
}

func newEngine(cfg Config, setup func(*engine)) (*engine, error) {
	cl, err := cluster.New(cluster.Config{
		Bootstrap:       cfg.BootstrapServers,
		ClientID:        cfg.ClientID,
		Dial:            cfg.Dial,
		RequestTimeout:  cfg.RequestTimeout,
		AllowAutoCreate: cfg.AllowAutoCreateTopics,
	})
	if err != nil {
		return nil, err
	}
	e := &engine{
		cfg:        cfg,
		cl:         cl,
		parts:      map[TopicPartition]*partState{},
		changed:    make(chan struct{}),
		brokerIn:   map[int32]bool{},
		coord:      -1,
		wake:       make(chan struct{}, 1),
		commitWake: make(chan struct{}, 1),
	}
	if cfg.IsolationLevel == "read_committed" {
		e.isolation = 1
	}
	if cfg.GroupID == "" {
		// Kafka's consumer turns auto commit off without a group.
		e.cfg.EnableAutoCommit = false
	}
	e.nextAutoCommit = time.Now().Add(cfg.AutoCommitInterval)
	setup(e)
	e.ctx, e.cancel = context.WithCancel(context.Background())
	e.wg.Add(2)
	go e.fetchLoop()
	go e.commitLoop()
	return e, nil
}

// notifyLocked wakes everyone waiting for a change (Poll, Position).
func (e *engine) notifyLocked() {
	close(e.changed)
	e.changed = make(chan struct{})
}

func (e *engine) wakeFetcher() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

var errClosed = errors.New("consumer closed")

// apiCtx bounds a blocking call by default.api.timeout.ms as well as by
// ctx, as Kafka's consumer bounds its blocking calls.
func (e *engine) apiCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, e.cfg.DefaultAPITimeout)
}

// assign replaces the assignment. Partitions kept keep their position and
// buffer; new ones start from the committed offset (else auto.offset.reset).
func (e *engine) assign(tps []TopicPartition) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return errClosed
	}
	if e.cfg.EnableAutoCommit {
		// As Kafka's consumer does before changing a manual assignment.
		if offs := e.positionsLocked(); len(offs) > 0 {
			e.enqueueCommitLocked(commitReq{offsets: offs})
		}
	}
	next := map[TopicPartition]*partState{}
	var order []*partState
	for _, tp := range tps {
		if tp.Topic == "" || tp.Partition < 0 {
			return fmt.Errorf("assign: invalid partition %s-%d", tp.Topic, tp.Partition)
		}
		if next[tp] != nil {
			continue
		}
		ps := e.parts[tp]
		if ps == nil {
			e.nextGen++
			ps = &partState{tp: tp, reset: posCommitted, position: -1, epoch: -1, fetchPos: -1, gen: e.nextGen, needMeta: true}
		}
		next[tp] = ps
		order = append(order, ps)
	}
	e.parts, e.order, e.rr = next, order, 0
	e.notifyLocked()
	e.wakeFetcher()
	return nil
}

func (e *engine) assignment() []TopicPartition {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]TopicPartition, len(e.order))
	for i, ps := range e.order {
		out[i] = ps.tp
	}
	return out
}

// partLocked returns tp's state or an error when tp is not assigned.
func (e *engine) partLocked(tp TopicPartition) (*partState, error) {
	if e.closed {
		return nil, errClosed
	}
	ps := e.parts[tp]
	if ps == nil {
		return nil, fmt.Errorf("%s-%d is not assigned to this consumer", tp.Topic, tp.Partition)
	}
	return ps, nil
}

// moveLocked sets how ps's position is found next, dropping what is
// buffered or in flight for the old position.
func (e *engine) moveLocked(ps *partState, kind resetKind, offset int64, epoch int32) {
	e.nextGen++
	ps.gen = e.nextGen
	ps.reset = kind
	ps.position, ps.fetchPos, ps.epoch = offset, offset, epoch
	ps.buf, ps.bufBytes = nil, 0
	ps.err = nil
	e.notifyLocked()
	e.wakeFetcher()
}

func (e *engine) seek(tp TopicPartition, om OffsetAndMetadata) error {
	if om.Offset < 0 {
		return fmt.Errorf("seek %s-%d: offset %d is negative", tp.Topic, tp.Partition, om.Offset)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	ps, err := e.partLocked(tp)
	if err != nil {
		return err
	}
	e.moveLocked(ps, posKnown, om.Offset, om.epoch())
	return nil
}

func (e *engine) seekTo(tps []TopicPartition, kind resetKind) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if tps == nil {
		for _, ps := range e.order {
			tps = append(tps, ps.tp)
		}
	}
	for _, tp := range tps {
		ps, err := e.partLocked(tp)
		if err != nil {
			return err
		}
		e.moveLocked(ps, kind, -1, -1)
	}
	return nil
}

func (e *engine) pause(tps []TopicPartition, paused bool) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, tp := range tps {
		ps, err := e.partLocked(tp)
		if err != nil {
			return err
		}
		ps.paused = paused
	}
	e.notifyLocked()
	e.wakeFetcher()
	return nil
}

func (e *engine) paused() []TopicPartition {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []TopicPartition
	for _, ps := range e.order {
		if ps.paused {
			out = append(out, ps.tp)
		}
	}
	return out
}

// position waits until tp's position is known (looking it up as Poll
// would) and returns it.
func (e *engine) position(ctx context.Context, tp TopicPartition) (int64, error) {
	ctx, cancel := e.apiCtx(ctx)
	defer cancel()
	for {
		e.mu.Lock()
		ps, err := e.partLocked(tp)
		if err != nil {
			e.mu.Unlock()
			return -1, err
		}
		if ps.err != nil {
			err := ps.err
			e.mu.Unlock()
			return -1, err
		}
		if ps.reset == posKnown {
			pos := ps.position
			e.mu.Unlock()
			return pos, nil
		}
		ch := e.changed
		e.mu.Unlock()
		e.wakeFetcher()
		select {
		case <-ctx.Done():
			return -1, fmt.Errorf("position of %s-%d: %w", tp.Topic, tp.Partition, ctx.Err())
		case <-ch:
		}
	}
}

// positionsLocked is what a commit of the current position writes: every
// partition with a known position.
func (e *engine) positionsLocked() map[TopicPartition]OffsetAndMetadata {
	offs := map[TopicPartition]OffsetAndMetadata{}
	for _, ps := range e.order {
		if ps.reset == posKnown && ps.err == nil {
			offs[ps.tp] = withEpoch(ps.position, ps.epoch)
		}
	}
	return offs
}

// drained is a run of records taken from one partition's buffer.
type drained struct {
	ps   *partState
	gen  uint64
	h    record.BatchHeader
	recs []record.Record
}

// drainLocked takes up to max buffered records, partition by partition in
// round-robin order (so one busy partition does not starve the others), and
// advances the positions past them. It returns the first partition error
// instead when there is one and nothing was taken.
func (e *engine) drainLocked(max int) ([]drained, error) {
	var out []drained
	n := len(e.order)
	for i := 0; i < n && max > 0; i++ {
		ps := e.order[(e.rr+i)%n]
		if ps.paused {
			continue
		}
		if ps.err != nil {
			if len(out) == 0 {
				return nil, ps.err
			}
			continue
		}
		if ps.reset != posKnown {
			continue
		}
		for len(ps.buf) > 0 && max > 0 {
			c := &ps.buf[0]
			take := min(max, len(c.recs))
			out = append(out, drained{ps: ps, gen: ps.gen, h: c.h, recs: c.recs[:take]})
			last := c.recs[take-1]
			ps.position = c.h.BaseOffset + int64(last.OffsetDelta) + 1
			ps.epoch = c.h.PartitionLeaderEpoch
			max -= take
			c.recs = c.recs[take:]
			if len(c.recs) == 0 {
				ps.bufBytes -= c.size
				ps.buf[0] = chunk{}
				ps.buf = ps.buf[1:]
			}
		}
		if len(ps.buf) == 0 {
			// Batches skipped after the last record (aborted, control)
			// move the position too.
			ps.position = ps.fetchPos
			ps.buf = nil
		}
		if max == 0 {
			e.rr = (e.rr + i + 1) % n
		}
	}
	return out, nil
}

// rewindLocked puts a partition back at offset after Poll could not return
// the records drained from there (a deserializer failed).
func (e *engine) rewindLocked(ps *partState, gen uint64, offset int64) {
	if ps.gen != gen || e.parts[ps.tp] != ps {
		return // moved by the application meanwhile
	}
	e.moveLocked(ps, posKnown, offset, ps.epoch)
}

// close stops the fetcher and the committer, committing the current
// positions first when auto commit is on (as Kafka's consumer does).
func (e *engine) close(ctx context.Context) error {
	var err error
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	var offs map[TopicPartition]OffsetAndMetadata
	if e.cfg.EnableAutoCommit {
		offs = e.positionsLocked()
	}
	e.mu.Unlock()
	if len(offs) > 0 {
		cctx, cancel := e.apiCtx(ctx)
		err = e.commitSync(cctx, offs)
		cancel()
	}
	e.mu.Lock()
	e.closed = true
	pending := e.commits
	e.commits = nil
	e.notifyLocked()
	e.mu.Unlock()
	e.cancel()
	e.wg.Wait()
	for _, c := range pending {
		if c.cb != nil {
			c.cb(c.offsets, errClosed)
		}
	}
	e.cl.Close()
	if err != nil {
		return fmt.Errorf("close: commit: %w", err)
	}
	return nil
}
