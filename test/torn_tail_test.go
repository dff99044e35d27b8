//go:build e2e

package test

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestCleanRestartTornTail is issue #20 item 3 through a real process: the
// active segment of a cleanly stopped broker (the clean-shutdown marker is
// there) is cut in the middle of a batch, and the restart must cost only
// the batches from the cut on. Every batch is larger than
// index.interval.bytes, so the offset index has entries pointing at and
// past the cut, which once made the whole segment unreadable; the older
// segments (skipped by the clean load) keep every record.
//
// Not parallel: a restarted broker binds its port again, which a test
// starting meanwhile could have been given.
func TestCleanRestartTornTail(t *testing.T) {
	for _, lost := range []int{1, 3} {
		t.Run(fmt.Sprintf("%d batches cut", lost), func(t *testing.T) { tornTail(t, lost) })
	}
}

func tornTail(t *testing.T, lost int) {
	const topic, batches = "torn-tail", 50
	b := startBroker(t)
	createTopic(t, newKgo(t, b), topic, 1, map[string]*string{"segment.bytes": strp("1048576")})
	rc := dialRaw(t, b)
	value := func(i int) string { return fmt.Sprintf("%03d-%s", i, strings.Repeat("v", 50000)) }
	for i := range batches {
		p := produceRaw(t, rc, topic, buildBatch(t, batchOpts{values: []string{value(i)}}))
		if p.ErrorCode != 0 || p.BaseOffset != int64(i) {
			t.Fatalf("produce %d: offset %d, error %v", i, p.BaseOffset, kerr.ErrorForCode(p.ErrorCode))
		}
	}
	b.stop()

	logs, err := filepath.Glob(filepath.Join(b.dataDir, topic+"-0", "*.log"))
	if err != nil || len(logs) < 2 {
		t.Fatalf("segments %v (%v): want several", logs, err)
	}
	slices.Sort(logs)
	active := logs[len(logs)-1]
	data, err := os.ReadFile(active)
	if err != nil {
		t.Fatal(err)
	}
	// Where each batch of the active segment starts, and its base offset.
	var starts []int
	var bases []int64
	for pos := 0; pos+12 <= len(data); pos += 12 + int(binary.BigEndian.Uint32(data[pos+8:])) {
		starts = append(starts, pos)
		bases = append(bases, int64(binary.BigEndian.Uint64(data[pos:])))
	}
	if len(starts) < lost {
		t.Fatalf("active segment %s holds %d batches, want at least %d", active, len(starts), lost)
	}
	cut := starts[len(starts)-lost] + 30 // inside the first lost batch
	if err := os.Truncate(active, int64(cut)); err != nil {
		t.Fatal(err)
	}
	want := bases[len(bases)-lost]
	b.start()

	rc = dialRaw(t, b)
	if end := listEndOffset(t, rc, topic); end != want {
		t.Fatalf("log end offset %d after the torn tail, want %d (only the cut batches lost)", end, want)
	}
	var got []string
	for offset := int64(0); offset < want; {
		bs := fetchBatches(t, b, topic, 0, offset, 1<<20)
		if len(bs) == 0 {
			t.Fatalf("fetch at %d: no batches", offset)
		}
		for _, rb := range bs {
			for _, r := range decodeRecords(t, rb) {
				got = append(got, string(r.Value))
			}
			offset = rb.FirstOffset + int64(rb.LastOffsetDelta) + 1
		}
	}
	for i := range int(want) {
		if i >= len(got) || got[i] != value(i) {
			t.Fatalf("record %d not read back after the restart", i)
		}
	}
	p := produceRaw(t, rc, topic, buildBatch(t, batchOpts{values: []string{"after"}}))
	if p.ErrorCode != 0 || p.BaseOffset != want {
		t.Fatalf("produce after the restart: offset %d (want %d), error %v", p.BaseOffset, want, kerr.ErrorForCode(p.ErrorCode))
	}
}

// decodeRecords reads the records of an uncompressed batch.
func decodeRecords(t *testing.T, rb kmsg.RecordBatch) []kmsg.Record {
	t.Helper()
	var out []kmsg.Record
	raw := rb.Records
	for range rb.NumRecords {
		n, w := binary.Varint(raw)
		if w <= 0 || int64(w)+n > int64(len(raw)) {
			t.Fatalf("batch at %d: record %d malformed", rb.FirstOffset, len(out))
		}
		var r kmsg.Record
		if err := r.ReadFrom(raw[:int64(w)+n]); err != nil {
			t.Fatalf("batch at %d: record %d: %v", rb.FirstOffset, len(out), err)
		}
		out = append(out, r)
		raw = raw[int64(w)+n:]
	}
	return out
}
