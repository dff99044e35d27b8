package sasl

import (
	"bytes"
	"crypto/pbkdf2"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/sasl/scram"
)

func TestParseScramSpec(t *testing.T) {
	salt := []byte("1lv4pdnw4fwq7notcxm0yy1k7q")
	salt64 := base64.StdEncoding.EncodeToString(salt)
	salted, err := pbkdf2.Key(sha256.New, "alice-secret", salt, 8192, sha256.Size)
	if err != nil {
		t.Fatal(err)
	}
	salted64 := base64.StdEncoding.EncodeToString(salted)

	tests := []struct {
		in   string
		want ScramSpec
	}{
		{`SCRAM-SHA-256=[name=alice,password=alice-secret]`,
			ScramSpec{Mechanism: ScramSHA256, Name: "alice", Iterations: 4096, Password: "alice-secret"}},
		{` SCRAM-SHA-512=[name=alice,iterations=8192,password="alice-secret"] `,
			ScramSpec{Mechanism: ScramSHA512, Name: "alice", Iterations: 8192, Password: "alice-secret"}},
		{`SCRAM-SHA-256=[name="alice",salt="` + salt64 + `",saltedpassword="` + salted64 + `",iterations=8192]`,
			ScramSpec{Mechanism: ScramSHA256, Name: "alice", Iterations: 8192, Salt: salt, SaltedPassword: salted}},
		{`SCRAM-SHA-256=[password=p=w,name=bob,salt=` + salt64 + `]`,
			ScramSpec{Mechanism: ScramSHA256, Name: "bob", Iterations: 4096, Salt: salt, Password: "p=w"}},
	}
	for _, tt := range tests {
		got, err := ParseScramSpec(tt.in)
		if err != nil {
			t.Fatalf("ParseScramSpec(%q): %v", tt.in, err)
		}
		if got.Mechanism != tt.want.Mechanism || got.Name != tt.want.Name || got.Iterations != tt.want.Iterations ||
			got.Password != tt.want.Password || !bytes.Equal(got.Salt, tt.want.Salt) || !bytes.Equal(got.SaltedPassword, tt.want.SaltedPassword) {
			t.Fatalf("ParseScramSpec(%q) = %#v, want %#v", tt.in, got, tt.want)
		}
	}

	// The salted form and the password form give the same credential,
	// and it authenticates a real client.
	fromSalted, err := mustSpec(t, `SCRAM-SHA-256=[name=alice,salt=`+salt64+`,saltedpassword=`+salted64+`,iterations=8192]`).Credential()
	if err != nil {
		t.Fatal(err)
	}
	fromPassword, err := NewScramCredential(ScramSHA256, "alice-secret", salt, 8192)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(fromSalted.StoredKey, fromPassword.StoredKey) || !bytes.Equal(fromSalted.ServerKey, fromPassword.ServerKey) {
		t.Fatal("salted-password credential differs from the password one")
	}
	spec := mustSpec(t, `SCRAM-SHA-512=[name=alice,password=alice-secret]`)
	cred, err := spec.Credential()
	if err != nil {
		t.Fatal(err)
	}
	if len(cred.Salt) == 0 || cred.Iterations != 4096 {
		t.Fatalf("random salt %q iterations %d", cred.Salt, cred.Iterations)
	}
	srv, err := NewScram(ScramSHA512, func(_, user string) (ScramCredential, bool) { return cred, user == "alice" })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := authenticate(t, srv, scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism()); err != nil {
		t.Fatal(err)
	}
}

func mustSpec(t *testing.T, s string) ScramSpec {
	t.Helper()
	spec, err := ParseScramSpec(s)
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

func TestParseScramSpecErrors(t *testing.T) {
	const secret = "Pa55-word"
	salt64 := base64.StdEncoding.EncodeToString([]byte("salt"))
	tests := []struct{ in, want string }{
		{`SCRAM-SHA-256`, "no '='"},
		{`SCRAM-SHA-1=[name=a,password=` + secret + `]`, "not a SCRAM mechanism"},
		{`SCRAM-SHA-256=name=a,password=` + secret, "[key=value,...]"},
		{`SCRAM-SHA-256=[name=a,password=` + secret, "[key=value,...]"},
		{`SCRAM-SHA-256=[password=` + secret + `]`, "needs name"},
		{`SCRAM-SHA-256=[name=a]`, "needs password or saltedpassword"},
		{`SCRAM-SHA-256=[name=a,password=]`, "empty password"},
		{`SCRAM-SHA-256=[name=a,password=` + secret + `,iterations=4095]`, "between 4096 and 16384"},
		{`SCRAM-SHA-512=[name=a,password=` + secret + `,iterations=16385]`, "between 4096 and 16384"},
		{`SCRAM-SHA-256=[name=a,password=` + secret + `,iterations=many]`, "not a number"},
		{`SCRAM-SHA-256=[name=a,password=` + secret + `,salt=%%%]`, "salt is not base64"},
		{`SCRAM-SHA-256=[name=a,saltedpassword=` + secret + `]`, "needs salt"},
		{`SCRAM-SHA-256=[name=a,salt=` + salt64 + `,saltedpassword=` + secret + `]`, "not base64"},
		{`SCRAM-SHA-256=[name=a,salt=` + salt64 + `,saltedpassword=` + salt64 + `]`, "must be 32 bytes"},
		{`SCRAM-SHA-256=[name=a,password=` + secret + `,saltedpassword=` + salt64 + `]`, "not both"},
		{`SCRAM-SHA-256=[name=a,password=` + secret + `,extra=1]`, "1 unknown keys"},
		{`SCRAM-SHA-256=[name=a,password=` + secret + `,` + secret + `]`, "component without '='"},
		{`SCRAM-SHA-256=[name=a,password=x,` + secret + `=y]`, "1 unknown keys"},
	}
	for _, tt := range tests {
		_, err := ParseScramSpec(tt.in)
		if err == nil {
			t.Fatalf("ParseScramSpec(%q) succeeded", tt.in)
		}
		if !strings.Contains(err.Error(), tt.want) {
			t.Fatalf("ParseScramSpec(%q) error %q, want it to contain %q", tt.in, err, tt.want)
		}
		if strings.Contains(err.Error(), secret) {
			t.Fatalf("ParseScramSpec(%q) error %q names the secret", tt.in, err)
		}
	}
}

func TestScramSpecPrintingHidesSecrets(t *testing.T) {
	spec := mustSpec(t, `SCRAM-SHA-256=[name=alice,password=alice-secret]`)
	for _, s := range []string{spec.String(), fmt.Sprintf("%v %+v %#v %s", spec, spec, spec, spec)} {
		if strings.Contains(s, "alice-secret") {
			t.Fatalf("printed spec %q shows the password", s)
		}
	}
}
