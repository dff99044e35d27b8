package sasl

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/sasl/plain"
)

func TestPlainFranzGo(t *testing.T) {
	srv := NewPlain(map[string]string{"alice": "alice-secret", "bob": "bob-secret"})
	for _, zid := range []string{"", "alice"} {
		x, err := authenticate(t, srv, plain.Auth{Zid: zid, User: "alice", Pass: "alice-secret"}.AsMechanism())
		if err != nil {
			t.Fatalf("zid %q: %v", zid, err)
		}
		if x.Principal() != "alice" || !x.Expiry().IsZero() {
			t.Fatalf("principal %q expiry %v", x.Principal(), x.Expiry())
		}
	}
}

func TestPlainFailures(t *testing.T) {
	srv := NewPlain(map[string]string{"alice": "alice-secret"})
	tests := []struct {
		name string
		auth plain.Auth
		want string
	}{
		{"wrong password", plain.Auth{User: "alice", Pass: "guess-123"}, msgBadCredentials},
		{"password prefix", plain.Auth{User: "alice", Pass: "alice-secre"}, msgBadCredentials},
		{"unknown user", plain.Auth{User: "mallory", Pass: "alice-secret"}, msgBadCredentials},
		{"authzid of another user", plain.Auth{Zid: "admin", User: "alice", Pass: "alice-secret"}, msgAuthzidMismatch},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x, err := authenticate(t, srv, tt.auth.AsMechanism())
			ae := authError(t, err, tt.want)
			if strings.Contains(ae.Msg+ae.Reason, "alice-secret") || strings.Contains(ae.Msg+ae.Reason, "guess-123") {
				t.Fatalf("error %q / %q names a password", ae.Msg, ae.Reason)
			}
			if x.Principal() != "" {
				t.Fatalf("principal %q after a failure", x.Principal())
			}
		})
	}
}

func TestPlainMalformed(t *testing.T) {
	srv := NewPlain(map[string]string{"alice": "alice-secret"})
	for _, msg := range []string{"", "alice", "alice\x00alice-secret", "\x00alice\x00alice-secret\x00", "\x00\x00alice-secret", "\x00alice\x00"} {
		_, _, err := srv.Start().Step([]byte(msg))
		ae := authError(t, err, "")
		if strings.Contains(ae.Msg, "alice-secret") || strings.Contains(ae.Reason, "alice-secret") {
			t.Fatalf("%q: error names the password", msg)
		}
	}
}

func TestPlainStepAfterEnd(t *testing.T) {
	srv := NewPlain(map[string]string{"alice": "alice-secret"})
	x := srv.Start()
	if _, done, err := x.Step([]byte("\x00alice\x00alice-secret")); err != nil || !done {
		t.Fatalf("Step: done %v err %v", done, err)
	}
	_, _, err := x.Step([]byte("\x00alice\x00alice-secret"))
	authError(t, err, msgExchangeOver)
}

func TestPlainFromJAAS(t *testing.T) {
	e, err := ParseJAAS(`org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";`)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := NewPlainFromJAAS(e)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := authenticate(t, srv, plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()); err != nil {
		t.Fatal(err)
	}
	// username/password are the broker's own credentials, not a user.
	if _, err := authenticate(t, srv, plain.Auth{User: "username", Pass: "admin"}.AsMechanism()); err == nil {
		t.Fatal("the username option authenticated as a user")
	}
	if _, err := NewPlainFromJAAS(&JAASEntry{Module: ScramLoginModule, Flag: "required"}); err == nil {
		t.Fatal("NewPlainFromJAAS accepted a SCRAM login module")
	}
}
