package producer

import (
	"bytes"
	"fmt"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"

	"gregor/internal/record"
)

// Compression uses the broker's codecs (gregor/internal/record), so what
// this client writes is framed exactly as the broker recompresses: xerial
// snappy and the LZ4 frame format, as Kafka's Java producer writes. A public
// package may import the module's internal packages (Go checks the importer's
// path, not the user's), so programs outside the module can still use this
// one. Only a level other than the codec's default needs an encoder of its
// own, built here with the same framing options.

// checkLevel checks compression.<type>.level against Kafka's ranges.
func checkLevel(c record.Codec, level int) error {
	switch c {
	case record.CodecGzip:
		if level == -1 || (level >= 1 && level <= 9) {
			return nil
		}
		return fmt.Errorf("compression.gzip.level: %d is not -1 or 1..9", level)
	case record.CodecLZ4:
		if level >= 1 && level <= 17 {
			return nil
		}
		return fmt.Errorf("compression.lz4.level: %d is not in 1..17", level)
	case record.CodecZstd:
		if level >= -131072 && level <= 22 {
			return nil
		}
		return fmt.Errorf("compression.zstd.level: %d is not in -131072..22", level)
	default:
		return fmt.Errorf("compression.type %s takes no level", c)
	}
}

// compressor compresses batch payloads at one codec and level. It is used
// by one goroutine at a time (the sender's).
type compressor struct {
	codec record.Codec
	gz    *gzip.Writer
	lz    *lz4.Writer
	zs    *zstd.Encoder
	buf   bytes.Buffer
}

func newCompressor(codec record.Codec, level *int) (*compressor, error) {
	c := &compressor{codec: codec}
	if level == nil {
		return c, nil // record.Compress's pooled default-level encoders
	}
	var err error
	switch codec {
	case record.CodecGzip:
		c.gz, err = gzip.NewWriterLevel(nil, *level)
	case record.CodecLZ4:
		// Kafka's levels 1..17 are LZ4's; the Go encoder has fast mode
		// and high-compression levels 1..9, which the upper range maps to.
		l := lz4.Fast
		if *level > 1 {
			l = lz4.CompressionLevel(1 << (8 + min(*level, 9)))
		}
		c.lz = lz4.NewWriter(nil)
		err = c.lz.Apply(lz4.BlockSizeOption(lz4.Block64Kb), lz4.ChecksumOption(false), lz4.CompressionLevelOption(l))
	case record.CodecZstd:
		c.zs, err = zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1),
			zstd.WithEncoderLevel(zstd.EncoderLevelFromZstd(*level)))
	}
	if err != nil {
		return nil, fmt.Errorf("compression.%s.level %d: %w", codec, *level, err)
	}
	return c, nil
}

// compress appends src compressed to dst.
func (c *compressor) compress(dst, src []byte) ([]byte, error) {
	switch {
	case c.gz != nil:
		c.buf = *bytes.NewBuffer(dst)
		c.gz.Reset(&c.buf)
		if _, err := c.gz.Write(src); err != nil {
			return dst, fmt.Errorf("gzip compress: %w", err)
		}
		if err := c.gz.Close(); err != nil {
			return dst, fmt.Errorf("gzip compress: %w", err)
		}
		return c.buf.Bytes(), nil
	case c.lz != nil:
		c.buf = *bytes.NewBuffer(dst)
		c.lz.Reset(&c.buf)
		if _, err := c.lz.Write(src); err != nil {
			return dst, fmt.Errorf("lz4 compress: %w", err)
		}
		if err := c.lz.Close(); err != nil {
			return dst, fmt.Errorf("lz4 compress: %w", err)
		}
		return c.buf.Bytes(), nil
	case c.zs != nil:
		return c.zs.EncodeAll(src, dst), nil
	default:
		return record.Compress(c.codec, dst, src)
	}
}

func (c *compressor) close() {
	if c.zs != nil {
		_ = c.zs.Close()
	}
}
