package network

import (
	"bytes"
	"context"
	"encoding/binary"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// fileMetadataResponse is a FileResponse for tests: its body is text with
// file ranges between the pieces.
type fileMetadataResponse struct {
	*kmsg.MetadataResponse
	pieces   [][]byte    // len(ranges)+1 pieces around the ranges
	ranges   []FileRange // spliced between the pieces
	released *atomic.Int32
}

func (r *fileMetadataResponse) AppendFrame(f *Frame) {
	for i, rg := range r.ranges {
		f.Buf = append(f.Buf, r.pieces[i]...)
		f.AppendRange(rg)
	}
	f.Buf = append(f.Buf, r.pieces[len(r.pieces)-1]...)
}

func (r *fileMetadataResponse) Release() { r.released.Add(1) }

// want is the body the client must receive.
func (r *fileMetadataResponse) want(t *testing.T) []byte {
	var b []byte
	for i, rg := range r.ranges {
		b = append(b, r.pieces[i]...)
		data := make([]byte, rg.Size)
		if _, err := rg.File.ReadAt(data, rg.Offset); err != nil {
			t.Fatal(err)
		}
		b = append(b, data...)
	}
	return append(b, r.pieces[len(r.pieces)-1]...)
}

func writeTestFile(t testing.TB, size int) *os.File {
	t.Helper()
	data := make([]byte, size)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	path := filepath.Join(t.TempDir(), "segment")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// TestFileResponseFrames sends responses with small (copied) and large
// (sendfile) file ranges, pipelined with plain responses, and checks every
// byte, the order, and that each response's ranges are released once.
func TestFileResponseFrames(t *testing.T) {
	f := writeTestFile(t, 8<<20)
	var released atomic.Int32
	responses := map[int32]*fileMetadataResponse{}
	for corr, ranges := range [][]FileRange{
		{{f, 0, 100}},
		{{f, 1000, 5 << 20}, {f, 17, 3}, {f, 4 << 20, 1 << 20}},
		nil, // a plain response in between
		{{f, 123, 0}, {f, 8<<20 - 20000, 20000}},
	} {
		if ranges == nil {
			continue
		}
		r := &fileMetadataResponse{ranges: ranges, released: &released}
		for i := 0; i <= len(ranges); i++ {
			r.pieces = append(r.pieces, bytes.Repeat([]byte{byte('a' + i)}, i*7))
		}
		responses[int32(corr)] = r
	}
	h := &testHandler{fn: func(_ context.Context, req *Request) (kmsg.Response, error) {
		r, ok := responses[req.Header.CorrelationID]
		if !ok {
			return echoMetadata(req), nil
		}
		resp := kmsg.NewPtrMetadataResponse()
		return &fileMetadataResponse{MetadataResponse: resp, pieces: r.pieces, ranges: r.ranges, released: r.released}, nil
	}}
	s := startServer(t, Config{}, h)
	c := dial(t, s)
	for i := 0; i < 4; i++ {
		c.send(metadataReq(1))
	}
	for corr := int32(0); corr < 4; corr++ {
		frame, err := c.readFrame()
		if err != nil {
			t.Fatalf("response %d: %v", corr, err)
		}
		if got := int32(binary.BigEndian.Uint32(frame)); got != corr {
			t.Fatalf("response for correlation %d, want %d", got, corr)
		}
		r, ok := responses[corr]
		if !ok {
			continue
		}
		if body := frame[4:]; !bytes.Equal(body, r.want(t)) {
			t.Fatalf("response %d: %d bytes differ from the %d expected", corr, len(body), len(r.want(t)))
		}
	}
	waitFor(t, "ranges released", func() bool { return released.Load() == 3 })
	c.roundTrip(5) // the connection is still in sync
}

// TestFileResponseShrunkFile closes the connection when a range's file is
// shorter than the range (a segment truncated under a fetch), after the
// responses before it, and still releases the range.
func TestFileResponseShrunkFile(t *testing.T) {
	f := writeTestFile(t, 1<<20)
	var released atomic.Int32
	for _, size := range []int64{1000, 2 << 20} { // copied, sendfile
		h := &testHandler{fn: func(_ context.Context, req *Request) (kmsg.Response, error) {
			if req.Header.CorrelationID == 0 {
				return echoMetadata(req), nil
			}
			return &fileMetadataResponse{MetadataResponse: kmsg.NewPtrMetadataResponse(),
				pieces: [][]byte{{1}, {2}}, ranges: []FileRange{{f, 1<<20 - size/2, size}}, released: &released}, nil
		}}
		s := startServer(t, Config{}, h)
		c := dial(t, s)
		c.roundTrip(1)
		c.send(metadataReq(1))
		c.expectClosed()
	}
	waitFor(t, "ranges released", func() bool { return released.Load() == 2 })
}
