package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParseProperties(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want map[string]string
	}{
		{"equals", "a=b\n", map[string]string{"a": "b"}},
		{"colon", "a:b", map[string]string{"a": "b"}},
		{"whitespace separator", "a   b c", map[string]string{"a": "b c"}},
		{"spaces around separator", "  a  =  b  ", map[string]string{"a": "b  "}},
		{"second separator is value", "a = = b", map[string]string{"a": "= b"}},
		{"colon then equals", "a:=b", map[string]string{"a": "=b"}},
		{"key only", "flag", map[string]string{"flag": ""}},
		{"empty value", "a=", map[string]string{"a": ""}},
		{"hash comment", "# a=b\nc=d", map[string]string{"c": "d"}},
		{"bang comment", "  ! a=b\nc=d", map[string]string{"c": "d"}},
		{"hash inside value", "a=b#c", map[string]string{"a": "b#c"}},
		{"blank lines", "\n\n  \t\na=1\n\n", map[string]string{"a": "1"}},
		{"continuation", "a=one, \\\n    two, \\\n\tthree", map[string]string{"a": "one, two, three"}},
		{"escaped backslash is not continuation", "a=c:\\\\\nb=2", map[string]string{"a": `c:\`, "b": "2"}},
		{"comment does not continue", "# x \\\na=1", map[string]string{"a": "1"}},
		{"continuation into empty line", "a=x\\\n\nb=2", map[string]string{"a": "x", "b": "2"}},
		{"crlf", "a=1\r\nb=2\r\n", map[string]string{"a": "1", "b": "2"}},
		{"lone cr", "a=1\rb=2", map[string]string{"a": "1", "b": "2"}},
		{"escaped separators in key", `a\=b\:c\ d=e`, map[string]string{"a=b:c d": "e"}},
		{"escapes", `a=tab\there\nnl\rcr\fff\q`, map[string]string{"a": "tab\there\nnl\rcr\fffq"}},
		{"unicode escape", `a=caf\u00e9 \u0041`, map[string]string{"a": "café A"}},
		{"surrogate pair", `a=\ud83d\ude00`, map[string]string{"a": "😀"}},
		{"utf8 passes through", "dir=/data/kafka-é", map[string]string{"dir": "/data/kafka-é"}},
		{"bom", "\xef\xbb\xbfa=1", map[string]string{"a": "1"}},
		{"last duplicate wins", "a=1\na=2", map[string]string{"a": "2"}},
		{"trailing continuation at eof", "a=1\\", map[string]string{"a": "1"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseProperties(strings.NewReader(tc.in))
			if err != nil {
				t.Fatalf("ParseProperties(%q): %v", tc.in, err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("ParseProperties(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestParsePropertiesMalformedUnicode(t *testing.T) {
	for _, in := range []string{`a=\u12`, `a=\uzzzz`, `\u00=b`} {
		if _, err := ParseProperties(strings.NewReader(in)); err == nil || !strings.Contains(err.Error(), `\uxxxx`) {
			t.Errorf("ParseProperties(%q) error = %v, want malformed \\uxxxx", in, err)
		}
	}
}

func TestParsePropertiesFromFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "server.properties")
	if err := os.WriteFile(path, []byte("node.id=3\nlog.dirs=/a,\\\n  /b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := ParseProperties(f)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"node.id": "3", "log.dirs": "/a,/b"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}
