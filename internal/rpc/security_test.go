package rpc_test

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"gregor/internal/auth/sasl"
	"gregor/internal/network"
	"gregor/internal/rpc"
)

// A node dials a SASL listener with the listener's mechanism, and its
// requests carry on once authenticated.
func TestClientAuthenticatesWithSASL(t *testing.T) {
	addr, _ := startSASL(t)
	c := rpc.NewClient(addr, "test", rpc.Security{SASL: plain.Auth{User: "node", Pass: "node-secret"}.AsMechanism()})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for range 3 {
		if _, err := c.Request(ctx, metadataReq()); err != nil {
			t.Fatal(err)
		}
	}
}

// SessionEnding tells a caller that the next request would replace the
// connection because its SASL session ends within the margin; a session
// without an end never does.
func TestClientSessionEnding(t *testing.T) {
	for _, tc := range []struct {
		reauth time.Duration
		want   bool
	}{{0, false}, {time.Hour, false}, {time.Second, true}} {
		addr, _ := startSASLReauth(t, tc.reauth)
		c := rpc.NewClient(addr, "test", rpc.Security{SASL: plain.Auth{User: "node", Pass: "node-secret"}.AsMechanism()})
		if c.SessionEnding() {
			t.Fatalf("reauth %v: session ending before any connection", tc.reauth)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if _, err := c.Request(ctx, metadataReq()); err != nil {
			t.Fatal(err)
		}
		cancel()
		if got := c.SessionEnding(); got != tc.want {
			t.Errorf("reauth %v: SessionEnding() = %v, want %v", tc.reauth, got, tc.want)
		}
		c.Close()
	}
}

// A refused login is an ErrAuthentication, and the client waits longer
// and longer before dialling again, instead of retrying as fast as its
// caller loops (a node with a wrong password would otherwise fill its
// peer's log).
func TestClientBacksOffAfterAuthenticationFailure(t *testing.T) {
	addr, failures := startSASL(t)
	c := rpc.NewClient(addr, "test", rpc.Security{SASL: plain.Auth{User: "node", Pass: "wrong"}.AsMechanism()})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	for time.Since(start) < time.Second {
		_, err := c.Request(ctx, metadataReq())
		if !errors.Is(err, rpc.ErrAuthentication) {
			t.Fatalf("error %v, want ErrAuthentication", err)
		}
	}
	// Logins at 0, 50, 150, 350 and 750 ms, and one more waiting past the
	// second; without the backoff this loop dials hundreds of times.
	if n := failures.Load(); n < 2 || n > 6 {
		t.Fatalf("%d refused logins in about 1 s, want 2 to 6", n)
	}
}

func startSASL(t *testing.T) (string, *atomic.Int32) {
	t.Helper()
	return startSASLReauth(t, 0)
}

// startSASLReauth is startSASL whose sessions last reauth
// (connections.max.reauth.ms; 0: for ever).
func startSASLReauth(t *testing.T, reauth time.Duration) (string, *atomic.Int32) {
	t.Helper()
	var failures atomic.Int32
	srv := network.NewServer(network.Config{
		Listeners: []network.ListenerConfig{{Name: "CONTROLLER", Host: "127.0.0.1", SecurityProtocol: "SASL_PLAINTEXT",
			SASL:      []sasl.Server{sasl.NewPlain(map[string]string{"node": "node-secret"})},
			ReauthMax: func(string) time.Duration { return reauth }}},
		OnAuthentication: func(_, _ string, _ bool, err error) {
			if err != nil {
				failures.Add(1)
			}
		},
	}, metadataHandler{})
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Shutdown(context.Background()) })
	return srv.Addr("CONTROLLER").(*net.TCPAddr).String(), &failures
}

func metadataReq() *kmsg.MetadataRequest {
	r := kmsg.NewPtrMetadataRequest()
	r.Version = 12
	return r
}
