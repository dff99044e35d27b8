package raft

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"
)

// recordingListener records the calls it gets; block, while open, holds
// each call until it is closed.
type recordingListener struct {
	mu    sync.Mutex
	calls []int64
	block chan struct{}
}

func (r *recordingListener) record(v int64) {
	if r.block != nil {
		<-r.block
	}
	r.mu.Lock()
	r.calls = append(r.calls, v)
	r.mu.Unlock()
}

func (r *recordingListener) HandleCommit(b Batch)                   { r.record(b.BaseOffset) }
func (r *recordingListener) HandleSnapshot(s Snapshot)              { r.record(-s.EndOffset) }
func (r *recordingListener) HandleLeaderChange(leader, epoch int32) { r.record(int64(1000 + epoch)) }

func (r *recordingListener) snapshot() []int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

// TestQueuedListenerOrderAndDecoupling: the quorum's calls return while the
// listener is still busy with an earlier one, and reach it in order.
func TestQueuedListenerOrderAndDecoupling(t *testing.T) {
	inner := &recordingListener{block: make(chan struct{})}
	q := NewQueuedListener(inner)
	defer q.Close()
	returned := make(chan struct{})
	go func() {
		q.HandleCommit(Batch{BaseOffset: 1})
		q.HandleSnapshot(Snapshot{EndOffset: 5})
		q.HandleLeaderChange(1, 7)
		q.HandleCommit(Batch{BaseOffset: 6})
		close(returned)
	}()
	select {
	case <-returned:
	case <-time.After(30 * time.Second):
		t.Fatal("the quorum's calls waited for a listener that is busy")
	}
	close(inner.block)
	want := []int64{1, -5, 1007, 6}
	deadline := time.Now().Add(30 * time.Second)
	for !slices.Equal(inner.snapshot(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("calls %v, want %v", inner.snapshot(), want)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestQueuedListenerBoundAndClose: a listener far behind holds back the
// quorum once maxQueuedEvents calls wait; Close releases it, drops what is
// queued and ignores later calls.
func TestQueuedListenerBoundAndClose(t *testing.T) {
	inner := &recordingListener{block: make(chan struct{})}
	q := NewQueuedListener(inner)
	// One call runs (blocked), maxQueuedEvents wait, the next is held.
	for i := range maxQueuedEvents + 1 {
		q.HandleCommit(Batch{BaseOffset: int64(i)})
	}
	held := make(chan struct{})
	go func() {
		q.HandleCommit(Batch{BaseOffset: -1})
		close(held)
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		q.mu.Lock()
		full := len(q.events) == maxQueuedEvents
		q.mu.Unlock()
		if full {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("queue never filled")
		}
		time.Sleep(time.Millisecond)
	}
	select {
	case <-held:
		t.Fatal("a call past the bound was queued")
	default:
	}
	closed := make(chan struct{})
	go func() {
		q.Close()
		close(closed)
	}()
	<-held // released by Close, dropped
	close(inner.block)
	<-closed
	q.HandleCommit(Batch{BaseOffset: 99}) // after Close: ignored, no panic
	if got := inner.snapshot(); !slices.Equal(got, []int64{0}) {
		t.Fatalf("calls after Close: %v, want only the one running at Close", got)
	}
}

// TestQueuedListenerWaitHandled: WaitHandled returns once the calls made
// before it are handled, not before; it gives up with ctx, and on Close.
func TestQueuedListenerWaitHandled(t *testing.T) {
	inner := &recordingListener{block: make(chan struct{})}
	q := NewQueuedListener(inner)
	if err := q.WaitHandled(context.Background()); err != nil {
		t.Fatalf("nothing queued: %v", err)
	}
	q.HandleCommit(Batch{BaseOffset: 1})
	q.HandleCommit(Batch{BaseOffset: 2})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := q.WaitHandled(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("listener busy: %v", err)
	}
	waited := make(chan error, 1)
	go func() { waited <- q.WaitHandled(context.Background()) }()
	close(inner.block)
	if err := <-waited; err != nil {
		t.Fatal(err)
	}
	if got := inner.snapshot(); !slices.Equal(got, []int64{1, 2}) {
		t.Fatalf("handled %v when WaitHandled returned", got)
	}

	inner.block = make(chan struct{})
	q.HandleCommit(Batch{BaseOffset: 3})
	go func() { waited <- q.WaitHandled(context.Background()) }()
	closed := make(chan struct{})
	go func() {
		q.Close()
		close(closed)
	}()
	close(inner.block)
	<-closed
	if err := <-waited; err != nil && !errors.Is(err, ErrListenerClosed) {
		t.Fatalf("WaitHandled across Close: %v", err)
	}
}
