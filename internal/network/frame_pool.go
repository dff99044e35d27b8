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

// growFrameBytes is the largest frame given its whole buffer before its
// bytes arrive. A larger one, unless a recycled buffer is at hand, starts
// with this much and grows (doubling) as its bytes are read, so the memory
// a frame holds follows the bytes its client has sent: otherwise four
// bytes claiming a 100 MiB frame, then silence, would make the broker
// hold 100 MiB until connections.max.idle.ms (issue #20 item 7), a
// thousand such connections far more than the machine has.
const growFrameBytes = 1 << 20

// get returns a buffer for an n-byte frame. When whole, the buffer has
// length n: a recycled one when n is in a pooled class (its contents are
// stale; the caller overwrites all n bytes), else a new one. Otherwise
// (a frame over growFrameBytes and no recycled buffer) it has length 0 and
// capacity growFrameBytes, to be grown with growFrame. pooled reports
// whether put may take the final buffer back.
func (fp *framePool) get(n int) (buf []byte, pooled, whole bool) {
	c := frameClass(n)
	if c >= 0 {
		if b, ok := fp.classes[c].Get().(*[]byte); ok {
			return (*b)[:n], true, true
		}
	}
	if n > growFrameBytes {
		return make([]byte, 0, growFrameBytes), c >= 0, false
	}
	if c < 0 {
		return make([]byte, n), false, true
	}
	return make([]byte, n, 1<<(c+minPooledFrameShift)), true, true
}

// growFrame returns buf (a partly read frame of n bytes from get, full up
// to its capacity) with room for more: twice the capacity, at most the
// capacity the frame's size class has (so put takes it back) or n.
func growFrame(buf []byte, n int) []byte {
	limit := n
	if c := frameClass(n); c >= 0 {
		limit = 1 << (c + minPooledFrameShift)
	}
	grown := make([]byte, len(buf), min(2*cap(buf), limit))
	copy(grown, buf)
	return grown
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
