package sasl

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/sasl/oauth"
)

// unsecuredJWS writes an "alg":"none" token with claims.
func unsecuredJWS(t *testing.T, header, claims map[string]any) string {
	t.Helper()
	if header == nil {
		header = map[string]any{"alg": "none"}
	}
	enc := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return base64.RawURLEncoding.EncodeToString(b)
	}
	return enc(header) + "." + enc(claims) + "."
}

var testNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func newUnsecuredServer(t *testing.T, cfg OAuthConfig) *OAuthBearerServer {
	t.Helper()
	srv, err := NewOAuthBearer(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv.now = func() time.Time { return testNow }
	t.Cleanup(srv.Close)
	return srv
}

func TestOAuthUnsecuredFranzGo(t *testing.T) {
	srv := newUnsecuredServer(t, DefaultOAuthConfig())
	exp := testNow.Add(time.Hour)
	token := unsecuredJWS(t, nil, map[string]any{"sub": "alice", "exp": exp.Unix(), "iat": testNow.Unix(), "scope": []string{"a", "b"}})
	for _, zid := range []string{"", "alice"} {
		x, err := authenticate(t, srv, oauth.Auth{Zid: zid, Token: token, Extensions: map[string]string{"traceId": "123", "logicalCluster": "lkc-1"}}.AsMechanism())
		if err != nil {
			t.Fatalf("zid %q: %v", zid, err)
		}
		if x.Principal() != "alice" || !x.Expiry().Equal(exp) {
			t.Fatalf("principal %q expiry %v", x.Principal(), x.Expiry())
		}
		ext := x.(interface{ Extensions() map[string]string }).Extensions()
		if !maps.Equal(ext, map[string]string{"traceId": "123", "logicalCluster": "lkc-1"}) {
			t.Fatalf("extensions %v", ext)
		}
		if scope := x.(interface{ Scope() []string }).Scope(); !slices.Equal(scope, []string{"a", "b"}) {
			t.Fatalf("scope %v", scope)
		}
	}
}

func TestOAuthUnsecuredRejections(t *testing.T) {
	exp := testNow.Add(time.Hour).Unix()
	iat := testNow.Unix()
	cfg := DefaultOAuthConfig()
	cfg.UnsecuredRequiredScope = []string{"kafka"}
	cfg.UnsecuredClockSkew = 2 * time.Second
	srv := newUnsecuredServer(t, cfg)
	tests := []struct {
		name   string
		token  string
		status string
	}{
		{"expired", unsecuredJWS(t, nil, map[string]any{"sub": "a", "exp": testNow.Add(-3 * time.Second).Unix(), "scope": "kafka"}), "invalid_token"},
		{"expired exactly the skew ago", unsecuredJWS(t, nil, map[string]any{"sub": "a", "exp": testNow.Add(-2 * time.Second).Unix(), "scope": "kafka"}), "invalid_token"},
		{"no exp", unsecuredJWS(t, nil, map[string]any{"sub": "a", "scope": "kafka"}), "invalid_token"},
		{"exp a string", unsecuredJWS(t, nil, map[string]any{"sub": "a", "exp": "tomorrow", "scope": "kafka"}), "invalid_token"},
		{"no sub", unsecuredJWS(t, nil, map[string]any{"exp": exp, "scope": "kafka"}), "invalid_token"},
		{"blank sub", unsecuredJWS(t, nil, map[string]any{"sub": "  ", "exp": exp, "scope": "kafka"}), "invalid_token"},
		{"sub a number", unsecuredJWS(t, nil, map[string]any{"sub": 7, "exp": exp, "scope": "kafka"}), "invalid_token"},
		{"issued in the future", unsecuredJWS(t, nil, map[string]any{"sub": "a", "exp": exp, "iat": testNow.Add(3 * time.Second).Unix(), "scope": "kafka"}), "invalid_token"},
		{"exp before iat", unsecuredJWS(t, nil, map[string]any{"sub": "a", "exp": exp, "iat": exp + 1, "scope": "kafka"}), "invalid_token"},
		{"alg not none", unsecuredJWS(t, map[string]any{"alg": "RS256"}, map[string]any{"sub": "a", "exp": exp, "scope": "kafka"}), "invalid_token"},
		{"no alg", unsecuredJWS(t, map[string]any{"typ": "JWT"}, map[string]any{"sub": "a", "exp": exp, "scope": "kafka"}), "invalid_token"},
		{"has a signature", unsecuredJWS(t, nil, map[string]any{"sub": "a", "exp": exp, "scope": "kafka"}) + "c2ln", "invalid_token"},
		{"two parts", strings.TrimSuffix(unsecuredJWS(t, nil, map[string]any{"sub": "a", "exp": exp}), "."), "invalid_token"},
		{"claims not JSON", "eyJhbGciOiJub25lIn0.bm90LWpzb24.", "invalid_token"},
		{"claims not an object", "eyJhbGciOiJub25lIn0.WzFd.", "invalid_token"},
		{"scope a number", unsecuredJWS(t, nil, map[string]any{"sub": "a", "exp": exp, "scope": 5}), "invalid_token"},
		{"missing scope", unsecuredJWS(t, nil, map[string]any{"sub": "a", "exp": exp, "iat": iat, "scope": []string{"other"}}), "insufficient_scope"},
		{"scope string is one scope", unsecuredJWS(t, nil, map[string]any{"sub": "a", "exp": exp, "scope": "other kafka"}), "insufficient_scope"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x := srv.Start()
			answer, done, err := x.Step(oauthFirst("", tt.token, nil))
			if err != nil || done {
				t.Fatalf("first Step: done %v err %v", done, err)
			}
			var challenge struct{ Status, Scope string }
			if err := json.Unmarshal(answer, &challenge); err != nil || challenge.Status != tt.status {
				t.Fatalf("challenge %q, want status %s", answer, tt.status)
			}
			if tt.status == "insufficient_scope" && challenge.Scope != "kafka" {
				t.Fatalf("challenge %q, want scope kafka", answer)
			}
			_, done, err = x.Step([]byte{0x01})
			ae := authError(t, err, string(answer))
			if done || x.Principal() != "" || !x.Expiry().IsZero() {
				t.Fatal("authenticated after a rejected token")
			}
			if strings.Contains(ae.Reason, tt.token) {
				t.Fatalf("reason %q quotes the token", ae.Reason)
			}
		})
	}
}

func oauthFirst(authzid, token string, ext map[string]string) []byte {
	msg := "n,"
	if authzid != "" {
		msg += "a=" + authzid
	}
	msg += ",\x01auth=Bearer " + token + "\x01"
	for _, k := range slices.Sorted(maps.Keys(ext)) {
		msg += k + "=" + ext[k] + "\x01"
	}
	return []byte(msg + "\x01")
}

func TestOAuthUnsecuredOptions(t *testing.T) {
	jaas, err := ParseJAAS(OAuthBearerLoginModule + ` required unsecuredValidatorPrincipalClaimName="client_id" unsecuredValidatorScopeClaimName="scp" unsecuredValidatorRequiredScope="kafka admin" unsecuredValidatorAllowableClockSkewMs="5000";`)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := ParseOAuthConfig(nil, jaas)
	if err != nil {
		t.Fatal(err)
	}
	srv := newUnsecuredServer(t, cfg)
	token := unsecuredJWS(t, nil, map[string]any{"client_id": "svc", "sub": "ignored", "exp": testNow.Add(-4 * time.Second).Unix(), "scp": []string{"admin", " kafka ", ""}})
	x, err := authenticate(t, srv, oauth.Auth{Token: token}.AsMechanism())
	if err != nil {
		t.Fatal(err)
	}
	if x.Principal() != "svc" {
		t.Fatalf("principal %q", x.Principal())
	}
}

func TestOAuthFranzGoSeesRejection(t *testing.T) {
	srv := newUnsecuredServer(t, DefaultOAuthConfig())
	token := unsecuredJWS(t, nil, map[string]any{"sub": "alice", "exp": testNow.Add(-time.Hour).Unix()})
	_, err := authenticate(t, srv, oauth.Auth{Token: token}.AsMechanism())
	authError(t, err, `{"status":"invalid_token"}`)
}

func TestOAuthExchangeRules(t *testing.T) {
	srv := newUnsecuredServer(t, DefaultOAuthConfig())
	good := unsecuredJWS(t, nil, map[string]any{"sub": "alice", "exp": testNow.Add(time.Hour).Unix()})
	bad := unsecuredJWS(t, nil, map[string]any{"sub": "alice", "exp": testNow.Add(-time.Hour).Unix()})

	// The authorization id must be the token's principal.
	_, _, err := srv.Start().Step(oauthFirst("bob", good, nil))
	authError(t, err, msgAuthzidMismatch)

	// After the error challenge only %x01 is accepted; a second token is
	// not a second chance.
	x := srv.Start()
	if _, _, err := x.Step(oauthFirst("", bad, nil)); err != nil {
		t.Fatal(err)
	}
	_, done, err := x.Step(oauthFirst("", good, nil))
	authError(t, err, `{"status":"invalid_token"}`)
	if done || x.Principal() != "" {
		t.Fatal("second token accepted after the error challenge")
	}
	_, _, err = x.Step([]byte{1})
	authError(t, err, msgExchangeOver)

	// Nothing after success.
	x = srv.Start()
	if _, done, err := x.Step(oauthFirst("", good, nil)); err != nil || !done {
		t.Fatalf("done %v err %v", done, err)
	}
	_, _, err = x.Step([]byte{1})
	authError(t, err, msgExchangeOver)
}

func TestOAuthMalformedClientFirst(t *testing.T) {
	srv := newUnsecuredServer(t, DefaultOAuthConfig())
	good := unsecuredJWS(t, nil, map[string]any{"sub": "alice", "exp": testNow.Add(time.Hour).Unix()})
	msgs := []string{
		"",
		"\x01",
		"n,,",
		"n,,\x01\x01",
		"y,,\x01auth=Bearer " + good + "\x01\x01",
		"p=tls-unique,,\x01auth=Bearer " + good + "\x01\x01",
		"n,x=y,\x01auth=Bearer " + good + "\x01\x01",
		"n,a=bad=esc,\x01auth=Bearer " + good + "\x01\x01",
		"n,,auth=Bearer " + good + "\x01\x01",
		"n,,\x01auth=Bearer " + good + "\x01",
		"n,,\x01auth=Basic " + good + "\x01\x01",
		"n,,\x01auth=Bearer\x01\x01",
		"n,,\x01auth=Bearer \x01\x01",
		"n,,\x01auth=Bearer tok/en\x01\x01",
		"n,,\x01auth=Bearer " + good + "\x01auth=Bearer " + good + "\x01\x01",
		"n,,\x01auth=Bearer " + good + "\x01k=1\x01k=2\x01\x01",
		"n,,\x01auth=Bearer " + good + "\x01k1=v\x01\x01",
		"n,,\x01auth=Bearer " + good + "\x01k=\x01\x01",
		"n,,\x01auth=Bearer " + good + "\x01k=v\x00\x01\x01",
		"n,,\x01auth=Bearer " + good + "\x01=v\x01\x01",
		"n,,\x01k=v\x01\x01",
		"n,,\x01auth=Bearer " + good + "\x01\x01\x01",
	}
	for _, m := range msgs {
		_, done, err := srv.Start().Step([]byte(m))
		if done || err == nil {
			t.Fatalf("client first %q accepted", m)
		}
		ae := authError(t, err, msgMalformedOAuth)
		if strings.Contains(ae.Reason, good) {
			t.Fatalf("reason %q quotes the token", ae.Reason)
		}
	}
	// Accepted variations: scheme case, several spaces, =2C escapes.
	for _, m := range []string{
		"n,,\x01auth=bearer   " + good + "\x01\x01",
		"n,a=alice,\x01auth=BEARER " + good + "\x01x=a b\tc\x01\x01",
	} {
		if _, done, err := srv.Start().Step([]byte(m)); err != nil || !done {
			t.Fatalf("client first %q: done %v err %v", m, done, err)
		}
	}
}

func TestParseOAuthConfig(t *testing.T) {
	cfg, err := ParseOAuthConfig(map[string]string{
		ConfigServerCallbackHandlerClass: ValidatorCallbackHandler,
		ConfigJWKSEndpointURL:            "https://idp.example/jwks",
		ConfigJWKSRefreshMs:              "60000",
		ConfigJWKSRetryBackoffMs:         "50",
		ConfigJWKSRetryBackoffMaxMs:      "2000",
		ConfigExpectedAudience:           "kafka, other ,",
		ConfigExpectedIssuer:             "https://idp.example",
		ConfigClockSkewSeconds:           "0",
		ConfigScopeClaimName:             "scp",
		ConfigSubClaimName:               "client_id",
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := DefaultOAuthConfig()
	want.JWKSEndpointURL = "https://idp.example/jwks"
	want.JWKSRefresh = time.Minute
	want.JWKSRetryBackoff = 50 * time.Millisecond
	want.JWKSRetryBackoffMax = 2 * time.Second
	want.ExpectedAudience = []string{"kafka", "other"}
	want.ExpectedIssuer = "https://idp.example"
	want.ClockSkew = 0
	want.ScopeClaimName = "scp"
	want.SubClaimName = "client_id"
	if cfg.JWKSEndpointURL != want.JWKSEndpointURL || cfg.JWKSRefresh != want.JWKSRefresh ||
		cfg.JWKSRetryBackoff != want.JWKSRetryBackoff || cfg.JWKSRetryBackoffMax != want.JWKSRetryBackoffMax ||
		!slices.Equal(cfg.ExpectedAudience, want.ExpectedAudience) || cfg.ExpectedIssuer != want.ExpectedIssuer ||
		cfg.ClockSkew != want.ClockSkew || cfg.ScopeClaimName != want.ScopeClaimName || cfg.SubClaimName != want.SubClaimName {
		t.Fatalf("got %+v\nwant %+v", cfg, want)
	}

	defaults, err := ParseOAuthConfig(map[string]string{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := DefaultOAuthConfig(); defaults.JWKSRefresh != time.Hour || defaults.ClockSkew != 30*time.Second ||
		defaults.JWKSRetryBackoff != d.JWKSRetryBackoff || defaults.JWKSRetryBackoffMax != d.JWKSRetryBackoffMax ||
		defaults.SubClaimName != "sub" || defaults.ScopeClaimName != "scope" || defaults.JWKSEndpointURL != "" {
		t.Fatalf("defaults %+v", defaults)
	}

	bad := []struct {
		props map[string]string
		jaas  *JAASEntry
	}{
		{map[string]string{ConfigServerCallbackHandlerClass: ValidatorCallbackHandler}, nil},
		{map[string]string{ConfigServerCallbackHandlerClass: UnsecuredValidatorCallbackHandler, ConfigJWKSEndpointURL: "https://x"}, nil},
		{map[string]string{ConfigServerCallbackHandlerClass: "com.example.Custom"}, nil},
		{map[string]string{ConfigJWKSRefreshMs: "-1"}, nil},
		{map[string]string{ConfigClockSkewSeconds: "soon"}, nil},
		{nil, &JAASEntry{Module: PlainLoginModule}},
		{nil, &JAASEntry{Module: OAuthBearerLoginModule, Options: map[string]string{JAASUnsecuredClockSkewMs: "-5"}}},
	}
	for _, b := range bad {
		if _, err := ParseOAuthConfig(b.props, b.jaas); err == nil {
			t.Fatalf("ParseOAuthConfig(%v, %v) succeeded", b.props, b.jaas)
		}
	}
}
