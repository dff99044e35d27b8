package cli

import (
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"

	"gregor/internal/auth"
	"gregor/internal/config"
)

// securityConfig is how a command connects to the brokers, as a Kafka
// client properties file (--command-config, as Kafka's tools take it)
// says: the security protocol, the TLS settings, the SASL mechanism with
// its credentials.
type securityConfig struct {
	protocol  string           // PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL
	tls       auth.TLSSettings // used with SSL and SASL_SSL
	mechanism sasl.Mechanism   // franz-go's; nil unless SASL_*
	warnings  []string         // keys supplied but not used, one line each
}

func (s securityConfig) usesTLS() bool  { return s.protocol == "SSL" || s.protocol == "SASL_SSL" }
func (s securityConfig) usesSASL() bool { return strings.HasPrefix(s.protocol, "SASL_") }

// kgoOpts are the client options that apply the configuration.
func (s securityConfig) kgoOpts() ([]kgo.Opt, error) {
	var opts []kgo.Opt
	if s.usesTLS() {
		// No server name: kgo sets each connection's to the host it dials,
		// which endpoint identification checks the certificate against.
		tlsCfg, err := auth.ClientTLS(s.tls, "")
		if err != nil {
			return nil, fmt.Errorf("--command-config: TLS: %w", err)
		}
		opts = append(opts, kgo.DialTLSConfig(tlsCfg))
	}
	if s.mechanism != nil {
		opts = append(opts, kgo.SASL(s.mechanism))
	}
	return opts, nil
}

// readCommandConfigFile reads the properties of a --command-config file.
func readCommandConfigFile(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--command-config: %w", err)
	}
	defer f.Close()
	props, err := config.ParseProperties(f)
	if err != nil {
		return nil, fmt.Errorf("--command-config %s: %w", path, err)
	}
	return props, nil
}

// The keys parseCommandConfig applies. Kafka's client settings that are not
// about security (acks, client.id, group.id, ...) are parseClientSettings';
// any other key is warned about and ignored.
var (
	saslKeys = []string{
		"sasl.mechanism", "sasl.jaas.config",
		"sasl.login.callback.handler.class", "sasl.oauthbearer.token.endpoint.url",
	}
	sslKeys = []string{
		"ssl.truststore.location", "ssl.truststore.type", "ssl.truststore.password", "ssl.truststore.certificates",
		"ssl.keystore.location", "ssl.keystore.type", "ssl.keystore.password", "ssl.key.password",
		"ssl.keystore.key", "ssl.keystore.certificate.chain",
		"ssl.endpoint.identification.algorithm", "ssl.protocol", "ssl.enabled.protocols", "ssl.cipher.suites",
	}
	// jvmOnlyKeys choose Java security providers and factories; they have
	// no counterpart in Go's crypto/tls.
	jvmOnlyKeys = []string{
		"ssl.keymanager.algorithm", "ssl.trustmanager.algorithm", "ssl.secure.random.implementation",
		"ssl.provider", "ssl.engine.factory.class",
	}
)

var securityProtocols = []string{"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"}

// parseCommandConfig turns the security properties of a Kafka client
// configuration into a securityConfig. Bad values are errors naming the key (never
// quoting a secret); keys it does not use become warnings, as Kafka's
// clients log "supplied but isn't a known config".
func parseCommandConfig(props map[string]string) (securityConfig, error) {
	sc := securityConfig{protocol: "PLAINTEXT"}
	if v, ok := props["security.protocol"]; ok {
		sc.protocol = strings.ToUpper(strings.TrimSpace(v))
		if !slices.Contains(securityProtocols, sc.protocol) {
			return securityConfig{}, fmt.Errorf("security.protocol %q must be one of %s", v, strings.Join(securityProtocols, ", "))
		}
	}

	var unknown, jvmOnly, unusedSSL, unusedSASL []string
	for k := range props {
		switch {
		case k == "security.protocol", isClientKey(k):
		case slices.Contains(sslKeys, k):
			if !sc.usesTLS() {
				unusedSSL = append(unusedSSL, k)
			}
		case slices.Contains(saslKeys, k):
			if !sc.usesSASL() {
				unusedSASL = append(unusedSASL, k)
			}
		case slices.Contains(jvmOnlyKeys, k):
			jvmOnly = append(jvmOnly, k)
		default:
			unknown = append(unknown, k)
		}
	}
	for _, k := range sorted(unknown) {
		sc.warnings = append(sc.warnings, fmt.Sprintf("the configuration %q was supplied but isn't a known config; ignored", k))
	}
	for _, k := range sorted(jvmOnly) {
		sc.warnings = append(sc.warnings, fmt.Sprintf("the configuration %q chooses a Java security provider and has no meaning here; ignored", k))
	}
	if len(unusedSSL) > 0 {
		sc.warnings = append(sc.warnings, fmt.Sprintf("%s: not used with security.protocol=%s", strings.Join(sorted(unusedSSL), ", "), sc.protocol))
	}
	if len(unusedSASL) > 0 {
		sc.warnings = append(sc.warnings, fmt.Sprintf("%s: not used with security.protocol=%s", strings.Join(sorted(unusedSASL), ", "), sc.protocol))
	}

	if sc.usesTLS() {
		ts, err := tlsSettings(props)
		if err != nil {
			return securityConfig{}, err
		}
		sc.tls = ts
	}
	if sc.usesSASL() {
		m, err := saslMechanism(props)
		if err != nil {
			return securityConfig{}, err
		}
		sc.mechanism = m
	}
	return sc, nil
}

// tlsSettings takes the ssl.* keys. auth.ClientTLS reads the stores and
// PEM values and checks how they combine; here only the values that can be
// checked alone.
func tlsSettings(props map[string]string) (auth.TLSSettings, error) {
	s := auth.TLSSettings{
		KeystoreLocation:         props["ssl.keystore.location"],
		KeystorePassword:         props["ssl.keystore.password"],
		KeyPassword:              props["ssl.key.password"],
		KeystoreKey:              props["ssl.keystore.key"],
		KeystoreCertificateChain: props["ssl.keystore.certificate.chain"],
		TruststoreLocation:       props["ssl.truststore.location"],
		TruststorePassword:       props["ssl.truststore.password"],
		TruststoreCertificates:   props["ssl.truststore.certificates"],
		Protocol:                 strings.TrimSpace(props["ssl.protocol"]),
		EnabledProtocols:         splitList(props["ssl.enabled.protocols"]),
		CipherSuites:             splitList(props["ssl.cipher.suites"]),
		EndpointIdentification:   "https", // Kafka's default for clients
	}
	var err error
	if s.KeystoreType, err = storeType(props, "ssl.keystore.type"); err != nil {
		return s, err
	}
	if s.TruststoreType, err = storeType(props, "ssl.truststore.type"); err != nil {
		return s, err
	}
	if v, ok := props["ssl.endpoint.identification.algorithm"]; ok {
		switch a := strings.ToLower(strings.TrimSpace(v)); a {
		case "https", "":
			s.EndpointIdentification = a
		default:
			return s, fmt.Errorf("ssl.endpoint.identification.algorithm %q must be https, or empty to skip host name verification", v)
		}
	}
	return s, nil
}

// storeType checks a keystore or truststore type: JKS, PKCS12 or PEM, any
// case, as Kafka's KeyStore.getInstance takes them. Unset stays "" (the
// auth package's default, JKS, unless the PEM values are inline).
func storeType(props map[string]string, key string) (string, error) {
	v, ok := props[key]
	if !ok {
		return "", nil
	}
	t := strings.ToUpper(strings.TrimSpace(v))
	switch t {
	case "JKS", "PKCS12", "PEM":
		return t, nil
	}
	return "", fmt.Errorf("%s %q must be JKS, PKCS12 or PEM", key, v)
}

func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func sorted(xs []string) []string {
	sort.Strings(xs)
	return xs
}
