package network

import (
	"bytes"
	"context"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestFrameClass(t *testing.T) {
	for _, tc := range []struct {
		n, class int
	}{
		{0, -1},
		{1, -1},
		{32 << 10, -1}, // small objects are not pooled
		{32<<10 + 1, 0},
		{64 << 10, 0},
		{64<<10 + 1, 1},
		{1000012 + 100, 4}, // a full default-size batch: the 1 MiB class
		{1 << 20, 4},
		{16 << 20, maxPooledFrameShift - minPooledFrameShift},
		{16<<20 + 1, -1}, // too large to keep
	} {
		if got := frameClass(tc.n); got != tc.class {
			t.Errorf("frameClass(%d) = %d, want %d", tc.n, got, tc.class)
		}
	}
}

func TestFramePoolGetPut(t *testing.T) {
	var fp framePool
	small, pooled, _ := fp.get(100)
	if pooled || len(small) != 100 {
		t.Fatalf("get(100) = len %d pooled %v, want a plain 100-byte buffer", len(small), pooled)
	}
	b, pooled, _ := fp.get(100 << 10)
	if !pooled || len(b) != 100<<10 || cap(b) != 128<<10 {
		t.Fatalf("get(100 KiB) = len %d cap %d pooled %v, want len 100 KiB in the 128 KiB class", len(b), cap(b), pooled)
	}
	copy(b, bytes.Repeat([]byte{0xAB}, len(b)))
	fp.put(b)
	// Whether the buffer comes back is up to sync.Pool; either way the
	// length is the one asked for and the capacity the class's.
	c, pooled, _ := fp.get(70 << 10)
	if !pooled || len(c) != 70<<10 || cap(c) != 128<<10 {
		t.Fatalf("get(70 KiB) = len %d cap %d pooled %v, want len 70 KiB in the 128 KiB class", len(c), cap(c), pooled)
	}
	// Buffers that are not a class's exact size are not taken.
	fp.put(make([]byte, 100<<10))
	fp.put(small)
	fp.put(make([]byte, 0, 32<<20))
	for range 10 {
		if d, _, _ := fp.get(100 << 10); cap(d) != 128<<10 {
			t.Fatalf("get(100 KiB) after foreign puts has cap %d, want 128 KiB", cap(d))
		}
	}
}

// A frame over growFrameBytes without a recycled buffer starts small and
// grows by doubling to its size class's capacity (so put takes it back),
// or to its size when it is larger than any class.
func TestFramePoolGrowsLargeFrames(t *testing.T) {
	var fp framePool
	for _, tc := range []struct {
		n, finalCap int
		pooled      bool
	}{
		{3 << 20, 4 << 20, true},
		{16 << 20, 16 << 20, true},
		{100 << 20, 100 << 20, false},
	} {
		buf, pooled, whole := fp.get(tc.n)
		if whole || pooled != tc.pooled || len(buf) != 0 || cap(buf) != growFrameBytes {
			t.Fatalf("get(%d) = len %d cap %d pooled %v whole %v, want an empty %d-byte start", tc.n, len(buf), cap(buf), pooled, whole, growFrameBytes)
		}
		for i := 0; len(buf) < tc.n; i++ {
			if len(buf) == cap(buf) {
				buf = growFrame(buf, tc.n)
			}
			end := min(cap(buf), tc.n)
			for j := len(buf); j < end; j++ {
				buf = append(buf, byte(j))
			}
		}
		if cap(buf) != tc.finalCap {
			t.Fatalf("%d-byte frame grew to cap %d, want %d", tc.n, cap(buf), tc.finalCap)
		}
		for j := range buf {
			if buf[j] != byte(j) {
				t.Fatalf("%d-byte frame: byte %d is %d after growing, want %d", tc.n, j, buf[j], byte(j))
			}
		}
	}
}

// Produce frames are recycled once handled. Pipelined requests of pooled
// sizes are read ahead while the one before is being handled, so a buffer
// given back too early would be overwritten under its handler: each
// handler checks its records before and after a wait for the read-ahead,
// and answers with their checksum, which the client compares with what it
// sent.
func TestPipelinedProduceFramesKeepTheirBytes(t *testing.T) {
	const n = 40
	var sent atomic.Int32
	h := &testHandler{sequential: true, fn: func(ctx context.Context, req *Request) (kmsg.Response, error) {
		r := req.Body.(*kmsg.ProduceRequest)
		if req.recycle == nil {
			return nil, fmt.Errorf("produce request %d of %d bytes is not recycled", req.Header.CorrelationID, req.Size)
		}
		records := r.Topics[0].Partitions[0].Records
		before := crc32.ChecksumIEEE(records)
		// Let the reader read the next requests into their buffers.
		deadline := time.Now().Add(ioTimeout)
		for sent.Load() < min(req.Header.CorrelationID+4, n) && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		if after := crc32.ChecksumIEEE(records); after != before {
			return nil, fmt.Errorf("request %d: records changed under the handler", req.Header.CorrelationID)
		}
		resp := r.ResponseKind().(*kmsg.ProduceResponse)
		rt := kmsg.NewProduceResponseTopic()
		rp := kmsg.NewProduceResponseTopicPartition()
		rp.BaseOffset = int64(before)
		rt.Partitions = append(rt.Partitions, rp)
		resp.Topics = append(resp.Topics, rt)
		return resp, nil
	}}
	s := startServer(t, Config{}, h)
	c := dial(t, s)

	sums := make([]uint32, n)
	reqs := make([]*kmsg.ProduceRequest, n)
	for i := range reqs {
		records := make([]byte, 40<<10+rand.IntN(300<<10))
		for j := range records {
			records[j] = byte(i + j*7)
		}
		sums[i] = crc32.ChecksumIEEE(records)
		p := kmsg.NewProduceRequestTopicPartition()
		p.Records = records
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "t"
		rt.Partitions = append(rt.Partitions, p)
		r := kmsg.NewPtrProduceRequest()
		r.Version, r.Acks, r.TimeoutMillis = 9, -1, 1000
		r.Topics = append(r.Topics, rt)
		reqs[i] = r
	}
	go func() {
		for _, r := range reqs {
			c.send(r)
			sent.Add(1)
		}
	}()
	for i := range n {
		resp := kmsg.NewPtrProduceResponse()
		resp.Version = 9
		if corr := c.recv(resp); corr != int32(i) {
			t.Fatalf("response %d has correlation id %d", i, corr)
		}
		if got := uint32(resp.Topics[0].Partitions[0].BaseOffset); got != sums[i] {
			t.Fatalf("request %d: handler saw records with checksum %08x, sent %08x", i, got, sums[i])
		}
	}
}
