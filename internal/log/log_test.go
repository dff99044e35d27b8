package log

import (
	"bytes"
	"errors"
	"math"
	"sync"
	"testing"

	"gregor/internal/record"
)

func TestAppendReadRoundTrip(t *testing.T) {
	l, _ := openTestLog(t, testConfig())
	defer l.Close()
	batches := fillLog(t, l, 20, 5, 100, 1000)
	if got := l.LogEndOffset(); got != 100 {
		t.Fatalf("LEO = %d, want 100", got)
	}
	all := bytes.Join(batches, nil)
	res, err := l.Read(0, math.MaxInt32, math.MaxInt64, false)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(res.Records, all) || res.FirstBatchOffset != 0 {
		t.Fatalf("read all: %d bytes from %d, want %d bytes from 0", len(res.Records), res.FirstBatchOffset, len(all))
	}
	// Every offset reads from the batch that holds it.
	for off := int64(0); off < 100; off++ {
		res, err := l.Read(off, math.MaxInt32, math.MaxInt64, false)
		if err != nil {
			t.Fatal(err)
		}
		i := off / 5
		want := bytes.Join(batches[i:], nil)
		if res.FirstBatchOffset != i*5 || !bytes.Equal(res.Records, want) {
			t.Fatalf("read %d: first batch %d, %d bytes; want %d, %d bytes", off, res.FirstBatchOffset, len(res.Records), i*5, len(want))
		}
	}
	if l.Size() != int64(len(all)) {
		t.Fatalf("Size = %d, want %d", l.Size(), len(all))
	}
}

func TestAppendAsLeaderAssignsOffsets(t *testing.T) {
	l, _ := openTestLog(t, testConfig())
	defer l.Close()
	opts := record.ValidateOptions{
		Now:                  5000,
		MaxMessageBytes:      record.DefaultMaxMessageBytes,
		TimestampBeforeMaxMs: record.DefaultTimestampBeforeMaxMs,
		TimestampAfterMaxMs:  record.DefaultTimestampAfterMaxMs,
		UseProducerCodec:     true,
	}
	var want []byte
	for i := 0; i < 3; i++ {
		b := simpleBatch(t, 0, 4, 4000+int64(i), 10)
		info, err := l.AppendAsLeader(b, 7, opts)
		if err != nil {
			t.Fatal(err)
		}
		if info.FirstOffset != int64(i*4) || info.LastOffset != int64(i*4+3) || info.NumRecords != 4 {
			t.Fatalf("append %d: %+v", i, info)
		}
		want = append(want, b...) // assigned in place
	}
	res, err := l.Read(0, math.MaxInt32, math.MaxInt64, false)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(res.Records, want) {
		t.Fatal("read back differs from appended batches")
	}
	h, _ := record.ParseHeader(res.Records[len(res.Records)-len(want)/3:])
	if h.BaseOffset != 8 || h.PartitionLeaderEpoch != 7 {
		t.Fatalf("last batch base %d epoch %d, want 8 and 7", h.BaseOffset, h.PartitionLeaderEpoch)
	}
	// A rejected batch leaves the log untouched.
	bad := simpleBatch(t, 0, 1, 1, 1)
	bad[len(bad)-1] ^= 0xff
	if _, err := l.AppendAsLeader(bad, 7, opts); !errors.Is(err, record.ErrCorruptMessage) {
		t.Fatalf("corrupt batch: %v", err)
	}
	if l.LogEndOffset() != 12 {
		t.Fatalf("LEO = %d after rejected append", l.LogEndOffset())
	}
}

func TestAppendAsFollowerChecks(t *testing.T) {
	l, _ := openTestLog(t, testConfig())
	defer l.Close()
	mustAppendFollower(t, l, simpleBatch(t, 0, 5, 1, 10))
	if _, err := l.AppendAsFollower(simpleBatch(t, 3, 5, 1, 10)); !errors.Is(err, ErrUnexpectedAppendOffset) {
		t.Fatalf("overlapping append: %v", err)
	}
	outOfOrder := append(simpleBatch(t, 10, 2, 1, 10), simpleBatch(t, 5, 2, 1, 10)...)
	if _, err := l.AppendAsFollower(outOfOrder); !errors.Is(err, ErrOffsetsOutOfOrder) {
		t.Fatalf("out of order: %v", err)
	}
	bad := simpleBatch(t, 5, 2, 1, 10)
	bad[len(bad)-3] ^= 1
	if _, err := l.AppendAsFollower(bad); !errors.Is(err, record.ErrCorruptMessage) {
		t.Fatalf("bad crc: %v", err)
	}
	// A gap (compacted leader) is fine; a partial trailing batch is dropped.
	next := simpleBatch(t, 20, 2, 1, 10)
	partial := simpleBatch(t, 22, 2, 1, 10)
	info := mustAppendFollower(t, l, append(append([]byte{}, next...), partial[:30]...))
	if info.FirstOffset != 20 || info.LastOffset != 21 || info.Bytes != len(next) {
		t.Fatalf("append with gap: %+v", info)
	}
	if l.LogEndOffset() != 22 {
		t.Fatalf("LEO = %d, want 22", l.LogEndOffset())
	}
	// Reading from inside the gap starts at the next batch.
	res, err := l.Read(7, math.MaxInt32, math.MaxInt64, false)
	if err != nil || res.FirstBatchOffset != 20 {
		t.Fatalf("read in gap: %v first %d", err, res.FirstBatchOffset)
	}
}

func TestReadRules(t *testing.T) {
	l, _ := openTestLog(t, testConfig())
	defer l.Close()
	batches := fillLog(t, l, 10, 10, 50, 1) // offsets 0..99, batches of 10
	size := len(batches[0])

	// maxBytes cuts at whole batches.
	res, err := l.Read(0, int32(2*size+size/2), math.MaxInt64, false)
	if err != nil || !bytes.Equal(res.Records, bytes.Join(batches[:2], nil)) {
		t.Fatalf("maxBytes 2.5 batches: %v, %d bytes", err, len(res.Records))
	}
	// maxBytes below one batch: nothing, unless minOneBatch.
	res, err = l.Read(15, int32(size/2), math.MaxInt64, false)
	if err != nil || len(res.Records) != 0 || res.FirstBatchOffset != -1 {
		t.Fatalf("small maxBytes: %v, %d bytes", err, len(res.Records))
	}
	res, err = l.Read(15, int32(size/2), math.MaxInt64, true)
	if err != nil || !bytes.Equal(res.Records, batches[1]) || res.FirstBatchOffset != 10 {
		t.Fatalf("minOneBatch: %v, %d bytes from %d", err, len(res.Records), res.FirstBatchOffset)
	}
	res, err = l.Read(15, 0, math.MaxInt64, true)
	if err != nil || !bytes.Equal(res.Records, batches[1]) {
		t.Fatalf("minOneBatch with 0 bytes: %v, %d bytes", err, len(res.Records))
	}
	// maxOffset (the high watermark) is exclusive: a batch holding it is left out.
	for _, c := range []struct {
		maxOffset int64
		batches   int
	}{{30, 3}, {35, 3}, {31, 3}, {29, 2}, {100, 10}} {
		res, err = l.Read(0, math.MaxInt32, c.maxOffset, true)
		if err != nil || !bytes.Equal(res.Records, bytes.Join(batches[:c.batches], nil)) {
			t.Fatalf("maxOffset %d: %v, %d bytes, want %d batches", c.maxOffset, err, len(res.Records), c.batches)
		}
	}
	// The first batch straddles maxOffset: nothing, even with minOneBatch.
	res, err = l.Read(20, math.MaxInt32, 25, true)
	if err != nil || len(res.Records) != 0 {
		t.Fatalf("straddling maxOffset: %v, %d bytes", err, len(res.Records))
	}
	if res, err = l.Read(40, math.MaxInt32, 40, true); err != nil || len(res.Records) != 0 {
		t.Fatalf("offset at maxOffset: %v, %d bytes", err, len(res.Records))
	}
	// LEO reads nothing; beyond it is out of range.
	if res, err = l.Read(100, math.MaxInt32, math.MaxInt64, true); err != nil || len(res.Records) != 0 {
		t.Fatalf("read at LEO: %v, %d bytes", err, len(res.Records))
	}
	if _, err = l.Read(101, math.MaxInt32, math.MaxInt64, true); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read past LEO: %v", err)
	}
	if _, err = l.Read(-1, math.MaxInt32, math.MaxInt64, true); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read below log start: %v", err)
	}
}

func TestReadBelowLogStartOffset(t *testing.T) {
	l, dir := openTestLog(t, testConfig())
	fillLog(t, l, 5, 10, 10, 1)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l, err := Open(dir, testConfig(), 0, 20, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if l.LogStartOffset() != 20 {
		t.Fatalf("log start %d, want 20", l.LogStartOffset())
	}
	if _, err := l.Read(19, 1000, math.MaxInt64, true); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read below log start: %v", err)
	}
	if res, err := l.Read(20, 1<<20, math.MaxInt64, true); err != nil || res.FirstBatchOffset != 20 {
		t.Fatalf("read at log start: %v %d", err, res.FirstBatchOffset)
	}
	l.SetHighWatermark(5)
	if l.HighWatermark() != 20 {
		t.Fatalf("high watermark %d, want clamped to 20", l.HighWatermark())
	}
	l.SetHighWatermark(500)
	if l.HighWatermark() != 50 {
		t.Fatalf("high watermark %d, want clamped to 50", l.HighWatermark())
	}
}

func TestConcurrentReadsDuringAppends(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 8 << 10
	l, _ := openTestLog(t, cfg)
	defer l.Close()
	const batches = 300
	var wg sync.WaitGroup
	errc := make(chan error, 4)
	for r := 0; r < 4; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				leo := l.LogEndOffset()
				res, err := l.Read(max(leo-10, 0), 4096, math.MaxInt64, true)
				if err != nil {
					errc <- err
					return
				}
				// Whatever comes back is whole, valid batches.
				for b := res.Records; len(b) > 0; {
					h, err := record.ParseHeader(b)
					if err != nil || len(b) < h.Size() || validateBatch(b[:h.Size()], h) != nil {
						errc <- errors.New("reader saw a partial or corrupt batch")
						return
					}
					b = b[h.Size():]
				}
				if leo >= batches*3 {
					return
				}
			}
		}()
	}
	for i := 0; i < batches; i++ {
		mustAppendFollower(t, l, simpleBatch(t, int64(i*3), 3, int64(i), 100))
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
}
