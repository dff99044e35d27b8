package sasl

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ScramSpec is one SCRAM credential as `kafka-storage format --add-scram`
// takes it:
//
//	SCRAM-SHA-256=[name=alice,password=alice-secret]
//	SCRAM-SHA-512=[name=alice,iterations=8192,password=alice-secret]
//	SCRAM-SHA-512=[name=alice,iterations=8192,salt="N3E=",saltedpassword="YCE="]
//
// Password and SaltedPassword are secrets: String hides them.
type ScramSpec struct {
	Mechanism      ScramMechanism
	User           string
	Salt           []byte // nil: Credential draws one with NewScramSalt
	Iterations     int    // ScramDefaultIterations when not given
	Password       string
	SaltedPassword []byte
}

// String names the mechanism and user, not the secrets.
func (s ScramSpec) String() string {
	return fmt.Sprintf("%s=[name=%s,iterations=%d,...]", s.Mechanism.Name, s.User, s.Iterations)
}

// GoString keeps %#v from printing the secrets too.
func (s ScramSpec) GoString() string { return "sasl.ScramSpec(" + s.String() + ")" }

// ParseScramSpec parses one --add-scram argument as Kafka's ScramParser
// does: the mechanism name is case-sensitive; the keys are name
// (required), password or saltedpassword (one of them; saltedpassword
// needs salt), salt and saltedpassword in standard base64 with or without
// padding (as Java's decoder), iterations (default 4096, within Kafka's
// bounds); a value may be in double quotes; components are split at every
// comma, so a value cannot hold one. A salted password is taken at any
// length, as Kafka does (its own example is two bytes).
//
// Where Kafka accepts what cannot work, this refuses: an empty name,
// password, salt or salted password (the broker fails an empty salt, Java
// fails an empty HMAC key), and password together with saltedpassword
// (Kafka silently drops the salted password). Kafka's errors quote values
// and unknown keys; these name neither, since either may be part of a
// password holding a comma.
func ParseScramSpec(s string) (ScramSpec, error) {
	s = strings.TrimSpace(s)
	mechName, body, ok := strings.Cut(s, "=")
	if !ok {
		return ScramSpec{}, errors.New("a SCRAM credential is MECHANISM=[name=...,password=...]: no '=' found")
	}
	mech, ok := ScramMechanismByName(mechName)
	if !ok {
		return ScramSpec{}, fmt.Errorf("SCRAM mechanism %q is not supported (want %s or %s)", mechName, ScramSHA256, ScramSHA512)
	}
	if !strings.HasPrefix(body, "[") || !strings.HasSuffix(body, "]") || len(body) < 2 {
		return ScramSpec{}, fmt.Errorf("%s: the credential must be in brackets: %s=[name=...,password=...]", mech.Name, mech.Name)
	}
	fields := map[string]string{}
	for _, component := range strings.Split(body[1:len(body)-1], ",") {
		key, value, ok := strings.Cut(component, "=")
		if !ok {
			return ScramSpec{}, fmt.Errorf("%s: a component of the credential has no '=' (values cannot hold commas)", mech.Name)
		}
		if len(value) >= 2 && value[0] == '"' && value[len(value)-1] == '"' {
			value = value[1 : len(value)-1]
		}
		fields[key] = value
	}
	take := func(key string) (string, bool) {
		v, ok := fields[key]
		delete(fields, key)
		return v, ok
	}
	user, hasUser := take("name")
	saltText, hasSalt := take("salt")
	iterText, hasIter := take("iterations")
	password, hasPassword := take("password")
	saltedText, hasSalted := take("saltedpassword")
	if len(fields) > 0 {
		return ScramSpec{}, fmt.Errorf("%s: %d unknown SCRAM key(s) (want name, password, saltedpassword, salt, iterations)", mech.Name, len(fields))
	}
	switch {
	case !hasUser:
		return ScramSpec{}, fmt.Errorf("%s: 'name' is required", mech.Name)
	case user == "":
		return ScramSpec{}, fmt.Errorf("%s: 'name' must not be empty", mech.Name)
	}
	spec := ScramSpec{Mechanism: mech, User: user, Iterations: ScramDefaultIterations}
	fail := func(reason string) (ScramSpec, error) {
		return ScramSpec{}, fmt.Errorf("%s for user %q: %s", mech.Name, user, reason)
	}
	switch {
	case hasPassword && hasSalted:
		return fail("give 'password' or 'saltedpassword', not both")
	case !hasPassword && !hasSalted:
		return fail("one of 'password' or 'saltedpassword' is required")
	case hasSalted && !hasSalt:
		return fail("'saltedpassword' needs 'salt'")
	case hasPassword && password == "":
		return fail("'password' is empty")
	}
	if hasIter {
		n, err := strconv.Atoi(iterText)
		if err != nil {
			return fail("'iterations' is not a number")
		}
		spec.Iterations = n
	}
	if err := CheckScramIterations(spec.Iterations); err != nil {
		return fail(err.Error())
	}
	var err error
	if hasSalt {
		if spec.Salt, err = decodeScramBytes("salt", saltText); err != nil {
			return fail(err.Error())
		}
	}
	if hasSalted {
		if spec.SaltedPassword, err = decodeScramBytes("saltedpassword", saltedText); err != nil {
			return fail(err.Error())
		}
	} else {
		spec.Password = password
	}
	return spec, nil
}

// decodeScramBytes reads the value of key, non-empty standard base64, as
// Java's Base64.getDecoder does: padding may be left out, but when present
// it must be complete. Its errors do not repeat the value.
func decodeScramBytes(key, value string) ([]byte, error) {
	decode := base64.RawStdEncoding.DecodeString
	if strings.HasSuffix(value, "=") {
		decode = base64.StdEncoding.DecodeString
	}
	b, err := decode(value)
	switch {
	case err != nil:
		return nil, fmt.Errorf("'%s' is not base64", key)
	case len(b) == 0:
		return nil, fmt.Errorf("'%s' is empty", key)
	}
	return b, nil
}

// Credential computes the stored credential of a spec ParseScramSpec
// returned, drawing a salt if it has none.
func (s ScramSpec) Credential() (ScramCredential, error) {
	if s.SaltedPassword == nil {
		return NewScramCredential(s.Mechanism.Name, s.Password, s.Salt, s.Iterations)
	}
	if err := CheckScramIterations(s.Iterations); err != nil {
		return ScramCredential{}, fmt.Errorf("%s: %w", s.Mechanism.Name, err)
	}
	return s.Mechanism.Credential(s.Salt, s.SaltedPassword, s.Iterations), nil
}
