//go:build e2e

package test

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestBadInput sends malformed and invalid requests over raw TCP to one
// broker (socket.request.max.bytes=1000): each must get Kafka's answer
// (an error code, or this connection closed) while the process and its
// other connections keep working and no log changes.
func TestBadInput(t *testing.T) {
	t.Parallel()
	b := startBroker(t, "socket.request.max.bytes=1000")

	// A connection opened before the bad input, used again after each case.
	bystander := dialRaw(t, b)
	checkAlive := func(t *testing.T) {
		t.Helper()
		for _, rc := range []*rawConn{bystander, dialRaw(t, b)} {
			req := kmsg.NewPtrApiVersionsRequest()
			req.Version = 3
			req.ClientSoftwareName, req.ClientSoftwareVersion = "gregor-e2e", "1.0"
			if resp := rc.roundTrip(req).(*kmsg.ApiVersionsResponse); resp.ErrorCode != 0 || len(resp.ApiKeys) == 0 {
				t.Fatalf("ApiVersions after bad input: error %d, %d keys", resp.ErrorCode, len(resp.ApiKeys))
			}
		}
	}

	t.Run("oversized-frame", func(t *testing.T) {
		rc := dialRaw(t, b)
		// Under the limit: served.
		md := kmsg.NewPtrMetadataRequest()
		md.Version = 9
		if frame := rc.frame(md); len(frame) > 1000 {
			t.Fatalf("small request is %d bytes", len(frame))
		}
		rc.corr = 0
		rc.roundTrip(md)
		// Over the limit: the size prefix alone closes the connection,
		// before the broker reads (or allocates) the body.
		var size [4]byte
		binary.BigEndian.PutUint32(size[:], 1001)
		if err := rc.write(size[:]); err != nil {
			t.Fatal(err)
		}
		rc.expectClosed("frame of 1001 bytes")
		// A real request over the limit: a Produce of 1.5 kB.
		rc = dialRaw(t, b)
		rc.write(rc.frame(produceRequest("bad-input-big", 0, 1, buildBatch(t, batchOpts{values: []string{strings.Repeat("v", 1500)}}))))
		rc.expectClosed("produce request over socket.request.max.bytes")
		checkAlive(t)
	})

	t.Run("garbage", func(t *testing.T) {
		for name, raw := range map[string][]byte{
			"negative size":         {0xff, 0xff, 0xff, 0xfe, 1, 2, 3},
			"short frame":           {0, 0, 0, 3, 0, 18, 0},
			"random bytes":          sized([]byte("\x47\x45\x54\x20/ HTTP/1.1\r\nHost: example\r\n\r\n")),
			"truncated body":        truncatedMetadataFrame(),
			"bad client id length":  {0, 0, 0, 12, 0, 3, 0, 9, 0, 0, 0, 1, 0x7f, 0xff, 0, 0},
			"http request, no size": []byte("GET / HTTP/1.0\r\n\r\n"),
		} {
			t.Run(name, func(t *testing.T) {
				rc := dialRaw(t, b)
				if err := rc.write(raw); err != nil {
					t.Fatal(err)
				}
				rc.expectClosed(name)
			})
		}
		checkAlive(t)
	})

	t.Run("unknown-api-key", func(t *testing.T) {
		for _, key := range []int16{9999, -1, 10 /* FindCoordinator: known to Kafka, not served yet */} {
			rc := dialRaw(t, b)
			frame := binary.BigEndian.AppendUint32(nil, 10)
			frame = binary.BigEndian.AppendUint16(frame, uint16(key))
			frame = binary.BigEndian.AppendUint16(frame, 0)
			frame = binary.BigEndian.AppendUint32(frame, 7)
			frame = binary.BigEndian.AppendUint16(frame, 0xffff) // null client id
			if err := rc.write(frame); err != nil {
				t.Fatal(err)
			}
			rc.expectClosed(fmt.Sprintf("api key %d", key))
		}
		// A served key at a version outside its range is closed as well
		// (Kafka's InvalidRequestException), ApiVersions excepted.
		rc := dialRaw(t, b)
		md := kmsg.NewPtrMetadataRequest()
		md.Version = 12
		frame := rc.frame(md)
		binary.BigEndian.PutUint16(frame[6:], 99)
		rc.write(frame)
		rc.expectClosed("Metadata v99")
		checkAlive(t)
	})

	t.Run("api-versions-v99", func(t *testing.T) {
		// KIP-511: a version above the broker's gets a v0 response with
		// UNSUPPORTED_VERSION and ApiVersions' own range, on a connection
		// that stays open.
		rc := dialRaw(t, b)
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version = 99
		req.ClientSoftwareName, req.ClientSoftwareVersion = "gregor-e2e", "1.0"
		if err := rc.write(rc.frame(req)); err != nil {
			t.Fatal(err)
		}
		frame, err := rc.readFrame(10 * time.Second)
		if err != nil {
			t.Fatalf("ApiVersions v99: %v", err)
		}
		resp := kmsg.NewPtrApiVersionsResponse()
		resp.Version = 0
		if err := decodeResponse(frame, rc.corr, resp); err != nil {
			t.Fatalf("ApiVersions v99 answer does not decode as v0: %v (% x)", err, frame)
		}
		if resp.ErrorCode != kerr.UnsupportedVersion.Code {
			t.Errorf("ApiVersions v99: error %d, want %d", resp.ErrorCode, kerr.UnsupportedVersion.Code)
		}
		found := false
		for _, k := range resp.ApiKeys {
			if k.ApiKey == 18 {
				found = k.MinVersion == 0 && k.MaxVersion >= 3
			}
		}
		if !found {
			t.Errorf("ApiVersions v99: ApiVersions range missing or wrong: %+v", resp.ApiKeys)
		}
		// The client retries at a version both know, on the same connection.
		req.Version = 3
		if resp := rc.roundTrip(req).(*kmsg.ApiVersionsResponse); resp.ErrorCode != 0 {
			t.Errorf("ApiVersions v3 retry: error %d", resp.ErrorCode)
		}
	})

	// Produce validation: a good batch first (so the log is not empty),
	// then each bad batch must be refused with Kafka's code and leave the
	// log end offset unchanged.
	rc := dialRaw(t, b)
	createTopic(t, newKgo(t, b), "bad-input", 1, nil)
	createTopic(t, newKgo(t, b), "bad-input-compact", 1, map[string]*string{"cleanup.policy": strp("compact")})
	createTopic(t, newKgo(t, b), "bad-input-ts", 1, map[string]*string{"message.timestamp.before.max.ms": strp("3600000")})
	produceOK := func(t *testing.T, topic string, batch []byte) {
		t.Helper()
		if p := produceRaw(t, rc, topic, batch); p.ErrorCode != 0 {
			t.Fatalf("good batch to %s: error %d (%v)", topic, p.ErrorCode, p.ErrorMessage)
		}
	}
	produceBad := func(t *testing.T, topic string, batch []byte, want *kerr.Error) {
		t.Helper()
		before := listEndOffset(t, rc, topic)
		p := produceRaw(t, rc, topic, batch)
		if p.ErrorCode != want.Code {
			t.Errorf("bad batch to %s: error %d (%v), want %d (%s)", topic, p.ErrorCode, strOrNil(p.ErrorMessage), want.Code, want.Message)
		}
		if p.BaseOffset != -1 {
			t.Errorf("bad batch to %s: base offset %d, want -1", topic, p.BaseOffset)
		}
		if after := listEndOffset(t, rc, topic); after != before {
			t.Errorf("bad batch to %s changed the log end offset from %d to %d", topic, before, after)
		}
	}

	t.Run("corrupt-crc", func(t *testing.T) {
		produceOK(t, "bad-input", buildBatch(t, batchOpts{keys: []string{"k"}, values: []string{"good"}}))
		for _, codec := range codecs {
			t.Run(codec, func(t *testing.T) {
				batch := buildBatch(t, batchOpts{codec: codec, keys: []string{"a", "b"}, values: []string{"one", "two"}})
				batch[len(batch)-2] ^= 0x55 // a byte of the records, covered by the CRC
				produceBad(t, "bad-input", batch, kerr.CorruptMessage)
				// A wrong CRC field with intact records is the same.
				batch = buildBatch(t, batchOpts{codec: codec, keys: []string{"a"}, values: []string{"one"}})
				batch[17] ^= 0xff
				produceBad(t, "bad-input", batch, kerr.CorruptMessage)
			})
		}
		checkAlive(t)
	})

	t.Run("keyless-record-on-compacted-topic", func(t *testing.T) {
		produceOK(t, "bad-input-compact", buildBatch(t, batchOpts{keys: []string{"k"}, values: []string{"keyed"}}))
		for _, codec := range codecs {
			t.Run(codec, func(t *testing.T) {
				batch := buildBatch(t, batchOpts{codec: codec, keys: []string{"k", ""}, nullKey: []bool{false, true}, values: []string{"keyed", "keyless"}})
				produceBad(t, "bad-input-compact", batch, kerr.InvalidRecord)
			})
		}
	})

	t.Run("timestamp-out-of-range", func(t *testing.T) {
		now := time.Now().UnixMilli()
		produceOK(t, "bad-input-ts", buildBatch(t, batchOpts{values: []string{"now"}, timestamp: now}))
		for _, codec := range codecs {
			t.Run(codec, func(t *testing.T) {
				// message.timestamp.before.max.ms=1h on the topic.
				produceBad(t, "bad-input-ts", buildBatch(t, batchOpts{codec: codec, values: []string{"old"}, timestamp: now - 2*3600*1000}), kerr.InvalidTimestamp)
				// message.timestamp.after.max.ms defaults to 1h.
				produceBad(t, "bad-input-ts", buildBatch(t, batchOpts{codec: codec, values: []string{"future"}, timestamp: now + 2*3600*1000}), kerr.InvalidTimestamp)
			})
		}
	})

	checkAlive(t)
}

// TestBadConfig starts the process with an invalid and with an unknown
// config value.
func TestBadConfig(t *testing.T) {
	t.Parallel()
	t.Run("invalid-value", func(t *testing.T) {
		t.Parallel()
		port, ctrl := freePort(t), freePort(t)
		out, err := run(t, 30*time.Second, "", gregorBin, "server",
			"--override", fmt.Sprintf("listeners=PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d", port, ctrl),
			"--override", fmt.Sprintf("controller.quorum.voters=1@127.0.0.1:%d", ctrl),
			"--override", "log.dirs="+t.TempDir(),
			"--override", "num.partitions=abc")
		if err == nil {
			t.Fatalf("gregor started with num.partitions=abc:\n%s", out)
		}
		if !strings.Contains(out, "num.partitions") || !strings.Contains(out, "abc") {
			t.Errorf("error does not name num.partitions and its value:\n%s", out)
		}
	})
	// Security Gregor does not implement stops start-up with one line
	// naming the key, before anything is written, instead of starting a
	// broker less secure than asked (issue 20, item 9).
	for _, setting := range []string{
		"authorizer.class.name=kafka.security.authorizer.AclAuthorizer",
		"principal.builder.class=com.example.CustomPrincipalBuilder",
		"sasl.enabled.mechanisms=GSSAPI,PLAIN",
		"listener.name.sasl_plaintext.plain.sasl.server.callback.handler.class=com.example.LdapCallbackHandler",
		"sasl.kerberos.service.name=kafka",
		"ssl.engine.factory.class=com.example.SslEngineFactory",
		"delegation.token.secret.key=hunter2",
	} {
		key, _, _ := strings.Cut(setting, "=")
		t.Run("unsupported-security/"+key, func(t *testing.T) {
			t.Parallel()
			port, ctrl, dir := freePort(t), freePort(t), t.TempDir()
			out, err := run(t, 30*time.Second, "", gregorBin, "server",
				"--override", fmt.Sprintf("listeners=PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d", port, ctrl),
				"--override", fmt.Sprintf("controller.quorum.voters=1@127.0.0.1:%d", ctrl),
				"--override", "log.dirs="+dir,
				"--override", "gregor.http.listen=",
				"--override", setting)
			if err == nil {
				t.Fatalf("gregor started with %s:\n%s", setting, out)
			}
			if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 1 || !strings.Contains(out, key) {
				t.Errorf("want one line naming %s, got:\n%s", key, out)
			}
			if strings.Contains(out, "hunter2") {
				t.Errorf("the error quotes a secret:\n%s", out)
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 0 {
				t.Errorf("refused start-up wrote %d entries to log.dirs", len(entries))
			}
		})
	}
	t.Run("unknown-key", func(t *testing.T) {
		t.Parallel()
		b := startBroker(t, "no.such.config.key=1")
		if log := b.log(); !strings.Contains(log, "no.such.config.key") || !strings.Contains(log, "level=WARN") {
			t.Errorf("no warning naming the unknown key:\n%s", log)
		}
		rc := dialRaw(t, b)
		req := kmsg.NewPtrApiVersionsRequest()
		if resp := rc.roundTrip(req).(*kmsg.ApiVersionsResponse); resp.ErrorCode != 0 {
			t.Errorf("ApiVersions: error %d", resp.ErrorCode)
		}
	})
}

// batchOpts describes one magic v2 record batch for buildBatch.
type batchOpts struct {
	codec     string   // compression; "" is none
	keys      []string // per record; missing means null
	nullKey   []bool   // per record: force a null key
	values    []string
	timestamp int64 // first timestamp; 0 means now
}

// buildBatch encodes a record batch as a non-idempotent producer would,
// with a correct CRC32C.
func buildBatch(t *testing.T, o batchOpts) []byte {
	t.Helper()
	ts := o.timestamp
	if ts == 0 {
		ts = time.Now().UnixMilli()
	}
	var records []byte
	for i, v := range o.values {
		r := kmsg.Record{OffsetDelta: int32(i), Value: []byte(v)}
		if i < len(o.keys) && !(i < len(o.nullKey) && o.nullKey[i]) {
			r.Key = []byte(o.keys[i])
		}
		body := r.AppendTo(nil) // Length 0 takes one byte
		r.Length = int32(len(body) - 1)
		records = r.AppendTo(records)
	}
	var attrs int16
	if o.codec != "" && o.codec != "none" {
		attrs = codecIDs[o.codec]
		records = compress(t, o.codec, records)
	}
	rb := kmsg.RecordBatch{
		FirstOffset:          0,
		PartitionLeaderEpoch: -1,
		Magic:                2,
		Attributes:           attrs,
		LastOffsetDelta:      int32(len(o.values) - 1),
		FirstTimestamp:       ts,
		MaxTimestamp:         ts,
		ProducerID:           -1,
		ProducerEpoch:        -1,
		FirstSequence:        -1,
		NumRecords:           int32(len(o.values)),
		Records:              records,
	}
	raw := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[8:], uint32(len(raw)-12))
	binary.BigEndian.PutUint32(raw[17:], crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli)))
	return raw
}

// produceRequest wraps one batch in a Produce v9 request for one partition.
func produceRequest(topic string, partition int32, acks int16, batch []byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Version = 9
	req.Acks = acks
	req.TimeoutMillis = 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = partition
	rp.Records = batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

func produceRaw(t *testing.T, rc *rawConn, topic string, batch []byte) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	resp := rc.roundTrip(produceRequest(topic, 0, -1, batch)).(*kmsg.ProduceResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("produce to %s: unexpected response shape %+v", topic, resp)
	}
	return resp.Topics[0].Partitions[0]
}

// listEndOffset asks ListOffsets v7 for the log end offset of partition 0.
func listEndOffset(t *testing.T, rc *rawConn, topic string) int64 {
	t.Helper()
	return listLatestOffset(t, rc, topic, 0)
}

// listLatestOffset asks ListOffsets v7 for the latest offset of partition
// 0 at an isolation level: the log end offset (0, read_uncommitted) or the
// last stable offset (1, read_committed).
func listLatestOffset(t *testing.T, rc *rawConn, topic string, isolation int8) int64 {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.Version = 7
	req.ReplicaID = -1
	req.IsolationLevel = isolation
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition = 0
	rp.Timestamp = -1
	rp.CurrentLeaderEpoch = -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := rc.roundTrip(req).(*kmsg.ListOffsetsResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("ListOffsets %s (isolation %d): %+v", topic, isolation, resp)
	}
	return resp.Topics[0].Partitions[0].Offset
}

// truncatedMetadataFrame is a Metadata v9 request whose size prefix is
// right but whose body stops in the middle of a topic name.
func truncatedMetadataFrame() []byte {
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 9
	topic := kmsg.NewMetadataRequestTopic()
	topic.Topic = kmsg.StringPtr("a-topic-name-that-is-cut")
	req.Topics = append(req.Topics, topic)
	frame := kmsg.NewRequestFormatter().AppendRequest(nil, req, 1)
	frame = frame[:len(frame)-12]
	binary.BigEndian.PutUint32(frame, uint32(len(frame)-4))
	return frame
}

// sized prefixes body with its length, as a request frame.
func sized(body []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
}

func strOrNil(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}
