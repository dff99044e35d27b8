package producer

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"gregor/client/internal/clienttest"
)

// BenchmarkProduceVsFranz produces to one in-process Gregor node with this
// producer and with franz-go's, same settings (acks=all, idempotent, no
// compression, linger 5 ms, 256 KiB batches), in the same run. One op is one
// record; compare records/s and allocs/op between the pairs:
//
//	go test ./client/producer -run '^$' -bench ProduceVsFranz -benchmem -benchtime 200000x
func BenchmarkProduceVsFranz(b *testing.B) {
	br := clienttest.StartGregor(b)
	for _, size := range []int{100, 1024} {
		value := make([]byte, size)
		for i := range value {
			value[i] = byte('a' + i%26)
		}
		topic := fmt.Sprintf("bench-%d", size)
		br.CreateTopic(b, topic, 3)
		b.Run(fmt.Sprintf("gregor/%dB", size), func(b *testing.B) {
			cfg := DefaultConfig(br.Addr)
			cfg.Linger = 5 * time.Millisecond
			cfg.BatchSize = 256 << 10
			cfg.BufferMemory = 64 << 20
			p, err := New[[]byte, []byte](cfg, ByteArraySerializer{}, ByteArraySerializer{})
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close(time.Minute)
			ctx := context.Background()
			// Warm up: metadata and producer id.
			if _, err := p.SendSync(ctx, Record[[]byte, []byte]{Topic: topic, Value: value}); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.SetBytes(int64(size))
			b.ResetTimer()
			start := time.Now()
			for range b.N {
				if err := p.Send(ctx, Record[[]byte, []byte]{Topic: topic, Value: value}, nil); err != nil {
					b.Fatal(err)
				}
			}
			if err := p.Flush(ctx); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "records/s")
		})
		b.Run(fmt.Sprintf("franz/%dB", size), func(b *testing.B) {
			cl, err := kgo.NewClient(kgo.SeedBrokers(br.Addr), kgo.ProducerLinger(5*time.Millisecond),
				kgo.ProducerBatchMaxBytes(256<<10), kgo.ProducerBatchCompression(kgo.NoCompression()),
				kgo.MaxBufferedBytes(64<<20), kgo.RequiredAcks(kgo.AllISRAcks()))
			if err != nil {
				b.Fatal(err)
			}
			defer cl.Close()
			ctx := context.Background()
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: value}).FirstErr(); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.SetBytes(int64(size))
			b.ResetTimer()
			start := time.Now()
			for range b.N {
				cl.Produce(ctx, &kgo.Record{Topic: topic, Value: value}, nil)
			}
			if err := cl.Flush(ctx); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "records/s")
		})
	}
}
