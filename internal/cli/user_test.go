package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestUserScramCommands(t *testing.T) {
	c := startCluster(t, nil)

	if out := c.ok("user", "scram", "describe"); out != "" {
		t.Fatalf("describe with no credentials: %q", out)
	}
	if out := c.ok("user", "scram", "set", "--user", "alice", "--mechanism", "SCRAM-SHA-256", "--password", "alice-secret"); out != "Completed updating config for user alice.\n" {
		t.Fatalf("set: %q", out)
	}
	pwFile := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pwFile, []byte("from-a-file\nignored\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c.ok("user", "scram", "set", "--user", "alice", "--mechanism", "scram-sha-512", "--password-file", pwFile, "--iterations", "8192")
	if r := c.run("bob-secret\n", "user", "scram", "set", "--user", "bob", "--mechanism", "SCRAM-SHA-512", "--password-file", "-"); r.err != nil {
		t.Fatalf("set from stdin: %v", r.err)
	}

	want := "SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-256=iterations=4096, SCRAM-SHA-512=iterations=8192\n" +
		"SCRAM credential configs for user-principal 'bob' are SCRAM-SHA-512=iterations=4096\n"
	if out := c.ok("user", "scram", "describe"); out != want {
		t.Fatalf("describe:\n%s\nwant:\n%s", out, want)
	}
	if out := c.ok("user", "scram", "describe", "--user", "bob", "--user", "bob"); out != strings.SplitAfter(want, "\n")[1] {
		t.Fatalf("describe bob: %q", out)
	}
	c.fails(`no SCRAM credentials for user "nobody"`, "user", "scram", "describe", "--user", "alice", "--user", "nobody")

	c.ok("user", "scram", "delete", "--user", "alice", "--mechanism", "SCRAM-SHA-256")
	c.fails(`user "alice" has no SCRAM-SHA-256 credential`, "user", "scram", "delete", "--user", "alice", "--mechanism", "SCRAM-SHA-256")
	if out := c.ok("user", "scram", "describe", "--user", "alice"); !strings.Contains(out, "are SCRAM-SHA-512=iterations=8192\n") {
		t.Fatalf("describe after delete: %q", out)
	}

	// Bad input: one-line errors that never repeat the password.
	for _, f := range []struct {
		want string
		args []string
	}{
		{"--user is required", []string{"set", "--mechanism", "SCRAM-SHA-256", "--password", "s3cr3t"}},
		{"--mechanism is required", []string{"set", "--user", "a", "--password", "s3cr3t"}},
		{`--mechanism "SCRAM-SHA-1": want SCRAM-SHA-256 or SCRAM-SHA-512`, []string{"set", "--user", "a", "--mechanism", "SCRAM-SHA-1", "--password", "s3cr3t"}},
		{"--iterations: iterations must be at least 4096", []string{"set", "--user", "a", "--mechanism", "SCRAM-SHA-256", "--password", "s3cr3t", "--iterations", "10"}},
		{"--iterations: iterations must be at most 16384", []string{"set", "--user", "a", "--mechanism", "SCRAM-SHA-256", "--password", "s3cr3t", "--iterations", "20000"}},
		{"--password or --password-file is required", []string{"set", "--user", "a", "--mechanism", "SCRAM-SHA-256"}},
		{"not both", []string{"set", "--user", "a", "--mechanism", "SCRAM-SHA-256", "--password", "s3cr3t", "--password-file", pwFile}},
		{"--password is empty", []string{"set", "--user", "a", "--mechanism", "SCRAM-SHA-256", "--password", ""}},
		{"read --password-file", []string{"set", "--user", "a", "--mechanism", "SCRAM-SHA-256", "--password-file", filepath.Join(t.TempDir(), "none")}},
		{"the first line is empty", []string{"set", "--user", "a", "--mechanism", "SCRAM-SHA-256", "--password-file", "-"}},
		{"--mechanism is required", []string{"delete", "--user", "a"}},
		{"--user is required", []string{"delete", "--mechanism", "SCRAM-SHA-256"}},
	} {
		c.fails(f.want, append([]string{"user", "scram"}, f.args...)...)
		if r := c.run("", append([]string{"user", "scram"}, f.args...)...); strings.Contains(r.err.Error(), "s3cr3t") {
			t.Errorf("error repeats the password: %v", r.err)
		}
	}
}
