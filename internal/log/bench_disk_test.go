package log

import (
	"os"
	"path/filepath"
	"testing"

	"gregor/internal/record"
)

// The engine's append throughput beside the disk's, in one run:
//
//	go test ./internal/log -run XXX -bench 'Append16KiB' -benchtime 1000x
//
// Each benchmark writes b.N batches of 16 records of 1 KiB (about 16 KiB) and
// ends with one fsync inside the timing, so the figures are bytes on the
// disk per second, not into the page cache. BaselineWriteFsync is the limit:
// the same bytes written with plain write(2) calls and one fsync.

// batch16KiB is a producer's batch of 16 records of 1 KiB.
func batch16KiB(b *testing.B) []byte {
	batch := simpleBatch(b, 0, 16, 1_700_000_000_000, 1000)
	if len(batch) < 16<<10-1024 || len(batch) > 16<<10+1024 {
		b.Fatalf("batch is %d bytes", len(batch))
	}
	return batch
}

func leaderOpts() record.ValidateOptions {
	return record.ValidateOptions{
		Now:                  1_700_000_000_000,
		MaxMessageBytes:      record.DefaultMaxMessageBytes,
		TimestampBeforeMaxMs: record.DefaultTimestampBeforeMaxMs,
		TimestampAfterMaxMs:  record.DefaultTimestampAfterMaxMs,
		UseProducerCodec:     true,
	}
}

// BenchmarkAppend16KiBLeader is the produce path of the engine: validate
// (CRC, record checks, no decompression for uncompressed batches), assign
// offsets in place, write, index; one fsync at the end.
func BenchmarkAppend16KiBLeader(b *testing.B) {
	l, _ := openTestLog(b, DefaultConfig())
	defer l.Close()
	batch := batch16KiB(b)
	opts := leaderOpts()
	b.SetBytes(int64(len(batch)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		record.SetBaseOffset(batch, 0) // as a producer sends it
		if _, err := l.AppendAsLeader(batch, 1, opts); err != nil {
			b.Fatal(err)
		}
	}
	if err := l.Flush(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkAppend16KiBFollower is the replication path: CRC check, write,
// index; one fsync at the end.
func BenchmarkAppend16KiBFollower(b *testing.B) {
	l, _ := openTestLog(b, DefaultConfig())
	defer l.Close()
	batch := batch16KiB(b)
	b.SetBytes(int64(len(batch)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		record.SetBaseOffset(batch, int64(i)*16)
		if _, err := l.AppendAsFollower(batch); err != nil {
			b.Fatal(err)
		}
	}
	if err := l.Flush(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkAppend16KiBBaselineWriteFsync is the disk's limit for the same
// bytes: sequential write(2) of each batch, one fsync at the end.
func BenchmarkAppend16KiBBaselineWriteFsync(b *testing.B) {
	f, err := os.Create(filepath.Join(b.TempDir(), "baseline"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	batch := batch16KiB(b)
	b.SetBytes(int64(len(batch)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := f.Write(batch); err != nil {
			b.Fatal(err)
		}
	}
	if err := f.Sync(); err != nil {
		b.Fatal(err)
	}
}
