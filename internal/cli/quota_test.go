package cli

import (
	"strings"
	"testing"
	"time"
)

func TestQuotaCommands(t *testing.T) {
	c := startCluster(t, nil)

	if out := c.ok("quota", "describe"); out != "" {
		t.Fatalf("describe with no quotas: %q", out)
	}
	if out := c.ok("quota", "set", "--entity-type", "users", "--entity-name", "alice",
		"--add-config", "producer_byte_rate=1048576,consumer_byte_rate=20971520"); out != "Completed updating config for user-principal 'alice'.\n" {
		t.Fatalf("set: %q", out)
	}
	// Names pair with types by position; clients before users is the same
	// entity.
	if out := c.ok("quota", "set", "--entity-type", "clients", "--entity-type", "users", "--entity-name", "app", "--entity-name", "alice",
		"--add-config", "request_percentage=12.5"); out != "Completed updating config for user-principal 'alice', client-id 'app'.\n" {
		t.Fatalf("set user and client: %q", out)
	}
	c.ok("quota", "set", "--entity-type", "users", "--entity-default", "--add-config", "controller_mutation_rate=5", "--add-config", "producer_byte_rate=1024")
	c.ok("quota", "set", "--entity-type", "ips", "--entity-name", "10.0.0.1", "--add-config", "connection_creation_rate=10")

	all := "Quota configs for the default user-principal are controller_mutation_rate=5.0, producer_byte_rate=1024.0\n" +
		"Quota configs for user-principal 'alice' are consumer_byte_rate=2.097152E7, producer_byte_rate=1048576.0\n" +
		"Quota configs for user-principal 'alice', client-id 'app' are request_percentage=12.5\n" +
		"Quota configs for ip '10.0.0.1' are connection_creation_rate=10.0\n"
	// The broker answers from its image, which follows the controller's.
	describe := func(want string, args ...string) {
		t.Helper()
		var out string
		deadline := time.Now().Add(10 * time.Second)
		for out = c.ok(append([]string{"quota", "describe"}, args...)...); out != want && time.Now().Before(deadline); {
			time.Sleep(20 * time.Millisecond)
			out = c.ok(append([]string{"quota", "describe"}, args...)...)
		}
		if out != want {
			t.Fatalf("describe %v:\n%s\nwant:\n%s", args, out, want)
		}
	}
	describe(all)
	describe("Quota configs for user-principal 'alice' are consumer_byte_rate=2.097152E7, producer_byte_rate=1048576.0\n",
		"--entity-type", "users", "--entity-name", "alice")
	describe("Quota configs for the default user-principal are controller_mutation_rate=5.0, producer_byte_rate=1024.0\n"+
		"Quota configs for user-principal 'alice' are consumer_byte_rate=2.097152E7, producer_byte_rate=1048576.0\n",
		"--entity-type", "users")
	describe("Quota configs for user-principal 'alice', client-id 'app' are request_percentage=12.5\n",
		"--entity-type", "users", "--entity-type", "clients")
	describe("Quota configs for the default user-principal are controller_mutation_rate=5.0, producer_byte_rate=1024.0\n",
		"--entity-type", "users", "--entity-default")
	describe("", "--entity-type", "ips", "--entity-name", "10.0.0.2")

	if out := c.ok("quota", "delete", "--entity-type", "users", "--entity-name", "alice", "--delete-config", "producer_byte_rate,consumer_byte_rate"); out != "Completed updating config for user-principal 'alice'.\n" {
		t.Fatalf("delete: %q", out)
	}
	describe(strings.Replace(all, "Quota configs for user-principal 'alice' are consumer_byte_rate=2.097152E7, producer_byte_rate=1048576.0\n", "", 1))
	c.fails("user-principal 'alice' has no quota producer_byte_rate", "quota", "delete", "--entity-type", "users", "--entity-name", "alice", "--delete-config", "producer_byte_rate")

	// Bad input: one-line errors, from the command or from the cluster.
	for _, f := range []struct {
		want string
		args []string
	}{
		{"give --entity-type with --entity-name or --entity-default", []string{"set", "--add-config", "producer_byte_rate=1"}},
		{"give --entity-type with --entity-name or --entity-default", []string{"set", "--entity-type", "users", "--add-config", "producer_byte_rate=1"}},
		{"more --entity-name/--entity-default than --entity-type", []string{"describe", "--entity-name", "x"}},
		{`--entity-type "topics": want users, clients or ips`, []string{"describe", "--entity-type", "topics"}},
		{"--entity-type users is given twice", []string{"set", "--entity-type", "users", "--entity-name", "a", "--entity-type", "users", "--entity-name", "b", "--add-config", "producer_byte_rate=1"}},
		{"--entity-type ips cannot be combined", []string{"set", "--entity-type", "ips", "--entity-name", "10.0.0.1", "--entity-type", "users", "--entity-name", "a", "--add-config", "connection_creation_rate=1"}},
		{"--entity-name for users is empty", []string{"set", "--entity-type", "users", "--entity-name", "", "--add-config", "producer_byte_rate=1"}},
		{"--add-config is required", []string{"set", "--entity-type", "users", "--entity-name", "a"}},
		{"--delete-config is required", []string{"delete", "--entity-type", "users", "--entity-name", "a"}},
		{`cannot parse quota configuration value for producer_byte_rate: "fast"`, []string{"set", "--entity-type", "users", "--entity-name", "a", "--add-config", "producer_byte_rate=fast"}},
		{`--add-config "producer_byte_rate": want key=value`, []string{"set", "--entity-type", "users", "--entity-name", "a", "--add-config", "producer_byte_rate"}},
		{"set quotas of user-principal 'a': INVALID_REQUEST", []string{"set", "--entity-type", "users", "--entity-name", "a", "--add-config", "connection_creation_rate=1"}},
		{"Invalid configuration key connection_creation_rate", []string{"set", "--entity-type", "users", "--entity-name", "a", "--add-config", "connection_creation_rate=1"}},
		{"producer_byte_rate cannot be a fractional value", []string{"set", "--entity-type", "users", "--entity-name", "a", "--add-config", "producer_byte_rate=1.5"}},
		{"Quota request_percentage must be greater than 0", []string{"set", "--entity-type", "clients", "--entity-default", "--add-config", "request_percentage=-1"}},
		{"not-an-ip is not a valid IP address", []string{"set", "--entity-type", "ips", "--entity-name", "not-an-ip", "--add-config", "connection_creation_rate=1"}},
	} {
		c.fails(f.want, append([]string{"quota"}, f.args...)...)
	}
}

func TestJavaDouble(t *testing.T) {
	for v, want := range map[float64]string{
		0: "0.0", 1: "1.0", 12.5: "12.5", 1048576: "1048576.0", 9999999: "9999999.0", 1e7: "1.0E7",
		20971520: "2.097152E7", 0.001: "0.001", 0.0001: "1.0E-4", -3: "-3.0", 9.223372036854776e18: "9.223372036854776E18",
	} {
		if got := javaDouble(v); got != want {
			t.Errorf("javaDouble(%v) = %q, want %q", v, got, want)
		}
	}
}
