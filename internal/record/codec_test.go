package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/klauspost/compress/s2"
	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kgo"
)

func codecInputs() map[string][]byte {
	rnd := rand.New(rand.NewPCG(1, 2))
	random := make([]byte, 100<<10)
	for i := range random {
		random[i] = byte(rnd.IntN(256))
	}
	return map[string][]byte{
		"empty":        {},
		"one":          {42},
		"text":         bytes.Repeat([]byte("the quick brown fox jumps over the lazy dog "), 3000),
		"random-100k":  random,
		"blocks-edges": bytes.Repeat([]byte{1, 2, 3}, xerialBlockSize), // 3 full xerial blocks
	}
}

func TestCodecRoundTrip(t *testing.T) {
	for _, c := range allCodecs {
		for name, in := range codecInputs() {
			t.Run(c.String()+"/"+name, func(t *testing.T) {
				prefix := []byte("prefix")
				out, err := Compress(c, append([]byte(nil), prefix...), in)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.HasPrefix(out, prefix) {
					t.Fatal("Compress did not append to dst")
				}
				got, err := Decompress(c, out[len(prefix):])
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, in) {
					t.Fatalf("round trip: got %d bytes, want %d", len(got), len(in))
				}
				// franz-go reads what we write.
				if c != CodecNone {
					kg, err := kgo.DefaultDecompressor().Decompress(out[len(prefix):], kgo.CompressionCodecType(c))
					if err != nil || !bytes.Equal(kg, in) {
						t.Fatalf("kgo decompress: err %v, equal %v", err, bytes.Equal(kg, in))
					}
				}
			})
		}
	}
}

// TestDecompressKgo reads what franz-go's producer compressor writes.
func TestDecompressKgo(t *testing.T) {
	codecs := map[Codec]kgo.CompressionCodec{
		CodecGzip: kgo.GzipCompression(), CodecSnappy: kgo.SnappyCompression(),
		CodecLZ4: kgo.Lz4Compression(), CodecZstd: kgo.ZstdCompression(),
	}
	in := codecInputs()["text"]
	for c, kc := range codecs {
		comp, err := kgo.DefaultCompressor(kc)
		if err != nil {
			t.Fatal(err)
		}
		out, typ := comp.Compress(new(bytes.Buffer), in)
		if Codec(typ) != c {
			t.Fatalf("kgo used codec %d, want %v", typ, c)
		}
		got, err := Decompress(c, out)
		if err != nil || !bytes.Equal(got, in) {
			t.Fatalf("%v: err %v, equal %v", c, err, bytes.Equal(got, in))
		}
	}
}

// xerialFrame builds the snappy-java framing by hand: magic, version 1,
// compatible version 1, then (length, raw snappy block) pairs.
func xerialFrame(blocks ...[]byte) []byte {
	out := []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0, 0, 0, 0, 1, 0, 0, 0, 1}
	for _, b := range blocks {
		enc := s2.EncodeSnappy(nil, b)
		out = binary.BigEndian.AppendUint32(out, uint32(len(enc)))
		out = append(out, enc...)
	}
	return out
}

func TestSnappyFramings(t *testing.T) {
	a := bytes.Repeat([]byte("alpha "), 1000)
	b := []byte("beta")
	cases := []struct {
		name string
		in   []byte
		want []byte
	}{
		{"raw block", s2.EncodeSnappy(nil, a), a},
		{"xerial one block", xerialFrame(a), a},
		{"xerial two blocks", xerialFrame(a, b), append(append([]byte(nil), a...), b...)},
		{"xerial no blocks", xerialFrame(), nil},
		{"xerial concatenated streams", append(xerialFrame(a), xerialFrame(b)...), append(append([]byte(nil), a...), b...)},
	}
	for _, tc := range cases {
		got, err := Decompress(CodecSnappy, tc.in)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !bytes.Equal(got, tc.want) {
			t.Fatalf("%s: got %d bytes, want %d", tc.name, len(got), len(tc.want))
		}
	}
	// What Compress writes is the xerial framing with 32 KiB blocks.
	out, _ := Compress(CodecSnappy, nil, bytes.Repeat([]byte{7}, 70<<10))
	if !bytes.HasPrefix(out, xerialMagic[:]) {
		t.Fatal("Compress(snappy) did not write the xerial header")
	}
}

func TestLZ4FrameVariants(t *testing.T) {
	in := bytes.Repeat([]byte("lz4 frame "), 20000)
	// A frame as other writers make it: 4 MiB blocks, content checksum, block checksums.
	var buf bytes.Buffer
	w := lz4.NewWriter(&buf)
	if err := w.Apply(lz4.BlockSizeOption(lz4.Block4Mb), lz4.ChecksumOption(true), lz4.BlockChecksumOption(true)); err != nil {
		t.Fatal(err)
	}
	w.Write(in)
	w.Close()
	got, err := Decompress(CodecLZ4, buf.Bytes())
	if err != nil || !bytes.Equal(got, in) {
		t.Fatalf("err %v, equal %v", err, bytes.Equal(got, in))
	}
	// What we write: Kafka's frame flags (independent blocks, 64 KiB, no checksums).
	out, _ := Compress(CodecLZ4, nil, in)
	if flg, bd := out[4], out[5]; flg != 0x60 || bd != 0x40 {
		t.Fatalf("frame descriptor FLG %#x BD %#x, want 0x60 0x40 as Kafka's Lz4BlockOutputStream", flg, bd)
	}
}

func TestDecompressCorrupt(t *testing.T) {
	text := codecInputs()["text"]
	for _, c := range allCodecs[1:] {
		good, _ := Compress(c, nil, text)
		for name, bad := range map[string][]byte{
			"garbage":   []byte("this is not compressed data at all, not even close"),
			"truncated": good[:len(good)/2],
		} {
			if _, err := Decompress(c, bad); !errors.Is(err, ErrCorruptMessage) {
				t.Errorf("%v %s: err %v, want ErrCorruptMessage", c, name, err)
			}
		}
	}
	if _, err := Decompress(Codec(5), []byte{1}); !errors.Is(err, ErrUnsupportedCompression) {
		t.Fatalf("codec 5: %v", err)
	}
	if _, err := Compress(Codec(7), nil, []byte{1}); !errors.Is(err, ErrUnsupportedCompression) {
		t.Fatalf("codec 7: %v", err)
	}
}

func TestParseCodec(t *testing.T) {
	for _, c := range allCodecs {
		got, err := ParseCodec(c.String())
		if err != nil || got != c {
			t.Fatalf("ParseCodec(%q) = %v, %v", c.String(), got, err)
		}
	}
	for _, name := range []string{"producer", "GZIP", "", "lz5"} {
		if _, err := ParseCodec(name); !errors.Is(err, ErrUnsupportedCompression) {
			t.Fatalf("ParseCodec(%q): %v", name, err)
		}
	}
	if s := Codec(6).String(); s != "unknown(6)" {
		t.Fatal(s)
	}
}
