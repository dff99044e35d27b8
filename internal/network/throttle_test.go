package network

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// throttleHandler answers Metadata with the correlation id echoed and, for
// the correlation ids in throttles (of client ids starting "throttled" when
// only is set), that throttle: in throttle_time_ms, or in Request.Throttle with no
// response when noResponse is set (an acks=0 produce). It records when it
// handled each request, by client id and correlation id.
type throttleHandler struct {
	throttles  map[int32]time.Duration
	only       bool
	noResponse bool

	mu      sync.Mutex
	handled map[handledKey]time.Time // when Handle returned
}

type handledKey struct {
	clientID string
	corr     int32
}

func (th *throttleHandler) handler() *testHandler {
	th.handled = map[handledKey]time.Time{}
	return &testHandler{fn: func(_ context.Context, req *Request) (kmsg.Response, error) {
		corr := req.Header.CorrelationID
		clientID := ""
		if req.Header.ClientID != nil {
			clientID = *req.Header.ClientID
		}
		d := th.throttles[corr]
		if th.only && !strings.HasPrefix(clientID, "throttled") {
			d = 0
		}
		var resp kmsg.Response
		if th.noResponse && d > 0 {
			req.Throttle = d
		} else {
			m := echoMetadata(req).(*kmsg.MetadataResponse)
			m.ThrottleMillis = int32(d.Milliseconds())
			resp = m
		}
		th.mu.Lock()
		th.handled[handledKey{clientID, corr}] = time.Now()
		th.mu.Unlock()
		return resp, nil
	}}
}

// handledAt is when the request corr of client id "test" was handled.
func (th *throttleHandler) handledAt(corr int32) (time.Time, bool) {
	return th.handledBy("test", corr)
}

func (th *throttleHandler) handledBy(clientID string, corr int32) (time.Time, bool) {
	th.mu.Lock()
	defer th.mu.Unlock()
	at, ok := th.handled[handledKey{clientID, corr}]
	return at, ok
}

// KIP-219: a throttled response of a version whose client throttles itself
// is sent at once, and the connection reads no new request until the
// throttle time has passed.
func TestThrottleMutesConnection(t *testing.T) {
	const throttle = 300 * time.Millisecond
	th := &throttleHandler{throttles: map[int32]time.Duration{0: throttle}}
	s := startServer(t, Config{}, th.handler())
	c := dial(t, s)

	c.roundTrip(12) // throttled; Metadata v12 is past KIP-219 (v6)
	answered, _ := th.handledAt(0)
	c.roundTrip(12) // sent after the answer: read only once unmuted
	next, _ := th.handledAt(1)
	if gap := next.Sub(answered); gap < throttle {
		t.Fatalf("the request after a %v throttle was handled %v after the throttled one", throttle, gap)
	}
	// Unthrottled requests flow again.
	c.roundTrip(12)
}

// Before KIP-219 the broker throttled by holding the response; the
// responses pipelined behind it wait too, in order.
func TestThrottleHoldsOldVersionResponse(t *testing.T) {
	const throttle = 300 * time.Millisecond
	th := &throttleHandler{throttles: map[int32]time.Duration{0: throttle}}
	s := startServer(t, Config{}, th.handler())
	c := dial(t, s)

	c.send(metadataReq(4)) // v4 < v6: the client does not throttle itself
	c.send(metadataReq(4))
	for corr := int32(0); corr < 2; corr++ {
		resp := metadataResp(4)
		if got := c.recv(resp); got != corr || resp.ControllerID != corr {
			t.Fatalf("response %d: correlation %d body %d", corr, got, resp.ControllerID)
		}
		handled, _ := th.handledAt(0)
		if wait := time.Since(handled); wait < throttle {
			t.Fatalf("response %d arrived %v after the throttled request was handled, want at least %v", corr, wait, throttle)
		}
	}
	c.roundTrip(4) // the mute ended with the hold
}

// A request answered with nothing (acks=0 produce) mutes the connection
// through Request.Throttle.
func TestThrottleWithoutResponse(t *testing.T) {
	const throttle = 300 * time.Millisecond
	th := &throttleHandler{throttles: map[int32]time.Duration{0: throttle}, noResponse: true}
	s := startServer(t, Config{}, th.handler())
	c := dial(t, s)

	c.send(metadataReq(12)) // no answer
	waitFor(t, "the connection muted", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		for conn := range s.conns {
			if conn.mutedUntil.Load() > 0 {
				return true
			}
		}
		return false
	})
	answered, _ := th.handledAt(0)
	c.roundTrip(12)
	next, _ := th.handledAt(1)
	if gap := next.Sub(answered); gap < throttle {
		t.Fatalf("the request after a %v throttle was handled %v after the throttled one", throttle, gap)
	}
}

// A throttled connection holds up neither the broker's other connections
// nor its shutdown: a muted reader stops, a request waiting for the mute
// to end is handled, and a held response is sent.
func TestThrottleDoesNotBlockOthersOrShutdown(t *testing.T) {
	const long = time.Hour
	th := &throttleHandler{throttles: map[int32]time.Duration{0: long}, only: true}
	srv := NewServer(Config{Listeners: []ListenerConfig{{Name: "PLAINTEXT", Host: "127.0.0.1"}}}, th.handler())
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	muted := dial(t, srv)
	muted.sendWithClientID(metadataReq(12), "throttled-muted")
	muted.recv(metadataResp(12)) // and muted for an hour
	corr := muted.sendWithClientID(metadataReq(12), "throttled-muted")

	held := dial(t, srv)
	held.sendWithClientID(metadataReq(4), "throttled-held") // held for an hour
	waitFor(t, "the held request handled", func() bool { _, ok := th.handledBy("throttled-held", 0); return ok })

	// Other connections are served meanwhile, and the muted one's next
	// request is not read.
	other := dial(t, srv)
	other.roundTrip(12)
	other.roundTrip(4)
	if _, ok := th.handledBy("throttled-muted", corr); ok {
		t.Fatal("a muted connection's request was handled")
	}

	shutdown := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		shutdown <- srv.Shutdown(ctx)
	}()
	// Shutting down sends the held response at once.
	resp := metadataResp(4)
	if got := held.recv(resp); got != 0 || resp.ThrottleMillis != int32(long.Milliseconds()) {
		t.Fatalf("held response: correlation %d throttle %d", got, resp.ThrottleMillis)
	}
	if err := <-shutdown; err != nil {
		t.Fatalf("shutdown with a muted connection and a held response: %v", err)
	}
	// Whether the muted connection's next request was read depends on
	// whether the reader was already waiting in a read when the mute
	// began. Read ahead of the mute, it is answered, as every request in
	// flight at a shutdown is; left unread, the connection just closes.
	if _, read := th.handledBy("throttled-muted", corr); read {
		if got := muted.recv(metadataResp(12)); got != corr {
			t.Fatalf("muted connection: response to %d, want %d", got, corr)
		}
	}
	muted.expectClosed()
}

// A mute ends with the connection's reader: requests read before a bad
// frame are answered at once, not after the throttle.
func TestThrottleEndsWithTheReader(t *testing.T) {
	release := make(chan struct{})
	h := &testHandler{sequential: true, fn: func(_ context.Context, req *Request) (kmsg.Response, error) {
		resp := echoMetadata(req).(*kmsg.MetadataResponse)
		if req.Header.CorrelationID == 0 {
			<-release
			resp.ThrottleMillis = int32(time.Hour.Milliseconds())
		}
		return resp, nil
	}}
	s := startServer(t, Config{}, h)
	c := dial(t, s)
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("test"))
	b := f.AppendRequest(nil, metadataReq(12), 0)
	b = append(b, f.AppendRequest(nil, metadataReq(12), 1)...)
	b = append(b, 0, 0, 0, 8, 0x7f, 0x7f, 0, 0, 0, 0, 0, 2) // an unknown API key
	c.sendRaw(b)
	// The bad frame stops the reader while request 0 is being handled.
	waitFor(t, "the reader stopped", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		for conn := range s.conns {
			return conn.stopping.Load()
		}
		return false
	})
	close(release)
	for corr := int32(0); corr < 2; corr++ {
		if got := c.recv(metadataResp(12)); got != corr {
			t.Fatalf("response to %d, want %d", got, corr)
		}
	}
	c.expectClosed()
}
