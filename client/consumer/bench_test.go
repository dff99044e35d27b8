package consumer

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// BenchmarkConsumeVsFranz reads the same records from one in-process Gregor
// node with this consumer and with franz-go's, in the same run, from the
// start of a 3-partition topic. One op is one record; compare records/s and
// allocs/op between the pairs:
//
//	go test ./client/consumer -run '^$' -bench ConsumeVsFranz -benchmem -benchtime 300000x
func BenchmarkConsumeVsFranz(b *testing.B) {
	br := startGregor(b)
	for _, size := range []int{100, 1024} {
		topic := fmt.Sprintf("bench-%d", size)
		br.createTopic(b, topic, 3)
		have := 0
		fill := func(b *testing.B) {
			b.Helper()
			if have >= b.N {
				return
			}
			value := make([]byte, size)
			for i := range value {
				value[i] = byte('a' + i%26)
			}
			cl, err := kgo.NewClient(kgo.SeedBrokers(br.Addr), kgo.ProducerLinger(5*time.Millisecond),
				kgo.ProducerBatchMaxBytes(256<<10), kgo.MaxBufferedRecords(1<<20))
			if err != nil {
				b.Fatal(err)
			}
			defer cl.Close()
			for range b.N - have {
				cl.Produce(context.Background(), &kgo.Record{Topic: topic, Value: value}, nil)
			}
			if err := cl.Flush(context.Background()); err != nil {
				b.Fatal(err)
			}
			have = b.N
		}
		b.Run(fmt.Sprintf("gregor/%dB", size), func(b *testing.B) {
			fill(b)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			b.ReportAllocs()
			b.SetBytes(int64(size))
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			b.ResetTimer()
			start := time.Now() // from the client's creation, as for franz-go
			cfg := DefaultConfig(br.Addr)
			cfg.AutoOffsetReset = "earliest"
			c, err := New[[]byte, []byte](cfg, ByteArrayDeserializer{}, ByteArrayDeserializer{})
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close(context.Background())
			if err := c.Assign([]TopicPartition{{topic, 0}, {topic, 1}, {topic, 2}}); err != nil {
				b.Fatal(err)
			}
			for n := 0; n < b.N; {
				recs, err := c.Poll(ctx)
				if err != nil {
					b.Fatal(err)
				}
				n += len(recs)
			}
			report(b, start, &ms)
		})
		b.Run(fmt.Sprintf("franz/%dB", size), func(b *testing.B) {
			fill(b)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			b.ReportAllocs()
			b.SetBytes(int64(size))
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			b.ResetTimer()
			start := time.Now() // franz-go starts fetching when the client is made
			cl, err := kgo.NewClient(kgo.SeedBrokers(br.Addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
				topic: {0: kgo.NewOffset().AtStart(), 1: kgo.NewOffset().AtStart(), 2: kgo.NewOffset().AtStart()},
			}))
			if err != nil {
				b.Fatal(err)
			}
			defer cl.Close()
			for n := 0; n < b.N; {
				fs := cl.PollFetches(ctx)
				if err := fs.Err0(); err != nil {
					b.Fatal(err)
				}
				n += fs.NumRecords()
			}
			report(b, start, &ms)
		})
	}
}

// report adds records/s and allocs/record (exact, where allocs/op rounds
// below one to 0) since before, read when the timer started.
func report(b *testing.B, start time.Time, before *runtime.MemStats) {
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "records/s")
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/float64(b.N), "allocs/record")
}
