package record

import (
	"bytes"
	"math"
	"testing"
)

// FuzzParseBatch feeds arbitrary bytes to the batch reader: it must never
// panic, and a batch it accepts must survive a rebuild unchanged.
func FuzzParseBatch(f *testing.F) {
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _ = ParseHeader(data)
		h, recs, err := ReadRecords(data)
		if err != nil && len(data) >= HeaderSize {
			// Mutations almost never keep the CRC right; fix it so the
			// fuzzer reaches the record parser.
			data = bytes.Clone(data)
			UpdateCRC(data)
			h, recs, err = ReadRecords(data)
		}
		if err != nil {
			return
		}
		if len(recs) != int(h.NumRecords) {
			t.Fatalf("%d records, header says %d", len(recs), h.NumRecords)
		}
		// The streaming reader yields the same records. (A zstd frame
		// asking for a window past maxZstdWindow reads whole but not as a
		// stream.)
		i := 0
		_, err = EachRecord(data, func(r Record) bool {
			if i >= len(recs) || !bytes.Equal(r.Key, recs[i].Key) || !bytes.Equal(r.Value, recs[i].Value) ||
				r.OffsetDelta != recs[i].OffsetDelta || len(r.Headers) != len(recs[i].Headers) {
				t.Fatalf("EachRecord record %d differs from ReadRecords'", i)
			}
			i++
			return true
		})
		if (err != nil || i != len(recs)) && h.Compression() != CodecZstd {
			t.Fatalf("EachRecord read %d of %d records: %v", i, len(recs), err)
		}
		b := NewBuilder(BuilderOptions{
			BaseOffset: h.BaseOffset, Codec: h.Compression(), ProducerID: h.ProducerID,
			ProducerEpoch: h.ProducerEpoch, BaseSequence: h.BaseSequence, PartitionLeaderEpoch: h.PartitionLeaderEpoch,
			BaseTimestamp: h.BaseTimestamp,
		})
		for _, r := range recs {
			b.Append(h.BaseTimestamp+r.TimestampDelta, r.Key, r.Value, r.Headers)
		}
		if len(recs) == 0 {
			return
		}
		rebuilt, err := b.Build()
		if err != nil {
			t.Fatalf("rebuild: %v", err)
		}
		_, again, err := ReadRecords(rebuilt)
		if err != nil {
			t.Fatalf("read rebuilt: %v", err)
		}
		for i := range recs {
			a, b := recs[i], again[i]
			if !bytes.Equal(a.Key, b.Key) || (a.Key == nil) != (b.Key == nil) || !bytes.Equal(a.Value, b.Value) ||
				(a.Value == nil) != (b.Value == nil) || len(a.Headers) != len(b.Headers) {
				t.Fatalf("record %d changed: %+v -> %+v", i, a, b)
			}
			if h.BaseTimestamp != 0 && a.TimestampDelta != b.TimestampDelta {
				t.Fatalf("record %d timestamp delta %d -> %d", i, a.TimestampDelta, b.TimestampDelta)
			}
		}
	})
}

// FuzzValidateAndAssign feeds arbitrary produce records to the validator
// with options chosen by mode: it must never panic, must leave rejected
// input unchanged, and what it accepts must read back with the offsets it
// reported.
func FuzzValidateAndAssign(f *testing.F) {
	f.Add([]byte{}, int64(0), uint8(0))
	f.Fuzz(func(t *testing.T, data []byte, nextOffset int64, mode uint8) {
		if nextOffset < 0 || nextOffset > 1<<62 {
			nextOffset &= 1<<62 - 1
		}
		opts := ValidateOptions{
			Now:                  testNow,
			MaxMessageBytes:      DefaultMaxMessageBytes,
			TimestampBeforeMaxMs: math.MaxInt64,
			TimestampAfterMaxMs:  math.MaxInt64,
			Compacted:            mode&0x08 != 0,
			LogAppendTime:        mode&0x10 != 0,
			PartitionLeaderEpoch: 3,
		}
		if c := Codec(mode & 0x07); c <= CodecZstd {
			opts.TargetCodec = c
		} else {
			opts.UseProducerCodec = true
		}
		if mode&0x20 != 0 {
			opts.TimestampBeforeMaxMs, opts.TimestampAfterMaxMs = 1000, 1000
		}
		if mode&0x80 != 0 {
			opts.Decompression = NewDecompressionBudget(1 << 20)
		}
		if mode&0x40 != 0 && len(data) >= HeaderSize {
			data = bytes.Clone(data)
			UpdateCRC(data) // reach past the CRC check
		}
		in := bytes.Clone(data)
		res, err := ValidateAndAssign(in, nextOffset, opts)
		if err != nil {
			if !bytes.Equal(in, data) {
				t.Fatalf("input changed on error %v", err)
			}
			_ = KafkaErrorCode(err)
			return
		}
		h, recs, err := ReadRecords(res.Records)
		if err != nil {
			t.Fatalf("accepted batch does not read back: %v", err)
		}
		if h.BaseOffset != nextOffset || h.LastOffset() != res.LastOffset || len(recs) != res.NumRecords ||
			h.PartitionLeaderEpoch != 3 || h.LogAppendTime() != opts.LogAppendTime {
			t.Fatalf("header %+v, result %+v", h, res)
		}
		for i, r := range recs {
			if r.OffsetDelta != int32(i) {
				t.Fatalf("record %d has offset delta %d", i, r.OffsetDelta)
			}
			if opts.Compacted && r.Key == nil {
				t.Fatalf("keyless record %d accepted on a compacted topic", i)
			}
		}
	})
}
