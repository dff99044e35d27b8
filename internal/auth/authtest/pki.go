// Package authtest makes throwaway certificates for tests: a CA, server and
// client certificates and their keys, written with openssl in each keystore
// format Gregor reads (PEM, encrypted PKCS#8 PEM, PKCS12, and JKS through
// keytool), and the ssl.* settings that use them. Certificates come from the
// same tools operators use, not from Go, so the tests read what real
// deployments read.
//
// A typical test:
//
//	pki := authtest.NewPKI(t, t.TempDir())
//	srv, err := auth.NewServerTLS(pki.Settings(t, pki.Server, authtest.PEM))
//	...
//	cli, err := auth.ClientTLS(pki.Settings(t, pki.Client, authtest.PKCS12), "localhost")
//
// Tests that need openssl skip when it is missing, and tests that ask for a
// JKS store skip when keytool (a Java runtime) is missing.
package authtest

import (
	"crypto/rand"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"gregor/internal/auth"

	"software.sslmate.com/src/go-pkcs12"
)

// Password protects every key and keystore authtest writes.
const Password = "authtest-password"

// Store types for Settings, as ssl.keystore.type spells them.
const (
	PEM    = "PEM"
	PKCS12 = "PKCS12"
	JKS    = "JKS"
)

// PKI is a CA and the certificates it issued, all under Dir.
type PKI struct {
	Dir string
	// CA is the self-signed certificate authority ("CN=authtest CA"); its
	// Cert is the PEM truststore of everything below.
	CA *Identity
	// Server is "CN=localhost" with subject alternative names localhost,
	// 127.0.0.1 and NewPKI's extra hosts, usable as a server and as a
	// client certificate (brokers dial each other with it).
	Server *Identity
	// Client is "CN=client", a client certificate.
	Client *Identity
	// TrustPKCS12 is a PKCS12 truststore holding the CA as a trusted entry
	// (with Java's trust attribute, as keytool -importcert writes it),
	// protected by Password.
	TrustPKCS12 string

	mu       sync.Mutex
	trustJKS string
}

// Identity is a certificate and its key in every format, as paths.
type Identity struct {
	// Subject is the certificate's subject as Java prints it, the name
	// ssl.principal.mapping.rules see (e.g. "CN=client").
	Subject string
	// Cert is the certificate alone; Chain is it followed by the CA's.
	Cert, Chain string
	// Key is the private key as unencrypted PKCS#8; EncryptedKey is it
	// encrypted (PBES2, AES-256) with Password.
	Key, EncryptedKey string
	// KeystorePEM is EncryptedKey followed by Chain: a keystore for
	// ssl.keystore.type=PEM with ssl.key.password=Password.
	KeystorePEM string
	// PKCS12 is the key and Chain in a PKCS12 keystore made by openssl
	// pkcs12 -export, protected by Password.
	PKCS12 string

	name string
	pki  *PKI
	mu   sync.Mutex
	jks  string
}

// Options describe a certificate for Issue.
type Options struct {
	// Subject in openssl's -subj form, "/O=Gregor/CN=alice"; "+" joins the
	// attributes of a multi-valued RDN, so a literal plus is written "\+".
	// Default "/CN=<name>".
	Subject string
	// Hosts are the subject alternative names: IP addresses or DNS names.
	Hosts []string
	// Server adds the serverAuth key usage to clientAuth.
	Server bool
	// RSA makes a 2048-bit RSA key instead of an ECDSA P-256 one.
	RSA bool
}

// NewPKI writes a CA, PKI.Server (with extraHosts among its subject
// alternative names) and PKI.Client under dir.
func NewPKI(t testing.TB, dir string, extraHosts ...string) *PKI {
	t.Helper()
	RequireOpenSSL(t)
	p := &PKI{Dir: dir}
	if err := os.WriteFile(p.path("openssl.cnf"), []byte(opensslConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	ca := &Identity{name: "ca", pki: p, Cert: p.path("ca.pem"), Key: p.path("ca.key")}
	genKey(t, ca.Key, false)
	openssl(t, "req", "-x509", "-new", "-config", p.path("openssl.cnf"), "-key", ca.Key,
		"-subj", "/CN=authtest CA", "-days", "3650", "-set_serial", serial(t),
		"-extensions", "ca", "-out", ca.Cert)
	ca.Chain = ca.Cert
	ca.Subject = subjectOf(t, ca.Cert)
	p.CA = ca

	p.Server = p.NewServer(t, "server", extraHosts...)
	p.Client = p.NewClient(t, "client")

	trust, err := pkcs12.Modern.EncodeTrustStore([]*x509.Certificate{readCert(t, ca.Cert)}, Password)
	if err != nil {
		t.Fatal(err)
	}
	p.TrustPKCS12 = p.path("truststore.p12")
	if err := os.WriteFile(p.TrustPKCS12, trust, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// NewServer issues another server certificate, files named after name:
// "CN=localhost" for localhost, 127.0.0.1 and hosts. Two of them differ in
// key and serial only, as a renewed certificate does.
func (p *PKI) NewServer(t testing.TB, name string, hosts ...string) *Identity {
	t.Helper()
	return p.Issue(t, name, Options{
		Subject: "/CN=localhost",
		Hosts:   append([]string{"localhost", "127.0.0.1"}, hosts...),
		Server:  true,
	})
}

// NewClient issues a client certificate "CN=<cn>", files named after cn.
func (p *PKI) NewClient(t testing.TB, cn string) *Identity {
	t.Helper()
	return p.Issue(t, cn, Options{Subject: "/CN=" + cn})
}

// Issue makes a key and a certificate signed by the CA, files named after
// name (which must be unique in the PKI), in PEM, encrypted PEM and PKCS12.
func (p *PKI) Issue(t testing.TB, name string, o Options) *Identity {
	t.Helper()
	stem := p.path(fileStem(name))
	id := &Identity{
		name:         name,
		pki:          p,
		Cert:         stem + ".pem",
		Chain:        stem + ".chain.pem",
		Key:          stem + ".key",
		EncryptedKey: stem + ".enc.key",
		KeystorePEM:  stem + ".keystore.pem",
		PKCS12:       stem + ".p12",
	}
	if o.Subject == "" {
		o.Subject = "/CN=" + name
	}
	genKey(t, id.Key, o.RSA)

	ext := "basicConstraints = critical,CA:FALSE\nkeyUsage = critical,digitalSignature,keyEncipherment\n"
	if o.Server {
		ext += "extendedKeyUsage = serverAuth,clientAuth\n"
	} else {
		ext += "extendedKeyUsage = clientAuth\n"
	}
	if len(o.Hosts) > 0 {
		var sans []string
		for _, h := range o.Hosts {
			if net.ParseIP(h) != nil {
				sans = append(sans, "IP:"+h)
			} else {
				sans = append(sans, "DNS:"+h)
			}
		}
		ext += "subjectAltName = " + strings.Join(sans, ",") + "\n"
	}
	extFile := stem + ".ext"
	csr := stem + ".csr"
	writeFile(t, extFile, []byte(ext))
	openssl(t, "req", "-new", "-config", p.path("openssl.cnf"), "-utf8", "-multivalue-rdn",
		"-key", id.Key, "-subj", o.Subject, "-out", csr)
	openssl(t, "x509", "-req", "-in", csr, "-CA", p.CA.Cert, "-CAkey", p.CA.Key,
		"-set_serial", serial(t), "-days", "365", "-extfile", extFile, "-out", id.Cert)

	writeFile(t, id.Chain, append(readFile(t, id.Cert), readFile(t, p.CA.Cert)...))
	openssl(t, "pkcs8", "-topk8", "-in", id.Key, "-out", id.EncryptedKey,
		"-v2", "aes-256-cbc", "-v2prf", "hmacWithSHA256", "-passout", "pass:"+Password)
	writeFile(t, id.KeystorePEM, append(readFile(t, id.EncryptedKey), readFile(t, id.Chain)...))
	openssl(t, "pkcs12", "-export", "-in", id.Chain, "-inkey", id.Key, "-name", name,
		"-out", id.PKCS12, "-passout", "pass:"+Password)
	id.Subject = subjectOf(t, id.Cert)
	return id
}

// JKS returns the path of id's key and chain in a JKS keystore (made from
// its PKCS12 by keytool on first use), protected by Password. It skips t
// without keytool.
func (id *Identity) JKS(t testing.TB) string {
	t.Helper()
	RequireKeytool(t)
	id.mu.Lock()
	defer id.mu.Unlock()
	if id.jks == "" {
		path := strings.TrimSuffix(id.PKCS12, ".p12") + ".jks"
		keytool(t, "-importkeystore", "-noprompt",
			"-srckeystore", id.PKCS12, "-srcstoretype", "PKCS12", "-srcstorepass", Password,
			"-destkeystore", path, "-deststoretype", "JKS", "-deststorepass", Password)
		id.jks = path
	}
	return id.jks
}

// TrustJKS returns the path of a JKS truststore holding the CA (made by
// keytool -importcert on first use), protected by Password. It skips t
// without keytool.
func (p *PKI) TrustJKS(t testing.TB) string {
	t.Helper()
	RequireKeytool(t)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.trustJKS == "" {
		path := p.path("truststore.jks")
		keytool(t, "-importcert", "-noprompt", "-alias", "ca", "-file", p.CA.Cert,
			"-keystore", path, "-storetype", "JKS", "-storepass", Password)
		p.trustJKS = path
	}
	return p.trustJKS
}

// Settings returns ssl.* settings that present id (none when id is nil)
// from a keystore of storeType (PEM, PKCS12 or JKS) and trust the CA from a
// truststore of the same type, with Kafka's default host name check. Set
// ClientAuth and the rest on the result.
func (p *PKI) Settings(t testing.TB, id *Identity, storeType string) auth.TLSSettings {
	t.Helper()
	s := auth.TLSSettings{
		KeystoreType:           storeType,
		TruststoreType:         storeType,
		EndpointIdentification: auth.DefaultEndpointIdentification,
	}
	switch storeType {
	case PEM:
		s.TruststoreLocation = p.CA.Cert
		if id != nil {
			s.KeystoreLocation, s.KeyPassword = id.KeystorePEM, Password
		}
	case PKCS12:
		s.TruststoreLocation, s.TruststorePassword = p.TrustPKCS12, Password
		if id != nil {
			s.KeystoreLocation, s.KeystorePassword = id.PKCS12, Password
		}
	case JKS:
		s.TruststoreLocation, s.TruststorePassword = p.TrustJKS(t), Password
		if id != nil {
			s.KeystoreLocation, s.KeystorePassword = id.JKS(t), Password
		}
	default:
		t.Fatalf("authtest: unknown store type %q", storeType)
	}
	return s
}

// RequireOpenSSL skips t when the openssl command is missing.
func RequireOpenSSL(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Skip("authtest: openssl not found (install the openssl package)")
	}
}

// RequireKeytool skips t when keytool (part of a Java runtime) is missing.
func RequireKeytool(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("keytool"); err != nil {
		t.Skip("authtest: keytool not found (install a Java runtime, e.g. openjdk-17-jre-headless), skipping JKS")
	}
}

// opensslConfig is the configuration of every openssl req: no prompts,
// UTF8String values (what OpenSSL's own configuration and most CAs choose),
// and the CA's extensions.
const opensslConfig = `[req]
distinguished_name = dn
prompt = no
string_mask = utf8only
[dn]
[ca]
basicConstraints = critical,CA:TRUE
keyUsage = critical,keyCertSign,cRLSign
subjectKeyIdentifier = hash
`

func (p *PKI) path(name string) string { return filepath.Join(p.Dir, name) }

func genKey(t testing.TB, path string, rsa bool) {
	t.Helper()
	if rsa {
		openssl(t, "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", path)
		return
	}
	openssl(t, "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", path)
}

func openssl(t testing.TB, args ...string) {
	t.Helper()
	run(t, "openssl", args...)
}

func keytool(t testing.TB, args ...string) {
	t.Helper()
	run(t, "keytool", args...)
}

func run(t testing.TB, name string, args ...string) {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		// The arguments hold the test password only.
		t.Fatalf("authtest: %s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

// serial is a random positive certificate serial number, so that
// certificates of one PKI never share one.
func serial(t testing.TB) string {
	t.Helper()
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	b[0] &= 0x7F
	return "0x" + hex.EncodeToString(b)
}

func subjectOf(t testing.TB, certPath string) string {
	t.Helper()
	dn, err := auth.SubjectDN(readCert(t, certPath))
	if err != nil {
		t.Fatal(err)
	}
	return dn
}

func readCert(t testing.TB, path string) *x509.Certificate {
	t.Helper()
	block, _ := pem.Decode(readFile(t, path))
	if block == nil {
		t.Fatalf("authtest: %s: no PEM block", path)
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatalf("authtest: %s: %v", path, err)
	}
	return c
}

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func writeFile(t testing.TB, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// fileStem makes name safe as a file name.
func fileStem(name string) string {
	return strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r == 0 || r == os.PathSeparator {
			return '_'
		}
		return r
	}, name)
}
