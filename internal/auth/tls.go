package auth

import (
	"crypto/tls"
	"errors"
)

// TLSSettings are the ssl.* values of one listener (server side) or one
// client (a node dialing a peer, a CLI command's --command-config), after
// listener-prefix resolution. Empty strings are unset.
type TLSSettings struct {
	KeystoreType             string   // ssl.keystore.type: JKS (default), PKCS12, PEM
	KeystoreLocation         string   // ssl.keystore.location
	KeystorePassword         string   // ssl.keystore.password
	KeyPassword              string   // ssl.key.password
	KeystoreKey              string   // ssl.keystore.key (inline PEM)
	KeystoreCertificateChain string   // ssl.keystore.certificate.chain (inline PEM)
	TruststoreType           string   // ssl.truststore.type: JKS (default), PKCS12, PEM
	TruststoreLocation       string   // ssl.truststore.location
	TruststorePassword       string   // ssl.truststore.password
	TruststoreCertificates   string   // ssl.truststore.certificates (inline PEM)
	ClientAuth               string   // ssl.client.auth: none, requested, required (servers)
	Protocol                 string   // ssl.protocol
	EnabledProtocols         []string // ssl.enabled.protocols
	CipherSuites             []string // ssl.cipher.suites (Kafka/IANA names)
	EndpointIdentification   string   // ssl.endpoint.identification.algorithm: https or "" (clients)
}

var errNotImplemented = errors.New("auth: TLS not implemented yet")

// ClientTLS builds the TLS configuration of a client from s; serverName is
// checked against the peer's certificate when endpoint identification is
// https.
func ClientTLS(s TLSSettings, serverName string) (*tls.Config, error) {
	return nil, errNotImplemented
}
