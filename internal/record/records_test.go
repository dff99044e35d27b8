package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"testing"
)

func TestVarints(t *testing.T) {
	for _, v := range []int64{0, 1, -1, 63, -64, 64, 300, -300, math.MaxInt32, math.MinInt32} {
		b := binary.AppendVarint(nil, v)
		got, n := readVarint(b)
		if n != len(b) || int64(got) != v {
			t.Fatalf("readVarint(%d) = %d, %d", v, got, n)
		}
		if varintSize(v) != len(b) {
			t.Fatalf("varintSize(%d) = %d, want %d", v, varintSize(v), len(b))
		}
	}
	for _, v := range []int64{0, -1, math.MaxInt64, math.MinInt64, 1 << 40} {
		b := binary.AppendVarint(nil, v)
		got, n := readVarlong(b)
		if n != len(b) || got != v {
			t.Fatalf("readVarlong(%d) = %d, %d", v, got, n)
		}
	}
	// Too long and truncated.
	if _, n := readVarint([]byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x01}); n != -1 {
		t.Fatalf("6-byte varint: n = %d", n)
	}
	if _, n := readVarint([]byte{0x80, 0x80}); n != 0 {
		t.Fatalf("truncated varint: n = %d", n)
	}
	if _, n := readVarlong(bytes.Repeat([]byte{0xff}, 11)); n != -1 {
		t.Fatalf("11-byte varlong: n = %d", n)
	}
}

func TestReadRecordsRoundTrip(t *testing.T) {
	recs := someRecords(50, 1_700_000_000_000)
	for _, c := range allCodecs {
		t.Run(c.String(), func(t *testing.T) {
			opts := BuilderOptions{
				BaseOffset: 1000, Codec: c, ProducerID: 77, ProducerEpoch: 3, BaseSequence: 10,
				Transactional: true, PartitionLeaderEpoch: 9,
			}
			batch := buildBatch(t, opts, recs)
			h, got, err := ReadRecords(batch)
			if err != nil {
				t.Fatal(err)
			}
			if h.BaseOffset != 1000 || h.ProducerID != 77 || h.ProducerEpoch != 3 || h.BaseSequence != 10 ||
				!h.IsTransactional() || h.IsControl() || h.PartitionLeaderEpoch != 9 || h.Compression() != c ||
				h.NumRecords != 50 || h.LastOffsetDelta != 49 || h.BaseTimestamp != recs[0].ts ||
				h.MaxTimestamp != recs[49].ts || h.LogAppendTime() {
				t.Fatalf("header %+v", h)
			}
			if len(got) != len(recs) {
				t.Fatalf("%d records", len(got))
			}
			for i, r := range got {
				w := recs[i]
				if r.OffsetDelta != int32(i) || h.BaseTimestamp+r.TimestampDelta != w.ts ||
					!bytes.Equal(r.Key, w.key) || !bytes.Equal(r.Value, w.value) || (r.Value == nil) != (w.value == nil) ||
					len(r.Headers) != len(w.headers) {
					t.Fatalf("record %d: %+v", i, r)
				}
				for j, hd := range r.Headers {
					if hd.Key != w.headers[j].Key || !bytes.Equal(hd.Value, w.headers[j].Value) ||
						(hd.Value == nil) != (w.headers[j].Value == nil) {
						t.Fatalf("record %d header %d: %+v", i, j, hd)
					}
				}
			}

			// franz-go decodes the same batch to the same records.
			rb, krecs := kmsgRecords(t, batch)
			if uint32(rb.CRC) != h.CRC || rb.FirstOffset != 1000 || rb.ProducerID != 77 || len(krecs) != 50 {
				t.Fatalf("kmsg batch %+v", rb)
			}
			for i, kr := range krecs {
				if kr.OffsetDelta != int32(i) || kr.TimestampDelta64 != got[i].TimestampDelta ||
					!bytes.Equal(kr.Key, recs[i].key) || !bytes.Equal(kr.Value, recs[i].value) ||
					len(kr.Headers) != len(recs[i].headers) {
					t.Fatalf("kmsg record %d: %+v", i, kr)
				}
			}
		})
	}
}

func TestBuilderOptions(t *testing.T) {
	opts := noProducer(CodecNone)
	opts.Control, opts.LogAppendTime, opts.BaseTimestamp = true, true, 500
	batch := buildBatch(t, opts, []testRecord{{ts: 700, key: []byte{0, 0, 0, 1}, value: []byte{0, 0}}})
	h, recs, err := ReadRecords(batch)
	if err != nil {
		t.Fatal(err)
	}
	if !h.IsControl() || !h.LogAppendTime() || h.BaseTimestamp != 500 || recs[0].TimestampDelta != 200 ||
		h.MaxTimestamp != 700 || h.ProducerID != -1 || h.BaseSequence != -1 {
		t.Fatalf("header %+v record %+v", h, recs[0])
	}
	if _, err := NewBuilder(opts).Build(); err == nil {
		t.Fatal("empty build succeeded")
	}
}

func TestReadRecordsErrors(t *testing.T) {
	good := buildBatch(t, noProducer(CodecNone), someRecords(3, 1000))
	cases := []struct {
		name  string
		batch []byte
		want  error
	}{
		{"empty", nil, ErrShortBatch},
		{"truncated", good[:len(good)-1], ErrShortBatch},
		{"trailing", append(append([]byte(nil), good...), 0), ErrCorruptMessage},
		{"bad crc", func() []byte { b := append([]byte(nil), good...); b[len(b)-1]++; return b }(), ErrCorruptMessage},
		{"magic 1", func() []byte { b := append([]byte(nil), good...); b[magicPos] = 1; return b }(), ErrUnsupportedMagic},
		{"codec 6", withData(good, good[HeaderSize:], func(b []byte) { b[attributesPos+1] |= 6 }), ErrUnsupportedCompression},
		{"extra record bytes", withData(good, append(append([]byte(nil), good[HeaderSize:]...), 0), nil), ErrInvalidRecord},
		{"corrupt gzip", withData(good, []byte("not gzip"), func(b []byte) { b[attributesPos+1] |= 1 }), ErrCorruptMessage},
	}
	for _, tc := range cases {
		if _, _, err := ReadRecords(tc.batch); !errors.Is(err, tc.want) {
			t.Errorf("%s: err %v, want %v", tc.name, err, tc.want)
		}
	}
}
