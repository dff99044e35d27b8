// Package rpc is the Kafka-protocol client one Gregor node uses to talk to
// another: Raft messages between controllers, followers fetching from
// leaders, brokers following the metadata log and talking to the active
// controller. Both ends run the same binary, so there is no version
// negotiation; it sits below every package that dials a peer.
package rpc

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Client is one connection from this node to another Gregor node's listener,
// for node-to-node requests: Raft messages between controllers, a broker
// following the metadata log, broker registration and heartbeats, admin
// requests forwarded to the active controller.
//
// Both ends run the same binary, so the caller picks the request version
// (no ApiVersions round trip). Requests on one Client go one at a time; a
// caller that needs concurrency uses several Clients. A failed request
// closes the connection; the next one dials again.
type Client struct {
	addr     string
	clientID string
	dial     time.Duration
	security Security

	mu   sync.Mutex
	conn net.Conn
	corr int32
	// expires is when the connection's SASL session ends (zero: never).
	expires time.Time
	// After an authentication failure the next dial waits until retryAt;
	// backoff is the wait after the next failure.
	retryAt time.Time
	backoff time.Duration
	// reuse: responses are read into buf, kept from one request to the
	// next (ReuseResponseBuffer).
	reuse bool
	buf   []byte
}

// NewClient returns a client for addr (host:port) that connects with sec;
// it dials on first use.
func NewClient(addr, clientID string, sec Security) *Client {
	return &Client{addr: addr, clientID: clientID, dial: 5 * time.Second, security: sec}
}

// ReuseResponseBuffer makes the client read every response into one buffer
// that it keeps, instead of a new one per response: a response is then
// valid only until the next Request, because its byte fields (a fetch's
// records) alias that buffer. It is for a client with one user that is done
// with each response before it sends the next request — a replica fetcher,
// which otherwise allocates and zeroes up to replica.fetch.response.max.bytes
// per fetch. The buffer keeps the size of the largest response so far.
func (c *Client) ReuseResponseBuffer() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reuse = true
}

// Addr is the address the client talks to.
func (c *Client) Addr() string { return c.addr }

// Request sends req (its version set by the caller) and returns the decoded
// response. ctx bounds the whole exchange.
func (c *Client) Request(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn != nil && !c.expires.IsZero() && time.Until(c.expires) < reauthMargin {
		// The peer closes a connection whose session expired.
		c.conn.Close()
		c.conn = nil
	}
	if c.conn == nil {
		if wait := time.Until(c.retryAt); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return nil, ctx.Err()
			}
		}
		conn, expires, err := c.security.dial(ctx, c.addr, c.clientID, c.dial)
		if err != nil {
			if errors.Is(err, ErrAuthentication) {
				c.backoff = min(max(2*c.backoff, authBackoffMin), authBackoffMax)
				c.retryAt = time.Now().Add(c.backoff)
			}
			return nil, err
		}
		c.conn, c.expires, c.corr, c.backoff = conn, expires, 0, 0
	}
	resp, err := c.roundTrip(ctx, req)
	if err != nil {
		c.conn.Close()
		c.conn = nil
		return nil, fmt.Errorf("%s to %s: %w", apiName(req.Key()), c.addr, err)
	}
	return resp, nil
}

func (c *Client) roundTrip(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	conn := c.conn
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	} else {
		conn.SetDeadline(time.Time{})
	}
	// A cancelled context unblocks the read or write at once.
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()

	c.corr++
	corr := c.corr
	frame := make([]byte, 4, 64)
	frame = binary.BigEndian.AppendUint16(frame, uint16(req.Key()))
	frame = binary.BigEndian.AppendUint16(frame, uint16(req.GetVersion()))
	frame = binary.BigEndian.AppendUint32(frame, uint32(corr))
	frame = binary.BigEndian.AppendUint16(frame, uint16(len(c.clientID)))
	frame = append(frame, c.clientID...)
	if req.IsFlexible() {
		frame = append(frame, 0) // no header tags
	}
	frame = req.AppendTo(frame)
	binary.BigEndian.PutUint32(frame, uint32(len(frame)-4))
	if _, err := conn.Write(frame); err != nil {
		return nil, ctxErr(ctx, err)
	}

	var size [4]byte
	if _, err := io.ReadFull(conn, size[:]); err != nil {
		return nil, ctxErr(ctx, err)
	}
	n := binary.BigEndian.Uint32(size[:])
	if n < 4 || n > 1<<30 {
		return nil, fmt.Errorf("response frame of %d bytes", n)
	}
	var body []byte
	if c.reuse {
		if cap(c.buf) < int(n) {
			c.buf = make([]byte, n)
		}
		body = c.buf[:n]
	} else {
		body = make([]byte, n)
	}
	if _, err := io.ReadFull(conn, body); err != nil {
		return nil, ctxErr(ctx, err)
	}
	if got := int32(binary.BigEndian.Uint32(body)); got != corr {
		return nil, fmt.Errorf("response correlation id %d, want %d", got, corr)
	}
	body = body[4:]
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	if resp.IsFlexible() && req.Key() != apiVersionsKey {
		var err error
		if body, err = SkipTags(body); err != nil {
			return nil, fmt.Errorf("response header tags: %w", err)
		}
	}
	if err := resp.ReadFrom(body); err != nil {
		return nil, fmt.Errorf("decode response: %w", err)
	}
	return resp, nil
}

// ctxErr prefers the context's error to the i/o error it caused. The
// connection's deadline is the context's, and may fire a moment before the
// context reports it: a timeout at or past the deadline is the deadline.
func ctxErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl.Add(-10*time.Millisecond)) {
			return fmt.Errorf("%w: %v", context.DeadlineExceeded, err)
		}
		return fmt.Errorf("timed out: %w", err)
	}
	return err
}

// SessionEnding reports whether the connection's SASL session ends so soon
// that the next Request will close it and dial again. A caller whose peer
// watches the connection (a broker's heartbeats) opens the next connection
// itself first.
func (c *Client) SessionEnding() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.conn != nil && !c.expires.IsZero() && time.Until(c.expires) < reauthMargin
}

// Close closes the connection; a later Request dials again.
func (c *Client) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn != nil {
		c.conn.Close()
		c.conn = nil
	}
}

// apiName names an API key for messages, Gregor's own keys included.
func apiName(key int16) string {
	if name := kmsg.NameForKey(key); name != "Unknown" {
		return name
	}
	return fmt.Sprintf("API key %d", key)
}

// apiVersionsKey is ApiVersions' API key: its response header is always
// v0, even at flexible versions (KIP-511).
const apiVersionsKey = 18

// errBadTags is a tagged-field section that does not parse.
var errBadTags = errors.New("malformed tagged fields")

// SkipTags skips a flexible message's tagged-field section.
func SkipTags(b []byte) ([]byte, error) {
	count, b, err := ReadUvarint32(b)
	if err != nil {
		return nil, err
	}
	for i := uint32(0); i < count; i++ {
		if _, b, err = ReadUvarint32(b); err != nil {
			return nil, err
		}
		var size uint32
		if size, b, err = ReadUvarint32(b); err != nil {
			return nil, err
		}
		if uint64(size) > uint64(len(b)) {
			return nil, fmt.Errorf("%w: tagged field of %d bytes with %d left", errBadTags, size, len(b))
		}
		b = b[size:]
	}
	return b, nil
}

// ReadUvarint32 reads an unsigned varint of at most 5 bytes that fits an
// int32 (Kafka's lengths and counts).
func ReadUvarint32(b []byte) (uint32, []byte, error) {
	v, n := binary.Uvarint(b)
	if n <= 0 || n > 5 || v > math.MaxInt32 {
		return 0, nil, fmt.Errorf("%w: bad unsigned varint", errBadTags)
	}
	return uint32(v), b[n:], nil
}
