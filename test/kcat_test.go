//go:build e2e

package test

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestKcat drives one broker with kcat (librdkafka): keyed produce with
// every codec, consume to the end, metadata listing, and offsets by
// timestamp.
func TestKcat(t *testing.T) {
	if _, err := exec.LookPath("kcat"); err != nil {
		t.Skip("kcat not installed")
	}
	t.Parallel()
	b := startBroker(t)
	cl := newKgo(t, b)
	for _, codec := range codecs {
		t.Run(codec, func(t *testing.T) {
			t.Parallel()
			single := topicName("kcat-single", codec)
			multi := topicName("kcat-multi", codec)
			createTopic(t, cl, single, 1, nil)
			createTopic(t, cl, multi, 3, nil)
			t.Run("single-partition", func(t *testing.T) { kcatSinglePartition(t, b, single, codec) })
			t.Run("multi-partition", func(t *testing.T) { kcatMultiPartition(t, b, multi, codec) })
			t.Run("stored-codec", func(t *testing.T) {
				skipIfLibrdkafkaDropsCodec(t, codec)
				checkStoredCodec(t, b, single, 0, codec)
			})
		})
	}
	t.Run("metadata", func(t *testing.T) { kcatMetadata(t, b) })
	t.Run("many-partitions", func(t *testing.T) {
		// One consumer over 64 partitions. librdkafka does not ask for
		// fetch sessions (KIP-227): its full fetches, beside the
		// sessions of other clients, must bring every record once, in
		// order per partition.
		t.Parallel()
		topic := "kcat-many"
		createTopic(t, cl, topic, 64, nil)
		kcatMultiPartition(t, b, topic, "none")
	})
}

// skipIfLibrdkafkaDropsCodec skips the check that librdkafka's batches are
// stored compressed for lz4: librdkafka enables lz4 only when the broker
// advertises FindCoordinator (its "LZ4" feature test), which Gregor serves
// once consumer groups exist. (gzip and snappy need Produce advertised from
// v0, librdkafka issue 4956; Gregor does that, as Kafka 4.0 after
// KAFKA-18659.)
func skipIfLibrdkafkaDropsCodec(t *testing.T, codec string) {
	if codec == "lz4" {
		t.Skip("librdkafka sends lz4 uncompressed until the broker advertises FindCoordinator (consumer groups)")
	}
}

// kcatProduce is the keyed produce command line (librdkafka pipelines
// produce requests by default; their order must hold, see
// TestPipelinedProduceOrder).
func kcatProduce(topic, codec string) []string {
	return []string{"-P", "-t", topic, "-z", codec, "-K:"}
}

func kcat(t *testing.T, b *broker, stdin string, args ...string) string {
	t.Helper()
	out, err := run(t, 60*time.Second, stdin, "kcat", append([]string{"-b", b.addr()}, args...)...)
	if err != nil {
		t.Fatalf("kcat %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// kcatLines builds n "key:value" lines; the values are long and repetitive
// so that librdkafka keeps them compressed (it sends a batch uncompressed
// when compression does not make it smaller).
func kcatLines(from, n int, tag string) (input string, want []string) {
	var sb strings.Builder
	for i := from; i < from+n; i++ {
		k := fmt.Sprintf("key%04d", i)
		v := fmt.Sprintf("%s-%04d-%s", tag, i, strings.Repeat("abcdefgh", 8))
		fmt.Fprintf(&sb, "%s:%s\n", k, v)
		want = append(want, k+"="+v)
	}
	return sb.String(), want
}

// kcatSinglePartition produces in two runs (two distinct timestamp ranges),
// reads everything back in order, and checks -Q against the stored
// timestamps.
func kcatSinglePartition(t *testing.T, b *broker, topic, codec string) {
	in1, want1 := kcatLines(0, 150, topic)
	in2, want2 := kcatLines(150, 150, topic)
	kcat(t, b, in1, kcatProduce(topic, codec)...)
	kcat(t, b, in2, kcatProduce(topic, codec)...)
	want := append(want1, want2...)

	out := kcat(t, b, "", "-C", "-t", topic, "-e", "-q", "-f", "%k=%s\n")
	got := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("consumed %d lines, want %d; first difference at %s", len(got), len(want), firstDiff(got, want))
	}

	// -Q: the first offset whose timestamp is >= the query, from the
	// timestamps the broker stored.
	out = kcat(t, b, "", "-C", "-t", topic, "-e", "-q", "-f", "%o %T\n")
	var offsets, stamps []int64
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var o, ts int64
		if _, err := fmt.Sscanf(line, "%d %d", &o, &ts); err != nil {
			t.Fatalf("parse %q: %v", line, err)
		}
		offsets, stamps = append(offsets, o), append(stamps, ts)
	}
	expect := func(q int64) int64 {
		for i, ts := range stamps {
			if ts >= q {
				return offsets[i]
			}
		}
		return -1
	}
	queries := []int64{stamps[0], stamps[0] + 1, stamps[150], stamps[150] - 1, stamps[len(stamps)-1], stamps[len(stamps)-1] + 1, 0}
	for _, q := range queries {
		out := kcat(t, b, "", "-Q", "-t", fmt.Sprintf("%s:0:%d", topic, q))
		want := fmt.Sprintf("%s [0] offset %d", topic, expect(q))
		if strings.TrimSpace(out) != want {
			t.Errorf("kcat -Q at %d: got %q, want %q", q, strings.TrimSpace(out), want)
		}
	}
	for q, w := range map[int64]int64{-1: 300, -2: 0} {
		out := kcat(t, b, "", "-Q", "-t", fmt.Sprintf("%s:0:%d", topic, q))
		if want := fmt.Sprintf("%s [0] offset %d", topic, w); strings.TrimSpace(out) != want {
			t.Errorf("kcat -Q at %d: got %q, want %q", q, strings.TrimSpace(out), want)
		}
	}
}

// kcatMultiPartition lets librdkafka's partitioner spread the keys and
// checks every line arrives exactly once, in produce order per partition,
// at contiguous offsets.
func kcatMultiPartition(t *testing.T, b *broker, topic, codec string) {
	in, want := kcatLines(0, 600, topic)
	kcat(t, b, in, kcatProduce(topic, codec)...)
	out := kcat(t, b, "", "-C", "-t", topic, "-e", "-q", "-f", "%p %o %k=%s\n")
	order := map[string]int{}
	for i, w := range want {
		order[w] = i
	}
	seen := map[string]bool{}
	lastIndex := map[int]int{}
	nextOffset := map[int]int64{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var p int
		var o int64
		var kv string
		if _, err := fmt.Sscanf(line, "%d %d %s", &p, &o, &kv); err != nil {
			t.Fatalf("parse %q: %v", line, err)
		}
		i, ok := order[kv]
		switch {
		case !ok:
			t.Fatalf("unexpected record %q", line)
		case seen[kv]:
			t.Fatalf("record %q seen twice", line)
		case o != nextOffset[p]:
			t.Fatalf("partition %d: offset %d, want %d", p, o, nextOffset[p])
		}
		if last, ok := lastIndex[p]; ok && i < last {
			t.Fatalf("partition %d: %q came after line %d", p, kv, last)
		}
		seen[kv], lastIndex[p], nextOffset[p] = true, i, o+1
	}
	if len(seen) != len(want) {
		t.Fatalf("consumed %d distinct records, want %d", len(seen), len(want))
	}
	if len(nextOffset) < 2 {
		t.Errorf("all records in %d partition(s); want the partitioner to spread them", len(nextOffset))
	}
	for p, n := range nextOffset {
		out := kcat(t, b, "", "-Q", "-t", fmt.Sprintf("%s:%d:-1", topic, p))
		if want := fmt.Sprintf("%s [%d] offset %d", topic, p, n); strings.TrimSpace(out) != want {
			t.Errorf("kcat -Q end offset: got %q, want %q", strings.TrimSpace(out), want)
		}
	}
}

// kcatMetadata checks kcat -L (plain and JSON) lists the broker and the
// topics with their partitions.
func kcatMetadata(t *testing.T, b *broker) {
	out := kcat(t, b, "", "-L")
	if want := fmt.Sprintf("broker 1 at %s", b.addr()); !strings.Contains(out, want) {
		t.Errorf("kcat -L does not list %q:\n%s", want, out)
	}
	topic := "kcat-metadata"
	createTopic(t, newKgo(t, b), topic, 4, nil)
	out = kcat(t, b, "", "-L", "-J", "-t", topic)
	var md struct {
		ControllerID int `json:"controllerid"`
		Brokers      []struct {
			ID   int    `json:"id"`
			Name string `json:"name"`
		} `json:"brokers"`
		Topics []struct {
			Topic      string `json:"topic"`
			Error      string `json:"error"`
			Partitions []struct {
				Partition int `json:"partition"`
				Leader    int `json:"leader"`
			} `json:"partitions"`
		} `json:"topics"`
	}
	if err := json.Unmarshal([]byte(out), &md); err != nil {
		t.Fatalf("kcat -L -J: %v\n%s", err, out)
	}
	if len(md.Brokers) != 1 || md.Brokers[0].ID != 1 || md.Brokers[0].Name != b.addr() || md.ControllerID != 1 {
		t.Errorf("kcat -L -J brokers: %s", out)
	}
	if len(md.Topics) != 1 || md.Topics[0].Topic != topic || md.Topics[0].Error != "" || len(md.Topics[0].Partitions) != 4 {
		t.Fatalf("kcat -L -J topic: %s", out)
	}
	var parts []int
	for _, p := range md.Topics[0].Partitions {
		if p.Leader != 1 {
			t.Errorf("partition %d leader %d, want 1", p.Partition, p.Leader)
		}
		parts = append(parts, p.Partition)
	}
	sort.Ints(parts)
	if fmt.Sprint(parts) != "[0 1 2 3]" {
		t.Errorf("partitions %v", parts)
	}
}

func firstDiff(a, b []string) string {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return strconv.Itoa(i) + ": got " + a[i] + ", want " + b[i]
		}
	}
	return strconv.Itoa(min(len(a), len(b)))
}
