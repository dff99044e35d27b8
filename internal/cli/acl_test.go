package cli

import (
	"strings"
	"testing"
)

func TestACLCommands(t *testing.T) {
	c := startCluster(t, map[string]string{
		"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"super.users":           "User:ANONYMOUS",
	})

	if out := c.ok("acl", "list"); out != "" {
		t.Fatalf("list with no ACLs: %q", out)
	}
	out := c.ok("acl", "add", "--allow-principal", "User:alice", "--operation", "Read", "--operation", "describe", "--topic", "orders")
	if strings.Count(out, "Added ") != 2 || !strings.Contains(out, "(resourceType=TOPIC, name=orders, patternType=LITERAL) (principal=User:alice, host=*, operation=READ, permissionType=ALLOW)") {
		t.Fatalf("add: %q", out)
	}
	c.ok("acl", "add", "--allow-principal", "User:bob", "--producer", "--idempotent", "--topic", "app-", "--resource-pattern-type", "prefixed")
	c.ok("acl", "add", "--allow-principal", "User:carol", "--consumer", "--topic", "orders", "--group", "billing")
	c.ok("acl", "add", "--deny-principal", "User:*", "--deny-host", "10.0.0.6", "--operation", "all", "--cluster")

	list := c.ok("acl", "list")
	for _, want := range []string{
		"(resourceType=TOPIC, name=app-, patternType=PREFIXED) (principal=User:bob, host=*, operation=WRITE, permissionType=ALLOW)",
		"(resourceType=TOPIC, name=app-, patternType=PREFIXED) (principal=User:bob, host=*, operation=CREATE, permissionType=ALLOW)",
		"(resourceType=CLUSTER, name=kafka-cluster, patternType=LITERAL) (principal=User:bob, host=*, operation=IDEMPOTENT_WRITE, permissionType=ALLOW)",
		"(resourceType=GROUP, name=billing, patternType=LITERAL) (principal=User:carol, host=*, operation=READ, permissionType=ALLOW)",
		"(resourceType=CLUSTER, name=kafka-cluster, patternType=LITERAL) (principal=User:*, host=10.0.0.6, operation=ALL, permissionType=DENY)",
	} {
		if !strings.Contains(list, want+"\n") {
			t.Errorf("list lacks %s:\n%s", want, list)
		}
	}
	if n := strings.Count(list, "\n"); n != 2+4+3+1 {
		t.Fatalf("list has %d ACLs:\n%s", n, list)
	}
	// What applies to topic app-orders: the prefixed ACLs.
	if out := c.ok("acl", "list", "--topic", "app-orders", "--resource-pattern-type", "match"); strings.Count(out, "\n") != 3 || !strings.Contains(out, "name=app-,") {
		t.Fatalf("list match: %q", out)
	}
	if out := c.ok("acl", "list", "--allow-principal", "User:carol"); strings.Count(out, "\n") != 3 {
		t.Fatalf("list carol: %q", out)
	}

	out = c.ok("acl", "remove", "--topic", "orders", "--allow-principal", "User:alice")
	if strings.Count(out, "Removed ") != 2 {
		t.Fatalf("remove alice: %q", out)
	}
	out = c.ok("acl", "remove", "--topic", "orders")
	if strings.Count(out, "Removed ") != 2 || !strings.Contains(out, "User:carol") {
		t.Fatalf("remove orders: %q", out)
	}
	if list := c.ok("acl", "list", "--topic", "orders"); list != "" {
		t.Fatalf("orders left: %q", list)
	}

	for _, f := range []struct {
		want string
		args []string
	}{
		{"give --allow-principal or --deny-principal", []string{"add", "--topic", "t", "--operation", "read"}},
		{"give a resource", []string{"add", "--allow-principal", "User:a", "--operation", "read"}},
		{`--operation "fly": not an ACL operation`, []string{"add", "--allow-principal", "User:a", "--operation", "fly", "--topic", "t"}},
		{`--resource-pattern-type "match": want literal, prefixed`, []string{"add", "--allow-principal", "User:a", "--topic", "t", "--resource-pattern-type", "match"}},
		{"--consumer needs --group", []string{"add", "--allow-principal", "User:a", "--consumer", "--topic", "t"}},
		{"--idempotent goes with --producer", []string{"add", "--allow-principal", "User:a", "--idempotent", "--topic", "t"}},
		{"INVALID_REQUEST", []string{"add", "--allow-principal", "alice", "--operation", "read", "--topic", "t"}},
		{"give a resource", []string{"remove"}},
	} {
		c.fails(f.want, append([]string{"acl"}, f.args...)...)
	}
}
