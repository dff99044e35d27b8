// Package config holds Gregor's configuration: the server.properties reader,
// the definitions of every broker and topic configuration Gregor knows (with
// Kafka's names, types, defaults, valid ranges and dynamic-update scopes), the
// typed static broker configuration, and the resolution logic that
// DescribeConfigs, AlterConfigs and CreateTopics need (layers, sources,
// synonyms, documentation).
//
// Kafka's behaviour is the reference: a server.properties written for Apache
// Kafka 4.0 in KRaft mode loads here, and DescribeConfigs answers carry the
// same values, sources and synonyms a Kafka broker would send.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// ParseProperties reads a Java .properties stream the way
// java.util.Properties.load does: '#' and '!' start comment lines, a key ends
// at the first unescaped '=', ':' or whitespace, a line ending in an odd
// number of backslashes continues on the next line (whose leading whitespace
// is dropped), and \t \n \r \f \uXXXX escapes are decoded (any other escaped
// character stands for itself). A later duplicate key wins.
//
// One deliberate difference: Java reads the stream as ISO-8859-1, Gregor as
// UTF-8 (a leading byte-order mark is skipped), so non-ASCII paths survive.
func ParseProperties(r io.Reader) (map[string]string, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read properties: %w", err)
	}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	if !utf8.Valid(data) {
		return nil, fmt.Errorf("read properties: input is not valid UTF-8")
	}
	props := make(map[string]string)
	lines := naturalLines(string(data))
	for i := 0; i < len(lines); i++ {
		lineNo := i + 1
		line := trimLeadingSpace(lines[i])
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue // blank and comment lines never continue
		}
		var logical strings.Builder
		for {
			if !endsWithContinuation(line) {
				logical.WriteString(line)
				break
			}
			logical.WriteString(line[:len(line)-1])
			if i+1 >= len(lines) {
				break
			}
			i++
			line = trimLeadingSpace(lines[i])
		}
		key, value, err := splitKeyValue(logical.String())
		if err != nil {
			return nil, fmt.Errorf("read properties: line %d: %w", lineNo, err)
		}
		props[key] = value
	}
	return props, nil
}

// naturalLines splits on "\n", "\r\n" or a lone "\r", as Java does.
func naturalLines(s string) []string {
	var lines []string
	start := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\n':
			lines = append(lines, s[start:i])
			start = i + 1
		case '\r':
			lines = append(lines, s[start:i])
			if i+1 < len(s) && s[i+1] == '\n' {
				i++
			}
			start = i + 1
		}
	}
	if start < len(s) {
		lines = append(lines, s[start:])
	}
	return lines
}

func isPropSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\f' }

func trimLeadingSpace(s string) string {
	i := 0
	for i < len(s) && isPropSpace(s[i]) {
		i++
	}
	return s[i:]
}

// endsWithContinuation reports whether the line ends in an odd number of
// backslashes (an even number is a run of escaped backslashes).
func endsWithContinuation(s string) bool {
	n := 0
	for i := len(s) - 1; i >= 0 && s[i] == '\\'; i-- {
		n++
	}
	return n%2 == 1
}

func splitKeyValue(line string) (string, string, error) {
	keyEnd := len(line)
	valueStart := len(line)
	hasSep := false
	for i := 0; i < len(line); i++ {
		c := line[i]
		if c == '\\' {
			i++ // the escaped character belongs to the key
			continue
		}
		if c == '=' || c == ':' {
			keyEnd, valueStart, hasSep = i, i+1, true
			break
		}
		if isPropSpace(c) {
			keyEnd, valueStart = i, i+1
			break
		}
	}
	for valueStart < len(line) {
		c := line[valueStart]
		if !isPropSpace(c) {
			if hasSep || (c != '=' && c != ':') {
				break
			}
			hasSep = true
		}
		valueStart++
	}
	key, err := unescape(line[:keyEnd])
	if err != nil {
		return "", "", err
	}
	value, err := unescape(line[valueStart:])
	if err != nil {
		return "", "", err
	}
	return key, value, nil
}

func unescape(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			b.WriteByte(c)
			continue
		}
		i++
		if i >= len(s) {
			break // a lone trailing backslash is dropped, as in Java
		}
		switch c = s[i]; c {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'f':
			b.WriteByte('\f')
		case 'u':
			r, ok := hex4(s, i+1)
			if !ok {
				// The text is not quoted: it may be a password.
				return "", errors.New(`malformed \uxxxx escape`)
			}
			i += 4
			// Java strings are UTF-16: a surrogate pair arrives as two escapes.
			if utf16.IsSurrogate(r) && i+6 < len(s) && s[i+1] == '\\' && s[i+2] == 'u' {
				if low, ok := hex4(s, i+3); ok {
					if pair := utf16.DecodeRune(r, low); pair != utf8.RuneError {
						r = pair
						i += 6
					}
				}
			}
			b.WriteRune(r)
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}

// hex4 decodes the four hex digits at s[at:at+4].
func hex4(s string, at int) (rune, bool) {
	if at+4 > len(s) {
		return 0, false
	}
	var r rune
	for _, h := range []byte(s[at : at+4]) {
		d, ok := hexDigit(h)
		if !ok {
			return 0, false
		}
		r = r<<4 | rune(d)
	}
	return r, true
}

func hexDigit(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}
