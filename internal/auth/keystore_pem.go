package auth

import (
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"github.com/youmark/pkcs8"
)

// pemBlock is one "-----BEGIN label-----" ... "-----END label-----" block.
type pemBlock struct {
	label string
	der   []byte
	// legacyEncrypted marks OpenSSL's old encryption of a PKCS#1 or SEC 1
	// key (a "Proc-Type: 4,ENCRYPTED" header), which is not supported.
	legacyEncrypted bool
}

// parsePEM finds the PEM blocks in text. It is more lenient than
// encoding/pem, as Kafka's parser is: ssl.keystore.key and the other inline
// values often come out of a properties file with their line breaks folded
// into spaces, so a block may sit on one line, and anything between blocks
// (OpenSSL's "Bag Attributes", comments) is skipped.
func parsePEM(text string) ([]pemBlock, error) {
	const begin, dashes = "-----BEGIN ", "-----"
	var blocks []pemBlock
	for {
		i := strings.Index(text, begin)
		if i < 0 {
			return blocks, nil
		}
		text = text[i+len(begin):]
		j := strings.Index(text, dashes)
		if j < 0 {
			return nil, errors.New("a PEM BEGIN line without its closing dashes")
		}
		label := strings.TrimSpace(text[:j])
		text = text[j+len(dashes):]
		end := "-----END " + label + dashes
		k := strings.Index(text, end)
		if k < 0 {
			return nil, fmt.Errorf("a PEM %s block without its END line", label)
		}
		block, err := decodePEMBody(label, text[:k])
		if err != nil {
			return nil, err
		}
		blocks = append(blocks, block)
		text = text[k+len(end):]
	}
}

// decodePEMBody decodes the base64 of a block, skipping RFC 1421 headers.
func decodePEMBody(label, body string) (pemBlock, error) {
	b := pemBlock{label: label}
	var data strings.Builder
	for line := range strings.Lines(body) {
		if name, value, ok := strings.Cut(line, ":"); ok {
			if strings.TrimSpace(name) == "Proc-Type" && strings.Contains(value, "ENCRYPTED") {
				b.legacyEncrypted = true
			}
			continue
		}
		for _, r := range line {
			if r != ' ' && r != '\t' && r != '\r' && r != '\n' {
				data.WriteRune(r)
			}
		}
	}
	der, err := base64.StdEncoding.DecodeString(data.String())
	if err != nil {
		return b, fmt.Errorf("a PEM %s block with bad base64: %w", label, err)
	}
	b.der = der
	return b, nil
}

// Labels of the PEM private key blocks read.
const (
	labelPKCS8          = "PRIVATE KEY"
	labelEncryptedPKCS8 = "ENCRYPTED PRIVATE KEY"
	labelPKCS1          = "RSA PRIVATE KEY"
	labelSEC1           = "EC PRIVATE KEY"
	labelCertificate    = "CERTIFICATE"
)

// pemKeystore builds a keystore from one private key and its chain (leaf
// first). keyWhere and chainWhere name the settings (or the file) for
// errors; a keystore file holds both, so they may be the same text.
func pemKeystore(keyWhere, keyText, chainWhere, chainText, keyPassword string) (*keystore, error) {
	keyBlocks, err := parsePEM(keyText)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", keyWhere, err)
	}
	var key crypto.PrivateKey
	for _, b := range keyBlocks {
		switch b.label {
		case labelPKCS8, labelEncryptedPKCS8, labelPKCS1, labelSEC1:
		default:
			continue
		}
		if key != nil {
			return nil, fmt.Errorf("%s: more than one private key", keyWhere)
		}
		if key, err = parsePEMKey(b, keyPassword); err != nil {
			return nil, fmt.Errorf("%s: %w", keyWhere, err)
		}
	}
	if key == nil {
		return nil, fmt.Errorf("%s: no PEM private key (PRIVATE KEY, ENCRYPTED PRIVATE KEY, RSA PRIVATE KEY or EC PRIVATE KEY)", keyWhere)
	}
	chain, err := pemCertificates(chainWhere, chainText)
	if err != nil {
		return nil, err
	}
	cert, err := newCertificate(chainWhere, key, chain)
	if err != nil {
		return nil, err
	}
	return &keystore{certs: []tls.Certificate{cert}}, nil
}

// parsePEMKey decodes one private key block. Kafka writes encrypted keys as
// PKCS#8 with PBES2; Go's standard library cannot decrypt those, so the
// youmark/pkcs8 library does.
func parsePEMKey(b pemBlock, password string) (crypto.PrivateKey, error) {
	if b.legacyEncrypted {
		return nil, fmt.Errorf("the %s uses OpenSSL's legacy PEM encryption, which is not supported; convert it to encrypted PKCS#8 with openssl pkcs8 -topk8", b.label)
	}
	var key crypto.PrivateKey
	var err error
	switch b.label {
	case labelEncryptedPKCS8:
		if password == "" {
			return nil, errors.New("the private key is encrypted but ssl.key.password is not set")
		}
		key, err = pkcs8.ParsePKCS8PrivateKey(b.der, []byte(password))
		if err != nil {
			return nil, fmt.Errorf("cannot decrypt the private key (wrong ssl.key.password, or an unsupported encryption): %w", err)
		}
		return key, nil
	case labelPKCS8:
		key, err = x509.ParsePKCS8PrivateKey(b.der)
	case labelPKCS1:
		key, err = x509.ParsePKCS1PrivateKey(b.der)
	case labelSEC1:
		key, err = x509.ParseECPrivateKey(b.der)
	}
	if err != nil {
		return nil, fmt.Errorf("bad %s: %w", b.label, err)
	}
	return key, nil
}

// pemCertificates decodes every CERTIFICATE block of text, in order.
func pemCertificates(where, text string) ([]*x509.Certificate, error) {
	blocks, err := parsePEM(text)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	var certs []*x509.Certificate
	for _, b := range blocks {
		if b.label != labelCertificate {
			continue
		}
		c, err := x509.ParseCertificate(b.der)
		if err != nil {
			return nil, fmt.Errorf("%s: certificate %d: %w", where, len(certs)+1, err)
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		return nil, fmt.Errorf("%s: no PEM CERTIFICATE", where)
	}
	return certs, nil
}

func pemTruststore(where, text string) (*truststore, error) {
	certs, err := pemCertificates(where, text)
	if err != nil {
		return nil, err
	}
	return &truststore{certs: certs}, nil
}
