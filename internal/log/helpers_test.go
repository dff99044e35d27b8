package log

import (
	"encoding/binary"
	"hash/crc32"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/goleak"

	"gregor/internal/record"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var castagnoliTable = crc32.MakeTable(crc32.Castagnoli)

// batchSpec describes a v2 batch to build in tests.
type batchSpec struct {
	baseOffset    int64
	timestamps    []int64 // one record per timestamp
	valueSize     int
	codec         record.Codec
	logAppendTime bool
}

// makeBatch builds a v2 batch with kmsg, independently of package record's
// builder, so the log is tested against a second encoder.
func makeBatch(t testing.TB, s batchSpec) []byte {
	t.Helper()
	if len(s.timestamps) == 0 {
		t.Fatal("batch without records")
	}
	base, maxTs := s.timestamps[0], s.timestamps[0]
	for _, ts := range s.timestamps {
		maxTs = max(maxTs, ts)
	}
	var recs []byte
	value := make([]byte, s.valueSize)
	for i := range value {
		value[i] = byte('a' + i%26)
	}
	for i, ts := range s.timestamps {
		r := kmsg.Record{TimestampDelta64: ts - base, OffsetDelta: int32(i), Key: []byte{byte(i)}, Value: value}
		body := r.AppendTo(nil)[1:] // drop the zero length varint
		recs = binary.AppendVarint(recs, int64(len(body)))
		recs = append(recs, body...)
	}
	attrs := int16(s.codec)
	if s.codec != record.CodecNone {
		var err error
		recs, err = record.Compress(s.codec, nil, recs)
		if err != nil {
			t.Fatal(err)
		}
	}
	if s.logAppendTime {
		attrs |= 0x08
	}
	b := kmsg.RecordBatch{
		FirstOffset:          s.baseOffset,
		PartitionLeaderEpoch: 0,
		Magic:                2,
		Attributes:           attrs,
		LastOffsetDelta:      int32(len(s.timestamps) - 1),
		FirstTimestamp:       base,
		MaxTimestamp:         maxTs,
		ProducerID:           -1,
		ProducerEpoch:        -1,
		FirstSequence:        -1,
		NumRecords:           int32(len(s.timestamps)),
		Records:              recs,
	}
	b.Length = int32(record.HeaderSize - record.LogOverhead + len(recs))
	raw := b.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[17:], crc32.Checksum(raw[21:], castagnoliTable))
	return raw
}

// simpleBatch is n uncompressed records at baseOffset with timestamps ts, ts+1, ...
func simpleBatch(t testing.TB, baseOffset int64, n int, ts int64, valueSize int) []byte {
	tss := make([]int64, n)
	for i := range tss {
		tss[i] = ts + int64(i)
	}
	return makeBatch(t, batchSpec{baseOffset: baseOffset, timestamps: tss, valueSize: valueSize})
}

func testLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// testConfig is a small-segment config for tests.
func testConfig() Config {
	c := DefaultConfig()
	c.SegmentIndexBytes = 4096
	c.FileDeleteDelayMs = 1
	return c
}

// openTestLog opens a log in a fresh "<tmp>/logs/topic-0" directory.
func openTestLog(t testing.TB, cfg Config) (*Log, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "logs", "topic-0")
	l, err := Open(dir, cfg, 0, 0, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	return l, dir
}

// markClean writes the clean-shutdown marker in the log's parent directory.
func markClean(t testing.TB, dir string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(filepath.Dir(dir), CleanShutdownFileName), nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

func mustAppendFollower(t testing.TB, l *Log, b []byte) AppendInfo {
	t.Helper()
	info, err := l.AppendAsFollower(b)
	if err != nil {
		t.Fatalf("append: %v", err)
	}
	return info
}

// fillLog appends n batches of recs records each (offsets from the LEO) and
// returns them.
func fillLog(t testing.TB, l *Log, n, recs, valueSize int, ts int64) [][]byte {
	t.Helper()
	var out [][]byte
	for i := 0; i < n; i++ {
		b := simpleBatch(t, l.LogEndOffset(), recs, ts+int64(i*recs), valueSize)
		mustAppendFollower(t, l, b)
		out = append(out, b)
	}
	return out
}

func segmentFiles(t testing.TB, dir, suffix string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "*"+suffix))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func fileSize(t testing.TB, path string) int64 {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

// farFuture is past every deletion delay in tests.
var farFuture = time.Now().Add(24 * time.Hour)
