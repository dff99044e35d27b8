package auth_test

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gregor/internal/auth"
	"gregor/internal/auth/authtest"
)

func certOf(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	block, _ := pem.Decode([]byte(readFile(t, path)))
	if block == nil {
		t.Fatalf("%s: no PEM", path)
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// checkStores loads s as a client and checks that it presents id's
// certificate, chained to the CA, and trusts exactly the CA.
func checkStores(t *testing.T, pki *authtest.PKI, s auth.TLSSettings, id *authtest.Identity) {
	t.Helper()
	cfg := mustClient(t, s, "localhost")
	if id == nil {
		if len(cfg.Certificates) != 0 {
			t.Errorf("%d certificates, want none", len(cfg.Certificates))
		}
	} else {
		if len(cfg.Certificates) != 1 {
			t.Fatalf("%d certificates, want 1", len(cfg.Certificates))
		}
		c := cfg.Certificates[0]
		want := certOf(t, id.Cert)
		if !c.Leaf.Equal(want) {
			t.Errorf("leaf %v, want %v", c.Leaf.Subject, want.Subject)
		}
		if len(c.Certificate) != 2 || string(c.Certificate[1]) != string(certOf(t, pki.CA.Cert).Raw) {
			t.Errorf("chain of %d certificates, want leaf and CA", len(c.Certificate))
		}
	}
	roots := x509.NewCertPool()
	roots.AddCert(certOf(t, pki.CA.Cert))
	if cfg.RootCAs == nil || !cfg.RootCAs.Equal(roots) {
		t.Errorf("RootCAs are not the CA alone")
	}
}

func TestStoreFormats(t *testing.T) {
	pki := newPKI(t)
	for _, typ := range []string{authtest.PEM, authtest.PKCS12, authtest.JKS} {
		t.Run(typ, func(t *testing.T) {
			checkStores(t, pki, pki.Settings(t, pki.Client, typ), pki.Client)
			checkStores(t, pki, pki.Settings(t, nil, typ), nil)
		})
	}
	t.Run("type compared ignoring case", func(t *testing.T) {
		s := pki.Settings(t, pki.Client, authtest.PKCS12)
		s.KeystoreType, s.TruststoreType = "pkcs12", "Pkcs12"
		checkStores(t, pki, s, pki.Client)
	})
	// Java reads either binary format under either type name, and Kafka's
	// default type is JKS: a PKCS12 file with no type, or a JKS file typed
	// PKCS12, loads.
	t.Run("PKCS12 file under the default type", func(t *testing.T) {
		s := pki.Settings(t, pki.Client, authtest.PKCS12)
		s.KeystoreType, s.TruststoreType = "", ""
		checkStores(t, pki, s, pki.Client)
	})
	t.Run("JKS file typed PKCS12", func(t *testing.T) {
		s := pki.Settings(t, pki.Client, authtest.JKS)
		s.KeystoreType, s.TruststoreType = authtest.PKCS12, authtest.PKCS12
		checkStores(t, pki, s, pki.Client)
	})
}

func TestPEMKeystoreVariants(t *testing.T) {
	pki := newPKI(t)
	dir := t.TempDir()
	id := pki.Client
	chain := readFile(t, id.Chain)
	pemSettings := func(keystore string, keyPassword string) auth.TLSSettings {
		s := pki.Settings(t, nil, authtest.PEM)
		s.KeystoreLocation, s.KeyPassword = keystore, keyPassword
		return s
	}
	convert := func(name string, args ...string) string {
		out := filepath.Join(dir, name)
		cmd := exec.Command("openssl", append(args, "-in", id.Key, "-out", out)...)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("openssl %v: %v\n%s", args, err, b)
		}
		return readFile(t, out)
	}

	t.Run("unencrypted PKCS8", func(t *testing.T) {
		ks := writeFile(t, filepath.Join(dir, "plain.pem"), readFile(t, id.Key)+chain)
		checkStores(t, pki, pemSettings(ks, ""), id)
	})
	t.Run("SEC1 EC key", func(t *testing.T) {
		key := convert("sec1.key", "ec")
		if !strings.Contains(key, "BEGIN EC PRIVATE KEY") {
			t.Fatalf("openssl ec wrote %q", key)
		}
		ks := writeFile(t, filepath.Join(dir, "sec1.pem"), key+chain)
		checkStores(t, pki, pemSettings(ks, ""), id)
	})
	t.Run("PKCS1 RSA key", func(t *testing.T) {
		rsa := pki.Issue(t, "rsa", authtest.Options{RSA: true})
		out := filepath.Join(dir, "rsa1.key")
		if b, err := exec.Command("openssl", "pkey", "-traditional", "-in", rsa.Key, "-out", out).CombinedOutput(); err != nil {
			t.Fatalf("openssl pkey: %v\n%s", err, b)
		}
		key := readFile(t, out)
		if !strings.Contains(key, "BEGIN RSA PRIVATE KEY") {
			t.Fatalf("openssl pkey -traditional wrote %q", key)
		}
		ks := writeFile(t, filepath.Join(dir, "rsa1.pem"), key+readFile(t, rsa.Chain))
		checkStores(t, pki, pemSettings(ks, ""), rsa)
		// And the same RSA key encrypted as PKCS#8.
		checkStores(t, pki, pemSettings(rsa.KeystorePEM, authtest.Password), rsa)
	})
	t.Run("inline key and chain", func(t *testing.T) {
		s := pki.Settings(t, nil, authtest.PEM)
		s.KeystoreKey = readFile(t, id.EncryptedKey)
		s.KeystoreCertificateChain = chain
		s.KeyPassword = authtest.Password
		s.TruststoreLocation = ""
		s.TruststoreCertificates = readFile(t, pki.CA.Cert)
		checkStores(t, pki, s, id)
	})
	t.Run("inline values folded onto one line", func(t *testing.T) {
		// What a properties file with continuation lines yields.
		fold := func(s string) string { return strings.Join(strings.Fields(s), " ") }
		s := pki.Settings(t, nil, authtest.PEM)
		s.KeystoreKey = fold(readFile(t, id.Key))
		s.KeystoreCertificateChain = fold(chain)
		s.TruststoreLocation = ""
		s.TruststoreCertificates = fold(readFile(t, pki.CA.Cert))
		checkStores(t, pki, s, id)
	})
	t.Run("text around the blocks", func(t *testing.T) {
		ks := writeFile(t, filepath.Join(dir, "attrs.pem"),
			"Bag Attributes\n    friendlyName: client\n"+readFile(t, id.EncryptedKey)+"Bag Attributes: none\n"+chain+"\n# end\n")
		checkStores(t, pki, pemSettings(ks, authtest.Password), id)
	})
}

func TestStoreErrors(t *testing.T) {
	pki := newPKI(t)
	dir := t.TempDir()
	other := authtest.NewPKI(t, t.TempDir())

	// Keys that need a password, written by OpenSSL's legacy encryption.
	legacy := filepath.Join(dir, "legacy.key")
	if b, err := exec.Command("openssl", "ec", "-in", pki.Client.Key, "-aes256", "-passout", "pass:"+authtest.Password, "-out", legacy).CombinedOutput(); err != nil {
		t.Fatalf("openssl ec: %v\n%s", err, b)
	}
	legacyStore := writeFile(t, filepath.Join(dir, "legacy.pem"), readFile(t, legacy)+readFile(t, pki.Client.Chain))
	mismatched := writeFile(t, filepath.Join(dir, "mismatch.pem"), readFile(t, other.Client.Key)+readFile(t, pki.Client.Chain))
	noKey := writeFile(t, filepath.Join(dir, "nokey.pem"), readFile(t, pki.Client.Chain))
	twoKeys := writeFile(t, filepath.Join(dir, "twokeys.pem"), readFile(t, pki.Client.Key)+readFile(t, pki.Server.Key)+readFile(t, pki.Client.Chain))
	garbage := writeFile(t, filepath.Join(dir, "garbage.bin"), "not a keystore at all")
	// A PKCS12 truststore from openssl: certificates without Java's trust
	// attribute, which Java would ignore.
	opensslTrust := filepath.Join(dir, "openssl-trust.p12")
	if b, err := exec.Command("openssl", "pkcs12", "-export", "-nokeys", "-in", pki.CA.Cert, "-out", opensslTrust, "-passout", "pass:"+authtest.Password).CombinedOutput(); err != nil {
		t.Fatalf("openssl pkcs12: %v\n%s", err, b)
	}

	pemStore := func(path, keyPassword string) auth.TLSSettings {
		return auth.TLSSettings{KeystoreType: "PEM", KeystoreLocation: path, KeyPassword: keyPassword}
	}
	p12 := pki.Client.PKCS12
	tests := []struct {
		name string
		s    auth.TLSSettings
		want []string
	}{
		{"PKCS12 wrong password", auth.TLSSettings{KeystoreType: "PKCS12", KeystoreLocation: p12, KeystorePassword: "wrong"},
			[]string{"ssl.keystore.location " + p12 + ": wrong ssl.keystore.password or corrupt PKCS12"}},
		{"PKCS12 truststore wrong password", auth.TLSSettings{TruststoreType: "PKCS12", TruststoreLocation: pki.TrustPKCS12, TruststorePassword: "wrong"},
			[]string{"ssl.truststore.location " + pki.TrustPKCS12 + ": wrong ssl.truststore.password or corrupt PKCS12"}},
		{"PKCS12 truststore without trust attribute", auth.TLSSettings{TruststoreType: "PKCS12", TruststoreLocation: opensslTrust, TruststorePassword: authtest.Password},
			[]string{opensslTrust, "not marked trusted", "keytool -importcert"}},
		{"missing file", auth.TLSSettings{KeystoreType: "PKCS12", KeystoreLocation: filepath.Join(dir, "none.p12"), KeystorePassword: "x"},
			[]string{"ssl.keystore.location", "none.p12", "no such file"}},
		{"neither JKS nor PKCS12", auth.TLSSettings{KeystoreLocation: garbage, KeystorePassword: "x"},
			[]string{"ssl.keystore.location " + garbage, "neither a JKS nor a PKCS12"}},
		{"PEM file under a binary type", auth.TLSSettings{KeystoreType: "PKCS12", KeystoreLocation: pki.Client.KeystorePEM, KeystorePassword: "x"},
			[]string{"set the store type to PEM"}},
		{"encrypted key without password", pemStore(pki.Client.KeystorePEM, ""),
			[]string{"ssl.keystore.location " + pki.Client.KeystorePEM, "encrypted", "ssl.key.password is not set"}},
		{"encrypted key wrong password", pemStore(pki.Client.KeystorePEM, "wrong"),
			[]string{"ssl.keystore.location " + pki.Client.KeystorePEM, "wrong ssl.key.password"}},
		{"legacy encrypted key", pemStore(legacyStore, authtest.Password),
			[]string{"legacy PEM encryption", "openssl pkcs8 -topk8"}},
		{"key of another certificate", pemStore(mismatched, ""),
			[]string{"does not match the certificate", `"CN=client"`}},
		{"no key", pemStore(noKey, ""), []string{"no PEM private key"}},
		{"two keys", pemStore(twoKeys, ""), []string{"more than one private key"}},
		{"PEM keystore with store password", auth.TLSSettings{KeystoreType: "PEM", KeystoreLocation: pki.Client.KeystorePEM, KeystorePassword: "x"},
			[]string{"ssl.keystore.password cannot be used with a PEM keystore"}},
		{"inline key under JKS", auth.TLSSettings{KeystoreKey: "k", KeystoreCertificateChain: "c"},
			[]string{"ssl.keystore.type must be PEM, not JKS"}},
		{"inline key without chain", auth.TLSSettings{KeystoreType: "PEM", KeystoreKey: "k"},
			[]string{"ssl.keystore.certificate.chain is not"}},
		{"inline chain without key", auth.TLSSettings{KeystoreType: "PEM", KeystoreCertificateChain: "c"},
			[]string{"ssl.keystore.key is not"}},
		{"inline key and location", auth.TLSSettings{KeystoreType: "PEM", KeystoreKey: "k", KeystoreCertificateChain: "c", KeystoreLocation: "/x"},
			[]string{"both set"}},
		{"inline key with store password", auth.TLSSettings{KeystoreType: "PEM", KeystoreKey: "k", KeystoreCertificateChain: "c", KeystorePassword: "x"},
			[]string{"ssl.keystore.password cannot be used"}},
		{"store password without location", auth.TLSSettings{KeystorePassword: "x"},
			[]string{"ssl.keystore.location is not"}},
		{"location without password", auth.TLSSettings{KeystoreLocation: p12},
			[]string{"ssl.keystore.password is not set"}},
		{"unknown keystore type", auth.TLSSettings{KeystoreType: "BCFKS", KeystoreLocation: p12, KeystorePassword: "x"},
			[]string{"ssl.keystore.type BCFKS: unsupported"}},
		{"inline certificates under PKCS12", auth.TLSSettings{TruststoreType: "PKCS12", TruststoreCertificates: "c"},
			[]string{"ssl.truststore.type must be PEM"}},
		{"PEM truststore with password", auth.TLSSettings{TruststoreType: "PEM", TruststoreLocation: pki.CA.Cert, TruststorePassword: "x"},
			[]string{"ssl.truststore.password cannot be used"}},
		{"truststore password without location", auth.TLSSettings{TruststorePassword: "x"},
			[]string{"ssl.truststore.location is not"}},
		{"no certificate in PEM truststore", auth.TLSSettings{TruststoreType: "PEM", TruststoreCertificates: readFile(t, pki.Client.Key)},
			[]string{"ssl.truststore.certificates: no PEM CERTIFICATE"}},
		{"bad base64", auth.TLSSettings{TruststoreType: "PEM", TruststoreCertificates: "-----BEGIN CERTIFICATE-----\n!!!\n-----END CERTIFICATE-----\n"},
			[]string{"ssl.truststore.certificates", "bad base64"}},
		{"unknown client auth", auth.TLSSettings{KeystoreType: "PEM", KeystoreLocation: pki.Server.KeystorePEM, KeyPassword: authtest.Password, ClientAuth: "always"},
			[]string{"ssl.client.auth always"}},
		{"unknown endpoint identification", auth.TLSSettings{EndpointIdentification: "ldaps"},
			[]string{"ssl.endpoint.identification.algorithm ldaps"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			if tt.s.ClientAuth != "" {
				_, err = auth.NewServerTLS(tt.s)
			} else {
				_, err = auth.ClientTLS(tt.s, "localhost")
			}
			checkErr(t, err, tt.want...)
		})
	}
}

// keytool makes a store of Java 17's defaults, the kind operators hand to
// Kafka; authtest's JKS files are also keytool's.
func TestKeytoolStores(t *testing.T) {
	if testing.Short() {
		t.Skip("starts many JVMs")
	}
	authtest.RequireKeytool(t)
	pki := newPKI(t)
	dir := t.TempDir()
	keytool := func(args ...string) {
		t.Helper()
		if b, err := exec.Command("keytool", args...).CombinedOutput(); err != nil {
			t.Fatalf("keytool %v: %v\n%s", args, err, b)
		}
	}
	pw := authtest.Password

	t.Run("PKCS12 truststore", func(t *testing.T) {
		trust := filepath.Join(dir, "trust.p12")
		keytool("-importcert", "-noprompt", "-alias", "ca", "-file", pki.CA.Cert, "-keystore", trust, "-storetype", "PKCS12", "-storepass", pw)
		s := pki.Settings(t, pki.Client, authtest.PKCS12)
		s.TruststoreLocation = trust
		checkStores(t, pki, s, pki.Client)
	})
	t.Run("PKCS12 keystore", func(t *testing.T) {
		ks := filepath.Join(dir, "ks.p12")
		keytool("-importkeystore", "-noprompt", "-srckeystore", pki.Client.JKS(t), "-srcstoretype", "JKS", "-srcstorepass", pw,
			"-destkeystore", ks, "-deststoretype", "PKCS12", "-deststorepass", pw)
		s := pki.Settings(t, pki.Client, authtest.PKCS12)
		s.KeystoreLocation = ks
		checkStores(t, pki, s, pki.Client)
	})

	// A JKS key may have a password of its own: ssl.key.password.
	ownKeyPassword := filepath.Join(dir, "keypass.jks")
	keytool("-importkeystore", "-noprompt", "-srckeystore", pki.Client.PKCS12, "-srcstoretype", "PKCS12", "-srcstorepass", pw,
		"-srcalias", "client", "-destalias", "client",
		"-destkeystore", ownKeyPassword, "-deststoretype", "JKS", "-deststorepass", pw, "-destkeypass", "key-"+pw)
	t.Run("JKS key password", func(t *testing.T) {
		s := pki.Settings(t, pki.Client, authtest.JKS)
		s.KeystoreLocation, s.KeyPassword = ownKeyPassword, "key-"+pw
		checkStores(t, pki, s, pki.Client)
	})
	t.Run("JKS key password missing", func(t *testing.T) {
		s := pki.Settings(t, pki.Client, authtest.JKS)
		s.KeystoreLocation = ownKeyPassword
		_, err := auth.ClientTLS(s, "localhost")
		checkErr(t, err, ownKeyPassword, `entry "client"`, "wrong ssl.keystore.password (ssl.key.password is unset)")
	})
	t.Run("JKS wrong store password", func(t *testing.T) {
		s := pki.Settings(t, pki.Client, authtest.JKS)
		s.KeystorePassword = "wrong"
		_, err := auth.ClientTLS(s, "localhost")
		checkErr(t, err, "ssl.keystore.location "+s.KeystoreLocation+": wrong ssl.keystore.password or corrupt JKS")
	})
	t.Run("JKS truststore without password", func(t *testing.T) {
		s := pki.Settings(t, nil, authtest.JKS)
		s.TruststorePassword = ""
		_, err := auth.ClientTLS(s, "localhost")
		checkErr(t, err, "ssl.truststore.password is needed")
	})
	t.Run("JKS keystore as truststore", func(t *testing.T) {
		// Java trusts the certificate of a key entry too.
		s := auth.TLSSettings{TruststoreLocation: pki.Client.JKS(t), TruststorePassword: pw}
		cfg := mustClient(t, s, "localhost")
		want := x509.NewCertPool()
		want.AddCert(certOf(t, pki.Client.Cert))
		if !cfg.RootCAs.Equal(want) {
			t.Errorf("RootCAs are not the key entry's certificate")
		}
	})
}

func TestProtocolsAndCipherSuites(t *testing.T) {
	tests := []struct {
		name     string
		s        auth.TLSSettings
		min, max uint16
		suites   []uint16
		err      string
	}{
		{name: "defaults", min: tls.VersionTLS12, max: tls.VersionTLS13},
		{name: "TLS 1.3 only", s: auth.TLSSettings{EnabledProtocols: []string{"TLSv1.3"}}, min: tls.VersionTLS13, max: tls.VersionTLS13},
		{name: "old versions", s: auth.TLSSettings{EnabledProtocols: []string{"TLSv1", "tlsv1.1", "TLSv1.2"}}, min: tls.VersionTLS10, max: tls.VersionTLS12},
		{name: "a hole", s: auth.TLSSettings{EnabledProtocols: []string{"TLSv1.1", "TLSv1.3"}}, err: "must be consecutive"},
		{name: "SSLv3", s: auth.TLSSettings{EnabledProtocols: []string{"SSLv3"}}, err: "ssl.enabled.protocols SSLv3: SSL protocols are not supported"},
		{name: "unknown", s: auth.TLSSettings{EnabledProtocols: []string{"TLSv2"}}, err: "ssl.enabled.protocols TLSv2: unknown protocol"},
		{name: "client ssl.protocol caps", s: auth.TLSSettings{Protocol: "TLSv1.2"}, min: tls.VersionTLS12, max: tls.VersionTLS12},
		{name: "ssl.protocol TLS", s: auth.TLSSettings{Protocol: "TLS"}, min: tls.VersionTLS12, max: tls.VersionTLS13},
		{name: "ssl.protocol below enabled", s: auth.TLSSettings{Protocol: "TLSv1.1"}, err: "ssl.protocol TLSv1.1 is below"},
		{
			name: "suites",
			s: auth.TLSSettings{CipherSuites: []string{"TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384", "TLS_AES_128_GCM_SHA256",
				"TLS_EMPTY_RENEGOTIATION_INFO_SCSV", "SSL_RSA_WITH_3DES_EDE_CBC_SHA", "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256"}},
			min: tls.VersionTLS12, max: tls.VersionTLS13,
			suites: []uint16{tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384, tls.TLS_RSA_WITH_3DES_EDE_CBC_SHA, tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256},
		},
		{name: "only TLS 1.3 suites", s: auth.TLSSettings{CipherSuites: []string{"TLS_AES_256_GCM_SHA384"}}, min: tls.VersionTLS13, max: tls.VersionTLS13},
		{name: "only TLS 1.3 suites without TLS 1.3", s: auth.TLSSettings{CipherSuites: []string{"TLS_AES_256_GCM_SHA384"}, EnabledProtocols: []string{"TLSv1.2"}}, err: "TLS 1.3 is not enabled"},
		{name: "unknown suite", s: auth.TLSSettings{CipherSuites: []string{"TLS_RSA_WITH_IDEA_CBC_SHA"}}, err: "ssl.cipher.suites: unknown or unsupported cipher suite TLS_RSA_WITH_IDEA_CBC_SHA"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.s.EndpointIdentification = "https"
			cfg, err := auth.ClientTLS(tt.s, "localhost")
			if tt.err != "" {
				checkErr(t, err, tt.err)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.MinVersion != tt.min || cfg.MaxVersion != tt.max {
				t.Errorf("versions %x..%x, want %x..%x", cfg.MinVersion, cfg.MaxVersion, tt.min, tt.max)
			}
			if !slices.Equal(cfg.CipherSuites, tt.suites) {
				t.Errorf("suites %x, want %x", cfg.CipherSuites, tt.suites)
			}
		})
	}
}
