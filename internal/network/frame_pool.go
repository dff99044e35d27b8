package network

import (
	"math/bits"
	"sync"
)

// Produce request frames are the one thing the broker allocates per byte
// it receives: a 1 MiB batch arrives as a 1 MiB frame. Allocated fresh,
// each such frame is a large heap object that the runtime zeroes, the
// kernel faults in page by page while read(2) fills it, and the scavenger
// hands back with madvise once the garbage collector frees it — at
// 100 MB/s of 1 KiB records this was over a third of the broker's CPU,
// more than validating and writing the records. framePool keeps those
// buffers for the next request instead.
//
// Only Produce frames are recycled: the produce path copies what it keeps
// (the log writes the records to the segment file; the decoder copies
// strings; producer state keeps header fields), so once its handler has
// returned nothing refers to the frame. Other APIs may keep slices of
// their request (group member metadata, SASL tokens), so their frames are
// left to the garbage collector.

const (
	// minPooledFrameShift is the smallest pooled buffer, 64 KiB: frames
	// up to 32 KiB are small objects, which the runtime allocates from its
	// per-P caches cheaply, so they are not pooled.
	minPooledFrameShift = 16
	// maxPooledFrameShift is the largest, 16 MiB; larger frames (rare: a
	// producer's batch.size is 1 MiB by default) are allocated each time.
	maxPooledFrameShift = 24
)

// framePool holds request frame buffers in power-of-two size classes, so
// a buffer is at most twice the frame it holds (queued.max.request.bytes
// counts the frame, not the buffer). A sync.Pool per class: a buffer idle
// through two garbage collections is dropped (and the runtime collects at
// least every two minutes), so the pool holds memory only while frames of
// that size keep arriving.
type framePool struct {
	classes [maxPooledFrameShift - minPooledFrameShift + 1]sync.Pool
}

// frameClass is the size class index for an n-byte frame, or -1 when
// such frames are not pooled.
func frameClass(n int) int {
	if n <= 1<<(minPooledFrameShift-1) || n > 1<<maxPooledFrameShift {
		return -1
	}
	shift := bits.Len(uint(n - 1)) // the smallest 1<<shift >= n
	return max(shift, minPooledFrameShift) - minPooledFrameShift
}

// get returns a buffer of length n: a recycled one when n is in a pooled
// class (its contents are stale; the caller overwrites all n bytes), else
// a new one. pooled reports whether put may take it back.
func (fp *framePool) get(n int) (buf []byte, pooled bool) {
	c := frameClass(n)
	if c < 0 {
		return make([]byte, n), false
	}
	if b, ok := fp.classes[c].Get().(*[]byte); ok {
		return (*b)[:n], true
	}
	return make([]byte, n, 1<<(c+minPooledFrameShift)), true
}

// put gives back a buffer from get (pooled true) once nothing refers to
// any part of it.
func (fp *framePool) put(buf []byte) {
	c := frameClass(cap(buf))
	if c < 0 || cap(buf) != 1<<(c+minPooledFrameShift) {
		return // not one of ours
	}
	buf = buf[:0]
	fp.classes[c].Put(&buf)
}
