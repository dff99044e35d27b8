package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestReassignOneNode runs generate, execute (with a throttle), list, verify
// and cancel against one node: the moves are trivial (every replica is on
// broker 1), but the files, the output and the throttle configs are the
// real ones; a multi-broker reassignment is test/brokers_test.go's.
func TestReassignOneNode(t *testing.T) {
	c := startCluster(t, nil)
	c.ok("topic", "create", "moving", "--partitions", "2", "--replication-factor", "1")
	topics := writeFile(t, "topics.json", `{"version":1,"topics":[{"topic":"moving"}]}`)

	out := c.ok("reassign", "generate", "--topics-to-move-json-file", topics, "--broker-list", "1")
	want := "Current partition replica assignment\n" +
		`{"version":1,"partitions":[{"topic":"moving","partition":0,"replicas":[1],"log_dirs":["any"]},{"topic":"moving","partition":1,"replicas":[1],"log_dirs":["any"]}]}` +
		"\n\nProposed partition reassignment configuration\n" +
		`{"version":1,"partitions":[{"topic":"moving","partition":0,"replicas":[1],"log_dirs":["any"]},{"topic":"moving","partition":1,"replicas":[1],"log_dirs":["any"]}]}` + "\n"
	if out != want {
		t.Fatalf("generate:\n%s\nwant:\n%s", out, want)
	}
	c.fails("larger than available brokers", "reassign", "generate", "--topics-to-move-json-file", topics, "--broker-list", "7")
	c.fails(`topic "nope" does not exist`, "reassign", "generate", "--topics-to-move-json-file",
		writeFile(t, "nope.json", `{"version":1,"topics":[{"topic":"nope"}]}`), "--broker-list", "1")

	plan := writeFile(t, "plan.json", `{"version":1,"partitions":[{"topic":"moving","partition":0,"replicas":[1]},{"topic":"moving","partition":1,"replicas":[1]}]}`)
	out = c.ok("reassign", "execute", "--reassignment-json-file", plan, "--throttle", "1048576")
	for _, line := range []string{
		"Save this to use as the --reassignment-json-file option during rollback",
		"The inter-broker throttle limit was set to 1048576 B/s",
		"Successfully started partition reassignments for moving-0,moving-1",
	} {
		if !strings.Contains(out, line) {
			t.Fatalf("execute output lacks %q:\n%s", line, out)
		}
	}
	cfg := c.ok("config", "get", "--topic", "moving")
	if !strings.Contains(cfg, "leader.replication.throttled.replicas=0:1,1:1") || !strings.Contains(cfg, "follower.replication.throttled.replicas=") {
		t.Fatalf("topic throttles not set:\n%s", cfg)
	}
	cfg = c.ok("config", "get", "--entity-type", "brokers", "--entity-name", "1")
	if !strings.Contains(cfg, "leader.replication.throttled.rate=1048576") || !strings.Contains(cfg, "follower.replication.throttled.rate=1048576") {
		t.Fatalf("broker throttles not set:\n%s", cfg)
	}
	if out := c.ok("reassign", "list"); out != "No partition reassignments found.\n" {
		t.Fatalf("list: %q", out)
	}

	out = c.ok("reassign", "verify", "--reassignment-json-file", plan)
	want = "Status of partition reassignment:\n" +
		"Reassignment of partition moving-0 is completed.\n" +
		"Reassignment of partition moving-1 is completed.\n" +
		"Clearing broker-level throttles on broker 1\n" +
		"Clearing topic-level throttles on topic moving\n"
	if out != want {
		t.Fatalf("verify:\n%s\nwant:\n%s", out, want)
	}
	if cfg := c.ok("config", "get", "--topic", "moving"); strings.Contains(cfg, "throttled") {
		t.Fatalf("topic throttles left after verify:\n%s", cfg)
	}
	if cfg := c.ok("config", "get", "--entity-type", "brokers", "--entity-name", "1"); strings.Contains(cfg, "throttled") {
		t.Fatalf("broker throttles left after verify:\n%s", cfg)
	}

	other := writeFile(t, "other.json", `{"version":1,"partitions":[{"topic":"moving","partition":0,"replicas":[1,1]}]}`)
	c.fails("contains multiple entries for 1", "reassign", "execute", "--reassignment-json-file", other)
	c.fails("unknown broker id 9", "reassign", "execute", "--reassignment-json-file",
		writeFile(t, "nine.json", `{"version":1,"partitions":[{"topic":"moving","partition":0,"replicas":[9]}]}`))
	c.fails("unable to find partition: moving-5", "reassign", "execute", "--reassignment-json-file",
		writeFile(t, "five.json", `{"version":1,"partitions":[{"topic":"moving","partition":5,"replicas":[1]}]}`))

	out = c.ok("reassign", "cancel", "--reassignment-json-file", plan, "--preserve-throttles")
	if out != "None of the specified partition reassignments are active.\n" {
		t.Fatalf("cancel: %q", out)
	}
}

func TestLeaderElectOneNode(t *testing.T) {
	c := startCluster(t, nil)
	c.ok("topic", "create", "led", "--partitions", "2", "--replication-factor", "1")
	out := c.ok("leader", "elect", "--preferred", "--topic", "led", "--partition", "1")
	if out != "Valid replica already elected for partitions led-1\n" {
		t.Fatalf("elect: %q", out)
	}
	out = c.ok("leader", "elect", "--election-type", "preferred", "--path-to-json-file",
		writeFile(t, "e.json", `{"partitions":[{"topic":"led","partition":0},{"topic":"led","partition":1}]}`))
	if out != "Valid replica already elected for partitions led-0, led-1\n" {
		t.Fatalf("elect from file: %q", out)
	}
	if out := c.ok("leader", "elect", "--preferred", "--all-topic-partitions"); strings.Contains(out, "Error") {
		t.Fatalf("elect for every partition: %q", out)
	}
	c.fails("could not be elected: led-7", "leader", "elect", "--unclean", "--topic", "led", "--partition", "7")
	c.fails("exactly one election type", "leader", "elect", "--all-topic-partitions")
	c.fails("exactly one of", "leader", "elect", "--preferred")
	c.fails("--topic needs --partition", "leader", "elect", "--preferred", "--topic", "led")
}

func TestClusterUnregisterAndDecommissionOneNode(t *testing.T) {
	c := startCluster(t, nil)
	c.fails("BROKER_ID_NOT_REGISTERED", "cluster", "unregister", "--id", "7")
	c.fails("--id is required", "cluster", "unregister")
	c.ok("topic", "create", "stay", "--partitions", "1", "--replication-factor", "1")
	c.fails("no other live broker can take the one on broker 1", "cluster", "decommission", "--broker", "1")
	c.fails("broker 7 is not registered", "cluster", "decommission", "--broker", "7")
	if out := c.ok("cluster", "unregister", "--id", "1"); out != "Broker 1 is no longer registered.\n" {
		t.Fatalf("unregister: %q", out)
	}
	// The node is running: it registers again, and serves.
	deadline := time.Now().Add(60 * time.Second)
	for {
		r := c.run("", "topic", "create", "after", "--partitions", "1", "--replication-factor", "1")
		if r.err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the unregistered node does not serve again: %v", r.err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
