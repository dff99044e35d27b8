// Package sasl is the server side of Kafka's SASL mechanisms: PLAIN,
// SCRAM-SHA-256/512 and OAUTHBEARER. A mechanism runs one exchange per
// connection; the network layer carries its messages in SaslAuthenticate
// requests (or raw frames after a v0 SaslHandshake).
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

// Server is one mechanism enabled on one listener.
type Server interface {
	Name() string
	// Start begins the exchange of one connection.
	Start() Exchange
}

// Exchange is one authentication in progress.
type Exchange interface {
	// Step takes the client's next message and returns the server's
	// answer. done is true once the client is authenticated. A failed
	// authentication returns an *AuthError.
	Step(client []byte) (server []byte, done bool, err error)
	// Principal is the authenticated user name, once done.
	Principal() string
	// Expiry is when the credential stops being valid (an OAUTHBEARER
	// token's exp), zero if it does not expire; the session lifetime is
	// the earlier of this and connections.max.reauth.ms.
	Expiry() time.Time
}

// AuthError is a failed authentication. Msg is what the client is told:
// it never says whether the user exists.
type AuthError struct {
	Msg string
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

// ScramLookup finds a user's credential for a mechanism.
type ScramLookup func(mechanism, user string) (ScramCredential, bool)
