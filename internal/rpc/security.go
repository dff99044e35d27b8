package rpc

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
)

// Security is how a node proves itself to a peer's listener: the security
// protocol of the inter-broker or controller listener it dials, with this
// node's TLS client configuration and SASL mechanism for it. The zero value
// is PLAINTEXT.
type Security struct {
	// TLS, if set, wraps the connection (SSL, SASL_SSL). Its ServerName is
	// set per peer from the address dialed, for hostname verification.
	TLS *tls.Config
	// SASL, if set, authenticates the connection after the TLS handshake
	// (SASL_PLAINTEXT, SASL_SSL).
	SASL sasl.Mechanism
}

// ErrAuthentication marks a failed TLS handshake or SASL exchange with a
// peer: a wrong password or certificate, which retrying at once does not
// mend.
var ErrAuthentication = errors.New("authentication failed")

// Authentication failures are retried after a backoff that doubles from
// authBackoffMin to authBackoffMax (Kafka's reconnect.backoff.ms and
// reconnect.backoff.max.ms), so a node with a wrong password does not dial
// its peer, and fill the peer's log, dozens of times a second.
const (
	authBackoffMin = 50 * time.Millisecond
	authBackoffMax = time.Second
)

// reauthMargin is how long before a SASL session's end a client stops
// using its connection: a new connection authenticates afresh (KIP-368
// lets a client re-authenticate in place; a fresh connection is the simple
// equivalent for a node's one-request-at-a-time clients).
const reauthMargin = 5 * time.Second

// dial opens a connection to addr and runs the TLS handshake and the SASL
// exchange. It returns when the session ends (zero if it does not).
func (s Security) dial(ctx context.Context, addr, clientID string, timeout time.Duration) (net.Conn, time.Time, error) {
	d := net.Dialer{Timeout: timeout}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("dial %s: %w", addr, err)
	}
	if s.TLS != nil {
		cfg := s.TLS.Clone()
		if cfg.ServerName == "" {
			host, _, _ := net.SplitHostPort(addr)
			cfg.ServerName = host
		}
		tc := tls.Client(conn, cfg)
		hctx, cancel := context.WithTimeout(ctx, timeout)
		err := tc.HandshakeContext(hctx)
		cancel()
		if err != nil {
			conn.Close()
			return nil, time.Time{}, fmt.Errorf("%w: TLS handshake with %s: %w", ErrAuthentication, addr, err)
		}
		conn = tc
	}
	if s.SASL == nil {
		return conn, time.Time{}, nil
	}
	c := &Client{addr: addr, clientID: clientID, conn: conn}
	expires, err := c.authenticate(ctx, s.SASL)
	if err != nil {
		conn.Close()
		if ctx.Err() == nil {
			err = fmt.Errorf("%w: %w", ErrAuthentication, err)
		}
		return nil, time.Time{}, fmt.Errorf("SASL %s with %s: %w", s.SASL.Name(), addr, err)
	}
	return conn, expires, nil
}

// authenticate runs SaslHandshake v1 and SaslAuthenticate v2 on c's fresh
// connection.
func (c *Client) authenticate(ctx context.Context, m sasl.Mechanism) (time.Time, error) {
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version = 1
	hs.Mechanism = m.Name()
	resp, err := c.roundTrip(ctx, hs)
	if err != nil {
		return time.Time{}, err
	}
	if err := kerr.ErrorForCode(resp.(*kmsg.SASLHandshakeResponse).ErrorCode); err != nil {
		return time.Time{}, fmt.Errorf("handshake: %w (enabled: %v)", err, resp.(*kmsg.SASLHandshakeResponse).SupportedMechanisms)
	}
	host, _, _ := net.SplitHostPort(c.addr)
	session, msg, err := m.Authenticate(ctx, host)
	if err != nil {
		return time.Time{}, err
	}
	start := time.Now()
	for {
		req := kmsg.NewPtrSASLAuthenticateRequest()
		req.Version = 2
		req.SASLAuthBytes = msg
		resp, err := c.roundTrip(ctx, req)
		if err != nil {
			return time.Time{}, err
		}
		r := resp.(*kmsg.SASLAuthenticateResponse)
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			if r.ErrorMessage != nil {
				return time.Time{}, fmt.Errorf("%w: %s", err, *r.ErrorMessage)
			}
			return time.Time{}, err
		}
		done, next, err := session.Challenge(r.SASLAuthBytes)
		if err != nil {
			return time.Time{}, err
		}
		if done {
			if r.SessionLifetimeMillis > 0 {
				return start.Add(time.Duration(r.SessionLifetimeMillis) * time.Millisecond), nil
			}
			return time.Time{}, nil
		}
		if next == nil {
			return time.Time{}, errors.New("mechanism has no next message but is not done")
		}
		msg = next
	}
}
