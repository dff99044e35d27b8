package cli

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestBenchProduceConsume(t *testing.T) {
	c := startCluster(t, nil)
	c.ok("topic", "create", "perf", "--partitions", "3", "--replication-factor", "1")

	out := c.ok("bench", "produce", "--topic", "perf", "--num-records", "3000", "--record-size", "100", "--json",
		"--producer-props", "linger.ms=1,compression.type=lz4")
	var p produceSummary
	if err := json.Unmarshal([]byte(out), &p); err != nil || strings.Count(out, "\n") != 1 {
		t.Fatalf("--json output %q: %v", out, err)
	}
	l := p.LatencyMs
	if p.Records != 3000 || p.Bytes != 300000 || p.Errors != 0 || p.RecordsPerSec <= 0 || p.MBPerSec <= 0 ||
		l.Avg <= 0 || l.P50 <= 0 || l.P50 > l.P95 || l.P95 > l.P99 || l.P99 > l.P999 || l.P999 > l.Max {
		t.Fatalf("summary %+v", p)
	}

	// The table, and --throughput holds the rate down: 400 records at 2,000/s
	// take at least 0.2 s.
	out = c.ok("bench", "produce", "--topic", "perf", "--num-records", "400", "--record-size", "10",
		"--throughput", "2000", "--acks", "1", "--compression", "gzip", "--batch-size", "16384", "--linger-ms", "0")
	f := strings.Fields(lines(out)[0])
	if f[0] != "400" || f[1] != "records" || f[2] != "sent," {
		t.Fatalf("summary line:\n%s", out)
	}
	if ls := lines(out); len(ls) != 4 || !strings.HasPrefix(ls[2], "RECORDS ") {
		t.Fatalf("want a summary line and a table:\n%s", out)
	}
	if r := strings.Fields(lines(out)[3]); len(r) != 9 || r[0] != "400" {
		t.Fatalf("table row %q", r)
	} else if rps := parseFloat(t, r[1]); rps > 2200 {
		t.Fatalf("%v records/s with --throughput 2000:\n%s", rps, out)
	}

	// Consume everything (3,400 records of 3 partitions), directly.
	out = c.ok("bench", "consume", "--topic", "perf", "--messages", "3400", "--json")
	var s consumeSummary
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("--json output %q: %v", out, err)
	}
	if s.Records != 3400 || s.Bytes != 304000 || s.FirstRecordMs < 0 || s.FirstRecordMs > s.ElapsedMs || s.RecordsPerSec <= 0 {
		t.Fatalf("summary %+v", s)
	}

	// As a group, Kafka's columns; the group commits what it read.
	out = c.ok("bench", "consume", "--topic", "perf", "--messages", "500", "--group", "perf-group")
	ls := lines(out)
	if len(ls) != 2 || !strings.HasPrefix(ls[0], "start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg,") {
		t.Fatalf("output:\n%s", out)
	}
	cols := strings.Split(ls[1], ", ")
	if len(cols) != 11 || cols[4] != "500" || parseFloat(t, cols[6]) <= 0 {
		t.Fatalf("columns %q (want 500 records and a rebalance time)", cols)
	}
	desc := c.ok("group", "describe", "perf-group")
	committed := int64(0)
	for _, l := range lines(desc) {
		if f := strings.Fields(l); len(f) > 3 && f[0] == "perf-group" && f[1] == "perf" && f[3] != "-" {
			committed += int64(parseFloat(t, f[3]))
		}
	}
	if committed < 500 {
		t.Fatalf("group committed %d offsets, want at least 500:\n%s", committed, desc)
	}

	// Fewer records than asked: stop after --timeout without one, with
	// Kafka's warning.
	start := time.Now()
	r := runCommand(t, "", "bench", "consume", "--topic", "perf", "--messages", "100000", "--json",
		"--bootstrap-server", c.addr(), "--timeout", "1s")
	if r.err != nil || !strings.Contains(r.errOut, "WARNING: Exiting before consuming the expected number of messages: timeout (1s) exceeded.") {
		t.Fatalf("err %v stderr %q", r.err, r.errOut)
	}
	if err := json.Unmarshal([]byte(r.out), &s); err != nil || s.Records != 3400 {
		t.Fatalf("output %q: %v", r.out, err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("took %s", d)
	}
}

func TestBenchErrors(t *testing.T) {
	c := startCluster(t, nil)
	c.fails("--num-records must be positive", "bench", "produce", "--topic", "x")
	c.fails("--topic is required", "bench", "produce", "--num-records", "1")
	c.fails("--throughput must be positive or -1", "bench", "produce", "--topic", "x", "--num-records", "1", "--throughput", "0")
	c.fails("--producer-props foo: not a producer config", "bench", "produce", "--topic", "x", "--num-records", "1", "--producer-props", "foo=1")
	c.fails("--producer-props linger.ms=\"soon\"", "bench", "produce", "--topic", "x", "--num-records", "1", "--producer-props", "linger.ms=soon")
	c.fails("--acks \"2\"", "bench", "produce", "--topic", "x", "--num-records", "1", "--acks", "2")
	c.fails("--messages must be positive", "bench", "consume", "--topic", "x")
	c.fails(`topic "missing" does not exist`, "bench", "consume", "--topic", "missing", "--messages", "1")
}

func TestLatencyStatsAndProgress(t *testing.T) {
	s := newLatencyStats(1000)
	for i := 1; i <= 1000; i++ {
		s.record(time.Duration(i) * time.Millisecond)
	}
	sum := s.summary(2*time.Second, 50)
	l := sum.LatencyMs
	if sum.Records != 1000 || sum.RecordsPerSec != 500 || l.Avg != 500.5 || l.P50 != 501 || l.P95 != 951 ||
		l.P99 != 991 || l.P999 != 1000 || l.Max != 1000 {
		t.Fatalf("summary %+v", sum)
	}
	// Past 500,000 records, every n-th is sampled.
	big := newLatencyStats(2_000_000)
	for range 2_000_000 {
		big.record(time.Millisecond)
	}
	if len(big.samples) != 500_000 || big.count != 2_000_000 {
		t.Fatalf("%d samples of %d", len(big.samples), big.count)
	}

	p := newBenchProgress(nil, 1000, true, "records sent")
	p.add(250, 250*mib/100)
	if got, want := p.line(time.Second), "250/1000 records sent (25%), 250 records/s, 2.50 MB/s, ETA 3s"; got != want {
		t.Fatalf("progress %q, want %q", got, want)
	}
}

func parseFloat(t *testing.T, s string) float64 {
	t.Helper()
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return f
}

// TestBenchProduceTransactions: --transaction-duration-ms commits the
// records in transactions; a read_committed consumer sees all of them.
func TestBenchProduceTransactions(t *testing.T) {
	c := startCluster(t, nil)
	c.ok("topic", "create", "txperf", "--partitions", "2")
	out := c.ok("bench", "produce", "--topic", "txperf", "--num-records", "2000", "--record-size", "50",
		"--throughput", "10000", "--transaction-duration-ms", "50")
	ls := lines(out)
	last := ls[len(ls)-1]
	n := 0
	if _, err := fmt.Sscanf(last, "%d transactions committed", &n); err != nil || n < 2 {
		t.Fatalf("want several transactions committed, got %q:\n%s", last, out)
	}
	got := c.ok("consume", "txperf", "--from-beginning", "--isolation-level", "read_committed", "--max-messages", "2000")
	if k := strings.Count(got, "\n"); k != 2000 {
		t.Fatalf("read_committed consumed %d records, want 2000", k)
	}
	c.fails("--transaction-duration-ms must not be negative", "bench", "produce", "--topic", "txperf", "--num-records", "1", "--transaction-duration-ms", "-1")
}
