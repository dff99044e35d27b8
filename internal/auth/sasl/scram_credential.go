package sasl

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"math/big"
	"strconv"
	"strings"
)

// Iteration bounds of Kafka's ScramMechanism, the same for SHA-256 and
// SHA-512, and the count kafka-storage and kafka-configs use when none is
// given.
const (
	ScramMinIterations     = 4096
	ScramMaxIterations     = 16384
	ScramDefaultIterations = 4096
)

// scramHash is the hash function of a SCRAM mechanism.
func scramHash(mechanism string) (func() hash.Hash, error) {
	switch mechanism {
	case ScramSHA256:
		return sha256.New, nil
	case ScramSHA512:
		return sha512.New, nil
	}
	return nil, fmt.Errorf("sasl: %q is not a SCRAM mechanism (want %s or %s)", mechanism, ScramSHA256, ScramSHA512)
}

// checkScramIterations applies Kafka's bounds.
func checkScramIterations(mechanism string, iterations int) error {
	if iterations < ScramMinIterations || iterations > ScramMaxIterations {
		return fmt.Errorf("sasl: %s iterations must be between %d and %d, not %d", mechanism, ScramMinIterations, ScramMaxIterations, iterations)
	}
	return nil
}

// NewScramCredential computes what the cluster stores for password: with
// SaltedPassword = Hi(password, salt, iterations) (PBKDF2-HMAC),
// StoredKey = H(HMAC(SaltedPassword, "Client Key")) and
// ServerKey = HMAC(SaltedPassword, "Server Key") (RFC 5802). This is what
// `kafka-storage format --add-scram` and AlterUserScramCredentials' client
// side compute. The password is used as its UTF-8 bytes without SASLprep,
// as Kafka's ScramFormatter does. A nil salt is replaced by a random one
// shaped like Kafka's.
func NewScramCredential(mechanism, password string, salt []byte, iterations int) (ScramCredential, error) {
	h, err := scramHash(mechanism)
	if err != nil {
		return ScramCredential{}, err
	}
	if password == "" {
		return ScramCredential{}, errors.New("sasl: SCRAM password must not be empty")
	}
	if err := checkScramIterations(mechanism, iterations); err != nil {
		return ScramCredential{}, err
	}
	if salt == nil {
		if salt, err = randomScramSalt(); err != nil {
			return ScramCredential{}, err
		}
	}
	salted, err := pbkdf2.Key(h, password, salt, iterations, h().Size())
	if err != nil {
		return ScramCredential{}, fmt.Errorf("sasl: derive %s salted password: %w", mechanism, err)
	}
	return scramCredentialFromSalted(h, salted, salt, iterations), nil
}

func scramCredentialFromSalted(h func() hash.Hash, salted, salt []byte, iterations int) ScramCredential {
	clientKey := hmacSum(h, salted, "Client Key")
	storedKey := h()
	storedKey.Write(clientKey)
	return ScramCredential{
		Salt:       salt,
		StoredKey:  storedKey.Sum(nil),
		ServerKey:  hmacSum(h, salted, "Server Key"),
		Iterations: int32(iterations),
	}
}

func hmacSum(h func() hash.Hash, key []byte, msg string) []byte {
	m := hmac.New(h, key)
	m.Write([]byte(msg))
	return m.Sum(nil)
}

// randomScramSalt makes a salt as Kafka's ScramFormatter does: a random
// 130-bit number written in base 36, as ASCII bytes.
func randomScramSalt() ([]byte, error) {
	var raw [17]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return nil, fmt.Errorf("sasl: random salt: %w", err)
	}
	return base36Salt(raw), nil
}

// base36Salt keeps the low 130 bits of raw and writes them in base 36.
func base36Salt(raw [17]byte) []byte {
	raw[0] &= 0x03 // 17 bytes are 136 bits; keep 130
	return []byte(new(big.Int).SetBytes(raw[:]).Text(36))
}

// ScramSpec is one SCRAM credential as `kafka-storage format --add-scram`
// takes it:
//
//	SCRAM-SHA-256=[name=alice,password=alice-secret]
//	SCRAM-SHA-512=[name=alice,iterations=8192,password=alice-secret]
//	SCRAM-SHA-256=[name=alice,salt=<base64>,saltedpassword=<base64>,iterations=4096]
//
// Password and SaltedPassword are secrets: String hides them.
type ScramSpec struct {
	Mechanism      string
	Name           string
	Salt           []byte // nil: a random salt is made
	Iterations     int    // ScramDefaultIterations when not given
	Password       string
	SaltedPassword []byte
}

// String names the mechanism and user, not the secrets.
func (s ScramSpec) String() string {
	return fmt.Sprintf("%s=[name=%s,iterations=%d,...]", s.Mechanism, s.Name, s.Iterations)
}

// GoString keeps %#v from printing the secrets too.
func (s ScramSpec) GoString() string { return "sasl.ScramSpec(" + s.String() + ")" }

// ParseScramSpec parses one --add-scram argument. As in Kafka's
// ScramParser: the keys are name (required), password or saltedpassword
// (one of them; saltedpassword needs salt), salt and saltedpassword in
// standard base64, iterations (default 4096, within Kafka's bounds);
// values may be in double quotes; components are split at every comma, so
// a value cannot hold one. Unlike Kafka, giving both password and
// saltedpassword is an error rather than the salted password being
// ignored, and a salted password must be as long as the hash. Errors name
// keys, never values.
func ParseScramSpec(s string) (ScramSpec, error) {
	s = strings.TrimSpace(s)
	mechanism, body, ok := strings.Cut(s, "=")
	if !ok {
		return ScramSpec{}, errors.New("sasl: SCRAM credential has no '=' after the mechanism")
	}
	h, err := scramHash(mechanism)
	if err != nil {
		return ScramSpec{}, err
	}
	if !strings.HasPrefix(body, "[") || !strings.HasSuffix(body, "]") || len(body) < 2 {
		return ScramSpec{}, fmt.Errorf("sasl: %s credential must be written [key=value,...]", mechanism)
	}
	fields := map[string]string{}
	for _, component := range strings.Split(body[1:len(body)-1], ",") {
		key, value, ok := strings.Cut(component, "=")
		if !ok {
			return ScramSpec{}, fmt.Errorf("sasl: %s credential has a component without '='", mechanism)
		}
		if len(value) >= 2 && value[0] == '"' && value[len(value)-1] == '"' {
			value = value[1 : len(value)-1]
		}
		fields[key] = value
	}
	spec := ScramSpec{Mechanism: mechanism, Iterations: ScramDefaultIterations}
	take := func(key string) (string, bool) {
		v, ok := fields[key]
		delete(fields, key)
		return v, ok
	}
	name, ok := take("name")
	if !ok || name == "" {
		return ScramSpec{}, fmt.Errorf("sasl: %s credential needs name", mechanism)
	}
	spec.Name = name
	if salt, ok := take("salt"); ok {
		if spec.Salt, err = base64.StdEncoding.DecodeString(salt); err != nil || len(spec.Salt) == 0 {
			return ScramSpec{}, fmt.Errorf("sasl: %s credential for %s: salt is not base64", mechanism, name)
		}
	}
	if iterations, ok := take("iterations"); ok {
		if spec.Iterations, err = strconv.Atoi(iterations); err != nil {
			return ScramSpec{}, fmt.Errorf("sasl: %s credential for %s: iterations is not a number", mechanism, name)
		}
	}
	if err := checkScramIterations(mechanism, spec.Iterations); err != nil {
		return ScramSpec{}, err
	}
	password, hasPassword := take("password")
	salted, hasSalted := take("saltedpassword")
	switch {
	case hasPassword && hasSalted:
		return ScramSpec{}, fmt.Errorf("sasl: %s credential for %s: give password or saltedpassword, not both", mechanism, name)
	case hasPassword:
		if password == "" {
			return ScramSpec{}, fmt.Errorf("sasl: %s credential for %s: empty password", mechanism, name)
		}
		spec.Password = password
	case hasSalted:
		if spec.Salt == nil {
			return ScramSpec{}, fmt.Errorf("sasl: %s credential for %s: saltedpassword needs salt", mechanism, name)
		}
		if spec.SaltedPassword, err = base64.StdEncoding.DecodeString(salted); err != nil {
			return ScramSpec{}, fmt.Errorf("sasl: %s credential for %s: saltedpassword is not base64", mechanism, name)
		}
		if len(spec.SaltedPassword) != h().Size() {
			return ScramSpec{}, fmt.Errorf("sasl: %s credential for %s: saltedpassword must be %d bytes", mechanism, name, h().Size())
		}
	default:
		return ScramSpec{}, fmt.Errorf("sasl: %s credential for %s needs password or saltedpassword", mechanism, name)
	}
	if len(fields) > 0 {
		// The keys are not named: a password holding ",x=y" would put
		// part of itself in the message.
		return ScramSpec{}, fmt.Errorf("sasl: %s credential for %s: %d unknown keys (allowed: name, password, saltedpassword, salt, iterations)", mechanism, name, len(fields))
	}
	return spec, nil
}

// Credential computes the stored credential of the spec.
func (s ScramSpec) Credential() (ScramCredential, error) {
	if s.SaltedPassword == nil {
		return NewScramCredential(s.Mechanism, s.Password, s.Salt, s.Iterations)
	}
	h, err := scramHash(s.Mechanism)
	if err != nil {
		return ScramCredential{}, err
	}
	if err := checkScramIterations(s.Mechanism, s.Iterations); err != nil {
		return ScramCredential{}, err
	}
	return scramCredentialFromSalted(h, s.SaltedPassword, s.Salt, s.Iterations), nil
}
