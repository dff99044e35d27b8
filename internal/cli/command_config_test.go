package cli

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"gregor/internal/auth"
)

// The secrets the tests write; no error or warning may contain them.
const (
	testPassword = "alice-s3cret"
	testStorePW  = "st0re-s3cret"
)

func scramJAAS(user, pass string) string {
	return `org.apache.kafka.common.security.scram.ScramLoginModule required username="` + user + `" password="` + pass + `";`
}

// firstMessage runs the mechanism's first step: what the client sends.
func firstMessage(t *testing.T, sc securityConfig) (string, []byte) {
	t.Helper()
	if sc.mechanism == nil {
		t.Fatal("no SASL mechanism")
	}
	_, msg, err := sc.mechanism.Authenticate(context.Background(), "127.0.0.1:9092")
	if err != nil {
		t.Fatalf("%s: first message: %v", sc.mechanism.Name(), err)
	}
	return sc.mechanism.Name(), msg
}

func TestCommandConfigSASL(t *testing.T) {
	for _, tc := range []struct {
		name      string
		props     map[string]string
		mechanism string
		first     func(t *testing.T, msg []byte) // checks the client's first message
	}{
		{
			name: "plain",
			props: map[string]string{
				"security.protocol": "SASL_PLAINTEXT",
				"sasl.mechanism":    "PLAIN",
				"sasl.jaas.config":  `org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" password="` + testPassword + `";`,
			},
			mechanism: "PLAIN",
			first: func(t *testing.T, msg []byte) {
				if string(msg) != "\x00alice\x00"+testPassword {
					t.Errorf("PLAIN message %q", msg)
				}
			},
		},
		{
			name: "scram-sha-256, lower-case protocol, comments and unquoted value in the JAAS text",
			props: map[string]string{
				"security.protocol": "sasl_plaintext",
				"sasl.mechanism":    "SCRAM-SHA-256",
				"sasl.jaas.config":  "org.apache.kafka.common.security.scram.ScramLoginModule /* c */ Required\n username=alice // user\n password=\"" + testPassword + "\";",
			},
			mechanism: "SCRAM-SHA-256",
			first: func(t *testing.T, msg []byte) {
				if !strings.HasPrefix(string(msg), "n,,n=alice,r=") {
					t.Errorf("SCRAM client-first %q", msg)
				}
			},
		},
		{
			name: "scram-sha-512 delegation token",
			props: map[string]string{
				"security.protocol": "SASL_SSL",
				"sasl.mechanism":    "SCRAM-SHA-512",
				"sasl.jaas.config":  `org.apache.kafka.common.security.scram.ScramLoginModule required username="tokenid" password="` + testPassword + `" tokenauth="true";`,
			},
			mechanism: "SCRAM-SHA-512",
			first: func(t *testing.T, msg []byte) {
				if !strings.HasPrefix(string(msg), "n,,n=tokenid,r=") || !strings.HasSuffix(string(msg), ",tokenauth=true") {
					t.Errorf("SCRAM client-first %q", msg)
				}
			},
		},
		{
			name: "oauthbearer unsecured token",
			props: map[string]string{
				"security.protocol": "SASL_PLAINTEXT",
				"sasl.mechanism":    "OAUTHBEARER",
				"sasl.jaas.config": `org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required
					unsecuredLoginStringClaim_sub="alice" unsecuredLoginListClaim_scope="|read|write"
					unsecuredLoginNumberClaim_level="3" unsecuredLoginLifetimeSeconds="60"
					unsecuredLoginExtension_traceId="abc";`,
			},
			mechanism: "OAUTHBEARER",
			first: func(t *testing.T, msg []byte) {
				claims, ext := oauthMessage(t, msg)
				if claims["sub"] != "alice" || claims["level"] != 3.0 ||
					!reflect.DeepEqual(claims["scope"], []any{"read", "write"}) {
					t.Errorf("claims %v", claims)
				}
				iat, _ := claims["iat"].(float64)
				exp, _ := claims["exp"].(float64)
				if now := float64(time.Now().Unix()); iat < now-60 || iat > now+1 || exp-iat != 60 {
					t.Errorf("iat %v exp %v", iat, exp)
				}
				if ext["traceId"] != "abc" {
					t.Errorf("extensions %v", ext)
				}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc, err := parseCommandConfig(tc.props)
			if err != nil {
				t.Fatal(err)
			}
			if len(sc.warnings) > 0 {
				t.Errorf("warnings %q", sc.warnings)
			}
			name, msg := firstMessage(t, sc)
			if name != tc.mechanism {
				t.Fatalf("mechanism %s, want %s", name, tc.mechanism)
			}
			tc.first(t, msg)
		})
	}
}

// oauthMessage decodes an OAUTHBEARER client-first message: the token's
// claims and the extensions.
func oauthMessage(t *testing.T, msg []byte) (map[string]any, map[string]string) {
	t.Helper()
	parts := strings.Split(string(msg), "\x01")
	if len(parts) < 2 || !strings.HasPrefix(parts[1], "auth=Bearer ") {
		t.Fatalf("OAUTHBEARER message %q", msg)
	}
	jws := strings.Split(strings.TrimPrefix(parts[1], "auth=Bearer "), ".")
	if len(jws) != 3 || jws[2] != "" {
		t.Fatalf("token %q is not an unsigned JWS", parts[1])
	}
	header, _ := base64.RawURLEncoding.DecodeString(jws[0])
	if string(header) != `{"alg":"none"}` {
		t.Errorf("header %s", header)
	}
	payload, err := base64.RawURLEncoding.DecodeString(jws[1])
	if err != nil {
		t.Fatal(err)
	}
	claims := map[string]any{}
	if err := json.Unmarshal(payload, &claims); err != nil {
		t.Fatal(err)
	}
	ext := map[string]string{}
	for _, kv := range parts[2:] {
		if k, v, ok := strings.Cut(kv, "="); ok {
			ext[k] = v
		}
	}
	return claims, ext
}

func TestCommandConfigOAuthTokenFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "token.jwt")
	if err := os.WriteFile(path, []byte("eyJh.eyJz.sig\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	sc, err := parseCommandConfig(map[string]string{
		"security.protocol":                   "SASL_SSL",
		"sasl.mechanism":                      "OAUTHBEARER",
		"sasl.jaas.config":                    `org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;`,
		"sasl.login.callback.handler.class":   oauthLoginHandler,
		"sasl.oauthbearer.token.endpoint.url": "file://" + path,
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, msg := firstMessage(t, sc); !strings.Contains(string(msg), "\x01auth=Bearer eyJh.eyJz.sig\x01") {
		t.Fatalf("message %q does not carry the file's token", msg)
	}
}

func TestCommandConfigTLS(t *testing.T) {
	sc, err := parseCommandConfig(map[string]string{
		"security.protocol":                     "SSL",
		"ssl.truststore.location":               "/etc/kafka/truststore.p12",
		"ssl.truststore.type":                   "pkcs12",
		"ssl.truststore.password":               testStorePW,
		"ssl.keystore.location":                 "/etc/kafka/client.jks",
		"ssl.keystore.password":                 testStorePW,
		"ssl.key.password":                      testStorePW,
		"ssl.endpoint.identification.algorithm": "",
		"ssl.enabled.protocols":                 "TLSv1.3, TLSv1.2",
		"ssl.protocol":                          "TLSv1.3",
		"ssl.cipher.suites":                     "TLS_AES_128_GCM_SHA256",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := auth.TLSSettings{
		TruststoreType: "PKCS12", TruststoreLocation: "/etc/kafka/truststore.p12", TruststorePassword: testStorePW,
		KeystoreLocation: "/etc/kafka/client.jks", KeystorePassword: testStorePW, KeyPassword: testStorePW,
		EndpointIdentification: "", Protocol: "TLSv1.3", EnabledProtocols: []string{"TLSv1.3", "TLSv1.2"},
		CipherSuites: []string{"TLS_AES_128_GCM_SHA256"},
	}
	if !reflect.DeepEqual(sc.tls, want) {
		t.Errorf("TLS settings\n got %+v\nwant %+v", sc.tls, want)
	}
	if sc.mechanism != nil || !sc.usesTLS() {
		t.Errorf("protocol %s, mechanism %v", sc.protocol, sc.mechanism)
	}

	// PEM inline, and Kafka's default endpoint identification.
	sc, err = parseCommandConfig(map[string]string{
		"security.protocol":              "SASL_SSL",
		"sasl.mechanism":                 "PLAIN",
		"sasl.jaas.config":               `org.apache.kafka.common.security.plain.PlainLoginModule required username="a" password="b";`,
		"ssl.truststore.type":            "PEM",
		"ssl.truststore.certificates":    "-----BEGIN CERTIFICATE-----\n...",
		"ssl.keystore.type":              "PEM",
		"ssl.keystore.key":               "-----BEGIN PRIVATE KEY-----\n...",
		"ssl.keystore.certificate.chain": "-----BEGIN CERTIFICATE-----\n...",
	})
	if err != nil {
		t.Fatal(err)
	}
	if sc.tls.EndpointIdentification != "https" || sc.tls.KeystoreType != "PEM" || sc.tls.KeystoreKey == "" ||
		sc.tls.TruststoreCertificates == "" || sc.mechanism == nil {
		t.Errorf("SASL_SSL with PEM: %+v", sc.tls)
	}
}

func TestCommandConfigPlaintextDefault(t *testing.T) {
	sc, err := parseCommandConfig(map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	opts, err := sc.kgoOpts()
	if err != nil || len(opts) != 0 || sc.protocol != "PLAINTEXT" {
		t.Fatalf("empty config: protocol %s, %d options, %v", sc.protocol, len(opts), err)
	}
}

func TestCommandConfigWarnings(t *testing.T) {
	sc, err := parseCommandConfig(map[string]string{
		"security.protocol":        "PLAINTEXT",
		"client.id":                "mine", // a client config: parseClientSettings' to apply, not warned about here
		"sasl.jaas.config":         scramJAAS("alice", testPassword),
		"sasl.mechanism":           "PLAIN",
		"ssl.truststore.password":  testStorePW,
		"ssl.keymanager.algorithm": "SunX509",
		"bogus.key":                testPassword, // an unknown key's value is not printed either
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`the configuration "bogus.key" was supplied but isn't a known config; ignored`,
		`the configuration "ssl.keymanager.algorithm" chooses a Java security provider and has no meaning here; ignored`,
		`ssl.truststore.password: not used with security.protocol=PLAINTEXT`,
		`sasl.jaas.config, sasl.mechanism: not used with security.protocol=PLAINTEXT`,
	}
	if !reflect.DeepEqual(sc.warnings, want) {
		t.Errorf("warnings\n got %q\nwant %q", sc.warnings, want)
	}
	checkNoSecret(t, strings.Join(sc.warnings, "\n"))
}

func checkNoSecret(t *testing.T, s string) {
	t.Helper()
	for _, secret := range []string{testPassword, testStorePW} {
		if strings.Contains(s, secret) {
			t.Errorf("%q shows a secret", s)
		}
	}
}

func TestCommandConfigErrors(t *testing.T) {
	sasl := func(mech, jaas string, more ...string) map[string]string {
		p := map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": mech, "sasl.jaas.config": jaas}
		for i := 0; i+1 < len(more); i += 2 {
			p[more[i]] = more[i+1]
		}
		return p
	}
	oauthModule := `org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required `
	for _, tc := range []struct {
		name  string
		props map[string]string
		want  string
	}{
		{"bad protocol", map[string]string{"security.protocol": "TLS"}, `security.protocol "TLS" must be one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL`},
		{"no mechanism", map[string]string{"security.protocol": "SASL_SSL", "sasl.jaas.config": scramJAAS("a", testPassword)}, "sasl.mechanism is not set"},
		{"gssapi", sasl("GSSAPI", scramJAAS("a", testPassword)), "GSSAPI (Kerberos) is not supported"},
		{"unknown mechanism", sasl("AWS_MSK_IAM", scramJAAS("a", testPassword)), `sasl.mechanism "AWS_MSK_IAM" is not supported`},
		{"no jaas", map[string]string{"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN"}, "sasl.jaas.config is not set"},
		// The JAAS syntax itself is jaas_test.go's; here only that its
		// errors name the key and show no secret.
		{"unclosed quote", sasl("PLAIN", `org.apache.kafka.common.security.plain.PlainLoginModule required username="a" password="`+testPassword+`;`), "sasl.jaas.config: "},
		{"bad flag", sasl("PLAIN", `org.apache.kafka.common.security.plain.PlainLoginModule mandatory username="a" password="`+testPassword+`";`), "sasl.jaas.config: "},
		{"two modules", sasl("PLAIN", scramJAAS("a", testPassword)+scramJAAS("b", testPassword)), "sasl.jaas.config: "},
		{"no password", sasl("SCRAM-SHA-256", `org.apache.kafka.common.security.scram.ScramLoginModule required username="a";`), "the login module has no password option"},
		{"no username", sasl("SCRAM-SHA-256", `org.apache.kafka.common.security.scram.ScramLoginModule required password="`+testPassword+`";`), "the login module has no username option"},
		{"module does not fit", sasl("PLAIN", oauthModule+`unsecuredLoginStringClaim_sub="a";`), "login module org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule does not go with sasl.mechanism=PLAIN"},
		{"oauth with scram module", sasl("OAUTHBEARER", scramJAAS("a", testPassword)), "does not go with sasl.mechanism=OAUTHBEARER"},
		{"unsecured without sub", sasl("OAUTHBEARER", oauthModule+`unsecuredLoginStringClaim_name="a";`), "needs a principal: set unsecuredLoginStringClaim_sub"},
		{"unsecured custom principal claim", sasl("OAUTHBEARER", oauthModule+`unsecuredLoginPrincipalClaimName="user" unsecuredLoginStringClaim_sub="a";`), "set unsecuredLoginStringClaim_user"},
		{"unsecured exp", sasl("OAUTHBEARER", oauthModule+`unsecuredLoginStringClaim_sub="a" unsecuredLoginNumberClaim_exp="1";`), "the exp claim is set from the clock"},
		{"unsecured bad lifetime", sasl("OAUTHBEARER", oauthModule+`unsecuredLoginStringClaim_sub="a" unsecuredLoginLifetimeSeconds="soon";`), "unsecuredLoginLifetimeSeconds must be a whole number"},
		{"unsecured bad extension", sasl("OAUTHBEARER", oauthModule+`unsecuredLoginStringClaim_sub="a" unsecuredLoginExtension_trace_id="1";`), `extension name "trace_id" is invalid`},
		{"http token endpoint", sasl("OAUTHBEARER", oauthModule+`clientId="c" clientSecret="`+testPassword+`";`,
			"sasl.login.callback.handler.class", oauthLoginHandler, "sasl.oauthbearer.token.endpoint.url", "https://idp/token"), "only a file: URL"},
		{"token file missing", sasl("OAUTHBEARER", oauthModule+`;`,
			"sasl.login.callback.handler.class", oauthLoginHandler, "sasl.oauthbearer.token.endpoint.url", "file:///nonexistent/token"), "no such file"},
		{"endpoint without handler", sasl("OAUTHBEARER", oauthModule+`;`, "sasl.oauthbearer.token.endpoint.url", "file:///t"), "used only with sasl.login.callback.handler.class"},
		{"custom handler", sasl("PLAIN", scramJAAS("a", testPassword), "sasl.login.callback.handler.class", "com.example.Handler"), "Java callback handlers cannot run here"},
		{"bad store type", map[string]string{"security.protocol": "SSL", "ssl.truststore.type": "BKS", "ssl.truststore.password": testStorePW}, `ssl.truststore.type "BKS" must be JKS, PKCS12 or PEM`},
		{"bad endpoint algorithm", map[string]string{"security.protocol": "SSL", "ssl.endpoint.identification.algorithm": "ldaps"}, `ssl.endpoint.identification.algorithm "ldaps" must be https`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseCommandConfig(tc.props)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error is not one line: %q", err)
			}
			checkNoSecret(t, err.Error())
		})
	}
}

func TestReadCommandConfigFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	good := write("good.properties", "# client\nsecurity.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-512\n"+
		"sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\\n    username=\"alice\" \\\n    password=\""+testPassword+"\";\n")
	props, err := readCommandConfigFile(good)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := parseCommandConfig(props)
	if err != nil {
		t.Fatal(err)
	}
	if name, msg := firstMessage(t, sc); name != "SCRAM-SHA-512" || !strings.HasPrefix(string(msg), "n,,n=alice,") {
		t.Fatalf("%s %q", name, msg)
	}

	if _, err := readCommandConfigFile(filepath.Join(dir, "missing.properties")); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("missing file: %v", err)
	}
	// A malformed escape in a password: the error gives the line, not the text.
	bad := write("bad.properties", "security.protocol=SSL\nssl.truststore.password="+testStorePW+`\u12`+"\n")
	_, err = readCommandConfigFile(bad)
	if err == nil || !strings.Contains(err.Error(), "line 2: malformed") {
		t.Errorf("malformed escape: %v", err)
	} else {
		checkNoSecret(t, err.Error())
	}
}

// TestCommandConfigFlag runs a command with --command-config: the file's
// warnings go to stderr, its errors are the command's, before any
// connection is tried.
func TestCommandConfigFlag(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "client.properties")
	if err := os.WriteFile(path, []byte("security.protocol=SASL_SSL\nsasl.mechanism=GSSAPI\nsasl.jaas.config=x required;\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := runCommand(t, "", "topic", "list", "--bootstrap-server", "127.0.0.1:1", "--timeout", "1s", "--command-config", path)
	if r.err == nil || !strings.Contains(r.err.Error(), "--command-config "+path+": sasl.mechanism GSSAPI") {
		t.Fatalf("error %v", r.err)
	}

	if err := os.WriteFile(path, []byte("security.protocol=PLAINTEXT\nacks=all\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r = runCommand(t, "", "topic", "list", "--bootstrap-server", "127.0.0.1:1", "--timeout", "1s", "--command-config", path)
	if r.err == nil || !strings.Contains(r.err.Error(), "cannot reach a broker") {
		t.Fatalf("error %v", r.err)
	}
	want := "warning: --command-config " + path + `: the configuration "acks" was supplied but isn't a known config; ignored` + "\n"
	if r.errOut != want {
		t.Fatalf("stderr %q, want %q", r.errOut, want)
	}
	// Every command that connects has the flag.
	root := &cobra.Command{Use: "gregor"}
	root.AddCommand(Commands()...)
	for _, args := range [][]string{
		{"topic", "create"}, {"topic", "list"}, {"produce"}, {"consume"}, {"group", "list"}, {"group", "reset-offsets"},
		{"config", "get"}, {"cluster", "describe"}, {"transactions", "list"}, {"bench", "produce"}, {"bench", "consume"},
	} {
		cmd, _, err := root.Find(args)
		if err != nil || cmd.Name() != args[len(args)-1] {
			t.Fatalf("%v: %v, %v", args, cmd.Name(), err)
		}
		if cmd.Flag("command-config") == nil {
			t.Errorf("gregor %s has no --command-config", strings.Join(args, " "))
		}
	}
}
