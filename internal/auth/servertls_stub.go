package auth

import "crypto/tls"

// TODO(merge): delete this file. It stands in for the TLS helper's
// NewServerTLS (internal/auth/tls.go) so that the HTTPS wiring of
// gregor.http.ssl.* compiles before that lands; the signatures are the ones
// agreed on.

// ServerTLS is the TLS context of a server listener.
type ServerTLS struct{}

// NewServerTLS builds the TLS context of a server from s.
func NewServerTLS(s TLSSettings) (*ServerTLS, error) { return nil, errNotImplemented }

// Config is the crypto/tls configuration to accept connections with.
func (*ServerTLS) Config() *tls.Config { return nil }
