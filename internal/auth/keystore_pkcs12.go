package auth

import (
	"bytes"
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"strings"

	"software.sslmate.com/src/go-pkcs12"
)

// pkcs12Keystore reads a PKCS#12 file holding one private key. PKCS#12
// protects the file and the key with one password, so ssl.key.password is
// not used: keytool refuses to give a PKCS12 key a password of its own, and
// Java reads such a key with the keystore password.
func pkcs12Keystore(where string, data []byte, password string) (*keystore, error) {
	key, leaf, others, err := pkcs12.DecodeChain(data, password)
	if errors.Is(err, pkcs12.ErrIncorrectPassword) {
		return nil, fmt.Errorf("%s: wrong ssl.keystore.password or corrupt PKCS12", where)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: cannot read the PKCS12 keystore: %w", where, err)
	}
	chain := chainFor(key, append([]*x509.Certificate{leaf}, others...))
	cert, err := newCertificate(where, key, chain)
	if err != nil {
		return nil, err
	}
	return &keystore{certs: []tls.Certificate{cert}}, nil
}

// chainFor orders certs as the chain of key: the certificate of key's
// public key, then its issuer, and so on. PKCS#12 files store certificates
// in no defined order (the library reading them assumes the leaf comes
// first, which OpenSSL does not promise), and Java also rebuilds the chain
// by issuer. It returns nil when no certificate matches key.
func chainFor(key any, certs []*x509.Certificate) []*x509.Certificate {
	signer, ok := key.(interface{ Public() crypto.PublicKey })
	if !ok {
		return nil
	}
	pub, ok := signer.Public().(interface{ Equal(crypto.PublicKey) bool })
	if !ok {
		return nil
	}
	var chain []*x509.Certificate
	for _, c := range certs {
		if pub.Equal(c.PublicKey) {
			chain = append(chain, c)
			break
		}
	}
	if chain == nil {
		return nil
	}
	used := map[*x509.Certificate]bool{chain[0]: true}
	for {
		last := chain[len(chain)-1]
		if bytes.Equal(last.RawIssuer, last.RawSubject) {
			return chain
		}
		var issuer *x509.Certificate
		for _, c := range certs {
			if !used[c] && bytes.Equal(c.RawSubject, last.RawIssuer) {
				issuer = c
				break
			}
		}
		if issuer == nil {
			return chain
		}
		used[issuer] = true
		chain = append(chain, issuer)
	}
}

// pkcs12Truststore reads the trusted certificate entries of a PKCS#12 file:
// those carrying Java's trust attribute, as keytool -importcert writes them.
// Java ignores certificates without it, so a truststore made with
// "openssl pkcs12 -export -nokeys" would trust nothing there; here it is
// refused with a hint instead. Without a password a password-less file is
// read, as Java reads one without checking its integrity.
func pkcs12Truststore(where string, data []byte, password string) (*truststore, error) {
	certs, err := pkcs12.DecodeTrustStore(data, password)
	if errors.Is(err, pkcs12.ErrIncorrectPassword) {
		return nil, fmt.Errorf("%s: wrong ssl.truststore.password or corrupt PKCS12", where)
	}
	if err != nil {
		if strings.Contains(err.Error(), "not marked as trusted") {
			return nil, fmt.Errorf("%s: a certificate is not marked trusted for Java; make the truststore with keytool -importcert: %w", where, err)
		}
		return nil, fmt.Errorf("%s: cannot read the PKCS12 truststore: %w", where, err)
	}
	if len(certs) == 0 {
		return nil, fmt.Errorf("%s: no trusted certificate", where)
	}
	return &truststore{certs: certs}, nil
}
