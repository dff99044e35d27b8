package auth

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"strings"
)

// ClientTLS builds the TLS configuration of a client from s: the
// truststore anchors the server's chain (the system's roots when none is
// set), and the keystore, if any, is the certificate offered when the server
// asks for one. serverName is sent as SNI and, with
// ssl.endpoint.identification.algorithm=https, must be a DNS or IP subject
// alternative name of the server's certificate (Go, unlike Java, never
// falls back to the common name). With the algorithm set to "" the host name
// is not checked but the chain still is, exactly as in Kafka.
func ClientTLS(s TLSSettings, serverName string) (*tls.Config, error) {
	ks, err := loadKeystore(s)
	if err != nil {
		return nil, err
	}
	ts, err := loadTruststore(s)
	if err != nil {
		return nil, err
	}
	params, err := parseTLSParams(s, true)
	if err != nil {
		return nil, err
	}
	cfg := &tls.Config{
		ServerName:   serverName,
		MinVersion:   params.minVersion,
		MaxVersion:   params.maxVersion,
		CipherSuites: params.cipherSuites,
	}
	if ks != nil {
		cfg.Certificates = ks.certs
	}
	if ts != nil {
		cfg.RootCAs = ts.pool()
	}
	switch alg := strings.TrimSpace(s.EndpointIdentification); {
	case strings.EqualFold(alg, DefaultEndpointIdentification):
	case alg == "":
		// Go checks the host name whenever it checks the chain, so its
		// own check is turned off and VerifyConnection, which runs on
		// every handshake including resumed ones, checks the chain alone.
		roots := cfg.RootCAs
		cfg.InsecureSkipVerify = true
		cfg.VerifyConnection = func(cs tls.ConnectionState) error {
			return verifyChainWithoutHostname(cs, roots)
		}
	default:
		return nil, fmt.Errorf("ssl.endpoint.identification.algorithm %s: unsupported (https, or empty to not check the host name)", alg)
	}
	return cfg, nil
}

// verifyChainWithoutHostname checks the server's chain as Go would, for
// server authentication, without a DNS name.
func verifyChainWithoutHostname(cs tls.ConnectionState, roots *x509.CertPool) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("tls: the server sent no certificate")
	}
	opts := x509.VerifyOptions{
		Roots:         roots,
		Intermediates: x509.NewCertPool(),
		KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, c := range cs.PeerCertificates[1:] {
		opts.Intermediates.AddCert(c)
	}
	if _, err := cs.PeerCertificates[0].Verify(opts); err != nil {
		return fmt.Errorf("tls: server certificate: %w", err)
	}
	return nil
}
