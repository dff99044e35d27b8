package cli

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
)

func TestTopicCommands(t *testing.T) {
	c := startCluster(t, nil)

	if out := c.ok("topic", "create", "orders", "--partitions", "3", "--config", "retention.ms=3600000"); out != "Created topic orders.\n" {
		t.Fatalf("create: %q", out)
	}
	c.ok("topic", "create", "--topic", "audit")
	c.fails(`topic "orders" already exists`, "topic", "create", "orders")
	c.ok("topic", "create", "orders", "--if-not-exists")
	c.fails("--partitions must be at least 1", "topic", "create", "x", "--partitions", "0")
	c.fails("--config \"oops\": want key=value", "topic", "create", "x", "--config", "oops")
	c.fails("INVALID_CONFIG", "topic", "create", "x", "--config", "retention.ms=soon")
	c.fails("INVALID_REPLICATION_FACTOR", "topic", "create", "x", "--replication-factor", "3")
	c.fails(`invalid argument "many" for "--partitions"`, "topic", "create", "x", "--partitions", "many")

	if got := lines(c.ok("topic", "list", "--exclude-internal")); strings.Join(got, ",") != "audit,orders" {
		t.Fatalf("list: %q", got)
	}

	// Produce 10 records so offsets and sizes show in describe.
	var in strings.Builder
	for i := range 10 {
		fmt.Fprintf(&in, "v%d\n", i)
	}
	if r := c.run(in.String(), "produce", "orders", "--partition", "1"); r.err != nil {
		t.Fatalf("produce: %v", r.err)
	}
	out := c.ok("topic", "describe", "orders")
	head := lines(out)[0]
	for _, want := range []string{"Topic: orders", "PartitionCount: 3", "ReplicationFactor: 1", "Configs: retention.ms=3600000"} {
		if !strings.Contains(head, want) {
			t.Errorf("describe header %q lacks %q", head, want)
		}
	}
	if strings.Contains(head, "TopicId: AAAAAAAAAAAAAAAAAAAAAA") {
		t.Errorf("describe shows no topic id: %q", head)
	}
	// PARTITION LEADER REPLICAS ISR START END SIZE
	p1 := row(t, out, "1")
	if p1[1] != "1" || p1[2] != "1" || p1[3] != "1" || p1[4] != "0" || p1[5] != "10" {
		t.Errorf("partition 1 row %q", p1)
	}
	if size, err := strconv.Atoi(p1[6]); err != nil || size < 10*2 {
		t.Errorf("partition 1 size %q", p1[6])
	}
	if p0 := row(t, out, "0"); p0[5] != "0" || p0[6] != "0" {
		t.Errorf("partition 0 row %q", p0)
	}
	all := c.ok("topic", "describe")
	if !strings.Contains(all, "Topic: orders") || !strings.Contains(all, "Topic: audit") {
		t.Errorf("describe all:\n%s", all)
	}
	c.fails(`topic "nope" does not exist`, "topic", "describe", "nope")

	if out := c.ok("topic", "add-partitions", "orders", "--partitions", "5"); out != "Topic orders now has 5 partitions.\n" {
		t.Fatalf("add-partitions: %q", out)
	}
	if !strings.Contains(c.ok("topic", "describe", "orders"), "PartitionCount: 5") {
		t.Error("describe does not show 5 partitions")
	}
	// The broker's words, as kafka-topics prints them, not the code's
	// generic "Number of partitions is below 1."
	c.fails(`add partitions to "orders": INVALID_PARTITIONS: The topic orders currently has 5 partition(s); 2 would not be an increase.`,
		"topic", "add-partitions", "orders", "--partitions", "2")
	c.fails(`add partitions to "orders": INVALID_PARTITIONS: Topic already has 5 partition(s).`, "topic", "add-partitions", "orders", "--partitions", "5")
	c.fails(`topic "nope" does not exist`, "topic", "add-partitions", "nope", "--partitions", "2")
	c.fails("--partitions N (the new total, at least 1) is required", "topic", "add-partitions", "orders")

	c.ok("topic", "alter", "orders", "--config", "cleanup.policy=compact", "--delete-config", "retention.ms")
	head = lines(c.ok("topic", "describe", "orders"))[0]
	if !strings.HasSuffix(head, "Configs: cleanup.policy=compact") {
		t.Errorf("after alter: %q", head)
	}
	c.fails(`topic "nope" does not exist`, "topic", "alter", "nope", "--config", "retention.ms=1")
	c.fails("INVALID_CONFIG", "topic", "alter", "orders", "--config", "retention.ms=x")
	// An unknown key: the broker's message with its suggestion.
	c.fails(`topic "orders": INVALID_CONFIG: unknown topic config name: max.mesage.bytes (did you mean max.message.bytes?)`,
		"topic", "alter", "orders", "--config", "max.mesage.bytes=3000000")
	c.fails(`create topic "typo": INVALID_CONFIG: unknown topic config name: retention.msec (did you mean retention.ms?)`,
		"topic", "create", "typo", "--config", "retention.msec=1000")
	c.fails(`alter configs of broker 1: INVALID_REQUEST: unknown broker config name: log.retention.hour (did you mean log.retention.hours?)`,
		"config", "set", "--broker", "1", "--add-config", "log.retention.hour=1")
	c.fails("nothing to change", "topic", "alter", "orders")

	if out := c.ok("topic", "delete", "audit"); out != "Deleted topic audit.\n" {
		t.Fatalf("delete: %q", out)
	}
	c.fails(`topic "audit" does not exist`, "topic", "delete", "audit")
	c.ok("topic", "delete", "audit", "--if-exists")
	if got := lines(c.ok("topic", "list", "--exclude-internal")); strings.Join(got, ",") != "orders" {
		t.Fatalf("list after delete: %q", got)
	}
}
