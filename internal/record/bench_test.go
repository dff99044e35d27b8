package record

import (
	"bytes"
	"fmt"
	"testing"
)

// benchRecords are 100 records of ~100-byte values, a typical produce batch.
func benchRecords() []testRecord {
	recs := make([]testRecord, 100)
	for i := range recs {
		recs[i] = testRecord{
			ts:    testNow - 100 + int64(i),
			key:   []byte(fmt.Sprintf("user-%06d", i)),
			value: bytes.Repeat([]byte(fmt.Sprintf("event %d payload;", i)), 6),
		}
	}
	return recs
}

func BenchmarkValidateAndAssign(b *testing.B) {
	recs := benchRecords()
	for _, c := range allCodecs {
		b.Run(c.String(), func(b *testing.B) {
			batch := buildBatch(b, noProducer(c), recs)
			opts := baseValidateOptions()
			b.SetBytes(int64(len(batch)))
			b.ReportAllocs()
			for b.Loop() {
				SetBaseOffset(batch, 0) // the producer's; the last run assigned one
				if _, err := ValidateAndAssign(batch, 1000, opts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("recompress-none-to-zstd", func(b *testing.B) {
		batch := buildBatch(b, noProducer(CodecNone), recs)
		opts := baseValidateOptions()
		opts.UseProducerCodec, opts.TargetCodec = false, CodecZstd
		b.SetBytes(int64(len(batch)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := ValidateAndAssign(batch, 1000, opts); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkBuilder(b *testing.B) {
	recs := benchRecords()
	for _, c := range allCodecs {
		b.Run(c.String(), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				bl := NewBuilder(noProducer(c))
				for _, r := range recs {
					bl.Append(r.ts, r.key, r.value, r.headers)
				}
				if _, err := bl.Build(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
