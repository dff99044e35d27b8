//go:build e2e

package test

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestCleanRestartTornTail is issue #20 item 3 through a real process: 30
// bytes cut from the active segment of a cleanly stopped broker (the
// clean-shutdown marker is there) must cost only the torn batch. Every batch
// is larger than index.interval.bytes, so the offset index has an entry
// pointing at the torn batch, which is what once made the whole segment
// unreadable.
func TestCleanRestartTornTail(t *testing.T) {
	t.Parallel()
	const topic, batches = "torn-tail", 20
	b := startBroker(t)
	createTopic(t, newKgo(t, b), topic, 1, nil)
	rc := dialRaw(t, b)
	value := func(i int) string { return fmt.Sprintf("%03d-%s", i, strings.Repeat("v", 5000)) }
	for i := range batches {
		p := produceRaw(t, rc, topic, buildBatch(t, batchOpts{values: []string{value(i)}}))
		if p.ErrorCode != 0 || p.BaseOffset != int64(i) {
			t.Fatalf("produce %d: offset %d, error %v", i, p.BaseOffset, kerr.ErrorForCode(p.ErrorCode))
		}
	}
	b.stop()

	logPath := filepath.Join(b.dataDir, topic+"-0", "00000000000000000000.log")
	st, err := os.Stat(logPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(logPath, st.Size()-30); err != nil {
		t.Fatal(err)
	}
	b.start()

	rc = dialRaw(t, b)
	if end := listEndOffset(t, rc, topic); end != batches-1 {
		t.Fatalf("log end offset %d after the torn tail, want %d (only the torn batch lost)", end, batches-1)
	}
	var got []string
	for offset := int64(0); offset < batches-1; {
		bs := fetchBatches(t, b, topic, 0, offset, 1<<20)
		if len(bs) == 0 {
			t.Fatalf("fetch at %d: no batches", offset)
		}
		for _, rb := range bs {
			recs := decodeRecords(t, rb)
			for _, r := range recs {
				got = append(got, string(r.Value))
			}
			offset = rb.FirstOffset + int64(rb.LastOffsetDelta) + 1
		}
	}
	for i := range batches - 1 {
		if i >= len(got) || got[i] != value(i) {
			t.Fatalf("record %d not read back after the restart", i)
		}
	}
	p := produceRaw(t, rc, topic, buildBatch(t, batchOpts{values: []string{"after"}}))
	if p.ErrorCode != 0 || p.BaseOffset != batches-1 {
		t.Fatalf("produce after the restart: offset %d (want %d), error %v", p.BaseOffset, batches-1, kerr.ErrorForCode(p.ErrorCode))
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
