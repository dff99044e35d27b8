package server

// The machinery of the differential test (differential_test.go): a pair of
// clients, one to a Gregor node and one to franz-go's kfake, that send the
// same raw request to both at one pinned version, and the helpers that hold
// Gregor to kfake, or to Kafka where kfake is known to differ from Kafka.

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"

	"hash/crc32"
	"io"
	"net"
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// side names which server a request is built for: some fields (topic ids)
// are each server's own.
type side int

const (
	onGregor side = iota
	onKfake
)

func (s side) String() string {
	if s == onGregor {
		return "gregor"
	}
	return "kfake"
}

// pair sends each request to Gregor and to kfake. Both clients are capped at
// the same per-API versions (pin), and every exchange checks that both sides
// really used the same version, so answers are compared like for like.
type pair struct {
	pin     *kversion.Versions
	clients [2]*kgo.Client
	// raw are plain connections for Produce, which kgo cannot carry
	// unchanged: it overwrites a raw ProduceRequest's acks with the
	// client's own setting (and kgo knows no acks but -1, 0 and 1).
	raw [2]*rawConn
	// ids holds each side's topic ids by name (Metadata v10+).
	ids [2]map[string][16]byte
}

// startPair starts a Gregor node and a one-broker kfake cluster configured
// alike (no auto topic creation, one default partition), learns both sides'
// ApiVersions, and pins every API both serve to the highest version both
// serve, capped by limit when limit is not nil.
func startPair(t *testing.T, limit *kversion.Versions) (*pair, [2]*kmsg.ApiVersionsResponse) {
	t.Helper()
	ts := startServer(t, t.TempDir(), map[string]string{
		"auto.create.topics.enable": "false",
		"num.partitions":            "1",
	})
	fake, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.DefaultNumPartitions(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fake.Close)
	addrs := [2]string{ts.addr(), fake.ListenAddrs()[0]}

	var advertised [2]*kmsg.ApiVersionsResponse
	for s, addr := range addrs {
		cl := newPairClient(t, addr)
		resp, err := apiVersionsRequest("gregor-differential").RequestWith(ctxT(t), cl)
		if err != nil {
			t.Fatalf("%v ApiVersions: %v", side(s), err)
		}
		advertised[s] = resp
		cl.Close()
	}

	ranges := [2]map[int16][2]int16{apiRanges(advertised[0]), apiRanges(advertised[1])}
	pin := kversion.FromApiVersionsResponse(advertised[onGregor])
	for key, g := range ranges[onGregor] {
		max := g[1]
		if f, ok := ranges[onKfake][key]; ok && f[1] < max {
			max = f[1]
		}
		if req := kmsg.RequestForKey(key); req != nil && req.MaxVersion() < max {
			max = req.MaxVersion()
		}
		if limit != nil {
			if l, ok := limit.LookupMaxKeyVersion(key); ok && l < max {
				max = l
			}
		}
		pin.SetMaxKeyVersion(key, max)
	}

	p := &pair{pin: pin}
	for s, addr := range addrs {
		p.clients[s] = newPairClient(t, addr, kgo.MaxVersions(pin))
		p.raw[s] = dialRaw(t, addr)
		p.ids[s] = make(map[string][16]byte)
	}
	return p, advertised
}

func newPairClient(t *testing.T, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// apiRanges maps each advertised API key to its [min, max] versions.
func apiRanges(resp *kmsg.ApiVersionsResponse) map[int16][2]int16 {
	m := make(map[int16][2]int16, len(resp.ApiKeys))
	for _, k := range resp.ApiKeys {
		m[k.ApiKey] = [2]int16{k.MinVersion, k.MaxVersion}
	}
	return m
}

// version is the pinned version of an API.
func (p *pair) version(key int16) int16 {
	v, _ := p.pin.LookupMaxKeyVersion(key)
	return v
}

// both sends the request that build makes for each side straight to that
// side's one broker (the seed connection: no routing, sharding or retries by
// the client, so each server answers exactly what was asked) and returns
// Gregor's answer then kfake's.
func both[R kmsg.Response](t *testing.T, p *pair, build func(side) kmsg.Request) (gregor, fake R) {
	t.Helper()
	var out [2]R
	var versions [2]int16
	for s, cl := range p.clients {
		req := build(side(s))
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		resp, err := cl.SeedBrokers()[0].Request(ctx, req)
		cancel()
		if err != nil {
			t.Fatalf("%v %s: %v", side(s), kmsg.NameForKey(req.Key()), err)
		}
		r, ok := resp.(R)
		if !ok {
			t.Fatalf("%v %s: answered with %T", side(s), kmsg.NameForKey(req.Key()), resp)
		}
		out[s], versions[s] = r, req.GetVersion()
		if want := p.version(req.Key()); versions[s] != want {
			t.Fatalf("%v %s sent at v%d, pinned v%d", side(s), kmsg.NameForKey(req.Key()), versions[s], want)
		}
	}
	return out[onGregor], out[onKfake]
}

// produceBoth sends a Produce built for each side over the raw
// connections, at the pinned version. With acks 0 no answer comes and both
// results are nil.
func produceBoth(t *testing.T, p *pair, build func(side) *kmsg.ProduceRequest) (gregor, fake *kmsg.ProduceResponse) {
	t.Helper()
	var out [2]*kmsg.ProduceResponse
	for s, c := range p.raw {
		req := build(side(s))
		req.Version = p.version(req.Key())
		resp, err := c.roundTrip(req, req.Acks != 0)
		if err != nil {
			t.Fatalf("%v Produce: %v", side(s), err)
		}
		if resp != nil {
			out[s] = resp.(*kmsg.ProduceResponse)
		}
	}
	return out[onGregor], out[onKfake]
}

// rawConn speaks the Kafka framing over one TCP connection, one request at
// a time, sending each request exactly as built.
type rawConn struct {
	conn        net.Conn
	correlation int32
	format      *kmsg.RequestFormatter
}

func dialRaw(t *testing.T, addr string) *rawConn {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &rawConn{conn: conn, format: kmsg.NewRequestFormatter(kmsg.FormatterClientID("gregor-differential"))}
}

// roundTrip writes req and, when an answer is expected, reads and decodes
// it.
func (c *rawConn) roundTrip(req kmsg.Request, answered bool) (kmsg.Response, error) {
	c.correlation++
	if err := c.conn.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		return nil, fmt.Errorf("set deadline: %w", err)
	}
	if _, err := c.conn.Write(c.format.AppendRequest(nil, req, c.correlation)); err != nil {
		return nil, fmt.Errorf("write %s: %w", kmsg.NameForKey(req.Key()), err)
	}
	if !answered {
		return nil, nil
	}
	var size [4]byte
	if _, err := io.ReadFull(c.conn, size[:]); err != nil {
		return nil, fmt.Errorf("read %s answer size: %w", kmsg.NameForKey(req.Key()), err)
	}
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(c.conn, body); err != nil {
		return nil, fmt.Errorf("read %s answer: %w", kmsg.NameForKey(req.Key()), err)
	}
	if len(body) < 4 || int32(binary.BigEndian.Uint32(body)) != c.correlation {
		return nil, fmt.Errorf("%s answer does not carry correlation id %d", kmsg.NameForKey(req.Key()), c.correlation)
	}
	body = body[4:]
	if req.IsFlexible() && req.Key() != 18 { // response header v1: tagged fields (ApiVersions keeps v0)
		n, w := binary.Uvarint(body)
		if w <= 0 || n != 0 {
			return nil, fmt.Errorf("%s answer header carries %d tagged fields", kmsg.NameForKey(req.Key()), n)
		}
		body = body[w:]
	}
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	if err := resp.ReadFrom(body); err != nil {
		return nil, fmt.Errorf("decode %s answer: %w", kmsg.NameForKey(req.Key()), err)
	}
	return resp, nil
}

// same fails the test when Gregor's view of an answer differs from kfake's.
// Views hold only what Kafka's semantics fix, already normalized.
func same(t *testing.T, what string, gregor, fake any) {
	t.Helper()
	if !reflect.DeepEqual(gregor, fake) {
		t.Errorf("%s:\n gregor: %+v\n kfake:  %+v", what, gregor, fake)
	}
}

// kafkaSays fails the test when Gregor's view differs from Kafka's answer,
// written out by the test from Kafka's documented behaviour. It guards
// against Gregor and kfake sharing a mistake.
func kafkaSays(t *testing.T, what string, gregor, kafka any) {
	t.Helper()
	if !reflect.DeepEqual(gregor, kafka) {
		t.Errorf("%s:\n gregor: %+v\n kafka:  %+v", what, gregor, kafka)
	}
}

// agree holds Gregor to kfake and to Kafka's answer.
func agree(t *testing.T, what string, gregor, fake, kafka any) {
	t.Helper()
	same(t, what, gregor, fake)
	kafkaSays(t, what, gregor, kafka)
}

// asKafka is used where kfake is known to answer differently from Apache
// Kafka (why says how, and where Kafka decides it). The kfake comparison is
// skipped; Gregor is held to Kafka's answer instead, and a kfake that has
// since come to agree with Kafka is logged so the exception can be dropped.
func asKafka(t *testing.T, what string, gregor, fake, kafka any, why string) {
	t.Helper()
	if reflect.DeepEqual(fake, kafka) {
		t.Logf("%s: kfake now agrees with Kafka (%s); this exception can go", what, why)
	} else {
		t.Logf("%s: known kfake divergence, not compared: kfake %+v, Kafka %+v (%s)", what, fake, kafka, why)
	}
	if !reflect.DeepEqual(gregor, kafka) {
		t.Errorf("%s:\n gregor: %+v\n kafka:  %+v", what, gregor, kafka)
	}
}

// testRecord is one record of a produced batch.
type testRecord struct {
	Key, Value string
	Timestamp  int64
}

// buildBatch encodes records as one v2 record batch the way a producer
// without idempotence does (producer id -1, base offset 0), compressed with
// kgo's own compressor, so both servers receive identical bytes.
func buildBatch(t *testing.T, codec kgo.CompressionCodec, recs []testRecord) []byte {
	t.Helper()
	first, maxTS := recs[0].Timestamp, recs[0].Timestamp
	var raw []byte
	for i, r := range recs {
		maxTS = max(maxTS, r.Timestamp)
		rec := kmsg.Record{TimestampDelta64: r.Timestamp - first, OffsetDelta: int32(i), Value: []byte(r.Value)}
		if r.Key != "" {
			rec.Key = []byte(r.Key)
		}
		rec.Length = int32(len(rec.AppendTo(nil)) - 1) // the body after a one-byte zero length
		raw = rec.AppendTo(raw)
	}
	attrs := int16(0)
	comp, err := kgo.DefaultCompressor(codec)
	if err != nil {
		t.Fatal(err)
	}
	if comp != nil {
		out, used := comp.Compress(new(bytes.Buffer), raw)
		raw, attrs = bytes.Clone(out), int16(used)
	}
	b := kmsg.RecordBatch{
		PartitionLeaderEpoch: -1, Magic: 2, Attributes: attrs,
		LastOffsetDelta: int32(len(recs) - 1), FirstTimestamp: first, MaxTimestamp: maxTS,
		ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1,
		NumRecords: int32(len(recs)), Records: raw,
	}
	out := b.AppendTo(nil)
	binary.BigEndian.PutUint32(out[8:12], uint32(len(out)-12))
	binary.BigEndian.PutUint32(out[17:21], crc32.Checksum(out[21:], crc32.MakeTable(crc32.Castagnoli)))
	return out
}

// fetchedBatch is a returned batch as a consumer sees it: the header fields
// a broker must keep as produced (CRC proves the body is untouched) and the
// decoded records with their absolute offsets.
type fetchedBatch struct {
	BaseOffset      int64
	LastOffsetDelta int32
	Attributes      int16
	FirstTimestamp  int64
	MaxTimestamp    int64
	CRC             int32
	Records         []fetchedRecord
}

type fetchedRecord struct {
	Offset    int64
	Timestamp int64
	Key       string
	Value     string
}

// decodeBatches decodes the complete batches of a fetch response's record
// set with kmsg and kgo's decompressor, independent of Gregor's own decoder.
// A trailing partial batch is dropped as a consumer drops it: Kafka may cut
// the last batch at the partition's max bytes, kfake never does.
func decodeBatches(t *testing.T, data []byte) []fetchedBatch {
	t.Helper()
	var out []fetchedBatch
	dec := kgo.DefaultDecompressor()
	for len(data) >= 12 {
		n := 12 + int(int32(binary.BigEndian.Uint32(data[8:12])))
		if n > len(data) {
			break
		}
		var b kmsg.RecordBatch
		if err := b.ReadFrom(data[:n]); err != nil {
			t.Fatalf("decode batch: %v", err)
		}
		if want := int32(crc32.Checksum(data[21:n], crc32.MakeTable(crc32.Castagnoli))); b.CRC != want {
			t.Fatalf("batch at %d: crc %x, body sums to %x", b.FirstOffset, b.CRC, want)
		}
		data = data[n:]
		fb := fetchedBatch{
			BaseOffset: b.FirstOffset, LastOffsetDelta: b.LastOffsetDelta, Attributes: b.Attributes,
			FirstTimestamp: b.FirstTimestamp, MaxTimestamp: b.MaxTimestamp, CRC: b.CRC,
		}
		raw, err := dec.Decompress(b.Records, kgo.CompressionCodecType(b.Attributes&7))
		if err != nil {
			t.Fatalf("decompress batch at %d: %v", b.FirstOffset, err)
		}
		for i := int32(0); i < b.NumRecords; i++ {
			l, w := binary.Varint(raw)
			if w <= 0 || int(l) < 0 || w+int(l) > len(raw) {
				t.Fatalf("batch at %d: record %d truncated", b.FirstOffset, i)
			}
			var r kmsg.Record
			if err := r.ReadFrom(raw[:w+int(l)]); err != nil {
				t.Fatalf("batch at %d: record %d: %v", b.FirstOffset, i, err)
			}
			raw = raw[w+int(l):]
			fb.Records = append(fb.Records, fetchedRecord{
				Offset:    b.FirstOffset + int64(r.OffsetDelta),
				Timestamp: b.FirstTimestamp + r.TimestampDelta64,
				Key:       string(r.Key), Value: string(r.Value),
			})
		}
		out = append(out, fb)
	}
	return out
}
