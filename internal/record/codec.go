package record

import (
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

// Codec is a batch compression codec, numbered as in the batch attributes.
type Codec int8

// Kafka's codecs.
const (
	CodecNone   Codec = 0
	CodecGzip   Codec = 1
	CodecSnappy Codec = 2
	CodecLZ4    Codec = 3
	CodecZstd   Codec = 4
)

// MaxDecompressedSize bounds what one stored batch may decompress to when it
// is read whole (ReadRecords, Decompress): a small batch that expands without
// limit (a "zip bomb") fails with CORRUPT_MESSAGE instead of exhausting
// memory. Produced batches are held to the tighter bounds of ValidateAndAssign
// (max.message.bytes per record, the DecompressionBudget per batch), so
// stored ones stay far below this.
const MaxDecompressedSize = 256 << 20

// String returns the codec's compression.type name.
func (c Codec) String() string {
	switch c {
	case CodecNone:
		return "none"
	case CodecGzip:
		return "gzip"
	case CodecSnappy:
		return "snappy"
	case CodecLZ4:
		return "lz4"
	case CodecZstd:
		return "zstd"
	default:
		return fmt.Sprintf("unknown(%d)", int8(c))
	}
}

// ParseCodec reads a codec name as compression.type spells it. The topic
// value "producer" is not a codec; the caller handles it (UseProducerCodec).
func ParseCodec(name string) (Codec, error) {
	switch name {
	case "none":
		return CodecNone, nil
	case "gzip":
		return CodecGzip, nil
	case "snappy":
		return CodecSnappy, nil
	case "lz4":
		return CodecLZ4, nil
	case "zstd":
		return CodecZstd, nil
	default:
		return 0, fmt.Errorf("%w: %q", ErrUnsupportedCompression, name)
	}
}

// The codecs' encoders and decoders are costly to build (zstd's most of all),
// so they are pooled. The pools are caches, not state: any entry may vanish.
var (
	gzipWriters = sync.Pool{New: func() any {
		w, _ := gzip.NewWriterLevel(nil, gzip.DefaultCompression)
		return w
	}}
	gzipReaders sync.Pool // *gzip.Reader; needs a valid stream to create
	lz4Writers  = sync.Pool{New: func() any {
		// As Kafka's Lz4BlockOutputStream: 64 KiB independent blocks, no
		// block or content checksum.
		w := lz4.NewWriter(nil)
		_ = w.Apply(lz4.BlockSizeOption(lz4.Block64Kb), lz4.ChecksumOption(false))
		return w
	}}
	lz4Readers   = sync.Pool{New: func() any { return lz4.NewReader(nil) }}
	zstdEncoders = sync.Pool{New: func() any {
		// Concurrency 1: EncodeAll runs in the caller's goroutine, none leak.
		e, _ := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1), zstd.WithEncoderLevel(zstd.SpeedDefault))
		return e
	}}
	zstdDecoders = sync.Pool{New: func() any {
		d, _ := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1),
			zstd.WithDecoderMaxMemory(MaxDecompressedSize))
		return d
	}}
)

// xerialMagic opens the snappy framing of the xerial snappy-java library,
// which Java producers write (SnappyOutputStream): the 8-byte magic, a
// version and a minimum compatible version (4 bytes each), then blocks, each
// a 4-byte big-endian length and a raw snappy block.
var xerialMagic = [8]byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

const (
	xerialHeaderSize = 16
	// xerialBlockSize is SnappyOutputStream's default block size.
	xerialBlockSize = 32 << 10
)

// Compress appends src compressed with c to dst. Snappy is written in the
// xerial framing and lz4 in the LZ4 frame format, as Kafka's broker writes
// them, so every client can read batches Gregor recompresses.
func Compress(c Codec, dst, src []byte) ([]byte, error) {
	switch c {
	case CodecNone:
		return append(dst, src...), nil
	case CodecGzip:
		buf := bytes.NewBuffer(dst)
		w := gzipWriters.Get().(*gzip.Writer)
		defer gzipWriters.Put(w)
		w.Reset(buf)
		if _, err := w.Write(src); err != nil {
			return dst, fmt.Errorf("gzip compress: %w", err)
		}
		if err := w.Close(); err != nil {
			return dst, fmt.Errorf("gzip compress: %w", err)
		}
		return buf.Bytes(), nil
	case CodecSnappy:
		return compressXerial(dst, src), nil
	case CodecLZ4:
		buf := bytes.NewBuffer(dst)
		w := lz4Writers.Get().(*lz4.Writer)
		defer lz4Writers.Put(w)
		w.Reset(buf)
		if _, err := w.Write(src); err != nil {
			return dst, fmt.Errorf("lz4 compress: %w", err)
		}
		if err := w.Close(); err != nil {
			return dst, fmt.Errorf("lz4 compress: %w", err)
		}
		return buf.Bytes(), nil
	case CodecZstd:
		e := zstdEncoders.Get().(*zstd.Encoder)
		defer zstdEncoders.Put(e)
		return e.EncodeAll(src, dst), nil
	default:
		return dst, fmt.Errorf("%w: codec id %d", ErrUnsupportedCompression, int8(c))
	}
}

func compressXerial(dst, src []byte) []byte {
	if len(src) == 0 {
		// A header with no blocks trips some readers (franz-go); an empty raw
		// block is read by all, snappy-java included (it falls back to raw
		// snappy when the header is absent).
		return append(dst, 0)
	}
	dst = append(dst, xerialMagic[:]...)
	dst = binary.BigEndian.AppendUint32(dst, 1) // version
	dst = binary.BigEndian.AppendUint32(dst, 1) // minimum compatible version
	for len(src) > 0 {
		n := min(len(src), xerialBlockSize)
		need := 4 + s2.MaxEncodedLen(n)
		dst = slicesGrow(dst, need)
		block := s2.EncodeSnappy(dst[len(dst)+4:len(dst)+need], src[:n])
		binary.BigEndian.PutUint32(dst[len(dst):len(dst)+4], uint32(len(block)))
		dst = dst[:len(dst)+4+len(block)]
		src = src[n:]
	}
	return dst
}

// slicesGrow makes room for n more bytes after len(b).
func slicesGrow(b []byte, n int) []byte {
	if cap(b)-len(b) >= n {
		return b
	}
	nb := make([]byte, len(b), max(2*cap(b), len(b)+n))
	copy(nb, b)
	return nb
}

// Decompress returns src decompressed with c. Snappy accepts both a raw
// snappy block and the xerial framing; lz4 the LZ4 frame format. Data that
// does not decompress, or decompresses past MaxDecompressedSize, is
// ErrCorruptMessage.
func Decompress(c Codec, src []byte) ([]byte, error) {
	return decompressLimited(c, src, MaxDecompressedSize)
}

// decompressLimited is Decompress failing past limit bytes (at most
// MaxDecompressedSize).
func decompressLimited(c Codec, src []byte, limit int) ([]byte, error) {
	out, err := decompress(c, src, min(limit, MaxDecompressedSize))
	if err != nil {
		if errors.Is(err, ErrUnsupportedCompression) {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %s decompress: %w", ErrCorruptMessage, c, err)
	}
	return out, nil
}

func decompress(c Codec, src []byte, limit int) ([]byte, error) {
	switch c {
	case CodecNone:
		return append([]byte(nil), src...), nil
	case CodecGzip:
		r, _ := gzipReaders.Get().(*gzip.Reader)
		if r == nil {
			var err error
			if r, err = gzip.NewReader(bytes.NewReader(src)); err != nil {
				return nil, err
			}
		} else if err := r.Reset(bytes.NewReader(src)); err != nil {
			gzipReaders.Put(r)
			return nil, err
		}
		defer gzipReaders.Put(r)
		return readAllLimited(r, 4*len(src), limit)
	case CodecSnappy:
		if len(src) >= xerialHeaderSize && bytes.HasPrefix(src, xerialMagic[:]) {
			return decompressXerial(src, limit)
		}
		return decodeSnappyBlock(nil, src, limit)
	case CodecLZ4:
		r := lz4Readers.Get().(*lz4.Reader)
		defer lz4Readers.Put(r)
		r.Reset(bytes.NewReader(src))
		return readAllLimited(r, 4*len(src), limit)
	case CodecZstd:
		if size, known := zstdContentSize(src); known && size > uint64(limit) {
			return nil, fmt.Errorf("decompresses past %d bytes", limit)
		}
		d := zstdDecoders.Get().(*zstd.Decoder)
		defer zstdDecoders.Put(d)
		out, err := d.DecodeAll(src, nil)
		if err == nil && len(out) > limit {
			return nil, fmt.Errorf("decompresses past %d bytes", limit)
		}
		return out, err
	default:
		return nil, fmt.Errorf("%w: codec id %d", ErrUnsupportedCompression, int8(c))
	}
}

// decodeSnappyBlock appends the decoded raw snappy block src to dst.
func decodeSnappyBlock(dst, src []byte, limit int) ([]byte, error) {
	n, err := s2.DecodedLen(src)
	if err != nil {
		return nil, err
	}
	if n > limit-len(dst) {
		return nil, fmt.Errorf("decompresses past %d bytes", limit)
	}
	out := dst
	if cap(out)-len(out) < n {
		out = make([]byte, len(dst), len(dst)+n)
		copy(out, dst)
	}
	block, err := s2.Decode(out[len(out):len(out)+n], src)
	if err != nil {
		return nil, err
	}
	return out[:len(out)+len(block)], nil
}

// decompressXerial reads the xerial framing. Like snappy-java's
// SnappyInputStream it accepts several concatenated streams, each with its
// own header.
func decompressXerial(src []byte, limit int) ([]byte, error) {
	var out []byte
	for len(src) > 0 {
		if bytes.HasPrefix(src, xerialMagic[:]) {
			if len(src) < xerialHeaderSize {
				return nil, errors.New("xerial header truncated")
			}
			src = src[xerialHeaderSize:]
			continue
		}
		if len(src) < 4 {
			return nil, errors.New("xerial block length truncated")
		}
		n := binary.BigEndian.Uint32(src)
		src = src[4:]
		if uint64(n) > uint64(len(src)) {
			return nil, fmt.Errorf("xerial block of %d bytes, %d left", n, len(src))
		}
		var err error
		if out, err = decodeSnappyBlock(out, src[:n], limit); err != nil {
			return nil, err
		}
		src = src[n:]
	}
	return out, nil
}

// readAllLimited reads r to its end into a new slice, failing past limit.
func readAllLimited(r io.Reader, sizeHint, limit int) ([]byte, error) {
	buf := make([]byte, 0, min(max(sizeHint, 512), limit))
	for {
		if len(buf) == cap(buf) {
			if len(buf) >= limit {
				var probe [1]byte
				n, err := io.ReadFull(r, probe[:])
				switch {
				case n > 0:
					return nil, fmt.Errorf("decompresses past %d bytes", limit)
				case err == io.EOF:
					return buf, nil
				default:
					return nil, err
				}
			}
			nb := make([]byte, len(buf), min(2*cap(buf), limit))
			copy(nb, buf)
			buf = nb
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}
