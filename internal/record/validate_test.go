package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

const testNow = int64(1_700_000_000_000)

func baseValidateOptions() ValidateOptions {
	return ValidateOptions{
		Now:                  testNow,
		MaxMessageBytes:      DefaultMaxMessageBytes,
		TimestampBeforeMaxMs: DefaultTimestampBeforeMaxMs,
		TimestampAfterMaxMs:  DefaultTimestampAfterMaxMs,
		UseProducerCodec:     true,
		PartitionLeaderEpoch: 5,
	}
}

func clone(b []byte) []byte { return append([]byte(nil), b...) }

func TestValidateErrors(t *testing.T) {
	recs := someRecords(3, testNow-10)
	good := buildBatch(t, noProducer(CodecNone), recs)
	goodGzip := buildBatch(t, noProducer(CodecGzip), recs)
	rec := func(delta int32, key []byte) []byte { return encodeRecord(delta, 0, key, []byte("v"), -1) }
	three := bytes.Join([][]byte{rec(0, []byte("a")), rec(1, []byte("b")), rec(2, []byte("c"))}, nil)
	setU32 := func(pos int, v uint32) func([]byte) { return func(b []byte) { binary.BigEndian.PutUint32(b[pos:], v) } }

	type tc struct {
		name       string
		records    []byte
		opts       func(*ValidateOptions)
		want       error
		code       int16
		alsoCorr   bool    // the error is also ErrCorruptMessage (a malformed record)
		recordErrs []int32 // BatchIndex of the expected RecordErrors
	}
	cases := []tc{
		{name: "empty", records: nil, want: ErrShortBatch, code: kerr.CorruptMessage.Code},
		{name: "shorter than magic", records: good[:10], want: ErrShortBatch, code: kerr.CorruptMessage.Code},
		{name: "magic 0", records: func() []byte { b := clone(good); b[magicPos] = 0; return b }(), want: ErrUnsupportedMagic, code: kerr.InvalidRecord.Code},
		{name: "magic 1", records: func() []byte { b := clone(good); b[magicPos] = 1; return b }(), want: ErrUnsupportedMagic, code: kerr.InvalidRecord.Code},
		{name: "magic 3", records: func() []byte { b := clone(good); b[magicPos] = 3; return b }(), want: ErrCorruptMessage, code: kerr.CorruptMessage.Code},
		{name: "magic -1", records: func() []byte { b := clone(good); b[magicPos] = 0xff; return b }(), want: ErrCorruptMessage, code: kerr.CorruptMessage.Code},
		{name: "length below header", records: func() []byte { b := clone(good); setU32(lengthPos, 13)(b); return b }(), want: ErrCorruptMessage, code: kerr.CorruptMessage.Code},
		{name: "truncated", records: good[:len(good)-1], want: ErrShortBatch, code: kerr.CorruptMessage.Code},
		{name: "trailing garbage", records: append(clone(good), 1, 2, 3), want: ErrCorruptMessage, code: kerr.CorruptMessage.Code},
		{name: "two batches", records: append(clone(good), good...), want: ErrInvalidRecord, code: kerr.InvalidRecord.Code},
		{name: "base offset not 0", records: func() []byte { b := clone(good); SetBaseOffset(b, 7); return b }(), want: ErrInvalidRecord, code: kerr.InvalidRecord.Code},
		{name: "too large", records: good, opts: func(o *ValidateOptions) { o.MaxMessageBytes = int32(len(good) - 1) }, want: ErrMessageTooLarge, code: kerr.MessageTooLarge.Code},
		{name: "bad crc", records: func() []byte { b := clone(good); b[len(b)-1] ^= 1; return b }(), want: ErrCorruptMessage, code: kerr.CorruptMessage.Code},
		{name: "crc over header field", records: func() []byte { b := clone(good); b[producerIDPos] = 0; return b }(), want: ErrCorruptMessage, code: kerr.CorruptMessage.Code},
		{name: "codec 5", records: withData(good, good[HeaderSize:], func(b []byte) { b[attributesPos+1] |= 5 }), want: ErrUnsupportedCompression, code: kerr.UnsupportedCompressionType.Code},
		{name: "codec 7", records: withData(good, good[HeaderSize:], func(b []byte) { b[attributesPos+1] |= 7 }), want: ErrUnsupportedCompression, code: kerr.UnsupportedCompressionType.Code},
		{name: "lastOffsetDelta -1", records: withData(good, three, setU32(lastOffsetDeltaPos, 0xffffffff)), want: ErrInvalidRecord, code: kerr.InvalidRecord.Code, alsoCorr: true},
		{name: "count 0", records: withData(good, three, setU32(recordsCountPos, 0)), want: ErrInvalidRecord, code: kerr.InvalidRecord.Code, alsoCorr: true},
		{name: "count disagrees with lastOffsetDelta", records: withData(good, three, setU32(recordsCountPos, 2)), want: ErrInvalidRecord, code: kerr.InvalidRecord.Code, alsoCorr: true},
		{name: "control batch", records: withData(good, good[HeaderSize:], func(b []byte) { b[attributesPos+1] |= controlBit }), want: ErrInvalidRecord, code: kerr.InvalidRecord.Code},
		{name: "producer id without sequence", records: withData(good, good[HeaderSize:], func(b []byte) { binary.BigEndian.PutUint64(b[producerIDPos:], 9) }), want: ErrInvalidRecord, code: kerr.InvalidRecord.Code},
		{name: "fewer records than count", records: withData(good, three[:len(rec(0, []byte("a")))*2], nil), want: ErrInvalidRecord, code: kerr.InvalidRecord.Code, alsoCorr: true},
		{name: "bytes after last record", records: withData(good, append(clone(three), 0), nil), want: ErrInvalidRecord, code: kerr.InvalidRecord.Code, alsoCorr: true},
		{name: "record cut short", records: withData(good, three[:len(three)-1], nil), want: ErrInvalidRecord, code: kerr.InvalidRecord.Code, alsoCorr: true},
		{name: "bad length varint", records: withData(good, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, nil), want: ErrInvalidRecord, code: kerr.InvalidRecord.Code, alsoCorr: true},
		{name: "negative record length", records: withData(good, append([]byte{0x01}, three...), nil), want: ErrInvalidRecord, code: kerr.InvalidRecord.Code, alsoCorr: true},
		{name: "record length too long", records: withData(good, bytes.Join([][]byte{encodeRecord(0, 0, nil, nil, 7), encodeRecord(1, 0, nil, nil, -1), encodeRecord(2, 0, nil, nil, -1)}, nil), nil), want: ErrInvalidRecord, code: kerr.InvalidRecord.Code, alsoCorr: true},
		{name: "record length too short", records: withData(good, bytes.Join([][]byte{encodeRecord(0, 0, []byte("k"), []byte("v"), 5), encodeRecord(1, 0, nil, nil, -1), encodeRecord(2, 0, nil, nil, -1)}, nil), nil), want: ErrInvalidRecord, code: kerr.InvalidRecord.Code, alsoCorr: true},
		{name: "negative header count", records: withData(good, bytes.Join([][]byte{{0x0c, 0, 0, 0, 1, 1, 1}, rec(1, nil), rec(2, nil)}, nil), nil), want: ErrInvalidRecord, code: kerr.InvalidRecord.Code, alsoCorr: true},
		{name: "negative header key size", records: withData(good, bytes.Join([][]byte{{0x0e, 0, 0, 0, 1, 1, 2, 1}, rec(1, nil), rec(2, nil)}, nil), nil), want: ErrInvalidRecord, code: kerr.InvalidRecord.Code, alsoCorr: true},
		{name: "corrupt compressed data", records: withData(goodGzip, []byte("definitely not gzip"), nil), want: ErrCorruptMessage, code: kerr.CorruptMessage.Code},
		{name: "compressed records malformed", records: func() []byte {
			z, _ := Compress(CodecZstd, nil, three[:len(three)-2])
			return withData(good, z, func(b []byte) { b[attributesPos+1] |= byte(CodecZstd) })
		}(), want: ErrInvalidRecord, code: kerr.InvalidRecord.Code, alsoCorr: true},
		{name: "keyless on compacted", records: withData(good, bytes.Join([][]byte{rec(0, []byte("a")), rec(1, nil), rec(2, nil)}, nil), nil),
			opts: func(o *ValidateOptions) { o.Compacted = true }, want: ErrInvalidRecord, code: kerr.InvalidRecord.Code, recordErrs: []int32{1, 2}},
		{name: "timestamp too old", records: good, opts: func(o *ValidateOptions) { o.TimestampBeforeMaxMs = 9 },
			want: ErrInvalidTimestamp, code: kerr.InvalidTimestamp.Code, recordErrs: []int32{0}},
		{name: "timestamp too new", records: buildBatch(t, noProducer(CodecNone), someRecords(3, testNow+DefaultTimestampAfterMaxMs-1)),
			want: ErrInvalidTimestamp, code: kerr.InvalidTimestamp.Code, recordErrs: []int32{2}},
		{name: "timestamp too new compressed", records: buildBatch(t, noProducer(CodecLZ4), someRecords(3, testNow+DefaultTimestampAfterMaxMs-1)),
			want: ErrInvalidTimestamp, code: kerr.InvalidTimestamp.Code, recordErrs: []int32{2}},
		{name: "keyless and bad timestamp: timestamp wins", records: withData(good, bytes.Join([][]byte{encodeRecord(0, -100, nil, nil, -1), rec(1, []byte("b")), rec(2, []byte("c"))}, nil), nil),
			opts: func(o *ValidateOptions) { o.Compacted = true; o.TimestampBeforeMaxMs = 50; o.Now += 50 }, want: ErrInvalidTimestamp, code: kerr.InvalidTimestamp.Code, recordErrs: []int32{0, 1, 2}},
		{name: "producer set LogAppendTime on LogAppendTime topic", records: withData(good, good[HeaderSize:], func(b []byte) { b[attributesPos+1] |= timestampTypeBit }),
			opts: func(o *ValidateOptions) { o.LogAppendTime = true }, want: ErrInvalidTimestamp, code: kerr.InvalidTimestamp.Code, recordErrs: []int32{0, 1, 2}},
		{name: "recompressed too large", records: good, opts: func(o *ValidateOptions) {
			o.UseProducerCodec, o.TargetCodec, o.MaxMessageBytes = false, CodecGzip, int32(len(good))
		}, want: ErrMessageTooLarge, code: kerr.MessageTooLarge.Code},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			opts := baseValidateOptions()
			if c.opts != nil {
				c.opts(&opts)
			}
			in := clone(c.records)
			res, err := ValidateAndAssign(in, 100, opts)
			if !errors.Is(err, c.want) {
				t.Fatalf("err %v, want %v", err, c.want)
			}
			if got := KafkaErrorCode(err); got != c.code {
				t.Fatalf("code %d, want %d (err %v)", got, c.code, err)
			}
			if c.alsoCorr != errors.Is(err, ErrCorruptMessage) && c.want != ErrCorruptMessage && c.want != ErrShortBatch {
				t.Fatalf("errors.Is(err, ErrCorruptMessage) = %v, want %v", !c.alsoCorr, c.alsoCorr)
			}
			var idx []int32
			for _, re := range res.RecordErrors {
				if re.Message == "" {
					t.Fatal("record error without message")
				}
				idx = append(idx, re.BatchIndex)
			}
			if len(idx) != len(c.recordErrs) {
				t.Fatalf("record errors %+v, want indexes %v", res.RecordErrors, c.recordErrs)
			}
			for i := range idx {
				if idx[i] != c.recordErrs[i] {
					t.Fatalf("record errors %+v, want indexes %v", res.RecordErrors, c.recordErrs)
				}
			}
			if !bytes.Equal(in, c.records) {
				t.Fatal("input changed on error")
			}
		})
	}
}

func TestValidateTimestampBounds(t *testing.T) {
	opts := baseValidateOptions()
	opts.TimestampBeforeMaxMs, opts.TimestampAfterMaxMs = 1000, 2000
	for _, tc := range []struct {
		ts int64
		ok bool
	}{{testNow - 1000, true}, {testNow - 1001, false}, {testNow + 2000, true}, {testNow + 2001, false}, {NoTimestamp, true}} {
		batch := buildBatch(t, noProducer(CodecNone), []testRecord{{ts: tc.ts, key: []byte("k")}})
		_, err := ValidateAndAssign(batch, 0, opts)
		if (err == nil) != tc.ok {
			t.Errorf("ts now%+d: err %v, want ok=%v", tc.ts-testNow, err, tc.ok)
		}
	}
	// LogAppendTime topics do not check producer timestamps.
	opts.LogAppendTime = true
	batch := buildBatch(t, noProducer(CodecNone), []testRecord{{ts: 0, key: []byte("k")}})
	if _, err := ValidateAndAssign(batch, 0, opts); err != nil {
		t.Fatal(err)
	}
}

func checkAssigned(t *testing.T, batch []byte, base int64, wantCodec Codec, recs []testRecord) BatchHeader {
	t.Helper()
	h, got, err := ReadRecords(batch)
	if err != nil {
		t.Fatalf("read back: %v", err)
	}
	if h.BaseOffset != base || h.PartitionLeaderEpoch != 5 || h.Compression() != wantCodec || int(h.NumRecords) != len(recs) {
		t.Fatalf("header %+v", h)
	}
	for i, r := range got {
		ts := h.BaseTimestamp + r.TimestampDelta
		if r.OffsetDelta != int32(i) || ts != recs[i].ts || !bytes.Equal(r.Key, recs[i].key) ||
			!bytes.Equal(r.Value, recs[i].value) || len(r.Headers) != len(recs[i].headers) {
			t.Fatalf("record %d: %+v (ts %d)", i, r, ts)
		}
	}
	kmsgRecords(t, batch) // franz-go reads it too
	return h
}

func TestValidateInPlace(t *testing.T) {
	recs := someRecords(20, testNow-1000)
	for _, c := range allCodecs {
		t.Run(c.String(), func(t *testing.T) {
			opts := noProducer(c)
			opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence = 4000, 2, 17
			in := buildBatch(t, opts, recs)
			vo := baseValidateOptions()
			if c != CodecNone {
				// The topic names the producer's codec explicitly: still in place.
				vo.UseProducerCodec, vo.TargetCodec = false, c
			}
			res, err := ValidateAndAssign(in, 500, vo)
			if err != nil {
				t.Fatal(err)
			}
			if &res.Records[0] != &in[0] || res.Recompressed {
				t.Fatal("not validated in place")
			}
			if res.FirstOffset != 500 || res.LastOffset != 519 || res.NumRecords != 20 || res.NumBatches != 1 ||
				res.MaxTimestamp != recs[19].ts || res.OffsetOfMaxTimestamp != 519 || res.LogAppendTime != -1 {
				t.Fatalf("result %+v", res)
			}
			h := checkAssigned(t, res.Records, 500, c, recs)
			if h.ProducerID != 4000 || h.BaseSequence != 17 || h.LogAppendTime() {
				t.Fatalf("header %+v", h)
			}
		})
	}
}

func TestValidateLogAppendTime(t *testing.T) {
	recs := someRecords(5, testNow-1000)
	for _, target := range []Codec{CodecNone, CodecZstd} {
		in := buildBatch(t, noProducer(CodecNone), recs)
		vo := baseValidateOptions()
		vo.LogAppendTime = true
		vo.UseProducerCodec, vo.TargetCodec = false, target
		res, err := ValidateAndAssign(in, 10, vo)
		if err != nil {
			t.Fatal(err)
		}
		if res.LogAppendTime != testNow || res.MaxTimestamp != testNow || res.OffsetOfMaxTimestamp != 14 ||
			res.Recompressed != (target != CodecNone) {
			t.Fatalf("%v: result %+v", target, res)
		}
		h, err := checkBatch(res.Records)
		if err != nil || !h.LogAppendTime() || h.MaxTimestamp != testNow {
			t.Fatalf("%v: header %+v err %v", target, h, err)
		}
	}
}

// TestValidateMaxTimestampRewrite: the batch header carries the records' max
// timestamp after validation, whatever the producer wrote (Kafka's
// setMaxTimestamp), and the CRC follows.
func TestValidateMaxTimestampRewrite(t *testing.T) {
	recs := someRecords(4, testNow-1000)
	built := buildBatch(t, noProducer(CodecNone), recs)
	in := withData(built, built[HeaderSize:], func(b []byte) {
		binary.BigEndian.PutUint64(b[maxTimestampPos:], 1)
	})
	res, err := ValidateAndAssign(in, 0, baseValidateOptions())
	if err != nil {
		t.Fatal(err)
	}
	h, err := checkBatch(res.Records)
	if err != nil || h.MaxTimestamp != recs[3].ts {
		t.Fatalf("header %+v err %v", h, err)
	}
}

func TestValidateNoTimestamps(t *testing.T) {
	recs := []testRecord{{ts: NoTimestamp, key: []byte("a")}, {ts: NoTimestamp, key: []byte("b")}}
	for _, tc := range []struct {
		codec      Codec
		wantOffset int64
	}{{CodecNone, -1}, {CodecSnappy, 1}} { // Kafka's compressed in-place path reports the last offset
		res, err := ValidateAndAssign(buildBatch(t, noProducer(tc.codec), recs), 0, baseValidateOptions())
		if err != nil {
			t.Fatal(err)
		}
		if res.MaxTimestamp != NoTimestamp || res.OffsetOfMaxTimestamp != tc.wantOffset {
			t.Fatalf("%v: result %+v", tc.codec, res)
		}
	}
}

func TestValidateRecompress(t *testing.T) {
	recs := someRecords(30, testNow-1000)
	for _, src := range allCodecs {
		for _, dst := range allCodecs {
			opts := noProducer(src)
			opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence, opts.Transactional = 12, 1, 40, true
			in := buildBatch(t, opts, recs)
			vo := baseValidateOptions()
			vo.UseProducerCodec, vo.TargetCodec = false, dst
			res, err := ValidateAndAssign(in, 1<<40, vo)
			if err != nil {
				t.Fatalf("%v->%v: %v", src, dst, err)
			}
			if res.Recompressed != (src != dst) {
				t.Fatalf("%v->%v: Recompressed %v", src, dst, res.Recompressed)
			}
			if res.FirstOffset != 1<<40 || res.LastOffset != 1<<40+29 || res.MaxTimestamp != recs[29].ts ||
				res.OffsetOfMaxTimestamp != res.LastOffset {
				t.Fatalf("%v->%v: result %+v", src, dst, res)
			}
			h := checkAssigned(t, res.Records, 1<<40, dst, recs)
			if h.ProducerID != 12 || h.ProducerEpoch != 1 || h.BaseSequence != 40 || !h.IsTransactional() {
				t.Fatalf("%v->%v: producer fields lost: %+v", src, dst, h)
			}
		}
	}
}

// TestValidateOffsetDeltasRewritten: offset deltas other than 0..n-1 are
// rewritten by rebuilding the batch (Kafka does so for compressed batches),
// never stored as sent.
func TestValidateOffsetDeltasRewritten(t *testing.T) {
	good := buildBatch(t, noProducer(CodecNone), someRecords(3, testNow))
	data := bytes.Join([][]byte{
		encodeRecord(0, 0, []byte("a"), []byte("1"), -1),
		encodeRecord(0, 1, []byte("b"), []byte("2"), -1),
		encodeRecord(5, 2, []byte("c"), []byte("3"), -1),
	}, nil)
	for _, c := range []Codec{CodecNone, CodecGzip} {
		comp, _ := Compress(c, nil, data)
		in := withData(good, comp, func(b []byte) {
			b[attributesPos+1] |= byte(c)
			binary.BigEndian.PutUint64(b[baseTimestampPos:], uint64(testNow))
		})
		res, err := ValidateAndAssign(in, 3, baseValidateOptions())
		if err != nil {
			t.Fatal(err)
		}
		if !res.Recompressed {
			t.Fatalf("%v: not rebuilt", c)
		}
		checkAssigned(t, res.Records, 3, c, []testRecord{
			{ts: testNow, key: []byte("a"), value: []byte("1")},
			{ts: testNow + 1, key: []byte("b"), value: []byte("2")},
			{ts: testNow + 2, key: []byte("c"), value: []byte("3")},
		})
	}
}

func TestValidateUncompressedNoAllocs(t *testing.T) {
	batch := buildBatch(t, noProducer(CodecNone), someRecords(100, testNow-1000))
	opts := baseValidateOptions()
	opts.Compacted = true
	allocs := testing.AllocsPerRun(100, func() {
		SetBaseOffset(batch, 0) // the producer's; the last run assigned 1000
		if _, err := ValidateAndAssign(batch, 1000, opts); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per validation, want 0", allocs)
	}
}

func TestKafkaErrorCode(t *testing.T) {
	if KafkaErrorCode(nil) != 0 {
		t.Fatal("nil")
	}
	if KafkaErrorCode(errors.New("other")) != kerr.UnknownServerError.Code {
		t.Fatal("unknown")
	}
	if !errors.Is(ErrShortBatch, ErrCorruptMessage) || KafkaErrorCode(ErrShortBatch) != kerr.CorruptMessage.Code {
		t.Fatal("ErrShortBatch is a corrupt message")
	}
}
