package cli

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// failsOn runs a command with stdin that must fail with an error
// containing want.
func (c *testCluster) failsOn(stdin, want string, args ...string) {
	c.t.Helper()
	r := c.run(stdin, args...)
	if r.err == nil || !strings.Contains(r.err.Error(), want) {
		c.t.Errorf("gregor %s: error %v, want one containing %q", strings.Join(args, " "), r.err, want)
	}
}

// TestProduceLargeRecords: a record goes as far as the topic allows (a
// 2 MB record to a topic with max.message.bytes=3000000, which franz-go's
// default 1 MB batch limit used to refuse as MESSAGE_TOO_LARGE); a record
// over a limit is refused before it is sent, naming the limit and whose it
// is.
func TestProduceLargeRecords(t *testing.T) {
	c := startCluster(t, map[string]string{"auto.create.topics.enable": "false"})
	c.ok("topic", "create", "big", "--partitions", "1", "--config", "max.message.bytes=3000000")
	c.ok("topic", "create", "small", "--partitions", "1")
	value := strings.Repeat("x", 2_000_000)
	large := value + "\n"

	if r := c.run(large+"after\n", "produce", "big"); r.err != nil {
		t.Fatalf("produce 2 MB to a 3 MB topic: %v", r.err)
	}
	if out := c.ok("consume", "big", "--from-beginning", "--max-messages", "2"); out != large+"after\n" {
		t.Fatalf("consumed %d bytes, want the 2 MB record and one more", len(out))
	}

	// Many small records are batched within the topic's limit.
	var many strings.Builder
	for range 40_000 {
		many.WriteString(strings.Repeat("y", 99) + "\n")
	}
	if r := c.run(many.String(), "produce", "small", "--linger-ms", "200"); r.err != nil {
		t.Fatalf("produce 4 MB of small records: %v", r.err)
	}

	size := strconv.FormatInt(serializedSizeBound(&kgo.Record{Value: []byte(value)}), 10)
	c.failsOn(large, "line 1: the record is "+size+" bytes when serialized, larger than topic small's max.message.bytes=1048588; "+
		"the broker would refuse it: raise it with `gregor topic alter small --config max.message.bytes=N`", "produce", "small")
	clientLimit := "line 1: the record is " + size + " bytes when serialized, larger than max.request.size=1000000; " +
		"a limit of this client: raise it with --max-request-size N or --producer-property max.request.size=N"
	c.failsOn(large, clientLimit, "produce", "big", "--max-request-size", "1000000")
	c.failsOn(large, clientLimit, "produce", "big", "--producer-property", "max.request.size=1000000")
	// The flag wins over the property.
	c.failsOn(large, clientLimit, "produce", "big", "--producer-property", "max.request.size=5000000", "--max-request-size", "1000000")
	// A client limit above the topic's: the topic's still bounds.
	c.failsOn(large, "larger than topic small's max.message.bytes=1048588", "produce", "small", "--max-request-size", "5000000")
	c.failsOn(large, "larger than buffer.memory=1000000; a limit of this client", "produce", "big", "--producer-property", "buffer.memory=1000000")
	c.fails(`--max-request-size "big": want an integer from 512 to 1073737728`, "produce", "big", "--max-request-size", "big")
}

// TestClientProperties: Kafka's producer and consumer configs, from
// --command-config, --producer-property / --consumer-property and the
// flags that stand for them, merged as Kafka's tools merge them.
func TestClientProperties(t *testing.T) {
	c := startCluster(t, nil)
	c.ok("topic", "create", "props", "--partitions", "1")
	if r := c.run("a\nb\nc\n", "produce", "props", "--producer-property", "acks=1", "--producer-property", "linger.ms=0",
		"--producer-property", "client.id=loader", "--producer-property", "enable.idempotence=false"); r.err != nil || r.errOut != "" {
		t.Fatalf("produce with properties: %v %q", r.err, r.errOut)
	}

	// group.id and auto.offset.reset as properties: the group starts at
	// the beginning and commits what was printed.
	r := c.run("", "consume", "props", "--max-messages", "3", "--consumer-property", "group.id=g1",
		"--consumer-property", "auto.offset.reset=earliest")
	if r.err != nil || r.out != "a\nb\nc\n" {
		t.Fatalf("consume as group g1: %v %q", r.err, r.out)
	}
	if out := c.ok("group", "describe", "g1"); row(t, out, "g1", "props", "0")[3] != "3" {
		t.Errorf("group g1 did not commit offset 3:\n%s", out)
	}
	// enable.auto.commit=false: the group reads but commits nothing.
	r = c.run("", "consume", "props", "--group", "g2", "--from-beginning", "--max-messages", "3",
		"--consumer-property", "enable.auto.commit=false")
	if r.err != nil || r.out != "a\nb\nc\n" {
		t.Fatalf("consume without commits: %v %q", r.err, r.out)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if offsets, err := kadm.NewClient(cl).FetchOffsets(ctxT(t), "g2"); err != nil || len(offsets) != 0 {
		t.Errorf("group g2 committed offsets %v (%v)", offsets, err)
	}

	// A flag given wins over the property; a flag's default does not.
	c.ok("consume", "props", "--from-beginning", "--max-messages", "1", "--isolation-level", "read_committed",
		"--consumer-property", "isolation.level=dirty")
	c.fails(`--consumer-property isolation.level="dirty": want read_uncommitted or read_committed`,
		"consume", "props", "--consumer-property", "isolation.level=dirty")
	c.fails(`--acks "2": want all, -1, 1 or 0`, "produce", "props", "--producer-property", "acks=1", "--acks", "2")
	c.fails(`--producer-property acks="2": want all, -1, 1 or 0`, "produce", "props", "--producer-property", "acks=2")
	c.fails("--from-beginning and auto.offset.reset=latest cannot be used together",
		"consume", "props", "--from-beginning", "--consumer-property", "auto.offset.reset=latest")
	c.fails(`--producer-property "linger.ms": want key=value`, "produce", "props", "--producer-property", "linger.ms")
	c.fails(`--producer-property linger.ms="-1": want an integer from 0 to 60000 (milliseconds)`,
		"produce", "props", "--producer-property", "linger.ms=-1")
	c.fails("enable.idempotence=true needs acks=all, not acks=1", "produce", "props", "--acks", "1",
		"--producer-property", "enable.idempotence=true")

	// The file, the property over it, the flag over both.
	path := filepath.Join(t.TempDir(), "client.properties")
	if err := os.WriteFile(path, []byte("acks=2\nlinger.ms=x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c.fails(`--command-config `+path+`: acks "2": want all, -1, 1 or 0`, "produce", "props", "--command-config", path,
		"--producer-property", "linger.ms=1")
	if r := c.run("d\n", "produce", "props", "--command-config", path, "--producer-property", "acks=all", "--linger-ms", "1"); r.err != nil {
		t.Fatalf("property and flag over the file: %v", r.err)
	}

	// bootstrap.servers in the file stands in for --bootstrap-server, and
	// client.id applies to an admin command's client too.
	if err := os.WriteFile(path, []byte("bootstrap.servers="+c.addr()+"\nclient.id=ops\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := runCommand(t, "", "topic", "list", "--exclude-internal", "--command-config", path, "--timeout", "10s"); r.err != nil || r.out != "props\n" || r.errOut != "" {
		t.Fatalf("bootstrap.servers from --command-config: %v %q %q", r.err, r.out, r.errOut)
	}

	// A producer's config given to a consumer, as Kafka's consumer says.
	r = c.run("", "consume", "props", "--from-beginning", "--max-messages", "1", "--consumer-property", "acks=all")
	if r.err != nil || !strings.Contains(r.errOut, `warning: --consumer-property: the configuration "acks" was supplied but isn't a known config; ignored`) {
		t.Fatalf("producer config to a consumer: %v %q", r.err, r.errOut)
	}
}

// TestSerializedSizeBound: the bound is never below the size franz-go
// counts for a batch of one record, which is what keeps its own refusal
// from happening before ours.
func TestSerializedSizeBound(t *testing.T) {
	for _, r := range []*kgo.Record{
		{},
		{Key: []byte("k"), Value: make([]byte, 300)},
		{Value: make([]byte, 2_000_000), Headers: []kgo.RecordHeader{{Key: "h", Value: make([]byte, 200)}, {Key: "", Value: nil}}},
	} {
		l := sizeLimits{{bytes: serializedSizeBound(r), what: "x", batch: true}}
		if err := l.check(r); err != nil {
			t.Errorf("a record at the bound is refused: %v", err)
		}
		l[0].bytes--
		if err := l.check(r); err == nil {
			t.Errorf("a record over the bound is accepted")
		}
		// The record batch v2 encoding: the 61-byte header, then the record
		// with its varint length (franz-go adds at most 9 bytes of framing).
		actual := 61 + recordWireLength(r) + 9
		if bound := serializedSizeBound(r); bound < int64(actual) {
			t.Errorf("bound %d below the encoded size %d", bound, actual)
		}
	}
}

// recordWireLength encodes a record as in a v2 batch, with its length.
func recordWireLength(r *kgo.Record) int {
	varint := func(n int) int {
		u := uint32(n<<1) ^ uint32(n>>31)
		l := 1
		for u >= 0x80 {
			u >>= 7
			l++
		}
		return l
	}
	body := 1 + 1 + 1 + varint(len(r.Key)) + len(r.Key) + varint(len(r.Value)) + len(r.Value) + varint(len(r.Headers))
	for _, h := range r.Headers {
		body += varint(len(h.Key)) + len(h.Key) + varint(len(h.Value)) + len(h.Value)
	}
	return varint(body) + body
}
