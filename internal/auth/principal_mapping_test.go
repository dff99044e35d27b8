package auth_test

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"gregor/internal/auth"
	"gregor/internal/auth/authtest"
)

// Rule strings and expectations below are those of Kafka's
// SslPrincipalMapperTest, so the two parse alike.

func TestPrincipalMappingRuleSyntax(t *testing.T) {
	valid := []string{
		"DEFAULT",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, DEFAULT",
		"RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/",
		"RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L",
		"RULE:^cn=(.?),ou=(.?),dc=(.?),dc=(.?)$/$1@$2/U",
		"RULE:^CN=([^,ADEFLTU,]+)(,.*|$)/$1/",
		"RULE:^CN=([^,DEFAULT,]+)(,.*|$)/$1/",
	}
	for _, rules := range valid {
		if _, err := auth.ParsePrincipalMapping(rules); err != nil {
			t.Errorf("ParsePrincipalMapping(%q): %v", rules, err)
		}
	}
	invalid := []string{
		"default",
		"DEFAUL",
		"DEFAULT/L",
		"DEFAULT/U",
		"RULE:CN=(.*?),OU=ServiceUsers.*/$1",
		"rule:^CN=(.*?),OU=ServiceUsers.*$/$1/",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L/U",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/L",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/U",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/LU",
		// Go's RE2 has no lookaround or back references: refused up front.
		"RULE:^CN=(?=x).*$/$0/",
		"RULE:^CN=(a)\\1$/$1/",
		// Replacements Java would fail on.
		"RULE:^CN=.*$/$1/",
		"RULE:^CN=(.*)$/$/",
		"RULE:^CN=(.*)$/${nope}/",
		"RULE:^CN=(.*)$/x\\/",
	}
	for _, rules := range invalid {
		if m, err := auth.ParsePrincipalMapping(rules); err == nil {
			t.Errorf("ParsePrincipalMapping(%q) = %v, want an error", rules, m)
		} else if !strings.HasPrefix(err.Error(), "ssl.principal.mapping.rules") {
			t.Errorf("error %q does not name the setting", err)
		}
	}
}

func TestPrincipalMappingRuleSplitting(t *testing.T) {
	tests := []struct{ rules, want string }{
		{"DEFAULT", "[DEFAULT]"},
		{"RULE://", "[RULE:/]"},
		{"RULE:/.*/", "[RULE:/.*]"},
		{"RULE:/.*/L", "[RULE:/.*/L]"},
		{"RULE://,DEFAULT", "[RULE:/, DEFAULT]"},
		{"  RULE:// ,  DEFAULT  ", "[RULE:/, DEFAULT]"},
		{"  RULE:   /     / ,  DEFAULT  ", "[RULE:   /     , DEFAULT]"},
		{"  RULE:  /     /U   ,DEFAULT  ", "[RULE:  /     /U, DEFAULT]"},
		{"  RULE:([A-Z]*)/$1/U   ,RULE:([a-z]+)/$1/,   DEFAULT  ", "[RULE:([A-Z]*)/$1/U, RULE:([a-z]+)/$1, DEFAULT]"},
		// Empty rules are ignored.
		{",   , , ,      , , ,   ", "[]"},
		{",,RULE://,,,DEFAULT,,", "[RULE:/, DEFAULT]"},
		{",  , RULE: /   /    ,,,   DEFAULT, ,   ", "[RULE: /   , DEFAULT]"},
		{"     ,  , RULE:   /  /U    ,,  ,DEFAULT, ,", "[RULE:   /  /U, DEFAULT]"},
		// Escapes.
		{`RULE:\/\\\(\)\n\t/\/\//`, `[RULE:\/\\\(\)\n\t/\/\/]`},
		{`RULE:\**\/+/*/L,RULE:\/*\**/**/`, `[RULE:\**\/+/*/L, RULE:\/*\**/**]`},
		// Rules that look like rule lists.
		{
			`RULE:,RULE:,/,RULE:,\//U,RULE:,/RULE:,/,RULE:,RULE:,/L,RULE:,/L,RULE:, DEFAULT, /DEFAULT/,DEFAULT`,
			`[RULE:,RULE:,/,RULE:,\//U, RULE:,/RULE:,, RULE:,RULE:,/L,RULE:,/L, RULE:, DEFAULT, /DEFAULT, DEFAULT]`,
		},
		// Unlike Kafka, where an empty string is no rules at all, "" is
		// unset and means the default.
		{"", "[DEFAULT]"},
	}
	for _, tt := range tests {
		m, err := auth.ParsePrincipalMapping(tt.rules)
		if err != nil {
			t.Errorf("ParsePrincipalMapping(%q): %v", tt.rules, err)
			continue
		}
		if got := m.String(); got != tt.want {
			t.Errorf("ParsePrincipalMapping(%q) = %s, want %s", tt.rules, got, tt.want)
		}
	}
}

func TestPrincipalMapper(t *testing.T) {
	m, err := auth.ParsePrincipalMapping(strings.Join([]string{
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L",
		"RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L",
		"RULE:^cn=(.*?),ou=(.*?),dc=(.*?),dc=(.*?)$/$1@$2/U",
		"RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U",
		"DEFAULT",
	}, ", "))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ dn, want string }{
		{"CN=Duke,OU=ServiceUsers,O=Org,C=US", "duke"},
		{"CN=Duke,OU=SME,O=mycp,L=Fulton,ST=MD,C=US", "duke@sme"},
		{"cn=duke,ou=sme,dc=mycp,dc=com", "DUKE@SME"},
		{"cN=duke,OU=JavaSoft,O=Sun Microsystems", "DUKE"},
		{"OU=JavaSoft,O=Sun Microsystems,C=US", "OU=JavaSoft,O=Sun Microsystems,C=US"},
	}
	for _, tt := range tests {
		if got, err := m.Map(tt.dn); err != nil || got != tt.want {
			t.Errorf("Map(%q) = %q, %v; want %q", tt.dn, got, err, tt.want)
		}
	}

	t.Run("comma with whitespace", func(t *testing.T) {
		m, err := auth.ParsePrincipalMapping(`RULE:^CN=((\\, *|\w)+)(,.*|$)/$1/,DEFAULT`)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := m.Map(`CN=Tkac\, Adam,OU=ITZ,DC=geodis,DC=cz`); err != nil || got != `Tkac\, Adam` {
			t.Errorf("Map = %q, %v", got, err)
		}
	})

	t.Run("replacements", func(t *testing.T) {
		tests := []struct{ rule, dn, want string }{
			// A group past the pattern's is literal text, as Kafka escapes it.
			{"RULE:^CN=(.*?),OU=(.*?),O=(.*)$/$1-$4-$3/", "CN=a,OU=b,O=c", "a-$4-c"},
			// Group numbers take as many digits as name a group.
			{"RULE:^CN=(.*)$/$12/", "CN=a", "a2"},
			{"RULE:^CN=(?<name>.*),O=(.*)$/${name}@$2/", "CN=a,O=b", "a@b"},
			{`RULE:^CN=(.*)$/\$1 is $1/`, "CN=a", "$1 is a"},
			{"RULE:^CN=(.*)$/$0/", "CN=a", "CN=a"},
			// An optional group that did not take part adds nothing.
			{"RULE:^CN=(x)?(.*)$/[$1]$2/", "CN=a", "[]a"},
			{"RULE:^(CN|OU)=(.*)$/$2/U", "CN=a", "A"},
			// The rule applies when the pattern matches the whole name;
			// then every match is replaced, as Java's replaceAll does
			// (checked against Java).
			{"RULE:a|ab/X/", "ab", "Xb"},
			{"RULE:[a-z=,]*?/-/", "cn=x", "-c-n-=-x-"},
		}
		for _, tt := range tests {
			m, err := auth.ParsePrincipalMapping(tt.rule)
			if err != nil {
				t.Errorf("%s: %v", tt.rule, err)
				continue
			}
			if got, err := m.Map(tt.dn); err != nil || got != tt.want {
				t.Errorf("%s: Map(%q) = %q, %v; want %q", tt.rule, tt.dn, got, err, tt.want)
			}
		}
	})

	t.Run("no rule applies", func(t *testing.T) {
		m, err := auth.ParsePrincipalMapping("RULE:^CN=(.*),OU=Kafka$/$1/")
		if err != nil {
			t.Fatal(err)
		}
		_, err = m.Map("CN=x,OU=Other")
		var noMatch *auth.NoMatchingRuleError
		if !errors.As(err, &noMatch) || noMatch.DN != "CN=x,OU=Other" {
			t.Fatalf("Map error %v, want a NoMatchingRuleError", err)
		}
	})
}

// javaSubjects are subjects written by openssl and the names Java 17's
// X500Principal.getName() gave them when this test was written (and gives
// now, when a JDK is installed: see TestSubjectDNAgainstJava).
var javaSubjects = []struct{ subject, want string }{
	{"/C=US/ST=MD/L=Fulton/O=mycp/OU=SME/CN=Duke", "CN=Duke,OU=SME,O=mycp,L=Fulton,ST=MD,C=US"},
	{"/DC=cz/DC=geodis/OU=ITZ/CN=Tkac, Adam", `CN=Tkac\, Adam,OU=ITZ,DC=geodis,DC=cz`},
	{`/CN=a+UID=b/O=x=y#z;w<v>"q\\/emailAddress=duke@example.com`,
		`1.2.840.113549.1.9.1=#161064756b65406578616d706c652e636f6d,O=x\=y\#z\;w\<v\>\"q\\,CN=a+UID=b`},
	{"/CN= lead and trail /OU=#hash/serialNumber=1234/title=Boss/GN=Jo/SN=Smith/street=1 Main",
		`STREET=1 Main,2.5.4.4=#0c05536d697468,2.5.4.42=#0c024a6f,2.5.4.12=#0c04426f7373,2.5.4.5=#130431323334,OU=\#hash,CN=\ lead and trail\ `},
	{"/CN=Zoë Ünïcode/O=日本/UID=jdoe", "UID=jdoe,O=日本,CN=Zoë Ünïcode"},
}

func issueSubjects(t *testing.T) (*authtest.PKI, []*authtest.Identity) {
	t.Helper()
	pki := newPKI(t)
	var ids []*authtest.Identity
	for i, s := range javaSubjects {
		ids = append(ids, pki.Issue(t, "subject-"+string(rune('a'+i)), authtest.Options{Subject: s.subject}))
	}
	return pki, ids
}

func TestSubjectDN(t *testing.T) {
	_, ids := issueSubjects(t)
	for i, id := range ids {
		got, err := auth.SubjectDN(certOf(t, id.Cert))
		if err != nil {
			t.Fatal(err)
		}
		if want := javaSubjects[i].want; got != want {
			t.Errorf("SubjectDN(%s) = %q, want %q", javaSubjects[i].subject, got, want)
		}
	}
}

// TestSubjectDNAgainstJava asks the installed JDK, when there is one, for
// the names: the expectations above must still be Java's.
func TestSubjectDNAgainstJava(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a JVM")
	}
	if _, err := exec.LookPath("java"); err != nil {
		t.Skip("java not found")
	}
	_, ids := issueSubjects(t)
	dir := t.TempDir()
	src := writeFile(t, filepath.Join(dir, "PrintSubjects.java"), `
import java.io.FileInputStream;
import java.nio.charset.StandardCharsets;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.util.HexFormat;

public class PrintSubjects {
    public static void main(String[] args) throws Exception {
        CertificateFactory cf = CertificateFactory.getInstance("X.509");
        for (String path : args) {
            try (FileInputStream in = new FileInputStream(path)) {
                X509Certificate c = (X509Certificate) cf.generateCertificate(in);
                String name = c.getSubjectX500Principal().getName();
                System.out.println(HexFormat.of().formatHex(name.getBytes(StandardCharsets.UTF_8)));
            }
        }
    }
}
`)
	args := []string{src}
	for _, id := range ids {
		args = append(args, id.Cert)
	}
	out, err := exec.Command("java", args...).Output()
	if err != nil {
		t.Skipf("java could not run the check (a JRE without a compiler?): %v", err)
	}
	lines := bufio.NewScanner(bytes.NewReader(out))
	for i, id := range ids {
		if !lines.Scan() {
			t.Fatalf("java printed %d names, want %d", i, len(ids))
		}
		javaName, err := hex.DecodeString(lines.Text())
		if err != nil {
			t.Fatal(err)
		}
		got, err := auth.SubjectDN(certOf(t, id.Cert))
		if err != nil {
			t.Fatal(err)
		}
		if got != string(javaName) {
			t.Errorf("%s: SubjectDN %q, Java %q", javaSubjects[i].subject, got, javaName)
		}
	}
}

func TestCertificatePrincipalMapped(t *testing.T) {
	pki := newPKI(t)
	duke := pki.Issue(t, "duke", authtest.Options{Subject: "/C=US/O=mycp/OU=ServiceUsers/CN=Duke"})
	s := pki.Settings(t, pki.Server, authtest.PEM)
	s.ClientAuth = "required"
	srv := mustServer(t, s)
	m, err := auth.ParsePrincipalMapping("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L,DEFAULT")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		id   *authtest.Identity
		want auth.Principal
	}{
		{duke, auth.User("duke")},
		{pki.Client, auth.User("CN=client")},
	} {
		r := handshake(t, srv.Config(), mustClient(t, pki.Settings(t, tt.id, authtest.PEM), "localhost"))
		if !r.ok() {
			t.Fatalf("handshake: %v %v", r.clientErr, r.serverErr)
		}
		p, err := auth.CertificatePrincipal(r.server, m)
		if err != nil || p != tt.want {
			t.Errorf("CertificatePrincipal = %v, %v; want %v", p, err, tt.want)
		}
	}
}
