package sasl

import (
	"context"
	"errors"
	"fmt"
	"testing"

	kafkasasl "github.com/twmb/franz-go/pkg/sasl"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// authenticate runs one exchange of srv against a franz-go client
// mechanism, in process, the way a client and the network layer would
// trade SaslAuthenticate messages.
func authenticate(t *testing.T, srv Server, mech kafkasasl.Mechanism) (Exchange, error) {
	t.Helper()
	x := srv.Start()
	session, msg, err := mech.Authenticate(context.Background(), "broker:9092")
	if err != nil {
		t.Fatalf("client Authenticate: %v", err)
	}
	for range 10 {
		answer, serverDone, err := x.Step(msg)
		if err != nil {
			return x, err
		}
		clientDone, next, err := session.Challenge(answer)
		if err != nil {
			return x, fmt.Errorf("client rejected the server's answer: %w", err)
		}
		switch {
		case clientDone && serverDone:
			return x, nil
		case clientDone:
			return x, errors.New("client done before the server")
		case serverDone:
			return x, errors.New("server done before the client")
		}
		msg = next
	}
	return x, errors.New("exchange did not end")
}

// authError asserts err is an *AuthError with message want.
func authError(t *testing.T, err error, want string) *AuthError {
	t.Helper()
	var ae *AuthError
	if !errors.As(err, &ae) {
		t.Fatalf("error %v (%T), want *AuthError", err, err)
	}
	if want != "" && ae.Msg != want {
		t.Fatalf("AuthError.Msg = %q, want %q (reason %q)", ae.Msg, want, ae.Reason)
	}
	return ae
}
