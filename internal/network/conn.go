package network

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/auth"
)

const (
	readBufferSize  = 32 << 10
	writeBufferSize = 64 << 10
)

// Reasons the reader stops; they decide how the close is logged.
var (
	errStopped = errors.New("stopped reading")
	errIdle    = errors.New("connection idle")
	errStalled = errors.New("request frame incomplete for connections.max.idle.ms")
)

// conn is one client connection: a reader goroutine (serve) that reads and
// dispatches requests and a writer goroutine (writeLoop) that sends the
// responses in request order.
//
// Client quotas throttle a connection as Kafka's SocketServer does. A
// response whose throttle_time_ms is set (or a request whose handler set
// Request.Throttle: an acks=0 produce has no response) mutes the
// connection until the throttle time has passed since the response was
// ready: the reader reads no new request, and requests it read ahead wait
// unhandled (giving back their queued.max.requests slots meanwhile, as
// Kafka would not have read them). For versions from KIP-219 on
// (kmsg.ThrottleResponse's second result) the client throttles itself too,
// and the response is sent at once; for older versions, whose clients do
// not, the response is held for the throttle time before it is sent (and
// the responses behind it with it), as Kafka did before KIP-219. Only this
// connection's goroutines wait; shutdown ends a mute and sends a held
// response at once.
//
// Lock order: conn.mu is a leaf lock; never hold it while doing I/O or
// taking Server.mu.
type conn struct {
	srv      *Server
	nc       net.Conn
	br       *bufio.Reader
	bw       *bufio.Writer // writer goroutine only
	listener string
	lc       *ListenerConfig
	ip       netip.Addr // the client's, for max.connections.per.ip
	id       string
	log      *slog.Logger

	// principal is who the requests read from now on come from; sasl is
	// the SASL state of a SASL listener's connection (nil otherwise).
	// Reader goroutine only.
	principal auth.Principal
	sasl      *saslConn

	// ctx is given to Handle; cancelled when the connection closes or the
	// server is shut down hard.
	ctx    context.Context
	cancel context.CancelFunc

	// inflight is the per-connection semaphore: a slot is taken before a
	// frame is read and given back when its response is written (or skipped),
	// so a client that does not read its responses is pushed back too.
	inflight chan struct{}

	stopping  atomic.Bool   // reader must stop reading new requests
	failed    atomic.Bool   // a request failed: the connection closes, later requests are not handled
	stopCh    chan struct{} // closed with stopping
	stopOnce  sync.Once
	closeOnce sync.Once

	// lastDispatched is the dispatch signal of the last request read
	// (reader goroutine only).
	lastDispatched <-chan struct{}
	// peerClosed is closed when a read finds the peer closed or reset the
	// connection (Request.PeerClosed).
	peerClosed chan struct{}

	// lastActivity is the time (UnixNano) of the last byte read or response
	// written, for connections.max.idle.ms.
	lastActivity atomic.Int64
	// mutedUntil is the time (UnixNano) until which the reader reads no
	// new request: the end of the latest client quota throttle.
	mutedUntil atomic.Int64

	mu         sync.Mutex
	queue      []*pending // responses in request order; head is written next
	readerDone bool       // no more entries will be queued
	writerGone bool       // the writer exited: finished responses are released, not queued
	wake       chan struct{}
	writerDone chan struct{}
}

// pending is one request's place in the response order.
type pending struct {
	done  bool   // guarded by conn.mu: the request finished
	frame []byte // the encoded response; nil sends nothing
	holes []Hole // file ranges spliced into frame (a FileResponse)
	// release gives back the file ranges once written or dropped; may be nil.
	release func()
	fail    bool // close the connection when the writer reaches this place
	// closeAfter closes the connection once frame is written (an
	// authentication failure answered before closing, as Kafka does).
	closeAfter bool
	// holdUntil, when set, is when the response may be sent: a throttled
	// response of a version that predates KIP-219.
	holdUntil time.Time
	// For Config.ObserveSent: the request's API key, when it was received
	// and when its handling ended (zero: not observed).
	apiKey           int16
	received, doneAt time.Time
	dequeued         time.Time // when the writer took the response
}

func newConn(s *Server, nc net.Conn, lc *ListenerConfig) *conn {
	ctx, cancel := context.WithCancel(s.ctx)
	id := fmt.Sprintf("%s-%s-%d", nc.LocalAddr(), nc.RemoteAddr(), s.connIndex.Add(1)-1)
	listener := lc.Name
	if lc.TLS != nil {
		nc = tls.Server(nc, lc.TLS)
	}
	c := &conn{
		lc:         lc,
		principal:  auth.Anonymous,
		srv:        s,
		nc:         nc,
		br:         bufio.NewReaderSize(nc, readBufferSize),
		bw:         bufio.NewWriterSize(nc, writeBufferSize),
		listener:   listener,
		id:         id,
		log:        s.log.With("listener", listener, "conn", id, "client", nc.RemoteAddr().String()),
		ctx:        ctx,
		cancel:     cancel,
		inflight:   make(chan struct{}, s.cfg.MaxInFlightPerConnection),
		stopCh:     make(chan struct{}),
		wake:       make(chan struct{}, 1),
		writerDone: make(chan struct{}),
		peerClosed: make(chan struct{}),
	}
	if len(lc.SASL) > 0 {
		c.sasl = newSASLConn(lc)
	}
	c.touch()
	return c
}

// serve runs the reader, then waits for the writer to send what is owed and
// closes the connection. Owned by Server.wg.
func (c *conn) serve() {
	defer c.srv.wg.Done()
	if tc, ok := c.nc.(*tls.Conn); ok {
		err := c.handshakeTLS(tc)
		switch {
		case err != nil && c.stopping.Load():
			// Shutdown cut the handshake short: not the client's failure.
		case err != nil || c.sasl == nil:
			// SSL listeners authenticate by the handshake; on
			// SASL_SSL only a failed handshake is an authentication
			// event (the SASL exchange is the other).
			c.observeAuth("SSL", err)
		}
		if err != nil {
			c.log.Debug("closing connection", "err", err)
			close(c.writerDone)
			c.srv.wg.Done() // the writer's share: it never starts
			c.abort()
			c.srv.removeConn(c)
			return
		}
	}
	go c.writeLoop()
	c.readLoop()
	// However the reader ended, what it read goes on unthrottled: a
	// request waiting for a mute, a response held for one.
	c.stopReading()
	c.mu.Lock()
	c.readerDone = true
	c.mu.Unlock()
	c.signal()
	<-c.writerDone
	c.abort()
	c.srv.removeConn(c)
	c.log.Debug("connection closed")
}

// stopReading makes the reader stop before the next request; requests
// already read are still answered. It unblocks a pending read by moving the
// read deadline into the past (the reader sets its deadline before checking
// stopping, so it cannot miss this).
func (c *conn) stopReading() {
	c.stopOnce.Do(func() {
		c.stopping.Store(true)
		close(c.stopCh)
		_ = c.nc.SetReadDeadline(time.Unix(1, 0))
	})
}

// abort closes the connection now and cancels its handlers' context.
func (c *conn) abort() {
	c.closeOnce.Do(func() {
		c.stopReading()
		c.cancel()
		c.nc.Close()
	})
}

// signal wakes the writer.
func (c *conn) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func (c *conn) touch() { c.lastActivity.Store(time.Now().UnixNano()) }

// readLoop reads and dispatches requests until it must stop.
func (c *conn) readLoop() {
	s := c.srv
	for {
		if !c.waitUnmuted() {
			return
		}
		if err := c.takeInflightSlot(); err != nil {
			c.readFailed(err)
			return
		}
		frame, pooled, err := c.readFrame()
		if err != nil {
			<-c.inflight
			c.readFailed(err)
			return
		}
		receivedAt := time.Now()
		// The frame's queued.max.request.bytes, taken by readFrame, go
		// back with the queued.max.requests slot (or now, if the request
		// goes no further).
		charge := int64(len(frame))
		releaseBytes := func() { s.requestBytes.release(charge) }
		if c.sasl != nil && c.sasl.phase == saslAuthenticate && c.sasl.raw {
			reply, verdict := c.saslRawToken(frame)
			releaseBytes()
			c.queueReply(reply, verdict == saslClose)
			if verdict == saslClose {
				return
			}
			continue
		}
		extra, _ := s.handler.(ExtraRequests)
		req, err := decodeRequest(frame, c.versionRange, extra)
		if err != nil {
			<-c.inflight
			releaseBytes()
			// Kafka's InvalidRequestException: log and close this connection only.
			c.log.Warn("closing connection: invalid request", "err", err, "api_key", apiKeyOf(frame),
				"api_version", apiVersionOf(frame), "size", len(frame))
			return
		}
		if c.sasl != nil {
			reply, verdict := c.saslRequest(req)
			if verdict != saslPass {
				releaseBytes()
			}
			switch verdict {
			case saslReply:
				c.queueReply(reply, false)
				continue
			case saslClose:
				c.queueReply(reply, true)
				return
			}
		}
		if pooled && req.Header.APIKey == produceKey {
			req.recycle = frame
		}
		req.Principal = c.principal
		req.SecurityProtocol = c.lc.SecurityProtocol
		req.Listener = c.listener
		req.ClientAddr = c.nc.RemoteAddr()
		req.ConnID = c.id
		req.ReceivedAt = receivedAt
		req.PeerClosed = c.peerClosed

		select {
		case s.queued <- struct{}{}:
		case <-c.stopCh:
			<-c.inflight
			releaseBytes()
			return
		}
		p := &pending{}
		c.mu.Lock()
		c.queue = append(c.queue, p)
		c.mu.Unlock()
		s.handlers.Add(1)
		// In-order dispatch: each request starts only once the one before
		// it has returned or called Dispatched. Reading goes on meanwhile
		// (bounded by the in-flight slots), so the next frame is off the
		// socket when its turn comes.
		req.dispatched = make(chan struct{})
		req.parking = &s.parking
		req.releaseQueued = func() {
			<-s.queued
			releaseBytes()
		}
		prev := c.lastDispatched
		c.lastDispatched = req.dispatched
		go c.process(req, p, prev)
	}
}

// readFailed ends reading after err.
func (c *conn) readFailed(err error) {
	c.logReadError(err)
	if peerGone(err) {
		// Nobody will read the answers: requests still waiting (a long
		// poll parked for minutes) stop now, as Kafka closes a channel
		// whose peer is gone.
		c.cancel()
		close(c.peerClosed)
	}
	if errors.Is(err, errStalled) {
		// A client that stalls part way through a frame gets no more
		// answers, as Kafka drops the channel.
		c.abort()
	}
}

// takeInflightSlot takes a per-connection in-flight slot. While every slot
// is taken (by requests parked in a purgatory, say), it reads ahead into
// the read buffer, so that a client that closes the connection is noticed
// at once and its parked requests are cancelled, instead of holding their
// slots, goroutines and purgatory entries until their max wait
// (2147483647 ms for a fetch) ends. Read-ahead stops when the buffer is
// full: the client is then pushed back by TCP, as before.
func (c *conn) takeInflightSlot() error {
	select {
	case c.inflight <- struct{}{}:
		return nil
	case <-c.stopCh:
		return errStopped
	default:
	}
	var interrupted atomic.Bool
	watched := make(chan error, 1)
	go func() { watched <- c.watchPeer(&interrupted) }()
	took := false
	for {
		select {
		case c.inflight <- struct{}{}:
			took = true
		case <-c.stopCh:
		case err := <-watched:
			if err != nil {
				return err
			}
			watched = nil // the buffer is full: wait for a slot alone
			continue
		}
		break
	}
	if watched != nil {
		// The watcher sets its deadline before checking interrupted,
		// so it cannot miss this.
		interrupted.Store(true)
		_ = c.nc.SetReadDeadline(time.Unix(1, 0))
		<-watched
	}
	if c.stopping.Load() {
		if took {
			<-c.inflight // not used
		}
		return errStopped
	}
	return nil
}

// watchPeer reads ahead into the read buffer until the peer closes (its
// error), the buffer is full (nil) or it is interrupted (nil; errStopped
// when the reader must stop).
func (c *conn) watchPeer(interrupted *atomic.Bool) error {
	_ = c.nc.SetReadDeadline(time.Time{})
	for {
		if interrupted.Load() {
			return nil
		}
		if c.stopping.Load() {
			return errStopped
		}
		n := c.br.Buffered()
		if n >= c.br.Size() {
			return nil
		}
		_, err := c.br.Peek(n + 1)
		if err == nil {
			continue
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			continue // interrupted or stopping: the checks above tell
		}
		return err
	}
}

// waitUnmuted holds the reader while the connection is muted by a client
// quota throttle; false when the reader must stop instead.
func (c *conn) waitUnmuted() bool {
	for {
		wait := time.Until(time.Unix(0, c.mutedUntil.Load()))
		if wait <= 0 {
			return true
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-c.stopCh:
			t.Stop()
			return false
		}
	}
}

// holdWhileMuted keeps a request read ahead of a mute from being handled
// until the mute ends, or the connection stops reading (shutdown, a
// failure: the request then goes on). Its queued.max.requests slot is
// given back meanwhile.
func (c *conn) holdWhileMuted(req *Request) {
	for {
		wait := time.Until(time.Unix(0, c.mutedUntil.Load()))
		if wait <= 0 {
			return
		}
		req.releaseQueuedSlot()
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-c.stopCh:
			t.Stop()
			return
		}
	}
}

// mute keeps the reader from reading new requests until the given time
// (a later mute that is already in place stays).
func (c *conn) mute(until time.Time) {
	for {
		cur := c.mutedUntil.Load()
		if until.UnixNano() <= cur || c.mutedUntil.CompareAndSwap(cur, until.UnixNano()) {
			return
		}
	}
}

// versionRange is the versions a request is decoded at: the handler's,
// and on a SASL listener the SASL APIs this layer answers itself.
func (c *conn) versionRange(key int16) (int16, int16, bool) {
	if c.sasl != nil {
		switch key {
		case saslHandshakeKey:
			return 0, 1, true
		case saslAuthenticateKey:
			return 0, 2, true
		}
	}
	return c.srv.handler.VersionRange(key)
}

// queueReply places a response made by the reader itself (SASL) in the
// response order. frame may be nil (nothing to send); closeAfter closes the
// connection once it is written.
func (c *conn) queueReply(frame []byte, closeAfter bool) {
	p := &pending{done: true, frame: frame, closeAfter: closeAfter}
	if frame == nil && closeAfter {
		p.fail = true
	}
	c.mu.Lock()
	c.queue = append(c.queue, p)
	c.mu.Unlock()
	c.signal()
}

// readFrame reads one size-prefixed frame, checking the size against
// socket.request.max.bytes (sasl.server.max.receive.size before a SASL
// connection is authenticated) before allocating. The boolean reports that
// the frame's buffer came from the server's frame pool (frame_pool.go).
//
// A frame's bytes count as activity only once the frame is complete: a
// frame that trickles in (or stalls part way) for connections.max.idle.ms
// closes the connection, whatever else is in flight, so that a client
// cannot hold a connection, and the frame's buffer, by sending a byte now
// and then (issue #20 item 7).
func (c *conn) readFrame() ([]byte, bool, error) {
	var sizeBuf [4]byte
	if err := c.readFull(sizeBuf[:], false); err != nil {
		return nil, false, err
	}
	size := int32(binary.BigEndian.Uint32(sizeBuf[:]))
	switch {
	case size < 0:
		return nil, false, fmt.Errorf("invalid receive (size = %d)", size)
	case c.sasl != nil && c.sasl.phase != saslComplete && size > c.srv.cfg.SASLMaxReceiveSize:
		// Say, a TLS client on a SASL_PLAINTEXT port: its ClientHello
		// read as a size is hundreds of megabytes.
		err := fmt.Errorf("invalid receive (size = %d larger than sasl.server.max.receive.size %d before authentication)", size, c.srv.cfg.SASLMaxReceiveSize)
		c.observeAuth(c.sasl.mechanism, err)
		return nil, false, loggedError{err}
	case size > c.srv.cfg.SocketRequestMaxBytes:
		return nil, false, fmt.Errorf("invalid receive (size = %d larger than socket.request.max.bytes %d)", size, c.srv.cfg.SocketRequestMaxBytes)
	}
	// Kafka mutes a channel whose request does not get memory from the
	// pool: the body stays in the socket until bytes are given back.
	if !c.srv.requestBytes.acquire(int64(size), c.stopCh) {
		return nil, false, errStopped
	}
	// The wait for the budget was the broker's, not the client's.
	c.touch()
	frame, pooled, whole := c.srv.frames.get(int(size))
	var err error
	if whole {
		err = c.readFull(frame, true)
	} else {
		frame, err = c.readGrowing(frame, int(size))
	}
	if err != nil {
		c.srv.requestBytes.release(int64(size))
		if pooled {
			c.srv.frames.put(frame)
		}
		return nil, false, err
	}
	c.touch()
	return frame, pooled, nil
}

// readGrowing reads an n-byte frame into buf (length 0, from
// framePool.get), growing it only as the bytes arrive.
func (c *conn) readGrowing(buf []byte, n int) ([]byte, error) {
	for len(buf) < n {
		if len(buf) == cap(buf) {
			buf = growFrame(buf, n)
		}
		chunk := buf[len(buf):min(cap(buf), n)]
		// Bytes of this frame may have been read before (len(buf) > 0),
		// and the size in any case: the frame's clock runs.
		if err := c.readFull(chunk, true); err != nil {
			return buf, err
		}
		buf = buf[:len(buf)+len(chunk)]
	}
	return buf, nil
}

// readFull fills buf with bytes of one frame, keeping partial progress
// across read deadlines; inFrame says that bytes of the frame were read
// before. The deadline implements connections.max.idle.ms: it expires at
// lastActivity + idle. Between frames the connection is closed at expiry
// only if nothing is in flight; within a frame (readFrame does not count
// its bytes as activity until it is complete) it is closed regardless.
// The deadline is set once per call and again after each expiry, not
// before every read: a large frame arrives in many reads, and the
// decision is only ever taken at expiry, with lastActivity as it is then.
func (c *conn) readFull(buf []byte, inFrame bool) error {
	idle := c.srv.cfg.ConnectionsMaxIdle
	armed := false
	for n := 0; n < len(buf); {
		if !armed {
			deadline := time.Unix(0, c.lastActivity.Load()).Add(idle)
			if !inFrame && c.busy() {
				deadline = time.Now().Add(idle)
			}
			_ = c.nc.SetReadDeadline(deadline)
			armed = true
		}
		if c.stopping.Load() {
			return errStopped
		}
		m, err := c.br.Read(buf[n:])
		if m > 0 {
			n += m
			if !inFrame {
				// The frame's first bytes start its clock; from now
				// on the deadline no longer moves for the requests in
				// flight, only for responses written.
				c.touch()
				inFrame, armed = true, false
			}
		}
		if err == nil {
			continue
		}
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			return err
		}
		armed = false
		if c.stopping.Load() {
			return errStopped
		}
		if time.Since(time.Unix(0, c.lastActivity.Load())) < idle {
			continue
		}
		if inFrame {
			return errStalled
		}
		if !c.busy() {
			return errIdle
		}
	}
	return nil
}

// busy reports whether a request is being processed or its response waits.
func (c *conn) busy() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.queue) > 0
}

// peerGone reports a read error that means the client closed or reset
// the connection.
func peerGone(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)
}

// loggedError is a read error logged where it arose.
type loggedError struct{ error }

func (e loggedError) Unwrap() error { return e.error }

func (c *conn) logReadError(err error) {
	switch {
	case errors.As(err, new(loggedError)):
	case errors.Is(err, errStopped):
	case errors.Is(err, errIdle):
		c.log.Debug("closing idle connection", "connections_max_idle", c.srv.cfg.ConnectionsMaxIdle)
	case errors.Is(err, errStalled):
		c.log.Info("closing connection: a request frame did not arrive completely within connections.max.idle.ms",
			"connections_max_idle", c.srv.cfg.ConnectionsMaxIdle)
	case errors.Is(err, net.ErrClosed):
	case peerGone(err):
		c.log.Debug("client closed connection", "err", err)
	default:
		c.log.Warn("closing connection", "err", err)
	}
}

// process handles one request and records its response in its place.
// Owned by Server.handlers.
func (c *conn) process(req *Request, p *pending, prev <-chan struct{}) {
	defer c.srv.handlers.Done()
	if prev != nil {
		<-prev // closed by the previous request's process at the latest
	}
	c.holdWhileMuted(req)
	var frame Frame
	var release func()
	var th throttle
	ok := false
	// After a failed request the connection is closing: requests read
	// behind it are dropped unhandled, as Kafka drops them with the channel.
	if !c.failed.Load() {
		frame, release, th, ok = c.handle(req)
	}
	req.unpark()
	if req.recycle != nil {
		// The handler has returned and the response is encoded: nothing
		// refers to the request's frame any more (frame_pool.go).
		c.srv.frames.put(req.recycle)
		req.recycle = nil
	}
	if !ok {
		c.failed.Store(true)
	}
	req.Dispatched() // gives back the queued.max.requests slot, if not yet
	var holdUntil time.Time
	if ok && th.time > 0 {
		end := time.Now().Add(th.time)
		c.mute(end)
		if th.hold {
			holdUntil = end
		}
	}
	c.mu.Lock()
	p.done, p.frame, p.holes, p.release, p.fail = true, frame.Buf, frame.Holes, release, !ok
	p.holdUntil = holdUntil
	if ok {
		p.apiKey, p.received, p.doneAt = req.Header.APIKey, req.ReceivedAt, time.Now()
	}
	gone := c.writerGone
	c.mu.Unlock()
	if gone && release != nil {
		release()
	}
	c.signal()
	if !ok {
		c.stopReading()
	}
}

// throttle is how a request's client is throttled: muted for time, and,
// with hold, its response held back as long (pre-KIP-219 versions).
type throttle struct {
	time time.Duration
	hold bool
}

// throttleOf is the throttle of a request and its response (nil for none):
// the larger of Request.Throttle and the response's throttle_time_ms.
func throttleOf(req *Request, resp kmsg.Response) throttle {
	th := throttle{time: req.Throttle}
	if tr, ok := resp.(kmsg.ThrottleResponse); ok {
		ms, clientThrottles := tr.Throttle()
		th.time = max(th.time, time.Duration(ms)*time.Millisecond)
		th.hold = !clientThrottles
	}
	return th
}

// handle calls the handler and encodes its response. ok=false closes the
// connection once the responses before this one are written. release, when
// not nil, gives back the file ranges of a FileResponse.
func (c *conn) handle(req *Request) (frame Frame, release func(), th throttle, ok bool) {
	h := req.Header
	defer func() {
		if r := recover(); r != nil {
			c.log.Error("closing connection: request handler panicked", "api_key", h.APIKey,
				"api_version", h.APIVersion, "correlation_id", h.CorrelationID,
				"panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			if release != nil {
				release()
			}
			frame, release, th, ok = Frame{}, nil, throttle{}, false
		}
	}()
	if c.log.Enabled(c.ctx, slog.LevelDebug) {
		c.log.Debug("request", "api", kmsg.NameForKey(h.APIKey), "api_version", h.APIVersion,
			"correlation_id", h.CorrelationID, "principal", req.Principal.String(),
			"security_protocol", req.SecurityProtocol)
	}
	started := time.Now()
	resp, err := c.srv.handler.Handle(c.ctx, req)
	if obs := c.srv.cfg.Observe; obs != nil && err == nil {
		obs(req, resp, started, time.Now())
	}
	fileResp, isFileResp := resp.(FileResponse)
	if isFileResp {
		release = fileResp.Release
	}
	fail := func() (Frame, func(), throttle, bool) {
		if release != nil {
			release()
		}
		return Frame{}, nil, throttle{}, false
	}
	if err != nil {
		if c.ctx.Err() == nil {
			c.log.Warn("closing connection: request failed", "api_key", h.APIKey,
				"api_version", h.APIVersion, "correlation_id", h.CorrelationID, "err", err)
		}
		return fail()
	}
	if resp == nil {
		return Frame{}, nil, throttleOf(req, nil), true
	}
	if resp.Key() != h.APIKey {
		c.log.Error("closing connection: handler answered with the wrong response type",
			"api_key", h.APIKey, "response_key", resp.Key())
		return fail()
	}
	version := h.APIVersion
	if req.UnsupportedVersion {
		version = 0
	}
	resp.SetVersion(version)
	th = throttleOf(req, resp) // after SetVersion: the version decides KIP-219
	if isFileResp {
		return encodeFileResponse(h.CorrelationID, fileResp), release, th, true
	}
	return Frame{Buf: encodeResponse(h.CorrelationID, resp)}, nil, th, true
}

// writeLoop writes finished responses in request order, batching those that
// are ready into one flush. Owned by Server.wg.
func (c *conn) writeLoop() {
	defer c.srv.wg.Done()
	defer close(c.writerDone)
	defer c.releaseUnwritten()
	var unsent []*pending // written since the last flush, to observe
	for {
		c.mu.Lock()
		var ready []*pending
		var holdUntil time.Time // of the next response, held for a throttle
		for len(c.queue) > 0 && c.queue[0].done {
			if h := c.queue[0].holdUntil; !c.stopping.Load() && time.Now().Before(h) {
				holdUntil = h
				break
			}
			ready = append(ready, c.queue[0])
			c.queue[0] = nil
			c.queue = c.queue[1:]
		}
		finished := c.readerDone && len(c.queue) == 0
		c.mu.Unlock()

		for i, p := range ready {
			p.dequeued = time.Now()
			if p.fail {
				// Kafka closes the channel; send what was answered before.
				_ = c.flush()
				c.abort()
				releaseAll(ready[i:])
				return
			}
			if p.frame != nil {
				_ = c.nc.SetWriteDeadline(time.Now().Add(c.srv.cfg.ConnectionsMaxIdle))
				var err error
				if len(p.holes) > 0 {
					err = c.writeFrame(Frame{Buf: p.frame, Holes: p.holes})
				} else {
					_, err = c.bw.Write(p.frame)
				}
				if err != nil {
					c.writeFailed(err)
					releaseAll(ready[i:])
					return
				}
				c.touch()
			}
			// Buffered bytes of a range were copied; sendfile is done.
			releaseAll(ready[i : i+1])
			<-c.inflight
			if !p.doneAt.IsZero() {
				unsent = append(unsent, p)
			}
			if p.closeAfter {
				_ = c.flush()
				c.abort()
				releaseAll(ready[i+1:])
				return
			}
		}
		if len(ready) > 0 {
			continue // more may have finished meanwhile; flush once none is ready
		}
		if err := c.flush(); err != nil {
			c.writeFailed(err)
			return
		}
		c.observeSent(unsent)
		unsent = unsent[:0]
		if finished {
			return
		}
		// A held response waits for its time, or for the shutdown.
		var held <-chan time.Time
		var stopping <-chan struct{}
		var timer *time.Timer
		if !holdUntil.IsZero() {
			timer = time.NewTimer(time.Until(holdUntil))
			held, stopping = timer.C, c.stopCh
		}
		select {
		case <-c.wake:
		case <-held:
		case <-stopping:
		case <-c.ctx.Done():
		}
		if timer != nil {
			timer.Stop()
		}
		if c.ctx.Err() != nil {
			return
		}
	}
}

// observeSent tells Config.ObserveSent about responses whose bytes a flush
// has just handed to the kernel (a request answered with nothing counts as
// sent when it was handled).
func (c *conn) observeSent(ps []*pending) {
	obs := c.srv.cfg.ObserveSent
	if obs == nil || len(ps) == 0 {
		return
	}
	now := time.Now()
	for _, p := range ps {
		if p.frame == nil {
			obs(p.apiKey, p.received, p.doneAt, p.doneAt, p.doneAt)
			continue
		}
		obs(p.apiKey, p.received, p.doneAt, p.dequeued, now)
	}
}

func (c *conn) flush() error {
	if c.bw.Buffered() == 0 {
		return nil
	}
	_ = c.nc.SetWriteDeadline(time.Now().Add(c.srv.cfg.ConnectionsMaxIdle))
	if err := c.bw.Flush(); err != nil {
		return err
	}
	c.touch()
	return nil
}

func (c *conn) writeFailed(err error) {
	if c.ctx.Err() == nil && !errors.Is(err, net.ErrClosed) {
		c.log.Debug("closing connection: write failed", "err", err)
	}
	c.abort()
}

// apiKeyOf and apiVersionOf read the header fields of a frame for logging,
// -1 when the frame is too short.
func apiKeyOf(frame []byte) int16 {
	if len(frame) < 2 {
		return -1
	}
	return int16(binary.BigEndian.Uint16(frame))
}

func apiVersionOf(frame []byte) int16 {
	if len(frame) < 4 {
		return -1
	}
	return int16(binary.BigEndian.Uint16(frame[2:]))
}

// releaseAll gives back the file ranges of responses that were written or
// will not be.
func releaseAll(ps []*pending) {
	for _, p := range ps {
		if p.release != nil {
			p.release()
			p.release = nil
		}
	}
}

// releaseUnwritten runs when the writer exits: the file ranges of responses
// that were finished but never written are given back, and responses that
// finish later release their own (writerGone).
func (c *conn) releaseUnwritten() {
	c.mu.Lock()
	c.writerGone = true
	var unwritten []*pending
	for _, p := range c.queue {
		if p != nil && p.done {
			unwritten = append(unwritten, p)
		}
	}
	c.mu.Unlock()
	releaseAll(unwritten)
}
