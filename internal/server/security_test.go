package server

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	ksasl "github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"gregor/internal/auth"
	"gregor/internal/auth/authtest"
)

// secureServer is a node with a listener of every security protocol:
// PLAINTEXT (the admin's), SSL with client certificates required,
// SASL_PLAINTEXT with SCRAM-SHA-256, and SASL_SSL with PLAIN,
// SCRAM-SHA-512 and OAUTHBEARER (Kafka's unsecured tokens).
func secureServer(t *testing.T) (*testServer, *authtest.PKI) {
	t.Helper()
	authtest.RequireOpenSSL(t)
	pki := authtest.NewPKI(t, t.TempDir())
	ts := startServer(t, t.TempDir(), map[string]string{
		"listeners":                                                    "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"listener.security.protocol.map":                               "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL,CONTROLLER:PLAINTEXT",
		"inter.broker.listener.name":                                   "PLAINTEXT",
		"ssl.keystore.type":                                            "PEM",
		"ssl.keystore.location":                                        pki.Server.KeystorePEM,
		"ssl.key.password":                                             authtest.Password,
		"ssl.truststore.type":                                          "PEM",
		"ssl.truststore.location":                                      pki.CA.Cert,
		"listener.name.ssl.ssl.client.auth":                            "required",
		"listener.name.ssl.ssl.principal.mapping.rules":                "RULE:^CN=(.*)$/$1/U,DEFAULT",
		"listener.name.sasl_plaintext.sasl.enabled.mechanisms":         "SCRAM-SHA-256",
		"listener.name.sasl_ssl.sasl.enabled.mechanisms":               "PLAIN,SCRAM-SHA-512,OAUTHBEARER",
		"listener.name.sasl_ssl.plain.sasl.jaas.config":                `org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";`,
		"listener.name.sasl_ssl.oauthbearer.sasl.jaas.config":          `org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;`,
		"listener.name.sasl_ssl.oauthbearer.connections.max.reauth.ms": "3600000",
	})
	return ts, pki
}

func clientTLS(t *testing.T, pki *authtest.PKI, id *authtest.Identity) *tls.Config {
	t.Helper()
	cfg, err := auth.ClientTLS(pki.Settings(t, id, authtest.PEM), "localhost")
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// ping connects to a listener and runs one Metadata request; it returns
// the client's error.
func ping(t *testing.T, ts *testServer, listener string, opts ...kgo.Opt) error {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(ts.srv.Addr(listener).String()),
		kgo.DialTimeout(5 * time.Second), kgo.RequestRetries(0)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return cl.Ping(ctx)
}

func unsecuredToken(sub string, exp time.Time) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"none"}`)) + "." + enc([]byte(fmt.Sprintf(`{"sub":%q,"exp":%d,"iat":%d}`, sub, exp.Unix(), time.Now().Unix()))) + "."
}

func TestSecureListeners(t *testing.T) {
	ts, pki := secureServer(t)
	adm := ts.admin()
	// SCRAM users, set through the PLAINTEXT listener.
	_, err := adm.AlterUserSCRAMs(ctxT(t), nil, []kadm.UpsertSCRAM{
		{User: "bob", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "bob-secret"},
		{User: "carol", Mechanism: kadm.ScramSha512, Iterations: 8192, Password: "carol-secret"},
	})
	if err != nil {
		t.Fatal(err)
	}
	withTLS := kgo.DialTLSConfig(clientTLS(t, pki, pki.Client))
	trustOnly := kgo.DialTLSConfig(clientTLS(t, pki, nil))
	sasl := func(m ksasl.Mechanism) kgo.Opt { return kgo.SASL(m) }

	ok := []struct {
		name     string
		listener string
		opts     []kgo.Opt
	}{
		{"SSL with a client certificate", "SSL", []kgo.Opt{withTLS}},
		{"SCRAM-SHA-256 on SASL_PLAINTEXT", "SASL_PLAINTEXT", []kgo.Opt{sasl(scram.Auth{User: "bob", Pass: "bob-secret"}.AsSha256Mechanism())}},
		{"PLAIN on SASL_SSL", "SASL_SSL", []kgo.Opt{trustOnly, sasl(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism())}},
		{"SCRAM-SHA-512 on SASL_SSL", "SASL_SSL", []kgo.Opt{trustOnly, sasl(scram.Auth{User: "carol", Pass: "carol-secret"}.AsSha512Mechanism())}},
		{"OAUTHBEARER on SASL_SSL", "SASL_SSL", []kgo.Opt{trustOnly, sasl(oauth.Auth{Token: unsecuredToken("svc", time.Now().Add(time.Hour))}.AsMechanism())}},
	}
	for _, c := range ok {
		if err := ping(t, ts, c.listener, c.opts...); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
	}

	bad := []struct {
		name     string
		listener string
		opts     []kgo.Opt
		want     string // in the error; "" = any error
	}{
		{"SSL without a client certificate", "SSL", []kgo.Opt{trustOnly}, ""},
		{"plaintext client on the SSL port", "SSL", nil, ""},
		{"wrong SCRAM-SHA-256 password", "SASL_PLAINTEXT", []kgo.Opt{sasl(scram.Auth{User: "bob", Pass: "nope"}.AsSha256Mechanism())}, "SASL_AUTHENTICATION_FAILED"},
		{"unknown SCRAM user", "SASL_PLAINTEXT", []kgo.Opt{sasl(scram.Auth{User: "mallory", Pass: "x"}.AsSha256Mechanism())}, "SASL_AUTHENTICATION_FAILED"},
		{"mechanism not enabled on the listener", "SASL_PLAINTEXT", []kgo.Opt{sasl(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism())}, "UNSUPPORTED_SASL_MECHANISM"},
		{"wrong PLAIN password", "SASL_SSL", []kgo.Opt{trustOnly, sasl(plain.Auth{User: "alice", Pass: "nope"}.AsMechanism())}, "SASL_AUTHENTICATION_FAILED"},
		{"expired OAUTHBEARER token", "SASL_SSL", []kgo.Opt{trustOnly, sasl(oauth.Auth{Token: unsecuredToken("svc", time.Now().Add(-time.Minute))}.AsMechanism())}, "invalid_token"},
		{"SASL client without TLS on SASL_SSL", "SASL_SSL", []kgo.Opt{sasl(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism())}, ""},
		{"no SASL on SASL_PLAINTEXT", "SASL_PLAINTEXT", nil, ""},
	}
	for _, c := range bad {
		err := ping(t, ts, c.listener, c.opts...)
		switch {
		case err == nil:
			t.Errorf("%s: connected", c.name)
		case c.want != "" && !strings.Contains(err.Error(), c.want):
			t.Errorf("%s: error %q, want %s", c.name, err, c.want)
		}
		if err != nil && (strings.Contains(err.Error(), "secret") || strings.Contains(err.Error(), "nope")) {
			t.Errorf("%s: the error shows a password: %v", c.name, err)
		}
	}

	// The broker goes on serving the others.
	if err := ping(t, ts, "SSL", withTLS); err != nil {
		t.Fatalf("SSL after the refusals: %v", err)
	}
	m := ts.srv.metrics
	count := func(name, listener, mechanism string) float64 {
		switch name {
		case "ok":
			return testutil.ToFloat64(m.AuthCounter(true, listener, mechanism))
		default:
			return testutil.ToFloat64(m.AuthCounter(false, listener, mechanism))
		}
	}
	for _, c := range []struct {
		kind, listener, mechanism string
		min                       float64
	}{
		{"ok", "SSL", "SSL", 2}, {"failed", "SSL", "SSL", 2},
		{"ok", "SASL_PLAINTEXT", "SCRAM-SHA-256", 1}, {"failed", "SASL_PLAINTEXT", "SCRAM-SHA-256", 2},
		{"failed", "SASL_PLAINTEXT", "PLAIN", 1},
		{"ok", "SASL_SSL", "PLAIN", 1}, {"failed", "SASL_SSL", "PLAIN", 1},
		{"ok", "SASL_SSL", "OAUTHBEARER", 1}, {"failed", "SASL_SSL", "OAUTHBEARER", 1},
		{"failed", "SASL_SSL", "SSL", 1},
	} {
		if got := count(c.kind, c.listener, c.mechanism); got < c.min {
			t.Errorf("%s authentications on %s with %s: %v, want >= %v", c.kind, c.listener, c.mechanism, got, c.min)
		}
	}
}

// Produce and consume work end to end over an authenticated listener.
func TestSecureProduceConsume(t *testing.T) {
	ts, pki := secureServer(t)
	if _, err := ts.admin().CreateTopic(ctxT(t), 2, 1, nil, "secure"); err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(ts.srv.Addr("SASL_SSL").String()),
		kgo.DialTLSConfig(clientTLS(t, pki, nil)),
		kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()),
		kgo.DefaultProduceTopic("secure"), kgo.ConsumeTopics("secure"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := range 100 {
		if err := cl.ProduceSync(ctxT(t), kgo.StringRecord(fmt.Sprint(i))).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	got := 0
	ctx := ctxT(t)
	for got < 100 {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of 100: %v", got, err)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatal(err) })
		got += fs.NumRecords()
	}
}

// A keystore changed through IncrementalAlterConfigs on the listener is
// used by the next connections, without a restart.
func TestKeystoreReloadedByDynamicConfig(t *testing.T) {
	ts, pki := secureServer(t)
	addr := ts.srv.Addr("SSL").String()
	serial := func() string {
		cfg := clientTLS(t, pki, pki.Client)
		c, err := tls.Dial("tcp", addr, cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		return c.ConnectionState().PeerCertificates[0].SerialNumber.String()
	}
	before := serial()
	renewed := pki.NewServer(t, "renewed")
	resps, err := ts.admin().AlterBrokerConfigs(ctxT(t), []kadm.AlterConfig{
		{Name: "listener.name.ssl.ssl.keystore.location", Value: &renewed.KeystorePEM},
	}, 1)
	if err == nil {
		err = resps[0].Err
	}
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for serial() == before {
		if time.Now().After(deadline) {
			t.Fatal("the listener still presents the old certificate")
		}
		time.Sleep(20 * time.Millisecond)
	}

	// A keystore that does not load is refused; the listener keeps
	// serving with the last good one.
	bogus := "/nonexistent/keystore.pem"
	if _, err := ts.admin().AlterBrokerConfigs(ctxT(t), []kadm.AlterConfig{
		{Name: "listener.name.ssl.ssl.keystore.location", Value: &bogus},
	}, 1); err != nil && !errors.Is(err, kerr.InvalidConfig) {
		t.Fatal(err)
	}
	if err := ping(t, ts, "SSL", kgo.DialTLSConfig(clientTLS(t, pki, pki.Client))); err != nil {
		t.Fatalf("SSL after a bad keystore: %v", err)
	}
}

// KIP-768: a listener whose OAUTHBEARER mechanism validates signed JWTs
// against a JWKS endpoint accepts a token signed by a key of the set, for
// the expected audience and issuer, and refuses a forged, an expired or a
// misdirected one, and Kafka's unsecured tokens.
func TestOAuthBearerJWKS(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	forger, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	jwks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k1", Use: "sig", Algorithm: "ES256"}}})
	}))
	defer jwks.Close()
	ts := startServer(t, t.TempDir(), map[string]string{
		"listeners":                                   "PLAINTEXT://127.0.0.1:0,OAUTH://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"listener.security.protocol.map":              "PLAINTEXT:PLAINTEXT,OAUTH:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
		"inter.broker.listener.name":                  "PLAINTEXT",
		"listener.name.oauth.sasl.enabled.mechanisms": "OAUTHBEARER",
		"listener.name.oauth.oauthbearer.sasl.server.callback.handler.class": "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler",
		"listener.name.oauth.oauthbearer.sasl.jaas.config":                   "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;",
		"sasl.oauthbearer.jwks.endpoint.url":                                 jwks.URL,
		"sasl.oauthbearer.expected.audience":                                 "kafka",
		"sasl.oauthbearer.expected.issuer":                                   "https://idp.example",
	})
	sign := func(k *ecdsa.PrivateKey, over map[string]any) string {
		claims := map[string]any{"sub": "svc", "iss": "https://idp.example", "aud": "kafka",
			"iat": time.Now().Unix(), "exp": time.Now().Add(time.Hour).Unix()}
		for name, v := range over {
			claims[name] = v
		}
		signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: jose.JSONWebKey{Key: k, KeyID: "k1"}},
			(&jose.SignerOptions{}).WithType("JWT"))
		if err != nil {
			t.Fatal(err)
		}
		tok, err := jwt.Signed(signer).Claims(claims).Serialize()
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	login := func(token string) error {
		return ping(t, ts, "OAUTH", kgo.SASL(oauth.Auth{Token: token}.AsMechanism()))
	}
	if err := login(sign(key, nil)); err != nil {
		t.Fatalf("signed token: %v", err)
	}
	for name, tok := range map[string]string{
		"forged signature":     sign(forger, nil),
		"expired":              sign(key, map[string]any{"exp": time.Now().Add(-time.Hour).Unix()}),
		"another audience":     sign(key, map[string]any{"aud": "not-kafka"}),
		"another issuer":       sign(key, map[string]any{"iss": "https://evil.example"}),
		"unsecured (alg none)": unsecuredToken("svc", time.Now().Add(time.Hour)),
	} {
		if err := login(tok); err == nil || !strings.Contains(err.Error(), "SASL_AUTHENTICATION_FAILED") {
			t.Errorf("%s: %v, want SASL_AUTHENTICATION_FAILED", name, err)
		}
	}
}

// KIP-368 with a real client: franz-go re-authenticates before the session
// that connections.max.reauth.ms gives it ends, so its connections keep
// working across several lifetimes, and each renewal is counted.
func TestReauthenticationWithFranzGo(t *testing.T) {
	ts := startServer(t, t.TempDir(), map[string]string{
		"listeners":                      "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
		"inter.broker.listener.name":     "PLAINTEXT",
		"listener.name.sasl_plaintext.sasl.enabled.mechanisms":   "PLAIN",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config":    `org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";`,
		"listener.name.sasl_plaintext.connections.max.reauth.ms": "1500",
	})
	if _, err := ts.admin().CreateTopic(ctxT(t), 1, 1, nil, "reauth"); err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(ts.srv.Addr("SASL_PLAINTEXT").String()),
		kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()),
		kgo.DefaultProduceTopic("reauth"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	renewed := func() float64 {
		return testutil.ToFloat64(ts.srv.metrics.ReauthCounter("SASL_PLAINTEXT", "PLAIN"))
	}
	deadline := time.Now().Add(20 * time.Second)
	for i := 0; renewed() < 2; i++ {
		if time.Now().After(deadline) {
			t.Fatalf("%v re-authentications after %d produces in 20 s, want 2", renewed(), i)
		}
		if err := cl.ProduceSync(ctxT(t), kgo.StringRecord(fmt.Sprint(i))).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
