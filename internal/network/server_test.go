package network

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestResponsesLeaveInRequestOrder(t *testing.T) {
	var concurrent, maxConcurrent atomic.Int32
	h := &testHandler{fn: func(ctx context.Context, req *Request) (kmsg.Response, error) {
		n := concurrent.Add(1)
		defer concurrent.Add(-1)
		for {
			m := maxConcurrent.Load()
			if n <= m || maxConcurrent.CompareAndSwap(m, n) {
				break
			}
		}
		// Later requests often finish first.
		time.Sleep(time.Duration(rand.IntN(5000)) * time.Microsecond)
		return echoMetadata(req), nil
	}}
	s := startServer(t, Config{}, h)
	c := dial(t, s)

	// Mix a flexible (header v2 / response header v1) and a classic version.
	const n = 200
	versions := make([]int16, n)
	for i := range versions {
		versions[i] = []int16{4, 12}[rand.IntN(2)]
	}
	go func() {
		for _, v := range versions {
			c.send(metadataReq(v))
		}
	}()
	for i, v := range versions {
		resp := metadataResp(v)
		corr := c.recv(resp)
		if corr != int32(i) || resp.ControllerID != int32(i) {
			t.Fatalf("response %d: correlation %d body %d", i, corr, resp.ControllerID)
		}
	}
	if got := maxConcurrent.Load(); got < 2 || got > DefaultMaxInFlightPerConnection {
		t.Fatalf("max concurrent requests on one connection = %d, want 2..%d", got, DefaultMaxInFlightPerConnection)
	}
}

// A handler that does not call Dispatched sees the requests of a connection
// one at a time, in the order they were sent, however they are pipelined:
// produce appends of one connection land in order, as in Kafka.
func TestRequestsDispatchInOrderUntilDispatched(t *testing.T) {
	var running atomic.Int32
	var mu sync.Mutex
	var order []int32
	h := &testHandler{sequential: true, fn: func(ctx context.Context, req *Request) (kmsg.Response, error) {
		if n := running.Add(1); n != 1 {
			t.Errorf("%d requests of one connection ran at once", n)
		}
		defer running.Add(-1)
		time.Sleep(time.Duration(rand.IntN(500)) * time.Microsecond)
		mu.Lock()
		order = append(order, req.Header.CorrelationID)
		mu.Unlock()
		return echoMetadata(req), nil
	}}
	s := startServer(t, Config{}, h)
	c := dial(t, s)
	const n = 100
	go func() {
		for i := 0; i < n; i++ {
			c.send(metadataReq(12))
		}
	}()
	for i := 0; i < n; i++ {
		c.recv(metadataResp(12))
	}
	mu.Lock()
	defer mu.Unlock()
	for i, corr := range order {
		if corr != int32(i) {
			t.Fatalf("request %d handled in position %d", corr, i)
		}
	}
}

func TestNilResponseSendsNothing(t *testing.T) {
	h := &testHandler{fn: func(ctx context.Context, req *Request) (kmsg.Response, error) {
		if p, ok := req.Body.(*kmsg.ProduceRequest); ok && p.Acks == 0 {
			return nil, nil
		}
		return echoMetadata(req), nil
	}}
	s := startServer(t, Config{}, h)
	c := dial(t, s)
	produce := kmsg.NewPtrProduceRequest()
	produce.SetVersion(9)
	produce.Acks = 0
	c.send(produce)
	c.roundTrip(12)
	c.send(produce)
	c.send(produce)
	c.roundTrip(5)
}

func TestInFlightBounds(t *testing.T) {
	for _, tc := range []struct {
		name        string
		cfg         Config
		sequential  bool // the handler never calls Dispatched
		conns, reqs int
		want        int32
	}{
		{"per connection", Config{MaxInFlightPerConnection: 3}, false, 1, 10, 3},
		{"queued.max.requests", Config{MaxInFlightPerConnection: 10, QueuedMaxRequests: 4}, true, 6, 1, 4},
		// A dispatched request (a parked long poll) gives its broker-wide
		// slot back: only the per-connection bound holds it.
		{"dispatched requests leave queued.max.requests", Config{MaxInFlightPerConnection: 5, QueuedMaxRequests: 2}, false, 3, 5, 15},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var concurrent, maxConcurrent atomic.Int32
			release := make(chan struct{})
			h := &testHandler{fn: func(ctx context.Context, req *Request) (kmsg.Response, error) {
				n := concurrent.Add(1)
				defer concurrent.Add(-1)
				for {
					m := maxConcurrent.Load()
					if n <= m || maxConcurrent.CompareAndSwap(m, n) {
						break
					}
				}
				<-release
				return echoMetadata(req), nil
			}, sequential: tc.sequential}
			s := startServer(t, tc.cfg, h)
			clients := make([]*testClient, tc.conns)
			for i := range clients {
				clients[i] = dial(t, s)
				for range tc.reqs {
					clients[i].send(metadataReq(12))
				}
			}
			waitFor(t, "the bound to be reached", func() bool { return concurrent.Load() == tc.want })
			close(release)
			for _, c := range clients {
				for i := range tc.reqs {
					resp := metadataResp(12)
					if corr := c.recv(resp); corr != int32(i) {
						t.Fatalf("response %d has correlation %d", i, corr)
					}
				}
			}
			if got := maxConcurrent.Load(); got != tc.want {
				t.Fatalf("max concurrent = %d, want %d", got, tc.want)
			}
		})
	}
}

// frame builds a size-prefixed frame around raw bytes.
func frame(b []byte) []byte {
	out := binary.BigEndian.AppendUint32(nil, uint32(len(b)))
	return append(out, b...)
}

func TestBadInputClosesOnlyThatConnection(t *testing.T) {
	header := func(key, version int16) []byte {
		b := binary.BigEndian.AppendUint16(nil, uint16(key))
		b = binary.BigEndian.AppendUint16(b, uint16(version))
		b = binary.BigEndian.AppendUint32(b, 7)
		return binary.BigEndian.AppendUint16(b, 0xffff) // null client id
	}
	oversized := binary.BigEndian.AppendUint32(nil, 4096)
	oversized = append(oversized, make([]byte, 4096)...)
	for _, tc := range []struct {
		name  string
		bytes []byte
	}{
		{"oversized frame", oversized},
		{"negative size", []byte{0xff, 0xff, 0xff, 0xf0, 1, 2, 3}},
		{"unknown api key", frame(header(9999, 0))},
		{"api key not served", frame(header(1, 12))}, // Fetch
		{"version above range", frame(header(3, 13))},
		{"version below range", frame(header(0, 2))}, // Produce v2 < min 3
		{"truncated header", frame([]byte{0, 3, 0})},
		{"truncated body", frame(append(header(3, 4), 0, 0, 0, 9))},
		{"garbage", frame([]byte(strings.Repeat("\xde\xad\xbe\xef", 50)))},
		{"empty frame", frame(nil)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startServer(t, Config{SocketRequestMaxBytes: 1024}, &testHandler{})
			good := dial(t, s)
			good.roundTrip(12)
			bad := dial(t, s)
			bad.roundTrip(9) // answered before the bad frame
			bad.sendRaw(tc.bytes)
			bad.expectClosed()
			good.roundTrip(12)
			dial(t, s).roundTrip(4)
		})
	}
}

func TestBadRequestAfterPipelinedRequestsAnswersThemFirst(t *testing.T) {
	release := make(chan struct{})
	h := &testHandler{fn: func(ctx context.Context, req *Request) (kmsg.Response, error) {
		<-release
		return echoMetadata(req), nil
	}}
	s := startServer(t, Config{}, h)
	c := dial(t, s)
	c.send(metadataReq(12))
	c.send(metadataReq(12))
	c.sendRaw(frame([]byte{0x27, 0x0f, 0, 0, 0, 0, 0, 0, 0xff, 0xff})) // key 9999
	close(release)
	for i := range 2 {
		if corr := c.recv(metadataResp(12)); corr != int32(i) {
			t.Fatalf("response %d has correlation %d", i, corr)
		}
	}
	c.expectClosed()
}

func TestApiVersionsUnsupportedVersion(t *testing.T) {
	s := startServer(t, Config{}, &testHandler{})
	c := dial(t, s)
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(req.MaxVersion()) // 5 > served 3, flexible header v2
	req.ClientSoftwareName = "gregor-test"
	req.ClientSoftwareVersion = "1"
	corr := c.send(req)
	resp := kmsg.NewPtrApiVersionsResponse() // v0, header v0
	if got := c.recv(resp); got != corr {
		t.Fatalf("correlation %d, want %d", got, corr)
	}
	if resp.ErrorCode != kerr.UnsupportedVersion.Code {
		t.Fatalf("error code %d, want UNSUPPORTED_VERSION", resp.ErrorCode)
	}
	var found bool
	for _, k := range resp.ApiKeys {
		if k.ApiKey == apiVersionsKey {
			found = k.MaxVersion == 3
		}
	}
	if !found {
		t.Fatalf("ApiVersions range missing from %+v", resp.ApiKeys)
	}

	// The client retries at a served flexible version: still header v0.
	req.SetVersion(3)
	corr = c.send(req)
	resp = kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(3)
	if got := c.recv(resp); got != corr || resp.ErrorCode != 0 {
		t.Fatalf("v3 response: correlation %d error %d", got, resp.ErrorCode)
	}
}

func TestIdleConnectionClosed(t *testing.T) {
	const idle = 150 * time.Millisecond
	release := make(chan struct{})
	h := &testHandler{fn: func(ctx context.Context, req *Request) (kmsg.Response, error) {
		if req.Header.CorrelationID == 1 {
			<-release
		}
		return echoMetadata(req), nil
	}}
	s := startServer(t, Config{ConnectionsMaxIdle: idle}, h)

	c := dial(t, s)
	start := time.Now()
	c.roundTrip(12)
	c.expectClosed()
	if elapsed := time.Since(start); elapsed < idle {
		t.Fatalf("closed after %v, before connections.max.idle %v", elapsed, idle)
	}

	// A request in flight longer than the idle time keeps the connection.
	busy := dial(t, s)
	busy.roundTrip(12)
	corr := busy.send(metadataReq(12))
	time.Sleep(3 * idle) // the request is in flight all this time
	close(release)
	if got := busy.recv(metadataResp(12)); got != corr {
		t.Fatalf("correlation %d, want %d", got, corr)
	}
	busy.roundTrip(12)
}

// TestTricklingFrameClosed (issue #20 item 7): a frame whose bytes come
// one at a time, each well within connections.max.idle.ms, is closed once
// the frame has been incomplete that long, even with a request of the
// connection in flight (which keeps an idle connection open).
func TestTricklingFrameClosed(t *testing.T) {
	const idle = 300 * time.Millisecond
	release := make(chan struct{})
	defer close(release)
	h := &testHandler{fn: func(ctx context.Context, req *Request) (kmsg.Response, error) {
		if req.Header.CorrelationID == 0 {
			req.Dispatched()
			select { // parked, as a long-poll fetch
			case <-release:
			case <-ctx.Done():
			}
		}
		return echoMetadata(req), nil
	}}
	s := startServer(t, Config{ConnectionsMaxIdle: idle}, h)
	c := dial(t, s)
	c.send(metadataReq(12)) // parked all along
	frame := kmsg.NewRequestFormatter().AppendRequest(nil, metadataReq(12), 1)
	start := time.Now()
	var closedAt time.Duration
	for i := 0; i < len(frame)-1; i++ {
		_ = c.nc.SetWriteDeadline(time.Now().Add(ioTimeout))
		if _, err := c.nc.Write(frame[i : i+1]); err != nil {
			closedAt = time.Since(start)
			break
		}
		time.Sleep(idle / 6)
	}
	if closedAt == 0 {
		// The writes may all land in the socket buffer after the close;
		// the read tells.
		c.expectClosed()
		closedAt = time.Since(start)
	}
	if closedAt < idle {
		t.Fatalf("closed after %v, before connections.max.idle %v", closedAt, idle)
	}
	if bytes := len(frame); time.Duration(bytes)*idle/6 < 2*idle {
		t.Fatalf("test frame of %d bytes too short to trickle past the idle time", bytes)
	}
}

func TestShutdownWaitsForInFlightRequests(t *testing.T) {
	entered := make(chan struct{}, 1)
	release := make(chan struct{})
	h := &testHandler{fn: func(ctx context.Context, req *Request) (kmsg.Response, error) {
		entered <- struct{}{}
		<-release
		return echoMetadata(req), nil
	}}
	s := startServer(t, Config{}, h)
	addr := s.Addr("PLAINTEXT").String()
	c := dial(t, s)
	corr := c.send(metadataReq(12))
	<-entered

	done := make(chan error, 1)
	go func() { done <- s.Shutdown(context.Background()) }()
	waitFor(t, "the listener to close", func() bool {
		nc, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			nc.Close()
		}
		return err != nil
	})
	select {
	case err := <-done:
		t.Fatalf("Shutdown returned %v with a request in flight", err)
	default:
	}
	close(release)
	if got := c.recv(metadataResp(12)); got != corr {
		t.Fatalf("correlation %d, want %d", got, corr)
	}
	if err := <-done; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	c.expectClosed()
}

func TestShutdownDeadlineCancelsHandlers(t *testing.T) {
	entered := make(chan struct{}, 1)
	h := &testHandler{fn: func(ctx context.Context, req *Request) (kmsg.Response, error) {
		entered <- struct{}{}
		<-ctx.Done()
		return nil, ctx.Err()
	}}
	s := startServer(t, Config{}, h)
	c := dial(t, s)
	c.send(metadataReq(12))
	<-entered
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := s.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown = %v, want deadline exceeded", err)
	}
	c.expectClosed()
}

func TestHandlerFailureClosesOnlyThatConnection(t *testing.T) {
	h := &testHandler{fn: func(ctx context.Context, req *Request) (kmsg.Response, error) {
		switch id := req.Header.ClientID; {
		case id != nil && *id == "panic":
			panic("handler bug")
		case id != nil && *id == "error":
			return nil, errors.New("handler error")
		case id != nil && *id == "wrong-type":
			return kmsg.NewPtrProduceResponse(), nil
		}
		return echoMetadata(req), nil
	}}
	s := startServer(t, Config{}, h)
	good := dial(t, s)
	for _, clientID := range []string{"panic", "error", "wrong-type"} {
		bad := dial(t, s)
		bad.roundTrip(12)
		bad.sendWithClientID(metadataReq(12), clientID)
		bad.expectClosed()
		good.roundTrip(12)
	}
}

// Requests pipelined behind a failed one are dropped with the connection,
// never handled: a failed acks=0 produce must not let the produces queued
// behind it append.
func TestRequestsBehindAFailureAreNotHandled(t *testing.T) {
	var handled atomic.Int32
	h := &testHandler{sequential: true, fn: func(ctx context.Context, req *Request) (kmsg.Response, error) {
		handled.Add(1)
		if id := req.Header.ClientID; id != nil && *id == "error" {
			return nil, errors.New("handler error")
		}
		return echoMetadata(req), nil
	}}
	s := startServer(t, Config{}, h)
	c := dial(t, s)
	// One write, so all six requests are on the wire before the close.
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("error"))
	frames := f.AppendRequest(nil, metadataReq(12), 0)
	f = kmsg.NewRequestFormatter(kmsg.FormatterClientID("test"))
	for i := int32(1); i <= 5; i++ {
		frames = f.AppendRequest(frames, metadataReq(12), i)
	}
	c.sendRaw(frames)
	c.expectClosed()
	if n := handled.Load(); n != 1 {
		t.Fatalf("%d requests handled, want only the failing one", n)
	}
}

func TestStartErrors(t *testing.T) {
	s := NewServer(Config{Listeners: []ListenerConfig{{Name: "SASL_SSL", Host: "127.0.0.1"}}}, &testHandler{})
	if err := s.Start(); err == nil || !strings.Contains(err.Error(), "SASL_SSL") {
		t.Fatalf("Start = %v, want a security protocol error naming the listener", err)
	}

	busy := startServer(t, Config{}, &testHandler{})
	port := busy.Addr("PLAINTEXT").(*net.TCPAddr).Port
	s = NewServer(Config{Listeners: []ListenerConfig{
		{Name: "INTERNAL", Host: "127.0.0.1", SecurityProtocol: "PLAINTEXT"},
		{Name: "EXTERNAL", Host: "127.0.0.1", Port: port, SecurityProtocol: "PLAINTEXT"},
	}}, &testHandler{})
	if err := s.Start(); err == nil || !strings.Contains(err.Error(), "EXTERNAL") {
		t.Fatalf("Start = %v, want a bind error naming EXTERNAL", err)
	}
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatalf("Shutdown after failed Start: %v", err)
	}
}

func TestRequestMetadata(t *testing.T) {
	got := make(chan *Request, 1)
	h := &testHandler{fn: func(ctx context.Context, req *Request) (kmsg.Response, error) {
		got <- req
		return echoMetadata(req), nil
	}}
	s := startServer(t, Config{Listeners: []ListenerConfig{{Name: "INTERNAL", Host: "127.0.0.1", SecurityProtocol: "PLAINTEXT"}}}, h)
	nc, err := net.Dial("tcp", s.Addr("INTERNAL").String())
	if err != nil {
		t.Fatal(err)
	}
	c := &testClient{t: t, nc: nc}
	defer nc.Close()
	c.roundTrip(12)
	req := <-got
	wantID := nc.RemoteAddr().String() + "-" + nc.LocalAddr().String() + "-"
	if req.Listener != "INTERNAL" || req.ClientAddr.String() != nc.LocalAddr().String() ||
		!strings.HasPrefix(req.ConnID, wantID) || req.Size == 0 || req.ReceivedAt.IsZero() ||
		req.Header.ClientID == nil || *req.Header.ClientID != "test" || req.Body.GetVersion() != 12 {
		t.Fatalf("request fields: %+v", req)
	}
}

func TestManyConnectionsConcurrently(t *testing.T) {
	s := startServer(t, Config{}, &testHandler{})
	var wg sync.WaitGroup
	for range 20 {
		c := dial(t, s)
		wg.Go(func() {
			for range 50 {
				c.roundTrip(12)
			}
		})
	}
	wg.Wait()
}

// BenchmarkPipelinedMetadata measures the per-request cost of the socket
// server (framing, decode, ordering, encode) on one connection; the client
// writes ahead, so up to MaxInFlightPerConnection requests are in flight.
func BenchmarkPipelinedMetadata(b *testing.B) {
	s := NewServer(Config{Listeners: []ListenerConfig{{Name: "PLAINTEXT", Host: "127.0.0.1"}}}, &testHandler{})
	if err := s.Start(); err != nil {
		b.Fatal(err)
	}
	defer s.Shutdown(context.Background())
	nc, err := net.Dial("tcp", s.Addr("PLAINTEXT").String())
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	req := kmsg.NewRequestFormatter().AppendRequest(nil, metadataReq(12), 1)
	errs := make(chan error, 1)
	b.ReportAllocs()
	b.ResetTimer()
	go func() {
		for i := 0; i < b.N; i++ {
			if _, err := nc.Write(req); err != nil {
				errs <- err
				return
			}
		}
		errs <- nil
	}()
	var size [4]byte
	var buf []byte
	for i := 0; i < b.N; i++ {
		if _, err := io.ReadFull(nc, size[:]); err != nil {
			b.Fatal(err)
		}
		n := binary.BigEndian.Uint32(size[:])
		if int(n) > len(buf) {
			buf = make([]byte, n)
		}
		if _, err := io.ReadFull(nc, buf[:n]); err != nil {
			b.Fatal(err)
		}
	}
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
}

// TestClientGoneCancelsParkedRequests: when the client closes its
// connection, requests still waiting (parked long polls) see their context
// end at once instead of holding on until their max wait.
func TestClientGoneCancelsParkedRequests(t *testing.T) {
	canceled := make(chan struct{})
	parked := make(chan struct{})
	h := &testHandler{fn: func(ctx context.Context, req *Request) (kmsg.Response, error) {
		close(parked)
		<-ctx.Done()
		close(canceled)
		return nil, ctx.Err()
	}}
	s := startServer(t, Config{}, h)
	c := dial(t, s)
	c.send(metadataReq(12))
	<-parked
	c.nc.Close()
	select {
	case <-canceled:
	case <-time.After(10 * time.Second):
		t.Fatal("the parked request's context did not end when its client left")
	}
}

// TestClientGoneWithEverySlotParked (issue #20 item 2): a client whose
// every in-flight slot holds a parked request, plus more requests sent
// behind them, closes its connection; every parked request is cancelled at
// once (the reader, waiting for a slot, reads ahead and sees the close).
func TestClientGoneWithEverySlotParked(t *testing.T) {
	const slots = 4
	var parked, canceled atomic.Int32
	h := &testHandler{fn: func(ctx context.Context, req *Request) (kmsg.Response, error) {
		req.Dispatched()
		parked.Add(1)
		<-ctx.Done()
		canceled.Add(1)
		return nil, ctx.Err()
	}}
	s := startServer(t, Config{MaxInFlightPerConnection: slots}, h)
	c := dial(t, s)
	for range slots + 3 {
		c.send(metadataReq(12))
	}
	waitFor(t, "every slot parked", func() bool { return parked.Load() == slots })
	c.nc.Close()
	waitFor(t, "the parked requests cancelled", func() bool { return canceled.Load() == slots })
}

// TestPeerClosed: a request's PeerClosed is closed when the client closes
// its connection, and stays open when the server closes it (here, for
// idleness).
func TestPeerClosed(t *testing.T) {
	const idle = 150 * time.Millisecond
	seen := make(chan (<-chan struct{}), 2)
	h := &testHandler{fn: func(ctx context.Context, req *Request) (kmsg.Response, error) {
		seen <- req.PeerClosed
		return echoMetadata(req), nil
	}}
	s := startServer(t, Config{ConnectionsMaxIdle: idle}, h)

	byClient := dial(t, s)
	byClient.roundTrip(12)
	peerClosed := <-seen
	select {
	case <-peerClosed:
		t.Fatal("PeerClosed closed while the connection is open")
	default:
	}
	byClient.nc.Close()
	select {
	case <-peerClosed:
	case <-time.After(10 * time.Second):
		t.Fatal("PeerClosed not closed after the client closed its connection")
	}

	byServer := dial(t, s)
	byServer.roundTrip(12)
	peerClosed = <-seen
	byServer.expectClosed() // idle
	select {
	case <-peerClosed:
		t.Fatal("PeerClosed closed when the server closed the connection")
	default:
	}
}
