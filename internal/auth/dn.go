package auth

import (
	"crypto/x509"
	"encoding/asn1"
	"encoding/hex"
	"fmt"
	"strings"
)

// SubjectDN returns the subject of c as Java's X500Principal.getName()
// prints it (RFC 2253): the string Kafka matches ssl.principal.mapping.rules
// against and makes the principal name of, so it must be exactly Java's.
// Go's pkix.Name.String() is not: it reorders the attributes, prints DC and
// UID as OIDs, and escapes differently.
//
// Java's form: the RDNs of the encoded sequence in reverse order joined by
// ",", the attributes of a multi-valued RDN in encoded order joined by "+";
// the keywords CN, C, L, ST, O, OU, STREET, DC and UID, every other
// attribute (emailAddress, serialNumber, title, ...) as its dotted OID with
// its DER encoding in lowercase hex ("1.2.840.113549.1.9.1=#1610..."), as
// are values that are not strings; in string values each of , = + < > # ;
// " \ escaped with a backslash, NUL as \00, and leading and trailing spaces
// escaped.
func SubjectDN(c *x509.Certificate) (string, error) {
	return formatDN(c.RawSubject)
}

// attributeTypeAndValue keeps the raw value, whose tag and encoding decide
// how Java prints it (encoding/asn1 would lose both).
type attributeTypeAndValue struct {
	Type  asn1.ObjectIdentifier
	Value asn1.RawValue
}

// relativeDistinguishedNameSET is one RDN; the SET suffix makes
// encoding/asn1 read it as a SET OF.
type relativeDistinguishedNameSET []attributeTypeAndValue

// rfc2253Keywords are the attribute names Java's RFC 2253 output uses; any
// other attribute is printed by OID.
var rfc2253Keywords = map[string]string{
	"2.5.4.3":                    "CN",
	"2.5.4.6":                    "C",
	"2.5.4.7":                    "L",
	"2.5.4.8":                    "ST",
	"2.5.4.9":                    "STREET",
	"2.5.4.10":                   "O",
	"2.5.4.11":                   "OU",
	"0.9.2342.19200300.100.1.1":  "UID",
	"0.9.2342.19200300.100.1.25": "DC",
}

func formatDN(raw []byte) (string, error) {
	var rdns []relativeDistinguishedNameSET
	rest, err := asn1.Unmarshal(raw, &rdns)
	if err != nil {
		return "", fmt.Errorf("parse distinguished name: %w", err)
	}
	if len(rest) != 0 {
		return "", fmt.Errorf("parse distinguished name: %d trailing bytes", len(rest))
	}
	var b strings.Builder
	for i := len(rdns) - 1; i >= 0; i-- {
		if i != len(rdns)-1 {
			b.WriteByte(',')
		}
		for j, atv := range rdns[i] {
			if j > 0 {
				b.WriteByte('+')
			}
			writeAttribute(&b, atv)
		}
	}
	return b.String(), nil
}

func writeAttribute(b *strings.Builder, atv attributeTypeAndValue) {
	oid := atv.Type.String()
	keyword, ok := rfc2253Keywords[oid]
	if !ok {
		keyword = oid
	}
	b.WriteString(keyword)
	b.WriteByte('=')
	value, isString := directoryString(atv.Value)
	if !ok || !isString {
		b.WriteByte('#')
		b.WriteString(hex.EncodeToString(atv.Value.FullBytes))
		return
	}
	b.WriteString(escapeDNValue(value))
}

// ASN.1 string tags Java prints as text rather than hex.
const (
	tagUTF8String      = 12
	tagPrintableString = 19
	tagT61String       = 20
	tagIA5String       = 22
	tagGeneralString   = 27
	tagBMPString       = 30
)

// directoryString decodes a value Java prints as text. Java 17's
// X500Principal decodes the bytes of every such string type as UTF-8, a
// BMPString or a Latin-1 T61String included, each invalid byte becoming
// U+FFFD; this does the same, so that names agree with Kafka's even there.
// (Certificates use PrintableString and UTF8String, where every reading
// agrees.)
func directoryString(v asn1.RawValue) (string, bool) {
	if v.Class != asn1.ClassUniversal {
		return "", false
	}
	switch v.Tag {
	case tagUTF8String, tagPrintableString, tagT61String, tagIA5String, tagGeneralString, tagBMPString:
	default:
		return "", false
	}
	var b strings.Builder
	for _, r := range string(v.Bytes) {
		b.WriteRune(r) // an invalid byte ranges as utf8.RuneError
	}
	return b.String(), true
}

// dnSpecials are the characters Java escapes anywhere in an RFC 2253 value
// (more than RFC 2253 asks: it also escapes = and every #).
const dnSpecials = `,=+<>#;"\`

func escapeDNValue(v string) string {
	var escaped []rune
	for _, r := range v {
		switch {
		case strings.ContainsRune(dnSpecials, r):
			escaped = append(escaped, '\\', r)
		case r == 0:
			escaped = append(escaped, '\\', '0', '0')
		default:
			escaped = append(escaped, r)
		}
	}
	// Leading and trailing spaces (and carriage returns) get a backslash,
	// found on the escaped text as Java does.
	isBlank := func(r rune) bool { return r == ' ' || r == '\r' }
	lead := 0
	for lead < len(escaped) && isBlank(escaped[lead]) {
		lead++
	}
	trail := len(escaped) - 1
	for trail >= 0 && isBlank(escaped[trail]) {
		trail--
	}
	var b strings.Builder
	for i, r := range escaped {
		if i < lead || i > trail {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
