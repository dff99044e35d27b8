package record

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var allCodecs = []Codec{CodecNone, CodecGzip, CodecSnappy, CodecLZ4, CodecZstd}

// testRecord is a record as a test writes it: absolute timestamp.
type testRecord struct {
	ts         int64
	key, value []byte
	headers    []RecordHeader
}

// noProducer are the options of a plain (non-idempotent) producer batch.
func noProducer(codec Codec) BuilderOptions {
	return BuilderOptions{
		Codec:                codec,
		ProducerID:           NoProducerID,
		ProducerEpoch:        NoProducerEpoch,
		BaseSequence:         NoSequence,
		PartitionLeaderEpoch: NoPartitionLeaderEpoch,
	}
}

func buildBatch(t testing.TB, opts BuilderOptions, recs []testRecord) []byte {
	t.Helper()
	b := NewBuilder(opts)
	for _, r := range recs {
		b.Append(r.ts, r.key, r.value, r.headers)
	}
	batch, err := b.Build()
	if err != nil {
		t.Fatalf("build: %v", err)
	}
	return batch
}

// someRecords returns n keyed records with timestamps from ts, a header on
// every third, a null value on every fifth.
func someRecords(n int, ts int64) []testRecord {
	recs := make([]testRecord, n)
	for i := range recs {
		recs[i] = testRecord{
			ts:    ts + int64(i),
			key:   []byte(fmt.Sprintf("key-%d", i)),
			value: bytes.Repeat([]byte(fmt.Sprintf("value %d ", i)), 1+i%7),
		}
		if i%3 == 0 {
			recs[i].headers = []RecordHeader{{Key: "h", Value: []byte{byte(i)}}, {Key: "null", Value: nil}}
		}
		if i%5 == 4 {
			recs[i].value = nil
		}
	}
	return recs
}

// encodeRecord encodes one record with kmsg (an independent encoder), with
// the given length or, when length < 0, the right one.
func encodeRecord(offsetDelta int32, tsDelta int64, key, value []byte, length int32) []byte {
	r := kmsg.Record{TimestampDelta64: tsDelta, OffsetDelta: offsetDelta, Key: key, Value: value}
	body := r.AppendTo(nil)
	_, n := readVarint(body)
	if length < 0 {
		length = int32(len(body) - n)
	}
	return append(binary.AppendVarint(nil, int64(length)), body[n:]...)
}

// withData returns a copy of batch with the records section replaced by data
// and the header fields edited by edit, length and CRC made right.
func withData(batch, data []byte, edit func(b []byte)) []byte {
	out := append(append([]byte(nil), batch[:HeaderSize]...), data...)
	binary.BigEndian.PutUint32(out[lengthPos:], uint32(len(out)-LogOverhead))
	if edit != nil {
		edit(out)
	}
	UpdateCRC(out)
	return out
}

// kmsgRecords decodes batch with franz-go (kmsg + kgo's decompressor), an
// implementation independent of this package.
func kmsgRecords(t testing.TB, batch []byte) (kmsg.RecordBatch, []kmsg.Record) {
	t.Helper()
	var rb kmsg.RecordBatch
	if err := rb.ReadFrom(batch); err != nil {
		t.Fatalf("kmsg RecordBatch.ReadFrom: %v", err)
	}
	data, err := kgo.DefaultDecompressor().Decompress(rb.Records, kgo.CompressionCodecType(rb.Attributes&0x7))
	if err != nil {
		t.Fatalf("kgo decompress: %v", err)
	}
	var recs []kmsg.Record
	for i := int32(0); i < rb.NumRecords; i++ {
		var r kmsg.Record
		if err := r.ReadFrom(data); err != nil {
			t.Fatalf("kmsg Record.ReadFrom %d: %v", i, err)
		}
		n := varintSize(int64(r.Length)) + int(r.Length)
		data = data[n:]
		recs = append(recs, r)
	}
	if len(data) != 0 {
		t.Fatalf("%d bytes after the records", len(data))
	}
	return rb, recs
}
