// Package wire is the client's connection to one broker: it negotiates API
// versions, writes requests encoded by kmsg and matches responses to them in
// order, with several requests in flight (Kafka answers a connection's
// requests in the order they were sent).
package wire

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// DialFunc opens the TCP (or other stream) connection to a broker.
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// ErrClosed is returned for requests on a connection that was closed, by
// Close or because reading or writing failed. The request may or may not
// have reached the broker.
var ErrClosed = errors.New("connection closed")

// maxResponseSize bounds one response so a corrupt length cannot make the
// client allocate without limit.
const maxResponseSize = 1 << 30

// Conn is one connection to a broker. Requests may be issued concurrently;
// they are written in the order Do is called and answered in that order.
type Conn struct {
	addr    string
	nc      net.Conn
	format  *kmsg.RequestFormatter
	reading chan struct{} // closed when the reader goroutine ends

	// versions holds the broker's highest version of each API key (-1 when
	// the broker does not serve the key); set once by Dial.
	versions []int16

	// wmu orders writes: a request is added to pending and written under
	// it, so pending is in wire order. The reader takes only mu, so a write
	// blocked on a full socket never stops responses being read.
	wmu      sync.Mutex
	nextCorr int32  // guarded by wmu
	wbuf     []byte // guarded by wmu

	mu      sync.Mutex
	pending []*pendingRequest // sent, awaiting a response, in send order
	err     error             // why the connection is closed; nil while open
}

type pendingRequest struct {
	corr  int32
	req   kmsg.Request
	cb    func(kmsg.Response, error)
	timer *time.Timer // the request timeout, when there is one
}

// finish hands the outcome to the callback.
func (pr *pendingRequest) finish(resp kmsg.Response, err error) {
	if pr.timer != nil {
		pr.timer.Stop()
	}
	pr.cb(resp, err)
}

type result struct {
	resp kmsg.Response
	err  error
}

// Dial connects to addr and asks for the broker's API versions.
func Dial(ctx context.Context, dial DialFunc, addr, clientID string) (*Conn, error) {
	if dial == nil {
		var d net.Dialer
		dial = d.DialContext
	}
	nc, err := dial(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	c := &Conn{
		addr:    addr,
		nc:      nc,
		format:  kmsg.NewRequestFormatter(kmsg.FormatterClientID(clientID)),
		reading: make(chan struct{}),
	}
	go c.readLoop()
	if err := c.negotiate(ctx); err != nil {
		c.Close()
		return nil, fmt.Errorf("api versions with %s: %w", addr, err)
	}
	return c, nil
}

// negotiate sends ApiVersions v3 and records the broker's ranges. A broker
// that does not know v3 answers with v0 and UNSUPPORTED_VERSION; the client
// then retries at v0.
func (c *Conn) negotiate(ctx context.Context) error {
	for _, v := range []int16{3, 0} {
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version = v
		req.ClientSoftwareName = "gregor-go-client"
		req.ClientSoftwareVersion = "1"
		resp, err := c.do(ctx, req)
		if err != nil {
			return err
		}
		r := resp.(*kmsg.ApiVersionsResponse)
		if r.ErrorCode == 35 && v != 0 { // UNSUPPORTED_VERSION
			continue
		}
		if r.ErrorCode != 0 {
			return fmt.Errorf("error code %d", r.ErrorCode)
		}
		versions := make([]int16, 0, 100)
		for _, k := range r.ApiKeys {
			for int(k.ApiKey) >= len(versions) {
				versions = append(versions, -1)
			}
			versions[k.ApiKey] = k.MaxVersion
		}
		c.versions = versions
		return nil
	}
	return errors.New("broker answered no ApiVersions version")
}

// Addr is the broker address this connection was dialed to.
func (c *Conn) Addr() string { return c.addr }

// MaxVersion is the highest version of key both the broker and kmsg know,
// or -1 when the broker does not serve key.
func (c *Conn) MaxVersion(req kmsg.Request) int16 {
	k := int(req.Key())
	if k >= len(c.versions) || c.versions[k] < 0 {
		return -1
	}
	return min(c.versions[k], req.MaxVersion())
}

// setVersion sets req to the highest version both sides know, capped by
// the version already set on req when capped is true.
func (c *Conn) setVersion(req kmsg.Request, capped bool) error {
	v := c.MaxVersion(req)
	if v < 0 {
		return fmt.Errorf("%s does not serve api key %d", c.addr, req.Key())
	}
	if capped && req.GetVersion() < v {
		v = req.GetVersion()
	}
	req.SetVersion(v)
	return nil
}

// Do sends req at the highest version both sides know (capped by the
// version already set on req when capped is true) and waits for the
// response. A produce request with acks 0 has no response: Do returns nil
// once it is written. When ctx ends first the connection is closed, as
// Kafka's clients do on a request timeout: the response would arrive out of
// the caller's reach and the order of the connection would be lost.
func (c *Conn) Do(ctx context.Context, req kmsg.Request, capped bool) (kmsg.Response, error) {
	if err := c.setVersion(req, capped); err != nil {
		return nil, err
	}
	return c.do(ctx, req)
}

// DoAsync sends req like Do without waiting: cb gets the response or the
// error. The callbacks of one connection run one at a time, in the order the
// requests were sent, on the connection's reader goroutine (or on the
// goroutine that found the connection broken); a produce request with acks
// 0 gets cb(nil, nil) once written. When the response has not arrived
// within timeout the connection is closed and every pending request fails.
func (c *Conn) DoAsync(req kmsg.Request, capped bool, timeout time.Duration, cb func(kmsg.Response, error)) {
	if err := c.setVersion(req, capped); err != nil {
		cb(nil, err)
		return
	}
	c.send(req, timeout, cb)
}

// do sends req at the version set on it and waits for the answer.
func (c *Conn) do(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	done := make(chan result, 1)
	// The context, not a timer, bounds the wait; the write is bounded by
	// its deadline when there is one.
	timeout := time.Duration(0)
	if deadline, ok := ctx.Deadline(); ok {
		timeout = max(time.Until(deadline), time.Millisecond)
	}
	c.send(req, timeout, func(resp kmsg.Response, err error) { done <- result{resp, err} })
	select {
	case r := <-done:
		return r.resp, r.err
	case <-ctx.Done():
		c.closeWith(fmt.Errorf("%w: request to %s: %w", ErrClosed, c.addr, ctx.Err()))
		r := <-done
		if r.err == nil {
			return r.resp, nil
		}
		return nil, fmt.Errorf("%w: %w", r.err, ctx.Err())
	}
}

// send writes req and registers cb for its answer. A timeout above zero
// bounds the write and the wait for the response (the connection is closed
// past it); zero means no bound.
func (c *Conn) send(req kmsg.Request, timeout time.Duration, cb func(kmsg.Response, error)) {
	noResponse := false
	if p, ok := req.(*kmsg.ProduceRequest); ok && p.Acks == 0 {
		noResponse = true
	}
	c.wmu.Lock()
	c.nextCorr++
	pr := &pendingRequest{corr: c.nextCorr, req: req, cb: cb}
	c.wbuf = c.format.AppendRequest(c.wbuf[:0], req, pr.corr)
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		c.wmu.Unlock()
		cb(nil, err)
		return
	}
	if !noResponse {
		c.pending = append(c.pending, pr)
		if timeout > 0 {
			pr.timer = time.AfterFunc(timeout, func() {
				c.closeWith(fmt.Errorf("%w: no response from %s within %v", ErrClosed, c.addr, timeout))
			})
		}
	}
	c.mu.Unlock()
	deadline := time.Time{}
	if timeout > 0 {
		deadline = time.Now().Add(timeout)
	}
	_ = c.nc.SetWriteDeadline(deadline)
	_, werr := c.nc.Write(c.wbuf)
	if cap(c.wbuf) > 1<<20 {
		c.wbuf = nil // do not pin a large request's buffer
	}
	c.wmu.Unlock()
	if werr != nil {
		c.closeWith(fmt.Errorf("%w: write to %s: %w", ErrClosed, c.addr, werr))
		if noResponse {
			cb(nil, c.closedErr())
		}
		return
	}
	if noResponse {
		cb(nil, nil)
	}
}

func (c *Conn) closedErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// readLoop reads responses until the connection fails and hands each to the
// oldest pending request.
func (c *Conn) readLoop() {
	defer close(c.reading)
	r := bufio.NewReaderSize(c.nc, 64<<10)
	var hdr [4]byte
	for {
		if _, err := io.ReadFull(r, hdr[:4]); err != nil {
			c.closeWith(fmt.Errorf("%w: read from %s: %w", ErrClosed, c.addr, err))
			return
		}
		size := int32(binary.BigEndian.Uint32(hdr[:4]))
		if size < 4 || size > maxResponseSize {
			c.closeWith(fmt.Errorf("%w: response of %d bytes from %s", ErrClosed, size, c.addr))
			return
		}
		// A fresh buffer each time: decoded responses may alias it.
		body := make([]byte, size)
		if _, err := io.ReadFull(r, body); err != nil {
			c.closeWith(fmt.Errorf("%w: read from %s: %w", ErrClosed, c.addr, err))
			return
		}
		corr := int32(binary.BigEndian.Uint32(body[:4]))
		c.mu.Lock()
		if len(c.pending) == 0 || c.pending[0].corr != corr {
			c.mu.Unlock()
			c.closeWith(fmt.Errorf("%w: %s answered correlation id %d out of order", ErrClosed, c.addr, corr))
			return
		}
		pr := c.pending[0]
		c.pending[0] = nil
		c.pending = c.pending[1:]
		c.mu.Unlock()
		resp, err := decode(pr.req, body[4:])
		if err != nil {
			err = fmt.Errorf("decode response of key %d from %s: %w", pr.req.Key(), c.addr, err)
		}
		pr.finish(resp, err)
	}
}

// decode reads a response body after its correlation id. Flexible responses
// carry a tag section in the header, except ApiVersions', whose header is
// always v0 so that any broker can answer it.
func decode(req kmsg.Request, b []byte) (kmsg.Response, error) {
	if req.IsFlexible() && req.Key() != 18 {
		n, used := binary.Uvarint(b)
		if used <= 0 {
			return nil, errors.New("truncated header tags")
		}
		b = b[used:]
		for range n {
			_, used := binary.Uvarint(b)
			if used <= 0 {
				return nil, errors.New("truncated header tag")
			}
			b = b[used:]
			size, used := binary.Uvarint(b)
			if used <= 0 || uint64(len(b)-used) < size {
				return nil, errors.New("truncated header tag")
			}
			b = b[used+int(size):]
		}
	}
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	if err := resp.ReadFrom(b); err != nil {
		return nil, err
	}
	return resp, nil
}

// closeWith closes the connection once, failing every pending request with
// err.
func (c *Conn) closeWith(err error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = err
	pending := c.pending
	c.pending = nil
	c.mu.Unlock()
	_ = c.nc.Close()
	for _, pr := range pending {
		pr.finish(nil, err)
	}
}

// Closed reports whether the connection has failed or been closed.
func (c *Conn) Closed() bool { return c.closedErr() != nil }

// Close closes the connection, failing pending requests with ErrClosed, and
// waits for the reader goroutine to end.
func (c *Conn) Close() {
	c.closeWith(fmt.Errorf("%w: %s closed by the client", ErrClosed, c.addr))
	<-c.reading
}
