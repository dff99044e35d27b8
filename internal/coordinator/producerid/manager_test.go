package producerid

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// controllerStub hands out consecutive blocks; while gate is set, each
// allocation waits for a value on it.
type controllerStub struct {
	mu    sync.Mutex
	next  int64
	size  int32
	calls int
	gate  chan struct{}
}

func (c *controllerStub) allocate(ctx context.Context) (Block, error) {
	c.mu.Lock()
	gate := c.gate
	c.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return Block{}, ctx.Err()
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls++
	b := Block{FirstID: c.next, Size: c.size}
	c.next += int64(c.size)
	return b, nil
}

func (c *controllerStub) callCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls
}

func newTestManager(t *testing.T, c *controllerStub) *Manager {
	m := New(Config{Allocate: c.allocate, Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(m.Close)
	if err := m.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return m
}

// generateEventually retries while the next block is on its way.
func generateEventually(t *testing.T, m *Manager) int64 {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		id, err := m.Generate()
		if err == nil {
			return id
		}
		if !errors.Is(err, kerr.CoordinatorLoadInProgress) || time.Now().After(deadline) {
			t.Fatalf("generate: %v", err)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestGenerateUniqueAcrossBlocksWithPrefetch(t *testing.T) {
	c := &controllerStub{size: 10}
	m := newTestManager(t, c)
	for want := int64(0); want < 35; want++ {
		if id := generateEventually(t, m); id != want {
			t.Fatalf("id %d, want %d", id, want)
		}
	}
	// Start fetched 0-9; ids 9, 19 and 29 (90% of their blocks) each
	// prefetched the next block.
	if n := c.callCount(); n != 4 {
		t.Fatalf("%d allocations, want 4", n)
	}
}

func TestExhaustedBlockAnswersLoadInProgress(t *testing.T) {
	c := &controllerStub{size: 10}
	m := newTestManager(t, c)
	gate := make(chan struct{})
	c.mu.Lock()
	c.gate = gate
	c.mu.Unlock()
	for i := 0; i < 10; i++ {
		if _, err := m.Generate(); err != nil {
			t.Fatal(err)
		}
	}
	// The prefetch is held at the gate: the 11th id has to wait.
	if _, err := m.Generate(); !errors.Is(err, kerr.CoordinatorLoadInProgress) {
		t.Fatalf("exhausted block: %v", err)
	}
	close(gate)
	if id := generateEventually(t, m); id != 10 {
		t.Fatalf("first id of the next block: %d", id)
	}
}

func TestStartFailsWithoutController(t *testing.T) {
	m := New(Config{Allocate: func(context.Context) (Block, error) { return Block{}, kerr.StaleBrokerEpoch }})
	defer m.Close()
	if err := m.Start(context.Background()); !errors.Is(err, kerr.StaleBrokerEpoch) {
		t.Fatalf("start: %v", err)
	}
	if _, err := m.Generate(); !errors.Is(err, ErrBlockExhausted) {
		t.Fatalf("generate without a block: %v", err)
	}
}

func TestRejectsNonMonotonicBlock(t *testing.T) {
	c := &controllerStub{size: 10}
	m := newTestManager(t, c)
	m.mu.Lock()
	err := m.acceptLocked(Block{FirstID: 5, Size: 10})
	m.mu.Unlock()
	if err == nil {
		t.Fatal("a block overlapping the current one was accepted")
	}
}
