package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func TestProduceConsume(t *testing.T) {
	c := startCluster(t, map[string]string{"auto.create.topics.enable": "false"})
	c.ok("topic", "create", "lines", "--partitions", "1")

	// Plain lines: one record value per line; CRLF endings are stripped.
	if r := c.run("a\nb\r\nc", "produce", "lines", "--compression", "zstd"); r.err != nil || r.out != "" {
		t.Fatalf("produce: %v %q", r.err, r.out)
	}
	if out := c.ok("consume", "lines", "--from-beginning", "--max-messages", "3"); out != "a\nb\nc\n" {
		t.Fatalf("consume: %q", out)
	}
	// Keys and headers, acks=1.
	in := "h1:x,h2:y|k1:v1\n|k2:v2\n"
	if r := c.run(in, "produce", "lines", "--acks", "1", "--property", "parse.key=true", "--property", "key.separator=:",
		"--property", "parse.headers=true", "--property", "headers.delimiter=|"); r.err != nil {
		t.Fatalf("produce keyed: %v", r.err)
	}
	out := c.ok("consume", "lines", "--offset", "3", "--partition", "0", "--max-messages", "2",
		"--property", "print.key=true", "--property", "print.offset=true", "--property", "print.headers=true")
	if want := "Offset:3\th1:x,h2:y\tk1\tv1\nOffset:4\tNO_HEADERS\tk2\tv2\n"; out != want {
		t.Fatalf("consume with key: %q, want %q", out, want)
	}
	out = c.ok("consume", "lines", "--from-beginning", "--max-messages", "5", "--format", `%k=%v@%p/%o %K %S [%h]\n`)
	if want := "=a@0/0 -1 1 []\n=b@0/1 -1 1 []\n=c@0/2 -1 1 []\nk1=v1@0/3 2 2 [h1=x,h2=y]\nk2=v2@0/4 2 2 []\n"; out != want {
		t.Fatalf("kcat format: %q, want %q", out, want)
	}
	out = c.ok("consume", "lines", "--offset", "3", "--partition", "0", "--max-messages", "1", "--format", "json")
	var rec jsonRecordOut
	if err := json.Unmarshal([]byte(out), &rec); err != nil {
		t.Fatalf("json %q: %v", out, err)
	}
	if rec.Topic != "lines" || rec.Offset != 3 || *rec.Key != "k1" || *rec.Value != "v1" || len(rec.Headers) != 2 ||
		rec.Headers[1].Key != "h2" || *rec.Headers[1].Value != "y" || time.Since(time.UnixMilli(rec.Timestamp)) > time.Minute {
		t.Fatalf("json record %+v", rec)
	}

	// --timeout-ms ends a consumer that has nothing more, with Kafka's count line.
	r := c.run("", "consume", "lines", "--from-beginning", "--timeout-ms", "300")
	if r.err != nil || len(lines(r.out)) != 5 || r.errOut != "Processed a total of 5 messages\n" {
		t.Fatalf("timeout consume: %v %q %q", r.err, r.out, r.errOut)
	}
	// Default start is the end: nothing old is printed.
	r = c.run("", "consume", "lines", "--timeout-ms", "300")
	if r.err != nil || r.out != "" {
		t.Fatalf("consume from end: %v %q", r.err, r.out)
	}
	// --from-timestamp far in the future finds nothing; in the past finds all.
	r = c.run("", "consume", "lines", "--from-timestamp", "2001-01-01T00:00:00Z", "--timeout-ms", "300")
	if r.err != nil || len(lines(r.out)) != 5 {
		t.Fatalf("from-timestamp: %v %q", r.err, r.out)
	}

	// A file, with the summary line on stderr.
	path := filepath.Join(t.TempDir(), "in.txt")
	var sb strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&sb, "record-%04d\n", i)
	}
	if err := os.WriteFile(path, []byte(sb.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	c.ok("topic", "create", "file", "--partitions", "4")
	r = c.run("", "produce", "--topic", "file", "--file", path, "--compression", "lz4")
	if r.err != nil || !strings.HasPrefix(r.errOut, "Produced 2000 records (23.4 KiB) to file in ") {
		t.Fatalf("produce file: %v %q", r.err, r.errOut)
	}
	got := lines(c.ok("consume", "file", "--from-beginning", "--max-messages", "2000"))
	seen := map[string]bool{}
	for _, l := range got {
		seen[l] = true
	}
	if len(got) != 2000 || len(seen) != 2000 || !seen["record-0000"] || !seen["record-1999"] {
		t.Fatalf("consumed %d lines, %d distinct", len(got), len(seen))
	}

	// Errors.
	c.fails(`topic "nope" does not exist`, "produce", "nope")
	c.fails(`topic "nope" does not exist`, "consume", "nope")
	c.fails("no partition 9", "consume", "lines", "--partition", "9")
	c.fails("partition 9 does not exist", "produce", "lines", "--partition", "9")
	c.fails(`--compression "brotli"`, "produce", "lines", "--compression", "brotli")
	c.fails(`--acks "2"`, "produce", "lines", "--acks", "2")
	c.fails("--max-messages must be positive", "consume", "lines", "--max-messages", "0")
	c.fails(`--offset "first"`, "consume", "lines", "--offset", "first", "--partition", "0")
	c.fails("--offset needs --partition", "consume", "lines", "--offset", "3")
	c.fails("--partition and --partitioner", "produce", "lines", "--partition", "0", "--partitioner", "round-robin")
	c.fails(`--partitioner "random"`, "produce", "lines", "--partitioner", "random")
	c.fails(`--isolation-level "dirty"`, "consume", "lines", "--isolation-level", "dirty")
	c.fails("cannot be used with --group", "consume", "lines", "--group", "g", "--partition", "0")
	c.fails("unknown %q", "consume", "lines", "--format", "%q")
	c.fails("open input", "produce", "lines", "--file", filepath.Join(t.TempDir(), "missing"))
	if r := c.run("novalue\n", "produce", "lines", "--property", "parse.key=true"); r.err == nil ||
		!strings.Contains(r.err.Error(), `line 1: no key separator "\t" found`) {
		t.Fatalf("line without key separator: %v", r.err)
	}
}

func TestConsumeReadCommittedSkipsNothingPlain(t *testing.T) {
	c := startCluster(t, nil)
	c.ok("topic", "create", "rc")
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addr()), kgo.DefaultProduceTopic("rc"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	res := cl.ProduceSync(ctxT(t), &kgo.Record{Value: []byte("x"), Headers: []kgo.RecordHeader{{Key: "h", Value: []byte("1")}}})
	if err := res.FirstErr(); err != nil {
		t.Fatal(err)
	}
	out := c.ok("consume", "rc", "--from-beginning", "--isolation-level", "read_committed", "--max-messages", "1",
		"--property", "print.headers=true", "--property", "print.timestamp=true", "--property", "print.partition=true")
	f := strings.Split(strings.TrimSuffix(out, "\n"), "\t")
	if len(f) != 4 || !strings.HasPrefix(f[0], "CreateTime:") || f[1] != "Partition:0" || f[2] != "h:1" || f[3] != "x" {
		t.Fatalf("read_committed consume: %q", out)
	}
}

func TestRecordFormatters(t *testing.T) {
	r := &kgo.Record{Topic: "t", Partition: 2, Offset: 7, Key: nil, Value: []byte("v"), Timestamp: time.UnixMilli(1234)}
	f, err := newRecordFormatter("", []string{"print.key=true", "key.separator=|", "null.literal=NULL"})
	if err != nil {
		t.Fatal(err)
	}
	if got := string(f(nil, r)); got != "NULL|v\n" {
		t.Errorf("default: %q", got)
	}
	f, _ = newRecordFormatter(`%t\t%p %o %T %%%v %s\\`, nil)
	if got := string(f(nil, r)); got != "t\t2 7 1234 %v v\\" {
		t.Errorf("kcat: %q", got)
	}
	for _, bad := range []string{"%", "xml", "%z"} {
		if _, err := newRecordFormatter(bad, nil); err == nil {
			t.Errorf("format %q accepted", bad)
		}
	}
	if _, err := newRecordFormatter("", []string{"print.everything=true"}); err == nil {
		t.Error("unknown property accepted")
	}
}

func TestLineFormat(t *testing.T) {
	f, err := parseLineFormat([]string{"parse.key=true", "key.separator=::", "null.marker=<null>"})
	if err != nil {
		t.Fatal(err)
	}
	r, err := f.record([]byte("<null>::a::b"), 1)
	if err != nil || r.Key != nil || string(r.Value) != "a::b" {
		t.Fatalf("record %+v %v", r, err)
	}
	if _, err := parseLineFormat([]string{"parse.key"}); err == nil {
		t.Error("property without = accepted")
	}
	if _, err := parseLineFormat([]string{"bogus=1"}); err == nil {
		t.Error("unknown property accepted")
	}
	f, _ = parseLineFormat([]string{"parse.key=true", "ignore.error=true"})
	if r, err := f.record([]byte("only"), 3); err != nil || r.Key != nil || string(r.Value) != "only" {
		t.Fatalf("ignore.error: %+v %v", r, err)
	}
}

func TestProgressLine(t *testing.T) {
	p := newProgress(nil, 1000, false)
	for range 10 {
		p.acked(50)
	}
	if got, want := p.line(2*time.Second), "[##########..........] 10 records, 500 B of 1000 B (50%), 5 records/s, 250 B/s, ETA 2s"; got != want {
		t.Fatalf("progress %q, want %q", got, want)
	}
	if got := humanBytes(3 << 20); got != "3.0 MiB" {
		t.Fatalf("humanBytes %q", got)
	}
}

func TestProduceRoundRobin(t *testing.T) {
	c := startCluster(t, nil)
	c.ok("topic", "create", "rr", "--partitions", "3")
	if r := c.run("a\nb\nc\nd\ne\nf\n", "produce", "rr", "--partitioner", "round-robin"); r.err != nil {
		t.Fatal(r.err)
	}
	for p := range 3 {
		out := c.ok("consume", "rr", "--partition", fmt.Sprint(p), "--offset", "earliest", "--max-messages", "2")
		if n := len(strings.Fields(out)); n != 2 {
			t.Fatalf("partition %d holds %q, want 2 records each", p, out)
		}
	}
}

// TestFetchErrorNamesWhatFailed: a client-level error (no topic, e.g. a
// group join refused by the authorizer) is not printed as partition "-0".
func TestFetchErrorNamesWhatFailed(t *testing.T) {
	base := errors.New("GROUP_AUTHORIZATION_FAILED")
	if got := fetchError("", 0, base).Error(); got != "consume: GROUP_AUTHORIZATION_FAILED" {
		t.Errorf("client error: %q", got)
	}
	if got := fetchError("orders", 2, base).Error(); got != "fetch orders-2: GROUP_AUTHORIZATION_FAILED" {
		t.Errorf("partition error: %q", got)
	}
}
