package sasl

import (
	"bytes"
	"crypto/hmac"
	"encoding/base64"
	"strings"
	"testing"
)

func mustMechanism(t *testing.T, name string) ScramMechanism {
	t.Helper()
	m, ok := ScramMechanismByName(name)
	if !ok {
		t.Fatalf("no mechanism %q", name)
	}
	return m
}

func b64(t *testing.T, s string) []byte {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestRFC7677Example checks StoredKey and ServerKey against the exchange of
// RFC 7677 section 3: a server holding only them must accept the client's
// proof and answer with the RFC's server signature.
func TestRFC7677Example(t *testing.T) {
	m := mustMechanism(t, ScramSHA256)
	salt := b64(t, "W22ZaJ0SNY7soEsUEjb6gQ==")
	salted, err := m.SaltedPassword("pencil", salt, 4096)
	if err != nil {
		t.Fatal(err)
	}
	cred := m.Credential(salt, salted, 4096)
	authMessage := "n=user,r=rOprNGfwEbeRWgbNEkqO," +
		"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096," +
		"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
	proof := b64(t, "dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")

	clientSignature := m.hmac(cred.StoredKey, authMessage)
	clientKey := make([]byte, len(proof))
	for i := range proof {
		clientKey[i] = proof[i] ^ clientSignature[i]
	}
	h := m.hash()
	h.Write(clientKey)
	if !hmac.Equal(h.Sum(nil), cred.StoredKey) {
		t.Fatal("the RFC's client proof does not verify against StoredKey")
	}
	if got := m.hmac(cred.ServerKey, authMessage); !bytes.Equal(got, b64(t, "6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")) {
		t.Fatalf("server signature %x", got)
	}
	if cred.Iterations != 4096 || !bytes.Equal(cred.Salt, salt) {
		t.Fatalf("credential %d iterations, salt %x", cred.Iterations, cred.Salt)
	}
}

func TestScramMechanisms(t *testing.T) {
	for _, want := range []struct {
		name string
		typ  int8
		size int
	}{{ScramSHA256, 1, 32}, {ScramSHA512, 2, 64}} {
		byName, ok1 := ScramMechanismByName(want.name)
		byType, ok2 := ScramMechanismByType(want.typ)
		if !ok1 || !ok2 || byName.Type != want.typ || byType.Name != want.name {
			t.Fatalf("%s: lookups %v %v", want.name, byName, byType)
		}
		salted, err := byName.SaltedPassword("secret", []byte("salt"), 4096)
		if err != nil {
			t.Fatal(err)
		}
		cred := byName.Credential([]byte("salt"), salted, 4096)
		if len(salted) != want.size || len(cred.StoredKey) != want.size || len(cred.ServerKey) != want.size {
			t.Fatalf("%s: sizes %d %d %d", want.name, len(salted), len(cred.StoredKey), len(cred.ServerKey))
		}
	}
	if _, ok := ScramMechanismByName("scram-sha-256"); ok {
		t.Fatal("mechanism names are case-sensitive")
	}
	for _, typ := range []int8{0, 3, -1} {
		if _, ok := ScramMechanismByType(typ); ok {
			t.Fatalf("type %d known", typ)
		}
	}
}

func TestCheckScramIterations(t *testing.T) {
	for _, n := range []int{ScramMinIterations, ScramDefaultIterations, ScramMaxIterations} {
		if err := CheckScramIterations(n); err != nil {
			t.Fatalf("%d: %v", n, err)
		}
	}
	for n, want := range map[int]string{4095: "at least 4096, got 4095", 16385: "at most 16384, got 16385"} {
		if err := CheckScramIterations(n); err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("%d: %v, want %q", n, err, want)
		}
	}
}

// TestNewScramSalt: salts are shaped like Kafka's (a 130-bit number in
// base 36) and differ.
func TestNewScramSalt(t *testing.T) {
	seen := map[string]bool{}
	for range 20 {
		salt, err := NewScramSalt()
		if err != nil {
			t.Fatal(err)
		}
		if len(salt) < 20 || len(salt) > 26 || strings.Trim(string(salt), "0123456789abcdefghijklmnopqrstuvwxyz") != "" {
			t.Fatalf("salt %q is not a Kafka-shaped base-36 salt", salt)
		}
		if seen[string(salt)] {
			t.Fatalf("salt %q drawn twice", salt)
		}
		seen[string(salt)] = true
	}
}
