package auth_test

import (
	"crypto/tls"
	"crypto/x509"
	"path/filepath"
	"strings"
	"testing"

	"gregor/internal/auth"
	"gregor/internal/auth/authtest"
)

func mustServer(t *testing.T, s auth.TLSSettings) *auth.ServerTLS {
	t.Helper()
	srv, err := auth.NewServerTLS(s)
	if err != nil {
		t.Fatalf("NewServerTLS: %v", err)
	}
	return srv
}

func TestClientAuth(t *testing.T) {
	pki := newPKI(t)
	serverSettings := func(clientAuth string) auth.TLSSettings {
		s := pki.Settings(t, pki.Server, authtest.PEM)
		s.ClientAuth = clientAuth
		return s
	}
	withCert := mustClient(t, pki.Settings(t, pki.Client, authtest.PEM), "localhost")
	withoutCert := mustClient(t, pki.Settings(t, nil, authtest.PEM), "localhost")
	other := authtest.NewPKI(t, t.TempDir())
	foreignCert := mustClient(t, func() auth.TLSSettings {
		s := pki.Settings(t, nil, authtest.PEM)
		s.KeystoreLocation, s.KeyPassword = other.Client.KeystorePEM, authtest.Password
		return s
	}(), "localhost")

	tests := []struct {
		clientAuth string
		client     *tls.Config
		ok         bool
		principal  auth.Principal
	}{
		{"required", withCert, true, auth.User("CN=client")},
		{"required", withoutCert, false, auth.Principal{}},
		{"required", foreignCert, false, auth.Principal{}},
		{"requested", withCert, true, auth.User("CN=client")},
		{"requested", withoutCert, true, auth.Anonymous},
		{"requested", foreignCert, false, auth.Principal{}},
		{"none", withCert, true, auth.Anonymous},
		{"", withoutCert, true, auth.Anonymous},
	}
	for _, tt := range tests {
		name := tt.clientAuth + "/"
		switch tt.client {
		case withCert:
			name += "client certificate"
		case withoutCert:
			name += "no client certificate"
		default:
			name += "certificate of another CA"
		}
		t.Run(name, func(t *testing.T) {
			srv := mustServer(t, serverSettings(tt.clientAuth))
			r := handshake(t, srv.Config(), tt.client)
			if r.ok() != tt.ok {
				t.Fatalf("handshake: client %v, server %v; want ok=%v", r.clientErr, r.serverErr, tt.ok)
			}
			if !tt.ok {
				return
			}
			p, err := auth.CertificatePrincipal(r.server, nil)
			if err != nil {
				t.Fatal(err)
			}
			if p != tt.principal {
				t.Errorf("principal %v, want %v", p, tt.principal)
			}
		})
	}
}

func TestServerVerification(t *testing.T) {
	pki := newPKI(t)
	other := authtest.NewPKI(t, t.TempDir())
	srv := mustServer(t, pki.Settings(t, pki.Server, authtest.PKCS12))
	client := func(p *authtest.PKI, endpoint, serverName string) *tls.Config {
		s := p.Settings(t, nil, authtest.PEM)
		s.EndpointIdentification = endpoint
		return mustClient(t, s, serverName)
	}
	tests := []struct {
		name   string
		client *tls.Config
		ok     bool
		err    string
	}{
		{"host name", client(pki, "https", "localhost"), true, ""},
		{"IP address", client(pki, "https", "127.0.0.1"), true, ""},
		{"HTTPS in capitals", client(pki, "HTTPS", "localhost"), true, ""},
		{"host name mismatch", client(pki, "https", "broker.example"), false, "broker.example"},
		{"host name mismatch without identification", client(pki, "", "broker.example"), true, ""},
		{"no server name without identification", client(pki, "", ""), true, ""},
		{"another CA", client(other, "https", "localhost"), false, "unknown authority"},
		// Without endpoint identification the chain is still checked.
		{"another CA without identification", client(other, "", "localhost"), false, "unknown authority"},
		{"another CA without identification nor server name", client(other, "", ""), false, "unknown authority"},
		// No truststore: the system's roots, which do not have the test CA.
		{"system roots", mustClient(t, auth.TLSSettings{EndpointIdentification: "https"}, "localhost"), false, "unknown authority"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := handshake(t, srv.Config(), tt.client)
			if r.ok() != tt.ok {
				t.Fatalf("handshake: client %v, server %v; want ok=%v", r.clientErr, r.serverErr, tt.ok)
			}
			if !tt.ok && !strings.Contains(r.clientErr.Error(), tt.err) {
				t.Errorf("client error %q, want it to mention %q", r.clientErr, tt.err)
			}
		})
	}

	t.Run("server sends its chain", func(t *testing.T) {
		// A client trusting the CA only needs the server to send the
		// intermediate-free chain leaf first; check what was sent.
		r := handshake(t, srv.Config(), client(pki, "https", "localhost"))
		if !r.ok() {
			t.Fatal(r.clientErr, r.serverErr)
		}
		if got := r.client.PeerCertificates[0]; !got.Equal(certOf(t, pki.Server.Cert)) {
			t.Errorf("leaf %v", got.Subject)
		}
	})
}

func TestProtocolNegotiation(t *testing.T) {
	pki := newPKI(t)
	server := func(protocols, suites []string) *auth.ServerTLS {
		s := pki.Settings(t, pki.Server, authtest.PEM)
		s.EnabledProtocols, s.CipherSuites = protocols, suites
		return mustServer(t, s)
	}
	client := func(protocols, suites []string, protocol string) *tls.Config {
		s := pki.Settings(t, nil, authtest.PEM)
		s.EnabledProtocols, s.CipherSuites, s.Protocol = protocols, suites, protocol
		return mustClient(t, s, "localhost")
	}
	t.Run("TLS 1.3 by default", func(t *testing.T) {
		r := handshake(t, server(nil, nil).Config(), client(nil, nil, ""))
		if !r.ok() || r.server.Version != tls.VersionTLS13 {
			t.Fatalf("version %x: %v %v", r.server.Version, r.clientErr, r.serverErr)
		}
	})
	t.Run("client ssl.protocol TLSv1.2", func(t *testing.T) {
		r := handshake(t, server(nil, nil).Config(), client(nil, nil, "TLSv1.2"))
		if !r.ok() || r.server.Version != tls.VersionTLS12 {
			t.Fatalf("version %x: %v %v", r.server.Version, r.clientErr, r.serverErr)
		}
	})
	t.Run("no common version", func(t *testing.T) {
		r := handshake(t, server([]string{"TLSv1.2"}, nil).Config(), client([]string{"TLSv1.3"}, nil, ""))
		if r.ok() {
			t.Fatal("handshake succeeded")
		}
	})
	t.Run("cipher suite", func(t *testing.T) {
		const suite = "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"
		r := handshake(t, server([]string{"TLSv1.2"}, []string{suite}).Config(), client(nil, nil, ""))
		if !r.ok() || tls.CipherSuiteName(r.server.CipherSuite) != suite {
			t.Fatalf("suite %s: %v %v", tls.CipherSuiteName(r.server.CipherSuite), r.clientErr, r.serverErr)
		}
	})
	t.Run("no common suite", func(t *testing.T) {
		r := handshake(t, server([]string{"TLSv1.2"}, []string{"TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"}).Config(),
			client([]string{"TLSv1.2"}, []string{"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"}, ""))
		if r.ok() {
			t.Fatal("handshake succeeded")
		}
	})
}

func TestReload(t *testing.T) {
	pki := newPKI(t)
	dir := t.TempDir()
	settings := func(id *authtest.Identity) auth.TLSSettings {
		s := pki.Settings(t, id, authtest.PEM)
		s.ClientAuth = "required"
		return s
	}
	client := mustClient(t, pki.Settings(t, pki.Client, authtest.PEM), "localhost")
	servedLeaf := func(t *testing.T, srv *auth.ServerTLS) *x509.Certificate {
		t.Helper()
		r := handshake(t, srv.Config(), client)
		if !r.ok() {
			t.Fatalf("handshake: %v %v", r.clientErr, r.serverErr)
		}
		return r.client.PeerCertificates[0]
	}

	srv := mustServer(t, settings(pki.Server))
	cfg := srv.Config()
	first := certOf(t, pki.Server.Cert)
	if !servedLeaf(t, srv).Equal(first) {
		t.Fatal("not serving the first certificate")
	}

	t.Run("unchanged", func(t *testing.T) {
		changed, err := srv.Reload(settings(pki.Server))
		if err != nil || changed {
			t.Fatalf("Reload = %v, %v; want false, nil", changed, err)
		}
	})

	// The renewed certificate replaces the file in place, as operators do.
	renewed := pki.NewServer(t, "server-renewed")
	live := writeFile(t, filepath.Join(dir, "live.pem"), readFile(t, pki.Server.KeystorePEM))
	liveSettings := settings(nil)
	liveSettings.KeystoreLocation, liveSettings.KeyPassword = live, authtest.Password
	srv = mustServer(t, liveSettings)
	cfg = srv.Config()
	writeFile(t, live, readFile(t, renewed.KeystorePEM))
	t.Run("renewed certificate", func(t *testing.T) {
		changed, err := srv.Reload(liveSettings)
		if err != nil || !changed {
			t.Fatalf("Reload = %v, %v; want true, nil", changed, err)
		}
		if srv.Config() != cfg {
			t.Error("Config changed identity; listeners hold the first one")
		}
		if !servedLeaf(t, srv).Equal(certOf(t, renewed.Cert)) {
			t.Error("new connections do not get the renewed certificate")
		}
	})

	t.Run("failed reload keeps the current keystore", func(t *testing.T) {
		bad := liveSettings
		bad.KeyPassword = "wrong"
		if _, err := srv.Reload(bad); err == nil {
			t.Fatal("Reload with a wrong password succeeded")
		}
		if !servedLeaf(t, srv).Equal(certOf(t, renewed.Cert)) {
			t.Error("the served certificate changed")
		}
	})

	otherSubject := pki.Issue(t, "broker-2", authtest.Options{Subject: "/CN=broker-2", Hosts: []string{"localhost", "127.0.0.1"}, Server: true})
	fewerNames := pki.Issue(t, "localhost-only", authtest.Options{Subject: "/CN=localhost", Hosts: []string{"localhost"}, Server: true})
	moreNames := pki.NewServer(t, "more-names", "broker.example")
	reloadTo := func(id *authtest.Identity, adjust func(*auth.TLSSettings)) (bool, error) {
		s := liveSettings
		s.KeystoreLocation = id.KeystorePEM
		if adjust != nil {
			adjust(&s)
		}
		return srv.Reload(s)
	}
	t.Run("another subject", func(t *testing.T) {
		_, err := reloadTo(otherSubject, nil)
		checkErr(t, err, "a new keystore must have the same subject distinguished name", `"CN=localhost" is now "CN=broker-2"`)
		if !servedLeaf(t, srv).Equal(certOf(t, renewed.Cert)) {
			t.Error("the served certificate changed")
		}
	})
	t.Run("a dropped subject alternative name", func(t *testing.T) {
		_, err := reloadTo(fewerNames, nil)
		checkErr(t, err, "must keep the subject alternative names", "lacks IP:127.0.0.1")
	})
	t.Run("an added subject alternative name", func(t *testing.T) {
		if changed, err := reloadTo(moreNames, nil); err != nil || !changed {
			t.Fatalf("Reload = %v, %v; want true, nil", changed, err)
		}
	})
	t.Run("ssl.allow.dn.changes", func(t *testing.T) {
		fresh := mustServer(t, settings(pki.Server))
		s := settings(otherSubject)
		s.AllowDNChanges = true
		if _, err := fresh.Reload(s); err != nil {
			t.Fatal(err)
		}
		if got := servedLeaf(t, fresh); !got.Equal(certOf(t, otherSubject.Cert)) {
			t.Errorf("serving %v", got.Subject)
		}
	})
	t.Run("ssl.allow.san.changes", func(t *testing.T) {
		allow := func(s *auth.TLSSettings) { s.AllowSANChanges = true }
		if _, err := reloadTo(fewerNames, allow); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("truststore swap", func(t *testing.T) {
		// Trusting only another CA: the client's certificate is refused.
		other := authtest.NewPKI(t, t.TempDir())
		s := liveSettings
		s.KeystoreLocation = pki.Server.KeystorePEM
		s.TruststoreLocation = other.CA.Cert
		if changed, err := srv.Reload(s); err != nil || !changed {
			t.Fatalf("Reload = %v, %v; want true, nil", changed, err)
		}
		if r := handshake(t, srv.Config(), client); r.ok() {
			t.Error("a client of the dropped CA still connects")
		}
	})
	t.Run("no truststore added", func(t *testing.T) {
		s := pki.Settings(t, pki.Server, authtest.PEM)
		s.TruststoreLocation = ""
		noTrust := mustServer(t, s)
		s.TruststoreLocation = pki.CA.Cert
		_, err := noTrust.Reload(s)
		checkErr(t, err, "cannot add a truststore")
	})
}

func TestServerNeedsKeystore(t *testing.T) {
	_, err := auth.NewServerTLS(auth.TLSSettings{})
	checkErr(t, err, "an SSL listener needs a keystore")
}

// TestReloadWhileServing swaps certificates under connections being made;
// run with -race.
func TestReloadWhileServing(t *testing.T) {
	pki := newPKI(t)
	renewed := pki.NewServer(t, "server-renewed")
	srv := mustServer(t, pki.Settings(t, pki.Server, authtest.PEM))
	client := mustClient(t, pki.Settings(t, nil, authtest.PEM), "localhost")
	done := make(chan struct{})
	defer func() { <-done }()
	go func() {
		defer close(done)
		for i := range 20 {
			id := pki.Server
			if i%2 == 0 {
				id = renewed
			}
			if _, err := srv.Reload(pki.Settings(t, id, authtest.PEM)); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for range 10 {
		if r := handshake(t, srv.Config(), client); !r.ok() {
			t.Fatalf("handshake: %v %v", r.clientErr, r.serverErr)
		}
	}
}
