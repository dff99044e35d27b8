package network

import (
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// connObserver records what a server tells its ConnectionObserver.
type connObserver struct {
	mu     sync.Mutex
	open   map[string]int
	opened []time.Time // accept times, in order
}

func (o *connObserver) ConnectionOpened(listener string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.open == nil {
		o.open = map[string]int{}
	}
	o.open[listener]++
	o.opened = append(o.opened, time.Now())
}

func (o *connObserver) ConnectionClosed(listener string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.open[listener]--
}

func (o *connObserver) AcceptThrottled(string, time.Duration) {}
func (o *connObserver) AcceptorBlocked(string, time.Duration) {}

func (o *connObserver) count(listener string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.open[listener]
}

func (o *connObserver) acceptTimes() []time.Time {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]time.Time(nil), o.opened...)
}

// dialFrom connects to a listener from a given loopback source address
// (Linux routes all of 127/8 to lo).
func dialFrom(t *testing.T, s *Server, listener, source string) *testClient {
	t.Helper()
	d := net.Dialer{Timeout: ioTimeout}
	if source != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(source)}
	}
	nc, err := d.Dial("tcp", s.Addr(listener).String())
	if err != nil {
		t.Fatalf("dial %s from %s: %v", listener, source, err)
	}
	t.Cleanup(func() { nc.Close() })
	return &testClient{t: t, nc: nc}
}

// expectNoResponse asserts that nothing arrives within d: the connection
// is waiting in the accept queue (or its request is not read).
func (c *testClient) expectNoResponse(d time.Duration) {
	c.t.Helper()
	_ = c.nc.SetReadDeadline(time.Now().Add(d))
	var b [1]byte
	_, err := io.ReadFull(c.nc, b[:])
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		c.t.Fatalf("expected no response for %v, got err %v", d, err)
	}
}

func limits(set func(*ConnectionLimits)) *ConnectionLimits {
	l := NoConnectionLimits()
	set(&l)
	return &l
}

func TestMaxConnectionsPerIP(t *testing.T) {
	obs := &connObserver{}
	s := startServer(t, Config{
		Connections: obs,
		Limits: limits(func(l *ConnectionLimits) {
			l.MaxConnectionsPerIP = 10
			l.PerIPOverrides = map[netip.Addr]int{netip.MustParseAddr("127.0.0.3"): 2}
		}),
	}, &testHandler{})

	var kept []*testClient
	for range 10 {
		c := dialFrom(t, s, "PLAINTEXT", "127.0.0.1")
		c.roundTrip(12)
		kept = append(kept, c)
	}
	dialFrom(t, s, "PLAINTEXT", "127.0.0.1").expectClosed()
	for _, c := range kept {
		c.roundTrip(12)
	}
	dialFrom(t, s, "PLAINTEXT", "127.0.0.2").roundTrip(12)

	// The override: two from 127.0.0.3, the third closed.
	dialFrom(t, s, "PLAINTEXT", "127.0.0.3").roundTrip(12)
	dialFrom(t, s, "PLAINTEXT", "127.0.0.3").roundTrip(12)
	dialFrom(t, s, "PLAINTEXT", "127.0.0.3").expectClosed()

	// A closed connection gives its address's place back.
	kept[0].nc.Close()
	waitFor(t, "the closed connection to be counted out", func() bool { return obs.count("PLAINTEXT") == 12 })
	dialFrom(t, s, "PLAINTEXT", "127.0.0.1").roundTrip(12)
	if got := obs.count("PLAINTEXT"); got != 13 {
		t.Fatalf("connection count %d, want 13", got)
	}
}

func TestMaxConnectionsBlocksAccept(t *testing.T) {
	for _, tc := range []struct {
		name   string
		limits *ConnectionLimits
		raise  ConnectionLimits
	}{
		{"max.connections", limits(func(l *ConnectionLimits) { l.MaxConnections = 3 }),
			*limits(func(l *ConnectionLimits) { l.MaxConnections = 4 })},
		{"listener max.connections", limits(func(l *ConnectionLimits) {
			l.Listeners = map[string]ListenerLimits{"PLAINTEXT": {MaxConnections: 3, MaxConnectionCreationRate: Unlimited}}
		}), *limits(func(l *ConnectionLimits) {
			l.Listeners = map[string]ListenerLimits{"PLAINTEXT": {MaxConnections: 4, MaxConnectionCreationRate: Unlimited}}
		})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startServer(t, Config{Limits: tc.limits}, &testHandler{})
			var first []*testClient
			for range 3 {
				c := dial(t, s)
				c.roundTrip(12)
				first = append(first, c)
			}
			// The fourth waits in the accept queue until one closes.
			waiting := dial(t, s)
			corr := waiting.send(metadataReq(12))
			waiting.expectNoResponse(200 * time.Millisecond)
			first[0].nc.Close()
			if got := waiting.recv(metadataResp(12)); got != corr {
				t.Fatalf("correlation %d, want %d", got, corr)
			}
			// Raising the limit dynamically admits a waiting one.
			next := dial(t, s)
			corr = next.send(metadataReq(12))
			next.expectNoResponse(100 * time.Millisecond)
			s.SetConnectionLimits(tc.raise)
			if got := next.recv(metadataResp(12)); got != corr {
				t.Fatalf("correlation %d, want %d", got, corr)
			}
		})
	}
}

func TestInterBrokerListenerExceedsMaxConnections(t *testing.T) {
	s := startServer(t, Config{
		Listeners: []ListenerConfig{
			{Name: "PLAINTEXT", Host: "127.0.0.1"},
			{Name: "REPLICATION", Host: "127.0.0.1", SecurityProtocol: "PLAINTEXT"},
		},
		InterBrokerListener: "REPLICATION",
		Limits:              limits(func(l *ConnectionLimits) { l.MaxConnections = 2 }),
	}, &testHandler{})
	oldest := dialFrom(t, s, "PLAINTEXT", "")
	oldest.roundTrip(12)
	time.Sleep(5 * time.Millisecond) // lastActivity has nanoseconds, but be clear
	recent := dialFrom(t, s, "PLAINTEXT", "")
	recent.roundTrip(12)

	// The broker is full, yet a replica is let in; the least recently
	// active client connection makes room.
	dialFrom(t, s, "REPLICATION", "").roundTrip(12)
	oldest.expectClosed()
	recent.roundTrip(12)
	// Client connections wait for a slot as usual.
	dialFrom(t, s, "PLAINTEXT", "").expectNoResponse(100 * time.Millisecond)
}

func TestConnectionCreationRate(t *testing.T) {
	const rate, conns = 20, 50
	obs := &connObserver{}
	s := startServer(t, Config{
		Connections: obs,
		Limits:      limits(func(l *ConnectionLimits) { l.MaxConnectionCreationRate = rate }),
	}, &testHandler{})
	for range conns {
		dial(t, s) // the kernel completes the handshake; the accept loop paces itself
	}
	waitForN(t, "every connection to be accepted", 10*time.Second, func() bool { return len(obs.acceptTimes()) == conns })
	// Count-based, so load only makes it easier to hold: by the time of
	// accept i, at most one second's burst plus rate per second elapsed.
	times := obs.acceptTimes()
	for i, at := range times {
		elapsed := at.Sub(times[0]).Seconds()
		if allowed := rate + 1 + elapsed*rate; float64(i+1) > allowed {
			t.Fatalf("accept %d after %.3fs: more than the %.1f the rate allows", i+1, elapsed, allowed)
		}
	}
	if total := times[len(times)-1].Sub(times[0]); total < time.Duration(float64(conns-rate-1)/rate*float64(time.Second))-50*time.Millisecond {
		t.Fatalf("%d connections accepted in %v at %d/s", conns, total, rate)
	}
}

func TestQueuedMaxRequestBytesHoldsReaders(t *testing.T) {
	var handled atomic.Int32
	release := make(chan struct{})
	h := &testHandler{sequential: true, fn: func(ctx context.Context, req *Request) (kmsg.Response, error) {
		handled.Add(1)
		select {
		case <-release:
		case <-ctx.Done():
		}
		return echoMetadata(req), nil
	}}
	s := startServer(t, Config{QueuedMaxRequestBytes: 1000}, h)
	clientID := strings.Repeat("x", 580) // ~600-byte frames

	a, b, c := dial(t, s), dial(t, s), dial(t, s)
	a.sendWithClientID(metadataReq(12), clientID)
	waitFor(t, "a's request", func() bool { return handled.Load() == 1 })
	// The pool is not exhausted (600 of 1000): b's request is read though
	// it does not fit, as Kafka's non-strict pool allows.
	b.sendWithClientID(metadataReq(12), clientID)
	waitFor(t, "b's request", func() bool { return handled.Load() == 2 })
	// Now it is (1200): c's request stays in its socket.
	c.sendWithClientID(metadataReq(12), clientID)
	time.Sleep(100 * time.Millisecond)
	if n, used := handled.Load(), s.requestBytes.inUse(); n != 2 || used < 1000 {
		t.Fatalf("handled %d with %d bytes queued; want 2 and c held back", n, used)
	}
	release <- struct{}{} // one of a and b finishes and gives its bytes back
	waitFor(t, "c's request", func() bool { return handled.Load() == 3 })
	close(release)
	for _, cl := range []*testClient{a, b, c} {
		cl.recv(metadataResp(12))
	}
	waitFor(t, "the pool to empty", func() bool { return s.requestBytes.inUse() == 0 })
}

func TestRequestBytesPool(t *testing.T) {
	p := newRequestBytes(100)
	stop := make(chan struct{})
	if !p.acquire(600, stop) {
		t.Fatal("a frame larger than the pool must get through an empty pool")
	}
	got := make(chan bool)
	go func() { got <- p.acquire(10, stop) }()
	select {
	case <-got:
		t.Fatal("acquired from an exhausted pool")
	case <-time.After(50 * time.Millisecond):
	}
	p.release(600)
	if !<-got {
		t.Fatal("acquire failed after release")
	}
	go func() { got <- p.acquire(100, stop) }()
	if !<-got { // 10 of 100 used: not exhausted
		t.Fatal("acquire failed with room")
	}
	go func() { got <- p.acquire(1, stop) }()
	close(stop)
	if <-got {
		t.Fatal("acquire succeeded after stop")
	}
	if unbounded := newRequestBytes(-1); !unbounded.acquire(1<<40, nil) {
		t.Fatal("unbounded pool refused")
	}
}

func TestConnectionQuotasCore(t *testing.T) {
	ip1, ip2 := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2")
	q := newConnectionQuotas(ConnectionLimits{
		MaxConnections:            2,
		MaxConnectionsPerIP:       1,
		PerIPOverrides:            map[netip.Addr]int{ip2: 3},
		MaxConnectionCreationRate: 2,
		Listeners: map[string]ListenerLimits{
			"REPLICATION": {MaxConnections: 3, MaxConnectionCreationRate: 1},
		},
	}, []string{"CLIENT", "REPLICATION"}, "REPLICATION")
	now := time.Unix(1000, 0)

	// Broker-wide rate 2/s: a burst of two, then one each half second.
	for i := range 2 {
		if d := q.creationDelay("CLIENT", now); d != 0 {
			t.Fatalf("creation %d delayed %v", i, d)
		}
	}
	if d := q.creationDelay("CLIENT", now); d != 500*time.Millisecond {
		t.Fatalf("third creation delayed %v, want 500ms", d)
	}
	if d := q.creationDelay("CLIENT", now.Add(500*time.Millisecond)); d != 0 {
		t.Fatalf("after the wait: delayed %v", d)
	}
	// The protected listener has only its own rate (1/s).
	if d := q.creationDelay("REPLICATION", now); d != 0 {
		t.Fatalf("replication delayed %v by the broker rate", d)
	}
	if d := q.creationDelay("REPLICATION", now); d != time.Second {
		t.Fatalf("replication's own rate: delayed %v, want 1s", d)
	}

	// Per IP, with an override.
	if err := q.open("CLIENT", ip1); err != nil {
		t.Fatal(err)
	}
	if err := q.open("CLIENT", ip1); !errors.Is(err, errTooManyConnections) {
		t.Fatalf("second from %s: %v", ip1, err)
	}
	if err := q.open("CLIENT", ip2); err != nil {
		t.Fatal(err)
	}
	// max.connections reached: clients wait, the replica listener does not.
	if q.slotAvailable("CLIENT") || !q.slotAvailable("REPLICATION") {
		t.Fatalf("slots at the broker limit: client %v replication %v", q.slotAvailable("CLIENT"), q.slotAvailable("REPLICATION"))
	}
	if err := q.open("REPLICATION", ip2); err != nil {
		t.Fatal(err)
	}
	if !q.overBrokerLimit() {
		t.Fatal("three connections over max.connections=2 not reported")
	}
	q.close("CLIENT", ip1)
	q.close("CLIENT", ip2)
	if !q.slotAvailable("CLIENT") || q.overBrokerLimit() {
		t.Fatal("closing did not give the slots back")
	}
	if len(q.perIP) != 1 || q.perIP[ip2] != 1 {
		t.Fatalf("per-IP counts %v", q.perIP)
	}
}

// waitForN is waitFor with its own deadline.
func waitForN(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestIPConnectionCreationRateCore(t *testing.T) {
	ip1, ip2, ip3 := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2"), netip.MustParseAddr("10.0.0.3")
	q := newConnectionQuotas(ConnectionLimits{
		MaxConnections:            Unlimited,
		MaxConnectionsPerIP:       Unlimited,
		MaxConnectionCreationRate: Unlimited,
		IPCreationRates:           map[netip.Addr]int{ip1: 2, {}: 1, ip3: 0},
	}, []string{"CLIENT"}, "")
	now := time.Unix(1000, 0)
	for i := range 2 {
		if d := q.ipThrottle(ip1, now); d != 0 {
			t.Fatalf("connection %d from %s throttled %v", i, ip1, d)
		}
	}
	if d := q.ipThrottle(ip1, now); d != 500*time.Millisecond {
		t.Fatalf("third from %s: throttle %v, want 500ms", ip1, d)
	}
	// A throttled connection is not recorded: after the wait one goes in.
	if d := q.ipThrottle(ip1, now.Add(500*time.Millisecond)); d != 0 {
		t.Fatalf("after the throttle: %v", d)
	}
	// ip2 has no quota of its own: the default entity's 1/s.
	if d := q.ipThrottle(ip2, now); d != 0 {
		t.Fatal(d)
	}
	if d := q.ipThrottle(ip2, now); d != time.Second {
		t.Fatalf("second from %s under the default: %v, want 1s", ip2, d)
	}
	// A rate of 0 admits nothing.
	if d := q.ipThrottle(ip3, now); d != ipBlockedThrottle {
		t.Fatalf("rate 0: %v", d)
	}
	// Removing the quotas lifts the throttle and forgets the buckets.
	q.setLimits(NoConnectionLimits(), now)
	if d := q.ipThrottle(ip2, now); d != 0 || len(q.ipRate) != 0 {
		t.Fatalf("without quotas: throttle %v, %d buckets kept", d, len(q.ipRate))
	}
}

// TestIPConnectionCreationRate: a connection over its address's
// connection_creation_rate is held unserved and then closed, while other
// addresses are accepted meanwhile.
func TestIPConnectionCreationRate(t *testing.T) {
	s := startServer(t, Config{
		Limits: limits(func(l *ConnectionLimits) {
			l.IPCreationRates = map[netip.Addr]int{netip.MustParseAddr("127.0.0.5"): 1}
		}),
	}, &testHandler{})

	dialFrom(t, s, "PLAINTEXT", "127.0.0.5").roundTrip(12)
	held := dialFrom(t, s, "PLAINTEXT", "127.0.0.5")
	start := time.Now()
	held.send(metadataReq(12))
	// Another address is served while the throttled connection is held.
	for range 3 {
		dialFrom(t, s, "PLAINTEXT", "127.0.0.6").roundTrip(12)
	}
	held.expectClosed()
	if waited := time.Since(start); waited < 100*time.Millisecond {
		t.Fatalf("throttled connection closed after %v: not held for its throttle time", waited)
	}
	// Once the rate allows it again the address is served.
	waitForN(t, "127.0.0.5 to be admitted again", 10*time.Second, func() bool {
		nc, err := net.DialTCP("tcp", &net.TCPAddr{IP: net.ParseIP("127.0.0.5")}, s.Addr("PLAINTEXT").(*net.TCPAddr))
		if err != nil {
			return false
		}
		defer nc.Close()
		c := &testClient{t: t, nc: nc}
		c.send(metadataReq(12))
		_, err = c.readFrame()
		return err == nil
	})
}
