package record

import (
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/s2"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Decompression bombs (issue #20 item 6): a small compressed batch that
// expands to hundreds of megabytes must be refused with MESSAGE_TOO_LARGE
// while holding no more than the codec's state and one record.

// bombCodecs are the codecs as producers write them; "snappy-raw" is a raw
// snappy block (librdkafka, franz-go), "snappy" the xerial framing (Java).
var bombCodecs = []string{"gzip", "snappy", "snappy-raw", "lz4", "zstd"}

// bombBatch is a batch of n records of size zero bytes each, compressed.
func bombBatch(t *testing.T, codec string, n, size int) []byte {
	t.Helper()
	c := map[string]Codec{"gzip": CodecGzip, "snappy": CodecSnappy, "snappy-raw": CodecSnappy, "lz4": CodecLZ4, "zstd": CodecZstd}[codec]
	value := make([]byte, size)
	recs := make([]testRecord, n)
	for i := range recs {
		recs[i] = testRecord{ts: testNow, key: []byte("k"), value: value}
	}
	batch := buildBatch(t, noProducer(c), recs)
	if codec == "snappy-raw" {
		plain := buildBatch(t, noProducer(CodecNone), recs)
		batch = withData(batch, s2.EncodeSnappy(nil, plain[HeaderSize:]), nil)
	}
	return batch
}

// allocatedDuring is how many bytes f allocated.
func allocatedDuring(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestDecompressionBombOneRecord: one 16 MiB record compressed to a few KB
// (the 255 MiB zstd record, smaller to keep the test quick and
// within snappy's ratio of about 21) is refused as larger than
// max.message.bytes, and validation allocates a few MiB at most, not the
// record (a raw snappy block decodes whole: its size is known first and
// reserved).
func TestDecompressionBombOneRecord(t *testing.T) {
	const size = 16 << 20
	for _, codec := range bombCodecs {
		t.Run(codec, func(t *testing.T) {
			batch := bombBatch(t, codec, 1, size)
			t.Logf("%s: a %d-byte batch holding one %d-byte record", codec, len(batch), size)
			opts := baseValidateOptions()
			opts.Decompression = NewDecompressionBudget(DefaultDecompressionMemory)
			var err error
			alloc := allocatedDuring(func() { _, err = ValidateAndAssign(batch, 0, opts) })
			if !errors.Is(err, ErrMessageTooLarge) || KafkaErrorCode(err) != kerr.MessageTooLarge.Code {
				t.Fatalf("err = %v, want MESSAGE_TOO_LARGE", err)
			}
			// The codec's state (lz4's 4 MiB blocks at most) and one record
			// of max.message.bytes.
			limit := uint64(12 << 20)
			if codec == "snappy-raw" {
				limit += size
			}
			if alloc > limit {
				t.Errorf("validation allocated %d bytes", alloc)
			}
			if n := opts.Decompression.InUse(); n != 0 {
				t.Errorf("%d bytes of the budget still reserved", n)
			}
		})
	}
}

// TestDecompressionBombManyRecords: records each within max.message.bytes
// are streamed one at a time (the batch is stored as produced); past the
// budget's capacity the batch is refused.
func TestDecompressionBombManyRecords(t *testing.T) {
	const n, size = 12, 1 << 20
	for _, codec := range bombCodecs {
		t.Run(codec, func(t *testing.T) {
			batch := bombBatch(t, codec, n, size)
			opts := baseValidateOptions()
			opts.Decompression = NewDecompressionBudget(DefaultDecompressionMemory)
			var res ValidateResult
			var err error
			alloc := allocatedDuring(func() { res, err = ValidateAndAssign(clone(batch), 0, opts) })
			if err != nil {
				t.Fatalf("validate: %v", err)
			}
			if res.NumRecords != n || res.Recompressed {
				t.Errorf("%d records, recompressed %v; want %d in place", res.NumRecords, res.Recompressed, n)
			}
			limit := uint64(12 << 20)
			if codec == "snappy-raw" {
				limit += n * size // a raw block decodes whole
			}
			if alloc > limit {
				t.Errorf("validation of %d records of %d bytes allocated %d bytes", n, size, alloc)
			}

			opts.Decompression = NewDecompressionBudget(8 << 20)
			if _, err := ValidateAndAssign(clone(batch), 0, opts); !errors.Is(err, ErrMessageTooLarge) {
				t.Errorf("a batch decompressing to %d bytes with an 8 MiB budget: err = %v, want MESSAGE_TOO_LARGE", n*size, err)
			}
		})
	}
}

// TestDecompressionRebuildWithinBudget: a batch recompressed to the topic's
// codec is decompressed whole, once its size is known, and the budget is
// given back afterwards.
func TestDecompressionRebuildWithinBudget(t *testing.T) {
	recs := someRecords(50, testNow)
	batch := buildBatch(t, noProducer(CodecGzip), recs)
	opts := baseValidateOptions()
	opts.UseProducerCodec, opts.TargetCodec = false, CodecLZ4
	opts.Decompression = NewDecompressionBudget(DefaultDecompressionMemory)
	res, err := ValidateAndAssign(batch, 10, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Recompressed {
		t.Fatal("not recompressed")
	}
	checkAssigned(t, res.Records, 10, CodecLZ4, recs)
	if n := opts.Decompression.InUse(); n != 0 {
		t.Errorf("%d bytes of the budget still reserved", n)
	}
}

// TestDecompressionBudgetWaits: a reservation that does not fit waits for
// the ones before it, first come first served.
func TestDecompressionBudgetWaits(t *testing.T) {
	b := NewDecompressionBudget(4 << 20)
	r1 := b.acquire(3 << 20)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		b.acquire(2 << 20)()
	}()
	// The second waits; the third, which would fit, waits behind it.
	deadline := time.Now().Add(10 * time.Second)
	for !waiting(b, 1) {
		if time.Now().After(deadline) {
			t.Fatal("second reservation never waited")
		}
		time.Sleep(time.Millisecond)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		b.acquire(1 << 20)()
	}()
	for !waiting(b, 2) {
		if time.Now().After(deadline) {
			t.Fatal("third reservation never waited")
		}
		time.Sleep(time.Millisecond)
	}
	r1()
	wg.Wait()
	if n := b.InUse(); n != 0 {
		t.Errorf("%d bytes still reserved", n)
	}
	// More than the capacity is clamped to it rather than waiting forever.
	b.acquire(1 << 30)()
}

func waiting(b *DecompressionBudget, n int) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.waiters) == n
}

// TestEachRecordStreams: EachRecord yields what ReadRecords does, stops when
// told, and reads a compressed batch holding one record at a time.
func TestEachRecordStreams(t *testing.T) {
	for _, c := range allCodecs {
		recs := someRecords(30, testNow)
		batch := buildBatch(t, noProducer(c), recs)
		_, want, err := ReadRecords(batch)
		if err != nil {
			t.Fatal(err)
		}
		var got []Record
		if _, err := EachRecord(batch, func(r Record) bool {
			r.Key, r.Value = clone(r.Key), clone(r.Value)
			got = append(got, r)
			return len(got) < 20
		}); err != nil {
			t.Fatalf("%s: %v", c, err)
		}
		if len(got) != 20 {
			t.Fatalf("%s: %d records before stopping, want 20", c, len(got))
		}
		for i, r := range got {
			if string(r.Key) != string(want[i].Key) || string(r.Value) != string(want[i].Value) || r.OffsetDelta != want[i].OffsetDelta ||
				len(r.Headers) != len(want[i].Headers) {
				t.Fatalf("%s: record %d differs", c, i)
			}
		}
	}
	for _, codec := range bombCodecs {
		if codec == "snappy-raw" {
			continue // a raw block decodes whole
		}
		batch := bombBatch(t, codec, 12, 1<<20)
		n := 0
		alloc := allocatedDuring(func() {
			_, err := EachRecord(batch, func(Record) bool { n++; return true })
			if err != nil {
				t.Errorf("%s: %v", codec, err)
			}
		})
		if n != 12 || alloc > 12<<20 {
			t.Errorf("%s: %d records, %d bytes allocated reading a batch of 12 MiB", codec, n, alloc)
		}
	}
}

// TestZstdFrames: the frame walk finds every frame's window and content
// size, so concatenated frames cannot hide a large window behind a small
// first one.
func TestZstdFrames(t *testing.T) {
	small, err := Compress(CodecZstd, nil, make([]byte, 1000))
	if err != nil {
		t.Fatal(err)
	}
	large, err := Compress(CodecZstd, nil, make([]byte, 3<<20))
	if err != nil {
		t.Fatal(err)
	}
	src := append(append([]byte(nil), small...), large...)
	window, total, known, err := zstdFrames(src)
	if err != nil || !known || total != 1000+3<<20 {
		t.Fatalf("frames: window %d, total %d, known %v, err %v", window, total, known, err)
	}
	if first, _, _, _ := zstdFrames(small); window <= first {
		t.Errorf("window %d, no larger than the first frame's %d", window, first)
	}
	if _, _, _, err := zstdFrames(src[:len(src)-3]); err == nil {
		t.Error("a truncated frame walked without error")
	}
}
