package replica

import (
	"testing"
	"time"

	"gregor/internal/metadata"
	"gregor/internal/record"
)

// producerBatch is a producer's uncompressed batch of n records of size
// bytes, with codec c.
func producerBatch(b *testing.B, n, size int, c record.Codec) []byte {
	bl := record.NewBuilder(record.BuilderOptions{Codec: c, ProducerID: record.NoProducerID,
		ProducerEpoch: record.NoProducerEpoch, BaseSequence: record.NoSequence})
	value := make([]byte, size)
	for i := range value {
		value[i] = byte('a' + i%26)
	}
	now := time.Now().UnixMilli()
	for i := 0; i < n; i++ {
		bl.Append(now, nil, value, nil)
	}
	batch, err := bl.Build()
	if err != nil {
		b.Fatal(err)
	}
	return batch
}

// BenchmarkProduceAppend is the produce path below the handler: leader
// check, validation, offset assignment, write, high watermark. allocs/op is
// the allocations per produced batch.
func BenchmarkProduceAppend(b *testing.B) {
	for _, bc := range []struct {
		name    string
		n, size int
		codec   record.Codec
	}{
		{"16x1KiB", 16, 1000, record.CodecNone},
		{"100x100B", 100, 100, record.CodecNone},
		{"16x1KiB-lz4", 16, 1000, record.CodecLZ4},
	} {
		b.Run(bc.name, func(b *testing.B) {
			m := newTestManager(b)
			feed(b, metadata.EmptyImage(), []*Manager{m}, createTopic("bench", topicID(1), 1, testNode)...)
			batch := producerBatch(b, bc.n, bc.size, bc.codec)
			b.SetBytes(int64(len(batch)))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				record.SetBaseOffset(batch, 0)
				if res := m.Append("bench", 0, 1, batch); res.Err != nil {
					b.Fatal(res.Err)
				}
			}
		})
	}
}
