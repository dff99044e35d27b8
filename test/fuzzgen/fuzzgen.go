// Package fuzzgen builds hostile but well-formed Kafka requests for the
// fuzzers: a request of any API key and version with every field filled
// from values that sit on edges (0, -1, the type's limits, empty and long
// strings, null where the field is nullable, a few names the fuzzers share),
// and byte mutations of an encoded request. Knowing each message's
// structure (kmsg's types) lets the fuzz reach a handler's logic instead of
// stopping at the decoder.
package fuzzgen

import (
	"encoding/binary"
	"hash/crc32"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Gen fills requests. It is not safe for concurrent use.
type Gen struct {
	r *rand.Rand
	// Names are the resource names (topics, groups, transactional ids,
	// users, config keys) strings are drawn from most of the time, so
	// that requests meet each other's resources.
	Names []string
	// MaxElems bounds the length of a generated array (default 4); an
	// array is rarely longer than 3 all the same.
	MaxElems int
}

// DefaultNames are the names Gen draws from when Names is empty: a few
// topics and groups, Kafka's internal topics, and config keys.
var DefaultNames = []string{
	"fuzz-a", "fuzz-b", "fuzz-c", "fuzz-group", "fuzz-txn", "fuzz-user",
	"__consumer_offsets", "__transaction_state",
	"cleanup.policy", "retention.ms", "max.message.bytes", "segment.bytes",
	"compression.type", "min.insync.replicas", "producer_byte_rate",
	"consumer_byte_rate", "request_percentage", "SCRAM-SHA-256", "PLAIN",
	"range", "roundrobin", "consumer", "*", "User:*", "1",
}

// New returns a generator seeded with seed.
func New(seed uint64) *Gen {
	return &Gen{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), Names: DefaultNames, MaxElems: 4}
}

// Intn returns a number in [0, n).
func (g *Gen) Intn(n int) int { return g.r.IntN(n) }

// Request returns a request of key at version with every field filled,
// or nil for a key kmsg does not know.
func (g *Gen) Request(key, version int16) kmsg.Request {
	req := kmsg.RequestForKey(key)
	if req == nil {
		return nil
	}
	g.fill(reflect.ValueOf(req).Elem(), "", 0)
	req.SetVersion(version)
	return req
}

var tagsType = reflect.TypeOf(kmsg.Tags{})

// fill sets v (a field named name, at depth) to a generated value.
func (g *Gen) fill(v reflect.Value, name string, depth int) {
	switch v.Kind() {
	case reflect.Struct:
		if v.Type() == tagsType {
			return
		}
		for i := 0; i < v.NumField(); i++ {
			f := v.Type().Field(i)
			if !f.IsExported() || f.Name == "Version" {
				continue
			}
			g.fill(v.Field(i), f.Name, depth+1)
		}
	case reflect.Pointer:
		if g.r.IntN(4) == 0 || depth > 8 {
			v.SetZero()
			return
		}
		p := reflect.New(v.Type().Elem())
		g.fill(p.Elem(), name, depth+1)
		v.Set(p)
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			v.SetBytes(g.bytes(name))
			return
		}
		if depth > 8 {
			v.SetZero()
			return
		}
		n := g.r.IntN(g.MaxElems)
		if g.r.IntN(8) == 0 {
			v.SetZero() // null where nullable, empty elsewhere
			return
		}
		s := reflect.MakeSlice(v.Type(), n, n)
		for i := 0; i < n; i++ {
			g.fill(s.Index(i), name, depth+1)
		}
		v.Set(s)
	case reflect.Array: // UUIDs
		if g.r.IntN(3) == 0 {
			for i := 0; i < v.Len(); i++ {
				v.Index(i).SetUint(uint64(g.r.IntN(256)))
			}
		} else {
			v.SetZero()
		}
	case reflect.String:
		v.SetString(g.String())
	case reflect.Bool:
		v.SetBool(g.r.IntN(2) == 0)
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(g.Int(v.Type().Bits()))
	case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(g.Int(v.Type().Bits())))
	case reflect.Float64:
		v.SetFloat([]float64{0, -1, 1, 1e9, math.MaxFloat64, math.Inf(1), math.NaN(), g.r.Float64() * 1e6}[g.r.IntN(8)])
	}
}

// Int returns an integer of the given bit size, often on an edge.
func (g *Gen) Int(bits int) int64 {
	maxV := int64(1)<<(bits-1) - 1
	minV := -maxV - 1
	switch g.r.IntN(10) {
	case 0:
		return 0
	case 1:
		return -1
	case 2:
		return maxV
	case 3:
		return minV
	case 4:
		return maxV - int64(g.r.IntN(3))
	case 5:
		return int64(g.r.IntN(1 << min(bits-1, 31)))
	default:
		return int64(g.r.IntN(8))
	}
}

// String returns a name from Names most of the time, else an edge string.
func (g *Gen) String() string {
	switch g.r.IntN(12) {
	case 0:
		return ""
	case 1:
		return strings.Repeat("x", 250+g.r.IntN(10)) // past the 249-char topic limit
	case 2:
		return "fuzz-" + string(rune('a'+g.r.IntN(26))) + "/../.."
	case 3:
		b := make([]byte, g.r.IntN(16))
		for i := range b {
			b[i] = byte(g.r.IntN(256))
		}
		return string(b)
	default:
		return g.Names[g.r.IntN(len(g.Names))]
	}
}

// bytes returns a value for a bytes field: a valid record batch for a
// Records field half the time, else an edge byte string.
func (g *Gen) bytes(name string) []byte {
	if name == "Records" && g.r.IntN(2) == 0 {
		return g.Batch()
	}
	switch g.r.IntN(4) {
	case 0:
		return nil
	case 1:
		return []byte{}
	default:
		b := make([]byte, g.r.IntN(64))
		for i := range b {
			b[i] = byte(g.r.IntN(256))
		}
		return b
	}
}

var crc32c = crc32.MakeTable(crc32.Castagnoli)

// Batch returns a magic v2 record batch of one to three uncompressed
// records with a correct CRC, its producer fields and attributes drawn
// from edges (idempotent, transactional, control, a codec bit without
// compressed data).
func (g *Gen) Batch() []byte {
	n := 1 + g.r.IntN(3)
	var records []byte
	for i := 0; i < n; i++ {
		r := kmsg.Record{OffsetDelta: int32(i), Value: []byte("fuzz")}
		if g.r.IntN(2) == 0 {
			r.Key = []byte(g.String())
		}
		body := r.AppendTo(nil)
		r.Length = int32(len(body) - 1)
		records = r.AppendTo(records)
	}
	b := kmsg.RecordBatch{
		Magic:                2,
		LastOffsetDelta:      int32(n - 1),
		FirstTimestamp:       []int64{0, -1, math.MaxInt64, 1_700_000_000_000}[g.r.IntN(4)],
		ProducerID:           -1,
		ProducerEpoch:        -1,
		FirstSequence:        -1,
		NumRecords:           int32(n),
		Records:              records,
		PartitionLeaderEpoch: -1,
	}
	b.MaxTimestamp = b.FirstTimestamp
	if g.r.IntN(3) == 0 {
		b.ProducerID, b.ProducerEpoch, b.FirstSequence = g.Int(64), int16(g.Int(16)), int32(g.Int(32))
	}
	if g.r.IntN(4) == 0 {
		b.Attributes = int16([]int{0x10, 0x20, 0x30, 0x01, 0x04, 0x08}[g.r.IntN(6)])
	}
	raw := b.AppendTo(nil)
	b.Length = int32(len(raw) - 12)
	raw = b.AppendTo(raw[:0])
	binary.BigEndian.PutUint32(raw[17:], crc32.Checksum(raw[21:], crc32c))
	return raw
}

// Mutate returns a damaged copy of an encoded request: a few bytes flipped
// or overwritten with an edge integer (a length or count), a cut, or a
// repeated span. The first skip bytes (a frame's size and header) are left
// alone so the damage reaches the body's decoder.
func (g *Gen) Mutate(b []byte, skip int) []byte {
	out := append([]byte(nil), b...)
	if len(out) <= skip {
		return out
	}
	for n := 1 + g.r.IntN(3); n > 0; n-- {
		i := skip + g.r.IntN(len(out)-skip)
		switch g.r.IntN(5) {
		case 0:
			out[i] ^= 1 << g.r.IntN(8)
		case 1:
			out[i] = byte(g.Int(8))
		case 2:
			if i+4 <= len(out) {
				binary.BigEndian.PutUint32(out[i:], uint32(g.Int(32)))
			}
		case 3:
			if i+2 <= len(out) {
				binary.BigEndian.PutUint16(out[i:], uint16(g.Int(16)))
			}
		case 4:
			if g.r.IntN(2) == 0 {
				out = out[:i]
			} else {
				j := i + g.r.IntN(len(out)-i+1)
				out = append(out[:j:j], out[i:]...)
			}
			return out
		}
	}
	return out
}
