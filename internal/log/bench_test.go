package log

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"gregor/internal/record"
)

// benchBatch is an uncompressed batch of about 1 KiB: 10 records of 80 bytes.
func benchBatch(b *testing.B) []byte {
	batch := simpleBatch(b, 0, 10, 1_700_000_000_000, 80)
	if len(batch) < 900 || len(batch) > 1100 {
		b.Fatalf("bench batch is %d bytes", len(batch))
	}
	return batch
}

// BenchmarkAppend appends 1 KiB batches that carry their offsets (the
// follower path: CRC check, write, index), page cache only.
func BenchmarkAppend(b *testing.B) {
	l, _ := openTestLog(b, DefaultConfig())
	defer l.Close()
	batch := benchBatch(b)
	b.SetBytes(int64(len(batch)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		record.SetBaseOffset(batch, int64(i)*10)
		if _, err := l.AppendAsFollower(batch); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAppendAsLeader adds validation and offset assignment
// (record.ValidateAndAssign, in place) to the append.
func BenchmarkAppendAsLeader(b *testing.B) {
	l, _ := openTestLog(b, DefaultConfig())
	defer l.Close()
	batch := benchBatch(b)
	opts := record.ValidateOptions{
		Now:                  1_700_000_000_000,
		MaxMessageBytes:      record.DefaultMaxMessageBytes,
		TimestampBeforeMaxMs: record.DefaultTimestampBeforeMaxMs,
		TimestampAfterMaxMs:  record.DefaultTimestampAfterMaxMs,
		UseProducerCodec:     true,
	}
	b.SetBytes(int64(len(batch)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		record.SetBaseOffset(batch, 0) // a producer's batch
		if _, err := l.AppendAsLeader(batch, 1, opts); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRead reads 1 MiB at a time through a 64 MiB log of 1 KiB batches,
// as a consumer fetching from the page cache.
func BenchmarkRead(b *testing.B) {
	l, _ := openTestLog(b, DefaultConfig())
	defer l.Close()
	batch := benchBatch(b)
	const n = 64 << 10
	for i := 0; i < n; i++ {
		record.SetBaseOffset(batch, int64(i)*10)
		if _, err := l.AppendAsFollower(batch); err != nil {
			b.Fatal(err)
		}
	}
	leo := l.LogEndOffset()
	b.ReportAllocs()
	b.ResetTimer()
	var total int64
	off := int64(0)
	for i := 0; i < b.N; i++ {
		res, err := l.Read(off, 1<<20, math.MaxInt64, true)
		if err != nil {
			b.Fatal(err)
		}
		total += int64(len(res.Records))
		off += int64(len(res.Records) / len(batch) * 10)
		if off >= leo {
			off = 0
		}
	}
	b.SetBytes(total / int64(b.N))
}

// BenchmarkBaselinePwrite is the physical floor for BenchmarkAppend: a bare
// 1 KiB positional write to a file in the same directory, nothing else.
func BenchmarkBaselinePwrite(b *testing.B) {
	l, dir := openTestLog(b, DefaultConfig())
	defer l.Close()
	f, err := os.Create(filepath.Join(dir, "baseline"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	buf := benchBatch(b)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := f.WriteAt(buf, int64(i)*int64(len(buf))); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBaselinePread is the floor for BenchmarkRead: 1 MiB positional
// reads of the same 64 MiB of page cache into a fresh buffer each time.
func BenchmarkBaselinePread(b *testing.B) {
	l, dir := openTestLog(b, DefaultConfig())
	defer l.Close()
	f, err := os.Create(filepath.Join(dir, "baseline"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	const size = 64 << 20
	if _, err := f.WriteAt(make([]byte, size), 0); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(1 << 20)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		buf := make([]byte, 1<<20)
		if _, err := f.ReadAt(buf, int64(i%64)<<20); err != nil {
			b.Fatal(err)
		}
	}
}
