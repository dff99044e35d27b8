package scramcred

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"gregor/internal/auth/sasl"
)

// Spec is one parsed --add-scram argument: a user's credential for one
// mechanism.
type Spec struct {
	Mechanism  Mechanism
	User       string
	Credential sasl.ScramCredential
}

// ParseSpec parses a credential in kafka-storage's --add-scram syntax and
// derives the credential:
//
//	SCRAM-SHA-256=[name=alice,password=alice-secret]
//	SCRAM-SHA-512=[name=alice,iterations=8192,salt="N3E=",saltedpassword="YCE="]
//
// Keys are name (required), password or saltedpassword (one of them; a
// salted password needs salt), salt (base64, random if absent) and
// iterations (default 4096, within 4096-16384). A value may be in double
// quotes; none may hold a comma. Errors never repeat a value or an unknown
// key, since either may be part of a password.
func ParseSpec(arg string) (Spec, error) {
	arg = strings.TrimSpace(arg)
	mechName, body, ok := strings.Cut(arg, "=")
	if !ok {
		return Spec{}, errors.New("a SCRAM credential is MECHANISM=[name=...,password=...]: no '=' found")
	}
	mech, ok := MechanismByName(mechName)
	if !ok {
		return Spec{}, fmt.Errorf("SCRAM mechanism %q is not supported (want %s or %s)", mechName, SHA256.Name, SHA512.Name)
	}
	if !strings.HasPrefix(body, "[") || !strings.HasSuffix(body, "]") {
		return Spec{}, fmt.Errorf("%s: the credential must be in brackets: %s=[name=...,password=...]", mech.Name, mech.Name)
	}
	fields := map[string]string{}
	for _, part := range strings.Split(body[1:len(body)-1], ",") {
		key, value, ok := strings.Cut(part, "=")
		if !ok {
			return Spec{}, fmt.Errorf("%s: a component of the credential has no '=' (values cannot hold commas)", mech.Name)
		}
		if len(value) >= 2 && strings.HasPrefix(value, `"`) && strings.HasSuffix(value, `"`) {
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
		// Not named: a password holding ",x=y" would put part of itself
		// in the message.
		return Spec{}, fmt.Errorf("%s: %d unknown SCRAM key(s) (want name, password, saltedpassword, salt, iterations)", mech.Name, len(fields))
	}
	switch {
	case !hasUser:
		return Spec{}, fmt.Errorf("%s: 'name' is required", mech.Name)
	case user == "":
		return Spec{}, fmt.Errorf("%s: 'name' must not be empty", mech.Name)
	case hasPassword && hasSalted:
		return Spec{}, fmt.Errorf("%s for user %q: give 'password' or 'saltedpassword', not both", mech.Name, user)
	case !hasPassword && !hasSalted:
		return Spec{}, fmt.Errorf("%s for user %q: one of 'password' or 'saltedpassword' is required", mech.Name, user)
	case hasSalted && !hasSalt:
		return Spec{}, fmt.Errorf("%s for user %q: 'saltedpassword' needs 'salt'", mech.Name, user)
	}
	iterations := DefaultIterations
	if hasIter {
		n, err := strconv.Atoi(iterText)
		if err != nil {
			return Spec{}, fmt.Errorf("%s for user %q: 'iterations' is not a number", mech.Name, user)
		}
		iterations = n
	}
	if err := CheckIterations(iterations); err != nil {
		return Spec{}, fmt.Errorf("%s for user %q: %w", mech.Name, user, err)
	}
	var salt []byte
	if hasSalt {
		var err error
		if salt, err = decodeBase64(saltText); err != nil {
			return Spec{}, fmt.Errorf("%s for user %q: 'salt' is not base64", mech.Name, user)
		}
	} else {
		var err error
		if salt, err = NewSalt(); err != nil {
			return Spec{}, err
		}
	}
	var salted []byte
	if hasSalted {
		var err error
		if salted, err = decodeBase64(saltedText); err != nil {
			return Spec{}, fmt.Errorf("%s for user %q: 'saltedpassword' is not base64", mech.Name, user)
		}
		if len(salted) == 0 {
			return Spec{}, fmt.Errorf("%s for user %q: 'saltedpassword' is empty", mech.Name, user)
		}
	} else {
		var err error
		if salted, err = mech.SaltedPassword(password, salt, iterations); err != nil {
			return Spec{}, fmt.Errorf("user %q: %w", user, err)
		}
	}
	return Spec{Mechanism: mech, User: user, Credential: mech.Credential(salt, salted, int32(iterations))}, nil
}

// decodeBase64 reads standard base64 with or without padding, as Java's
// Base64 decoder does.
func decodeBase64(s string) ([]byte, error) {
	return base64.RawStdEncoding.DecodeString(strings.TrimRight(s, "="))
}
