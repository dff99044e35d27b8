//go:build e2e

package test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// rawConn is a bare TCP connection that frames Kafka requests itself, for
// the tests that need exact control over what goes on the wire.
type rawConn struct {
	t    *testing.T
	c    net.Conn
	fmt  *kmsg.RequestFormatter
	corr int32
}

func dialRaw(t *testing.T, b *broker) *rawConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", b.addr(), 5*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", b.addr(), err)
	}
	t.Cleanup(func() { c.Close() })
	return &rawConn{t: t, c: c, fmt: kmsg.NewRequestFormatter(kmsg.FormatterClientID("gregor-e2e-raw"))}
}

// frame returns req as a complete size-prefixed request with the next
// correlation id.
func (rc *rawConn) frame(req kmsg.Request) []byte {
	rc.corr++
	return rc.fmt.AppendRequest(nil, req, rc.corr)
}

func (rc *rawConn) write(p []byte) error {
	rc.c.SetWriteDeadline(time.Now().Add(10 * time.Second))
	_, err := rc.c.Write(p)
	return err
}

// readFrame reads one size-prefixed response frame.
func (rc *rawConn) readFrame(timeout time.Duration) ([]byte, error) {
	rc.c.SetReadDeadline(time.Now().Add(timeout))
	var size [4]byte
	if _, err := io.ReadFull(rc.c, size[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(size[:])
	if n > 64<<20 {
		return nil, fmt.Errorf("response frame of %d bytes", n)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(rc.c, buf); err != nil {
		return nil, err
	}
	return buf, nil
}

// roundTrip sends req at its set version and decodes the response; any
// failure fails the test.
func (rc *rawConn) roundTrip(req kmsg.Request) kmsg.Response {
	rc.t.Helper()
	if err := rc.write(rc.frame(req)); err != nil {
		rc.t.Fatalf("write %T: %v", req, err)
	}
	frame, err := rc.readFrame(20 * time.Second)
	if err != nil {
		rc.t.Fatalf("read response to %T v%d: %v", req, req.GetVersion(), err)
	}
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	if err := decodeResponse(frame, rc.corr, resp); err != nil {
		rc.t.Fatalf("%T v%d: %v", resp, req.GetVersion(), err)
	}
	return resp
}

// decodeResponse checks the correlation id and decodes the body into resp
// (whose version must be set). ApiVersions always answers with header v0.
func decodeResponse(frame []byte, corr int32, resp kmsg.Response) error {
	if len(frame) < 4 {
		return fmt.Errorf("response of %d bytes", len(frame))
	}
	if got := int32(binary.BigEndian.Uint32(frame)); got != corr {
		return fmt.Errorf("correlation id %d, want %d", got, corr)
	}
	body := frame[4:]
	if resp.IsFlexible() && resp.Key() != 18 {
		if len(body) == 0 || body[0] != 0 {
			return fmt.Errorf("unexpected response header tags")
		}
		body = body[1:]
	}
	if err := resp.ReadFrom(body); err != nil {
		return fmt.Errorf("decode body: %w", err)
	}
	return nil
}

// expectClosed fails unless the broker closes the connection (EOF or reset)
// without sending anything, within a few seconds.
func (rc *rawConn) expectClosed(what string) {
	rc.t.Helper()
	rc.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	var buf [64]byte
	n, err := rc.c.Read(buf[:])
	var ne net.Error
	switch {
	case err == nil:
		rc.t.Errorf("%s: broker answered %d bytes, want the connection closed", what, n)
	case errors.As(err, &ne) && ne.Timeout():
		rc.t.Errorf("%s: connection still open after 10s, want it closed", what)
	}
}

// fetchBatches returns the raw record batches of one partition from offset
// on (Fetch v11, by topic name), at most maxBytes.
func fetchBatches(t *testing.T, b *broker, topic string, partition int32, offset int64, maxBytes int32) []kmsg.RecordBatch {
	t.Helper()
	rc := dialRaw(t, b)
	req := kmsg.NewPtrFetchRequest()
	req.Version = 11
	req.ReplicaID = -1
	req.MaxWaitMillis = 0
	req.MinBytes = 1
	req.MaxBytes = maxBytes
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = topic
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.Partition = partition
	fp.FetchOffset = offset
	fp.PartitionMaxBytes = maxBytes
	fp.CurrentLeaderEpoch = -1
	fp.LogStartOffset = -1
	ft.Partitions = append(ft.Partitions, fp)
	req.Topics = append(req.Topics, ft)
	resp := rc.roundTrip(req).(*kmsg.FetchResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("fetch %s/%d: unexpected response shape %+v", topic, partition, resp)
	}
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != 0 {
		t.Fatalf("fetch %s/%d: error code %d", topic, partition, p.ErrorCode)
	}
	var batches []kmsg.RecordBatch
	raw := p.RecordBatches
	for len(raw) >= 12 {
		n := 12 + int(int32(binary.BigEndian.Uint32(raw[8:12])))
		if n > len(raw) {
			break // a partial batch at the end of a fetch is allowed
		}
		var rb kmsg.RecordBatch
		if err := rb.ReadFrom(raw[:n]); err != nil {
			t.Fatalf("fetch %s/%d: decode batch: %v", topic, partition, err)
		}
		batches = append(batches, rb)
		raw = raw[n:]
	}
	return batches
}

// codecIDs are the compression ids in a record batch's attributes.
var codecIDs = map[string]int16{"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}

// checkStoredCodec fails unless the partition's first batches are stored
// with the codec the producer used (Gregor keeps batches as produced), so
// that a test really exercised that codec. Uncompressed batches are allowed
// besides: librdkafka sends a batch uncompressed when compression does not
// make it smaller (typically a lone first record).
func checkStoredCodec(t *testing.T, b *broker, topic string, partition int32, codec string) {
	t.Helper()
	batches := fetchBatches(t, b, topic, partition, 0, 1<<20)
	want := codecIDs[codec]
	var seen []int16
	found := false
	for _, rb := range batches {
		got := rb.Attributes & 0x7
		seen = append(seen, got)
		found = found || got == want
		if got != want && got != 0 {
			found = false
			break
		}
	}
	if !found {
		t.Errorf("%s/%d: stored batch codecs %v, want %d (%s)", topic, partition, seen, want, codec)
	}
}

// compress encodes the records section of a batch with a Kafka codec, the
// way Kafka's Java client frames it (gzip stream, raw snappy block, lz4
// frame, zstd frame).
func compress(t *testing.T, codec string, src []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	switch codec {
	case "gzip":
		w := gzip.NewWriter(&buf)
		w.Write(src)
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	case "snappy":
		return s2.EncodeSnappy(nil, src)
	case "lz4":
		w := lz4.NewWriter(&buf)
		w.Write(src)
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	case "zstd":
		enc, err := zstd.NewWriter(nil)
		if err != nil {
			t.Fatal(err)
		}
		defer enc.Close()
		return enc.EncodeAll(src, nil)
	default:
		t.Fatalf("unknown codec %q", codec)
	}
	return buf.Bytes()
}
