package raft

import (
	"context"
	"errors"
	"sync"
)

// maxQueuedEvents bounds the calls a QueuedListener holds before the
// quorum's next call waits for room: far more than a quorum sends while a
// listener applies one large batch, and few enough that a listener that
// falls far behind (the replay of a long metadata log at start-up) holds
// a bounded part of the log in memory, not all of it.
const maxQueuedEvents = 1024

// QueuedListener hands a Listener the quorum's calls on a goroutine of its
// own, in the order the quorum made them. A broker's metadata loader is
// registered through one (as Kafka's MetadataLoader runs on its own event
// queue): publishing a batch may take long (creating the logs of 10,000 new
// partitions), and the quorum calls its listeners on its commit path, which
// the controller's appends wait for; with the controller in the same
// process, a slow publish would stall the controller and with it the
// broker's own heartbeats until the broker's session ran out.
//
// WaitHandled lets a caller wait until the listener has handled every call
// made so far: a broker answering an admin request it forwarded to the
// controller of its own process waits so, and the client's next request
// sees the change it made.
//
// Close stops the goroutine; calls queued then are dropped, and calls made
// afterwards are ignored.
type QueuedListener struct {
	l Listener

	mu       sync.Mutex
	room     *sync.Cond // signalled when an event is taken or on close
	events   []func()
	pushed   uint64        // calls queued so far
	handled  uint64        // calls the listener has returned from
	progress chan struct{} // closed (and replaced) when handled moves
	closed   bool
	wake     chan struct{} // one token: events were queued
	stopped  chan struct{} // closed when the goroutine has returned
}

// ErrListenerClosed is WaitHandled's error once the QueuedListener is closed.
var ErrListenerClosed = errors.New("metadata listener closed")

// NewQueuedListener starts the goroutine that calls l; its owner must Close
// it.
func NewQueuedListener(l Listener) *QueuedListener {
	q := &QueuedListener{l: l, wake: make(chan struct{}, 1), stopped: make(chan struct{}), progress: make(chan struct{})}
	q.room = sync.NewCond(&q.mu)
	go q.run()
	return q
}

// HandleCommit implements Listener.
func (q *QueuedListener) HandleCommit(b Batch) { q.push(func() { q.l.HandleCommit(b) }) }

// HandleSnapshot implements Listener.
func (q *QueuedListener) HandleSnapshot(s Snapshot) { q.push(func() { q.l.HandleSnapshot(s) }) }

// HandleLeaderChange implements Listener.
func (q *QueuedListener) HandleLeaderChange(leader, epoch int32) {
	q.push(func() { q.l.HandleLeaderChange(leader, epoch) })
}

func (q *QueuedListener) push(ev func()) {
	q.mu.Lock()
	for len(q.events) >= maxQueuedEvents && !q.closed {
		q.room.Wait()
	}
	if q.closed {
		q.mu.Unlock()
		return
	}
	q.events = append(q.events, ev)
	q.pushed++
	select { // under mu: Close closes wake under mu too
	case q.wake <- struct{}{}:
	default:
	}
	q.mu.Unlock()
}

func (q *QueuedListener) run() {
	defer close(q.stopped)
	for range q.wake {
		for {
			q.mu.Lock()
			if q.closed || len(q.events) == 0 {
				closed := q.closed
				q.mu.Unlock()
				if closed {
					return
				}
				break
			}
			ev := q.events[0]
			q.events[0] = nil
			q.events = q.events[1:]
			q.room.Broadcast()
			q.mu.Unlock()
			ev()
			q.mu.Lock()
			q.handled++
			close(q.progress)
			q.progress = make(chan struct{})
			q.mu.Unlock()
		}
	}
}

// WaitHandled waits until the listener has handled every call made before
// WaitHandled was called, or ctx ends (ctx's error), or the QueuedListener
// closes (ErrListenerClosed).
func (q *QueuedListener) WaitHandled(ctx context.Context) error {
	q.mu.Lock()
	target := q.pushed
	for q.handled < target {
		if q.closed {
			q.mu.Unlock()
			return ErrListenerClosed
		}
		progress := q.progress
		q.mu.Unlock()
		select {
		case <-progress:
		case <-q.stopped:
		case <-ctx.Done():
			return ctx.Err()
		}
		q.mu.Lock()
	}
	q.mu.Unlock()
	return nil
}

// Close drops the queued calls, waits for the one running (if any) and
// stops the goroutine. It may be called more than once.
func (q *QueuedListener) Close() {
	q.mu.Lock()
	if !q.closed {
		q.closed = true
		q.events = nil
		q.room.Broadcast()
		close(q.wake)
	}
	q.mu.Unlock()
	<-q.stopped
}
