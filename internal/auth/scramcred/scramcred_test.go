package scramcred

import (
	"bytes"
	"crypto/hmac"
	"encoding/base64"
	"strings"
	"testing"
)

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
	salt := b64(t, "W22ZaJ0SNY7soEsUEjb6gQ==")
	salted, err := SHA256.SaltedPassword("pencil", salt, 4096)
	if err != nil {
		t.Fatal(err)
	}
	cred := SHA256.Credential(salt, salted, 4096)
	authMessage := "n=user,r=rOprNGfwEbeRWgbNEkqO," +
		"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096," +
		"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
	proof := b64(t, "dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")

	clientSignature := SHA256.hmac(cred.StoredKey, authMessage)
	clientKey := make([]byte, len(proof))
	for i := range proof {
		clientKey[i] = proof[i] ^ clientSignature[i]
	}
	h := SHA256.hash()
	h.Write(clientKey)
	if !hmac.Equal(h.Sum(nil), cred.StoredKey) {
		t.Fatal("the RFC's client proof does not verify against StoredKey")
	}
	if got := SHA256.hmac(cred.ServerKey, authMessage); !bytes.Equal(got, b64(t, "6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")) {
		t.Fatalf("server signature %x", got)
	}
	if cred.Iterations != 4096 || !bytes.Equal(cred.Salt, salt) {
		t.Fatalf("credential %d iterations, salt %x", cred.Iterations, cred.Salt)
	}
}

func TestMechanisms(t *testing.T) {
	for _, m := range []Mechanism{SHA256, SHA512} {
		byName, ok1 := MechanismByName(m.Name)
		byType, ok2 := MechanismByType(m.Type)
		if !ok1 || !ok2 || byName.Type != m.Type || byType.Name != m.Name {
			t.Fatalf("%s: lookups %v %v", m.Name, byName, byType)
		}
		cred, salted, err := m.NewCredential("secret", 4096)
		if err != nil {
			t.Fatal(err)
		}
		size := m.hash().Size()
		if len(salted) != size || len(cred.StoredKey) != size || len(cred.ServerKey) != size || len(cred.Salt) != saltSize {
			t.Fatalf("%s: sizes %d %d %d %d", m.Name, len(salted), len(cred.StoredKey), len(cred.ServerKey), len(cred.Salt))
		}
	}
	if _, ok := MechanismByName("scram-sha-256"); ok {
		t.Fatal("mechanism names are case-sensitive")
	}
	for _, typ := range []int8{0, 3, -1} {
		if _, ok := MechanismByType(typ); ok {
			t.Fatalf("type %d known", typ)
		}
	}
	if _, err := SHA256.SaltedPassword("", []byte("s"), 4096); err == nil {
		t.Fatal("empty password accepted")
	}
	for _, n := range []int{4095, 16385} {
		if _, err := SHA256.SaltedPassword("p", []byte("s"), n); err == nil {
			t.Fatalf("%d iterations accepted", n)
		}
	}
}

func TestParseSpec(t *testing.T) {
	s, err := ParseSpec("  SCRAM-SHA-256=[name=alice,password=alice-secret]  ")
	if err != nil {
		t.Fatal(err)
	}
	if s.User != "alice" || s.Mechanism.Name != "SCRAM-SHA-256" || s.Credential.Iterations != DefaultIterations || len(s.Credential.Salt) != saltSize {
		t.Fatalf("spec %+v", s)
	}
	salted, _ := SHA256.SaltedPassword("alice-secret", s.Credential.Salt, DefaultIterations)
	if want := SHA256.Credential(s.Credential.Salt, salted, DefaultIterations); !bytes.Equal(want.StoredKey, s.Credential.StoredKey) {
		t.Fatal("stored key is not derived from the password")
	}

	// Kafka's example with a given salt and salted password, quoted.
	s, err = ParseSpec(`SCRAM-SHA-512=[name=alice,iterations=8192,salt="N3E=",saltedpassword="YCE="]`)
	if err != nil {
		t.Fatal(err)
	}
	if want := SHA512.Credential([]byte("7q"), []byte("`!"), 8192); s.Credential.Iterations != 8192 ||
		!bytes.Equal(s.Credential.Salt, want.Salt) || !bytes.Equal(s.Credential.StoredKey, want.StoredKey) || !bytes.Equal(s.Credential.ServerKey, want.ServerKey) {
		t.Fatalf("spec %+v", s)
	}
	// Padding is optional, as in Java's decoder.
	if s2, err := ParseSpec(`SCRAM-SHA-512=[name=alice,iterations=8192,salt=N3E,saltedpassword=YCE]`); err != nil || !bytes.Equal(s2.Credential.StoredKey, s.Credential.StoredKey) {
		t.Fatalf("unpadded: %v", err)
	}

	for _, c := range []struct{ in, want string }{
		{"SCRAM-SHA-256", "no '='"},
		{"SCRAM-SHA-1=[name=a,password=p]", `"SCRAM-SHA-1" is not supported`},
		{"SCRAM-SHA-256=name=a,password=p", "in brackets"},
		{"SCRAM-SHA-256=[name=a,password=top,secret]", "no '='"},
		{"SCRAM-SHA-256=[name=a,password=p,colour=blue]", "1 unknown SCRAM key(s)"},
		{"SCRAM-SHA-256=[name=a,password=top,secret=x]", "1 unknown SCRAM key(s)"},
		{"SCRAM-SHA-256=[name=a,password=top,iterations=secret]", "not a number"},
		{"SCRAM-SHA-256=[password=p]", "'name' is required"},
		{"SCRAM-SHA-256=[name=,password=p]", "'name' must not be empty"},
		{"SCRAM-SHA-256=[name=a]", "one of 'password' or 'saltedpassword'"},
		{"SCRAM-SHA-256=[name=a,password=p,salt=N3E=,saltedpassword=YCE=]", "not both"},
		{"SCRAM-SHA-256=[name=a,saltedpassword=YCE=]", "needs 'salt'"},
		{"SCRAM-SHA-256=[name=a,password=p,iterations=many]", "not a number"},
		{"SCRAM-SHA-256=[name=a,password=p,iterations=100]", "at least 4096"},
		{"SCRAM-SHA-256=[name=a,password=p,iterations=20000]", "at most 16384"},
		{"SCRAM-SHA-256=[name=a,password=p,salt=%%%]", "'salt' is not base64"},
		{"SCRAM-SHA-256=[name=a,salt=N3E=,saltedpassword=s3cr3t!!]", "'saltedpassword' is not base64"},
		{"SCRAM-SHA-256=[name=a,salt=N3E=,saltedpassword=]", "'saltedpassword' is empty"},
		{"SCRAM-SHA-256=[name=a,password=]", "password is empty"},
	} {
		_, err := ParseSpec(c.in)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseSpec(%q) = %v, want an error with %q", c.in, err, c.want)
			continue
		}
		for _, secret := range []string{"top", "secret", "s3cr3t", "%%%"} {
			if strings.Contains(c.in, secret) && strings.Contains(err.Error(), secret) {
				t.Errorf("ParseSpec(%q): error repeats a value: %v", c.in, err)
			}
		}
	}
}
