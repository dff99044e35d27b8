package cli

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/auth/sasl"
	"gregor/internal/metadata"
	"gregor/internal/raft"
	"gregor/internal/record"
)

const firstSegment = "00000000000000000000"

// segmentFromServer produces ten records to a one-partition topic, one
// batch each (the fourth gzip-compressed), on a node that indexes every
// batch, and returns the node's log dir.
func segmentFromServer(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	c := startCluster(t, map[string]string{"log.dirs": dir, "log.index.interval.bytes": "1"})
	c.ok("topic", "create", "dump", "--partitions", "1", "--replication-factor", "1")
	for i := range 10 {
		codec := kgo.NoCompression()
		if i == 3 {
			codec = kgo.GzipCompression()
		}
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.addr()), kgo.DefaultProduceTopic("dump"), kgo.ProducerBatchCompression(codec))
		if err != nil {
			t.Fatal(err)
		}
		value := fmt.Sprintf("value %d", i)
		if i == 3 {
			value += strings.Repeat("x", 300) // big enough that franz-go compresses it
		}
		rec := &kgo.Record{Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte(value),
			Headers: []kgo.RecordHeader{{Key: "h", Value: []byte("v")}}}
		if i == 5 {
			rec.Key, rec.Headers = nil, nil
		}
		err = cl.ProduceSync(ctxT(t), rec).FirstErr()
		cl.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestLogDumpServerSegment(t *testing.T) {
	dir := segmentFromServer(t)
	seg := filepath.Join(dir, "dump-0", firstSegment)

	// Shallow: one line per batch, all valid.
	r := runCommand(t, "", "log", "dump", seg+".log")
	if r.err != nil {
		t.Fatalf("dump: %v\n%s", r.err, r.errOut)
	}
	batches := batchLines(r.out)
	if len(batches) != 10 || !strings.Contains(r.out, "Log starting offset: 0\n") {
		t.Fatalf("want 10 batches:\n%s", r.out)
	}
	for i, b := range batches {
		if b["baseOffset"] != strconv.Itoa(i) || b["count"] != "1" || b["isvalid"] != "true" || b["magic"] != "2" ||
			b["isControl"] != "false" || b["CreateTime"] == "" || b["producerId"] == "-1" {
			t.Fatalf("batch %d: %v", i, b)
		}
		if want := map[bool]string{true: "gzip", false: "none"}[i == 3]; b["compresscodec"] != want {
			t.Fatalf("batch %d codec %q, want %s", i, b["compresscodec"], want)
		}
		if i > 0 {
			prevEnd := atoi(t, batches[i-1]["position"]) + atoi(t, batches[i-1]["size"])
			if atoi(t, b["position"]) != prevEnd {
				t.Fatalf("batch %d at %s, previous ends at %d", i, b["position"], prevEnd)
			}
		}
	}
	if strings.Contains(r.out, "| offset") {
		t.Fatal("records printed without --deep-iteration")
	}

	// Deep with data: keys, headers and values.
	r = runCommand(t, "", "log", "dump", "--print-data-log", seg+".log")
	if r.err != nil {
		t.Fatalf("dump: %v\n%s", r.err, r.errOut)
	}
	for _, want := range []string{
		"| offset: 0 CreateTime: ",
		"keySize: 2 valueSize: 7 sequence: 0 headerKeys: [h] key: k0 headers: [h=v] payload: value 0\n",
		"keySize: 2 valueSize: 307 sequence: 0 headerKeys: [h] key: k3 headers: [h=v] payload: value 3xxx",
		"keySize: -1 valueSize: 7 sequence: 0 headerKeys: [] payload: value 5\n",
	} {
		if !strings.Contains(r.out, want) {
			t.Fatalf("no %q in:\n%s", want, r.out)
		}
	}

	// Offset and time index: entries that point at their batches.
	r = runCommand(t, "", "log", "dump", seg+".index", seg+".timeindex")
	if r.err != nil {
		t.Fatalf("dump index: %v\n%s%s", r.err, r.out, r.errOut)
	}
	positions := map[string]string{}
	for _, b := range batches {
		positions[b["lastOffset"]] = b["position"]
	}
	entries := regexp.MustCompile(`(?m)^offset: (\d+) position: (\d+)$`).FindAllStringSubmatch(r.out, -1)
	if len(entries) < 5 {
		t.Fatalf("want an index entry per batch after the first:\n%s", r.out)
	}
	for _, e := range entries {
		if positions[e[1]] != e[2] {
			t.Fatalf("index entry %s -> %s, batch is at %s", e[1], e[2], positions[e[1]])
		}
	}
	if n := len(regexp.MustCompile(`(?m)^timestamp: \d+ offset: \d+$`).FindAllString(r.out, -1)); n == 0 {
		t.Fatalf("no time index entries:\n%s", r.out)
	}
	r = runCommand(t, "", "log", "dump", "--index-sanity-check", seg+".index", seg+".timeindex")
	if r.err != nil || strings.Count(r.out, "passed sanity check.") != 2 {
		t.Fatalf("sanity check: %v\n%s%s", r.err, r.out, r.errOut)
	}
}

func TestLogDumpClusterMetadata(t *testing.T) {
	dir := segmentFromServer(t)
	r := runCommand(t, "", "log", "dump", "--cluster-metadata-decoder",
		filepath.Join(dir, "__cluster_metadata-0", firstSegment+".log"))
	if r.err != nil {
		t.Fatalf("dump: %v\n%s", r.err, r.errOut)
	}
	for _, want := range []string{
		"isControl: true",
		"LeaderChange version: 0 leaderId: 1 voters: [1] grantingVoters: [1]",
		"payload: type: TopicRecord version: 0 data: {Name:dump TopicID:",
		"payload: type: PartitionRecord",
		"payload: type: RegisterBrokerRecord",
	} {
		if !strings.Contains(r.out, want) {
			t.Fatalf("no %q in:\n%s", want, r.out)
		}
	}
}

// build builds one batch or fails the test.
func build(t *testing.T, opts record.BuilderOptions, recs ...[3][]byte) []byte {
	t.Helper()
	if opts.ProducerID == 0 {
		opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence = record.NoProducerID, record.NoProducerEpoch, record.NoSequence
	}
	b := record.NewBuilder(opts)
	for _, r := range recs {
		b.Append(1700000000000, r[0], r[1], nil)
	}
	raw, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func controlKey(typ uint16) []byte { return binary.BigEndian.AppendUint16([]byte{0, 0}, typ) }

func TestLogDumpControlRecordsAndSnapshot(t *testing.T) {
	dir := t.TempDir()
	// A snapshot as KRaft writes one: header, metadata records, footer.
	header := binary.BigEndian.AppendUint16(nil, 0)
	header = binary.BigEndian.AppendUint64(header, 1700000000123)
	header = append(header, 0) // no tagged fields
	topic := metadata.Encode(&metadata.TopicRecord{Name: "snap", TopicID: [16]byte{1}})
	var snap []byte
	snap = append(snap, build(t, record.BuilderOptions{Control: true, PartitionLeaderEpoch: 3}, [3][]byte{controlKey(controlSnapshotHeader), header})...)
	snap = append(snap, build(t, record.BuilderOptions{BaseOffset: 1, PartitionLeaderEpoch: 3}, [3][]byte{nil, topic}, [3][]byte{nil, []byte{1, 99, 0}})...)
	snap = append(snap, build(t, record.BuilderOptions{BaseOffset: 3, Control: true, PartitionLeaderEpoch: 3}, [3][]byte{controlKey(controlSnapshotFooter), {0, 0, 0}})...)
	snapPath := filepath.Join(dir, "00000000000000000042-0000000003.checkpoint")
	if err := os.WriteFile(snapPath, snap, 0o644); err != nil {
		t.Fatal(err)
	}
	// Transaction markers in a segment.
	commit := (&kmsg.EndTxnMarker{CoordinatorEpoch: 7}).AppendTo(nil)
	var seg []byte
	seg = append(seg, build(t, record.BuilderOptions{ProducerID: 9, Transactional: true}, [3][]byte{[]byte("k"), []byte("v")})...)
	seg = append(seg, build(t, record.BuilderOptions{BaseOffset: 1, ProducerID: 9, Transactional: true, Control: true}, [3][]byte{controlKey(controlCommit), commit})...)
	segPath := filepath.Join(dir, firstSegment+".log")
	if err := os.WriteFile(segPath, seg, 0o644); err != nil {
		t.Fatal(err)
	}

	r := runCommand(t, "", "log", "dump", "--cluster-metadata-decoder", snapPath)
	for _, want := range []string{
		"Snapshot end offset: 42, epoch: 3\n",
		"SnapshotHeader version: 0 lastContainedLogTimestamp: 1700000000123",
		"payload: type: TopicRecord version: 0 data: {Name:snap TopicID:AQAAAAAAAAAAAAAAAAAAAA}",
		"payload: Error at 2, skipping.",
		"SnapshotFooter version: 0",
		"partitionLeaderEpoch: 3",
	} {
		if !strings.Contains(r.out, want) {
			t.Fatalf("no %q in:\n%s", want, r.out)
		}
	}
	// Record type 99 is unknown, not corrupt: shown, not a failure.
	if r.err != nil {
		t.Fatalf("dump: %v\n%s", r.err, r.errOut)
	}

	r = runCommand(t, "", "log", "dump", "--deep-iteration", segPath)
	if r.err != nil {
		t.Fatalf("dump: %v\n%s", r.err, r.errOut)
	}
	for _, want := range []string{"isTransactional: true isControl: true", "endTxnMarker: COMMIT coordinatorEpoch: 7", "producerId: 9"} {
		if !strings.Contains(r.out, want) {
			t.Fatalf("no %q in:\n%s", want, r.out)
		}
	}
}

// TestLogDumpBootstrapCheckpoint: `storage format`'s bootstrap file dumps
// as a snapshot, SCRAM keys redacted.
func TestLogDumpBootstrapCheckpoint(t *testing.T) {
	dir := t.TempDir()
	cred := metadata.NewUserScramCredentialRecord("alice", 1, sasl.ScramCredential{Salt: []byte("pepper"), StoredKey: []byte("stored-key"), ServerKey: []byte("server-key"), Iterations: 4096})
	if err := raft.WriteBootstrapCheckpoint(dir, []metadata.Record{cred}); err != nil {
		t.Fatal(err)
	}
	r := runCommand(t, "", "log", "dump", "--cluster-metadata-decoder", filepath.Join(dir, raft.BootstrapCheckpointName))
	if r.err != nil {
		t.Fatalf("dump: %v\n%s", r.err, r.errOut)
	}
	for _, want := range []string{"KRaft bootstrap snapshot\n",
		"payload: type: UserScramCredentialRecord version: 0 data: {Name:alice Mechanism:1 Salt:[redacted] StoredKey:[redacted] ServerKey:[redacted] Iterations:4096}"} {
		if !strings.Contains(r.out, want) {
			t.Fatalf("no %q in:\n%s", want, r.out)
		}
	}
	for _, secret := range []string{"pepper", "stored-key", "server-key", "[112 101"} {
		if strings.Contains(r.out, secret) {
			t.Fatalf("the dump shows %q:\n%s", secret, r.out)
		}
	}
}

func TestLogDumpCorruption(t *testing.T) {
	src := segmentFromServer(t)
	dir := t.TempDir()
	copyFile := func(name string) string {
		b, err := os.ReadFile(filepath.Join(src, "dump-0", name))
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	logPath := copyFile(firstSegment + ".log")
	indexPath := copyFile(firstSegment + ".index")
	good := runCommand(t, "", "log", "dump", logPath)
	batches := batchLines(good.out)

	// Flip a value byte of batch 2 and append half a batch header.
	b, _ := os.ReadFile(logPath)
	pos2 := atoi(t, batches[2]["position"])
	b[pos2+atoi(t, batches[2]["size"])-3] ^= 0xff
	b = append(b, make([]byte, 30)...)
	if err := os.WriteFile(logPath, b, 0o644); err != nil {
		t.Fatal(err)
	}
	// Point the index entry of offset 5 at batch 4.
	idx, _ := os.ReadFile(indexPath)
	for i := 0; i+8 <= len(idx); i += 8 {
		if binary.BigEndian.Uint32(idx[i:]) == 5 {
			binary.BigEndian.PutUint32(idx[i+4:], uint32(atoi(t, batches[4]["position"])))
		}
	}
	if err := os.WriteFile(indexPath, idx, 0o644); err != nil {
		t.Fatal(err)
	}

	r := runCommand(t, "", "log", "dump", "--deep-iteration", logPath, indexPath)
	if r.err == nil || !strings.Contains(r.err.Error(), "problem(s) found") {
		t.Fatalf("error %v, want problems found", r.err)
	}
	for _, want := range []string{
		fmt.Sprintf("position %d: batch at offset 2 is corrupt (stored crc = ", pos2),
		"30 invalid bytes at the end",
		"Mismatches in :" + indexPath + "\n  Index offset: 5, log offset: 4\n",
	} {
		if !strings.Contains(r.errOut, want) {
			t.Fatalf("no %q in stderr:\n%s", want, r.errOut)
		}
	}
	// The dump goes on after the bad batch.
	if got := batchLines(r.out); len(got) != 10 || got[2]["isvalid"] != "false" || got[9]["isvalid"] != "true" {
		t.Fatalf("dump did not go on past the corrupt batch:\n%s", r.out)
	}
	if !strings.Contains(r.out, "| offset: 9 ") || strings.Contains(r.out, "| offset: 2 ") {
		t.Fatalf("records: want 9 printed, 2 skipped:\n%s", r.out)
	}

	r = runCommand(t, "", "log", "dump", filepath.Join(dir, "missing.log"))
	if r.err == nil || !strings.Contains(r.errOut, "no such file") {
		t.Fatalf("missing file: %v %s", r.err, r.errOut)
	}
}

var batchField = regexp.MustCompile(`(\w+): (\S+)`)

// batchLines parses the batch lines of a dump into field maps.
func batchLines(out string) []map[string]string {
	var bs []map[string]string
	for _, l := range lines(out) {
		if !strings.HasPrefix(l, "baseOffset: ") {
			continue
		}
		m := map[string]string{}
		for _, f := range batchField.FindAllStringSubmatch(l, -1) {
			m[f[1]] = f[2]
		}
		bs = append(bs, m)
	}
	return bs
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return n
}
