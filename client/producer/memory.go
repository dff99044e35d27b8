package producer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// ErrBufferExhausted is the error of a Send that waited max.block.ms for
// buffer.memory to free up (Kafka's BufferExhaustedException, a
// TimeoutException).
var ErrBufferExhausted = errors.New("buffer exhausted: failed to allocate memory within max.block.ms")

// memoryPool is buffer.memory: the bytes of records accepted by Send and not
// yet completed. Send reserves a record's size and blocks while the pool is
// full; completing a batch releases its records' bytes. Waiters are served
// in arrival order so a large record is not starved by small ones.
type memoryPool struct {
	mu       sync.Mutex
	capacity int64
	used     int64
	waiters  []*memoryWaiter
}

type memoryWaiter struct {
	n     int64
	ready chan struct{} // closed when the reservation is granted
}

func newMemoryPool(capacity int64) *memoryPool { return &memoryPool{capacity: capacity} }

// reserve takes n bytes, waiting until deadline when the pool is full.
func (m *memoryPool) reserve(ctx context.Context, n int64, deadline time.Time) error {
	m.mu.Lock()
	if n > m.capacity {
		m.mu.Unlock()
		return fmt.Errorf("record of %d bytes is larger than buffer.memory (%d)", n, m.capacity)
	}
	if len(m.waiters) == 0 && m.used+n <= m.capacity {
		m.used += n
		m.mu.Unlock()
		return nil
	}
	w := &memoryWaiter{n: n, ready: make(chan struct{})}
	m.waiters = append(m.waiters, w)
	m.mu.Unlock()

	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	var err error
	select {
	case <-w.ready:
		return nil
	case <-timer.C:
		err = ErrBufferExhausted
	case <-ctx.Done():
		err = ctx.Err()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	select {
	case <-w.ready: // granted while we gave up: give it back
		m.used -= n
		m.grantLocked()
		return err
	default:
	}
	for i, o := range m.waiters {
		if o == w {
			m.waiters = append(m.waiters[:i], m.waiters[i+1:]...)
			break
		}
	}
	m.grantLocked()
	return err
}

// release returns n bytes and wakes the waiters that now fit.
func (m *memoryPool) release(n int64) {
	m.mu.Lock()
	m.used -= n
	m.grantLocked()
	m.mu.Unlock()
}

func (m *memoryPool) grantLocked() {
	for len(m.waiters) > 0 {
		w := m.waiters[0]
		if m.used+w.n > m.capacity {
			return
		}
		m.used += w.n
		m.waiters = m.waiters[1:]
		close(w.ready)
	}
}

// hasWaiters reports whether a Send is blocked on memory; the sender then
// sends batches without waiting for linger.ms, as Kafka's does.
func (m *memoryPool) hasWaiters() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.waiters) > 0
}

func (m *memoryPool) inUse() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.used
}
