package sasl

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"
)

// Login module classes named in sasl.jaas.config.
const (
	PlainLoginModule       = "org.apache.kafka.common.security.plain.PlainLoginModule"
	ScramLoginModule       = "org.apache.kafka.common.security.scram.ScramLoginModule"
	OAuthBearerLoginModule = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
)

// JAASEntry is the one login module of a sasl.jaas.config value:
//
//	<module class> <control flag> (<option>=<value>)* ;
//
// Option values are often passwords: print an entry with String, which
// hides them, and never put a value in an error.
type JAASEntry struct {
	Module  string
	Flag    string // required, requisite, sufficient or optional (lower case)
	Options map[string]string
}

// String shows the module, the flag and the option names, not the values.
func (e *JAASEntry) String() string {
	keys := make([]string, 0, len(e.Options))
	for k := range e.Options {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString(e.Module + " " + e.Flag)
	for _, k := range keys {
		b.WriteString(" " + k + "=[hidden]")
	}
	b.WriteString(";")
	return b.String()
}

// ParseJAAS parses a sasl.jaas.config value. It follows Kafka's tokenizer
// (JaasConfig): bytes up to the space are whitespace; '=' and ';' are
// tokens; a value is a bare word or a string in double or single quotes
// with Java escapes (\" \\ \n \t, octal); '/' starts a comment ("//" and
// "/" to the end of the line, "/* */" a block); every other character is
// part of a word. A repeated option keeps its last value, as in Kafka.
// Unlike Kafka, an unterminated quote or block comment is an error, and
// the value must hold exactly one login module, as sasl.jaas.config must.
// Errors give a byte offset, never an option value.
func ParseJAAS(s string) (*JAASEntry, error) {
	t := jaasTokenizer{src: s}
	module, err := t.next()
	if err != nil {
		return nil, err
	}
	if module.kind == tokEOF {
		return nil, errors.New("jaas: no login module")
	}
	if module.kind != tokWord {
		return nil, fmt.Errorf("jaas: expected a login module class at offset %d", module.pos)
	}
	flagTok, err := t.next()
	if err != nil {
		return nil, err
	}
	if flagTok.kind != tokWord {
		return nil, fmt.Errorf("jaas: expected a control flag after the login module at offset %d", flagTok.pos)
	}
	flag := strings.ToLower(flagTok.text)
	switch flag {
	case "required", "requisite", "sufficient", "optional":
	default:
		return nil, fmt.Errorf("jaas: invalid control flag at offset %d (want required, requisite, sufficient or optional)", flagTok.pos)
	}
	entry := &JAASEntry{Module: module.text, Flag: flag, Options: map[string]string{}}
	for {
		key, err := t.next()
		if err != nil {
			return nil, err
		}
		switch key.kind {
		case tokSemicolon:
			end, err := t.next()
			if err != nil {
				return nil, err
			}
			if end.kind != tokEOF {
				return nil, fmt.Errorf("jaas: text after the terminating ';' at offset %d (sasl.jaas.config takes one login module)", end.pos)
			}
			return entry, nil
		case tokEOF:
			return nil, errors.New("jaas: entry not terminated by ';'")
		case tokWord:
		default:
			return nil, fmt.Errorf("jaas: expected an option name at offset %d", key.pos)
		}
		eq, err := t.next()
		if err != nil {
			return nil, err
		}
		if eq.kind != tokEquals {
			return nil, fmt.Errorf("jaas: expected '=' after option %q at offset %d", key.text, eq.pos)
		}
		value, err := t.next()
		if err != nil {
			return nil, err
		}
		if value.kind != tokWord {
			return nil, fmt.Errorf("jaas: value missing for option %q at offset %d", key.text, value.pos)
		}
		entry.Options[key.text] = value.text
	}
}

type jaasTokenKind int

const (
	tokEOF jaasTokenKind = iota
	tokWord
	tokEquals
	tokSemicolon
)

type jaasToken struct {
	kind jaasTokenKind
	text string // a word, or a quoted string unescaped
	pos  int
}

type jaasTokenizer struct {
	src string
	pos int
}

func (t *jaasTokenizer) next() (jaasToken, error) {
	if err := t.skipSpaceAndComments(); err != nil {
		return jaasToken{}, err
	}
	start := t.pos
	if t.pos >= len(t.src) {
		return jaasToken{kind: tokEOF, pos: start}, nil
	}
	switch c := t.src[t.pos]; c {
	case '=':
		t.pos++
		return jaasToken{kind: tokEquals, pos: start}, nil
	case ';':
		t.pos++
		return jaasToken{kind: tokSemicolon, pos: start}, nil
	case '"', '\'':
		text, err := t.quoted(c)
		if err != nil {
			return jaasToken{}, err
		}
		return jaasToken{kind: tokWord, text: text, pos: start}, nil
	}
	for t.pos < len(t.src) && isJAASWordByte(t.src[t.pos]) {
		t.pos++
	}
	return jaasToken{kind: tokWord, text: t.src[start:t.pos], pos: start}, nil
}

// isJAASWordByte reports whether b continues a bare word. Bytes of
// multi-byte UTF-8 characters are all >= 0x80 and so continue it.
func isJAASWordByte(b byte) bool {
	return b > ' ' && b != '=' && b != ';' && b != '"' && b != '\'' && b != '/'
}

func (t *jaasTokenizer) skipSpaceAndComments() error {
	for t.pos < len(t.src) {
		c := t.src[t.pos]
		switch {
		case c <= ' ':
			t.pos++
		case c == '/' && strings.HasPrefix(t.src[t.pos:], "/*"):
			end := strings.Index(t.src[t.pos+2:], "*/")
			if end < 0 {
				return fmt.Errorf("jaas: unterminated comment at offset %d", t.pos)
			}
			t.pos += 2 + end + 2
		case c == '/':
			// "//" and a lone "/" both comment out the rest of the line.
			end := strings.IndexAny(t.src[t.pos:], "\r\n")
			if end < 0 {
				t.pos = len(t.src)
			} else {
				t.pos += end
			}
		default:
			return nil
		}
	}
	return nil
}

// quoted reads a string in quote q starting at t.pos, with Java's escapes.
func (t *jaasTokenizer) quoted(q byte) (string, error) {
	start := t.pos
	t.pos++
	var b strings.Builder
	for {
		if t.pos >= len(t.src) {
			return "", fmt.Errorf("jaas: unterminated quoted string at offset %d", start)
		}
		c := t.src[t.pos]
		switch {
		case c == q:
			t.pos++
			return b.String(), nil
		case c == '\n' || c == '\r':
			return "", fmt.Errorf("jaas: unterminated quoted string at offset %d", start)
		case c == '\\':
			t.pos++
			if t.pos >= len(t.src) {
				return "", fmt.Errorf("jaas: unterminated quoted string at offset %d", start)
			}
			t.escape(&b)
		default:
			r, size := utf8.DecodeRuneInString(t.src[t.pos:])
			if r == utf8.RuneError && size == 1 {
				b.WriteByte(c) // keep invalid bytes as they are
			} else {
				b.WriteString(t.src[t.pos : t.pos+size])
			}
			t.pos += size
		}
	}
}

// escape decodes the escape whose first character is at t.pos.
func (t *jaasTokenizer) escape(b *strings.Builder) {
	c := t.src[t.pos]
	t.pos++
	switch c {
	case 'a':
		b.WriteByte(7)
	case 'b':
		b.WriteByte('\b')
	case 'f':
		b.WriteByte('\f')
	case 'n':
		b.WriteByte('\n')
	case 'r':
		b.WriteByte('\r')
	case 't':
		b.WriteByte('\t')
	case 'v':
		b.WriteByte('\v')
	case '0', '1', '2', '3', '4', '5', '6', '7':
		// Up to three octal digits, the value at most 0377.
		v := int(c - '0')
		maxDigits := 2
		if c > '3' {
			maxDigits = 1
		}
		for i := 0; i < maxDigits && t.pos < len(t.src) && t.src[t.pos] >= '0' && t.src[t.pos] <= '7'; i++ {
			v = v*8 + int(t.src[t.pos]-'0')
			t.pos++
		}
		b.WriteRune(rune(v))
	default:
		// Any other escaped character stands for itself: \" \' \\.
		t.pos--
		_, size := utf8.DecodeRuneInString(t.src[t.pos:])
		b.WriteString(t.src[t.pos : t.pos+size])
		t.pos += size
	}
}
