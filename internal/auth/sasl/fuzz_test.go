package sasl

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"strings"
	"testing"
	"time"
)

// The fuzz targets run their seeds in every `go test`; run one with
// `go test -fuzz=FuzzName ./internal/auth/sasl/` to search further.

func fuzzScramServer(f *testing.F) *ScramServer {
	cred, err := NewScramCredential(ScramSHA256, "alice-secret", []byte("salt-of-alice"), ScramMinIterations)
	if err != nil {
		f.Fatal(err)
	}
	srv, err := NewScram(ScramSHA256, func(_, user string) (ScramCredential, bool) { return cred, user == "alice" })
	if err != nil {
		f.Fatal(err)
	}
	return srv
}

func FuzzScramClientFirst(f *testing.F) {
	for _, seed := range []string{
		"n,,n=alice,r=abc",
		"n,a=alice,n=alice,r=abc",
		"n,,n=mallory,r=abc",
		"n,,n=alice,r=abc,tokenauth=true",
		"n,,n=a=2Cb=3D,r=abc,ext=v",
		"y,,n=alice,r=abc",
		"p=tls-unique,,n=alice,r=abc",
		"n,,m=x,n=alice,r=abc",
		"n,,n=alice",
		"",
		"n,,n=\xff\xfe,r=\x00",
	} {
		f.Add([]byte(seed))
	}
	srv := fuzzScramServer(f)
	f.Fuzz(func(t *testing.T, msg []byte) {
		x := srv.Start()
		answer, done, err := x.Step(msg)
		if done {
			t.Fatal("authenticated by a client-first message")
		}
		if err != nil {
			var ae *AuthError
			if !asAuthError(err, &ae) {
				t.Fatalf("error %T, want *AuthError", err)
			}
			return
		}
		if !bytes.HasPrefix(answer, []byte("r=")) || !bytes.Contains(answer, []byte(",s=")) || !bytes.Contains(answer, []byte(",i=")) {
			t.Fatalf("server-first %q", answer)
		}
	})
}

func FuzzScramExchange(f *testing.F) {
	f.Add([]byte("n,,n=alice,r=abc"), []byte("c=biws,r=abc,p=AAAA"))
	f.Add([]byte("n,,n=mallory,r=abc"), []byte("c=biws,r=abcdef,p=dGVzdA=="))
	f.Add([]byte("n,a=alice,n=alice,r=abc"), []byte("c=bixhPWFsaWNlLA==,r=abc,ext=1,p=AAAA"))
	f.Add([]byte("n,,n=alice,r=abc"), []byte(""))
	f.Add([]byte("n,,n=alice,r=abc"), []byte("c=,r=,p="))
	srv := fuzzScramServer(f)
	f.Fuzz(func(t *testing.T, first, final []byte) {
		x := srv.Start()
		if _, _, err := x.Step(first); err != nil {
			return
		}
		// The server nonce is random, so no fuzzed final message can
		// carry it: every one must fail.
		_, done, err := x.Step(final)
		if done || err == nil || x.Principal() != "" {
			t.Fatalf("client-final %q accepted", final)
		}
		if _, _, err := x.Step(final); err == nil {
			t.Fatal("step after failure accepted")
		}
	})
}

func FuzzOAuthBearerClientFirst(f *testing.F) {
	srv, err := NewOAuthBearer(context.Background(), DefaultOAuthConfig())
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(srv.Close)
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	srv.now = func() time.Time { return now }
	// {"alg":"none"} . {"sub":"alice","exp":1900000000} .
	good := "eyJhbGciOiJub25lIn0.eyJzdWIiOiJhbGljZSIsImV4cCI6MTkwMDAwMDAwMH0."
	for _, seed := range []string{
		"n,,\x01auth=Bearer " + good + "\x01\x01",
		"n,a=alice,\x01auth=Bearer " + good + "\x01traceId=1\x01\x01",
		"n,a=bob,\x01auth=Bearer " + good + "\x01\x01",
		"n,,\x01auth=Bearer eyJhbGciOiJub25lIn0.e30.\x01\x01",
		"n,,\x01auth=Bearer a.b.c\x01\x01",
		"n,,\x01auth=Basic " + good + "\x01\x01",
		"n,,\x01\x01",
		"\x01",
		"",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		x := srv.Start()
		answer, done, err := x.Step(msg)
		switch {
		case err != nil:
			return
		case done:
			if x.Principal() == "" || x.Expiry().IsZero() {
				t.Fatalf("done without principal or expiry: %q", msg)
			}
			return
		}
		var challenge map[string]string
		if err := json.Unmarshal(answer, &challenge); err != nil || challenge["status"] == "" {
			t.Fatalf("error challenge %q is not RFC 7628 JSON", answer)
		}
		if _, done, err := x.Step([]byte{1}); err == nil || done {
			t.Fatal("exchange did not fail after the error challenge")
		}
	})
}

func FuzzPlain(f *testing.F) {
	for _, seed := range []string{
		"\x00alice\x00alice-secret",
		"alice\x00alice\x00alice-secret",
		"bob\x00alice\x00alice-secret",
		"\x00alice\x00wrong",
		"\x00mallory\x00alice-secret",
		"\x00\x00",
		"",
		"\x00alice\x00alice-secret\x00",
	} {
		f.Add([]byte(seed))
	}
	srv := NewPlain(map[string]string{"alice": "alice-secret"})
	f.Fuzz(func(t *testing.T, msg []byte) {
		x := srv.Start()
		_, done, err := x.Step(msg)
		if err != nil {
			if ae := (*AuthError)(nil); !asAuthError(err, &ae) || strings.Contains(ae.Msg, "alice-secret") {
				t.Fatalf("error %v", err)
			}
			return
		}
		parts := bytes.Split(msg, []byte{0})
		if !done || len(parts) != 3 || string(parts[1]) != "alice" || string(parts[2]) != "alice-secret" ||
			(len(parts[0]) > 0 && string(parts[0]) != "alice") || x.Principal() != "alice" {
			t.Fatalf("accepted %q", msg)
		}
	})
}

func FuzzJAAS(f *testing.F) {
	for _, seed := range []string{
		`org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret";`,
		`M required p="a\"b\\c\n\101" q='x' r=bare;`,
		"M /* c */ optional // c\n k=v;",
		`M required`,
		`M required k=;`,
		`M required "k`,
		"M required /*",
		`M required a=b; N required;`,
		"",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e, err := ParseJAAS(s)
		if err != nil {
			if strings.ContainsAny(err.Error(), "\r\n") {
				t.Fatalf("multi-line error %q", err)
			}
			return
		}
		// Written back with every token quoted, the entry parses to
		// itself.
		var b strings.Builder
		b.WriteString(quoteJAAS(e.Module) + " " + e.Flag)
		for k, v := range e.Options {
			b.WriteString(" " + quoteJAAS(k) + "=" + quoteJAAS(v))
		}
		b.WriteString(";")
		again, err := ParseJAAS(b.String())
		if err != nil {
			t.Fatalf("re-parse of %q: %v", b.String(), err)
		}
		if again.Module != e.Module || again.Flag != e.Flag || !maps.Equal(again.Options, e.Options) {
			t.Fatalf("re-parse of %q differs", b.String())
		}
	})
}

func quoteJAAS(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\r", `\r`)
	return `"` + r.Replace(s) + `"`
}

func asAuthError(err error, target **AuthError) bool {
	ae, ok := err.(*AuthError)
	*target = ae
	return ok
}
