package cli

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// shareFromEarliest makes share group g start topic's partitions at their
// earliest offsets (a new share group starts at the end), retrying while the
// group coordinator's topic is being made.
func shareFromEarliest(t *testing.T, c *testCluster, group, topic string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; {
		r := c.run("", "share-group", "reset-offsets", group, "--topic", topic, "--to-earliest", "--execute")
		if r.err == nil {
			return
		}
		if !strings.Contains(r.err.Error(), "COORDINATOR") || time.Now().After(deadline) {
			t.Fatalf("share-group reset-offsets: %v", r.err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func numbered(prefix string, n int) []string {
	vals := make([]string, n)
	for i := range vals {
		vals[i] = fmt.Sprintf("%s%03d", prefix, i)
	}
	return vals
}

// oneFetch makes a share consumer acquire at most n records a fetch, so that
// one produced batch is split between members.
func oneFetch(n int) []string {
	return []string{"--consumer-property", fmt.Sprintf("max.poll.records=%d", n),
		"--consumer-property", "share.acquire.mode=record_limit"}
}

func TestShareConsumeSplitsRecords(t *testing.T) {
	c := startCluster(t, nil)
	c.ok("topic", "create", "s", "--partitions", "1")
	shareFromEarliest(t, c, "g", "s")
	want := numbered("v", 100)
	produceLines(t, c, "s", want...)

	// Two members of g, each stopping at half the records: each prints
	// exactly 50, so together they print every record once only if none
	// is delivered to both (what one fetched and did not print it releases
	// on leaving, for the other).
	var wg sync.WaitGroup
	results := make([]result, 2)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = c.run("", append([]string{"share-consume", "s", "--group", "g", "--max-messages", "50"}, oneFetch(10)...)...)
		}()
	}
	wg.Wait()
	var got []string
	for i, r := range results {
		if r.err != nil {
			t.Fatalf("consumer %d: %v\nstderr: %s", i, r.err, r.errOut)
		}
		if n := len(lines(r.out)); n != 50 || !strings.Contains(r.errOut, "Processed a total of 50 messages") {
			t.Fatalf("consumer %d printed %d records (stderr %q), want 50", i, n, r.errOut)
		}
		got = append(got, lines(r.out)...)
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("the two members printed %q, want every record once: %q", got, want)
	}
	if got := startOffset(t, c, "g", "s", 0); got != "100" {
		t.Fatalf("start offset after every record was accepted: %s, want 100", got)
	}
}

func TestShareConsumeRejectAndRelease(t *testing.T) {
	c := startCluster(t, nil)
	c.ok("topic", "create", "r", "--partitions", "1")
	shareFromEarliest(t, c, "g", "r")
	produceLines(t, c, "r", numbered("v", 6)...)
	consume := func(n int, ack ...string) []string {
		t.Helper()
		args := append([]string{"share-consume", "r", "--group", "g", "--max-messages", fmt.Sprint(n), "--property", "print.offset=true"}, oneFetch(n)...)
		return lines(c.ok(append(args, ack...)...))
	}

	// Released records are delivered again, to the next member that fetches.
	first := consume(2, "--release")
	if got := startOffset(t, c, "g", "r", 0); got != "0" {
		t.Fatalf("start offset after a release: %s, want 0", got)
	}
	// Rejected records are archived: the start offset passes them.
	if again := consume(2, "--reject"); !slices.Equal(again, first) {
		t.Fatalf("after --release of %q the next member got %q", first, again)
	}
	if got := startOffset(t, c, "g", "r", 0); got != "2" {
		t.Fatalf("start offset after rejecting offsets 0-1: %s, want 2", got)
	}
	rest := consume(4)
	if len(rest) != 4 || !strings.HasPrefix(rest[0], "Offset:2") || !strings.HasPrefix(rest[3], "Offset:5") {
		t.Fatalf("after the rejected records: %q, want offsets 2-5", rest)
	}
	if got := startOffset(t, c, "g", "r", 0); got != "6" {
		t.Fatalf("start offset after accepting 2-5: %s, want 6", got)
	}
}

// TestShareConsumeGetsExpiredLocks: records a member acquired and never
// acknowledged, with its connection still open (a hung consumer), are
// delivered to another member once share.record.lock.duration.ms passes.
func TestShareConsumeGetsExpiredLocks(t *testing.T) {
	c := startCluster(t, map[string]string{
		"group.share.min.record.lock.duration.ms": "1000",
		"group.share.record.lock.duration.ms":     "2000",
	})
	c.ok("topic", "create", "l", "--partitions", "1")
	shareFromEarliest(t, c, "g", "l")
	want := numbered("v", 6)
	produceLines(t, c, "l", want...)

	// The hung member: fetches 3 records, then neither acknowledges them
	// nor polls again (a strict share consumer fetches only when polled).
	hung, err := kgo.NewClient(kgo.SeedBrokers(c.addr()), kgo.ShareGroup("g"), kgo.ConsumeTopics("l"),
		kgo.ShareMaxRecords(3), kgo.ShareMaxRecordsStrict(), kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer hung.Close()
	var held []string
	for deadline := time.Now().Add(30 * time.Second); len(held) == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the hung member fetched nothing")
		}
		pctx, cancel := context.WithTimeout(ctxT(t), 500*time.Millisecond)
		hung.PollRecords(pctx, -1).EachRecord(func(r *kgo.Record) { held = append(held, string(r.Value)) })
		cancel()
	}

	r := c.run("", append([]string{"share-consume", "l", "--group", "g", "--max-messages", "6"}, oneFetch(6)...)...)
	if r.err != nil {
		t.Fatalf("share-consume: %v\nstderr: %s", r.err, r.errOut)
	}
	got := lines(r.out)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("share-consume printed %q, want all of %q (the hung member held %q)", got, want, held)
	}
}

func TestShareConsumeErrors(t *testing.T) {
	c := startCluster(t, nil)
	c.ok("topic", "create", "e", "--partitions", "1")
	c.fails("give only one of --reject and --release", "share-consume", "e", "--reject", "--release")
	c.fails("no topic given", "share-consume")
	c.fails("--max-messages must be positive", "share-consume", "e", "--max-messages", "0")
	c.fails(`"nope"`, "share-consume", "nope", "--timeout-ms", "1000")
	c.fails("share.acquire.mode", "share-consume", "e", "--consumer-property", "share.acquire.mode=all")

	// A consumer-only config is not a share consumer's: warned, ignored.
	r := c.run("", "share-consume", "e", "--timeout-ms", "500", "--consumer-property", "auto.offset.reset=earliest")
	if r.err != nil || !strings.Contains(r.errOut, `"auto.offset.reset" was supplied but isn't a known config`) {
		t.Fatalf("auto.offset.reset on a share consumer: %v %q", r.err, r.errOut)
	}

	c.ok("feature", "downgrade", "--feature", "share.version=0")
	c.fails("feature upgrade --feature share.version=1", "share-consume", "e", "--timeout-ms", "5000")
}
