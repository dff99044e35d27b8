package sasl

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
)

// testKeys are generated once: RSA generation is slow.
var testKeys = sync.OnceValue(func() (k struct {
	rsa1, rsa2, rsaForger *rsa.PrivateKey
	ec1                   *ecdsa.PrivateKey
}) {
	gen := func() *rsa.PrivateKey {
		key, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			panic(err)
		}
		return key
	}
	k.rsa1, k.rsa2, k.rsaForger = gen(), gen(), gen()
	var err error
	if k.ec1, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
		panic(err)
	}
	return k
})

// jwksServer serves a key set over HTTP and counts the fetches.
type jwksServer struct {
	*httptest.Server
	mu      sync.Mutex
	keys    []jose.JSONWebKey
	status  int
	fetches atomic.Int32
}

func newJWKSServer(t *testing.T, keys ...jose.JSONWebKey) *jwksServer {
	t.Helper()
	s := &jwksServer{keys: keys, status: http.StatusOK}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.fetches.Add(1)
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.status != http.StatusOK {
			w.WriteHeader(s.status)
			return
		}
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: s.keys})
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *jwksServer) setKeys(keys ...jose.JSONWebKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keys = keys
}

func (s *jwksServer) setStatus(status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.status = status
}

func publicJWK(key any, kid string) jose.JSONWebKey {
	switch k := key.(type) {
	case *rsa.PrivateKey:
		return jose.JSONWebKey{Key: &k.PublicKey, KeyID: kid, Use: "sig"}
	case *ecdsa.PrivateKey:
		return jose.JSONWebKey{Key: &k.PublicKey, KeyID: kid}
	}
	panic("unknown key type")
}

func signJWT(t *testing.T, key any, kid string, alg jose.SignatureAlgorithm, claims map[string]any) string {
	t.Helper()
	opts := (&jose.SignerOptions{}).WithType("JWT")
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: jose.JSONWebKey{Key: key, KeyID: kid}}, opts)
	if err != nil {
		t.Fatal(err)
	}
	token, err := jwt.Signed(signer).Claims(claims).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return token
}

// claims are valid claims for the test configuration, with overrides; a
// nil override deletes the claim.
func claims(over map[string]any) map[string]any {
	now := time.Now()
	c := map[string]any{
		"sub":   "alice",
		"iss":   "https://idp.example",
		"aud":   []string{"kafka"},
		"iat":   now.Unix(),
		"exp":   now.Add(time.Hour).Unix(),
		"scope": "produce consume",
	}
	for k, v := range over {
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
	}
	return c
}

func jwksConfig(url string) OAuthConfig {
	cfg := DefaultOAuthConfig()
	cfg.JWKSEndpointURL = url
	cfg.ExpectedAudience = []string{"other", "kafka"}
	cfg.ExpectedIssuer = "https://idp.example"
	cfg.JWKSRetryBackoffMax = 200 * time.Millisecond
	return cfg
}

func newJWKSBearer(t *testing.T, cfg OAuthConfig) *OAuthBearerServer {
	t.Helper()
	srv, err := NewOAuthBearer(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return srv
}

func TestOAuthJWKSFranzGo(t *testing.T) {
	k := testKeys()
	js := newJWKSServer(t, publicJWK(k.rsa1, "rsa1"), publicJWK(k.ec1, "ec1"))
	srv := newJWKSBearer(t, jwksConfig(js.URL+"/jwks"))
	exp := time.Now().Add(time.Hour).Truncate(time.Second)
	for _, tc := range []struct {
		key any
		kid string
		alg jose.SignatureAlgorithm
	}{
		{k.rsa1, "rsa1", jose.RS256},
		{k.rsa1, "rsa1", jose.RS512},
		{k.rsa1, "rsa1", jose.PS256},
		{k.ec1, "ec1", jose.ES256},
	} {
		token := signJWT(t, tc.key, tc.kid, tc.alg, claims(map[string]any{"exp": exp.Unix()}))
		x, err := authenticate(t, srv, oauth.Auth{Zid: "alice", Token: token}.AsMechanism())
		if err != nil {
			t.Fatalf("%s: %v", tc.alg, err)
		}
		if x.Principal() != "alice" || !x.Expiry().Equal(exp) {
			t.Fatalf("%s: principal %q expiry %v", tc.alg, x.Principal(), x.Expiry())
		}
	}
	if n := js.fetches.Load(); n != 1 {
		t.Fatalf("%d JWKS fetches, want 1", n)
	}
}

// hs256WithPublicKey forges a token for the algorithm-confusion attack: an
// HMAC "signature" keyed with the RSA public key the attacker knows.
func hs256WithPublicKey(t *testing.T, pub *rsa.PublicKey, kid string, c map[string]any) string {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	secret := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	enc := func(v any) string {
		b, _ := json.Marshal(v)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	signingInput := enc(map[string]any{"alg": "HS256", "typ": "JWT", "kid": kid}) + "." + enc(c)
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(signingInput))
	return signingInput + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

func TestOAuthJWKSRejections(t *testing.T) {
	k := testKeys()
	js := newJWKSServer(t, publicJWK(k.rsa1, "rsa1"), publicJWK(k.ec1, "ec1"), publicJWK(k.rsa2, "rsa2"))
	srv := newJWKSBearer(t, jwksConfig(js.URL))
	noAudSrv := newJWKSBearer(t, func() OAuthConfig {
		cfg := jwksConfig(js.URL)
		cfg.ExpectedAudience = nil
		return cfg
	}())
	now := time.Now()
	rs := func(over map[string]any) string { return signJWT(t, k.rsa1, "rsa1", jose.RS256, claims(over)) }
	tests := []struct {
		name  string
		srv   *OAuthBearerServer
		token string
	}{
		{"expired beyond the skew", srv, rs(map[string]any{"exp": now.Add(-31 * time.Second).Unix(), "iat": now.Add(-time.Hour).Unix()})},
		{"not yet valid", srv, rs(map[string]any{"nbf": now.Add(time.Minute).Unix()})},
		{"issued in the future", srv, rs(map[string]any{"iat": now.Add(time.Minute).Unix()})},
		{"no exp", srv, rs(map[string]any{"exp": nil})},
		{"no iat", srv, rs(map[string]any{"iat": nil})},
		{"exp not a number", srv, rs(map[string]any{"exp": "later"})},
		{"wrong audience", srv, rs(map[string]any{"aud": "billing"})},
		{"no audience", srv, rs(map[string]any{"aud": nil})},
		{"audience without expectation", noAudSrv, rs(nil)},
		{"wrong issuer", srv, rs(map[string]any{"iss": "https://evil.example"})},
		{"no issuer", srv, rs(map[string]any{"iss": nil})},
		{"no sub", srv, rs(map[string]any{"sub": nil})},
		{"blank sub", srv, rs(map[string]any{"sub": " "})},
		{"forged signature", srv, signJWT(t, k.rsaForger, "rsa1", jose.RS256, claims(nil))},
		{"signed by another listed key", srv, signJWT(t, k.rsa2, "rsa1", jose.RS256, claims(nil))},
		{"unknown kid", srv, signJWT(t, k.rsaForger, "forger", jose.RS256, claims(nil))},
		{"kid of an EC key with RS256", srv, signJWT(t, k.rsa1, "ec1", jose.RS256, claims(nil))},
		{"no kid, several keys", srv, signJWT(t, k.rsa1, "", jose.RS256, claims(nil))},
		{"alg none", srv, unsecuredJWS(t, map[string]any{"alg": "none", "kid": "rsa1"}, claims(nil))},
		{"HS256 keyed with the public key", srv, hs256WithPublicKey(t, &k.rsa1.PublicKey, "rsa1", claims(nil))},
		{"tampered claims", srv, func() string {
			parts := strings.Split(rs(nil), ".")
			parts[1] = base64.RawURLEncoding.EncodeToString([]byte(`{"sub":"admin","aud":"kafka","iss":"https://idp.example","iat":1,"exp":99999999999}`))
			return strings.Join(parts, ".")
		}()},
		{"not a JWT", srv, "abc"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x, err := authenticate(t, tt.srv, oauth.Auth{Token: tt.token}.AsMechanism())
			ae := authError(t, err, `{"status":"invalid_token"}`)
			t.Log(ae.Reason)
			if x.Principal() != "" || !x.Expiry().IsZero() {
				t.Fatal("authenticated")
			}
			if strings.Contains(ae.Reason, tt.token) || !strings.HasPrefix(ae.Reason, "OAUTHBEARER: token rejected: ") {
				t.Fatalf("reason %q", ae.Reason)
			}
		})
	}
}

func TestOAuthJWKSNoKidSingleKey(t *testing.T) {
	k := testKeys()
	js := newJWKSServer(t, publicJWK(k.ec1, ""))
	srv := newJWKSBearer(t, jwksConfig(js.URL))
	if _, err := authenticate(t, srv, oauth.Auth{Token: signJWT(t, k.ec1, "", jose.ES256, claims(nil))}.AsMechanism()); err != nil {
		t.Fatal(err)
	}
}

// TestOAuthJWKSKeyRotation checks that a token signed with a key added to
// the set after startup is accepted at once, and that unknown kids cause
// at most one fetch per interval.
func TestOAuthJWKSKeyRotation(t *testing.T) {
	k := testKeys()
	js := newJWKSServer(t, publicJWK(k.rsa1, "rsa1"))
	srv := newJWKSBearer(t, jwksConfig(js.URL))
	js.setKeys(publicJWK(k.rsa1, "rsa1"), publicJWK(k.rsa2, "rsa2"))

	if _, err := authenticate(t, srv, oauth.Auth{Token: signJWT(t, k.rsa2, "rsa2", jose.RS256, claims(nil))}.AsMechanism()); err != nil {
		t.Fatalf("rotated key: %v", err)
	}
	if n := js.fetches.Load(); n != 2 {
		t.Fatalf("%d fetches, want 2 (startup, unknown kid)", n)
	}
	for i := range 5 {
		kid := "unknown-" + string(rune('a'+i))
		_, err := authenticate(t, srv, oauth.Auth{Token: signJWT(t, k.rsaForger, kid, jose.RS256, claims(nil))}.AsMechanism())
		authError(t, err, `{"status":"invalid_token"}`)
	}
	if n := js.fetches.Load(); n != 2 {
		t.Fatalf("%d fetches after unknown kids, want still 2", n)
	}
	// A very long kid never triggers a fetch.
	srv.jwks.mu.Lock()
	srv.jwks.lastKidFetch = time.Time{}
	srv.jwks.mu.Unlock()
	_, err := authenticate(t, srv, oauth.Auth{Token: signJWT(t, k.rsaForger, strings.Repeat("k", jwksMaxKidLength+1), jose.RS256, claims(nil))}.AsMechanism())
	authError(t, err, `{"status":"invalid_token"}`)
	if n := js.fetches.Load(); n != 2 {
		t.Fatalf("%d fetches after a long kid, want still 2", n)
	}
}

func TestOAuthJWKSPeriodicRefreshStopsOnClose(t *testing.T) {
	k := testKeys()
	js := newJWKSServer(t, publicJWK(k.rsa1, "rsa1"))
	cfg := jwksConfig(js.URL)
	cfg.JWKSRefresh = 10 * time.Millisecond
	srv, err := NewOAuthBearer(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	// The refresh replaces the set: rsa1 goes, rsa2 comes.
	js.setKeys(publicJWK(k.rsa2, "rsa2"))
	deadline := time.Now().Add(5 * time.Second)
	for js.fetches.Load() < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("only %d fetches", js.fetches.Load())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if _, err := srv.jwks.find("rsa1", jose.RS256); err == nil {
		t.Fatal("a key removed from the set is still used")
	}
	srv.Close()
	n := js.fetches.Load()
	time.Sleep(50 * time.Millisecond)
	if m := js.fetches.Load(); m != n {
		t.Fatalf("%d fetches after Close", m-n)
	}
}

func TestOAuthJWKSStopsWithContext(t *testing.T) {
	k := testKeys()
	js := newJWKSServer(t, publicJWK(k.rsa1, "rsa1"))
	cfg := jwksConfig(js.URL)
	cfg.JWKSRefresh = 5 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := NewOAuthBearer(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	srv.Close() // returns once the goroutine is gone; goleak checks the rest
}

func TestOAuthJWKSFailingEndpoint(t *testing.T) {
	k := testKeys()
	js := newJWKSServer(t, publicJWK(k.rsa1, "rsa1"))
	js.setStatus(http.StatusInternalServerError)
	cfg := jwksConfig(js.URL + "/jwks?access_token=hunter2")
	cfg.JWKSRetryBackoff = time.Millisecond
	cfg.JWKSRetryBackoffMax = 50 * time.Millisecond
	_, err := NewOAuthBearer(context.Background(), cfg)
	if err == nil {
		t.Fatal("NewOAuthBearer succeeded without a key set")
	}
	if strings.Contains(err.Error(), "hunter2") || !strings.Contains(err.Error(), "500") {
		t.Fatalf("error %q", err)
	}
	if n := js.fetches.Load(); n < 2 {
		t.Fatalf("%d fetches: no retry", n)
	}

	// Refresh failures keep the keys already fetched.
	js.setStatus(http.StatusOK)
	cfg.JWKSRefresh = 5 * time.Millisecond
	srv := newJWKSBearer(t, cfg)
	js.setStatus(http.StatusServiceUnavailable)
	start := js.fetches.Load()
	for js.fetches.Load() < start+3 {
		time.Sleep(5 * time.Millisecond)
	}
	if _, err := authenticate(t, srv, oauth.Auth{Token: signJWT(t, k.rsa1, "rsa1", jose.RS256, claims(nil))}.AsMechanism()); err != nil {
		t.Fatalf("after failed refreshes: %v", err)
	}
}

func TestOAuthJWKSFile(t *testing.T) {
	k := testKeys()
	path := filepath.Join(t.TempDir(), "jwks.json")
	b, err := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{publicJWK(k.ec1, "ec1")}})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	srv := newJWKSBearer(t, jwksConfig("file://"+path))
	if _, err := authenticate(t, srv, oauth.Auth{Token: signJWT(t, k.ec1, "ec1", jose.ES256, claims(nil))}.AsMechanism()); err != nil {
		t.Fatal(err)
	}
	if _, err := NewOAuthBearer(context.Background(), jwksConfig("file://"+path+".missing")); err == nil {
		t.Fatal("missing JWKS file accepted")
	}
	if _, err := NewOAuthBearer(context.Background(), jwksConfig("ftp://idp.example/jwks")); err == nil {
		t.Fatal("ftp URL accepted")
	}
}

// TestOAuthJWKSSkipsUnusableKeys checks that private, symmetric and
// encryption keys in the set are never used to verify.
func TestOAuthJWKSSkipsUnusableKeys(t *testing.T) {
	k := testKeys()
	js := newJWKSServer(t,
		publicJWK(k.rsa1, "rsa1"),
		jose.JSONWebKey{Key: k.rsa2, KeyID: "private"},
		jose.JSONWebKey{Key: []byte("0123456789abcdef0123456789abcdef"), KeyID: "hmac", Algorithm: "HS256"},
		jose.JSONWebKey{Key: &k.rsaForger.PublicKey, KeyID: "enc", Use: "enc"},
	)
	srv := newJWKSBearer(t, jwksConfig(js.URL))
	if got := len(srv.jwks.snapshot.Load().keys); got != 1 {
		t.Fatalf("%d usable keys, want 1", got)
	}
	for _, token := range []string{
		signJWT(t, k.rsa2, "private", jose.RS256, claims(nil)),
		signJWT(t, k.rsaForger, "enc", jose.RS256, claims(nil)),
		signJWT(t, []byte("0123456789abcdef0123456789abcdef"), "hmac", jose.HS256, claims(nil)),
	} {
		_, err := authenticate(t, srv, oauth.Auth{Token: token}.AsMechanism())
		authError(t, err, `{"status":"invalid_token"}`)
	}
}

func TestOAuthJWKSKeyAlgMustMatch(t *testing.T) {
	k := testKeys()
	key := publicJWK(k.rsa1, "rsa1")
	key.Algorithm = string(jose.RS256)
	js := newJWKSServer(t, key)
	srv := newJWKSBearer(t, jwksConfig(js.URL))
	if _, err := authenticate(t, srv, oauth.Auth{Token: signJWT(t, k.rsa1, "rsa1", jose.RS256, claims(nil))}.AsMechanism()); err != nil {
		t.Fatal(err)
	}
	_, err := authenticate(t, srv, oauth.Auth{Token: signJWT(t, k.rsa1, "rsa1", jose.PS256, claims(nil))}.AsMechanism())
	authError(t, err, `{"status":"invalid_token"}`)
}

// TestOAuthJWKSConcurrentUnknownKid checks that connections meeting the
// same new kid at once share one fetch.
func TestOAuthJWKSConcurrentUnknownKid(t *testing.T) {
	k := testKeys()
	js := newJWKSServer(t, publicJWK(k.rsa1, "rsa1"))
	srv := newJWKSBearer(t, jwksConfig(js.URL))
	js.setKeys(publicJWK(k.rsa1, "rsa1"), publicJWK(k.ec1, "ec1"))
	token := signJWT(t, k.ec1, "ec1", jose.ES256, claims(nil))
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			x := srv.Start()
			_, done, err := x.Step(oauthFirst("", token, nil))
			if err == nil && !done {
				err = errors.New("rejected")
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := js.fetches.Load(); n != 2 {
		t.Fatalf("%d fetches, want 2 (startup, one for the new kid)", n)
	}
}
