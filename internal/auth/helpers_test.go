package auth_test

import (
	"crypto/tls"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"gregor/internal/auth"
	"gregor/internal/auth/authtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// handshakeResult is one TLS connection over loopback, seen from both ends.
type handshakeResult struct {
	clientErr, serverErr error
	client, server       tls.ConnectionState
}

func (r handshakeResult) ok() bool { return r.clientErr == nil && r.serverErr == nil }

// handshake connects a client with clientCfg to a server with serverCfg
// over a loopback socket. After the handshake the server sends one byte and
// the client reads it: in TLS 1.3 the client's handshake ends before the
// server has checked the client's certificate, and a rejection only
// reaches the client as an alert on its first read.
func handshake(t *testing.T, serverCfg, clientCfg *tls.Config) handshakeResult {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var r handshakeResult
	done := make(chan struct{})
	go func() {
		defer close(done)
		c, err := ln.Accept()
		if err != nil {
			r.serverErr = err
			return
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		sc := tls.Server(c, serverCfg)
		if r.serverErr = sc.Handshake(); r.serverErr != nil {
			return
		}
		r.server = sc.ConnectionState()
		_, r.serverErr = sc.Write([]byte{1})
	}()

	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	cc := tls.Client(c, clientCfg)
	if r.clientErr = cc.Handshake(); r.clientErr == nil {
		r.client = cc.ConnectionState()
		_, r.clientErr = io.ReadFull(cc, make([]byte, 1))
	}
	if r.clientErr != nil {
		c.Close() // unblock a server still waiting for the client
	}
	<-done
	return r
}

// newPKI makes the test's certificates, shared by its subtests.
func newPKI(t *testing.T) *authtest.PKI {
	t.Helper()
	return authtest.NewPKI(t, t.TempDir())
}

func mustClient(t *testing.T, s auth.TLSSettings, serverName string) *tls.Config {
	t.Helper()
	cfg, err := auth.ClientTLS(s, serverName)
	if err != nil {
		t.Fatalf("ClientTLS: %v", err)
	}
	return cfg
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func writeFile(t *testing.T, path, data string) string {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// checkErr fails t unless err is an error on one line that contains every
// one of want and not the test password.
func checkErr(t *testing.T, err error, want ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want one containing %q", want)
	}
	msg := err.Error()
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("error %q does not contain %q", msg, w)
		}
	}
	if strings.Contains(msg, authtest.Password) {
		t.Errorf("error %q contains the password", msg)
	}
	if strings.Contains(msg, "\n") {
		t.Errorf("error %q is not one line", msg)
	}
}
