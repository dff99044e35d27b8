// Package producerid hands out producer ids on a broker (Kafka's
// RPCProducerIdManager): ids come in blocks of 1000 that the controller
// allocates through the metadata log, so they are unique across brokers and
// restarts. The manager serves ids from its current block and asks for the
// next block in the background once 90% of the current one is used, so
// that InitProducerId rarely waits; when a block runs out before the next
// one arrived, the request fails with COORDINATOR_LOAD_IN_PROGRESS, which
// clients retry (Kafka answers the same, rather than REQUEST_TIMED_OUT,
// which older clients treat as fatal).
package producerid

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Block is a range of producer ids: [FirstID, FirstID+Size).
type Block struct {
	FirstID int64
	Size    int32
}

// LastID is the block's last id.
func (b Block) LastID() int64 { return b.FirstID + int64(b.Size) - 1 }

// Allocate asks the controller for the next block.
type Allocate func(ctx context.Context) (Block, error)

const (
	// prefetchThreshold is Kafka's PID_PREFETCH_THRESHOLD: the share of a
	// block used when the next one is requested.
	prefetchThreshold = 0.90
	// retryBackoff is Kafka's RETRY_BACKOFF_MS after a failed allocation.
	retryBackoff = 50 * time.Millisecond
	// allocateTimeout bounds one allocation (Kafka's controller request
	// timeout plays this part).
	allocateTimeout = 30 * time.Second
)

// ErrBlockExhausted is COORDINATOR_LOAD_IN_PROGRESS: no id is available
// until the next block arrives.
var ErrBlockExhausted = fmt.Errorf("%w: producer id block is full, waiting for the next block", kerr.CoordinatorLoadInProgress)

// Config configures a Manager.
type Config struct {
	Allocate Allocate
	Logger   *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Manager serves producer ids. It is safe for concurrent use.
type Manager struct {
	cfg Config

	mu           sync.Mutex
	current      Block
	next         int64  // next id of current to hand out
	nextBlock    *Block // prefetched block
	inFlight     bool
	backoffUntil time.Time
	closed       bool

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// New returns a manager with no block; Start fetches the first.
func New(cfg Config) *Manager {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Manager{cfg: cfg, ctx: ctx, cancel: cancel}
}

// Start fetches the first block, waiting for it within ctx, so that the
// first InitProducerId after start-up is answered at once. Failing that, a
// block is requested again by the first Generate.
func (m *Manager) Start(ctx context.Context) error {
	b, err := m.cfg.Allocate(ctx)
	if err != nil {
		return fmt.Errorf("fetch the first producer id block: %w", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.acceptLocked(b)
}

// Close stops a background allocation in flight and waits for it.
func (m *Manager) Close() {
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
	m.cancel()
	m.wg.Wait()
}

// Generate returns a producer id never returned before, or
// ErrBlockExhausted (Kafka's generateProducerId).
func (m *Manager) Generate() (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.current.Size == 0 || m.next > m.current.LastID() {
		if m.nextBlock == nil {
			m.maybeRequestNextBlockLocked()
			return -1, ErrBlockExhausted
		}
		m.current, m.next, m.nextBlock = *m.nextBlock, m.nextBlock.FirstID, nil
	}
	id := m.next
	m.next++
	if id == m.current.FirstID+int64(float64(m.current.Size)*prefetchThreshold) {
		m.maybeRequestNextBlockLocked()
	}
	return id, nil
}

// maybeRequestNextBlockLocked starts one background allocation unless a
// block is waiting, one is in flight, or the last one failed less than
// retryBackoff ago.
func (m *Manager) maybeRequestNextBlockLocked() {
	if m.nextBlock != nil || m.inFlight || m.closed || m.cfg.Now().Before(m.backoffUntil) {
		return
	}
	m.inFlight = true
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		ctx, cancel := context.WithTimeout(m.ctx, allocateTimeout)
		b, err := m.cfg.Allocate(ctx)
		cancel()
		m.mu.Lock()
		defer m.mu.Unlock()
		m.inFlight = false
		if err == nil {
			err = m.acceptLocked(b)
		}
		if err != nil {
			if !errors.Is(err, context.Canceled) {
				m.cfg.Logger.Warn("producer id block allocation failed", "err", err)
			}
			m.backoffUntil = m.cfg.Now().Add(retryBackoff)
		}
	}()
}

// acceptLocked checks a block (Kafka's sanityCheckResponse) and keeps it:
// as the current block if there is none left, else as the next.
func (m *Manager) acceptLocked(b Block) error {
	switch {
	case b.FirstID < 0 || b.Size <= 0 || b.FirstID > math.MaxInt64-int64(b.Size):
		return fmt.Errorf("producer id block %+v has an invalid range", b)
	case m.current.Size > 0 && b.FirstID <= m.current.LastID():
		return fmt.Errorf("producer id block %+v is not above the current block %+v", b, m.current)
	}
	if m.current.Size == 0 || m.next > m.current.LastID() {
		m.current, m.next = b, b.FirstID
		return nil
	}
	m.nextBlock = &b
	return nil
}
