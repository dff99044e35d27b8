package record

import "sync"

// DefaultDecompressionMemory is gregor.decompression.memory.bytes' default.
const DefaultDecompressionMemory = 128 << 20

// DecompressionBudget bounds the memory that produce validations hold for
// decompressed data at once, across the broker (gregor.decompression.memory.bytes).
// Kafka has no such bound (its validator streams records, and a JVM heap
// caps the rest); without one, a dozen small batches that each expand to
// hundreds of megabytes would hold gigabytes at once.
//
// A validation reserves, before it decompresses anything, the most it will
// hold: the codec's window and one record while it scans the records
// (validate.go), then, only when the batch is rebuilt, the whole
// decompressed batch and the rebuilt one. A reservation waits, first come
// first served, until it fits; a validation never holds one reservation
// while waiting for another, so waits end as the validations ahead finish.
// The capacity is also the most one batch may decompress to (and at most
// MaxDecompressedSize, what a stored batch may be read back with): a larger
// one is ErrMessageTooLarge.
type DecompressionBudget struct {
	capacity int64

	mu      sync.Mutex
	used    int64
	waiters []*budgetWaiter // in arrival order
}

type budgetWaiter struct {
	n     int64
	ready chan struct{}
}

// NewDecompressionBudget returns a budget of capacity bytes (at least 1 MiB).
func NewDecompressionBudget(capacity int64) *DecompressionBudget {
	return &DecompressionBudget{capacity: max(capacity, 1<<20)}
}

// Capacity is the budget's size in bytes.
func (b *DecompressionBudget) Capacity() int64 { return b.capacity }

// InUse is how many bytes are reserved now.
func (b *DecompressionBudget) InUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// acquire reserves n bytes (at most the capacity), waiting until they fit
// behind the reservations already waiting, and returns the function that
// gives them back.
func (b *DecompressionBudget) acquire(n int64) (release func()) {
	n = min(max(n, 0), b.capacity)
	b.mu.Lock()
	if len(b.waiters) == 0 && b.used+n <= b.capacity {
		b.used += n
		b.mu.Unlock()
		return func() { b.release(n) }
	}
	w := &budgetWaiter{n: n, ready: make(chan struct{})}
	b.waiters = append(b.waiters, w)
	b.mu.Unlock()
	<-w.ready
	return func() { b.release(n) }
}

func (b *DecompressionBudget) release(n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used -= n
	for len(b.waiters) > 0 && b.used+b.waiters[0].n <= b.capacity {
		w := b.waiters[0]
		b.waiters = b.waiters[1:]
		b.used += w.n
		close(w.ready)
	}
}

// batchLimit is the most one batch may decompress to: the capacity, and
// never more than a stored batch may be read back with (MaxDecompressedSize).
func (b *DecompressionBudget) batchLimit() int64 {
	if b == nil {
		return MaxDecompressedSize
	}
	return min(b.capacity, MaxDecompressedSize)
}

// reserve is acquire on a budget that may be nil (no budget).
func (b *DecompressionBudget) reserve(n int64) (release func()) {
	if b == nil {
		return func() {}
	}
	return b.acquire(n)
}
