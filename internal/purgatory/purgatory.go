// Package purgatory parks requests that wait for something to happen on
// this broker: an acks=all produce for the high watermark to pass its batch,
// a fetch for data on the partitions it reads, a coordinator write for its
// commit, a metadata long poll for the quorum's high watermark (Kafka's
// DelayedOperationPurgatory).
//
// An operation is a condition (tryComplete) watched under one or more keys,
// usually partitions. Whoever changes what the condition reads calls Check
// with the key, and the operations watching that key, and only those, try
// again on the caller's goroutine; the first try that succeeds completes the
// operation and wakes its waiter. Expiry is the waiter's context deadline
// (Go's runtime timers are a heap), so the purgatory keeps no timer of its
// own. No operation is woken by an event on a key it does not watch.
package purgatory

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
)

// ErrClosed is Wait's answer once the purgatory is closed (broker shutdown).
var ErrClosed = errors.New("purgatory closed")

// Purgatory holds the operations waiting under keys of type K.
type Purgatory[K comparable] struct {
	name string

	mu       sync.RWMutex
	watchers map[K]map[*operation]struct{}
	closed   bool
	closing  chan struct{}

	size atomic.Int64 // operations parked now
}

// operation is one parked waiter.
type operation struct {
	tryComplete func() bool
	// mu serializes tries: events on different keys may try at once.
	mu        sync.Mutex
	completed bool
	done      chan struct{}
}

// try runs the condition unless the operation already completed, and
// completes it when the condition holds. It reports whether the operation
// is complete and whether this try completed it.
func (op *operation) try() (complete, now bool) {
	op.mu.Lock()
	defer op.mu.Unlock()
	if op.completed {
		return true, false
	}
	if op.tryComplete() {
		op.completed = true
		close(op.done)
		return true, true
	}
	return false, false
}

// New returns an empty purgatory; name is its delayedOperation label
// (Produce, Fetch, ...).
func New[K comparable](name string) *Purgatory[K] {
	return &Purgatory[K]{name: name, watchers: map[K]map[*operation]struct{}{}, closing: make(chan struct{})}
}

// Name is the purgatory's delayedOperation label.
func (p *Purgatory[K]) Name() string { return p.name }

// Size is the number of operations parked now (Kafka's PurgatorySize).
func (p *Purgatory[K]) Size() int { return int(p.size.Load()) }

// Wait blocks until tryComplete reports true (nil), ctx ends (ctx.Err()) or
// the purgatory closes (ErrClosed). tryComplete is tried once at once, and
// then each time Check is called for one of keys; it must be cheap, must
// not block, and must not call into this purgatory. Whatever tryComplete
// reads must be changed only by code that calls Check afterwards, else a
// change can go unnoticed until the deadline.
func (p *Purgatory[K]) Wait(ctx context.Context, keys []K, tryComplete func() bool) error {
	if tryComplete() {
		return nil
	}
	op := &operation{tryComplete: tryComplete, done: make(chan struct{})}
	if !p.watch(keys, op) {
		return ErrClosed
	}
	defer p.unwatch(keys, op)
	// An event between the first try and the watch was not seen: try again
	// now that any later event will be.
	if complete, _ := op.try(); complete {
		return nil
	}
	select {
	case <-op.done:
		return nil
	case <-ctx.Done():
	case <-p.closing:
	}
	// Completed at the same moment as the deadline or the close: the
	// completion wins, as the waited-for thing did happen.
	select {
	case <-op.done:
		return nil
	default:
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return ErrClosed
}

func (p *Purgatory[K]) watch(keys []K, op *operation) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	for _, k := range keys {
		w := p.watchers[k]
		if w == nil {
			w = map[*operation]struct{}{}
			p.watchers[k] = w
		}
		w[op] = struct{}{}
	}
	p.size.Add(1)
	return true
}

func (p *Purgatory[K]) unwatch(keys []K, op *operation) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, k := range keys {
		if w := p.watchers[k]; w != nil {
			delete(w, op)
			if len(w) == 0 {
				delete(p.watchers, k)
			}
		}
	}
	p.size.Add(-1)
}

// Check tries the operations watching key again; it returns how many
// completed. Call it after changing what their conditions read, without
// holding locks that a condition takes.
func (p *Purgatory[K]) Check(key K) int {
	p.mu.RLock()
	w := p.watchers[key]
	if len(w) == 0 {
		p.mu.RUnlock()
		return 0
	}
	ops := make([]*operation, 0, len(w))
	for op := range w {
		ops = append(ops, op)
	}
	p.mu.RUnlock()
	return tryAll(ops)
}

// CheckAll tries every parked operation again: for changes that touch
// keys nobody listed (a new metadata image).
func (p *Purgatory[K]) CheckAll() int {
	p.mu.RLock()
	seen := map[*operation]struct{}{}
	for _, w := range p.watchers {
		for op := range w {
			seen[op] = struct{}{}
		}
	}
	p.mu.RUnlock()
	ops := make([]*operation, 0, len(seen))
	for op := range seen {
		ops = append(ops, op)
	}
	return tryAll(ops)
}

func tryAll(ops []*operation) int {
	n := 0
	for _, op := range ops {
		if _, now := op.try(); now {
			n++
		}
	}
	return n
}

// Close wakes every waiter with ErrClosed and refuses new ones.
func (p *Purgatory[K]) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.closed {
		p.closed = true
		close(p.closing)
	}
}
