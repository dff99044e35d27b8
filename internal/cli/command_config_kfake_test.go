package cli

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/auth/authtest"
)

// writeCommandConfig writes a client properties file and returns its path.
func writeCommandConfig(t *testing.T, lines ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "client.properties")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func saslCommandConfig(t *testing.T, protocol, mechanism, user, pass string) string {
	module := "org.apache.kafka.common.security.scram.ScramLoginModule"
	if mechanism == "PLAIN" {
		module = "org.apache.kafka.common.security.plain.PlainLoginModule"
	}
	return writeCommandConfig(t,
		"security.protocol="+protocol,
		"sasl.mechanism="+mechanism,
		"sasl.jaas.config="+module+` required username="`+user+`" password="`+pass+`";`)
}

// kafkaAuthFailure is the message Kafka's SaslServerAuthenticator answers
// a wrong PLAIN or SCRAM password with.
const kafkaAuthFailure = "Authentication failed: Invalid username or password"

// TestCommandConfigSASLKfake runs commands through --command-config
// against franz-go's fake cluster with SASL: PLAIN and SCRAM-SHA-256 log
// in; a wrong password is answered as Kafka answers it
// (SASL_AUTHENTICATION_FAILED with a message, which kfake itself does not
// send: a control hook does), and the command says so at once instead of
// waiting out --timeout.
func TestCommandConfigSASLKfake(t *testing.T) {
	const scramPass, plainPass = "scram-" + testPassword, "plain-" + testPassword
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.EnableSASL(),
		kfake.Superuser("SCRAM-SHA-256", "alice", scramPass),
		kfake.Superuser("PLAIN", "bob", plainPass))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	c.ControlKey(int16(kmsg.SASLAuthenticate), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		req := kreq.(*kmsg.SASLAuthenticateRequest)
		parts := strings.Split(string(req.SASLAuthBytes), "\x00")
		if len(parts) != 3 || parts[2] == plainPass {
			return nil, nil, false // SCRAM, or the right PLAIN password: kfake answers
		}
		resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
		resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
		msg := kafkaAuthFailure
		resp.ErrorMessage = &msg
		return resp, nil, true
	})
	addr := c.ListenAddrs()[0]
	run := func(cfg string, args ...string) result {
		return runCommand(t, "", append(args, "--bootstrap-server", addr, "--timeout", "20s", "--command-config", cfg)...)
	}

	scram := saslCommandConfig(t, "SASL_PLAINTEXT", "SCRAM-SHA-256", "alice", scramPass)
	if r := run(scram, "topic", "create", "secured", "--partitions", "2"); r.err != nil {
		t.Fatalf("topic create as alice (SCRAM-SHA-256): %v", r.err)
	}
	plain := saslCommandConfig(t, "SASL_PLAINTEXT", "PLAIN", "bob", plainPass)
	r := run(plain, "topic", "list")
	if r.err != nil || !strings.Contains(r.out, "secured") {
		t.Fatalf("topic list as bob (PLAIN): %v\n%s", r.err, r.out)
	}

	start := time.Now()
	r = run(saslCommandConfig(t, "SASL_PLAINTEXT", "PLAIN", "bob", "wrong-"+testPassword), "topic", "list")
	want := "authentication failed: SASL_AUTHENTICATION_FAILED: SASL Authentication failed.: " + kafkaAuthFailure
	if r.err == nil || r.err.Error() != want {
		t.Fatalf("wrong password: error %v, want %q", r.err, want)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("a refused login took %s to report", d)
	}
	checkNoSecret(t, r.err.Error()+r.errOut)
}

// TestCommandConfigTLSKfake connects to franz-go's fake cluster over TLS:
// trusting the test CA it works; trusting only the system roots the
// command says the handshake failed, at once.
func TestCommandConfigTLSKfake(t *testing.T) {
	pki := authtest.NewPKI(t, t.TempDir())
	cert, err := tls.LoadX509KeyPair(pki.Server.Cert, pki.Server.Key)
	if err != nil {
		t.Fatal(err)
	}
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "encrypted"),
		kfake.TLS(&tls.Config{Certificates: []tls.Certificate{cert}}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	run := func(cfg string) result {
		return runCommand(t, "", "topic", "list", "--bootstrap-server", c.ListenAddrs()[0], "--timeout", "20s", "--command-config", cfg)
	}
	r := run(writeCommandConfig(t, "security.protocol=SSL", "ssl.truststore.type=PEM", "ssl.truststore.location="+pki.CA.Cert))
	if r.err != nil && strings.Contains(r.err.Error(), "not implemented") {
		t.Skipf("auth.ClientTLS is not in this tree yet: %v", r.err)
	}
	if r.err != nil || !strings.Contains(r.out, "encrypted") {
		t.Fatalf("topic list over TLS: %v\n%s", r.err, r.out)
	}
	start := time.Now()
	r = run(writeCommandConfig(t, "security.protocol=SSL"))
	if r.err == nil || !strings.HasPrefix(r.err.Error(), "TLS handshake with "+c.ListenAddrs()[0]+" failed: ") {
		t.Fatalf("untrusted server: error %v", r.err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("a refused handshake took %s to report", d)
	}
}

func TestConnectErrorKinds(t *testing.T) {
	seeds := []string{"h:1"}
	for _, tc := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("%w: bad", kerr.SaslAuthenticationFailed), "authentication failed: SASL_AUTHENTICATION_FAILED"},
		{kerr.UnsupportedSaslMechanism, "authentication failed: UNSUPPORTED_SASL_MECHANISM"},
		{&tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}, "TLS handshake with h:1 failed: "},
		{fmt.Errorf("tls: server certificate: %w", x509.UnknownAuthorityError{}), "TLS handshake with h:1 failed: "},
		{tls.AlertError(42), "TLS handshake with h:1 failed: "},
		{errors.New("dial tcp h:1: connection refused"), "cannot reach a broker at h:1 within 1s: dial tcp"},
	} {
		if got := connectError(seeds, time.Second, tc.err).Error(); !strings.HasPrefix(got, tc.want) {
			t.Errorf("connectError(%v) = %q, want %q...", tc.err, got, tc.want)
		}
	}
}
