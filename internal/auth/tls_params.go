package auth

import (
	"crypto/tls"
	"fmt"
	"strings"
)

// tlsVersions maps Kafka's ssl.enabled.protocols and ssl.protocol names to
// Go's versions. SSLv3 and Java's SSLv2Hello pseudo-protocol have no Go
// counterpart and are refused by name.
var tlsVersions = map[string]uint16{
	"TLSV1":   tls.VersionTLS10,
	"TLSV1.1": tls.VersionTLS11,
	"TLSV1.2": tls.VersionTLS12,
	"TLSV1.3": tls.VersionTLS13,
}

// defaultEnabledProtocols is Kafka's ssl.enabled.protocols default.
var defaultEnabledProtocols = []string{"TLSv1.2", "TLSv1.3"}

// tlsParams are the protocol settings shared by servers and clients.
type tlsParams struct {
	minVersion, maxVersion uint16
	// cipherSuites are the TLS 1.0–1.2 suites to offer, nil for Go's
	// defaults. Go does not let TLS 1.3 suites be chosen: all of its TLS 1.3
	// suites stay enabled whatever ssl.cipher.suites says.
	cipherSuites []uint16
}

// parseTLSParams reads ssl.enabled.protocols, ssl.cipher.suites and
// ssl.protocol. client says whether ssl.protocol caps the version: Kafka
// documents that a client with ssl.protocol=TLSv1.2 never uses TLS 1.3,
// while a server's enabled protocols alone decide what it accepts.
func parseTLSParams(s TLSSettings, client bool) (tlsParams, error) {
	var p tlsParams
	enabled := s.EnabledProtocols
	if len(enabled) == 0 {
		enabled = defaultEnabledProtocols
	}
	versions := map[uint16]bool{}
	for _, name := range enabled {
		v, err := tlsVersion("ssl.enabled.protocols", name)
		if err != nil {
			return p, err
		}
		versions[v] = true
		if p.minVersion == 0 || v < p.minVersion {
			p.minVersion = v
		}
		if v > p.maxVersion {
			p.maxVersion = v
		}
	}
	// Go takes a range of versions, Java a set: refuse a set with a hole
	// rather than silently enable the version in the hole.
	for v := p.minVersion; v <= p.maxVersion; v++ {
		if !versions[v] {
			return p, fmt.Errorf("ssl.enabled.protocols %s: the versions must be consecutive (Go enables a range)", strings.Join(enabled, ","))
		}
	}

	if proto := strings.TrimSpace(s.Protocol); proto != "" && !strings.EqualFold(proto, "TLS") {
		v, err := tlsVersion("ssl.protocol", proto)
		if err != nil {
			return p, err
		}
		if client && v < p.maxVersion {
			if v < p.minVersion {
				return p, fmt.Errorf("ssl.protocol %s is below every version of ssl.enabled.protocols %s", proto, strings.Join(enabled, ","))
			}
			p.maxVersion = v
		}
	}

	if len(s.CipherSuites) > 0 {
		suites, onlyTLS13, err := parseCipherSuites(s.CipherSuites)
		if err != nil {
			return p, err
		}
		if onlyTLS13 {
			// Java then has no suite for TLS 1.2 and below, so only TLS 1.3
			// can be negotiated; say so with the version range.
			if p.maxVersion < tls.VersionTLS13 {
				return p, fmt.Errorf("ssl.cipher.suites %s: only TLS 1.3 suites, but TLS 1.3 is not enabled", strings.Join(s.CipherSuites, ","))
			}
			p.minVersion = tls.VersionTLS13
		}
		p.cipherSuites = suites
	}
	return p, nil
}

func tlsVersion(setting, name string) (uint16, error) {
	n := strings.ToUpper(strings.TrimSpace(name))
	if v, ok := tlsVersions[n]; ok {
		return v, nil
	}
	if strings.HasPrefix(n, "SSL") {
		return 0, fmt.Errorf("%s %s: SSL protocols are not supported, use TLSv1.2 or TLSv1.3", setting, name)
	}
	return 0, fmt.Errorf("%s %s: unknown protocol (TLSv1, TLSv1.1, TLSv1.2 or TLSv1.3)", setting, name)
}

// renegotiationSCSV is a signalling value Java lists among its suites; Go
// always sends the renegotiation_info extension instead, so it is accepted
// and ignored.
const renegotiationSCSV = "TLS_EMPTY_RENEGOTIATION_INFO_SCSV"

// parseCipherSuites maps IANA names (the names Java, and so Kafka, uses) to
// Go's suite IDs, including Go's insecure suites when named explicitly.
// Java also accepts an SSL_ prefix for the old suites; so does this. The IDs
// returned are the TLS 1.0–1.2 suites only; onlyTLS13 says the names were all
// TLS 1.3 suites.
func parseCipherSuites(names []string) (suites []uint16, onlyTLS13 bool, err error) {
	byName := map[string]*tls.CipherSuite{}
	for _, cs := range tls.CipherSuites() {
		byName[cs.Name] = cs
	}
	for _, cs := range tls.InsecureCipherSuites() {
		byName[cs.Name] = cs
	}
	tls13 := 0
	for _, name := range names {
		n := strings.ToUpper(strings.TrimSpace(name))
		if n == renegotiationSCSV {
			continue
		}
		if rest, ok := strings.CutPrefix(n, "SSL_"); ok {
			n = "TLS_" + rest
		}
		cs, ok := byName[n]
		if !ok {
			return nil, false, fmt.Errorf("ssl.cipher.suites: unknown or unsupported cipher suite %s", name)
		}
		if supportsOnlyTLS13(cs) {
			tls13++
			continue
		}
		suites = append(suites, cs.ID)
	}
	if len(suites) == 0 && tls13 == 0 {
		return nil, false, fmt.Errorf("ssl.cipher.suites %s: no usable cipher suite", strings.Join(names, ","))
	}
	return suites, len(suites) == 0, nil
}

func supportsOnlyTLS13(cs *tls.CipherSuite) bool {
	for _, v := range cs.SupportedVersions {
		if v != tls.VersionTLS13 {
			return false
		}
	}
	return true
}
