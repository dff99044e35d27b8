package cli

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseJAAS(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     *jaasEntry
	}{
		{"quoted values", `org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" password="a b;c";`,
			&jaasEntry{Module: scramLoginModule, Flag: "required", Options: map[string]string{"username": "alice", "password": "a b;c"}}},
		{"unquoted values, flag case, comments, newlines", "org.apache.kafka.common.security.plain.PlainLoginModule /* c */ Optional\n  username=alice // x\n  password=p-1 ;\n",
			&jaasEntry{Module: plainLoginModule, Flag: "optional", Options: map[string]string{"username": "alice", "password": "p-1"}}},
		{"escapes", `m required a="q\"uote\\back\nnl";`,
			&jaasEntry{Module: "m", Flag: "required", Options: map[string]string{"a": "q\"uote\\back\nnl"}}},
		{"no options", `org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;`,
			&jaasEntry{Module: oauthBearerLoginModule, Flag: "required", Options: map[string]string{}}},
	} {
		got, err := parseJAAS(tc.in)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got %+v, %v; want %+v", tc.name, got, err, tc.want)
		}
	}
}

func TestParseJAASErrors(t *testing.T) {
	const secret = "pa55word"
	for _, tc := range []struct{ in, want string }{
		{``, "at character 1: expected a login module class name"},
		{`m`, "expected a control flag"},
		{`m mandatory a="` + secret + `";`, `at character 3: control flag "mandatory" is not required`},
		{`m required a="` + secret + `"`, "the entry does not end with ';'"},
		{`m required a="` + secret + `;`, "at character 14: option a: the quoted value is not closed"},
		{`m required a "` + secret + `";`, "option a has no '=' after its name"},
		{`m required a=;`, "option a: the value must be a word or a double-quoted string"},
		{`m required a="` + secret + `"; n required;`, "more than one login module"},
	} {
		_, err := parseJAAS(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parseJAAS(%q): %v, want %q", tc.in, err, tc.want)
			continue
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("parseJAAS(%q): error %q shows the value", tc.in, err)
		}
	}
}
