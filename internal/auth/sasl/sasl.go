// Package sasl is the server side of Kafka's SASL mechanisms: PLAIN,
// SCRAM-SHA-256/512 and OAUTHBEARER. A mechanism runs one exchange per
// connection; the network layer carries its messages in SaslAuthenticate
// requests (or raw frames after a v0 SaslHandshake).
//
// Nothing a client learns from an exchange tells it whether a user exists:
// PLAIN and SCRAM fail an unknown user and a wrong password with the same
// message, and SCRAM answers an unknown user's first message with a salt
// and iteration count that look like a real user's. Secrets (passwords,
// salted passwords, stored keys, tokens) never appear in an error or a log
// line; option values of a JAAS entry are treated as secrets too.
package sasl

import "time"

// Mechanism names, as clients send them in SaslHandshake.
const (
	Plain       = "PLAIN"
	ScramSHA256 = "SCRAM-SHA-256"
	ScramSHA512 = "SCRAM-SHA-512"
	OAuthBearer = "OAUTHBEARER"
	GSSAPI      = "GSSAPI"
)

// Server is one mechanism enabled on one listener. Start is called by many
// connections at once.
type Server interface {
	Name() string
	// Start begins the exchange of one connection.
	Start() Exchange
}

// Exchange is one authentication in progress. It is used by one
// connection's goroutine at a time; it is not safe for concurrent use.
type Exchange interface {
	// Step takes the client's next message and returns the server's
	// answer. done is true once the client is authenticated. A failed
	// authentication returns an *AuthError; the exchange is then over and
	// every later Step fails too.
	Step(client []byte) (server []byte, done bool, err error)
	// Principal is the authenticated user name, once done.
	Principal() string
	// Expiry is when the credential stops being valid (an OAUTHBEARER
	// token's exp), zero if it does not expire; the session lifetime is
	// the earlier of this and connections.max.reauth.ms.
	Expiry() time.Time
}

// AuthError is a failed authentication. Msg is what the client is told
// (the SaslAuthenticate error message, with SASL_AUTHENTICATION_FAILED): it
// never says whether the user exists. Reason is why, for the broker's log
// only; it names no secret either, but it may say "unknown user".
type AuthError struct {
	Msg    string
	Reason string
}

func (e *AuthError) Error() string { return e.Msg }

// ScramCredential is what the cluster stores for one user and one SCRAM
// mechanism (UserScramCredentialRecord): never the password.
type ScramCredential struct {
	Salt       []byte
	StoredKey  []byte
	ServerKey  []byte
	Iterations int32
}

// ScramLookup finds a user's credential for a mechanism. It is called by
// many connections at once.
type ScramLookup func(mechanism, user string) (ScramCredential, bool)

// Messages sent to clients. One message covers an unknown user and a wrong
// password, so that the answer tells nothing about which users exist.
const (
	msgBadCredentials  = "Authentication failed: the username or password is incorrect"
	msgAuthzidMismatch = "Authentication failed: the authorization id must be empty or equal the username"
	msgExchangeOver    = "Authentication failed: the exchange is already over"
)

// authFailed is an *AuthError with a client message and a log reason.
func authFailed(msg, reason string) *AuthError {
	return &AuthError{Msg: msg, Reason: reason}
}
