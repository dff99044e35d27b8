package sasl

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"strings"
	"time"
)

// plainUserPrefix marks a user's password among PlainLoginModule's JAAS
// options: user_alice="alice-secret".
const plainUserPrefix = "user_"

// PlainServer is SASL/PLAIN (RFC 4616) against a fixed set of users, as
// Kafka's PlainServerCallbackHandler checks the user_<name> options of the
// listener's JAAS entry.
type PlainServer struct {
	// users maps a name to the SHA-256 of its password: every check
	// compares two 32-byte digests in constant time, so neither a
	// password's length nor the position of a first wrong byte shows in
	// the timing.
	users map[string][sha256.Size]byte
}

// NewPlain returns a PLAIN server for users (name to password).
func NewPlain(users map[string]string) *PlainServer {
	s := &PlainServer{users: make(map[string][sha256.Size]byte, len(users))}
	for name, password := range users {
		s.users[name] = sha256.Sum256([]byte(password))
	}
	return s
}

// NewPlainFromJAAS returns a PLAIN server for the user_<name> options of a
// PlainLoginModule entry; its username and password options are the
// broker's own client credentials and are not users here.
func NewPlainFromJAAS(e *JAASEntry) (*PlainServer, error) {
	if e.Module != PlainLoginModule {
		return nil, fmt.Errorf("sasl: PLAIN needs %s in sasl.jaas.config, not %s", PlainLoginModule, e.Module)
	}
	users := map[string]string{}
	for k, v := range e.Options {
		if name, ok := strings.CutPrefix(k, plainUserPrefix); ok && name != "" {
			users[name] = v
		}
	}
	return NewPlain(users), nil
}

// Name is PLAIN.
func (s *PlainServer) Name() string { return Plain }

// Start begins one connection's exchange.
func (s *PlainServer) Start() Exchange { return &plainExchange{srv: s} }

// unknownUserDigest is compared against when the user does not exist, so
// that an unknown user costs the same as a known one.
var unknownUserDigest = sha256.Sum256([]byte("no such user"))

type plainExchange struct {
	srv       *PlainServer
	over      bool
	principal string
}

// Step takes the single PLAIN message, authzid NUL authcid NUL passwd.
// As in Kafka, the authzid must be empty or equal the authcid, and the
// password is checked first.
func (x *plainExchange) Step(msg []byte) ([]byte, bool, error) {
	if x.over {
		return nil, false, authFailed(msgExchangeOver, "PLAIN message after the exchange ended")
	}
	x.over = true
	parts := bytes.Split(msg, []byte{0})
	if len(parts) != 3 {
		return nil, false, authFailed("Authentication failed: malformed PLAIN message", fmt.Sprintf("PLAIN message has %d NUL-separated fields, want 3", len(parts)))
	}
	authzid, user, password := string(parts[0]), string(parts[1]), parts[2]
	if user == "" {
		return nil, false, authFailed("Authentication failed: username not specified", "empty PLAIN username")
	}
	if len(password) == 0 {
		return nil, false, authFailed("Authentication failed: password not specified", "empty PLAIN password")
	}
	want, known := x.srv.users[user]
	if !known {
		want = unknownUserDigest
	}
	got := sha256.Sum256(password)
	if subtle.ConstantTimeCompare(got[:], want[:]) != 1 || !known {
		reason := "wrong password"
		if !known {
			reason = "unknown user"
		}
		return nil, false, authFailed(msgBadCredentials, fmt.Sprintf("PLAIN user %q: %s", user, reason))
	}
	if authzid != "" && authzid != user {
		return nil, false, authFailed(msgAuthzidMismatch, fmt.Sprintf("PLAIN user %q asked for authorization id %q", user, authzid))
	}
	x.principal = user
	return nil, true, nil
}

func (x *plainExchange) Principal() string { return x.principal }

func (x *plainExchange) Expiry() time.Time { return time.Time{} }
