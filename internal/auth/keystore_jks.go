package auth

import (
	"bytes"
	"crypto/x509"
	"fmt"

	jks "github.com/pavlo-v-chernykh/keystore-go/v4"
)

// jksKeystore reads every private key entry of a JKS file, each with its
// chain. Like Java's key manager, it needs every key to open with the key
// password (ssl.key.password, or the keystore password when that is unset;
// keyPasswordSet says which, for the error message).
func jksKeystore(where string, data []byte, storePassword, keyPassword string, keyPasswordSet bool) (*keystore, error) {
	ks, err := loadJKS(where, "ssl.keystore.password", data, storePassword)
	if err != nil {
		return nil, err
	}
	keyPass, err := jksPassword(where, "ssl.key.password", keyPassword)
	if err != nil {
		return nil, err
	}
	passwordName := "ssl.keystore.password (ssl.key.password is unset)"
	if keyPasswordSet {
		passwordName = "ssl.key.password"
	}
	var out keystore
	for _, alias := range ks.Aliases() {
		if !ks.IsPrivateKeyEntry(alias) {
			continue
		}
		entry, err := ks.GetPrivateKeyEntry(alias, keyPass)
		if err != nil {
			return nil, fmt.Errorf("%s: cannot open the key of entry %q: wrong %s: %w", where, alias, passwordName, err)
		}
		key, err := x509.ParsePKCS8PrivateKey(entry.PrivateKey)
		if err != nil {
			return nil, fmt.Errorf("%s: entry %q: bad private key: %w", where, alias, err)
		}
		chain, err := jksCertificates(where, alias, entry.CertificateChain)
		if err != nil {
			return nil, err
		}
		cert, err := newCertificate(fmt.Sprintf("%s: entry %q", where, alias), key, chain)
		if err != nil {
			return nil, err
		}
		out.certs = append(out.certs, cert)
	}
	if len(out.certs) == 0 {
		return nil, fmt.Errorf("%s: no private key entry", where)
	}
	return &out, nil
}

// jksTruststore reads the trusted certificate entries of a JKS file, and
// the certificates of its key entries, which Java's trust managers trust
// too. keystore-go always checks the file's integrity, so unlike Java it
// needs the password.
func jksTruststore(where string, data []byte, password string) (*truststore, error) {
	if password == "" {
		return nil, fmt.Errorf("%s: ssl.truststore.password is needed to read a JKS truststore", where)
	}
	ks, err := loadJKS(where, "ssl.truststore.password", data, password)
	if err != nil {
		return nil, err
	}
	var out truststore
	for _, alias := range ks.Aliases() {
		var raw []jks.Certificate
		if ks.IsTrustedCertificateEntry(alias) {
			entry, err := ks.GetTrustedCertificateEntry(alias)
			if err != nil {
				return nil, fmt.Errorf("%s: entry %q: %w", where, alias, err)
			}
			raw = []jks.Certificate{entry.Certificate}
		} else {
			chain, err := ks.GetPrivateKeyEntryCertificateChain(alias)
			if err != nil || len(chain) == 0 {
				continue
			}
			raw = chain[:1]
		}
		certs, err := jksCertificates(where, alias, raw)
		if err != nil {
			return nil, err
		}
		out.certs = append(out.certs, certs...)
	}
	if len(out.certs) == 0 {
		return nil, fmt.Errorf("%s: no trusted certificate", where)
	}
	return &out, nil
}

func loadJKS(where, passwordSetting string, data []byte, password string) (jks.KeyStore, error) {
	pass, err := jksPassword(where, passwordSetting, password)
	if err != nil {
		return jks.KeyStore{}, err
	}
	ks := jks.New(jks.WithOrderedAliases())
	if err := ks.Load(bytes.NewReader(data), pass); err != nil {
		return jks.KeyStore{}, fmt.Errorf("%s: wrong %s or corrupt JKS: %w", where, passwordSetting, err)
	}
	return ks, nil
}

// jksPassword encodes a password as keystore-go expects it: one byte per
// character, which it widens to Java's UTF-16 characters. Characters past
// U+00FF cannot pass through that, so they are refused rather than
// mangled.
func jksPassword(where, setting, password string) ([]byte, error) {
	out := make([]byte, 0, len(password))
	for _, r := range password {
		if r > 0xFF {
			return nil, fmt.Errorf("%s: %s has characters beyond Latin-1, which JKS files are not read with here; use PKCS12", where, setting)
		}
		out = append(out, byte(r))
	}
	return out, nil
}

func jksCertificates(where, alias string, raw []jks.Certificate) ([]*x509.Certificate, error) {
	var certs []*x509.Certificate
	for i, r := range raw {
		c, err := x509.ParseCertificate(r.Content)
		if err != nil {
			return nil, fmt.Errorf("%s: entry %q: certificate %d: %w", where, alias, i+1, err)
		}
		certs = append(certs, c)
	}
	return certs, nil
}
