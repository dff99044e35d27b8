// Package scramcred computes SCRAM credentials the way Kafka stores them
// (RFC 5802, RFC 7677, Kafka's ScramFormatter) and parses the credential
// specs of `kafka-storage format --add-scram`. A credential is the salt,
// the iteration count, StoredKey and ServerKey: never the password, and not
// the salted password either, from which a client could be impersonated.
//
// The cluster's side (UserScramCredentialRecord, the controller's
// validation) and the clients' side (the CLI, format) both compute keys
// here, so that what a client salts and what the broker checks agree.
package scramcred

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"fmt"
	"hash"

	"gregor/internal/auth/sasl"
)

// Iteration bounds, Kafka's for both mechanisms: RFC 7677's minimum, and
// the controller's cap (ScramControlManager.MAX_ITERATIONS).
const (
	MinIterations = 4096
	MaxIterations = 16384
	// DefaultIterations is what kafka-storage's --add-scram uses when the
	// spec names none.
	DefaultIterations = 4096
)

// saltSize is the length of the salts this package draws.
const saltSize = 32

// Mechanism is one SCRAM mechanism with Kafka's wire id.
type Mechanism struct {
	// Name is the SASL mechanism name, as in SaslHandshake.
	Name string
	// Type is Kafka's ScramMechanism type, as AlterUserScramCredentials,
	// DescribeUserScramCredentials and UserScramCredentialRecord carry it
	// (0 is UNKNOWN).
	Type int8
	hash func() hash.Hash
}

// The SCRAM mechanisms Kafka knows.
var (
	SHA256 = Mechanism{Name: sasl.ScramSHA256, Type: 1, hash: sha256.New}
	SHA512 = Mechanism{Name: sasl.ScramSHA512, Type: 2, hash: sha512.New}
)

// Mechanisms lists the mechanisms in type order.
var Mechanisms = []Mechanism{SHA256, SHA512}

// MechanismByName returns the mechanism with a SASL name (case-sensitive,
// as Kafka's ScramMechanism.forMechanismName).
func MechanismByName(name string) (Mechanism, bool) {
	for _, m := range Mechanisms {
		if m.Name == name {
			return m, true
		}
	}
	return Mechanism{}, false
}

// MechanismByType returns the mechanism with a Kafka type id.
func MechanismByType(typ int8) (Mechanism, bool) {
	for _, m := range Mechanisms {
		if m.Type == typ {
			return m, true
		}
	}
	return Mechanism{}, false
}

// CheckIterations reports an iteration count outside Kafka's bounds.
func CheckIterations(iterations int) error {
	if iterations < MinIterations {
		return fmt.Errorf("iterations must be at least %d, got %d", MinIterations, iterations)
	}
	if iterations > MaxIterations {
		return fmt.Errorf("iterations must be at most %d, got %d", MaxIterations, iterations)
	}
	return nil
}

// SaltedPassword is RFC 5802's Hi(password, salt, iterations): PBKDF2 with
// the mechanism's HMAC. Like Kafka, the password is used as its UTF-8
// bytes, without SASLprep.
func (m Mechanism) SaltedPassword(password string, salt []byte, iterations int) ([]byte, error) {
	if err := CheckIterations(iterations); err != nil {
		return nil, err
	}
	if password == "" {
		return nil, fmt.Errorf("%s: the password is empty", m.Name)
	}
	out, err := pbkdf2.Key(m.hash, password, salt, iterations, m.hash().Size())
	if err != nil {
		return nil, fmt.Errorf("%s: derive the salted password: %w", m.Name, err)
	}
	return out, nil
}

// Credential derives what the cluster stores from a salted password:
// StoredKey = H(HMAC(SaltedPassword, "Client Key")) and
// ServerKey = HMAC(SaltedPassword, "Server Key").
func (m Mechanism) Credential(salt, saltedPassword []byte, iterations int32) sasl.ScramCredential {
	clientKey := m.hmac(saltedPassword, "Client Key")
	h := m.hash()
	h.Write(clientKey)
	return sasl.ScramCredential{
		Salt:       append([]byte(nil), salt...),
		StoredKey:  h.Sum(nil),
		ServerKey:  m.hmac(saltedPassword, "Server Key"),
		Iterations: iterations,
	}
}

// NewCredential salts a password with a fresh random salt and derives the
// credential: what a client computes before AlterUserScramCredentials.
// saltedPassword is what that request carries.
func (m Mechanism) NewCredential(password string, iterations int) (cred sasl.ScramCredential, saltedPassword []byte, err error) {
	salt, err := NewSalt()
	if err != nil {
		return sasl.ScramCredential{}, nil, err
	}
	saltedPassword, err = m.SaltedPassword(password, salt, iterations)
	if err != nil {
		return sasl.ScramCredential{}, nil, err
	}
	return m.Credential(salt, saltedPassword, int32(iterations)), saltedPassword, nil
}

func (m Mechanism) hmac(key []byte, msg string) []byte {
	mac := hmac.New(m.hash, key)
	mac.Write([]byte(msg))
	return mac.Sum(nil)
}

// NewSalt returns a random salt.
func NewSalt() ([]byte, error) {
	salt := make([]byte, saltSize)
	if _, err := rand.Read(salt); err != nil {
		return nil, fmt.Errorf("draw a SCRAM salt: %w", err)
	}
	return salt, nil
}
