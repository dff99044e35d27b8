package purgatory

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// waitParked polls until n operations are parked.
func waitParked[K comparable](t *testing.T, p *Purgatory[K], n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for p.Size() != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d operations parked, want %d", p.Size(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestCompletesAtOnceWithoutParking(t *testing.T) {
	p := New[string]("Produce")
	if err := p.Wait(context.Background(), []string{"a"}, func() bool { return true }); err != nil {
		t.Fatal(err)
	}
	if p.Size() != 0 {
		t.Fatalf("size %d after an immediate completion", p.Size())
	}
}

// An event on one key tries only the operations watching it.
func TestCheckTriesOnlyWatchersOfTheKey(t *testing.T) {
	p := New[string]("Fetch")
	var readyA, readyB atomic.Bool
	var triesB atomic.Int32
	errs := make(chan error, 2)
	go func() { errs <- p.Wait(context.Background(), []string{"a"}, readyA.Load) }()
	go func() {
		errs <- p.Wait(context.Background(), []string{"b"}, func() bool { triesB.Add(1); return readyB.Load() })
	}()
	waitParked(t, p, 2)
	before := triesB.Load()
	for range 100 {
		p.Check("a") // a's condition is still false
	}
	if got := triesB.Load(); got != before {
		t.Fatalf("events on a tried b's operation %d times", got-before)
	}
	readyA.Store(true)
	if n := p.Check("a"); n != 1 {
		t.Fatalf("Check(a) completed %d, want 1", n)
	}
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	waitParked(t, p, 1)
	readyB.Store(true)
	p.Check("b")
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	waitParked(t, p, 0)
}

func TestMultipleKeysAnyCompletes(t *testing.T) {
	p := New[int]("Fetch")
	var ready atomic.Bool
	done := make(chan error, 1)
	go func() { done <- p.Wait(context.Background(), []int{1, 2, 3}, ready.Load) }()
	waitParked(t, p, 1)
	ready.Store(true)
	p.Check(3)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	waitParked(t, p, 0)
	if len(p.watchers) != 0 {
		t.Fatalf("watchers left: %v", p.watchers)
	}
}

func TestDeadlineExpires(t *testing.T) {
	p := New[int]("Produce")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	err := p.Wait(ctx, []int{1}, func() bool { return false })
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want the deadline", err)
	}
	if p.Size() != 0 {
		t.Fatalf("size %d after expiry", p.Size())
	}
}

func TestCloseWakesWaitersAndRefusesNewOnes(t *testing.T) {
	p := New[int]("Produce")
	done := make(chan error, 1)
	go func() { done <- p.Wait(context.Background(), []int{1}, func() bool { return false }) }()
	waitParked(t, p, 1)
	p.Close()
	if err := <-done; !errors.Is(err, ErrClosed) {
		t.Fatalf("got %v, want ErrClosed", err)
	}
	if err := p.Wait(context.Background(), []int{1}, func() bool { return false }); !errors.Is(err, ErrClosed) {
		t.Fatalf("after close: %v", err)
	}
	// A condition already true still completes: nothing needs waiting.
	if err := p.Wait(context.Background(), []int{1}, func() bool { return true }); err != nil {
		t.Fatal(err)
	}
}

func TestCheckAll(t *testing.T) {
	p := New[int]("Fetch")
	var ready atomic.Bool
	var wg sync.WaitGroup
	for k := range 5 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := p.Wait(context.Background(), []int{k}, ready.Load); err != nil {
				t.Error(err)
			}
		}()
	}
	waitParked(t, p, 5)
	ready.Store(true)
	if n := p.CheckAll(); n != 5 {
		t.Fatalf("CheckAll completed %d, want 5", n)
	}
	wg.Wait()
}

// No lost wake-ups: a writer that changes the state and then checks always
// releases a waiter whose condition reads that state, however the two
// interleave.
func TestNoLostWakeups(t *testing.T) {
	p := New[int]("Produce")
	for i := range 2000 {
		var hw atomic.Int64
		done := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			done <- p.Wait(ctx, []int{i % 7}, func() bool { return hw.Load() >= 1 })
		}()
		hw.Store(1)
		p.Check(i % 7)
		if err := <-done; err != nil {
			t.Fatalf("iteration %d: %v", i, err)
		}
	}
}

// Concurrent events on the keys of one operation complete it exactly once.
func TestConcurrentChecksCompleteOnce(t *testing.T) {
	p := New[int]("Fetch")
	var ready atomic.Bool
	done := make(chan error, 1)
	go func() { done <- p.Wait(context.Background(), []int{1, 2}, ready.Load) }()
	waitParked(t, p, 1)
	ready.Store(true)
	var wg sync.WaitGroup
	var completed atomic.Int32
	for k := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			completed.Add(int32(p.Check(1 + k%2)))
		}()
	}
	wg.Wait()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if completed.Load() != 1 {
		t.Fatalf("completed %d times", completed.Load())
	}
}

// BenchmarkCheckUnwatchedKey is the cost an append pays on a partition
// nobody waits for while many operations wait on others.
func BenchmarkCheckUnwatchedKey(b *testing.B) {
	p := New[int]("Fetch")
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for k := range 1000 {
		wg.Add(1)
		go func() { defer wg.Done(); _ = p.Wait(ctx, []int{k}, func() bool { return false }) }()
	}
	for p.Size() != 1000 {
		time.Sleep(time.Millisecond)
	}
	b.ResetTimer()
	for range b.N {
		p.Check(-1)
	}
	b.StopTimer()
	cancel()
	wg.Wait()
}
