package sasl

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"fmt"
	"hash"
	"math/big"
)

// SCRAM credentials are computed here the way Kafka's ScramFormatter does
// (RFC 5802, RFC 7677), for both sides: the cluster (the controller
// deriving a UserScramCredentialRecord, the broker's ScramServer) and the
// clients (`storage format --add-scram`, `user scram set`), so that what a
// client salts and what the broker checks agree. A credential is the salt,
// the iteration count, StoredKey and ServerKey: never the password, and not
// the salted password either, with which a client could be impersonated.

// Iteration bounds of Kafka's ScramMechanism, the same for SHA-256 and
// SHA-512, and the count kafka-storage and kafka-configs use when none is
// given.
const (
	ScramMinIterations     = 4096
	ScramMaxIterations     = 16384
	ScramDefaultIterations = 4096
)

// ScramMechanism is a SCRAM mechanism with Kafka's id for it. The zero
// value is no mechanism: get one from ScramMechanismByName or
// ScramMechanismByType.
type ScramMechanism struct {
	// Name is the SASL mechanism name, ScramSHA256 or ScramSHA512.
	Name string
	// Type is Kafka's ScramMechanism type, as AlterUserScramCredentials,
	// DescribeUserScramCredentials and UserScramCredentialRecord carry it
	// (0 is UNKNOWN).
	Type int8
	hash func() hash.Hash
}

// scramMechanisms are the mechanisms Kafka knows, in type order.
var scramMechanisms = [...]ScramMechanism{
	{Name: ScramSHA256, Type: 1, hash: sha256.New},
	{Name: ScramSHA512, Type: 2, hash: sha512.New},
}

// ScramMechanismByName returns the mechanism with a SASL name
// (case-sensitive, as Kafka's ScramMechanism.forMechanismName).
func ScramMechanismByName(name string) (ScramMechanism, bool) {
	for _, m := range scramMechanisms {
		if m.Name == name {
			return m, true
		}
	}
	return ScramMechanism{}, false
}

// ScramMechanismByType returns the mechanism with a Kafka type id.
func ScramMechanismByType(typ int8) (ScramMechanism, bool) {
	for _, m := range scramMechanisms {
		if m.Type == typ {
			return m, true
		}
	}
	return ScramMechanism{}, false
}

// CheckScramIterations reports an iteration count outside Kafka's bounds.
func CheckScramIterations(iterations int) error {
	if iterations < ScramMinIterations {
		return fmt.Errorf("iterations must be at least %d, got %d", ScramMinIterations, iterations)
	}
	if iterations > ScramMaxIterations {
		return fmt.Errorf("iterations must be at most %d, got %d", ScramMaxIterations, iterations)
	}
	return nil
}

// SaltedPassword is RFC 5802's Hi(password, salt, iterations): PBKDF2 with
// the mechanism's HMAC. Like Kafka's ScramFormatter, the password is used
// as its UTF-8 bytes, without SASLprep. It is what a client sends in
// AlterUserScramCredentials.
func (m ScramMechanism) SaltedPassword(password string, salt []byte, iterations int) ([]byte, error) {
	if err := CheckScramIterations(iterations); err != nil {
		return nil, fmt.Errorf("%s: %w", m.Name, err)
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
// ServerKey = HMAC(SaltedPassword, "Server Key"). The salt is copied.
func (m ScramMechanism) Credential(salt, saltedPassword []byte, iterations int) ScramCredential {
	storedKey := m.hash()
	storedKey.Write(m.hmac(saltedPassword, "Client Key"))
	return ScramCredential{
		Salt:       append([]byte(nil), salt...),
		StoredKey:  storedKey.Sum(nil),
		ServerKey:  m.hmac(saltedPassword, "Server Key"),
		Iterations: int32(iterations),
	}
}

func (m ScramMechanism) hmac(key []byte, msg string) []byte {
	mac := hmac.New(m.hash, key)
	mac.Write([]byte(msg))
	return mac.Sum(nil)
}

// NewScramCredential computes what the cluster stores for password under
// mechanism (ScramSHA256 or ScramSHA512): SaltedPassword, then Credential.
// This is what `kafka-storage format --add-scram` computes. A nil salt is
// replaced by NewScramSalt's.
func NewScramCredential(mechanism, password string, salt []byte, iterations int) (ScramCredential, error) {
	m, ok := ScramMechanismByName(mechanism)
	if !ok {
		return ScramCredential{}, fmt.Errorf("sasl: %q is not a SCRAM mechanism (want %s or %s)", mechanism, ScramSHA256, ScramSHA512)
	}
	if salt == nil {
		var err error
		if salt, err = NewScramSalt(); err != nil {
			return ScramCredential{}, err
		}
	}
	salted, err := m.SaltedPassword(password, salt, iterations)
	if err != nil {
		return ScramCredential{}, err
	}
	return m.Credential(salt, salted, iterations), nil
}

// NewScramSalt makes a salt as Kafka's ScramFormatter.secureRandomBytes
// does, for --add-scram without a salt and for AlterUserScramCredentials
// alike (Kafka's admin client salts with it too): a random 130-bit number
// written in base 36, as ASCII bytes (up to 26 of them).
func NewScramSalt() ([]byte, error) {
	var raw [17]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return nil, fmt.Errorf("draw a SCRAM salt: %w", err)
	}
	return base36Salt(raw), nil
}

// base36Salt keeps the low 130 bits of raw and writes them in base 36.
func base36Salt(raw [17]byte) []byte {
	raw[0] &= 0x03 // 17 bytes are 136 bits; keep 130
	return []byte(new(big.Int).SetBytes(raw[:]).Text(36))
}
