package record

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Streaming decompression: produce validation reads the records of a
// compressed batch one at a time from a decompressing reader, as Kafka's
// LogValidator does with its streaming iterator, so that what it holds is
// the codec's window and one record, not the decompressed batch.

// maxZstdWindow is the largest zstd window a produced batch may ask for.
// zstd's own default limit is 128 MiB (windowLog 27); producers' levels use
// 8 MiB at most unless told otherwise, and a batch's frame is never larger
// than its content.
const maxZstdWindow = 64 << 20

// streamBufferSize is the read buffer between a decompressor and the record
// parser.
const streamBufferSize = 4 << 10

// gzipStateSize is about what a gzip (deflate) reader holds: its 32 KiB
// window, Huffman tables and input buffer.
const gzipStateSize = 64 << 10

var zstdStreams = sync.Pool{New: func() any {
	// Concurrency 1 decodes in the caller's goroutine: no goroutine is left
	// behind in the pool.
	d, _ := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true),
		zstd.WithDecoderMaxWindow(maxZstdWindow), zstd.WithDecoderMaxMemory(MaxDecompressedSize))
	return d
}}

// decompressState is how many bytes a streaming decompressor of src holds
// besides its output: the gzip window, the lz4 frame's blocks, the zstd
// frame's window, the largest snappy block. It reads only headers; data
// that is not what its headers say fails later, while decompressing. known
// and total are the decompressed size when the headers give it (zstd's
// content size, snappy's block lengths).
func decompressState(c Codec, src []byte) (state int64, total int64, known bool) {
	switch c {
	case CodecGzip:
		return gzipStateSize, 0, false
	case CodecLZ4:
		// The frame descriptor's BD byte names the block size; a reader
		// holds a compressed and a decompressed block.
		block := int64(4 << 20)
		if len(src) >= 6 && binary.LittleEndian.Uint32(src) == 0x184D2204 {
			switch (src[5] >> 4) & 7 {
			case 4:
				block = 64 << 10
			case 5:
				block = 256 << 10
			case 6:
				block = 1 << 20
			}
		}
		return 2 * block, 0, false
	case CodecZstd:
		// The largest window of the frames and two 128 KiB blocks; the
		// largest window allowed when the frames cannot be walked (the
		// decoder then fails on them).
		window, total, known, err := zstdFrames(src)
		if err != nil {
			window, known = maxZstdWindow, false
		}
		return int64(min(window, maxZstdWindow)) + 256<<10, int64(min(total, 1<<62)), known
	case CodecSnappy:
		if len(src) >= xerialHeaderSize && bytes.HasPrefix(src, xerialMagic[:]) {
			largest, total, err := xerialSizes(src)
			if err != nil {
				return 0, 0, false
			}
			return largest, total, true
		}
		n, err := s2.DecodedLen(src)
		if err != nil {
			return 0, 0, false
		}
		return int64(n), int64(n), true
	default:
		return 0, int64(len(src)), true
	}
}

// xerialSizes walks the xerial framing's block lengths and returns the
// largest block's and the whole decompressed size.
func xerialSizes(src []byte) (largest, total int64, err error) {
	for len(src) > 0 {
		if bytes.HasPrefix(src, xerialMagic[:]) {
			if len(src) < xerialHeaderSize {
				return 0, 0, errors.New("xerial header truncated")
			}
			src = src[xerialHeaderSize:]
			continue
		}
		if len(src) < 4 {
			return 0, 0, errors.New("xerial block length truncated")
		}
		n := binary.BigEndian.Uint32(src)
		src = src[4:]
		if uint64(n) > uint64(len(src)) {
			return 0, 0, fmt.Errorf("xerial block of %d bytes, %d left", n, len(src))
		}
		d, err := s2.DecodedLen(src[:n])
		if err != nil {
			return 0, 0, err
		}
		largest, total = max(largest, int64(d)), total+int64(d)
		src = src[n:]
	}
	return largest, total, nil
}

// zstdFrames walks the frames of src by their headers and block headers
// (RFC 8878) and returns the largest window any frame asks for and, when
// every frame declares it (known), their total content size.
func zstdFrames(src []byte) (window, total uint64, known bool, err error) {
	known = true
	for len(src) > 0 {
		var h zstd.Header
		if err := h.Decode(src); err != nil {
			return 0, 0, false, err
		}
		if h.Skippable {
			n := uint64(h.HeaderSize) + uint64(h.SkippableSize)
			if n > uint64(len(src)) {
				return 0, 0, false, errors.New("zstd skippable frame truncated")
			}
			src = src[n:]
			continue
		}
		w := h.WindowSize
		if h.SingleSegment {
			w = h.FrameContentSize
		}
		window = max(window, w)
		if h.HasFCS {
			total += min(h.FrameContentSize, 1<<62)
		} else {
			known = false
		}
		p := h.HeaderSize
		for {
			if len(src)-p < 3 {
				return 0, 0, false, errors.New("zstd block header truncated")
			}
			bh := uint32(src[p]) | uint32(src[p+1])<<8 | uint32(src[p+2])<<16
			p += 3
			size := int(bh >> 3)
			switch (bh >> 1) & 3 {
			case 1: // RLE: one byte repeated size times
				size = 1
			case 3:
				return 0, 0, false, errors.New("zstd reserved block type")
			}
			if size > len(src)-p {
				return 0, 0, false, errors.New("zstd block truncated")
			}
			p += size
			if bh&1 != 0 {
				break
			}
		}
		if h.HasCheckSum {
			p += 4
		}
		if p > len(src) {
			return 0, 0, false, errors.New("zstd checksum truncated")
		}
		src = src[p:]
	}
	return window, total, known, nil
}

// zstdContentSize is the frame's declared decompressed size, when it has one.
func zstdContentSize(src []byte) (uint64, bool) {
	var h zstd.Header
	if err := h.Decode(src); err != nil || !h.HasFCS {
		return 0, false
	}
	return h.FrameContentSize, true
}

// newDecompressReader returns a reader of src decompressed with c, and the
// function that gives its decoder back to the pool once reading is done.
func newDecompressReader(c Codec, src []byte) (io.Reader, func(), error) {
	switch c {
	case CodecGzip:
		r, _ := gzipReaders.Get().(*gzip.Reader)
		if r == nil {
			var err error
			if r, err = gzip.NewReader(bytes.NewReader(src)); err != nil {
				return nil, nil, err
			}
		} else if err := r.Reset(bytes.NewReader(src)); err != nil {
			gzipReaders.Put(r)
			return nil, nil, err
		}
		return r, func() { gzipReaders.Put(r) }, nil
	case CodecLZ4:
		r := lz4Readers.Get().(*lz4.Reader)
		r.Reset(bytes.NewReader(src))
		return r, func() { lz4Readers.Put(r) }, nil
	case CodecZstd:
		d := zstdStreams.Get().(*zstd.Decoder)
		if err := d.Reset(bytes.NewReader(src)); err != nil {
			zstdStreams.Put(d)
			return nil, nil, err
		}
		return d, func() {
			_ = d.Reset(nil) // drops the input
			zstdStreams.Put(d)
		}, nil
	case CodecSnappy:
		if len(src) >= xerialHeaderSize && bytes.HasPrefix(src, xerialMagic[:]) {
			return &xerialReader{src: src}, func() {}, nil
		}
		// A raw snappy block decodes at once; decompressState counted it.
		out, err := decodeSnappyBlock(nil, src, MaxDecompressedSize)
		if err != nil {
			return nil, nil, err
		}
		return bytes.NewReader(out), func() {}, nil
	case CodecNone:
		return bytes.NewReader(src), func() {}, nil
	default:
		return nil, nil, fmt.Errorf("%w: codec id %d", ErrUnsupportedCompression, int8(c))
	}
}

// xerialReader decodes the xerial snappy framing one block at a time.
type xerialReader struct {
	src   []byte
	block []byte // the decoded block being read
	pos   int
}

func (x *xerialReader) Read(p []byte) (int, error) {
	for x.pos == len(x.block) {
		if len(x.src) == 0 {
			return 0, io.EOF
		}
		if bytes.HasPrefix(x.src, xerialMagic[:]) {
			if len(x.src) < xerialHeaderSize {
				return 0, errors.New("xerial header truncated")
			}
			x.src = x.src[xerialHeaderSize:]
			continue
		}
		if len(x.src) < 4 {
			return 0, errors.New("xerial block length truncated")
		}
		n := binary.BigEndian.Uint32(x.src)
		x.src = x.src[4:]
		if uint64(n) > uint64(len(x.src)) {
			return 0, fmt.Errorf("xerial block of %d bytes, %d left", n, len(x.src))
		}
		var err error
		if x.block, err = decodeSnappyBlock(x.block[:0], x.src[:n], MaxDecompressedSize); err != nil {
			return 0, err
		}
		x.src, x.pos = x.src[n:], 0
	}
	n := copy(p, x.block[x.pos:])
	x.pos += n
	return n, nil
}

// boundedReader is a decompressor's output as the record parser reads it:
// it fails with ErrMessageTooLarge past limit bytes, and reports the
// decompressor's own failures as ErrCorruptMessage.
type boundedReader struct {
	r     io.Reader
	codec Codec
	read  int64
	limit int64
}

func (b *boundedReader) Read(p []byte) (int, error) {
	if int64(len(p)) > b.limit-b.read+1 {
		p = p[:b.limit-b.read+1]
	}
	n, err := b.r.Read(p)
	b.read += int64(n)
	if b.read > b.limit {
		return 0, fmt.Errorf("%w: the batch decompresses to more than %d bytes", ErrMessageTooLarge, b.limit)
	}
	if err != nil && err != io.EOF {
		err = fmt.Errorf("%w: %s decompress: %w", ErrCorruptMessage, b.codec, err)
	}
	return n, err
}

// recordStream reads a batch's records one at a time from a decompressed
// stream into one reused buffer, with the checks of recordIter, and refuses
// a record larger than maxRecord with ErrMessageTooLarge before reading it.
type recordStream struct {
	r         *bufio.Reader
	left      int32
	index     int32
	maxRecord int
	maxName   string // what maxRecord is, for the error
	buf       []byte
}

func (s *recordStream) next(r *rawRecord) (bool, error) {
	if s.left <= 0 {
		_, err := s.r.ReadByte()
		switch {
		case err == nil:
			return false, errRecordStructure("incorrect declared batch size, bytes remain after the last record")
		case err != io.EOF:
			return false, err
		}
		return false, nil
	}
	size, err := s.readVarint()
	if err != nil {
		return false, err
	}
	if size < 0 {
		return false, errRecordStructure("invalid record size %d at record %d", size, s.index)
	}
	if int(size) > s.maxRecord {
		return false, fmt.Errorf("%w: record %d is %d bytes decompressed, %s is %d", ErrMessageTooLarge, s.index, size, s.maxName, s.maxRecord)
	}
	if cap(s.buf) < int(size) {
		s.buf = make([]byte, size, max(int(size), min(2*cap(s.buf), s.maxRecord)))
	}
	body := s.buf[:size]
	if _, err := io.ReadFull(s.r, body); err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return false, errRecordStructure("invalid record size %d at record %d: the batch ends first", size, s.index)
		}
		return false, err
	}
	if err := parseRecordBody(body, r); err != nil {
		return false, fmt.Errorf("record %d: %w", s.index, err)
	}
	s.left--
	s.index++
	return true, nil
}

// readVarint reads a record length as readVarint does, from the stream.
func (s *recordStream) readVarint() (int32, error) {
	var x uint32
	var shift uint
	for i := 0; i < 5; i++ {
		c, err := s.r.ReadByte()
		if err == io.EOF {
			return 0, errRecordStructure("incorrect declared batch size, premature EOF reached at record %d", s.index)
		}
		if err != nil {
			return 0, err
		}
		x |= uint32(c&0x7f) << shift
		if c < 0x80 {
			return int32(x>>1) ^ -int32(x&1), nil
		}
		shift += 7
	}
	return 0, errRecordStructure("bad record length varint at record %d", s.index)
}

// EachRecord checks one whole batch as ReadRecords does and calls fn with
// its records in order until fn returns false. A compressed batch is read
// as a stream: what is held is the codec's state and one record, not the
// decompressed batch, so a lookup in a batch that expands a thousandfold
// costs what one record does. A record's key, value and header values alias
// a buffer reused for the next record; copy them to keep them.
func EachRecord(batch []byte, fn func(Record) bool) (BatchHeader, error) {
	h, err := checkBatch(batch)
	if err != nil {
		return h, err
	}
	if h.NumRecords < 0 {
		return h, errRecordStructure("invalid record count %d", h.NumRecords)
	}
	src := &recordSource{}
	if c := h.Compression(); c == CodecNone {
		src.iter = newRecordIter(batch[HeaderSize:], h.NumRecords)
	} else {
		r, done, err := newDecompressReader(c, batch[HeaderSize:])
		if err != nil {
			if errors.Is(err, ErrUnsupportedCompression) {
				return h, err
			}
			return h, fmt.Errorf("%w: %s decompress: %w", ErrCorruptMessage, c, err)
		}
		defer done()
		br := &boundedReader{r: r, codec: c, limit: MaxDecompressedSize}
		src.stream = &recordStream{r: bufio.NewReaderSize(br, streamBufferSize), left: h.NumRecords,
			maxRecord: MaxDecompressedSize, maxName: "the most a batch may decompress to"}
	}
	var r rawRecord
	for {
		ok, err := src.next(&r)
		if err != nil || !ok {
			return h, err
		}
		rec := Record{Attributes: r.Attributes, TimestampDelta: r.TimestampDelta, OffsetDelta: r.OffsetDelta, Key: r.Key, Value: r.Value}
		if r.NumHeaders > 0 {
			rec.Headers = r.appendHeaders(make([]RecordHeader, 0, r.NumHeaders))
		}
		if !fn(rec) {
			return h, nil
		}
	}
}
