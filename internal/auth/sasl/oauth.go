package sasl

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Broker settings of OAUTHBEARER token validation (KIP-768), as the server
// wiring finds them after resolving listener prefixes
// (listener.name.<listener>.oauthbearer.<key>).
const (
	ConfigServerCallbackHandlerClass = "sasl.server.callback.handler.class"
	ConfigJWKSEndpointURL            = "sasl.oauthbearer.jwks.endpoint.url"
	ConfigJWKSRefreshMs              = "sasl.oauthbearer.jwks.endpoint.refresh.ms"
	ConfigJWKSRetryBackoffMs         = "sasl.oauthbearer.jwks.endpoint.retry.backoff.ms"
	ConfigJWKSRetryBackoffMaxMs      = "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms"
	ConfigExpectedAudience           = "sasl.oauthbearer.expected.audience"
	ConfigExpectedIssuer             = "sasl.oauthbearer.expected.issuer"
	ConfigClockSkewSeconds           = "sasl.oauthbearer.clock.skew.seconds"
	ConfigScopeClaimName             = "sasl.oauthbearer.scope.claim.name"
	ConfigSubClaimName               = "sasl.oauthbearer.sub.claim.name"
)

// Options of OAuthBearerLoginModule that configure the unsecured
// validator (Kafka's OAuthBearerUnsecuredValidatorCallbackHandler).
const (
	JAASUnsecuredPrincipalClaimName = "unsecuredValidatorPrincipalClaimName"
	JAASUnsecuredScopeClaimName     = "unsecuredValidatorScopeClaimName"
	JAASUnsecuredRequiredScope      = "unsecuredValidatorRequiredScope"
	JAASUnsecuredClockSkewMs        = "unsecuredValidatorAllowableClockSkewMs"
)

// Server callback handler classes a broker may name for OAUTHBEARER.
const (
	ValidatorCallbackHandler          = "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"
	validatorCallbackHandlerOld       = "org.apache.kafka.common.security.oauthbearer.secured.OAuthBearerValidatorCallbackHandler"
	UnsecuredValidatorCallbackHandler = "org.apache.kafka.common.security.oauthbearer.internals.unsecured.OAuthBearerUnsecuredValidatorCallbackHandler"
)

// OAuthConfig is how an OAUTHBEARER listener validates tokens.
//
// With JWKSEndpointURL set, a token must be a JWT signed (RS*, PS* or ES*)
// by a key of that JSON Web Key Set, as Kafka's
// OAuthBearerValidatorCallbackHandler checks it. Without it, tokens are
// unsecured JWS ("alg":"none"), Kafka's default: fit for development
// only, since anyone can write one.
//
// Start from DefaultOAuthConfig (or ParseOAuthConfig): a zero duration or
// claim name here is taken literally, and a zero refresh interval is an
// error.
type OAuthConfig struct {
	JWKSEndpointURL     string        // sasl.oauthbearer.jwks.endpoint.url: https://, http:// or file://
	JWKSRefresh         time.Duration // sasl.oauthbearer.jwks.endpoint.refresh.ms (1 h)
	JWKSRetryBackoff    time.Duration // sasl.oauthbearer.jwks.endpoint.retry.backoff.ms (100 ms)
	JWKSRetryBackoffMax time.Duration // sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms (10 s)
	ExpectedAudience    []string      // sasl.oauthbearer.expected.audience
	ExpectedIssuer      string        // sasl.oauthbearer.expected.issuer
	ClockSkew           time.Duration // sasl.oauthbearer.clock.skew.seconds (30 s)
	ScopeClaimName      string        // sasl.oauthbearer.scope.claim.name (scope)
	SubClaimName        string        // sasl.oauthbearer.sub.claim.name (sub)

	// HTTPClient fetches the JWKS; nil is a client with a 10 s timeout.
	HTTPClient *http.Client
	// Log gets JWKS refresh failures and token rejections; nil discards.
	Log *slog.Logger

	// The unsecured validator's JAAS options.
	UnsecuredPrincipalClaimName string        // unsecuredValidatorPrincipalClaimName (sub)
	UnsecuredScopeClaimName     string        // unsecuredValidatorScopeClaimName (scope)
	UnsecuredRequiredScope      []string      // unsecuredValidatorRequiredScope, space-separated
	UnsecuredClockSkew          time.Duration // unsecuredValidatorAllowableClockSkewMs (0)
}

// DefaultOAuthConfig is Kafka's defaults, with unsecured validation.
func DefaultOAuthConfig() OAuthConfig {
	return OAuthConfig{
		JWKSRefresh:                 time.Hour,
		JWKSRetryBackoff:            100 * time.Millisecond,
		JWKSRetryBackoffMax:         10 * time.Second,
		ClockSkew:                   30 * time.Second,
		ScopeClaimName:              "scope",
		SubClaimName:                "sub",
		UnsecuredPrincipalClaimName: "sub",
		UnsecuredScopeClaimName:     "scope",
	}
}

// ParseOAuthConfig reads the settings above from a listener's resolved
// properties and the options of its OAuthBearerLoginModule JAAS entry (nil
// if it has none). The server callback handler class may be empty, the
// unsecured validator, or OAuthBearerValidatorCallbackHandler (which needs
// a JWKS URL); unlike Kafka, a JWKS URL with the unsecured handler is an
// error rather than being ignored.
func ParseOAuthConfig(props map[string]string, jaas *JAASEntry) (OAuthConfig, error) {
	cfg := DefaultOAuthConfig()
	cfg.JWKSEndpointURL = strings.TrimSpace(props[ConfigJWKSEndpointURL])
	switch handler := strings.TrimSpace(props[ConfigServerCallbackHandlerClass]); handler {
	case "":
	case ValidatorCallbackHandler, validatorCallbackHandlerOld:
		if cfg.JWKSEndpointURL == "" {
			return OAuthConfig{}, fmt.Errorf("sasl: %s needs %s", handler, ConfigJWKSEndpointURL)
		}
	case UnsecuredValidatorCallbackHandler:
		if cfg.JWKSEndpointURL != "" {
			return OAuthConfig{}, fmt.Errorf("sasl: %s is set but %s validates unsecured tokens", ConfigJWKSEndpointURL, handler)
		}
	default:
		return OAuthConfig{}, fmt.Errorf("sasl: unsupported %s %q", ConfigServerCallbackHandlerClass, handler)
	}
	durations := []struct {
		key  string
		unit time.Duration
		dst  *time.Duration
	}{
		{ConfigJWKSRefreshMs, time.Millisecond, &cfg.JWKSRefresh},
		{ConfigJWKSRetryBackoffMs, time.Millisecond, &cfg.JWKSRetryBackoff},
		{ConfigJWKSRetryBackoffMaxMs, time.Millisecond, &cfg.JWKSRetryBackoffMax},
		{ConfigClockSkewSeconds, time.Second, &cfg.ClockSkew},
	}
	for _, d := range durations {
		v, ok := props[d.key]
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || n < 0 || n > int64(1<<62)/int64(d.unit) {
			return OAuthConfig{}, fmt.Errorf("sasl: %s must be a non-negative integer", d.key)
		}
		*d.dst = time.Duration(n) * d.unit
	}
	if v, ok := props[ConfigExpectedAudience]; ok {
		for a := range strings.SplitSeq(v, ",") {
			if a = strings.TrimSpace(a); a != "" {
				cfg.ExpectedAudience = append(cfg.ExpectedAudience, a)
			}
		}
	}
	cfg.ExpectedIssuer = strings.TrimSpace(props[ConfigExpectedIssuer])
	if v := strings.TrimSpace(props[ConfigScopeClaimName]); v != "" {
		cfg.ScopeClaimName = v
	}
	if v := strings.TrimSpace(props[ConfigSubClaimName]); v != "" {
		cfg.SubClaimName = v
	}
	if jaas == nil {
		return cfg, nil
	}
	if jaas.Module != OAuthBearerLoginModule {
		return OAuthConfig{}, fmt.Errorf("sasl: OAUTHBEARER needs %s in sasl.jaas.config, not %s", OAuthBearerLoginModule, jaas.Module)
	}
	if v := strings.TrimSpace(jaas.Options[JAASUnsecuredPrincipalClaimName]); v != "" {
		cfg.UnsecuredPrincipalClaimName = v
	}
	if v := strings.TrimSpace(jaas.Options[JAASUnsecuredScopeClaimName]); v != "" {
		cfg.UnsecuredScopeClaimName = v
	}
	cfg.UnsecuredRequiredScope = strings.Fields(jaas.Options[JAASUnsecuredRequiredScope])
	if v := strings.TrimSpace(jaas.Options[JAASUnsecuredClockSkewMs]); v != "" {
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil || n < 0 {
			return OAuthConfig{}, fmt.Errorf("sasl: JAAS option %s must be a non-negative integer", JAASUnsecuredClockSkewMs)
		}
		cfg.UnsecuredClockSkew = time.Duration(n) * time.Millisecond
	}
	return cfg, nil
}

// oauthToken is a validated bearer token.
type oauthToken struct {
	principal string
	expiry    time.Time
	scope     []string
}

// tokenRejection is why a token was refused: status (and the scope that was
// missing) go to the client in RFC 7628's JSON error; reason goes to the
// log and never quotes the token.
type tokenRejection struct {
	status string // invalid_token or insufficient_scope
	scope  string
	reason string
}

func invalidToken(format string, args ...any) *tokenRejection {
	return &tokenRejection{status: "invalid_token", reason: fmt.Sprintf(format, args...)}
}

// tokenValidator is one way of checking tokens: unsecured JWS or signed
// JWT against a JWKS.
type tokenValidator interface {
	validate(token string, now time.Time) (oauthToken, *tokenRejection)
}

// OAuthBearerServer is SASL/OAUTHBEARER (RFC 7628) as Kafka's
// OAuthBearerSaslServer runs it. With a JWKS URL it owns a goroutine that
// refreshes the key set: Close stops it. A Step whose token names a kid
// the key set lacks may wait for one fetch of the set (at most 10 s).
type OAuthBearerServer struct {
	validator tokenValidator
	jwks      *jwksSource // nil for unsecured validation
	log       *slog.Logger
	now       func() time.Time
}

// NewOAuthBearer returns an OAUTHBEARER server. With a JWKS URL it fetches
// the key set before returning (retrying with backoff for up to
// JWKSRetryBackoffMax, as Kafka does at startup) and then refreshes it in
// the background until Close or until ctx is done.
func NewOAuthBearer(ctx context.Context, cfg OAuthConfig) (*OAuthBearerServer, error) {
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &OAuthBearerServer{log: log, now: time.Now}
	if cfg.JWKSEndpointURL == "" {
		v, err := newUnsecuredValidator(cfg)
		if err != nil {
			return nil, err
		}
		s.validator = v
		return s, nil
	}
	if cfg.SubClaimName == "" || cfg.ScopeClaimName == "" {
		return nil, errors.New("sasl: OAUTHBEARER sub and scope claim names must not be empty")
	}
	if cfg.ClockSkew < 0 {
		return nil, errors.New("sasl: OAUTHBEARER clock skew must not be negative")
	}
	src, err := newJWKSSource(ctx, cfg, log)
	if err != nil {
		return nil, err
	}
	s.jwks = src
	s.validator = &jwtValidator{
		keys:           src,
		audience:       cfg.ExpectedAudience,
		issuer:         cfg.ExpectedIssuer,
		skew:           cfg.ClockSkew,
		subClaimName:   cfg.SubClaimName,
		scopeClaimName: cfg.ScopeClaimName,
	}
	return s, nil
}

// Close stops the JWKS refresh goroutine, if any, and waits for it.
func (s *OAuthBearerServer) Close() {
	if s.jwks != nil {
		s.jwks.close()
	}
}

// Name is OAUTHBEARER.
func (s *OAuthBearerServer) Name() string { return OAuthBearer }

// Start begins one connection's exchange.
func (s *OAuthBearerServer) Start() Exchange { return &oauthExchange{srv: s} }

type oauthState int

const (
	oauthAwaitClientFirst oauthState = iota
	oauthAwaitErrorAck               // sent the JSON error; the client must answer %x01
	oauthDone
	oauthFailed
)

type oauthExchange struct {
	srv        *OAuthBearerServer
	state      oauthState
	token      oauthToken
	extensions map[string]string
	errorJSON  string // the challenge sent, then the failure message
	reason     string
}

const msgMalformedOAuth = "Authentication failed: invalid OAUTHBEARER client first message"

func (x *oauthExchange) fail(msg, reason string) ([]byte, bool, error) {
	x.state = oauthFailed
	return nil, false, authFailed(msg, "OAUTHBEARER: "+reason)
}

// Step follows Kafka's OAuthBearerSaslServer. A valid token ends the
// exchange at once with an empty answer. An invalid one is answered with
// RFC 7628's JSON error as a challenge; the client must then send %x01,
// and the exchange fails with that JSON as its message. Kafka starts over
// if the client sends anything else there; this fails the exchange, as
// the RFC asks.
func (x *oauthExchange) Step(msg []byte) ([]byte, bool, error) {
	switch x.state {
	case oauthAwaitClientFirst:
	case oauthAwaitErrorAck:
		if len(msg) != 1 || msg[0] != 0x01 {
			return x.fail(x.errorJSON, x.reason+"; then the client did not acknowledge the error with %x01")
		}
		return x.fail(x.errorJSON, x.reason)
	default:
		return x.fail(msgExchangeOver, "message after the exchange ended")
	}
	first, err := parseOAuthClientFirst(msg)
	if err != nil {
		return x.fail(msgMalformedOAuth, err.Error())
	}
	token, rejection := x.srv.validator.validate(first.token, x.srv.now())
	if rejection != nil {
		x.state = oauthAwaitErrorAck
		x.errorJSON = oauthErrorJSON(rejection)
		x.reason = "token rejected: " + rejection.reason
		x.srv.log.Debug("OAUTHBEARER token rejected", "reason", rejection.reason)
		return []byte(x.errorJSON), false, nil
	}
	if first.authzid != "" && first.authzid != token.principal {
		return x.fail(msgAuthzidMismatch, fmt.Sprintf("token of %q asked for authorization id %q", token.principal, first.authzid))
	}
	x.state = oauthDone
	x.token = token
	// Kafka's validator callback handlers (both the unsecured and the
	// JWKS one) accept every extension; so do we, once they are well
	// formed.
	x.extensions = first.extensions
	return []byte{}, true, nil
}

func (x *oauthExchange) Principal() string {
	if x.state != oauthDone {
		return ""
	}
	return x.token.principal
}

func (x *oauthExchange) Expiry() time.Time {
	if x.state != oauthDone {
		return time.Time{}
	}
	return x.token.expiry
}

// Extensions are the SASL extensions the client sent (KIP-342), once
// done: the network layer may read them by asserting this method.
func (x *oauthExchange) Extensions() map[string]string {
	if x.state != oauthDone {
		return nil
	}
	return x.extensions
}

// Scope is the token's scope, once done.
func (x *oauthExchange) Scope() []string {
	if x.state != oauthDone {
		return nil
	}
	return x.token.scope
}

// oauthErrorJSON is RFC 7628's server error, as Kafka writes it.
func oauthErrorJSON(r *tokenRejection) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	v := struct {
		Status string `json:"status"`
		Scope  string `json:"scope,omitempty"`
	}{r.status, r.scope}
	_ = enc.Encode(v) // cannot fail on two strings
	return strings.TrimSuffix(b.String(), "\n")
}

// oauthClientFirst is RFC 7628's client initial response.
type oauthClientFirst struct {
	authzid    string
	token      string
	extensions map[string]string
}

// parseOAuthClientFirst reads
//
//	"n," ["a=" saslname] "," %x01 "auth=" scheme SP+ token %x01 (key "=" value %x01)* %x01
//
// with Kafka's grammar (OAuthBearerClientInitialResponse): gs2 flag "n"
// only; keys [A-Za-z]+; values [\x21-\x7E \t\r\n]+; scheme "Bearer" in any
// case; token [-_.A-Za-z0-9]+. A repeated key is an error (Kafka keeps the
// last). Errors quote nothing of the message.
func parseOAuthClientFirst(msg []byte) (oauthClientFirst, error) {
	var out oauthClientFirst
	authzid, rest, err := parseGS2Header(string(msg))
	if err != nil {
		return out, err
	}
	out.authzid = authzid
	// rest is %x01 kvpair* %x01, each kvpair ending in %x01.
	if len(rest) < 3 || rest[0] != 0x01 || !strings.HasSuffix(rest, "\x01\x01") {
		return out, errors.New("key-value pairs are not framed by %x01")
	}
	pairs := strings.Split(rest[1:len(rest)-2], "\x01")
	for _, kv := range pairs {
		key, value, ok := strings.Cut(kv, "=")
		if !ok || !isAlpha(key) || !isOAuthValue(value) {
			return out, errors.New("invalid key-value pair")
		}
		if key == "auth" {
			if out.token != "" {
				return out, errors.New("auth given twice")
			}
			token, err := parseBearerAuth(value)
			if err != nil {
				return out, err
			}
			out.token = token
			continue
		}
		if out.extensions == nil {
			out.extensions = map[string]string{}
		}
		if _, dup := out.extensions[key]; dup {
			return out, fmt.Errorf("extension %q given twice", key)
		}
		out.extensions[key] = value
	}
	if out.token == "" {
		return out, errors.New("no auth key")
	}
	return out, nil
}

// parseBearerAuth reads "Bearer <token>" (scheme in any case, one or more
// spaces).
func parseBearerAuth(v string) (string, error) {
	scheme, token, ok := strings.Cut(v, " ")
	if !ok || !strings.EqualFold(scheme, "bearer") {
		return "", errors.New("auth scheme is not Bearer")
	}
	token = strings.TrimLeft(token, " ")
	if token == "" {
		return "", errors.New("empty bearer token")
	}
	for i := 0; i < len(token); i++ {
		c := token[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return "", errors.New("bearer token has a character outside [-_.A-Za-z0-9]")
		}
	}
	return token, nil
}

// isOAuthValue is RFC 7628's value: printable ASCII, space, tab, CR, LF.
func isOAuthValue(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 0x21 && c <= 0x7e || c == ' ' || c == '\t' || c == '\r' || c == '\n') {
			return false
		}
	}
	return true
}
