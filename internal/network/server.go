// Package network is Gregor's SocketServer: it binds the listeners, accepts
// connections, reads Kafka request frames, decodes them with kmsg, hands them
// to a Handler and writes the responses back.
//
// Each connection runs a reader and a writer goroutine. The reader reads a
// frame, takes a per-connection in-flight slot and a broker-wide slot
// (queued.max.requests) and starts one goroutine for the request. Requests of
// one connection are handled in order: each starts once the one before it
// returned or called Request.Dispatched (a fetch that waits, for one), so
// reading goes on while a request is handled. The writer sends responses
// strictly in request order, as the Kafka protocol requires (clients match
// responses by order, the correlation id is only a check). When the slots run
// out the reader stops reading and TCP pushes back on the client. A response
// may leave file ranges out of its encoding (FileResponse, for Fetch's record
// batches); the writer sends those with sendfile (sendfile.go).
//
// Requests that cannot be decoded (unknown API key, unserved version, bad
// body) or frames larger than socket.request.max.bytes close the connection,
// as Kafka does; responses of requests read before it are still written.
//
// Listeners speak Kafka's four security protocols: PLAINTEXT, SSL,
// SASL_PLAINTEXT and SASL_SSL. Every request carries the principal its
// connection authenticated as (authn.go).
//
// Connection limits (max.connections, max.connections.per.ip, the creation
// rates) and the process's descriptor budget (descriptors.go) are applied
// at accept, and queued.max.request.bytes between a frame's size and its
// body (quotas.go). A client over a client quota is
// throttled by muting its connection (conn.go).
package network

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/auth"
	"gregor/internal/auth/sasl"
)

// Defaults, Kafka's where Kafka has the setting.
const (
	DefaultSocketRequestMaxBytes = 104857600        // socket.request.max.bytes
	DefaultConnectionsMaxIdle    = 10 * time.Minute // connections.max.idle.ms 600000
	DefaultQueuedMaxRequests     = 500              // queued.max.requests
	DefaultSocketBufferBytes     = 102400           // socket.send.buffer.bytes / socket.receive.buffer.bytes
	// DefaultMaxInFlightPerConnection bounds the requests of one connection
	// that are being processed or wait for their response to be written.
	// Kafka processes one request per connection at a time; 16 lets a
	// pipelining client (franz-go, librdkafka) overlap slow requests (acks=all
	// produce, long-poll fetch) without letting one connection take a large
	// share of the broker-wide queued.max.requests.
	DefaultMaxInFlightPerConnection = 16
)

// ListenerConfig is one entry of Kafka's listeners setting.
type ListenerConfig struct {
	Name string // e.g. "PLAINTEXT"
	Host string // empty binds all interfaces
	Port int    // 0 picks a free port (tests)
	// SecurityProtocol is the listener's protocol (PLAINTEXT, SSL,
	// SASL_PLAINTEXT, SASL_SSL); empty means the listener name itself, as
	// Kafka's default listener.security.protocol.map does.
	SecurityProtocol string
	// TLS is the server TLS configuration of SSL and SASL_SSL listeners.
	TLS *tls.Config
	// PrincipalFromCert gives an SSL connection's principal from its TLS
	// state (ssl.principal.mapping.rules); nil makes every SSL connection
	// ANONYMOUS.
	PrincipalFromCert func(tls.ConnectionState) (auth.Principal, error)
	// SASL are the mechanisms enabled on a SASL_PLAINTEXT or SASL_SSL
	// listener (sasl.enabled.mechanisms).
	SASL []sasl.Server
	// ReauthMax is connections.max.reauth.ms of a mechanism on this
	// listener; 0 (or a nil func) means sessions do not expire unless the
	// credential does.
	ReauthMax func(mechanism string) time.Duration
}

// Config configures a Server. Zero values take the defaults above.
type Config struct {
	Listeners             []ListenerConfig
	SocketRequestMaxBytes int32 // larger frames close the connection
	// SASLMaxReceiveSize bounds frames before a SASL connection is
	// authenticated; default DefaultSASLMaxReceiveSize.
	SASLMaxReceiveSize int32
	// ConnectionsMaxIdle closes idle connections (nothing in flight,
	// nothing received or sent) and connections whose request frame has
	// been incomplete that long.
	ConnectionsMaxIdle time.Duration
	// MaxInFlightPerConnection bounds requests being processed or awaiting
	// their write per connection; default DefaultMaxInFlightPerConnection.
	MaxInFlightPerConnection int
	QueuedMaxRequests        int // broker-wide bound on requests read but not yet handled
	// MaxParkedRequests bounds the requests waiting in purgatories at
	// once (Request.Park); default DefaultMaxParkedRequests.
	MaxParkedRequests int
	// QueuedMaxRequestBytes bounds the bytes of those requests
	// (queued.max.request.bytes); <= 0 is unbounded (Kafka's -1).
	QueuedMaxRequestBytes int64
	// Limits are the connection quotas (quotas.go); nil limits nothing.
	// SetConnectionLimits changes them while the server runs.
	Limits *ConnectionLimits
	// InterBrokerListener is the listener the broker-wide connection
	// limits do not hold (inter.broker.listener.name); empty for none.
	InterBrokerListener string
	// Descriptors, if set, bounds the connections of every server sharing
	// it by the file descriptors the process can spare (descriptors.go);
	// a connection past it is closed at once.
	Descriptors *DescriptorBudget
	// Connections, if set, is told about connections opening, closing and
	// waiting to be accepted (metrics).
	Connections ConnectionObserver
	// Socket buffer sizes; 0 takes the Kafka default 102400, -1 keeps the OS default.
	SocketSendBufferBytes, SocketReceiveBufferBytes int
	Logger                                          *slog.Logger
	// Gate, if set, holds off accepting connections until it is closed:
	// the listeners are bound (so their ports are known) but clients wait
	// in the accept queue until the node is ready to answer them (a
	// broker serves only once unfenced, as Kafka's does).
	Gate <-chan struct{}
	// Observe, if set, is told about each handled request: its response
	// (nil for none) and when its handling started and ended (metrics).
	// Request.WaitingSince splits that handling into working and waiting.
	Observe func(req *Request, resp kmsg.Response, started, done time.Time)
	// ObserveSent, if set, is told about each response written (and each
	// request answered with nothing, at done): when it was received, when
	// its handling ended, when the writer took it and when its bytes were
	// handed to the kernel (metrics: response queue, send and total time).
	ObserveSent func(apiKey int16, received, done, dequeued, sent time.Time)
	// OnAuthentication, if set, is told about each TLS handshake on an SSL
	// listener and each SASL authentication (metrics).
	OnAuthentication AuthObserver
}

// Server is the socket server. Create it with NewServer, then Start and
// finally Shutdown.
type Server struct {
	cfg     Config
	handler Handler
	log     *slog.Logger

	// queued is the broker-wide semaphore of queued.max.requests.
	queued chan struct{}
	// requestBytes is the pool of queued.max.request.bytes.
	requestBytes *requestBytes
	// parking bounds the requests parked at once (Request.Park).
	parking parkedRequests
	// frames recycles the buffers of large Produce request frames.
	frames framePool
	// quotas are the connection limits; quotaMu guards them and slotFreed
	// (on quotaMu) wakes accept loops waiting for a connection slot.
	// Lock order: quotaMu before mu.
	quotaMu   sync.Mutex
	quotas    *connectionQuotas
	slotFreed *sync.Cond
	// connIndex numbers connections for their Kafka-style connection id.
	connIndex atomic.Uint64
	// acceptFailure is the error of the last accept, nil once one succeeds
	// again (AcceptError).
	acceptFailure atomic.Pointer[error]
	// refusedLogged is when (UnixNano) a refusal for want of descriptors
	// was last logged at warn level, so a flood logs one line a minute.
	refusedLogged atomic.Int64

	mu        sync.Mutex
	started   bool
	closing   bool
	listeners map[string]net.Listener
	configs   map[string]*ListenerConfig
	conns     map[*conn]struct{}
	// throttled are the connections held until their close under an ip
	// connection_creation_rate quota (closeThrottled).
	throttled map[net.Conn]*time.Timer
	ctx       context.Context // parent of every connection context
	cancel    context.CancelFunc
	// stopAccept is closed by Shutdown: accept loops still waiting at
	// the gate give up.
	stopAccept chan struct{}

	// wg tracks accept loops and connection reader/writer goroutines; they
	// exit promptly once connections are closed. handlers tracks request
	// goroutines, which end when Handle returns.
	wg       sync.WaitGroup
	handlers sync.WaitGroup
}

// NewServer returns a server that serves h on cfg's listeners once started.
func NewServer(cfg Config, h Handler) *Server {
	if cfg.SocketRequestMaxBytes <= 0 {
		cfg.SocketRequestMaxBytes = DefaultSocketRequestMaxBytes
	}
	if cfg.SASLMaxReceiveSize <= 0 {
		cfg.SASLMaxReceiveSize = DefaultSASLMaxReceiveSize
	}
	if cfg.ConnectionsMaxIdle <= 0 {
		cfg.ConnectionsMaxIdle = DefaultConnectionsMaxIdle
	}
	if cfg.MaxInFlightPerConnection <= 0 {
		cfg.MaxInFlightPerConnection = DefaultMaxInFlightPerConnection
	}
	if cfg.QueuedMaxRequests <= 0 {
		cfg.QueuedMaxRequests = DefaultQueuedMaxRequests
	}
	if cfg.MaxParkedRequests <= 0 {
		cfg.MaxParkedRequests = DefaultMaxParkedRequests
	}
	if cfg.SocketSendBufferBytes == 0 {
		cfg.SocketSendBufferBytes = DefaultSocketBufferBytes
	}
	if cfg.SocketReceiveBufferBytes == 0 {
		cfg.SocketReceiveBufferBytes = DefaultSocketBufferBytes
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	limits := NoConnectionLimits()
	if cfg.Limits != nil {
		limits = *cfg.Limits
	}
	names := make([]string, 0, len(cfg.Listeners))
	for _, lc := range cfg.Listeners {
		names = append(names, lc.Name)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{
		stopAccept:   make(chan struct{}),
		cfg:          cfg,
		handler:      h,
		log:          log.With("component", "socket-server"),
		queued:       make(chan struct{}, cfg.QueuedMaxRequests),
		requestBytes: newRequestBytes(cfg.QueuedMaxRequestBytes),
		quotas:       newConnectionQuotas(limits, names, cfg.InterBrokerListener),
		listeners:    make(map[string]net.Listener),
		conns:        make(map[*conn]struct{}),
		throttled:    make(map[net.Conn]*time.Timer),
		ctx:          ctx,
		cancel:       cancel,
	}
	s.slotFreed = sync.NewCond(&s.quotaMu)
	s.parking.limit = int64(cfg.MaxParkedRequests)
	return s
}

// SetConnectionLimits changes the connection limits (a dynamic broker
// config update). Open connections are kept even if now over a limit;
// accept loops waiting for a slot look again.
func (s *Server) SetConnectionLimits(l ConnectionLimits) {
	s.quotaMu.Lock()
	s.quotas.setLimits(l, time.Now())
	s.slotFreed.Broadcast()
	s.quotaMu.Unlock()
}

// Start binds every listener and starts accepting. If a listener cannot be
// bound, the ones already bound are closed and the error names the listener.
func (s *Server) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started || s.closing {
		return errors.New("socket server: already started")
	}
	if len(s.cfg.Listeners) == 0 {
		return errors.New("socket server: no listeners configured")
	}
	bound := make(map[string]net.Listener, len(s.cfg.Listeners))
	configs := make(map[string]*ListenerConfig, len(s.cfg.Listeners))
	fail := func(err error) error {
		for _, l := range bound {
			l.Close()
		}
		return err
	}
	for _, lc := range s.cfg.Listeners {
		if lc.Name == "" {
			return fail(errors.New("socket server: listener without a name"))
		}
		if _, dup := bound[lc.Name]; dup {
			return fail(fmt.Errorf("socket server: listener %s configured twice", lc.Name))
		}
		if err := checkSecurity(&lc); err != nil {
			return fail(fmt.Errorf("socket server: listener %s: %w", lc.Name, err))
		}
		configs[lc.Name] = &lc
		addr := net.JoinHostPort(lc.Host, strconv.Itoa(lc.Port))
		l, err := net.Listen("tcp", addr)
		if err != nil {
			return fail(fmt.Errorf("socket server: listener %s: bind %s: %w", lc.Name, addr, err))
		}
		bound[lc.Name] = l
	}
	s.listeners, s.configs = bound, configs
	s.started = true
	for name, l := range bound {
		s.log.Info("listening", "listener", name, "addr", l.Addr().String())
		s.wg.Add(1)
		go s.acceptLoop(name, l)
	}
	return nil
}

// Addr returns the bound address of a listener, or nil if there is none.
func (s *Server) Addr(listener string) net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l, ok := s.listeners[listener]; ok {
		return l.Addr()
	}
	return nil
}

// Shutdown stops accepting and stops reading new requests, lets requests in
// flight finish and their responses be written, then closes the connections
// and waits for the goroutines. If ctx ends first, connections are closed at
// once and handler contexts cancelled; Shutdown then waits only for the
// socket goroutines (which exit promptly) and returns ctx's error. Request
// goroutines still inside Handle end when Handle honours its cancelled ctx.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return errors.New("socket server: already shut down")
	}
	s.closing = true
	close(s.stopAccept)
	s.quotaMu.Lock()
	s.slotFreed.Broadcast() // accept loops waiting for a slot give up
	s.quotaMu.Unlock()
	for _, l := range s.listeners {
		l.Close()
	}
	for nc, t := range s.throttled {
		if t.Stop() {
			s.closeAccepted(nc)
		}
		delete(s.throttled, nc)
	}
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()

	for _, c := range conns {
		c.stopReading()
	}
	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		s.handlers.Wait()
		close(done)
	}()
	select {
	case <-done:
		s.cancel()
		return nil
	case <-ctx.Done():
	}
	s.log.Warn("shutdown deadline reached; closing connections with requests in flight")
	s.cancel()
	s.mu.Lock()
	for c := range s.conns {
		c.abort()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return fmt.Errorf("socket server shutdown: %w", ctx.Err())
}

// acceptLoop accepts connections of one listener until it is closed.
func (s *Server) acceptLoop(name string, l net.Listener) {
	defer s.wg.Done()
	if s.cfg.Gate != nil {
		select {
		case <-s.cfg.Gate:
		case <-s.stopAccept:
			return
		}
	}
	var backoff time.Duration
	for {
		nc, err := l.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Typically EMFILE: back off instead of spinning, as Kafka's
			// acceptor does, and keep serving the open connections.
			s.acceptFailure.Store(&err)
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			s.log.Warn("accept failed", "listener", name, "err", err, "retry_in", backoff)
			select {
			case <-time.After(backoff):
			case <-s.ctx.Done():
				return
			}
			continue
		}
		backoff = 0
		s.acceptFailure.Store(nil)
		if !s.cfg.Descriptors.take() {
			s.refuseForDescriptors(name, nc)
			continue
		}
		ip := remoteIP(nc)
		if !s.waitForConnectionSlot(name) {
			s.closeAccepted(nc)
			return
		}
		s.quotaMu.Lock()
		throttle := s.quotas.ipThrottle(ip, time.Now())
		if throttle == 0 {
			err = s.quotas.open(name, ip)
		}
		s.quotaMu.Unlock()
		if throttle > 0 {
			s.closeThrottled(name, nc, throttle)
			continue
		}
		if err != nil {
			// Kafka's TooManyConnectionsException: close at once.
			s.log.Info("rejected connection", "listener", name, "client", nc.RemoteAddr().String(), "err", err)
			s.closeAccepted(nc)
			continue
		}
		s.setSocketOptions(nc)
		c := newConn(s, nc, s.configs[name])
		c.ip = ip
		s.mu.Lock()
		if s.closing {
			s.mu.Unlock()
			s.closeAccepted(nc)
			s.connectionClosed(name, ip)
			continue
		}
		s.conns[c] = struct{}{}
		s.wg.Add(2) // reader (serve) and writer
		s.mu.Unlock()
		if obs := s.cfg.Connections; obs != nil {
			obs.ConnectionOpened(name)
		}
		s.closeExcessConnections(name)
		go c.serve()
	}
}

// closeThrottled holds a connection over its address's
// connection_creation_rate without serving it and closes it once throttle
// has passed (Kafka's ConnectionThrottledException: the client sees the
// connection closed only after the delay, so it does not reconnect at
// once). Shutdown closes the held connections at once.
func (s *Server) closeThrottled(listener string, nc net.Conn, throttle time.Duration) {
	s.log.Debug("throttled connection: connection_creation_rate quota exceeded", "listener", listener,
		"client", nc.RemoteAddr().String(), "throttle", throttle)
	if obs := s.cfg.Connections; obs != nil {
		obs.AcceptThrottled(listener, throttle)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		s.closeAccepted(nc)
		return
	}
	s.throttled[nc] = time.AfterFunc(throttle, func() {
		s.mu.Lock()
		delete(s.throttled, nc)
		s.mu.Unlock()
		s.closeAccepted(nc)
	})
}

// closeAccepted closes an accepted connection that was never served and
// gives back its descriptor.
func (s *Server) closeAccepted(nc net.Conn) {
	nc.Close()
	s.cfg.Descriptors.give()
}

// refuseForDescriptors closes a connection accepted past the descriptor
// budget. The refusal is logged at warn level at most once a minute (a
// flood of connections would otherwise flood the log), else at debug.
func (s *Server) refuseForDescriptors(listener string, nc net.Conn) {
	client := nc.RemoteAddr().String()
	nc.Close()
	now := time.Now().UnixNano()
	last := s.refusedLogged.Load()
	if now-last >= int64(time.Minute) && s.refusedLogged.CompareAndSwap(last, now) {
		s.log.Warn("refusing connections: the file descriptors kept for connections are all in use",
			"listener", listener, "client", client, "connections", s.cfg.Descriptors.InUse(),
			"budget", s.cfg.Descriptors.Limit())
		return
	}
	s.log.Debug("refused connection: no file descriptor to spare", "listener", listener, "client", client)
}

// AcceptError is nil while the server can accept connections; otherwise
// why it cannot: its last accept failed (the process is out of
// descriptors, say), the descriptor budget for connections is spent, or
// the broker-wide max.connections is reached (for /readyz).
func (s *Server) AcceptError() error {
	if p := s.acceptFailure.Load(); p != nil {
		return fmt.Errorf("accepting connections failed: %w", *p)
	}
	if err := s.cfg.Descriptors.full(); err != nil {
		return err
	}
	s.quotaMu.Lock()
	full := s.quotas.brokerFull()
	s.quotaMu.Unlock()
	if full {
		return errors.New("max.connections reached")
	}
	return nil
}

// waitForConnectionSlot blocks the accept loop of listener until
// max.connections and the creation rates let it admit one more connection,
// as Kafka's acceptor blocks; false once the server shuts down.
func (s *Server) waitForConnectionSlot(listener string) bool {
	s.quotaMu.Lock()
	defer s.quotaMu.Unlock()
	for {
		if s.acceptStopped() {
			return false
		}
		if !s.quotas.slotAvailable(listener) {
			blocked := time.Now()
			s.slotFreed.Wait()
			if obs := s.cfg.Connections; obs != nil {
				obs.AcceptorBlocked(listener, time.Since(blocked))
			}
			continue
		}
		wait := s.quotas.creationDelay(listener, time.Now())
		if wait == 0 {
			return true
		}
		s.quotaMu.Unlock()
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-s.stopAccept:
			t.Stop()
		}
		if obs := s.cfg.Connections; obs != nil {
			obs.AcceptThrottled(listener, wait)
		}
		s.quotaMu.Lock()
	}
}

func (s *Server) acceptStopped() bool {
	select {
	case <-s.stopAccept:
		return true
	default:
		return false
	}
}

// closeExcessConnections runs after listener admitted a connection: when
// the protected inter-broker listener took the broker past max.connections,
// the least recently active connection of another listener is closed, as
// Kafka's processors do.
func (s *Server) closeExcessConnections(listener string) {
	s.quotaMu.Lock()
	over := s.quotas.overBrokerLimit()
	s.quotaMu.Unlock()
	if !over || listener != s.quotas.protected {
		return
	}
	s.mu.Lock()
	var victim *conn
	for c := range s.conns {
		if c.listener != listener && (victim == nil || c.lastActivity.Load() < victim.lastActivity.Load()) {
			victim = c
		}
	}
	s.mu.Unlock()
	if victim != nil {
		victim.log.Info("closing connection: max.connections exceeded by the inter-broker listener; this one was the least recently active")
		victim.abort()
	}
}

// connectionClosed gives back a connection's place in the quotas.
func (s *Server) connectionClosed(listener string, ip netip.Addr) {
	s.quotaMu.Lock()
	s.quotas.close(listener, ip)
	s.slotFreed.Broadcast()
	s.quotaMu.Unlock()
}

// remoteIP is the address a connection comes from, for
// max.connections.per.ip (IPv4-mapped IPv6 addresses as IPv4).
func remoteIP(nc net.Conn) netip.Addr {
	if ta, ok := nc.RemoteAddr().(*net.TCPAddr); ok {
		return ta.AddrPort().Addr().Unmap()
	}
	return netip.Addr{}
}

// checkSecurity checks that a listener has what its security protocol
// needs, and fills in the protocol when it is the listener's name.
func checkSecurity(lc *ListenerConfig) error {
	if lc.SecurityProtocol == "" {
		lc.SecurityProtocol = lc.Name
	}
	tlsNeeded, saslNeeded := false, false
	switch lc.SecurityProtocol {
	case "PLAINTEXT":
	case "SSL":
		tlsNeeded = true
	case "SASL_PLAINTEXT":
		saslNeeded = true
	case "SASL_SSL":
		tlsNeeded, saslNeeded = true, true
	default:
		return fmt.Errorf("unknown security protocol %q", lc.SecurityProtocol)
	}
	switch {
	case tlsNeeded && lc.TLS == nil:
		return fmt.Errorf("security protocol %s needs a TLS configuration (ssl.keystore.*)", lc.SecurityProtocol)
	case !tlsNeeded:
		lc.TLS = nil
	}
	switch {
	case saslNeeded && len(lc.SASL) == 0:
		return fmt.Errorf("security protocol %s needs at least one SASL mechanism (sasl.enabled.mechanisms)", lc.SecurityProtocol)
	case !saslNeeded:
		lc.SASL = nil
	}
	if lc.ReauthMax == nil {
		lc.ReauthMax = func(string) time.Duration { return 0 }
	}
	if lc.PrincipalFromCert == nil {
		lc.PrincipalFromCert = func(tls.ConnectionState) (auth.Principal, error) { return auth.Anonymous, nil }
	}
	return nil
}

// setSocketOptions applies socket.send.buffer.bytes and
// socket.receive.buffer.bytes; -1 keeps the OS default.
func (s *Server) setSocketOptions(nc net.Conn) {
	tc, ok := nc.(*net.TCPConn)
	if !ok {
		return
	}
	if n := s.cfg.SocketSendBufferBytes; n > 0 {
		if err := tc.SetWriteBuffer(n); err != nil {
			s.log.Debug("set socket send buffer", "err", err)
		}
	}
	if n := s.cfg.SocketReceiveBufferBytes; n > 0 {
		if err := tc.SetReadBuffer(n); err != nil {
			s.log.Debug("set socket receive buffer", "err", err)
		}
	}
}

// removeConn forgets a closed connection.
func (s *Server) removeConn(c *conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	s.cfg.Descriptors.give()
	s.connectionClosed(c.listener, c.ip)
	if obs := s.cfg.Connections; obs != nil {
		obs.ConnectionClosed(c.listener)
	}
}

// ConnectionObserver is told about a server's connections (metrics).
type ConnectionObserver interface {
	ConnectionOpened(listener string)
	ConnectionClosed(listener string)
	// AcceptThrottled: the listener waited d for the connection creation
	// rate before accepting.
	AcceptThrottled(listener string, d time.Duration)
	// AcceptorBlocked: the listener waited d for max.connections.
	AcceptorBlocked(listener string, d time.Duration)
}
