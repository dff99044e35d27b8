//go:build e2e

package test

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	ksasl "github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	xdgscram "github.com/xdg-go/scram"

	"gregor/internal/auth/authtest"
)

// The users of the secure broker. The passwords are distinctive so that
// the check that the broker never logs them cannot match anything else.
const (
	// alice has SCRAM-SHA-512, written by `storage format --add-scram`.
	aliceUser, alicePassword = "alice", "alice-Scram512-pw-q7Rk"
	// bob has SCRAM-SHA-256, set by `gregor user scram set` once running.
	bobUser, bobPassword = "bob", "bob-Scram256-pw-v3Tn"
	// carol is a PLAIN user of the SASL listeners' JAAS configurations.
	carolUser, carolPassword = "carol", "carol-Plain-pw-x9Wd"
	// wrongPassword is what the refused clients try.
	wrongPassword = "wrong-pw-k5Zs"
)

// secRecords is how many records each client writes and reads back.
const secRecords = 50

// kcatAuthFailed is how librdkafka shows the broker's message for a bad
// login (Gregor's is the same for an unknown user and a wrong password).
const kcatAuthFailed = "SASL authentication error: Authentication failed"

// secureBroker is one gregor process with a listener of every security
// protocol: PLAINTEXT (the admin's), SSL (client certificates required,
// principal mapping rules), SASL_SSL (SCRAM-SHA-512 and PLAIN) and
// SASL_PLAINTEXT (PLAIN and SCRAM-SHA-256), with /metrics on
// gregor.http.listen.
type secureBroker struct {
	*broker
	pki      *authtest.PKI
	addrs    map[string]string // by listener name
	httpAddr string
}

func startSecureBroker(t *testing.T) *secureBroker {
	t.Helper()
	authtest.RequireOpenSSL(t)
	pki := authtest.NewPKI(t, t.TempDir())
	b := &broker{t: t, dataDir: t.TempDir(), port: freePort(t),
		// Debug logging: the passwords must not show even there.
		flags: []string{"--log-level", "debug"}}
	sb := &secureBroker{broker: b, pki: pki, addrs: map[string]string{"PLAINTEXT": b.addr()},
		httpAddr: fmt.Sprintf("127.0.0.1:%d", freePort(t))}
	listeners := []string{"PLAINTEXT://" + b.addr()}
	for _, name := range []string{"SSL", "SASL_SSL", "SASL_PLAINTEXT", "CONTROLLER"} {
		sb.addrs[name] = fmt.Sprintf("127.0.0.1:%d", freePort(t))
		listeners = append(listeners, name+"://"+sb.addrs[name])
	}
	plainJAAS := fmt.Sprintf(`org.apache.kafka.common.security.plain.PlainLoginModule required user_%s="%s";`, carolUser, carolPassword)
	const scramJAAS = `org.apache.kafka.common.security.scram.ScramLoginModule required;`
	b.args = []string{
		"listeners=" + strings.Join(listeners, ","),
		"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_SSL:SASL_SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
		"controller.quorum.voters=1@" + sb.addrs["CONTROLLER"],
		"inter.broker.listener.name=PLAINTEXT",
		"log.dirs=" + b.dataDir,
		"gregor.http.listen=" + sb.httpAddr,
		"ssl.keystore.type=PEM",
		"ssl.keystore.location=" + pki.Server.KeystorePEM,
		"ssl.key.password=" + authtest.Password,
		"ssl.truststore.type=PEM",
		"ssl.truststore.location=" + pki.CA.Cert,
		"listener.name.ssl.ssl.client.auth=required",
		"listener.name.ssl.ssl.principal.mapping.rules=RULE:^CN=(.*)$/$1/U,DEFAULT",
		"listener.name.sasl_ssl.sasl.enabled.mechanisms=SCRAM-SHA-512,PLAIN",
		"listener.name.sasl_ssl.plain.sasl.jaas.config=" + plainJAAS,
		"listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=" + scramJAAS,
		"listener.name.sasl_plaintext.sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config=" + plainJAAS,
		"listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config=" + scramJAAS,
	}

	out, err := run(t, 10*time.Second, "", gregorBin, "storage", "random-uuid")
	if err != nil {
		t.Fatalf("random-uuid: %v\n%s", err, out)
	}
	format := []string{"storage", "format", "--cluster-id", strings.TrimSpace(out)}
	for _, a := range b.args {
		format = append(format, "--override", a)
	}
	format = append(format, "--add-scram", fmt.Sprintf("SCRAM-SHA-512=[name=%s,password=%s]", aliceUser, alicePassword))
	if out, err := run(t, 10*time.Second, "", gregorBin, format...); err != nil {
		t.Fatalf("storage format: %v\n%s", err, out)
	}
	b.start()
	t.Cleanup(b.stop)
	t.Cleanup(func() {
		if t.Failed() {
			// The tail, and before it what a refusal logs from earlier on.
			var notable []string
			for _, line := range strings.Split(fullLog(t, b), "\n") {
				if strings.Contains(line, "authentication") || strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR") {
					notable = append(notable, line)
				}
			}
			t.Logf("broker log, authentication lines, warnings and errors:\n%s\nbroker log tail:\n%s", strings.Join(notable, "\n"), b.log())
		}
	})

	if out, err := run(t, 30*time.Second, "", gregorBin, "user", "scram", "set", "--bootstrap-server", b.addr(),
		"--user", bobUser, "--mechanism", "SCRAM-SHA-256", "--password", bobPassword); err != nil {
		t.Fatalf("gregor user scram set: %v\n%s", err, out)
	}
	// The credential reaches the broker's metadata image shortly after the
	// controller committed it.
	waitUntil(t, "bob's SCRAM-SHA-256 credential works", 20*time.Second, func() error {
		return sb.ping("SASL_PLAINTEXT", sb.goodOpts(t, "SASL_PLAINTEXT")...)
	})
	return sb
}

// waitUntil polls check until it succeeds or timeout passes.
func waitUntil(t *testing.T, what string, timeout time.Duration, check func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v: %v", what, timeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// tlsConfig trusts caCert and presents id's certificate (none if nil).
func tlsConfig(t *testing.T, caCert string, id *authtest.Identity) *tls.Config {
	t.Helper()
	pem, err := os.ReadFile(caCert)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		t.Fatalf("no certificate in %s", caCert)
	}
	cfg := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if id != nil {
		cert, err := tls.LoadX509KeyPair(id.Chain, id.Key)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg
}

// goodOpts are franz-go options that authenticate on a listener.
func (sb *secureBroker) goodOpts(t *testing.T, listener string) []kgo.Opt {
	t.Helper()
	switch listener {
	case "PLAINTEXT":
		return nil
	case "SSL":
		return []kgo.Opt{kgo.DialTLSConfig(tlsConfig(t, sb.pki.CA.Cert, sb.pki.Client))}
	case "SASL_SSL":
		return []kgo.Opt{kgo.DialTLSConfig(tlsConfig(t, sb.pki.CA.Cert, nil)),
			kgo.SASL(scram.Auth{User: aliceUser, Pass: alicePassword}.AsSha512Mechanism())}
	case "SASL_PLAINTEXT":
		return []kgo.Opt{kgo.SASL(scram.Auth{User: bobUser, Pass: bobPassword}.AsSha256Mechanism())}
	}
	t.Fatalf("no listener %s", listener)
	return nil
}

// ping connects to a listener with franz-go and asks for metadata once.
func (sb *secureBroker) ping(listener string, opts ...kgo.Opt) error {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(sb.addrs[listener]),
		kgo.DialTimeout(5 * time.Second), kgo.RequestRetries(0)}, opts...)...)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return cl.Ping(ctx)
}

// failedAuthentications scrapes /metrics for
// kafka_server_socket_server_metrics_failed_authentication_total, by
// "listener/mechanism".
func (sb *secureBroker) failedAuthentications(t *testing.T) map[string]float64 {
	t.Helper()
	resp, err := http.Get("http://" + sb.httpAddr + "/metrics")
	if err != nil {
		t.Fatalf("scrape /metrics: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape /metrics: %s", resp.Status)
	}
	const name = "kafka_server_socket_server_metrics_failed_authentication_total{"
	label := regexp.MustCompile(`(\w+)="([^"]*)"`)
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), name)
		if !ok {
			continue
		}
		labels, value, ok := strings.Cut(line, "} ")
		if !ok {
			t.Fatalf("metric line %q", sc.Text())
		}
		l := map[string]string{}
		for _, m := range label.FindAllStringSubmatch(labels, -1) {
			l[m[1]] = m[2]
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			t.Fatalf("metric line %q: %v", sc.Text(), err)
		}
		out[l["listener"]+"/"+l["mechanism"]] = v
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("scrape /metrics: %v", err)
	}
	return out
}

// wantRoundTrip checks that a client wrote secRecords records at offsets
// 0..n-1 and read back exactly them, in order.
func wantRoundTrip(t *testing.T, client, topic string, offsets []int64, got []string) {
	t.Helper()
	var want []string
	for i := range secRecords {
		want = append(want, fmt.Sprintf("%s-%04d", topic, i))
		if i >= len(offsets) || offsets[i] != int64(i) {
			t.Errorf("%s: record %d written at offsets %v, want 0..%d", client, i, offsets, secRecords-1)
			break
		}
	}
	if len(offsets) != secRecords {
		t.Errorf("%s: %d records written, want %d", client, len(offsets), secRecords)
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s: read back %d records, want %d (%s)", client, len(got), len(want), firstDiff(got, want))
	}
}

// TestSecurityClients drives one broker with a listener of every security
// protocol with real third-party clients, each writing records and reading
// exactly them back: kcat (librdkafka) over SSL with a client certificate,
// PLAIN and SCRAM-SHA-512 on SASL_SSL and PLAIN on SASL_PLAINTEXT;
// kafka-python (SaslHandshake v0 and raw tokens) with SCRAM-SHA-256 and
// SCRAM-SHA-512; confluent-kafka with SCRAM-SHA-512 and PLAIN; sarama with
// SCRAM-SHA-512 (handshake v0 and v1) and with a client certificate.
// librdkafka before 2.6.1 (Debian bookworm's 2.0.2) repeats its nonce in
// the SCRAM final message; Gregor accepts it as Kafka 3.8.1-3.9 did
// (Kafka 4 refuses those clients). Then the refusals: a wrong password, unknown
// users, missing and untrusted certificates, the wrong protocol on a port,
// requests before SASL; each is counted in failed_authentication_total
// and leaves the broker serving. The broker's log, at debug level, never
// shows a password.
func TestSecurityClients(t *testing.T) {
	t.Parallel()
	sb := startSecureBroker(t)
	admin := newKgo(t, sb.broker)
	ca := sb.pki.CA.Cert

	t.Run("clients", func(t *testing.T) {
		topic := func(t *testing.T) string {
			name := "sec-" + regexp.MustCompile(`[^a-zA-Z0-9]+`).ReplaceAllString(strings.TrimPrefix(t.Name(), "TestSecurityClients/clients/"), "-")
			createTopic(t, admin, name, 1, nil)
			return name
		}
		kcatCases := []struct {
			name, listener string
			props          []string
		}{
			{"SSL-client-certificate", "SSL", []string{"security.protocol=ssl", "ssl.ca.location=" + ca,
				"ssl.certificate.location=" + sb.pki.Client.Cert, "ssl.key.location=" + sb.pki.Client.Key}},
			{"SASL_SSL-SCRAM-SHA-512", "SASL_SSL", []string{"security.protocol=sasl_ssl", "ssl.ca.location=" + ca,
				"sasl.mechanisms=SCRAM-SHA-512", "sasl.username=" + aliceUser, "sasl.password=" + alicePassword}},
			{"SASL_SSL-PLAIN", "SASL_SSL", []string{"security.protocol=sasl_ssl", "ssl.ca.location=" + ca,
				"sasl.mechanisms=PLAIN", "sasl.username=" + carolUser, "sasl.password=" + carolPassword}},
			{"SASL_PLAINTEXT-PLAIN", "SASL_PLAINTEXT", []string{"security.protocol=sasl_plaintext",
				"sasl.mechanisms=PLAIN", "sasl.username=" + carolUser, "sasl.password=" + carolPassword}},
		}
		for _, c := range kcatCases {
			t.Run("kcat/"+c.name, func(t *testing.T) {
				needKcat(t)
				t.Parallel()
				t.Logf("kcat with librdkafka %s", kcatLibrdkafka(t))
				kcatRoundTrip(t, sb.addrs[c.listener], topic(t), c.props)
			})
		}

		pyCases := []struct {
			name, client, listener string
			security               map[string]any
		}{
			{"kafka-python/SASL_PLAINTEXT-SCRAM-SHA-256", "kafka-python", "SASL_PLAINTEXT", map[string]any{
				"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "SCRAM-SHA-256",
				"sasl_plain_username": bobUser, "sasl_plain_password": bobPassword}},
			{"kafka-python/SASL_SSL-SCRAM-SHA-512", "kafka-python", "SASL_SSL", map[string]any{
				"security_protocol": "SASL_SSL", "ssl_cafile": ca, "sasl_mechanism": "SCRAM-SHA-512",
				"sasl_plain_username": aliceUser, "sasl_plain_password": alicePassword}},
			{"confluent-kafka/SASL_SSL-SCRAM-SHA-512", "confluent", "SASL_SSL", map[string]any{
				"security.protocol": "SASL_SSL", "ssl.ca.location": ca, "sasl.mechanisms": "SCRAM-SHA-512",
				"sasl.username": aliceUser, "sasl.password": alicePassword}},
			{"confluent-kafka/SASL_SSL-PLAIN", "confluent", "SASL_SSL", map[string]any{
				"security.protocol": "SASL_SSL", "ssl.ca.location": ca, "sasl.mechanisms": "PLAIN",
				"sasl.username": carolUser, "sasl.password": carolPassword}},
		}
		for _, c := range pyCases {
			t.Run(c.name, func(t *testing.T) {
				needPythonModule(t, map[string]string{"kafka-python": "kafka", "confluent": "confluent_kafka"}[c.client])
				t.Parallel()
				pyRoundTrip(t, sb, c.client, c.listener, topic(t), c.security)
			})
		}

		saramaCases := []struct {
			name, listener string
			configure      func(*testing.T, *sarama.Config)
		}{
			{"SASL_SSL-SCRAM-SHA-512-handshake-v1", "SASL_SSL", func(t *testing.T, cfg *sarama.Config) {
				saramaSCRAM(cfg, aliceUser, alicePassword, sarama.SASLHandshakeV1)
				cfg.Net.TLS.Enable, cfg.Net.TLS.Config = true, tlsConfig(t, ca, nil)
			}},
			{"SASL_SSL-SCRAM-SHA-512-handshake-v0", "SASL_SSL", func(t *testing.T, cfg *sarama.Config) {
				saramaSCRAM(cfg, aliceUser, alicePassword, sarama.SASLHandshakeV0)
				cfg.Net.TLS.Enable, cfg.Net.TLS.Config = true, tlsConfig(t, ca, nil)
			}},
			{"SSL-client-certificate", "SSL", func(t *testing.T, cfg *sarama.Config) {
				cfg.Net.TLS.Enable, cfg.Net.TLS.Config = true, tlsConfig(t, ca, sb.pki.Client)
			}},
		}
		for _, c := range saramaCases {
			t.Run("sarama/"+c.name, func(t *testing.T) {
				t.Parallel()
				cfg := saramaConfig("none", sarama.WaitForAll)
				c.configure(t, cfg)
				saramaSecureRoundTrip(t, sb.addrs[c.listener], topic(t), cfg)
			})
		}
	})

	t.Run("refused", func(t *testing.T) { secureRefusals(t, sb) })

	t.Run("no-passwords-in-log", func(t *testing.T) {
		log := fullLog(t, sb.broker)
		for _, pw := range []string{alicePassword, bobPassword, carolPassword, wrongPassword, authtest.Password} {
			for i, line := range strings.Split(log, "\n") {
				if strings.Contains(line, pw) {
					t.Errorf("the broker log shows the password %q, line %d: %s", pw, i+1, line)
				}
			}
		}
	})
}

func needKcat(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("kcat"); err != nil {
		t.Skip("kcat not installed")
	}
}

// kcatWith runs kcat against addr with the -X properties props.
func kcatWith(t *testing.T, addr string, props []string, stdin string, args ...string) (string, error) {
	t.Helper()
	full := []string{"-b", addr}
	for _, p := range props {
		full = append(full, "-X", p)
	}
	return run(t, 60*time.Second, stdin, "kcat", append(full, args...)...)
}

func kcatRoundTrip(t *testing.T, addr, topic string, props []string) {
	var in strings.Builder
	for i := range secRecords {
		fmt.Fprintf(&in, "k%04d:%s-%04d\n", i, topic, i)
	}
	if out, err := kcatWith(t, addr, props, in.String(), "-P", "-t", topic, "-p", "0", "-K:"); err != nil {
		t.Fatalf("kcat produce: %v\n%s", err, out)
	}
	out, err := kcatWith(t, addr, props, "", "-C", "-t", topic, "-p", "0", "-o", "beginning", "-e",
		"-c", strconv.Itoa(secRecords), "-f", "%o %s\n")
	if err != nil {
		t.Fatalf("kcat consume: %v\n%s", err, out)
	}
	var offsets []int64
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		o, v, ok := strings.Cut(line, " ")
		n, err := strconv.ParseInt(o, 10, 64)
		if !ok || err != nil {
			t.Fatalf("kcat consume: unexpected line %q\n%s", line, out)
		}
		offsets, got = append(offsets, n), append(got, v)
	}
	wantRoundTrip(t, "kcat", topic, offsets, got)
}

func pyRoundTrip(t *testing.T, sb *secureBroker, client, listener, topic string, security map[string]any) {
	script, err := os.ReadFile("security_clients.py")
	if err != nil {
		t.Fatal(err)
	}
	spec, err := json.Marshal(map[string]any{"client": client, "bootstrap": sb.addrs[listener], "topic": topic,
		"n": secRecords, "security": security})
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Version    string   `json:"version"`
		Librdkafka string   `json:"librdkafka"`
		Error      string   `json:"error"`
		Offsets    []int64  `json:"offsets"`
		Values     []string `json:"values"`
	}
	pyRun(t, string(script), &out, string(spec))
	t.Logf("%s %s", client, out.Version)
	if out.Error != "" {
		t.Fatalf("%s: %s", client, out.Error)
	}
	wantRoundTrip(t, client, topic, out.Offsets, out.Values)
}

// kcatLibrdkafka is the librdkafka version kcat is built with.
func kcatLibrdkafka(t *testing.T) string {
	t.Helper()
	out, err := run(t, 10*time.Second, "", "kcat", "-V")
	if err != nil {
		t.Fatalf("kcat -V: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`librdkafka (\d+\.\d+\.\d+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("kcat -V names no librdkafka version:\n%s", out)
	}
	return m[1]
}

// xdgSCRAM is sarama's SCRAMClient on github.com/xdg-go/scram.
type xdgSCRAM struct {
	hash xdgscram.HashGeneratorFcn
	conv *xdgscram.ClientConversation
}

func (x *xdgSCRAM) Begin(user, password, authzID string) error {
	c, err := x.hash.NewClient(user, password, authzID)
	if err != nil {
		return err
	}
	x.conv = c.NewConversation()
	return nil
}

func (x *xdgSCRAM) Step(challenge string) (string, error) { return x.conv.Step(challenge) }
func (x *xdgSCRAM) Done() bool                            { return x.conv.Done() }

// saramaSCRAM sets up SCRAM-SHA-512 with a SaslHandshake version (v0:
// raw tokens, which sarama sends only without ApiVersions).
func saramaSCRAM(cfg *sarama.Config, user, password string, handshake int16) {
	cfg.Net.SASL.Enable = true
	cfg.Net.SASL.Mechanism = sarama.SASLTypeSCRAMSHA512
	cfg.Net.SASL.User, cfg.Net.SASL.Password = user, password
	cfg.Net.SASL.Version = handshake
	cfg.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &xdgSCRAM{hash: xdgscram.SHA512} }
	if handshake == sarama.SASLHandshakeV0 {
		cfg.ApiVersionsRequest = false
	}
}

func saramaSecureRoundTrip(t *testing.T, addr, topic string, cfg *sarama.Config) {
	producer, err := sarama.NewSyncProducer([]string{addr}, cfg)
	if err != nil {
		t.Fatalf("sarama producer: %v", err)
	}
	defer producer.Close()
	msgs := make([]*sarama.ProducerMessage, secRecords)
	for i := range msgs {
		msgs[i] = &sarama.ProducerMessage{Topic: topic, Partition: 0,
			Key: sarama.StringEncoder(fmt.Sprintf("k%04d", i)), Value: sarama.StringEncoder(fmt.Sprintf("%s-%04d", topic, i))}
	}
	if err := producer.SendMessages(msgs); err != nil {
		t.Fatalf("sarama SendMessages: %v", err)
	}
	var offsets []int64
	for _, m := range msgs {
		offsets = append(offsets, m.Offset)
	}

	consumer, err := sarama.NewConsumer([]string{addr}, cfg)
	if err != nil {
		t.Fatalf("sarama consumer: %v", err)
	}
	defer consumer.Close()
	pc, err := consumer.ConsumePartition(topic, 0, sarama.OffsetOldest)
	if err != nil {
		t.Fatalf("sarama ConsumePartition: %v", err)
	}
	defer pc.Close()
	var got []string
	deadline := time.After(30 * time.Second)
	for len(got) < secRecords {
		select {
		case m := <-pc.Messages():
			got = append(got, string(m.Value))
		case err := <-pc.Errors():
			t.Fatalf("sarama consume: %v", err)
		case <-deadline:
			t.Fatalf("sarama consume: %d of %d records within 30s", len(got), secRecords)
		}
	}
	wantRoundTrip(t, "sarama", topic, offsets, got)
}

// secureRefusals runs each refused client in turn. After each, the
// failed_authentication_total series of its listener and mechanism has
// grown (none for the PLAINTEXT listener, which does not authenticate),
// and a good client is still served on that listener.
func secureRefusals(t *testing.T, sb *secureBroker) {
	ca := sb.pki.CA.Cert
	other := authtest.NewPKI(t, t.TempDir()) // another CA, its server and client
	clientCert := []string{"ssl.certificate.location=" + sb.pki.Client.Cert, "ssl.key.location=" + sb.pki.Client.Key}
	scram512 := func(user, password string) []string {
		return []string{"security.protocol=sasl_ssl", "ssl.ca.location=" + ca, "sasl.mechanisms=SCRAM-SHA-512",
			"sasl.username=" + user, "sasl.password=" + password}
	}
	var kgoWrongPassword, kcatWrongPassword string

	cases := []struct {
		name      string
		listener  string // where the refusal happens and the good client is checked
		mechanism string // label of the failed_authentication_total that must grow
		refuse    func(t *testing.T)
	}{
		{"kcat-wrong-PLAIN-password", "SASL_SSL", "PLAIN", func(t *testing.T) {
			kcatWrongPassword = kcatAuthMessage(t, kcatRefused(t, sb.addrs["SASL_SSL"], []string{"security.protocol=sasl_ssl",
				"ssl.ca.location=" + ca, "sasl.mechanisms=PLAIN", "sasl.username=" + carolUser, "sasl.password=" + wrongPassword}, kcatAuthFailed))
		}},
		{"kcat-unknown-PLAIN-user", "SASL_PLAINTEXT", "PLAIN", func(t *testing.T) {
			msg := kcatAuthMessage(t, kcatRefused(t, sb.addrs["SASL_PLAINTEXT"], []string{"security.protocol=sasl_plaintext",
				"sasl.mechanisms=PLAIN", "sasl.username=mallory", "sasl.password=" + wrongPassword}, kcatAuthFailed))
			if msg != kcatWrongPassword {
				t.Errorf("an unknown user is told %q, a wrong password %q: they must not differ", msg, kcatWrongPassword)
			}
		}},
		{"kcat-wrong-SCRAM-SHA-512-password", "SASL_SSL", "SCRAM-SHA-512", func(t *testing.T) {
			msg := kcatAuthMessage(t, kcatRefused(t, sb.addrs["SASL_SSL"], scram512(aliceUser, wrongPassword), kcatAuthFailed))
			if msg != kcatWrongPassword {
				t.Errorf("a wrong SCRAM password is told %q, a wrong PLAIN password %q: they must not differ", msg, kcatWrongPassword)
			}
		}},
		{"kcat-unknown-SCRAM-SHA-512-user", "SASL_SSL", "SCRAM-SHA-512", func(t *testing.T) {
			msg := kcatAuthMessage(t, kcatRefused(t, sb.addrs["SASL_SSL"], scram512("mallory", wrongPassword), kcatAuthFailed))
			if msg != kcatWrongPassword {
				t.Errorf("an unknown SCRAM user is told %q, a wrong PLAIN password %q: they must not differ", msg, kcatWrongPassword)
			}
			const reason = `reason="SCRAM-SHA-512: user \"mallory\": unknown user"`
			waitUntil(t, "the broker logs the reason", 10*time.Second, func() error {
				if !strings.Contains(fullLog(t, sb.broker), reason) {
					return fmt.Errorf("no %s in the broker log", reason)
				}
				return nil
			})
		}},
		{"franz-go-wrong-SCRAM-SHA-256-password", "SASL_PLAINTEXT", "SCRAM-SHA-256", func(t *testing.T) {
			kgoWrongPassword = kgoRefused(t, sb, "SASL_PLAINTEXT", scram.Auth{User: bobUser, Pass: wrongPassword}.AsSha256Mechanism())
		}},
		{"franz-go-unknown-SCRAM-SHA-256-user", "SASL_PLAINTEXT", "SCRAM-SHA-256", func(t *testing.T) {
			msg := kgoRefused(t, sb, "SASL_PLAINTEXT", scram.Auth{User: "mallory", Pass: wrongPassword}.AsSha256Mechanism())
			if msg != kgoWrongPassword {
				t.Errorf("an unknown user is told %q, a wrong password %q: they must not differ", msg, kgoWrongPassword)
			}
		}},
		{"kcat-no-client-certificate", "SSL", "SSL", func(t *testing.T) {
			kcatRefused(t, sb.addrs["SSL"], []string{"security.protocol=ssl", "ssl.ca.location=" + ca}, "")
		}},
		{"kcat-trusts-another-CA", "SSL", "SSL", func(t *testing.T) {
			kcatRefused(t, sb.addrs["SSL"], append([]string{"security.protocol=ssl", "ssl.ca.location=" + other.CA.Cert}, clientCert...), "")
		}},
		{"sarama-certificate-from-another-CA", "SSL", "SSL", func(t *testing.T) {
			cfg := saramaConfig("none", sarama.WaitForAll)
			cfg.Net.TLS.Enable, cfg.Net.TLS.Config = true, tlsConfig(t, ca, other.Client)
			cfg.Metadata.Retry.Max = 0
			cl, err := sarama.NewClient([]string{sb.addrs["SSL"]}, cfg)
			if err == nil {
				cl.Close()
				t.Fatal("sarama connected with a certificate from another CA")
			}
		}},
		{"kcat-plaintext-on-the-SSL-port", "SSL", "SSL", func(t *testing.T) {
			kcatRefused(t, sb.addrs["SSL"], []string{"security.protocol=plaintext"}, "")
		}},
		{"kcat-SASL_PLAINTEXT-on-the-SASL_SSL-port", "SASL_SSL", "SSL", func(t *testing.T) {
			kcatRefused(t, sb.addrs["SASL_SSL"], []string{"security.protocol=sasl_plaintext",
				"sasl.mechanisms=SCRAM-SHA-512", "sasl.username=" + aliceUser, "sasl.password=" + alicePassword}, "")
		}},
		// A TLS ClientHello read as a frame size is far beyond
		// sasl.server.max.receive.size: Kafka fails the authentication
		// ("invalid receive size") before a mechanism is chosen.
		{"kcat-TLS-on-the-SASL_PLAINTEXT-port", "SASL_PLAINTEXT", "", func(t *testing.T) {
			kcatRefused(t, sb.addrs["SASL_PLAINTEXT"], []string{"security.protocol=sasl_ssl", "ssl.ca.location=" + ca,
				"sasl.mechanisms=SCRAM-SHA-256", "sasl.username=" + bobUser, "sasl.password=" + bobPassword}, "")
		}},
		// On PLAINTEXT the same bytes are just an oversized request.
		{"kcat-TLS-on-the-PLAINTEXT-port", "PLAINTEXT", "", func(t *testing.T) {
			kcatRefused(t, sb.addrs["PLAINTEXT"], []string{"security.protocol=ssl", "ssl.ca.location=" + ca}, "")
		}},
		// Kafka closes the connection on any request but ApiVersions and
		// SaslHandshake before authentication, and counts the failure.
		{"raw-Metadata-before-SaslHandshake", "SASL_PLAINTEXT", "", func(t *testing.T) {
			rc := dialRawAddr(t, sb.addrs["SASL_PLAINTEXT"])
			if err := rc.write(rc.frame(kmsg.NewPtrMetadataRequest())); err != nil {
				t.Fatal(err)
			}
			rc.expectClosed("Metadata before SaslHandshake")
		}},
		{"raw-Metadata-before-SaslAuthenticate", "SASL_PLAINTEXT", "SCRAM-SHA-256", func(t *testing.T) {
			rc := dialRawAddr(t, sb.addrs["SASL_PLAINTEXT"])
			hs := kmsg.NewPtrSASLHandshakeRequest()
			hs.SetVersion(1)
			hs.Mechanism = "SCRAM-SHA-256"
			if resp := rc.roundTrip(hs).(*kmsg.SASLHandshakeResponse); resp.ErrorCode != 0 {
				t.Fatalf("SaslHandshake: error %d, mechanisms %v", resp.ErrorCode, resp.SupportedMechanisms)
			}
			if err := rc.write(rc.frame(kmsg.NewPtrMetadataRequest())); err != nil {
				t.Fatal(err)
			}
			rc.expectClosed("Metadata between SaslHandshake and SaslAuthenticate")
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			key := c.listener + "/" + c.mechanism
			before := sb.failedAuthentications(t)
			c.refuse(t)
			if c.listener == "PLAINTEXT" {
				// Let the broker see the connection's end before looking.
				waitUntil(t, "broker serves PLAINTEXT", 10*time.Second, func() error { return sb.ping("PLAINTEXT") })
				for k, v := range sb.failedAuthentications(t) {
					if strings.HasPrefix(k, "PLAINTEXT/") {
						t.Errorf("failed_authentication_total{%s} = %v on a listener without authentication", k, v)
					}
				}
			} else {
				waitUntil(t, fmt.Sprintf("failed_authentication_total{%s} grows from %v", key, before[key]), 10*time.Second, func() error {
					if now := sb.failedAuthentications(t)[key]; now <= before[key] {
						return fmt.Errorf("still %v; all: %v", now, sb.failedAuthentications(t))
					}
					return nil
				})
			}
			if err := sb.ping(c.listener, sb.goodOpts(t, c.listener)...); err != nil {
				t.Fatalf("a good client on %s after the refusal: %v", c.listener, err)
			}
		})
	}
}

// kcatRefused runs kcat -L and fails unless kcat fails; want, if not empty,
// must be in its output. The output must not show the password tried.
func kcatRefused(t *testing.T, addr string, props []string, want string) string {
	t.Helper()
	needKcat(t)
	start := time.Now()
	// kcat -L goes on retrying until its metadata timeout (-m seconds);
	// a refusal on 127.0.0.1 is seen in milliseconds.
	out, err := kcatWith(t, addr, props, "", "-L", "-m", "2")
	if err == nil {
		t.Fatalf("kcat -L was served:\n%s", out)
		return out
	}
	t.Logf("kcat refused after %v: %s", time.Since(start).Round(time.Millisecond), firstLine(out))
	if want != "" && !strings.Contains(out, want) {
		t.Errorf("kcat output lacks %q:\n%s", want, out)
	}
	if strings.Contains(out, wrongPassword) {
		t.Errorf("kcat output shows the password:\n%s", out)
	}
	return out
}

// kgoRefused authenticates with franz-go and returns the broker's message,
// after checking that the error is SASL_AUTHENTICATION_FAILED.
func kgoRefused(t *testing.T, sb *secureBroker, listener string, m ksasl.Mechanism) string {
	t.Helper()
	err := sb.ping(listener, kgo.SASL(m))
	switch {
	case err == nil:
		t.Fatal("franz-go was served")
	case !strings.Contains(err.Error(), "SASL_AUTHENTICATION_FAILED") || !strings.Contains(err.Error(), "Authentication failed"):
		t.Errorf("franz-go: error %q, want SASL_AUTHENTICATION_FAILED with the broker's message", err)
	case strings.Contains(err.Error(), wrongPassword):
		t.Errorf("franz-go: the error shows the password: %v", err)
	}
	t.Logf("franz-go: %v", err)
	return err.Error()
}

// kcatAuthMessage is the broker's message in librdkafka's report of a
// refused login, without its timing.
func kcatAuthMessage(t *testing.T, out string) string {
	t.Helper()
	m := regexp.MustCompile(`SASL authentication error: (.*?) \(after \d+ms`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no SASL authentication error in kcat's output:\n%s", out)
	}
	return m[1]
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}

// dialRawAddr is dialRaw to any listener.
func dialRawAddr(t *testing.T, addr string) *rawConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	return &rawConn{t: t, c: c, fmt: kmsg.NewRequestFormatter(kmsg.FormatterClientID("gregor-e2e-raw"))}
}
