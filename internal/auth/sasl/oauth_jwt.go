package sasl

import (
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// jwtAlgorithms are the signature algorithms a token may use: asymmetric
// only. "none" and the HMAC algorithms are refused before any key is
// looked at, so neither an unsigned token nor one "signed" with a public
// key used as an HMAC secret (algorithm confusion) can pass.
var jwtAlgorithms = []jose.SignatureAlgorithm{
	jose.RS256, jose.RS384, jose.RS512,
	jose.PS256, jose.PS384, jose.PS512,
	jose.ES256, jose.ES384, jose.ES512,
}

// jwtValidator checks signed JWTs as Kafka's BrokerJwtValidator (jose4j)
// does: the signature with the JWKS key of the token's kid; exp and iat
// required; exp, nbf and iat checked with the clock skew; iss equal to the
// expected issuer if one is set; aud holding one of the expected
// audiences if some are set, and absent if none are (jose4j's default,
// after RFC 7519 4.1.3); the sub claim (configurable) a non-blank string.
// The scope claim, a string (one scope) or list of strings, is read but
// not enforced.
type jwtValidator struct {
	keys           *jwksSource
	audience       []string
	issuer         string
	skew           time.Duration
	subClaimName   string
	scopeClaimName string
}

func (v *jwtValidator) validate(token string, now time.Time) (oauthToken, *tokenRejection) {
	tok, err := jwt.ParseSigned(token, jwtAlgorithms)
	if err != nil {
		return oauthToken{}, invalidToken("not a JWS compact token with an allowed algorithm (%s)", joseErrorKind(err))
	}
	if len(tok.Headers) != 1 {
		return oauthToken{}, invalidToken("token has %d signatures, want 1", len(tok.Headers))
	}
	header := tok.Headers[0]
	key, err := v.keys.verificationKey(header.KeyID, jose.SignatureAlgorithm(header.Algorithm))
	if err != nil {
		return oauthToken{}, invalidToken("kid %q, alg %s: %v", truncate(header.KeyID, 64), header.Algorithm, err)
	}
	var std jwt.Claims
	var all map[string]any
	if err := tok.Claims(key.Key, &std, &all); err != nil {
		return oauthToken{}, invalidToken("signature or claims invalid (kid %q): %s", truncate(header.KeyID, 64), joseErrorKind(err))
	}
	if std.Expiry == nil {
		return oauthToken{}, invalidToken("no exp claim")
	}
	if std.IssuedAt == nil {
		return oauthToken{}, invalidToken("no iat claim")
	}
	if len(v.audience) == 0 && len(std.Audience) > 0 {
		return oauthToken{}, invalidToken("token has an aud claim but %s is not set", ConfigExpectedAudience)
	}
	expected := jwt.Expected{Issuer: v.issuer, AnyAudience: v.audience, Time: now}
	if err := std.ValidateWithLeeway(expected, v.skew); err != nil {
		return oauthToken{}, invalidToken("claims rejected: %v", err)
	}
	sub, ok := all[v.subClaimName].(string)
	if !ok || strings.TrimSpace(sub) == "" {
		return oauthToken{}, invalidToken("claim %q missing, blank or not a string", v.subClaimName)
	}
	scope, ok := scopeClaim(all[v.scopeClaimName])
	if !ok {
		scope = nil // Kafka treats a scope claim of another type as no scope
	}
	return oauthToken{principal: sub, expiry: std.Expiry.Time(), scope: scope}, nil
}

// joseErrorKind keeps go-jose's message, which names the problem and not
// the token's content.
func joseErrorKind(err error) string {
	s := strings.TrimPrefix(err.Error(), "go-jose/go-jose/jwt: ")
	return strings.TrimPrefix(s, "go-jose/go-jose: ")
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
