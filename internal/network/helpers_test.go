package network

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const ioTimeout = 5 * time.Second

// testHandler serves Produce v3-13, Metadata v0-12 and ApiVersions v0-3 by
// default; fn, when set, answers everything but ApiVersions.
type testHandler struct {
	versions map[int16][2]int16
	fn       func(ctx context.Context, req *Request) (kmsg.Response, error)
	// sequential: fn never calls Dispatched, like a produce handler.
	sequential bool
	// apiVersionsSeen counts ApiVersions requests by version (-1: unsupported).
	apiVersionsSeen sync.Map
}

func (h *testHandler) VersionRange(key int16) (int16, int16, bool) {
	versions := h.versions
	if versions == nil {
		versions = map[int16][2]int16{0: {3, 13}, 3: {0, 12}, 18: {0, 3}}
	}
	r, ok := versions[key]
	return r[0], r[1], ok
}

func (h *testHandler) Handle(ctx context.Context, req *Request) (kmsg.Response, error) {
	if req.Header.APIKey == apiVersionsKey {
		return h.apiVersions(req), nil
	}
	if h.sequential {
		return h.fn(ctx, req)
	}
	// Most tests exercise the pipeline: the handler lets the next request
	// of its connection start at once, as a fetch does.
	req.Dispatched()
	if h.fn != nil {
		return h.fn(ctx, req)
	}
	return echoMetadata(req), nil
}

// apiVersions answers like Kafka, including KIP-511's unsupported path.
func (h *testHandler) apiVersions(req *Request) kmsg.Response {
	seen := req.Header.APIVersion
	if req.UnsupportedVersion {
		seen = -1
	}
	h.apiVersionsSeen.Store(seen, true)
	resp := kmsg.NewPtrApiVersionsResponse()
	keys := []int16{0, 3, 18}
	if req.UnsupportedVersion {
		// Kafka answers with the error and only its ApiVersions range.
		resp.ErrorCode = kerr.UnsupportedVersion.Code
		keys = []int16{18}
	}
	for _, key := range keys {
		lo, hi, ok := h.VersionRange(key)
		if ok {
			resp.ApiKeys = append(resp.ApiKeys, kmsg.ApiVersionsResponseApiKey{ApiKey: key, MinVersion: lo, MaxVersion: hi})
		}
	}
	return resp
}

// echoMetadata answers a Metadata request with the correlation id in
// ControllerID (v1+), so a test can match bodies to requests.
func echoMetadata(req *Request) kmsg.Response {
	resp := kmsg.NewPtrMetadataResponse()
	resp.ControllerID = req.Header.CorrelationID
	return resp
}

func startServer(t *testing.T, cfg Config, h Handler) *Server {
	t.Helper()
	if cfg.Listeners == nil {
		cfg.Listeners = []ListenerConfig{{Name: "PLAINTEXT", Host: "127.0.0.1", Port: 0}}
	}
	if cfg.Logger == nil {
		level := slog.LevelError + 1
		if testing.Verbose() {
			level = slog.LevelDebug
		}
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	}
	s := NewServer(cfg, h)
	if err := s.Start(); err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
	})
	return s
}

// testClient speaks the Kafka framing over a raw TCP connection.
type testClient struct {
	t    *testing.T
	nc   net.Conn
	mu   sync.Mutex
	corr int32
}

func dial(t *testing.T, s *Server) *testClient {
	t.Helper()
	nc, err := net.DialTimeout("tcp", s.Addr("PLAINTEXT").String(), ioTimeout)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { nc.Close() })
	return &testClient{t: t, nc: nc}
}

// send writes req with the next correlation id and returns that id.
func (c *testClient) send(req kmsg.Request) int32 {
	return c.sendWithClientID(req, "test")
}

func (c *testClient) sendWithClientID(req kmsg.Request, clientID string) int32 {
	c.t.Helper()
	c.mu.Lock()
	corr := c.corr
	c.corr++
	c.mu.Unlock()
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID(clientID))
	c.sendRaw(f.AppendRequest(nil, req, corr))
	return corr
}

func (c *testClient) sendRaw(b []byte) {
	c.t.Helper()
	_ = c.nc.SetWriteDeadline(time.Now().Add(ioTimeout))
	if _, err := c.nc.Write(b); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// readFrame reads one response frame.
func (c *testClient) readFrame() ([]byte, error) {
	_ = c.nc.SetReadDeadline(time.Now().Add(ioTimeout))
	var size [4]byte
	if _, err := io.ReadFull(c.nc, size[:]); err != nil {
		return nil, err
	}
	frame := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(c.nc, frame); err != nil {
		return nil, err
	}
	return frame, nil
}

// recv reads one response into resp (version set by the caller) and returns
// its correlation id.
func (c *testClient) recv(resp kmsg.Response) int32 {
	c.t.Helper()
	frame, err := c.readFrame()
	if err != nil {
		c.t.Fatalf("read response: %v", err)
	}
	corr := int32(binary.BigEndian.Uint32(frame))
	body := frame[4:]
	if resp.IsFlexible() && resp.Key() != apiVersionsKey {
		if len(body) == 0 || body[0] != 0 {
			c.t.Fatalf("response header v1: want empty tagged fields, got % x", body[:min(len(body), 1)])
		}
		body = body[1:]
	}
	if err := resp.ReadFrom(body); err != nil {
		c.t.Fatalf("decode %T v%d: %v", resp, resp.GetVersion(), err)
	}
	return corr
}

// expectClosed asserts that the server closes the connection (EOF or reset,
// not a timeout) without sending anything more.
func (c *testClient) expectClosed() {
	c.t.Helper()
	frame, err := c.readFrame()
	if err == nil {
		c.t.Fatalf("expected the connection to be closed, got a %d-byte response", len(frame))
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		c.t.Fatalf("expected the connection to be closed, read timed out")
	}
}

func metadataReq(version int16) *kmsg.MetadataRequest {
	r := kmsg.NewPtrMetadataRequest()
	r.SetVersion(version)
	return r
}

func metadataResp(version int16) *kmsg.MetadataResponse {
	r := kmsg.NewPtrMetadataResponse()
	r.SetVersion(version)
	return r
}

// roundTrip sends a Metadata request and checks the echoed response.
func (c *testClient) roundTrip(version int16) {
	c.t.Helper()
	corr := c.send(metadataReq(version))
	resp := metadataResp(version)
	if got := c.recv(resp); got != corr || resp.ControllerID != corr {
		c.t.Fatalf("response correlation %d body %d, want %d", got, resp.ControllerID, corr)
	}
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(ioTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}
