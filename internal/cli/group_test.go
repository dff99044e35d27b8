package cli

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// offsets reads CURRENT-OFFSET, LOG-END-OFFSET and LAG of one partition from
// `group describe`.
func offsets(t *testing.T, c *testCluster, group, topic string, p int) (current, end, lag string) {
	t.Helper()
	f := row(t, c.ok("group", "describe", group), group, topic, strconv.Itoa(p))
	return f[3], f[4], f[5]
}

func TestGroupCommands(t *testing.T) {
	c := startCluster(t, nil)
	c.ok("topic", "create", "g", "--partitions", "2")
	for p := range 2 {
		var in strings.Builder
		for i := range 5 {
			fmt.Fprintf(&in, "p%d-%d\n", p, i)
		}
		if r := c.run(in.String(), "produce", "g", "--partition", strconv.Itoa(p)); r.err != nil {
			t.Fatalf("produce: %v", r.err)
		}
	}

	// Consume 4 of 10 as a group; the next run gets exactly the other 6.
	first := lines(c.ok("consume", "g", "--group", "g1", "--from-beginning", "--max-messages", "4"))
	if len(c.ok("group", "list")) == 0 || lines(c.ok("group", "list"))[0] != "g1" {
		t.Fatalf("group list: %q", c.ok("group", "list"))
	}
	if f := row(t, c.ok("group", "list", "--state"), "g1"); f[1] != "Empty" {
		t.Fatalf("group list --state: %q", f)
	}
	// Only partitions with a commit are listed while the group has no members.
	total := 0
	for _, l := range lines(c.ok("group", "describe", "g1"))[3:] {
		f := strings.Fields(l)
		cur, _ := strconv.Atoi(f[3])
		if lag, _ := strconv.Atoi(f[5]); f[4] != "5" || lag != 5-cur {
			t.Fatalf("row %q: lag is not end - committed", f)
		}
		total += cur
	}
	if total != 4 {
		t.Fatalf("committed %d records in total, consumed 4", total)
	}
	second := lines(c.ok("consume", "g", "--group", "g1", "--from-beginning", "--max-messages", "6"))
	seen := map[string]bool{}
	for _, v := range append(first, second...) {
		seen[v] = true
	}
	if len(seen) != 10 {
		t.Fatalf("two group runs saw %d distinct records: %q then %q", len(seen), first, second)
	}
	if _, _, lag := offsets(t, c, "g1", "g", 0); lag != "0" {
		t.Fatalf("lag after reading all: %s", lag)
	}
	if out := c.ok("group", "describe", "g1", "--members"); out != "Consumer group 'g1' has no active members.\n" {
		t.Fatalf("--members of an empty group: %q", out)
	}
	if f := row(t, c.ok("group", "describe", "g1", "--state"), "g1"); f[len(f)-2] != "Empty" || f[len(f)-1] != "0" {
		t.Fatalf("--state: %q", f)
	}

	// Reset: a dry run by default, then executed.
	r := c.run("", "group", "reset-offsets", "g1", "--topic", "g", "--to-earliest")
	if r.err != nil || !strings.Contains(r.errOut, "Dry run") || row(t, r.out, "g1", "g", "0")[3] != "0" {
		t.Fatalf("dry run: %v %q %q", r.err, r.out, r.errOut)
	}
	if cur, _, _ := offsets(t, c, "g1", "g", 0); cur != "5" {
		t.Fatalf("dry run changed the offset to %s", cur)
	}
	c.ok("group", "reset-offsets", "--group", "g1", "--topic", "g", "--to-earliest", "--execute")
	if cur, _, lag := offsets(t, c, "g1", "g", 1); cur != "0" || lag != "5" {
		t.Fatalf("after --to-earliest: current %s lag %s", cur, lag)
	}
	steps := []struct {
		args []string
		want string
	}{
		{[]string{"--to-offset", "3"}, "3"},
		{[]string{"--shift-by", "-1"}, "2"},
		{[]string{"--shift-by", "100"}, "5"}, // kept at the log end
		{[]string{"--to-datetime", "2001-01-01T00:00:00.000"}, "0"},
		{[]string{"--to-datetime", time.Now().Add(time.Hour).Format(time.RFC3339)}, "5"},
		{[]string{"--to-offset", "1"}, "1"},
	}
	for _, s := range steps {
		c.ok(append([]string{"group", "reset-offsets", "g1", "--topic", "g:1", "--execute"}, s.args...)...)
		if cur, _, _ := offsets(t, c, "g1", "g", 1); cur != s.want {
			t.Fatalf("after %v: current %s, want %s", s.args, cur, s.want)
		}
	}
	c.ok("group", "reset-offsets", "g1", "--all-topics", "--to-latest", "--execute")
	if cur, _, _ := offsets(t, c, "g1", "g", 1); cur != "5" {
		t.Fatalf("after --all-topics --to-latest: %s", cur)
	}
	c.fails("give exactly one of --to-earliest", "group", "reset-offsets", "g1", "--topic", "g")
	c.fails("give exactly one of --to-earliest", "group", "reset-offsets", "g1", "--topic", "g", "--to-earliest", "--to-latest")
	c.fails("give --topic or --all-topics", "group", "reset-offsets", "g1", "--to-earliest")
	c.fails("give only one of --execute and --dry-run", "group", "reset-offsets", "g1", "--topic", "g", "--to-earliest", "--execute", "--dry-run")
	c.fails(`topic "nope" does not exist`, "group", "reset-offsets", "g1", "--topic", "nope", "--to-earliest")
	c.fails("has no partition 7", "group", "reset-offsets", "g1", "--topic", "g:7", "--to-earliest")
	c.fails("--to-datetime", "group", "reset-offsets", "g1", "--topic", "g", "--to-datetime", "yesterday")

	// An active member blocks reset and delete and shows in describe.
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addr()), kgo.ConsumerGroup("g1"), kgo.ConsumeTopics("g"), kgo.ClientID("member-test"),
		kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for !strings.Contains(c.ok("group", "describe", "g1", "--state"), "Stable") {
		if time.Now().After(deadline) {
			t.Fatal("group never became Stable")
		}
		// Polling drives the join; nothing arrives (the offsets are at the end).
		pctx, cancel := context.WithTimeout(ctxT(t), 50*time.Millisecond)
		cl.PollRecords(pctx, 0)
		cancel()
	}
	members := c.ok("group", "describe", "g1", "--members")
	if f := row(t, members, "g1"); f[3] != "member-test" || f[4] != "2" || f[5] != "g(0,1)" {
		t.Fatalf("--members: %q", f)
	}
	if f := row(t, c.ok("group", "describe", "g1"), "g1", "g", "0"); f[8] != "member-test" {
		t.Fatalf("describe with a member: %q", f)
	}
	c.fails(`offsets can only be reset if group "g1" is inactive, but its state is Stable`,
		"group", "reset-offsets", "g1", "--topic", "g", "--to-earliest", "--execute")
	c.fails("NON_EMPTY_GROUP", "group", "delete", "g1")
	cl.Close() // leaves the group

	if out := c.ok("group", "delete", "g1"); out != "Deletion of requested consumer groups ('g1') was successful.\n" {
		t.Fatalf("delete: %q", out)
	}
	if out := c.ok("group", "list"); out != "" {
		t.Fatalf("list after delete: %q", out)
	}
	c.fails(`consumer group "g1" does not exist`, "group", "describe", "g1")
	c.fails(`consumer group "g1" does not exist`, "group", "delete", "g1")
	c.fails("no group given", "group", "describe")
}

// A KIP-848 (consumer protocol) group is described from ConsumerGroupDescribe.
func TestDescribeConsumerProtocolGroup(t *testing.T) {
	c := startCluster(t, nil)
	c.ok("topic", "create", "n", "--partitions", "2")
	if r := c.run("a\nb\nc\n", "produce", "n", "--partition", "1"); r.err != nil {
		t.Fatal(r.err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addr()), kgo.ConsumerGroup("ng"), kgo.ConsumeTopics("n"),
		kgo.ServerSideBalancer(), kgo.Balancers(kgo.RangeBalancer()), kgo.ClientID("next-gen"),
		kgo.FetchMaxWait(100*time.Millisecond), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for n := 0; n < 3; {
		fs := cl.PollFetches(ctxT(t))
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		n += fs.NumRecords()
	}
	if err := cl.CommitUncommittedOffsets(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if f := row(t, c.ok("group", "describe", "ng", "--state"), "ng"); f[len(f)-2] != "Stable" || f[len(f)-1] != "1" {
		t.Fatalf("--state: %q", f)
	}
	if f := row(t, c.ok("group", "describe", "ng", "--members"), "ng"); f[3] != "next-gen" {
		t.Fatalf("--members: %q", f)
	}
	if f := row(t, c.ok("group", "describe", "ng"), "ng", "n", "1"); f[3] != "3" || f[4] != "3" || f[5] != "0" {
		t.Fatalf("offsets: %q", f)
	}
}
