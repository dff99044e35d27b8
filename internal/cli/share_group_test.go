package cli

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// startOffset reads START-OFFSET of one partition from `share-group describe`.
func startOffset(t *testing.T, c *testCluster, group, topic string, p int) string {
	t.Helper()
	return row(t, c.ok("share-group", "describe", group), group, topic, strconv.Itoa(p))[3]
}

func produceLines(t *testing.T, c *testCluster, topic string, vals ...string) {
	t.Helper()
	if r := c.run(strings.Join(vals, "\n")+"\n", "produce", topic); r.err != nil {
		t.Fatalf("produce: %v", r.err)
	}
}

func TestShareGroupCommands(t *testing.T) {
	c := startCluster(t, nil)
	c.ok("topic", "create", "s", "--partitions", "1")
	produceLines(t, c, "s", "a0", "a1", "a2", "a3", "a4")

	// A reset of a group that does not exist yet makes it: dry run first
	// (retried while the group coordinator's topic is being made).
	var r result
	for deadline := time.Now().Add(20 * time.Second); ; {
		r = c.run("", "share-group", "reset-offsets", "sg", "--topic", "s", "--to-latest")
		if r.err == nil || !strings.Contains(r.err.Error(), "COORDINATOR") || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if r.err != nil || !strings.Contains(r.errOut, "Dry run") || row(t, r.out, "sg", "s", "0")[3] != "5" {
		t.Fatalf("dry run: %v %q %q", r.err, r.out, r.errOut)
	}
	c.fails(`share group "sg" does not exist`, "share-group", "describe", "sg")
	c.ok("share-group", "reset-offsets", "sg", "--topic", "s", "--to-earliest", "--execute")
	if got := startOffset(t, c, "sg", "s", 0); got != "0" {
		t.Fatalf("after --to-earliest: %s", got)
	}
	c.ok("share-group", "reset-offsets", "--group", "sg", "--all-topics", "--to-datetime", time.Now().Add(time.Hour).Format(time.RFC3339), "--execute")
	if got := startOffset(t, c, "sg", "s", 0); got != "5" {
		t.Fatalf("after --to-datetime in the future: %s", got)
	}
	if lines(c.ok("share-group", "list"))[0] != "sg" {
		t.Fatalf("share-group list: %q", c.ok("share-group", "list"))
	}
	if f := row(t, c.ok("share-group", "list", "--state"), "sg"); f[1] != "Empty" {
		t.Fatalf("share-group list --state: %q", f)
	}
	if out := c.ok("share-group", "describe", "sg", "--members"); out != "Share group 'sg' has no active members.\n" {
		t.Fatalf("--members of an empty group: %q", out)
	}

	// A share consumer starts at the start offset set: it gets the records
	// produced after it (5) and before it joined, none of the earlier ones.
	produceLines(t, c, "s", "b5", "b6", "b7")
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addr()), kgo.ShareGroup("sg"), kgo.ConsumeTopics("s"), kgo.ClientID("share-test"),
		kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var got []string
	deadline := time.Now().Add(20 * time.Second)
	for len(got) < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("share consumer got %q, want the 3 records after the start offset", got)
		}
		pctx, cancel := context.WithTimeout(ctxT(t), 200*time.Millisecond)
		cl.PollFetches(pctx).EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
		cancel()
	}
	sort.Strings(got)
	if fmt.Sprint(got) != "[b5 b6 b7]" {
		t.Fatalf("share consumer got %q", got)
	}

	// An active member shows in describe and blocks reset and delete.
	if f := row(t, c.ok("share-group", "describe", "sg", "--members"), "sg"); f[3] != "share-test" || f[4] != "1" || f[5] != "s:0" {
		t.Fatalf("--members: %q", f)
	}
	if f := row(t, c.ok("share-group", "describe", "sg", "--state", "--verbose"), "sg"); f[len(f)-1] != "1" || f[len(f)-4] != "Stable" {
		t.Fatalf("--state --verbose: %q", f)
	}
	c.fails("has active members", "share-group", "reset-offsets", "sg", "--topic", "s", "--to-earliest", "--execute")
	c.fails("has active members", "share-group", "delete-offsets", "sg", "--topic", "s")
	c.fails("has active members", "share-group", "delete", "sg")

	// The next poll accepts the records delivered (implicit acknowledgement).
	pctx, cancel := context.WithTimeout(ctxT(t), 200*time.Millisecond)
	cl.PollFetches(pctx)
	cancel()
	cl.Close()
	deadline = time.Now().Add(20 * time.Second)
	for row(t, c.ok("share-group", "describe", "sg", "--state"), "sg")[3] != "Empty" {
		if time.Now().After(deadline) {
			t.Fatal("the share group never became Empty after its consumer closed")
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The accepted records moved the start offset past them.
	for got := startOffset(t, c, "sg", "s", 0); got != "8"; got = startOffset(t, c, "sg", "s", 0) {
		if time.Now().After(deadline) {
			t.Fatalf("start offset after consuming: %s, want 8", got)
		}
		time.Sleep(100 * time.Millisecond)
	}

	// delete-offsets drops the topic's state; delete drops the group.
	c.fails(`topic "nope"`, "share-group", "delete-offsets", "sg", "--topic", "nope")
	if f := row(t, c.ok("share-group", "delete-offsets", "sg", "--topic", "s"), "s"); f[1] != "Successful" {
		t.Fatalf("delete-offsets: %q", f)
	}
	if out := c.ok("share-group", "describe", "sg"); out != "Share group 'sg' has no share-partition state.\n" {
		t.Fatalf("describe after delete-offsets: %q", out)
	}
	if out := c.ok("share-group", "delete", "sg"); out != "Deletion of requested share groups ('sg') was successful.\n" {
		t.Fatalf("delete: %q", out)
	}
	c.fails(`share group "sg" does not exist`, "share-group", "describe", "sg")
	c.fails(`share group "sg" does not exist`, "share-group", "delete", "sg")

	// Bad input: one line, nothing sent.
	c.fails("give exactly one of --to-earliest", "share-group", "reset-offsets", "sg", "--topic", "s")
	c.fails("give --topic or --all-topics", "share-group", "reset-offsets", "sg", "--to-earliest")
	c.fails("give only one of --execute and --dry-run", "share-group", "reset-offsets", "sg", "--topic", "s", "--to-earliest", "--execute", "--dry-run")
	c.fails(`topic "nope" does not exist`, "share-group", "reset-offsets", "sg", "--topic", "nope", "--to-earliest")
	c.fails("--to-datetime", "share-group", "reset-offsets", "sg", "--topic", "s", "--to-datetime", "yesterday")
	c.fails("give only one of --offsets, --members and --state", "share-group", "describe", "sg", "--members", "--state")
	c.fails("no topic given", "share-group", "delete-offsets", "sg")
	c.fails("no group given", "share-group", "delete")
}
