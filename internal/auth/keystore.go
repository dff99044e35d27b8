package auth

import (
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"fmt"
	"os"
	"strings"
)

// Store types of ssl.keystore.type and ssl.truststore.type.
const (
	storeJKS    = "JKS"
	storePKCS12 = "PKCS12"
	storePEM    = "PEM"
)

// keystore is what ssl.keystore.* loads: the certificate chains, with their
// private keys, that this side presents. A JKS keystore may hold several;
// Go's TLS stack picks the first one the peer accepts, as Java's key manager
// picks one by key type.
type keystore struct {
	certs []tls.Certificate // Leaf set; Certificate is the chain, leaf first
}

// truststore is what ssl.truststore.* loads: the certificates that anchor
// the peer's chain.
type truststore struct {
	certs []*x509.Certificate
}

func (t *truststore) pool() *x509.CertPool {
	p := x509.NewCertPool()
	for _, c := range t.certs {
		p.AddCert(c)
	}
	return p
}

// loadKeystore reads ssl.keystore.*, checking the combinations as Kafka's
// DefaultSslEngineFactory does. It returns nil and no error when no keystore
// is configured (a client of a broker that does not ask for certificates).
func loadKeystore(s TLSSettings) (*keystore, error) {
	typ, err := storeType("ssl.keystore.type", s.KeystoreType)
	if err != nil {
		return nil, err
	}
	switch {
	case s.KeystoreKey != "":
		switch {
		case typ != storePEM:
			return nil, fmt.Errorf("ssl.keystore.key is set, so ssl.keystore.type must be PEM, not %s", typ)
		case s.KeystoreCertificateChain == "":
			return nil, fmt.Errorf("ssl.keystore.key is set but ssl.keystore.certificate.chain is not")
		case s.KeystoreLocation != "":
			return nil, fmt.Errorf("ssl.keystore.key and ssl.keystore.location are both set; set one")
		case s.KeystorePassword != "":
			return nil, fmt.Errorf("ssl.keystore.password cannot be used with a PEM key; its password is ssl.key.password")
		}
		return pemKeystore("ssl.keystore.key", s.KeystoreKey, "ssl.keystore.certificate.chain", s.KeystoreCertificateChain, s.KeyPassword)
	case s.KeystoreCertificateChain != "":
		return nil, fmt.Errorf("ssl.keystore.certificate.chain is set but ssl.keystore.key is not")
	case s.KeystoreLocation == "":
		if s.KeystorePassword != "" {
			return nil, fmt.Errorf("ssl.keystore.password is set but ssl.keystore.location is not")
		}
		return nil, nil
	}

	where := "ssl.keystore.location " + s.KeystoreLocation
	if typ == storePEM && s.KeystorePassword != "" {
		return nil, fmt.Errorf("%s: ssl.keystore.password cannot be used with a PEM keystore; its key's password is ssl.key.password", where)
	}
	if typ != storePEM && s.KeystorePassword == "" {
		return nil, fmt.Errorf("%s: ssl.keystore.password is not set", where)
	}
	data, err := os.ReadFile(s.KeystoreLocation)
	if err != nil {
		return nil, fmt.Errorf("ssl.keystore.location: %w", err)
	}
	if typ == storePEM {
		return pemKeystore(where, string(data), where, string(data), s.KeyPassword)
	}
	// Kafka's ssl.key.password defaults to the keystore password.
	keyPassword := s.KeyPassword
	if keyPassword == "" {
		keyPassword = s.KeystorePassword
	}
	switch binaryStoreFormat(data) {
	case storeJKS:
		return jksKeystore(where, data, s.KeystorePassword, keyPassword, s.KeyPassword != "")
	case storePKCS12:
		return pkcs12Keystore(where, data, s.KeystorePassword)
	}
	return nil, unknownBinaryStore(where, data)
}

// loadTruststore reads ssl.truststore.*, checking the combinations as
// Kafka does. It returns nil and no error when no truststore is configured:
// the peer is then checked against the system's roots, as Java falls back to
// its own cacerts.
func loadTruststore(s TLSSettings) (*truststore, error) {
	typ, err := storeType("ssl.truststore.type", s.TruststoreType)
	if err != nil {
		return nil, err
	}
	switch {
	case s.TruststoreCertificates != "":
		switch {
		case typ != storePEM:
			return nil, fmt.Errorf("ssl.truststore.certificates is set, so ssl.truststore.type must be PEM, not %s", typ)
		case s.TruststoreLocation != "":
			return nil, fmt.Errorf("ssl.truststore.certificates and ssl.truststore.location are both set; set one")
		case s.TruststorePassword != "":
			return nil, fmt.Errorf("ssl.truststore.password cannot be used with PEM certificates")
		}
		return pemTruststore("ssl.truststore.certificates", s.TruststoreCertificates)
	case s.TruststoreLocation == "":
		if s.TruststorePassword != "" {
			return nil, fmt.Errorf("ssl.truststore.password is set but ssl.truststore.location is not")
		}
		return nil, nil
	}

	where := "ssl.truststore.location " + s.TruststoreLocation
	if typ == storePEM && s.TruststorePassword != "" {
		return nil, fmt.Errorf("%s: ssl.truststore.password cannot be used with a PEM truststore", where)
	}
	data, err := os.ReadFile(s.TruststoreLocation)
	if err != nil {
		return nil, fmt.Errorf("ssl.truststore.location: %w", err)
	}
	if typ == storePEM {
		return pemTruststore(where, string(data))
	}
	switch binaryStoreFormat(data) {
	case storeJKS:
		return jksTruststore(where, data, s.TruststorePassword)
	case storePKCS12:
		return pkcs12Truststore(where, data, s.TruststorePassword)
	}
	return nil, unknownBinaryStore(where, data)
}

func storeType(setting, typ string) (string, error) {
	t := strings.ToUpper(strings.TrimSpace(typ))
	switch t {
	case "":
		return storeJKS, nil
	case storeJKS, storePKCS12, storePEM:
		return t, nil
	}
	return "", fmt.Errorf("%s %s: unsupported (JKS, PKCS12 or PEM)", setting, typ)
}

// Magic numbers at the start of Java's binary keystores.
const (
	jksMagic   = 0xFEEDFEED
	jceksMagic = 0xCECECECE
)

// binaryStoreFormat tells a JKS file from a PKCS12 one by its content, not
// its declared type: Java (9 and later) loads either format under either
// type name, and Kafka users rely on that (keytool writes PKCS12 by default
// while ssl.keystore.type defaults to JKS). It returns "" for anything else.
func binaryStoreFormat(data []byte) string {
	switch {
	case len(data) >= 4 && binary.BigEndian.Uint32(data) == jksMagic:
		return storeJKS
	case len(data) > 0 && data[0] == 0x30: // a DER SEQUENCE: PKCS#12's PFX
		return storePKCS12
	}
	return ""
}

func unknownBinaryStore(where string, data []byte) error {
	switch {
	case len(data) >= 4 && binary.BigEndian.Uint32(data) == jceksMagic:
		return fmt.Errorf("%s: JCEKS keystores are not supported; convert it to PKCS12 with keytool -importkeystore", where)
	case strings.Contains(string(data[:min(len(data), 4096)]), "-----BEGIN"):
		return fmt.Errorf("%s: a PEM file; set the store type to PEM", where)
	}
	return fmt.Errorf("%s: neither a JKS nor a PKCS12 file", where)
}

// newCertificate pairs a private key with its chain, leaf first, checking
// that the key belongs to the leaf.
func newCertificate(where string, key crypto.PrivateKey, chain []*x509.Certificate) (tls.Certificate, error) {
	if len(chain) == 0 {
		return tls.Certificate{}, fmt.Errorf("%s: no certificate for the private key", where)
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return tls.Certificate{}, fmt.Errorf("%s: unsupported private key type %T", where, key)
	}
	pub, ok := signer.Public().(interface{ Equal(crypto.PublicKey) bool })
	if !ok || !pub.Equal(chain[0].PublicKey) {
		return tls.Certificate{}, fmt.Errorf("%s: the private key does not match the certificate %s", where, describeCert(chain[0]))
	}
	c := tls.Certificate{PrivateKey: key, Leaf: chain[0]}
	for _, cert := range chain {
		c.Certificate = append(c.Certificate, cert.Raw)
	}
	return c, nil
}

// describeCert names a certificate in an error message.
func describeCert(c *x509.Certificate) string {
	if dn, err := SubjectDN(c); err == nil && dn != "" {
		return `"` + dn + `"`
	}
	return "with serial " + c.SerialNumber.String()
}
