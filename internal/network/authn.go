package network

import (
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/auth"
	"gregor/internal/auth/sasl"
)

// Authentication on a connection, as Kafka's SslTransportLayer and
// SaslServerAuthenticator do it.
//
// TLS (SSL and SASL_SSL listeners) is handshaken by the connection's reader
// goroutine before the first frame is read. The principal of an SSL
// connection is the client certificate's mapped subject, or ANONYMOUS.
//
// SASL (SASL_PLAINTEXT and SASL_SSL) is a state machine run by the reader
// goroutine itself, so that a request is admitted or refused knowing the
// state the requests before it left: until authenticated, only ApiVersions
// and SaslHandshake are accepted, then SaslAuthenticate requests (handshake
// v1) or raw size-prefixed tokens (handshake v0) until the mechanism is
// done; anything else, or a frame over sasl.server.max.receive.size, closes
// the connection as a failed authentication (Kafka's
// IllegalSaslStateException and "invalid receive size", both counted in
// failed-authentication-total). SASL responses are placed in
// the connection's response order like any other. After authentication,
// the requests read carry the SASL principal. When the session has a
// lifetime (connections.max.reauth.ms, or an OAUTHBEARER token's expiry) a
// client may re-authenticate with a new SaslHandshake; a request other
// than that after expiry closes the connection (KIP-368).

// DefaultSASLMaxReceiveSize is sasl.server.max.receive.size: the largest
// frame read before a SASL connection is authenticated.
const DefaultSASLMaxReceiveSize = 524288

// TLSHandshakeTimeout bounds a client's TLS handshake, so that a peer that
// connects and says nothing does not hold a goroutine until the idle timer.
const TLSHandshakeTimeout = 10 * time.Second

const (
	saslHandshakeKey    = 17
	saslAuthenticateKey = 36
)

// AuthObserver is told about each authentication attempt: mechanism is the
// SASL mechanism, or "SSL" for a TLS handshake on an SSL listener; err is
// nil on success. reauth marks a re-authentication.
type AuthObserver func(listener, mechanism string, reauth bool, err error)

type saslPhase int

const (
	saslHandshake    saslPhase = iota // ApiVersions or SaslHandshake expected
	saslAuthenticate                  // tokens of the chosen mechanism expected
	saslComplete                      // authenticated
)

// saslConn is one connection's SASL state. Reader goroutine only.
type saslConn struct {
	mechanisms []sasl.Server
	names      []string
	reauthMax  func(mechanism string) time.Duration

	phase     saslPhase
	raw       bool // handshake v0: tokens come as raw frames
	mechanism string
	exchange  sasl.Exchange
	// Set once authenticated.
	principal auth.Principal
	expires   time.Time // zero: the session does not expire
	// reauth is set while a re-authentication runs; previous is the
	// principal it must keep.
	reauth        bool
	previous      auth.Principal
	prevMechanism string
}

func newSASLConn(lc *ListenerConfig) *saslConn {
	s := &saslConn{mechanisms: lc.SASL, reauthMax: lc.ReauthMax}
	for _, m := range lc.SASL {
		s.names = append(s.names, m.Name())
	}
	return s
}

func (s *saslConn) server(name string) sasl.Server {
	for _, m := range s.mechanisms {
		if m.Name() == name {
			return m
		}
	}
	return nil
}

// handshakeTLS runs the server side of the TLS handshake and returns the
// connection's principal (SSL listeners; SASL_SSL ones take the SASL
// principal later).
func (c *conn) handshakeTLS(tc *tls.Conn) error {
	_ = tc.SetDeadline(time.Now().Add(TLSHandshakeTimeout))
	err := tc.HandshakeContext(c.ctx)
	_ = tc.SetDeadline(time.Time{})
	if err != nil {
		return fmt.Errorf("TLS handshake: %w", err)
	}
	if c.sasl != nil {
		return nil
	}
	p, err := c.lc.PrincipalFromCert(tc.ConnectionState())
	if err != nil {
		return fmt.Errorf("principal of the client certificate: %w", err)
	}
	c.principal = p
	return nil
}

// saslVerdict is what the reader does with a frame on a SASL connection.
type saslVerdict int

const (
	saslPass  saslVerdict = iota // an ordinary request: dispatch it
	saslReply                    // answered here: queue frame
	saslClose                    // close the connection (after frame, if any)
)

// saslFrame handles a frame that a SASL connection's state says is a raw
// token (handshake v0). It returns the frame to send, if any.
func (c *conn) saslRawToken(frame []byte) (reply []byte, verdict saslVerdict) {
	s := c.sasl
	out, err := c.saslStep(frame)
	if err != nil {
		// No error can be framed in the raw protocol: Kafka closes.
		return nil, saslClose
	}
	if out == nil && s.phase == saslComplete {
		return nil, saslReply // PLAIN's success has no token to send
	}
	reply = binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(out)), uint32(len(out)))
	return append(reply, out...), saslReply
}

// saslRequest decides about a decoded request on a SASL connection. When
// it answers the request itself it returns the encoded response.
func (c *conn) saslRequest(req *Request) (reply []byte, verdict saslVerdict) {
	s := c.sasl
	key := req.Header.APIKey
	switch s.phase {
	case saslHandshake:
		switch key {
		case apiVersionsKey:
			if s.reauth {
				c.observeAuth(s.mechanism, errors.New("unexpected ApiVersions request during SASL re-authentication"))
				return nil, saslClose
			}
			return nil, saslPass
		case saslHandshakeKey:
			return c.saslHandshakeRequest(req)
		}
		c.observeAuth(s.mechanism, fmt.Errorf("unexpected %s request (key %d) during SASL handshake", kmsg.NameForKey(key), key))
		return nil, saslClose
	case saslAuthenticate:
		if key != saslAuthenticateKey {
			c.observeAuth(s.mechanism, fmt.Errorf("unexpected %s request (key %d) during SASL %s", kmsg.NameForKey(key), key, s.authText()))
			return nil, saslClose
		}
		return c.saslAuthenticateRequest(req)
	}
	// Authenticated.
	expired := !s.expires.IsZero() && !time.Now().Before(s.expires)
	if key == saslHandshakeKey && !s.expires.IsZero() && req.Header.APIVersion >= 1 {
		// KIP-368 re-authentication: only a session with a lifetime
		// may be renewed; without one SaslHandshake goes to the
		// handler, which answers ILLEGAL_SASL_STATE as Kafka does.
		s.reauth, s.previous, s.prevMechanism = true, s.principal, s.mechanism
		s.phase = saslHandshake
		return c.saslHandshakeRequest(req)
	}
	if expired {
		c.log.Debug("closing connection: SASL session expired without re-authentication",
			"principal", s.principal.String(), "api_key", key)
		return nil, saslClose
	}
	return nil, saslPass
}

func (c *conn) saslHandshakeRequest(req *Request) ([]byte, saslVerdict) {
	s := c.sasl
	r := req.Body.(*kmsg.SASLHandshakeRequest)
	resp := kmsg.NewPtrSASLHandshakeResponse()
	resp.SupportedMechanisms = slices.Clone(s.names)
	m := s.server(r.Mechanism)
	if m == nil {
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		c.observeAuth(r.Mechanism, fmt.Errorf("unsupported SASL mechanism %q", r.Mechanism))
		c.log.Debug("closing connection: unsupported SASL mechanism", "mechanism", r.Mechanism)
		return c.encode(req, resp), saslClose
	}
	if s.reauth && r.Mechanism != s.prevMechanism {
		// Kafka answers the handshake and fails the first token.
		s.phase, s.raw, s.exchange = saslAuthenticate, false, nil
		s.mechanism = r.Mechanism
		return c.encode(req, resp), saslReply
	}
	s.phase, s.raw, s.mechanism = saslAuthenticate, req.Header.APIVersion == 0, r.Mechanism
	s.exchange = m.Start()
	return c.encode(req, resp), saslReply
}

func (c *conn) saslAuthenticateRequest(req *Request) ([]byte, saslVerdict) {
	s := c.sasl
	r := req.Body.(*kmsg.SASLAuthenticateRequest)
	resp := kmsg.NewPtrSASLAuthenticateResponse()
	out, err := c.saslStep(r.SASLAuthBytes)
	if err != nil {
		resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
		msg := err.Error()
		resp.ErrorMessage = &msg
		return c.encode(req, resp), saslClose
	}
	resp.SASLAuthBytes = out
	if resp.SASLAuthBytes == nil {
		resp.SASLAuthBytes = []byte{}
	}
	if s.phase == saslComplete && !s.expires.IsZero() {
		resp.SessionLifetimeMillis = max(0, time.Until(s.expires).Milliseconds())
	}
	return c.encode(req, resp), saslReply
}

// saslStep feeds one client token to the exchange. It returns the error to
// show the client (never revealing whether a user exists).
func (c *conn) saslStep(token []byte) ([]byte, error) {
	s := c.sasl
	if s.exchange == nil {
		// A re-authentication that asked for another mechanism.
		err := fmt.Errorf("SASL mechanism %q requested by client is not supported for re-authentication of mechanism %q",
			s.mechanism, s.prevMechanism)
		c.observeAuth(s.mechanism, err)
		return nil, err
	}
	out, done, err := s.exchange.Step(token)
	if err != nil {
		var ae *sasl.AuthError
		if !errors.As(err, &ae) {
			c.log.Warn("SASL exchange failed", "mechanism", s.mechanism, "err", err)
			err = fmt.Errorf("authentication failed during %s due to invalid credentials with SASL mechanism %s",
				s.authText(), s.mechanism)
		}
		c.observeAuth(s.mechanism, err)
		return nil, err
	}
	if !done {
		return out, nil
	}
	p := auth.User(s.exchange.Principal())
	if s.reauth && p != s.previous {
		err := fmt.Errorf("cannot change principals during re-authentication from %s: %s", s.previous, p)
		c.observeAuth(s.mechanism, err)
		return nil, err
	}
	c.observeAuth(s.mechanism, nil)
	s.principal, s.phase, s.reauth = p, saslComplete, false
	s.expires = time.Time{}
	now := time.Now()
	if d := s.reauthMax(s.mechanism); d > 0 {
		s.expires = now.Add(d)
	}
	if exp := s.exchange.Expiry(); !exp.IsZero() && (s.expires.IsZero() || exp.Before(s.expires)) {
		s.expires = exp
	}
	if !s.expires.IsZero() && s.expires.Before(now) {
		s.expires = now
	}
	s.exchange = nil
	c.principal = p
	c.log.Debug("authenticated", "mechanism", s.mechanism, "principal", p.String())
	return out, nil
}

func (s *saslConn) authText() string {
	if s.reauth {
		return "re-authentication"
	}
	return "authentication"
}

func (c *conn) observeAuth(mechanism string, err error) {
	if err != nil {
		// The client is told err; the log also says why (an
		// *sasl.AuthError's Reason, which the client must not see).
		args := []any{"mechanism", mechanism, "err", err}
		var ae *sasl.AuthError
		if errors.As(err, &ae) && ae.Reason != "" {
			args = append(args, "reason", ae.Reason)
		}
		c.log.Info("failed authentication", args...)
	}
	if obs := c.srv.cfg.OnAuthentication; obs != nil {
		reauth := c.sasl != nil && c.sasl.reauth
		obs(c.listener, mechanism, reauth, err)
	}
}

// encode frames a response to req at its version.
func (c *conn) encode(req *Request, resp kmsg.Response) []byte {
	resp.SetVersion(req.Header.APIVersion)
	return encodeResponse(req.Header.CorrelationID, resp)
}
