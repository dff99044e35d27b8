//go:build e2e

package test

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestCompactionKill9 kills the broker with SIGKILL while the log cleaner is
// rewriting a compacted partition (small segments, a short cleaner backoff,
// thousands of keys), several times. After each restart the log must open and
// a consumer from the beginning must find the newest value of every key (or
// no value after a tombstone); in the end, below the cleaner's checkpoint,
// every key appears at most once.
func TestCompactionKill9(t *testing.T) {
	b := startBroker(t, "log.cleaner.backoff.ms=10", "log.cleaner.dedupe.buffer.size=33554432")
	const topic, keys, rounds = "compacted", 3000, 4
	cl := newKgo(t, b, kgo.DefaultProduceTopic(topic), kgo.ProducerBatchCompression(kgo.ZstdCompression()))
	createTopic(t, cl, topic, 1, map[string]*string{
		"cleanup.policy":            ptr("compact"),
		"segment.bytes":             ptr("1048576"),
		"min.cleanable.dirty.ratio": ptr("0.01"),
		"delete.retention.ms":       ptr("0"),
	})
	partitionDir := filepath.Join(b.dataDir, topic+"-0")

	latest := map[string]string{} // "" is a tombstone
	hits := 0
	for round := 0; round < rounds; round++ {
		produceGeneration(t, b, topic, "key-", round, keys, latest)
		// Wait for the cleaner to be writing a .cleaned (or swapping a
		// .swap) segment, then kill.
		if waitForTempSegment(partitionDir, 5*time.Second) {
			hits++
		}
		b.kill9()
		b.start()
		verifyLatest(t, b, topic, latest)
	}
	t.Logf("%d of %d kills hit a clean in progress", hits, rounds)
	if hits == 0 {
		t.Errorf("no kill hit a clean in progress")
	}

	// A last generation, pushed out of the active segment by unrelated
	// keys; once the cleaner has passed it, every key appears once below
	// the cleaner's checkpoint, with its newest value.
	produceGeneration(t, b, topic, "key-", rounds, keys, latest)
	genEnd := endOffsets(t, cl, topic)[0]
	filler := map[string]string{}
	for i := 0; i < 2; i++ {
		produceGeneration(t, b, topic, fmt.Sprint("filler-", i, "-"), rounds, 3000, filler)
	}
	deadline := time.Now().Add(60 * time.Second)
	for cleanerCheckpoint(t, b.dataDir, topic) < genEnd {
		if time.Now().After(deadline) {
			t.Fatalf("cleaner checkpoint %d has not passed offset %d within 60s:\n%s",
				cleanerCheckpoint(t, b.dataDir, topic), genEnd, b.log())
		}
		time.Sleep(100 * time.Millisecond)
	}
	checkpoint := cleanerCheckpoint(t, b.dataDir, topic)
	recs := verifyLatest(t, b, topic, latest)
	seen := map[string]int64{}
	for _, r := range recs {
		if r.Offset >= checkpoint {
			break
		}
		if other, dup := seen[string(r.Key)]; dup {
			t.Fatalf("%s at offsets %d and %d, below the cleaner checkpoint %d", r.Key, other, r.Offset, checkpoint)
		}
		seen[string(r.Key)] = r.Offset
		if want, ok := latest[string(r.Key)]; ok && want != "" && string(r.Value) != want {
			t.Fatalf("%s at %d reads %.20q, want %.20q", r.Key, r.Offset, r.Value, want)
		}
	}
	t.Logf("cleaned up to offset %d: %d records below it", checkpoint, len(seen))
}

func ptr(s string) *string { return &s }

// produceGeneration writes one value for every key (a tombstone for a tenth
// of them), acks=all, and records what each key should read as.
func produceGeneration(t *testing.T, b *broker, topic, prefix string, gen, keys int, latest map[string]string) {
	t.Helper()
	cl := newKgo(t, b, kgo.DefaultProduceTopic(topic), kgo.ProducerBatchCompression(kgo.ZstdCompression()))
	var recs []*kgo.Record
	for k := 0; k < keys; k++ {
		key := fmt.Sprint(prefix, k)
		r := &kgo.Record{Key: []byte(key)}
		if k%10 != gen%10 {
			pad := make([]byte, 200)
			rand.Read(pad)
			r.Value = []byte(fmt.Sprintf("gen-%d-%s", gen, hex.EncodeToString(pad)))
		}
		recs = append(recs, r)
	}
	if err := cl.ProduceSync(ctxT(t, 60*time.Second), recs...).FirstErr(); err != nil {
		t.Fatalf("produce generation %d: %v\n%s", gen, err, b.log())
	}
	for _, r := range recs {
		latest[string(r.Key)] = string(r.Value)
	}
	cl.Close()
}

// waitForTempSegment polls dir for a .cleaned or .swap file.
func waitForTempSegment(dir string, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), ".cleaned") || strings.HasSuffix(e.Name(), ".swap") {
				return true
			}
		}
		time.Sleep(200 * time.Microsecond)
	}
	return false
}

// verifyLatest writes a sentinel (so the last offset holds a record), reads
// the partition from the beginning and checks that the last record of every
// key is its newest value, a tombstone being either there or gone.
func verifyLatest(t *testing.T, b *broker, topic string, latest map[string]string) []*kgo.Record {
	t.Helper()
	cl := newKgo(t, b, kgo.DefaultProduceTopic(topic))
	if err := cl.ProduceSync(ctxT(t, 30*time.Second), &kgo.Record{Key: []byte("sentinel"), Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatalf("produce after restart: %v\n%s", err, b.log())
	}
	recs := consumeAll(t, b, topic, endOffsets(t, cl, topic))[0]
	last := map[string]*kgo.Record{}
	prev := int64(-1)
	for _, r := range recs {
		if r.Offset <= prev {
			t.Fatalf("offset %d after %d", r.Offset, prev)
		}
		prev = r.Offset
		last[string(r.Key)] = r
	}
	for key, want := range latest {
		r, ok := last[key]
		switch {
		case want == "" && ok && r.Value != nil:
			t.Fatalf("%s: deleted, but reads %.20q at offset %d", key, r.Value, r.Offset)
		case want != "" && !ok:
			t.Fatalf("%s: newest value lost", key)
		case want != "" && string(r.Value) != want:
			t.Fatalf("%s: reads %.20q at offset %d, want %.20q", key, r.Value, r.Offset, want)
		}
	}
	return recs
}

// cleanerCheckpoint reads the partition's entry of cleaner-offset-checkpoint.
func cleanerCheckpoint(t *testing.T, dataDir, topic string) int64 {
	t.Helper()
	f, err := os.Open(filepath.Join(dataDir, "cleaner-offset-checkpoint"))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 3 && fields[0] == topic && fields[1] == "0" {
			off, _ := strconv.ParseInt(fields[2], 10, 64)
			return off
		}
	}
	return 0
}
