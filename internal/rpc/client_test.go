package rpc_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/network"
	"gregor/internal/rpc"
)

// metadataHandler answers Metadata with the request's version echoed in the
// controller id, so a test sees which version crossed the wire.
type metadataHandler struct{ block chan struct{} }

func (metadataHandler) VersionRange(key int16) (int16, int16, bool) {
	if key == 3 {
		return 0, 12, true
	}
	return 0, 0, false
}

func (h metadataHandler) Handle(ctx context.Context, req *network.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.MetadataRequest)
	if h.block != nil && len(r.Topics) > 0 {
		select {
		case <-h.block:
		case <-ctx.Done():
		}
	}
	resp := r.ResponseKind().(*kmsg.MetadataResponse)
	resp.ControllerID = int32(r.Version)
	return resp, nil
}

func start(t *testing.T, h network.Handler) string {
	t.Helper()
	srv := network.NewServer(network.Config{Listeners: []network.ListenerConfig{{Name: "PLAINTEXT", Host: "127.0.0.1", SecurityProtocol: "PLAINTEXT"}}}, h)
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Shutdown(context.Background()) })
	return srv.Addr("PLAINTEXT").(*net.TCPAddr).String()
}

func TestClientFlexibleAndClassicVersions(t *testing.T) {
	c := rpc.NewClient(start(t, metadataHandler{}), "test", rpc.Security{})
	defer c.Close()
	for _, v := range []int16{1, 9, 12} { // classic, first flexible, newest
		req := kmsg.NewPtrMetadataRequest()
		req.Version = v
		resp, err := c.Request(context.Background(), req)
		if err != nil {
			t.Fatalf("v%d: %v", v, err)
		}
		if got := resp.(*kmsg.MetadataResponse).ControllerID; got != int32(v) {
			t.Fatalf("v%d answered as v%d", v, got)
		}
	}
}

func TestClientCancelAndRedial(t *testing.T) {
	block := make(chan struct{})
	var once sync.Once
	unblock := func() { once.Do(func() { close(block) }) }
	addr := start(t, metadataHandler{block: block})
	// Registered after the server's cleanup, so it runs first (cleanups
	// run last in, first out): a failed test must not leave the handler
	// blocking the server's shutdown.
	t.Cleanup(unblock)
	c := rpc.NewClient(addr, "test", rpc.Security{})
	defer c.Close()
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 12
	name := "wait"
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = &name
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	began := time.Now()
	if _, err := c.Request(ctx, req); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("blocked request: %v, want the context's deadline", err)
	}
	if d := time.Since(began); d > 2*time.Second {
		t.Fatalf("cancel took %v", d)
	}
	unblock()
	// The failed request closed the connection; the next one dials again.
	req.Topics = nil
	if _, err := c.Request(context.Background(), req); err != nil {
		t.Fatalf("after a cancelled request: %v", err)
	}
}

func TestSkipTagsRejectsGarbage(t *testing.T) {
	if rest, err := rpc.SkipTags([]byte{0, 7}); err != nil || len(rest) != 1 {
		t.Fatalf("empty tags: %v %v", rest, err)
	}
	if rest, err := rpc.SkipTags([]byte{1, 0, 2, 9, 9, 5}); err != nil || len(rest) != 1 || rest[0] != 5 {
		t.Fatalf("one tag of 2 bytes: %v %v", rest, err)
	}
	for _, bad := range [][]byte{{}, {1, 0, 9}, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff}} {
		if _, err := rpc.SkipTags(bad); err == nil {
			t.Fatalf("SkipTags(%v) accepted", bad)
		}
	}
}

// fetchFillHandler answers Fetch with one partition whose records are
// MaxBytes bytes, each the byte MaxBytes%251.
type fetchFillHandler struct{}

func (fetchFillHandler) VersionRange(key int16) (int16, int16, bool) {
	if key == 1 {
		return 4, 17, true
	}
	return 0, 0, false
}

func (fetchFillHandler) Handle(_ context.Context, req *network.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.FetchRequest)
	resp := r.ResponseKind().(*kmsg.FetchResponse)
	p := kmsg.NewFetchResponseTopicPartition()
	p.RecordBatches = bytes.Repeat([]byte{byte(r.MaxBytes % 251)}, int(r.MaxBytes))
	t := kmsg.NewFetchResponseTopic()
	t.Topic = "t"
	t.Partitions = append(t.Partitions, p)
	resp.Topics = append(resp.Topics, t)
	return resp, nil
}

// With ReuseResponseBuffer, each answer is whole and right whatever the
// size before it, and a smaller answer lands in the buffer the previous one
// used (the documented aliasing: a response lives until the next request).
func TestClientReuseResponseBuffer(t *testing.T) {
	c := rpc.NewClient(start(t, fetchFillHandler{}), "test", rpc.Security{})
	defer c.Close()
	c.ReuseResponseBuffer()
	fetch := func(size int32) []byte {
		t.Helper()
		req := kmsg.NewPtrFetchRequest()
		req.Version = 12
		req.MaxBytes = size
		resp, err := c.Request(context.Background(), req)
		if err != nil {
			t.Fatalf("fetch %d: %v", size, err)
		}
		got := resp.(*kmsg.FetchResponse).Topics[0].Partitions[0].RecordBatches
		if want := bytes.Repeat([]byte{byte(size % 251)}, int(size)); !bytes.Equal(got, want) {
			t.Fatalf("fetch %d: got %d bytes, not the %d bytes of %d sent", size, len(got), size, size%251)
		}
		return got
	}
	first := fetch(100_000)
	fetch(10)
	if first[0] == byte(100_000%251) {
		t.Fatal("the second answer did not reuse the first one's buffer")
	}
	fetch(300_000)
	fetch(7)
}
