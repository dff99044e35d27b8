package console

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// loginError is a login the broker refused; its message is the broker's
// (SASL_AUTHENTICATION_FAILED: ...), which never says whether the user
// exists.
type loginError struct{ err error }

func (e *loginError) Error() string { return "authentication failed: " + e.err.Error() }
func (e *loginError) Unwrap() error { return e.err }

// maxLoginBody bounds a login request's body.
const maxLoginBody = 8 << 10

// sessionView is /api/session: whether the visitor must log in, and how.
type sessionView struct {
	Login      bool     `json:"login"` // the listener requires SASL
	User       string   `json:"user,omitempty"`
	Listener   string   `json:"listener,omitempty"`
	Mechanisms []string `json:"mechanisms,omitempty"`
	// Actions says whether the console may create, delete, produce and
	// alter configs here (actions.go); ActionsDisabled says why not.
	Actions         bool   `json:"actions"`
	ActionsDisabled string `json:"actionsDisabled,omitempty"`
}

func (c *Console) session(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	b := c.broker
	c.mu.Unlock()
	v := sessionView{Login: b.SASL}
	v.Actions, v.ActionsDisabled = c.actionsAllowed()
	if b.SASL {
		v.Listener, v.Mechanisms = b.Listener, b.Mechanisms
		if ss, ok := c.sessions.lookup(time.Now(), sessionID(r)); ok {
			v.User = ss.user
		}
	}
	c.writeJSON(w, r, v, nil)
}

type loginRequest struct {
	User      string `json:"user"`
	Password  string `json:"password"`
	Mechanism string `json:"mechanism"`
}

type loginAnswer struct {
	User string `json:"user"`
}

// login authenticates a visitor to the broker listener with their own
// credentials and, if the broker accepts them, starts a session whose
// client is the one that authenticated. The password goes to the broker
// only; it is neither logged nor kept beyond the client's SASL mechanism
// (which needs it to open further connections).
func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), apiTimeout)
	defer cancel()
	user, err := c.startSession(ctx, w, r)
	if err != nil {
		c.writeJSON(w, r, nil, err)
		return
	}
	c.writeJSON(w, r, loginAnswer{User: user}, nil)
}

func (c *Console) startSession(ctx context.Context, w http.ResponseWriter, r *http.Request) (string, error) {
	c.mu.Lock()
	b := c.broker
	c.mu.Unlock()
	switch {
	case b.Err != nil:
		return "", &statusError{http.StatusServiceUnavailable, b.Err}
	case b.Addr == "":
		return "", errNoBroker
	case !b.SASL:
		return "", badRequest("the broker listener %s requires no login", b.Listener)
	}
	// Only a script of this origin can send JSON without a CORS
	// preflight: another site's form cannot post a login.
	if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct != "application/json" {
		return "", &statusError{http.StatusUnsupportedMediaType, errors.New("a login is a JSON body (Content-Type: application/json)")}
	}
	var req loginRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxLoginBody)).Decode(&req); err != nil {
		return "", badRequest("a login is {\"user\", \"password\", \"mechanism\"}")
	}
	if strings.TrimSpace(req.User) == "" {
		return "", badRequest("no user name")
	}
	if !slices.Contains(b.Mechanisms, req.Mechanism) {
		return "", badRequest("mechanism %q is not one the listener %s enables for the console (%s)", req.Mechanism, b.Listener, strings.Join(b.Mechanisms, ", "))
	}
	cl, err := c.authenticate(ctx, b, req.User, req.Password, req.Mechanism)
	if err != nil {
		var le *loginError
		if errors.As(err, &le) {
			c.logger.Info("console login refused", "user", req.User, "mechanism", req.Mechanism, "remote", r.RemoteAddr, "err", err)
			return "", &statusError{http.StatusUnauthorized, err}
		}
		return "", fmt.Errorf("log in to %s: %w", b.Addr, err)
	}
	id, err := c.sessions.create(time.Now(), req.User, req.Mechanism, cl)
	if err != nil {
		cl.Close()
		return "", err
	}
	// A visitor logging in again (as someone else, say) ends the old
	// session rather than leaving its client open until it expires.
	if old := sessionID(r); old != "" {
		c.sessions.remove(old)
	}
	http.SetCookie(w, sessionCookieFor(id, r.TLS != nil))
	c.logger.Info("console login", "user", req.User, "mechanism", req.Mechanism, "remote", r.RemoteAddr)
	return req.User, nil
}

// logout ends the visitor's session and closes its client.
func (c *Console) logout(w http.ResponseWriter, r *http.Request) {
	if id := sessionID(r); id != "" {
		c.sessions.remove(id)
	}
	http.SetCookie(w, clearedSessionCookie(r.TLS != nil))
	c.writeJSON(w, r, struct{}{}, nil)
}

// authenticateSASL makes a client that authenticates to the listener as
// the visitor, and proves the login with a request: a broker answers wrong
// credentials at once with SASL_AUTHENTICATION_FAILED, which becomes a
// *loginError.
func authenticateSASL(ctx context.Context, b Broker, user, password, mechanism string) (*kgo.Client, error) {
	var m sasl.Mechanism
	switch mechanism {
	case "PLAIN":
		m = plain.Auth{User: user, Pass: password}.AsMechanism()
	case "SCRAM-SHA-256":
		m = scram.Auth{User: user, Pass: password}.AsSha256Mechanism()
	case "SCRAM-SHA-512":
		m = scram.Auth{User: user, Pass: password}.AsSha512Mechanism()
	default:
		return nil, fmt.Errorf("mechanism %q is not supported", mechanism)
	}
	cl, err := kgo.NewClient(clientOpts(b, kgo.SASL(m))...)
	if err != nil {
		return nil, err
	}
	if err := cl.Ping(ctx); err != nil {
		cl.Close()
		if errors.Is(err, kerr.SaslAuthenticationFailed) || errors.Is(err, kerr.UnsupportedSaslMechanism) || errors.Is(err, kerr.IllegalSaslState) {
			return nil, &loginError{err}
		}
		return nil, err
	}
	return cl, nil
}
