package log

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"gregor/internal/record"
)

// BenchmarkClean measures the cleaner on a dirty log of about 32 MiB: 100
// records of 16-byte keys and 100-byte values per batch, keys drawn from a
// pool a sixth the size of the log, so that about five records in six go.
// The reported MB/s is dirty log bytes cleaned per second, from the offset
// map pass to the last swap (page cache warm: the log was just written).
func BenchmarkClean(b *testing.B) {
	for _, codec := range []record.Codec{record.CodecNone, record.CodecLZ4, record.CodecZstd} {
		b.Run(codec.String(), func(b *testing.B) { benchmarkClean(b, codec) })
	}
}

func benchmarkClean(b *testing.B, codec record.Codec) {
	cfg := compactConfig()
	cfg.SegmentBytes = 16 << 20
	cfg.IndexIntervalBytes = 4096
	cfg.SegmentIndexBytes = 10 << 20
	template := filepath.Join(b.TempDir(), "logs", "topic-0")
	l, err := Open(template, cfg, 0, 0, testLogger())
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	const perBatch, keys = 100, 50_000
	value := make([]byte, 100)
	for l.Size() < 32<<20 {
		recs := make([]kv, perBatch)
		for i := range recs {
			for j := range value {
				value[j] = byte('a' + rng.IntN(26))
			}
			recs[i] = kv{key: []byte(fmt.Sprintf("key-%011d", rng.IntN(keys))), value: clone(value)}
		}
		appendKeyed(b, l, testNowMs, codec, noProducer, recs...)
	}
	if err := l.Roll(); err != nil {
		b.Fatal(err)
	}
	dirty := l.Size()
	if err := l.Close(); err != nil {
		b.Fatal(err)
	}

	b.SetBytes(dirty)
	b.ResetTimer()
	var written, retained, read int64
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		dir := filepath.Join(b.TempDir(), "logs", "topic-0")
		copyDir(b, template, dir)
		markClean(b, dir)
		l, err := Open(dir, cfg, 0, 0, testLogger())
		if err != nil {
			b.Fatal(err)
		}
		l.SetHighWatermark(l.LogEndOffset())
		tc := newTestCleaner(b, 128<<20)
		tc.c.ioBufferSize = 256 << 10 // Kafka's default share: 512 KiB / 1 thread / 2
		tc.c.offsetMap.clear()        // allocate outside the timing, as a long-lived thread has
		b.StartTimer()
		tc.cleanFully(b, l, testNowMs)
		b.StopTimer()
		written += tc.stats.BytesWritten
		retained += tc.stats.MessagesRetained
		read += tc.stats.MessagesRead
		l.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(written)/float64(int64(b.N)*dirty), "written/dirty")
	b.ReportMetric(float64(retained)/float64(read), "retained/read")
}
