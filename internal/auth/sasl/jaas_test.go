package sasl

import (
	"maps"
	"strings"
	"testing"
)

func TestParseJAAS(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		module  string
		flag    string
		options map[string]string
	}{
		{
			name:   "kafka PLAIN example",
			in:     `org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";`,
			module: PlainLoginModule,
			flag:   "required",
			options: map[string]string{
				"username": "admin", "password": "admin-secret",
				"user_admin": "admin-secret", "user_alice": "alice-secret",
			},
		},
		{
			name:    "no options, flag in upper case, spaces and newlines",
			in:      "\n  org.apache.kafka.common.security.scram.ScramLoginModule\tREQUIRED\n ;\n",
			module:  ScramLoginModule,
			flag:    "required",
			options: map[string]string{},
		},
		{
			name:    "unquoted values",
			in:      `M optional a=b c=1.5 d=x-y_z$w;`,
			module:  "M",
			flag:    "optional",
			options: map[string]string{"a": "b", "c": "1.5", "d": "x-y_z$w"},
		},
		{
			name:    "escapes in quotes",
			in:      `M sufficient p="a\"b\\c\nd\te\101" q='it"s' r="" s="semi;colon=eq // not a comment";`,
			module:  "M",
			flag:    "sufficient",
			options: map[string]string{"p": "a\"b\\c\nd\teA", "q": "it\"s", "s": "semi;colon=eq // not a comment", "r": ""},
		},
		{
			name:    "comments",
			in:      "M /* block\n comment */ requisite // to the end of line\n k=v / lone slash comments too\n;",
			module:  "M",
			flag:    "requisite",
			options: map[string]string{"k": "v"},
		},
		{
			name:    "repeated option keeps the last value",
			in:      `M required k=1 k=2;`,
			module:  "M",
			flag:    "required",
			options: map[string]string{"k": "2"},
		},
		{
			name:    "value ends at a slash",
			in:      "M required url=http://x\n;",
			module:  "M",
			flag:    "required",
			options: map[string]string{"url": "http:"},
		},
		{
			name:    "non-ASCII",
			in:      `M required usér="pässword";`,
			module:  "M",
			flag:    "required",
			options: map[string]string{"usér": "pässword"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := ParseJAAS(tt.in)
			if err != nil {
				t.Fatalf("ParseJAAS: %v", err)
			}
			if e.Module != tt.module || e.Flag != tt.flag || !maps.Equal(e.Options, tt.options) {
				t.Fatalf("got %q %q %q, want %q %q %q", e.Module, e.Flag, e.Options, tt.module, tt.flag, tt.options)
			}
		})
	}
}

func TestParseJAASErrors(t *testing.T) {
	const secret = "s3cret-value"
	tests := []struct {
		name, in, want string
	}{
		{"empty", "", "no login module"},
		{"only a comment", "// nothing\n", "no login module"},
		{"no flag", "M", "control flag"},
		{"no flag before semicolon", "M ;", "control flag"},
		{"bad flag", "M mandatory k=v;", "invalid control flag"},
		{"not terminated", `M required password="` + secret + `"`, "not terminated"},
		{"missing value", `M required password=;`, `value missing for option "password"`},
		{"missing equals", `M required password "` + secret + `";`, `expected '=' after option "password"`},
		{"two modules", `M required a=b; N required password="` + secret + `";`, "one login module"},
		{"unterminated quote", `M required password="` + secret, "unterminated quoted string"},
		{"quote broken by newline", "M required password=\"" + secret + "\n\";", "unterminated quoted string"},
		{"unterminated block comment", "M required /* " + secret, "unterminated comment"},
		{"module is a symbol", `= required;`, "login module class"},
		{"option name is a symbol", `M required =x;`, "option name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseJAAS(tt.in)
			if err == nil {
				t.Fatalf("ParseJAAS(%q) succeeded", tt.in)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q, want it to contain %q", err, tt.want)
			}
			if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error %q leaks a value or spans lines", err)
			}
		})
	}
}

func TestJAASEntryStringHidesValues(t *testing.T) {
	e, err := ParseJAAS(`M required password="hunter2" user_bob="bob-pw";`)
	if err != nil {
		t.Fatal(err)
	}
	s := e.String()
	if strings.Contains(s, "hunter2") || strings.Contains(s, "bob-pw") {
		t.Fatalf("String() = %q shows a value", s)
	}
	if want := "M required password=[hidden] user_bob=[hidden];"; s != want {
		t.Fatalf("String() = %q, want %q", s, want)
	}
}
