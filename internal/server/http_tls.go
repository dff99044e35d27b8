package server

import (
	"crypto/tls"
	"fmt"

	"gregor/internal/auth"
)

// httpTLS is the TLS configuration of the gregor.http.listen listener from
// the gregor.http.ssl.* keys: nil (plain HTTP) unless a key store is
// given, a location or an inline PEM key.
func httpTLS(props map[string]string) (*tls.Config, error) {
	s := auth.TLSSettings{
		KeystoreType:             props["gregor.http.ssl.keystore.type"],
		KeystoreLocation:         props["gregor.http.ssl.keystore.location"],
		KeystorePassword:         props["gregor.http.ssl.keystore.password"],
		KeyPassword:              props["gregor.http.ssl.key.password"],
		KeystoreKey:              props["gregor.http.ssl.keystore.key"],
		KeystoreCertificateChain: props["gregor.http.ssl.keystore.certificate.chain"],
	}
	if s.KeystoreLocation == "" && s.KeystoreKey == "" {
		return nil, nil
	}
	cfg, err := serverTLSConfig(s)
	if err != nil {
		return nil, fmt.Errorf("gregor.http.ssl.*: %w", err)
	}
	return cfg, nil
}

// serverTLSConfig is the one call into the auth package's server TLS
// builder.
func serverTLSConfig(s auth.TLSSettings) (*tls.Config, error) {
	st, err := auth.NewServerTLS(s)
	if err != nil {
		return nil, err
	}
	return st.Config(), nil
}
