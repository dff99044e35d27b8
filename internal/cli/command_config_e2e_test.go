package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"gregor/internal/auth/authtest"
)

// startSecureCluster starts a node with the listeners and security
// settings of extra.
func startSecureCluster(t *testing.T, extra map[string]string) *testCluster {
	t.Helper()
	c, err := tryStartCluster(t, extra)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// runAt runs a command against one listener of the node with a command
// config.
func (c *testCluster) runAt(listener, cfg string, args ...string) result {
	c.t.Helper()
	return runCommand(c.t, "", append(args, "--bootstrap-server", c.srv.Addr(listener).String(),
		"--timeout", "10s", "--command-config", cfg)...)
}

// TestCommandConfigSASLGregor logs in to a Gregor SASL_PLAINTEXT listener
// with each mechanism, and checks that a wrong password is a clear error.
func TestCommandConfigSASLGregor(t *testing.T) {
	const alicePass = "alice-" + testPassword
	c := startSecureCluster(t, map[string]string{
		"listeners":                      "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
		"sasl.enabled.mechanisms":        "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config":         `org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="` + alicePass + `";`,
		"listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config": `org.apache.kafka.common.security.scram.ScramLoginModule required;`,
		"listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config": `org.apache.kafka.common.security.scram.ScramLoginModule required;`,
		// No server callback handler: Kafka's unsecured validator, for development.
		"listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config": `org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;`,
	})
	if r := c.run("", "topic", "create", "secured"); r.err != nil {
		t.Fatalf("topic create over PLAINTEXT: %v", r.err)
	}
	listOK := func(name, cfg string) {
		t.Helper()
		r := c.runAt("SASL_PLAINTEXT", cfg, "topic", "list")
		if r.err != nil || !strings.Contains(r.out, "secured") {
			t.Errorf("%s: topic list: %v\n%s", name, r.err, r.out)
		}
	}
	listOK("PLAIN", saslCommandConfig(t, "SASL_PLAINTEXT", "PLAIN", "alice", alicePass))
	listOK("OAUTHBEARER unsecured", writeCommandConfig(t,
		"security.protocol=SASL_PLAINTEXT", "sasl.mechanism=OAUTHBEARER",
		`sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredLoginStringClaim_sub="alice";`))

	start := time.Now()
	r := c.runAt("SASL_PLAINTEXT", saslCommandConfig(t, "SASL_PLAINTEXT", "PLAIN", "alice", "wrong-"+testPassword), "topic", "list")
	if r.err == nil || !strings.HasPrefix(r.err.Error(), "authentication failed: SASL_AUTHENTICATION_FAILED") || strings.Contains(r.err.Error(), "\n") {
		t.Errorf("wrong password: error %v, want one line starting authentication failed: SASL_AUTHENTICATION_FAILED", r.err)
	} else {
		checkNoSecret(t, r.err.Error())
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("a refused login took %s to report", d)
	}

	// SCRAM users are made through the PLAINTEXT listener.
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	// One request per mechanism: Kafka refuses a user named twice in one
	// request (DUPLICATE_RESOURCE).
	for _, m := range []kadm.ScramMechanism{kadm.ScramSha256, kadm.ScramSha512} {
		resp, err := kadm.NewClient(cl).AlterUserSCRAMs(ctxT(t), nil, []kadm.UpsertSCRAM{
			{User: "carol", Mechanism: m, Iterations: 4096, Password: "carol-" + testPassword},
		})
		for _, a := range resp.Sorted() {
			if err == nil && a.Err != nil {
				err = a.Err
			}
		}
		if err != nil {
			t.Fatalf("AlterUserScramCredentials %v: %v", m, err)
		}
	}
	listOK("SCRAM-SHA-256", saslCommandConfig(t, "SASL_PLAINTEXT", "SCRAM-SHA-256", "carol", "carol-"+testPassword))
	listOK("SCRAM-SHA-512", saslCommandConfig(t, "SASL_PLAINTEXT", "SCRAM-SHA-512", "carol", "carol-"+testPassword))
	r = c.runAt("SASL_PLAINTEXT", saslCommandConfig(t, "SASL_PLAINTEXT", "SCRAM-SHA-512", "carol", "wrong"), "topic", "list")
	if r.err == nil || !strings.HasPrefix(r.err.Error(), "authentication failed: SASL_AUTHENTICATION_FAILED") {
		t.Errorf("wrong SCRAM password: error %v", r.err)
	}
}

// TestCommandConfigTLSGregor connects to a Gregor SSL listener trusting
// the test CA, and is refused by it when trusting nothing.
func TestCommandConfigTLSGregor(t *testing.T) {
	pki := authtest.NewPKI(t, t.TempDir())
	c := startSecureCluster(t, map[string]string{
		"listeners":                               "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"listener.security.protocol.map":          "PLAINTEXT:PLAINTEXT,SSL:SSL,CONTROLLER:PLAINTEXT",
		"listener.name.ssl.ssl.keystore.type":     "PEM",
		"listener.name.ssl.ssl.keystore.location": pki.Server.KeystorePEM,
		"listener.name.ssl.ssl.key.password":      authtest.Password,
	})
	if r := c.run("", "topic", "create", "encrypted"); r.err != nil {
		t.Fatalf("topic create over PLAINTEXT: %v", r.err)
	}
	trusting := writeCommandConfig(t, "security.protocol=SSL", "ssl.truststore.type=PEM", "ssl.truststore.location="+pki.CA.Cert)
	r := c.runAt("SSL", trusting, "topic", "list")
	if r.err != nil || !strings.Contains(r.out, "encrypted") {
		t.Fatalf("topic list over SSL: %v\n%s", r.err, r.out)
	}
	// The system roots do not hold the test CA.
	r = c.runAt("SSL", writeCommandConfig(t, "security.protocol=SSL"), "topic", "list")
	if r.err == nil || !strings.HasPrefix(r.err.Error(), "TLS handshake with ") || !strings.Contains(r.err.Error(), "certificate") {
		t.Fatalf("untrusted server: error %v, want a TLS handshake failure", r.err)
	}
}
