package sasl

import (
	"bytes"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/sha512"
	"encoding/base64"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/sasl/scram"
	xdgscram "github.com/xdg-go/scram"
)

// scramUsers is a lookup over credentials made from passwords.
func scramUsers(t *testing.T, mechanism string, passwords map[string]string) ScramLookup {
	t.Helper()
	creds := map[string]ScramCredential{}
	for user, pw := range passwords {
		c, err := NewScramCredential(mechanism, pw, nil, 8192)
		if err != nil {
			t.Fatal(err)
		}
		creds[user] = c
	}
	return func(mech, user string) (ScramCredential, bool) {
		if mech != mechanism {
			return ScramCredential{}, false
		}
		c, ok := creds[user]
		return c, ok
	}
}

func newTestScram(t *testing.T, mechanism string) *ScramServer {
	t.Helper()
	srv, err := NewScram(mechanism, scramUsers(t, mechanism, map[string]string{
		"alice":   "alice-secret",
		"we,ird=": "weird-secret",
	}))
	if err != nil {
		t.Fatal(err)
	}
	return srv
}

func TestScramFranzGo(t *testing.T) {
	for _, mechanism := range []string{ScramSHA256, ScramSHA512} {
		t.Run(mechanism, func(t *testing.T) {
			srv := newTestScram(t, mechanism)
			if srv.Name() != mechanism {
				t.Fatalf("Name() = %q", srv.Name())
			}
			for _, a := range []scram.Auth{
				{User: "alice", Pass: "alice-secret"},
				{Zid: "alice", User: "alice", Pass: "alice-secret"},
				{User: "we,ird=", Pass: "weird-secret"},
			} {
				mech := a.AsSha256Mechanism()
				if mechanism == ScramSHA512 {
					mech = a.AsSha512Mechanism()
				}
				x, err := authenticate(t, srv, mech)
				if err != nil {
					t.Fatalf("%s: %v", a.User, err)
				}
				if x.Principal() != a.User || !x.Expiry().IsZero() {
					t.Fatalf("principal %q expiry %v", x.Principal(), x.Expiry())
				}
			}
		})
	}
}

func TestScramFailures(t *testing.T) {
	srv := newTestScram(t, ScramSHA256)
	tests := []struct {
		name string
		auth scram.Auth
		want string
	}{
		{"wrong password", scram.Auth{User: "alice", Pass: "wrong"}, msgBadCredentials},
		{"unknown user", scram.Auth{User: "mallory", Pass: "alice-secret"}, msgBadCredentials},
		{"authzid of another user", scram.Auth{Zid: "admin", User: "alice", Pass: "alice-secret"}, msgAuthzidMismatch},
		{"delegation token", scram.Auth{User: "tokenid", Pass: "hmac", IsToken: true}, "Authentication failed: delegation token authentication is not supported"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x, err := authenticate(t, srv, tt.auth.AsSha256Mechanism())
			ae := authError(t, err, tt.want)
			if strings.Contains(ae.Msg+ae.Reason, "secret") {
				t.Fatalf("error %q / %q names a password", ae.Msg, ae.Reason)
			}
			if x.Principal() != "" {
				t.Fatalf("principal %q after a failure", x.Principal())
			}
		})
	}
	// SHA-512 credentials are not SHA-256 ones.
	srv512 := newTestScram(t, ScramSHA512)
	_, err := authenticate(t, srv512, scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha256Mechanism())
	if err == nil {
		t.Fatal("a SHA-256 client authenticated against SCRAM-SHA-512")
	}
}

// serverFirst sends a client-first message and returns the server-first.
func serverFirst(t *testing.T, x Exchange, user string) (nonce, salt string, iterations string) {
	t.Helper()
	out, done, err := x.Step([]byte("n,,n=" + user + ",r=clientnonce"))
	if err != nil || done {
		t.Fatalf("client-first for %q: done %v err %v", user, done, err)
	}
	fields := strings.Split(string(out), ",")
	if len(fields) != 3 || !strings.HasPrefix(fields[0], "r=clientnonce") || !strings.HasPrefix(fields[1], "s=") || !strings.HasPrefix(fields[2], "i=") {
		t.Fatalf("server-first %q", out)
	}
	return fields[0][2:], fields[1][2:], fields[2][2:]
}

// TestScramUnknownUserLooksReal checks that a client cannot tell an unknown
// user from a known one by the server-first message: the same shape of
// salt, a default iteration count, and the same salt when asked again.
func TestScramUnknownUserLooksReal(t *testing.T) {
	c, err := NewScramCredential(ScramSHA256, "pw", nil, ScramDefaultIterations)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := NewScram(ScramSHA256, func(_, user string) (ScramCredential, bool) { return c, user == "alice" })
	if err != nil {
		t.Fatal(err)
	}
	_, realSalt, realIters := serverFirst(t, srv.Start(), "alice")
	_, fakeSalt, fakeIters := serverFirst(t, srv.Start(), "mallory")
	_, fakeSalt2, _ := serverFirst(t, srv.Start(), "mallory")
	_, otherSalt, _ := serverFirst(t, srv.Start(), "trudy")
	if realIters != fakeIters {
		t.Fatalf("iterations %s for a user, %s for an unknown one", realIters, fakeIters)
	}
	if fakeSalt != fakeSalt2 {
		t.Fatal("an unknown user's salt changes between attempts")
	}
	if fakeSalt == otherSalt {
		t.Fatal("two unknown users share a salt")
	}
	for _, s := range []string{realSalt, fakeSalt} {
		raw, err := base64.StdEncoding.DecodeString(s)
		if err != nil || len(raw) < 20 || len(raw) > 26 || strings.Trim(string(raw), "0123456789abcdefghijklmnopqrstuvwxyz") != "" {
			t.Fatalf("salt %q is not a Kafka-shaped base-36 salt", raw)
		}
	}
}

// finishScram completes an exchange as a client with password pw, given the
// client-first it sent, and returns the client-final it computed.
func clientFinalFor(t *testing.T, mechanism, user, pw, clientFirstBare, serverFirst string) string {
	t.Helper()
	h := xdgscram.SHA256
	if mechanism == ScramSHA512 {
		h = xdgscram.SHA512
	}
	client, err := h.NewClientUnprepped(user, pw, "")
	if err != nil {
		t.Fatal(err)
	}
	conv := client.WithNonceGenerator(func() string { return "clientnonce" }).NewConversation()
	first, err := conv.Step("")
	if err != nil || first != "n,,"+clientFirstBare {
		t.Fatalf("client-first %q, err %v", first, err)
	}
	final, err := conv.Step(serverFirst)
	if err != nil {
		t.Fatal(err)
	}
	return final
}

func TestScramReplayAndForgery(t *testing.T) {
	srv := newTestScram(t, ScramSHA256)
	first := "n,,n=alice,r=clientnonce"

	// A genuine exchange, recording the client-final.
	x := srv.Start()
	s1, _, err := x.Step([]byte(first))
	if err != nil {
		t.Fatal(err)
	}
	final := clientFinalFor(t, ScramSHA256, "alice", "alice-secret", "n=alice,r=clientnonce", string(s1))
	s2, done, err := x.Step([]byte(final))
	if err != nil || !done || !strings.HasPrefix(string(s2), "v=") {
		t.Fatalf("genuine exchange: %q done %v err %v", s2, done, err)
	}

	// Replayed: same client-first, the old client-final. The server
	// nonce differs, so the final message is not this exchange's.
	x = srv.Start()
	if _, _, err := x.Step([]byte(first)); err != nil {
		t.Fatal(err)
	}
	_, _, err = x.Step([]byte(final))
	authError(t, err, msgBadCredentials)

	// Forged: this exchange's nonce, a proof with one bit flipped.
	x = srv.Start()
	s1, _, err = x.Step([]byte(first))
	if err != nil {
		t.Fatal(err)
	}
	final = clientFinalFor(t, ScramSHA256, "alice", "alice-secret", "n=alice,r=clientnonce", string(s1))
	i := strings.LastIndex(final, ",p=")
	proof, _ := base64.StdEncoding.DecodeString(final[i+3:])
	proof[0] ^= 1
	forged := final[:i] + ",p=" + base64.StdEncoding.EncodeToString(proof)
	_, _, err = x.Step([]byte(forged))
	authError(t, err, msgBadCredentials)
	if x.Principal() != "" {
		t.Fatal("principal after a forged proof")
	}

	// A proof for an unknown user fails like a wrong password even when
	// computed with the password the decoy would need (there is none).
	x = srv.Start()
	s1, _, err = x.Step([]byte("n,,n=mallory,r=clientnonce"))
	if err != nil {
		t.Fatal(err)
	}
	final = clientFinalFor(t, ScramSHA256, "mallory", "anything", "n=mallory,r=clientnonce", string(s1))
	_, _, err = x.Step([]byte(final))
	ae := authError(t, err, msgBadCredentials)
	if !strings.Contains(ae.Reason, "unknown user") {
		t.Fatalf("reason %q", ae.Reason)
	}
}

func TestScramMalformed(t *testing.T) {
	srv := newTestScram(t, ScramSHA256)
	firsts := []string{
		"",
		"n,",
		"n,,",
		"y,,n=alice,r=abc",
		"p=tls-unique,,n=alice,r=abc",
		"n,x=y,n=alice,r=abc",
		"n,a=,n=alice,r=abc",
		"n,a=bad=esc,n=alice,r=abc",
		"n,,m=ext,n=alice,r=abc",
		"n,,n=,r=abc",
		"n,,n=al=ice,r=abc",
		"n,,n=alice",
		"n,,n=alice,r=",
		"n,,n=alice,x=abc",
		"n,,n=alice,r=a b",
		"n,,n=alice,r=abc,=x",
		"n,,n=alice,r=abc,ext",
		"n,,n=alice,r=abc,e1=x",
		"n,,n=alice,r=abc,ext=",
		"n,,n=al\x00ice,r=abc",
		"n,,n=\xff,r=abc",
	}
	for _, first := range firsts {
		_, done, err := srv.Start().Step([]byte(first))
		if done || err == nil {
			t.Fatalf("client-first %q accepted", first)
		}
		authError(t, err, "")
	}
	// Extensions other than tokenauth are ignored, as in Kafka.
	if _, _, err := srv.Start().Step([]byte("n,,n=alice,r=abc,foo=bar,tokenauth=false")); err != nil {
		t.Fatalf("extension: %v", err)
	}

	finals := []string{
		"",
		"c=biws",
		"c=biws,r=abc",
		"c=biws,r=abc,p=",
		"c=biws,r=abc,p=!!!!",
		"c=bi ws,r=abc,p=AAAA",
		"r=abc,c=biws,p=AAAA",
		"c=biws,r=abc,x,p=AAAA",
		"c=biws,r=abc,p=AAAA", // well formed, wrong nonce and proof
	}
	for _, final := range finals {
		x := srv.Start()
		if _, _, err := x.Step([]byte("n,,n=alice,r=abc")); err != nil {
			t.Fatal(err)
		}
		_, done, err := x.Step([]byte(final))
		if done || err == nil {
			t.Fatalf("client-final %q accepted", final)
		}
		authError(t, err, msgBadCredentials)
		_, _, err = x.Step([]byte(final))
		authError(t, err, msgExchangeOver)
	}
}

func TestScramUnusableStoredCredential(t *testing.T) {
	good, err := NewScramCredential(ScramSHA256, "pw", nil, ScramMinIterations)
	if err != nil {
		t.Fatal(err)
	}
	weak := good
	weak.Iterations = 1024
	short := good
	short.StoredKey = short.StoredKey[:10]
	for _, c := range []ScramCredential{weak, short} {
		srv, err := NewScram(ScramSHA256, func(string, string) (ScramCredential, bool) { return c, true })
		if err != nil {
			t.Fatal(err)
		}
		_, err = authenticate(t, srv, scram.Auth{User: "alice", Pass: "pw"}.AsSha256Mechanism())
		authError(t, err, msgBadCredentials)
	}
}

func TestNewScramRejects(t *testing.T) {
	lookup := func(string, string) (ScramCredential, bool) { return ScramCredential{}, false }
	if _, err := NewScram("SCRAM-SHA-1", lookup); err == nil {
		t.Fatal("SCRAM-SHA-1 accepted")
	}
	if _, err := NewScram(ScramSHA256, nil); err == nil {
		t.Fatal("nil lookup accepted")
	}
}

// TestScramCredentialMatchesXdg checks NewScramCredential against the
// stored credentials xdg-go's client derives independently.
func TestScramCredentialMatchesXdg(t *testing.T) {
	salt := []byte("1lv4pdnw4fwq7notcxm0yy1k7q")
	for _, tt := range []struct {
		mechanism string
		hash      xdgscram.HashGeneratorFcn
	}{{ScramSHA256, xdgscram.SHA256}, {ScramSHA512, xdgscram.SHA512}} {
		got, err := NewScramCredential(tt.mechanism, "pencil", salt, 4096)
		if err != nil {
			t.Fatal(err)
		}
		client, err := tt.hash.NewClient("user", "pencil", "")
		if err != nil {
			t.Fatal(err)
		}
		want := client.GetStoredCredentials(xdgscram.KeyFactors{Salt: string(salt), Iters: 4096})
		if !bytes.Equal(got.StoredKey, want.StoredKey) || !bytes.Equal(got.ServerKey, want.ServerKey) || !bytes.Equal(got.Salt, salt) || got.Iterations != 4096 {
			t.Fatalf("%s: credential differs from xdg-go's", tt.mechanism)
		}
	}
	for _, bad := range []struct {
		mechanism, password string
		iterations          int
	}{
		{"SCRAM-SHA-1", "pw", 4096},
		{ScramSHA256, "", 4096},
		{ScramSHA256, "pw", 4095},
		{ScramSHA512, "pw", 16385},
	} {
		if _, err := NewScramCredential(bad.mechanism, bad.password, nil, bad.iterations); err == nil {
			t.Fatalf("NewScramCredential(%q, %q, %d) succeeded", bad.mechanism, bad.password, bad.iterations)
		}
	}
}

// librdkafka before 2.6.1 answers the server-first message with its own
// nonce in front of the server's whole nonce ("r=" cnonce + cnonce +
// snonce) and signs that; Kafka 3.8.1-3.9 accepted a final nonce that ends
// with the one it sent, and so does Gregor. A nonce that does not end with
// this exchange's is still refused.
func TestScramLibrdkafkaNonce(t *testing.T) {
	for _, tc := range []struct {
		name   string
		nonce  func(cnonce, server string) string
		wantOK bool
	}{
		{"exact", func(_, server string) string { return server }, true},
		{"librdkafka's", func(cnonce, server string) string { return cnonce + server }, true},
		{"another exchange's", func(cnonce, _ string) string { return cnonce + "someoneelse" }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newTestScram(t, ScramSHA512)
			x := srv.Start()
			const cnonce = `N<5Hu4|kf2l3-Gf6HjxWR?FjNW:7A_@o`
			first := "n,,n=alice,r=" + cnonce
			out, done, err := x.Step([]byte(first))
			if err != nil || done {
				t.Fatalf("client-first: %v", err)
			}
			serverFirst := string(out)
			attrs := map[string]string{}
			for _, f := range strings.Split(serverFirst, ",") {
				k, v, _ := strings.Cut(f, "=")
				attrs[k] = v
			}
			salt, _ := base64.StdEncoding.DecodeString(attrs["s"])
			iters, _ := strconv.Atoi(attrs["i"])
			salted, err := pbkdf2.Key(sha512.New, "alice-secret", salt, iters, sha512.Size)
			if err != nil {
				t.Fatal(err)
			}
			mac := func(key []byte, msg string) []byte {
				m := hmac.New(sha512.New, key)
				m.Write([]byte(msg))
				return m.Sum(nil)
			}
			clientKey := mac(salted, "Client Key")
			storedKey := sha512.Sum512(clientKey)
			withoutProof := "c=biws,r=" + tc.nonce(cnonce, attrs["r"])
			authMessage := first[3:] + "," + serverFirst + "," + withoutProof
			sig := mac(storedKey[:], authMessage)
			proof := make([]byte, len(sig))
			for i := range sig {
				proof[i] = clientKey[i] ^ sig[i]
			}
			out, done, err = x.Step([]byte(withoutProof + ",p=" + base64.StdEncoding.EncodeToString(proof)))
			if !tc.wantOK {
				if err == nil {
					t.Fatal("accepted")
				}
				return
			}
			if err != nil || !done {
				t.Fatalf("client-final: done %v, %v", done, err)
			}
			want := "v=" + base64.StdEncoding.EncodeToString(mac(mac(salted, "Server Key"), authMessage))
			if string(out) != want {
				t.Fatalf("server-final %q, want %q", out, want)
			}
			if x.Principal() != "alice" {
				t.Fatalf("principal %q", x.Principal())
			}
		})
	}
}
