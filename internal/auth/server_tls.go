package auth

import (
	"bytes"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// ServerTLS is the TLS side of one SSL or SASL_SSL listener. Its Config is
// handed to the listener once; Reload swaps the keystore and truststore
// under it (Kafka's dynamic ssl.keystore.* update, e.g. a renewed
// certificate), so new connections use the new ones while established
// connections keep theirs.
type ServerTLS struct {
	base    *tls.Config
	current atomic.Pointer[serverGeneration]
	// reloadMu serializes Reload: each checks the new stores against the
	// generation it replaces.
	reloadMu sync.Mutex
}

// serverGeneration is one version of the listener's TLS settings, built
// whole and never modified after it is published.
type serverGeneration struct {
	config     *tls.Config
	keystore   *keystore
	truststore *truststore
	// fingerprint covers everything config was built from; equal
	// fingerprints mean a reload changed nothing.
	fingerprint [sha256.Size]byte
}

// NewServerTLS builds a listener's TLS from its ssl.* settings. A server
// needs a keystore; the truststore, used for client certificates, defaults
// to the system's roots.
func NewServerTLS(s TLSSettings) (*ServerTLS, error) {
	g, err := newServerGeneration(s)
	if err != nil {
		return nil, err
	}
	t := &ServerTLS{}
	t.current.Store(g)
	t.base = &tls.Config{
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			return t.current.Load().config, nil
		},
	}
	return t, nil
}

// Config is the configuration to serve with (tls.NewListener, tls.Server).
// It always hands out the latest reloaded settings. It is shared: do not
// modify it.
func (t *ServerTLS) Config() *tls.Config { return t.base }

// Reload rebuilds the listener's TLS from s, reading the keystore and
// truststore files again. It reports whether anything changed; when nothing
// did, or on an error, the current settings stay. As in Kafka, a listener
// cannot gain a truststore it was started without, and the new certificates
// must keep the subjects of the old ones and all of their subject
// alternative names (adding names is fine) unless ssl.allow.dn.changes or
// ssl.allow.san.changes says otherwise: clients and ACLs may rely on them.
func (t *ServerTLS) Reload(s TLSSettings) (changed bool, err error) {
	t.reloadMu.Lock()
	defer t.reloadMu.Unlock()
	old := t.current.Load()
	g, err := newServerGeneration(s)
	if err != nil {
		return false, err
	}
	if g.fingerprint == old.fingerprint {
		return false, nil
	}
	if old.truststore == nil && g.truststore != nil {
		return false, fmt.Errorf("ssl.truststore: cannot add a truststore to a listener started without one")
	}
	if err := compatibleKeystores(old.keystore, g.keystore, s.AllowDNChanges, s.AllowSANChanges); err != nil {
		return false, err
	}
	t.current.Store(g)
	return true, nil
}

func newServerGeneration(s TLSSettings) (*serverGeneration, error) {
	ks, err := loadKeystore(s)
	if err != nil {
		return nil, err
	}
	if ks == nil {
		return nil, fmt.Errorf("ssl.keystore.location (or ssl.keystore.key) is not set: an SSL listener needs a keystore")
	}
	ts, err := loadTruststore(s)
	if err != nil {
		return nil, err
	}
	params, err := parseTLSParams(s, false)
	if err != nil {
		return nil, err
	}
	clientAuth, err := parseClientAuth(s.ClientAuth)
	if err != nil {
		return nil, err
	}
	cfg := &tls.Config{
		Certificates: ks.certs,
		ClientAuth:   clientAuth,
		MinVersion:   params.minVersion,
		MaxVersion:   params.maxVersion,
		CipherSuites: params.cipherSuites,
		// Resumed sessions skip the client's certificate check; without
		// tickets every connection is checked against the truststore of
		// the current generation, so a reload that drops a CA takes effect
		// for every new connection.
		SessionTicketsDisabled: true,
	}
	if ts != nil {
		cfg.ClientCAs = ts.pool()
	}

	h := sha256.New()
	for _, c := range ks.certs {
		for _, der := range c.Certificate {
			h.Write(der)
		}
		h.Write([]byte{0})
	}
	h.Write([]byte{1})
	if ts != nil {
		for _, c := range ts.certs {
			h.Write(c.Raw)
		}
	}
	fmt.Fprintf(h, "|%d|%d|%d|%v", clientAuth, params.minVersion, params.maxVersion, params.cipherSuites)
	g := &serverGeneration{config: cfg, keystore: ks, truststore: ts}
	h.Sum(g.fingerprint[:0])
	return g, nil
}

// parseClientAuth maps ssl.client.auth; unset is none, as in Kafka.
func parseClientAuth(v string) (tls.ClientAuthType, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "", "none":
		return tls.NoClientCert, nil
	case "requested":
		return tls.VerifyClientCertIfGiven, nil
	case "required":
		return tls.RequireAndVerifyClientCert, nil
	}
	return 0, fmt.Errorf("ssl.client.auth %s: unknown (none, requested or required)", v)
}

// compatibleKeystores is Kafka's check of a reloaded keystore: as many
// certificates as before, each with the old one's subject and at least its
// subject alternative names.
func compatibleKeystores(current, next *keystore, allowDNChanges, allowSANChanges bool) error {
	if allowDNChanges && allowSANChanges {
		return nil
	}
	if len(current.certs) != len(next.certs) {
		return fmt.Errorf("ssl.keystore: the new keystore has %d certificates, the current one %d", len(next.certs), len(current.certs))
	}
	for i := range current.certs {
		o, n := current.certs[i].Leaf, next.certs[i].Leaf
		if !allowDNChanges && !sameSubject(o, n) {
			return fmt.Errorf("ssl.keystore: a new keystore must have the same subject distinguished name: %s is now %s", describeCert(o), describeCert(n))
		}
		if !allowSANChanges {
			if missing := missingSANs(o, n); len(missing) > 0 {
				return fmt.Errorf("ssl.keystore: a new keystore must keep the subject alternative names of the current one: %s lacks %s", describeCert(n), strings.Join(missing, ", "))
			}
		}
	}
	return nil
}

// sameSubject compares subjects as Kafka does: equal encodings, or equal
// RFC 2253 strings ignoring case.
func sameSubject(a, b *x509.Certificate) bool {
	if bytes.Equal(a.RawSubject, b.RawSubject) {
		return true
	}
	da, errA := SubjectDN(a)
	db, errB := SubjectDN(b)
	return errA == nil && errB == nil && strings.EqualFold(da, db)
}

// missingSANs lists the subject alternative names of current that next
// lacks.
func missingSANs(current, next *x509.Certificate) []string {
	has := map[string]bool{}
	for _, n := range subjectAltNames(next) {
		has[n] = true
	}
	var missing []string
	for _, n := range subjectAltNames(current) {
		if !has[n] {
			missing = append(missing, n)
		}
	}
	return missing
}

func subjectAltNames(c *x509.Certificate) []string {
	var names []string
	for _, n := range c.DNSNames {
		names = append(names, "DNS:"+n)
	}
	for _, ip := range c.IPAddresses {
		names = append(names, "IP:"+ip.String())
	}
	for _, e := range c.EmailAddresses {
		names = append(names, "email:"+e)
	}
	for _, u := range c.URIs {
		names = append(names, "URI:"+u.String())
	}
	slices.Sort(names)
	return names
}
