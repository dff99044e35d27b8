package sasl

import (
	"context"
	"crypto/ecdsa"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"sync"
	"sync/atomic"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

const (
	// jwksFetchTimeout bounds one fetch of the key set.
	jwksFetchTimeout = 10 * time.Second
	// jwksMaxSize bounds the key set document.
	jwksMaxSize = 1 << 20
	// jwksKidRefetchInterval is the least time between two fetches
	// triggered by tokens with an unknown kid, whatever the kids: a
	// client sending random kids cannot make the broker hammer the
	// identity provider. Kafka keeps 60 s per kid.
	jwksKidRefetchInterval = 10 * time.Second
	// jwksMaxKidLength is the longest kid worth a fetch, as in Kafka.
	jwksMaxKidLength = 1000
)

// jwksSnapshot is one fetched key set: the verification keys (public RSA
// or EC keys meant for signatures), and when the fetch that got them
// started.
type jwksSnapshot struct {
	keys    []jose.JSONWebKey
	started time.Time
}

// jwksSource holds the JSON Web Key Set of sasl.oauthbearer.jwks.endpoint.url
// (https, http or file) and keeps it fresh, as Kafka's RefreshingHttpsJwks:
// a background refresh every JWKSRefresh, each retried with exponential
// backoff from JWKSRetryBackoff for up to JWKSRetryBackoffMax; and a fetch
// when a token names a kid the set lacks, at most once per
// jwksKidRefetchInterval. Kafka fails that token and refreshes in the
// background; here the token waits for the fetch (bounded by
// jwksFetchTimeout), so a key rotated in at the provider is usable by the
// first token signed with it.
//
// The refresh goroutine is started by newJWKSSource and stopped by close,
// which waits for it; it also stops when the context given to
// newJWKSSource is done.
type jwksSource struct {
	location   *url.URL
	client     *http.Client
	ownClient  bool // made here: close drops its idle connections
	log        *slog.Logger
	refresh    time.Duration
	backoff    time.Duration
	backoffMax time.Duration

	snapshot atomic.Pointer[jwksSnapshot]

	// mu guards lastKidFetch and kidFetch, the kid-triggered fetch in
	// flight (closed when it ends). Never held during I/O.
	mu           sync.Mutex
	lastKidFetch time.Time
	kidFetch     chan struct{}

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func newJWKSSource(ctx context.Context, cfg OAuthConfig, log *slog.Logger) (*jwksSource, error) {
	loc, err := url.Parse(cfg.JWKSEndpointURL)
	if err != nil {
		return nil, fmt.Errorf("sasl: %s is not a URL: %w", ConfigJWKSEndpointURL, err)
	}
	switch loc.Scheme {
	case "https", "http":
	case "file":
		if loc.Path == "" {
			return nil, fmt.Errorf("sasl: %s: file URL without a path", ConfigJWKSEndpointURL)
		}
	default:
		return nil, fmt.Errorf("sasl: %s must be an https, http or file URL", ConfigJWKSEndpointURL)
	}
	if cfg.JWKSRefresh <= 0 {
		return nil, fmt.Errorf("sasl: %s must be positive", ConfigJWKSRefreshMs)
	}
	if cfg.JWKSRetryBackoff < 0 || cfg.JWKSRetryBackoffMax < 0 {
		return nil, fmt.Errorf("sasl: %s and %s must not be negative", ConfigJWKSRetryBackoffMs, ConfigJWKSRetryBackoffMaxMs)
	}
	client, ownClient := cfg.HTTPClient, false
	if client == nil {
		// Our own transport, so that close can drop its idle
		// connections rather than leave them in a shared one.
		transport := http.DefaultTransport.(*http.Transport).Clone()
		client, ownClient = &http.Client{Timeout: jwksFetchTimeout, Transport: transport}, true
	}
	s := &jwksSource{
		location:   loc,
		client:     client,
		ownClient:  ownClient,
		log:        log,
		refresh:    cfg.JWKSRefresh,
		backoff:    cfg.JWKSRetryBackoff,
		backoffMax: cfg.JWKSRetryBackoffMax,
	}
	s.ctx, s.cancel = context.WithCancel(ctx)
	if err := s.fetchWithRetry(); err != nil {
		s.close()
		return nil, fmt.Errorf("sasl: fetch JWKS from %s: %w", s.redactedLocation(), err)
	}
	s.wg.Add(1)
	go s.run()
	return s, nil
}

func (s *jwksSource) close() {
	s.cancel()
	s.wg.Wait()
	if s.ownClient {
		s.client.CloseIdleConnections()
	}
}

func (s *jwksSource) run() {
	defer s.wg.Done()
	t := time.NewTicker(s.refresh)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
			if err := s.fetchWithRetry(); err != nil && s.ctx.Err() == nil {
				s.log.Warn("JWKS refresh failed; keeping the keys we have", "url", s.redactedLocation(), "err", err)
			}
		}
	}
}

// redactedLocation is the URL without user info or query, which may hold
// credentials.
func (s *jwksSource) redactedLocation() string {
	u := *s.location
	u.User = nil
	u.RawQuery = ""
	u.Fragment = ""
	return u.String()
}

// fetchWithRetry fetches until it succeeds, retrying with a doubling
// backoff until backoffMax has passed since the first attempt (Kafka's
// Retry), or until the source is closed.
func (s *jwksSource) fetchWithRetry() error {
	deadline := time.Now().Add(s.backoffMax)
	wait := s.backoff
	for {
		err := s.fetch()
		if err == nil {
			return nil
		}
		left := time.Until(deadline)
		if left <= 0 || s.ctx.Err() != nil {
			return err
		}
		t := time.NewTimer(min(wait, left))
		select {
		case <-s.ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		wait = max(2*wait, time.Millisecond)
	}
}

// fetch gets and parses the key set once and installs it unless a fetch
// that started later has installed one already.
func (s *jwksSource) fetch() error {
	started := time.Now()
	body, err := s.read()
	if err != nil {
		return err
	}
	keys, skipped, err := parseJWKS(body)
	if err != nil {
		return err
	}
	if skipped > 0 {
		s.log.Warn("JWKS keys skipped (not public RSA/EC signature keys, or unparsable)", "url", s.redactedLocation(), "skipped", skipped)
	}
	next := &jwksSnapshot{keys: keys, started: started}
	for {
		cur := s.snapshot.Load()
		if cur != nil && cur.started.After(started) {
			return nil
		}
		if s.snapshot.CompareAndSwap(cur, next) {
			return nil
		}
	}
}

func (s *jwksSource) read() ([]byte, error) {
	if s.location.Scheme == "file" {
		f, err := os.Open(s.location.Path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		return readLimited(f)
	}
	ctx, cancel := context.WithTimeout(s.ctx, jwksFetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.location.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := s.client.Do(req)
	if err != nil {
		// url.Error repeats the URL; say only what went wrong.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, jwksMaxSize))
		return nil, fmt.Errorf("HTTP status %d", resp.StatusCode)
	}
	return readLimited(resp.Body)
}

func readLimited(r io.Reader) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, jwksMaxSize+1))
	if err != nil {
		return nil, err
	}
	if len(b) > jwksMaxSize {
		return nil, fmt.Errorf("key set is larger than %d bytes", jwksMaxSize)
	}
	return b, nil
}

// parseJWKS reads a JWK Set, keeping the public RSA and EC keys meant for
// signatures and counting the others (private or symmetric keys,
// encryption keys, unknown key types, unparsable entries) as skipped, as
// jose4j ignores what it cannot use.
func parseJWKS(body []byte) ([]jose.JSONWebKey, int, error) {
	var doc struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, 0, errors.New("key set is not a JSON object with keys")
	}
	if doc.Keys == nil {
		return nil, 0, errors.New("key set has no keys member")
	}
	var keys []jose.JSONWebKey
	skipped := 0
	for _, raw := range doc.Keys {
		var k jose.JSONWebKey
		if err := k.UnmarshalJSON(raw); err != nil || !k.Valid() || !k.IsPublic() || (k.Use != "" && k.Use != "sig") {
			skipped++
			continue
		}
		switch k.Key.(type) {
		case *rsa.PublicKey, *ecdsa.PublicKey:
			keys = append(keys, k)
		default:
			skipped++
		}
	}
	return keys, skipped, nil
}

// verificationKey finds the key for a token's kid and alg. With no kid,
// the only key that fits alg is used, if there is exactly one. An unknown
// kid triggers a fetch (see jwksSource).
func (s *jwksSource) verificationKey(kid string, alg jose.SignatureAlgorithm) (jose.JSONWebKey, error) {
	if k, err := s.find(kid, alg); err == nil || kid == "" || len(kid) > jwksMaxKidLength || !errors.Is(err, errUnknownKid) {
		return k, err
	}
	s.fetchForUnknownKid()
	return s.find(kid, alg)
}

var errUnknownKid = errors.New("no key with the token's kid")

func (s *jwksSource) find(kid string, alg jose.SignatureAlgorithm) (jose.JSONWebKey, error) {
	snap := s.snapshot.Load()
	var found []jose.JSONWebKey
	for _, k := range snap.keys {
		if (kid == "" || k.KeyID == kid) && keyFitsAlg(k, alg) {
			found = append(found, k)
		}
	}
	switch {
	case len(found) == 1:
		return found[0], nil
	case len(found) > 1 && kid != "":
		return found[0], nil // a set should not repeat a kid; take the first
	case len(found) > 1:
		return jose.JSONWebKey{}, errors.New("token has no kid and several keys fit its alg")
	case kid == "":
		return jose.JSONWebKey{}, errors.New("token has no kid and no key fits its alg")
	}
	for _, k := range snap.keys {
		if k.KeyID == kid {
			return jose.JSONWebKey{}, errors.New("the key with the token's kid does not fit its alg")
		}
	}
	return jose.JSONWebKey{}, errUnknownKid
}

// keyFitsAlg reports whether k may verify alg: the right key type, and
// the key's own alg, if it names one, the same.
func keyFitsAlg(k jose.JSONWebKey, alg jose.SignatureAlgorithm) bool {
	if k.Algorithm != "" && k.Algorithm != string(alg) {
		return false
	}
	switch k.Key.(type) {
	case *rsa.PublicKey:
		switch alg {
		case jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512:
			return true
		}
	case *ecdsa.PublicKey:
		switch alg {
		case jose.ES256, jose.ES384, jose.ES512:
			return true
		}
	}
	return false
}

// fetchForUnknownKid fetches the key set once, unless one such fetch ran
// less than jwksKidRefetchInterval ago; if one is running, it waits for
// that one instead.
func (s *jwksSource) fetchForUnknownKid() {
	s.mu.Lock()
	if inflight := s.kidFetch; inflight != nil {
		s.mu.Unlock()
		select {
		case <-inflight:
		case <-s.ctx.Done():
		}
		return
	}
	now := time.Now()
	if !s.lastKidFetch.IsZero() && now.Sub(s.lastKidFetch) < jwksKidRefetchInterval {
		s.mu.Unlock()
		return
	}
	s.lastKidFetch = now
	done := make(chan struct{})
	s.kidFetch = done
	s.mu.Unlock()

	if err := s.fetch(); err != nil && s.ctx.Err() == nil {
		s.log.Warn("JWKS fetch for an unknown kid failed", "url", s.redactedLocation(), "err", err)
	}

	s.mu.Lock()
	s.kidFetch = nil
	close(done)
	s.mu.Unlock()
}
