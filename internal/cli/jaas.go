package cli

import (
	"fmt"
	"strings"
)

// TODO(merge): replace with sasl.ParseJAAS (gregor/internal/auth/sasl,
// imported under another name: this package uses franz-go's sasl): delete
// this file and jaas_test.go; the fields and the result are the same shape.

// jaasEntry is the one login module of a client's sasl.jaas.config:
//
//	org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" password="alice-secret";
type jaasEntry struct {
	Module  string // the login module's class name
	Flag    string // required, requisite, sufficient or optional
	Options map[string]string
}

// parseJAAS reads the value of sasl.jaas.config the way Kafka's JaasConfig
// does for a client: exactly one entry, "<module class> <control flag>
// name=value ... ;", a value either a word or a double-quoted string (with
// backslash escapes), and // or /* */ comments anywhere. Errors name option
// names and positions, never values: the value holds a password.
func parseJAAS(s string) (*jaasEntry, error) {
	p := &jaasParser{s: s}
	module, ok := p.word()
	if !ok {
		return nil, p.errorf("expected a login module class name")
	}
	p.skipSpace()
	flagAt := p.i
	flag, ok := p.word()
	if !ok {
		return nil, p.errorf("expected a control flag after the login module (required, requisite, sufficient or optional)")
	}
	switch f := strings.ToLower(flag); f {
	case "required", "requisite", "sufficient", "optional":
		flag = f
	default:
		p.i = flagAt
		return nil, p.errorf("control flag %q is not required, requisite, sufficient or optional", flag)
	}
	e := &jaasEntry{Module: module, Flag: flag, Options: map[string]string{}}
	for {
		p.skipSpace()
		if p.eof() {
			return nil, p.errorf("the entry does not end with ';'")
		}
		if p.s[p.i] == ';' {
			p.i++
			break
		}
		name, ok := p.word()
		if !ok {
			return nil, p.errorf("expected an option name or ';'")
		}
		p.skipSpace()
		if p.eof() || p.s[p.i] != '=' {
			return nil, p.errorf("option %s has no '=' after its name", name)
		}
		p.i++
		value, err := p.value(name)
		if err != nil {
			return nil, err
		}
		e.Options[name] = value
	}
	p.skipSpace()
	if !p.eof() {
		return nil, p.errorf("more than one login module; a client's sasl.jaas.config holds exactly one")
	}
	return e, nil
}

type jaasParser struct {
	s string
	i int
}

func (p *jaasParser) eof() bool { return p.i >= len(p.s) }

// errorf reports a syntax error at the current position (1-based), which
// locates the problem without quoting the text around it.
func (p *jaasParser) errorf(format string, args ...any) error {
	return fmt.Errorf("at character %d: %s", p.i+1, fmt.Sprintf(format, args...))
}

// skipSpace skips white space and comments.
func (p *jaasParser) skipSpace() {
	for !p.eof() {
		switch {
		case strings.ContainsRune(" \t\r\n\f", rune(p.s[p.i])):
			p.i++
		case strings.HasPrefix(p.s[p.i:], "//"):
			if nl := strings.IndexByte(p.s[p.i:], '\n'); nl >= 0 {
				p.i += nl + 1
			} else {
				p.i = len(p.s)
			}
		case strings.HasPrefix(p.s[p.i:], "/*"):
			if end := strings.Index(p.s[p.i+2:], "*/"); end >= 0 {
				p.i += 2 + end + 2
			} else {
				p.i = len(p.s)
			}
		default:
			return
		}
	}
}

func isJAASWordChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '.' || c == '_' || c == '-' || c == '$'
}

// word reads a class name, flag, option name or unquoted value.
func (p *jaasParser) word() (string, bool) {
	p.skipSpace()
	start := p.i
	for !p.eof() && isJAASWordChar(p.s[p.i]) {
		p.i++
	}
	return p.s[start:p.i], p.i > start
}

// value reads an option's value: a quoted string or a word.
func (p *jaasParser) value(name string) (string, error) {
	p.skipSpace()
	if p.eof() {
		return "", p.errorf("option %s has no value", name)
	}
	if p.s[p.i] != '"' {
		v, ok := p.word()
		if !ok {
			return "", p.errorf("option %s: the value must be a word or a double-quoted string", name)
		}
		return v, nil
	}
	start := p.i
	p.i++
	var b strings.Builder
	for !p.eof() {
		c := p.s[p.i]
		p.i++
		switch c {
		case '"':
			return b.String(), nil
		case '\\':
			if p.eof() {
				continue
			}
			c = p.s[p.i]
			p.i++
			switch c {
			case 'n':
				c = '\n'
			case 't':
				c = '\t'
			case 'r':
				c = '\r'
			}
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	p.i = start
	return "", p.errorf("option %s: the quoted value is not closed", name)
}
