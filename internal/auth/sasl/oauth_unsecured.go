package sasl

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strings"
	"time"
)

// unsecuredValidator checks unsecured JWS tokens ("alg":"none", no
// signature) as Kafka's OAuthBearerUnsecuredValidatorCallbackHandler does:
// the principal claim must be a non-blank string, exp a number in the
// future (less the clock skew), iat if present a number not in the future
// (plus the skew) and before exp, and the scope must hold every required
// scope. A string scope claim is one scope, a list of strings is several.
// nbf is ignored, as in Kafka.
type unsecuredValidator struct {
	principalClaim string
	scopeClaim     string
	requiredScope  []string
	skew           time.Duration
}

func newUnsecuredValidator(cfg OAuthConfig) (*unsecuredValidator, error) {
	if cfg.UnsecuredPrincipalClaimName == "" || cfg.UnsecuredScopeClaimName == "" {
		return nil, errors.New("sasl: unsecured OAUTHBEARER principal and scope claim names must not be empty")
	}
	if cfg.UnsecuredClockSkew < 0 {
		return nil, errors.New("sasl: unsecured OAUTHBEARER clock skew must not be negative")
	}
	return &unsecuredValidator{
		principalClaim: cfg.UnsecuredPrincipalClaimName,
		scopeClaim:     cfg.UnsecuredScopeClaimName,
		requiredScope:  cfg.UnsecuredRequiredScope,
		skew:           cfg.UnsecuredClockSkew,
	}, nil
}

func (v *unsecuredValidator) validate(token string, now time.Time) (oauthToken, *tokenRejection) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" {
		return oauthToken{}, invalidToken("unsecured JWS must have 3 dot-separated parts")
	}
	if parts[2] != "" {
		return oauthToken{}, invalidToken("unsecured JWS must not carry a signature")
	}
	header, err := decodeJWTPart(parts[0])
	if err != nil {
		return oauthToken{}, invalidToken("JWS header: %v", err)
	}
	if alg, _ := header["alg"].(string); alg != "none" {
		return oauthToken{}, invalidToken("unsecured JWS must have alg none")
	}
	claims, err := decodeJWTPart(parts[1])
	if err != nil {
		return oauthToken{}, invalidToken("JWT claims: %v", err)
	}
	principal, ok := claims[v.principalClaim].(string)
	if !ok || strings.TrimSpace(principal) == "" {
		return oauthToken{}, invalidToken("principal claim %q missing, blank or not a string", v.principalClaim)
	}
	scope, ok := scopeClaim(claims[v.scopeClaim])
	if !ok {
		return oauthToken{}, invalidToken("scope claim %q is neither a string nor a list of strings", v.scopeClaim)
	}
	exp, ok, err := numericDate(claims, "exp")
	if err != nil || !ok {
		return oauthToken{}, invalidToken("exp claim missing or not a number")
	}
	iat, hasIat, err := numericDate(claims, "iat")
	if err != nil {
		return oauthToken{}, invalidToken("iat claim is not a number")
	}
	if hasIat && iat.After(now.Add(v.skew)) {
		return oauthToken{}, invalidToken("issued in the future (iat %s, now %s, skew %s)", iat.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339), v.skew)
	}
	if !now.Add(-v.skew).Before(exp) {
		return oauthToken{}, invalidToken("expired at %s (now %s, skew %s)", exp.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339), v.skew)
	}
	if hasIat && !exp.After(iat) {
		return oauthToken{}, invalidToken("exp is not after iat")
	}
	for _, want := range v.requiredScope {
		if !slices.Contains(scope, want) {
			return oauthToken{}, &tokenRejection{
				status: "insufficient_scope",
				scope:  strings.Join(v.requiredScope, " "),
				reason: "token scope lacks " + want,
			}
		}
	}
	return oauthToken{principal: principal, expiry: exp, scope: scope}, nil
}

// decodeJWTPart decodes one base64url part of a JWT into a JSON object,
// numbers kept as json.Number.
func decodeJWTPart(part string) (map[string]any, error) {
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(part, "="))
	if err != nil {
		return nil, errors.New("not base64url")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil || m == nil {
		return nil, errors.New("not a JSON object")
	}
	if dec.More() {
		return nil, errors.New("trailing data after the JSON object")
	}
	return m, nil
}

// maxNumericDate bounds a NumericDate (seconds): far beyond any real time,
// well inside what time.Time holds.
const maxNumericDate = 1 << 40

// numericDate reads a claim holding seconds since the epoch, perhaps
// fractional.
func numericDate(claims map[string]any, name string) (time.Time, bool, error) {
	raw, ok := claims[name]
	if !ok {
		return time.Time{}, false, nil
	}
	n, ok := raw.(json.Number)
	if !ok {
		return time.Time{}, true, errors.New("not a number")
	}
	f, err := n.Float64()
	if err != nil || math.IsNaN(f) || math.Abs(f) > maxNumericDate {
		return time.Time{}, true, errors.New("not a usable number")
	}
	return time.UnixMilli(int64(math.Round(f * 1000))), true, nil
}

// scopeClaim reads a scope claim as Kafka does: absent is empty, a string
// is one scope, a list holds strings; blanks are dropped, the rest
// trimmed.
func scopeClaim(raw any) ([]string, bool) {
	var scope []string
	add := func(s string) {
		if s = strings.TrimSpace(s); s != "" && !slices.Contains(scope, s) {
			scope = append(scope, s)
		}
	}
	switch v := raw.(type) {
	case nil:
	case string:
		add(v)
	case []any:
		for _, e := range v {
			s, ok := e.(string)
			if !ok {
				return nil, false
			}
			add(s)
		}
	default:
		return nil, false
	}
	return scope, true
}
