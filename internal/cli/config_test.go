package cli

import (
	"strings"
	"testing"
)

func TestConfigCommands(t *testing.T) {
	c := startCluster(t, nil)
	c.ok("topic", "create", "cfg")

	if out := c.ok("config", "get", "--entity-type", "topics", "--entity-name", "cfg"); out != "Dynamic configs for topic cfg are:\n" {
		t.Fatalf("get with nothing set: %q", out)
	}
	out := c.ok("config", "set", "--entity-type", "topics", "--entity-name", "cfg", "--add-config", "retention.ms=60000,cleanup.policy=[compact,delete]")
	if out != "Completed updating config for topic cfg.\n" {
		t.Fatalf("set: %q", out)
	}
	out = c.ok("config", "get", "--topic", "cfg")
	for _, want := range []string{
		"  cleanup.policy=compact,delete sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:cleanup.policy=compact,delete",
		"  retention.ms=60000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=60000",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("get lacks %q:\n%s", want, out)
		}
	}
	if len(lines(out)) != 3 {
		t.Errorf("get shows more than the two dynamic configs:\n%s", out)
	}
	c.ok("config", "delete", "--topic", "cfg", "--delete-config", "retention.ms")
	out = c.ok("config", "get", "--topic", "cfg", "--all")
	if !strings.Contains(out, "  retention.ms=604800000 ") || !strings.Contains(out, "  cleanup.policy=compact,delete ") {
		t.Errorf("get --all after delete:\n%s", out)
	}

	// Brokers: the cluster-wide default and one broker.
	c.ok("config", "set", "--entity-type", "brokers", "--entity-default", "--add-config", "log.retention.ms=7200000")
	out = c.ok("config", "get", "--broker-defaults")
	if !strings.Contains(out, "Dynamic configs for the default broker config are:\n  log.retention.ms=7200000 ") {
		t.Errorf("broker default:\n%s", out)
	}
	if out := c.ok("config", "get", "--broker", "1", "--all"); !strings.Contains(out, "  log.dirs=") {
		t.Errorf("broker 1 --all lacks log.dirs:\n%s", out)
	}
	c.ok("config", "delete", "--broker-defaults", "--delete-config", "log.retention.ms")
	if out := c.ok("config", "get", "--broker-defaults"); strings.Contains(out, "log.retention.ms") {
		t.Errorf("broker default not deleted:\n%s", out)
	}

	c.fails(`topic "nope" does not exist`, "config", "get", "--topic", "nope")
	c.fails(`topic "nope" does not exist`, "config", "set", "--topic", "nope", "--add-config", "retention.ms=1")
	c.fails("INVALID_CONFIG", "config", "set", "--topic", "cfg", "--add-config", "retention.ms=soon")
	c.fails("--entity-type topics|brokers is required", "config", "get")
	c.fails(`--entity-type "users"`, "config", "get", "--entity-type", "users", "--entity-name", "x")
	c.fails("must be a broker id", "config", "get", "--entity-type", "brokers", "--entity-name", "one")
	c.fails("--add-config k=v is required", "config", "set", "--topic", "cfg")
	c.fails("--delete-config k is required", "config", "delete", "--topic", "cfg")
}
