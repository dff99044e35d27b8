package handlers

// SaslHandshake (key 17), v0-1, and SaslAuthenticate (key 36), v0-2. On a
// SASL listener the socket server runs the exchange itself before the
// connection's requests reach the handlers (network/authn.go); these
// versions are what ApiVersions advertises for it. A request that gets
// here came on a listener without SASL, or after the connection
// authenticated with no session lifetime to renew: ILLEGAL_SASL_STATE, as
// Kafka's KafkaApis answers.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/network"
)

var (
	saslHandshakeAPI    = api{key: 17, min: 0, max: 1, handle: (*Handlers).saslHandshake}
	saslAuthenticateAPI = api{key: 36, min: 0, max: 2, handle: (*Handlers).saslAuthenticate}
)

func (h *Handlers) saslHandshake(_ context.Context, req *network.Request) (kmsg.Response, error) {
	resp := req.Body.(*kmsg.SASLHandshakeRequest).ResponseKind().(*kmsg.SASLHandshakeResponse)
	resp.ErrorCode = kerr.IllegalSaslState.Code
	return resp, nil
}

func (h *Handlers) saslAuthenticate(_ context.Context, req *network.Request) (kmsg.Response, error) {
	resp := req.Body.(*kmsg.SASLAuthenticateRequest).ResponseKind().(*kmsg.SASLAuthenticateResponse)
	resp.ErrorCode = kerr.IllegalSaslState.Code
	msg := "SaslAuthenticate request received after successful authentication"
	if req.SecurityProtocol != "SASL_PLAINTEXT" && req.SecurityProtocol != "SASL_SSL" {
		msg = "SaslAuthenticate request received on a listener without SASL"
	}
	resp.ErrorMessage = &msg
	return resp, nil
}
