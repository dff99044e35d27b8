package auth

import (
	"crypto/tls"
	"fmt"
	"regexp"
	"strings"
)

// PrincipalMapper is ssl.principal.mapping.rules (Kafka's
// SslPrincipalMapper): it turns the subject of a client certificate, as
// SubjectDN prints it, into a principal name. Rules are tried in order, the
// first that applies decides, and a name no rule applies to fails the
// authentication:
//
//	RULE:pattern/replacement/     the name, if pattern matches all of it,
//	                              with every match of pattern replaced
//	RULE:pattern/replacement/L    the same, lower-cased
//	RULE:pattern/replacement/U    the same, upper-cased
//	DEFAULT                       the name unchanged
//
// Rules are separated by commas; a "/" or "\" inside pattern or replacement
// is written "\/" or "\\". Patterns are Java regular expressions run by Go's
// RE2, so the few Java constructs RE2 lacks (back references, lookaround,
// possessive quantifiers) are refused when the rules are parsed.
// Replacements are Java's: $1 or ${name} for a group, \ to quote the next
// character; as in Kafka, a $n past the pattern's groups is literal text.
type PrincipalMapper struct {
	rules []mappingRule
}

// mappingRule is one parsed rule; the zero value with isDefault is DEFAULT.
type mappingRule struct {
	isDefault        bool
	source           string         // the pattern as written
	whole            *regexp.Regexp // source anchored at both ends: does the rule apply?
	search           *regexp.Regexp // source as written: what is replaced
	replacement      string
	toLower, toUpper bool
}

// Kafka's rule grammar, kept as its regular expressions so that odd rule
// strings split exactly as Kafka splits them. The groups: 1 DEFAULT,
// 2 pattern, 4 replacement, 6 the L or U flag; 7 anything else, which is
// an invalid rule unless empty. Go's RE2 picks the same submatches as
// Java's backtracking matcher for these (leftmost-first, no back
// references).
const (
	rulePattern      = `(DEFAULT)|RULE:((\\.|[^\\/])*)/((\\.|[^\\/])*)/([LU]?).*?|(.*?)`
	ruleSplitPattern = `\s*(` + rulePattern + `)\s*(,\s*|$)`
)

// NoMatchingRuleError is the error of a name that no rule applies to
// (Kafka's NoMatchingRule): the connection fails authentication.
type NoMatchingRuleError struct {
	DN    string
	Rules string
}

func (e *NoMatchingRuleError) Error() string {
	return fmt.Sprintf("ssl.principal.mapping.rules: no rule applies to %q (rules %s)", e.DN, e.Rules)
}

// ParsePrincipalMapping parses ssl.principal.mapping.rules. "" is unset and
// means Kafka's default, DEFAULT. Empty entries between commas are ignored,
// so a value of only commas and spaces has no rules and maps no name.
func ParsePrincipalMapping(rules string) (*PrincipalMapper, error) {
	if rules == "" {
		return &PrincipalMapper{rules: []mappingRule{{isDefault: true}}}, nil
	}
	splitter := regexp.MustCompile(ruleSplitPattern)
	parser := regexp.MustCompile(`^(?:` + rulePattern + `)`)
	var m PrincipalMapper
	for _, split := range splitter.FindAllStringSubmatch(strings.TrimSpace(rules), -1) {
		text := split[1]
		g := parser.FindStringSubmatchIndex(text)
		if g == nil || g[1] != len(text) {
			end := 0
			if g != nil {
				end = g[1]
			}
			return nil, fmt.Errorf("ssl.principal.mapping.rules: invalid rule %q (unmatched %q)", text, text[end:])
		}
		group := func(i int) (string, bool) {
			if g[2*i] < 0 {
				return "", false
			}
			return text[g[2*i]:g[2*i+1]], true
		}
		if _, ok := group(1); ok {
			m.rules = append(m.rules, mappingRule{isDefault: true})
			continue
		}
		pattern, ok := group(2)
		if !ok {
			continue // an empty entry
		}
		replacement, _ := group(4)
		flag, _ := group(6)
		r, err := newMappingRule(pattern, replacement, flag)
		if err != nil {
			return nil, err
		}
		m.rules = append(m.rules, r)
	}
	return &m, nil
}

func newMappingRule(pattern, replacement, flag string) (mappingRule, error) {
	search, err := regexp.Compile(pattern)
	if err != nil {
		return mappingRule{}, fmt.Errorf("ssl.principal.mapping.rules: pattern %q: %w", pattern, err)
	}
	// \A and \z are unaffected by flags such as (?m) inside the pattern.
	whole, err := regexp.Compile(`\A(?:` + pattern + `)\z`)
	if err != nil {
		return mappingRule{}, fmt.Errorf("ssl.principal.mapping.rules: pattern %q: %w", pattern, err)
	}
	r := mappingRule{
		source:      pattern,
		whole:       whole,
		search:      search,
		replacement: replacement,
		toLower:     flag == "L",
		toUpper:     flag == "U",
	}
	// Check the replacement now rather than on a client's connection.
	if _, err := r.expand(nil, "", make([]int, 2*(search.NumSubexp()+1))); err != nil {
		return mappingRule{}, err
	}
	return r, nil
}

// Map returns the principal name of dn, a subject as SubjectDN prints it.
func (m *PrincipalMapper) Map(dn string) (string, error) {
	for _, r := range m.rules {
		name, ok, err := r.apply(dn)
		if err != nil {
			return "", err
		}
		if ok {
			return name, nil
		}
	}
	return "", &NoMatchingRuleError{DN: dn, Rules: m.String()}
}

// String lists the rules as Kafka's SslPrincipalMapper prints them.
func (m *PrincipalMapper) String() string {
	parts := make([]string, len(m.rules))
	for i, r := range m.rules {
		parts[i] = r.String()
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func (r mappingRule) String() string {
	if r.isDefault {
		return "DEFAULT"
	}
	s := "RULE:" + r.source + "/" + r.replacement
	switch {
	case r.toLower:
		s += "/L"
	case r.toUpper:
		s += "/U"
	}
	return s
}

// apply is Java's dn.replaceAll(pattern, replacement) when pattern matches
// all of dn. Go skips an empty match right after another match where Java
// does not, so a pattern that can match the empty string at the end of a
// name (".*") replaces once here and twice in Kafka.
func (r mappingRule) apply(dn string) (string, bool, error) {
	if r.isDefault {
		return dn, true, nil
	}
	if !r.whole.MatchString(dn) {
		return "", false, nil
	}
	var out []byte
	last := 0
	for _, match := range r.search.FindAllStringSubmatchIndex(dn, -1) {
		out = append(out, dn[last:match[0]]...)
		var err error
		if out, err = r.expand(out, dn, match); err != nil {
			return "", false, err
		}
		last = match[1]
	}
	name := string(append(out, dn[last:]...))
	switch {
	case r.toLower:
		name = strings.ToLower(name)
	case r.toUpper:
		name = strings.ToUpper(name)
	}
	return name, true, nil
}

// expand appends the replacement for one match to out, read as Java's
// Matcher reads a replacement. A group reference $n takes as many digits as
// still name a group; a reference whose first digit is past the groups is
// literal text, as Kafka escapes it before calling Java (except when the
// pattern has no groups, where Kafka passes it on and Java fails, as here).
func (r mappingRule) expand(out []byte, dn string, match []int) ([]byte, error) {
	groups := r.search.NumSubexp()
	rep := r.replacement
	for i := 0; i < len(rep); i++ {
		c := rep[i]
		switch c {
		case '\\':
			i++
			if i == len(rep) {
				return nil, fmt.Errorf("ssl.principal.mapping.rules: replacement %q ends with an unescaped \\", rep)
			}
			out = append(out, rep[i])
			continue
		case '$':
		default:
			out = append(out, c)
			continue
		}
		i++
		if i == len(rep) {
			return nil, fmt.Errorf("ssl.principal.mapping.rules: replacement %q ends with a $ and no group", rep)
		}
		var group int
		if rep[i] == '{' {
			end := strings.IndexByte(rep[i:], '}')
			if end < 0 {
				return nil, fmt.Errorf("ssl.principal.mapping.rules: replacement %q: unterminated ${", rep)
			}
			name := rep[i+1 : i+end]
			if group = r.search.SubexpIndex(name); group < 0 {
				return nil, fmt.Errorf("ssl.principal.mapping.rules: replacement %q: no group named %q", rep, name)
			}
			i += end
		} else {
			if rep[i] < '0' || rep[i] > '9' {
				return nil, fmt.Errorf("ssl.principal.mapping.rules: replacement %q: $ not followed by a group number", rep)
			}
			group = int(rep[i] - '0')
			if group > groups {
				if groups > 0 {
					out = append(out, '$', rep[i])
					continue
				}
				return nil, fmt.Errorf("ssl.principal.mapping.rules: replacement %q: no group %d", rep, group)
			}
			for i+1 < len(rep) && rep[i+1] >= '0' && rep[i+1] <= '9' {
				next := group*10 + int(rep[i+1]-'0')
				if next > groups {
					break
				}
				group = next
				i++
			}
		}
		if start := match[2*group]; start >= 0 {
			out = append(out, dn[start:match[2*group+1]]...)
		}
	}
	return out, nil
}

// CertificatePrincipal is the principal of a TLS connection, as Kafka's
// DefaultKafkaPrincipalBuilder makes it: User:<mapped subject> of the
// client's certificate, or Anonymous when the client sent none (allowed
// with ssl.client.auth=none or requested). A nil m is the DEFAULT rule.
func CertificatePrincipal(state tls.ConnectionState, m *PrincipalMapper) (Principal, error) {
	if len(state.PeerCertificates) == 0 {
		return Anonymous, nil
	}
	dn, err := SubjectDN(state.PeerCertificates[0])
	if err != nil {
		return Principal{}, fmt.Errorf("client certificate subject: %w", err)
	}
	if m == nil {
		return User(dn), nil
	}
	name, err := m.Map(dn)
	if err != nil {
		return Principal{}, err
	}
	return User(name), nil
}
