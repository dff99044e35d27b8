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
	salt := []byte("1lv4pdnw4fwq7notcxm0yy1k7q") // Kafka's ScramParserTest salt
	salt64 := base64.StdEncoding.EncodeToString(salt)
	salted, err := pbkdf2.Key(sha256.New, "alice-secret", salt, 8192, sha256.Size)
	if err != nil {
		t.Fatal(err)
	}
	salted64 := base64.StdEncoding.EncodeToString(salted)

	type want struct {
		mechanism, user, password string
		iterations                int
		salt, saltedPassword      []byte
	}
	tests := []struct {
		in   string
		want want
	}{
		{`SCRAM-SHA-256=[name=alice,password=alice-secret]`,
			want{mechanism: ScramSHA256, user: "alice", iterations: 4096, password: "alice-secret"}},
		{` SCRAM-SHA-512=[name=alice,iterations=8192,password="alice-secret"] `,
			want{mechanism: ScramSHA512, user: "alice", iterations: 8192, password: "alice-secret"}},
		{`SCRAM-SHA-256=[name="alice",salt="` + salt64 + `",saltedpassword="` + salted64 + `",iterations=8192]`,
			want{mechanism: ScramSHA256, user: "alice", iterations: 8192, salt: salt, saltedPassword: salted}},
		{`SCRAM-SHA-256=[password=p=w,name=bob,salt=` + salt64 + `]`,
			want{mechanism: ScramSHA256, user: "bob", iterations: 4096, salt: salt, password: "p=w"}},
		// Kafka's documented example: a two-byte salted password is taken,
		// as Kafka takes it.
		{`SCRAM-SHA-512=[name=alice,iterations=8192,salt="N3E=",saltedpassword="YCE="]`,
			want{mechanism: ScramSHA512, user: "alice", iterations: 8192, salt: []byte("7q"), saltedPassword: []byte("`!")}},
		// Padding is optional, as in Java's decoder.
		{`SCRAM-SHA-512=[name=alice,iterations=8192,salt=N3E,saltedpassword=YCE]`,
			want{mechanism: ScramSHA512, user: "alice", iterations: 8192, salt: []byte("7q"), saltedPassword: []byte("`!")}},
	}
	for _, tt := range tests {
		got, err := ParseScramSpec(tt.in)
		if err != nil {
			t.Fatalf("ParseScramSpec(%q): %v", tt.in, err)
		}
		if got.Mechanism.Name != tt.want.mechanism || got.User != tt.want.user || got.Iterations != tt.want.iterations ||
			got.Password != tt.want.password || !bytes.Equal(got.Salt, tt.want.salt) || !bytes.Equal(got.SaltedPassword, tt.want.saltedPassword) {
			t.Fatalf("ParseScramSpec(%q) = %+v (password %t), want %+v", tt.in, got, got.Password != "", tt.want)
		}
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

func mustCredential(t *testing.T, spec ScramSpec) ScramCredential {
	t.Helper()
	cred, err := spec.Credential()
	if err != nil {
		t.Fatal(err)
	}
	return cred
}

func TestScramSpecCredential(t *testing.T) {
	salt := []byte("1lv4pdnw4fwq7notcxm0yy1k7q")
	salt64 := base64.StdEncoding.EncodeToString(salt)
	salted, err := pbkdf2.Key(sha256.New, "alice-secret", salt, 8192, sha256.Size)
	if err != nil {
		t.Fatal(err)
	}

	// The salted form and the password form give the same credential.
	fromSalted := mustCredential(t, mustSpec(t, `SCRAM-SHA-256=[name=alice,salt=`+salt64+`,saltedpassword=`+base64.StdEncoding.EncodeToString(salted)+`,iterations=8192]`))
	fromPassword, err := NewScramCredential(ScramSHA256, "alice-secret", salt, 8192)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(fromSalted.StoredKey, fromPassword.StoredKey) || !bytes.Equal(fromSalted.ServerKey, fromPassword.ServerKey) ||
		!bytes.Equal(fromSalted.Salt, salt) || fromSalted.Iterations != 8192 {
		t.Fatal("salted-password credential differs from the password one")
	}

	// Kafka's example: keys derived from the two given bytes.
	kafka := mustCredential(t, mustSpec(t, `SCRAM-SHA-512=[name=alice,iterations=8192,salt="N3E=",saltedpassword="YCE="]`))
	if want := mustMechanism(t, ScramSHA512).Credential([]byte("7q"), []byte("`!"), 8192); kafka.Iterations != 8192 ||
		!bytes.Equal(kafka.Salt, want.Salt) || !bytes.Equal(kafka.StoredKey, want.StoredKey) || !bytes.Equal(kafka.ServerKey, want.ServerKey) {
		t.Fatalf("credential %+v", kafka)
	}

	// Without a salt one is drawn, shaped like Kafka's, and the credential
	// authenticates a real client.
	cred := mustCredential(t, mustSpec(t, `SCRAM-SHA-512=[name=alice,password=alice-secret]`))
	if len(cred.Salt) < 20 || strings.Trim(string(cred.Salt), "0123456789abcdefghijklmnopqrstuvwxyz") != "" || cred.Iterations != 4096 {
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

func TestParseScramSpecErrors(t *testing.T) {
	const secret = "Pa55-word"
	salt64 := base64.StdEncoding.EncodeToString([]byte("salt"))
	tests := []struct{ in, want string }{
		{`SCRAM-SHA-256`, "no '='"},
		{`SCRAM-SHA-1=[name=a,password=` + secret + `]`, `"SCRAM-SHA-1" is not supported`},
		{`scram-sha-256=[name=a,password=` + secret + `]`, `"scram-sha-256" is not supported`},
		{`SCRAM-SHA-256=name=a,password=` + secret, "in brackets"},
		{`SCRAM-SHA-256=[name=a,password=` + secret, "in brackets"},
		{`SCRAM-SHA-256=[`, "in brackets"},
		{`SCRAM-SHA-256=[]`, "has no '='"},
		{`SCRAM-SHA-256=[password=` + secret + `]`, "'name' is required"},
		{`SCRAM-SHA-256=[name=,password=` + secret + `]`, "'name' must not be empty"},
		{`SCRAM-SHA-256=[name=a]`, "one of 'password' or 'saltedpassword' is required"},
		{`SCRAM-SHA-256=[name=a,password=]`, "'password' is empty"},
		{`SCRAM-SHA-256=[name=a,password=` + secret + `,iterations=4095]`, "at least 4096, got 4095"},
		{`SCRAM-SHA-256=[name=a,password=` + secret + `,iterations=100]`, "at least 4096"},
		{`SCRAM-SHA-512=[name=a,password=` + secret + `,iterations=16385]`, "at most 16384, got 16385"},
		{`SCRAM-SHA-256=[name=a,password=` + secret + `,iterations=20000]`, "at most 16384"},
		{`SCRAM-SHA-256=[name=a,password=` + secret + `,iterations=many]`, "'iterations' is not a number"},
		{`SCRAM-SHA-256=[name=a,password=x,iterations=` + secret + `]`, "'iterations' is not a number"},
		{`SCRAM-SHA-256=[name=a,password=x,salt=` + secret + `]`, "'salt' is not base64"},
		{`SCRAM-SHA-256=[name=a,password=x,salt=N3E==]`, "'salt' is not base64"},
		{`SCRAM-SHA-256=[name=a,password=x,salt=""]`, "'salt' is empty"},
		{`SCRAM-SHA-256=[name=a,saltedpassword=` + secret + `]`, "'saltedpassword' needs 'salt'"},
		{`SCRAM-SHA-256=[name=a,salt=` + salt64 + `,saltedpassword=` + secret + `]`, "'saltedpassword' is not base64"},
		{`SCRAM-SHA-256=[name=a,salt=` + salt64 + `,saltedpassword=]`, "'saltedpassword' is empty"},
		{`SCRAM-SHA-256=[name=a,password=` + secret + `,saltedpassword=` + salt64 + `]`, "not both"},
		{`SCRAM-SHA-256=[name=a,password=x,salt=N3E=,saltedpassword=YCE=]`, "not both"},
		{`SCRAM-SHA-256=[name=a,password=` + secret + `,extra=1]`, "1 unknown SCRAM key(s)"},
		{`SCRAM-SHA-256=[name=a,password=x,` + secret + `=y]`, "1 unknown SCRAM key(s)"},
		{`SCRAM-SHA-256=[name=a,password=` + secret + `,` + secret + `]`, "has no '='"},
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
	for _, in := range []string{
		`SCRAM-SHA-256=[name=alice,password=alice-secret]`,
		`SCRAM-SHA-256=[name=alice,salt=N3E=,saltedpassword=YWxpY2Utc2VjcmV0]`, // "alice-secret"
	} {
		spec := mustSpec(t, in)
		for _, s := range []string{spec.String(), fmt.Sprintf("%v %+v %#v %s", spec, spec, spec, spec)} {
			if strings.Contains(s, "alice-secret") || strings.Contains(s, "YWxpY2Utc2VjcmV0") || strings.Contains(s, "97 108 105") {
				t.Fatalf("printed spec %q shows the secret", s)
			}
		}
	}
}
