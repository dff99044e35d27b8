package network

import (
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

var updateCorpus = flag.Bool("update-corpus", false, "rewrite testdata/fuzz/FuzzDecodeRequest from seedRequests")

// kmsgVersions serves every API key at every version kmsg knows, except
// ApiVersions above v3, so the KIP-511 path is reachable.
func kmsgVersions(key int16) (int16, int16, bool) {
	r := kmsg.RequestForKey(key)
	if r == nil {
		return 0, 0, false
	}
	if key == apiVersionsKey {
		return 0, 3, true
	}
	return 0, r.MaxVersion(), true
}

// seedRequests are real requests of several APIs, flexible and not.
func seedRequests() []kmsg.Request {
	topic := "orders"
	var reqs []kmsg.Request
	add := func(r kmsg.Request, versions ...int16) {
		for _, v := range versions {
			r.SetVersion(v)
			reqs = append(reqs, cloneAt(r, v))
		}
	}
	produce := kmsg.NewPtrProduceRequest()
	produce.Acks = -1
	produce.TimeoutMillis = 30000
	pt := kmsg.NewProduceRequestTopic()
	pt.Topic = topic
	pp := kmsg.NewProduceRequestTopicPartition()
	pp.Partition = 3
	pp.Records = []byte("not really a record batch")
	pt.Partitions = append(pt.Partitions, pp)
	produce.Topics = append(produce.Topics, pt)
	add(produce, 3, 8, 9, 11)

	fetch := kmsg.NewPtrFetchRequest()
	fetch.MaxWaitMillis = 500
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = topic
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.FetchOffset = 42
	ft.Partitions = append(ft.Partitions, fp)
	fetch.Topics = append(fetch.Topics, ft)
	add(fetch, 4, 11, 12)

	metadata := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(topic)
	metadata.Topics = append(metadata.Topics, mt)
	add(metadata, 0, 4, 9, 12)

	apiVersions := kmsg.NewPtrApiVersionsRequest()
	apiVersions.ClientSoftwareName = "gregor"
	apiVersions.ClientSoftwareVersion = "0.1"
	add(apiVersions, 0, 3, 4) // v4 is above the served v3

	join := kmsg.NewPtrJoinGroupRequest()
	join.Group = "g"
	join.ProtocolType = "consumer"
	join.SessionTimeoutMillis = 45000
	join.Protocols = append(join.Protocols, kmsg.JoinGroupRequestProtocol{Name: "range", Metadata: []byte{0, 1}})
	add(join, 2, 6, 9)

	add(kmsg.NewPtrControlledShutdownRequest(), 0, 3) // v0 has request header v0
	return reqs
}

// cloneAt encodes r at v and decodes a fresh copy, so each seed keeps its version.
func cloneAt(r kmsg.Request, v int16) kmsg.Request {
	c := kmsg.RequestForKey(r.Key())
	c.SetVersion(v)
	if err := c.ReadFrom(r.AppendTo(nil)); err != nil {
		panic(fmt.Sprintf("clone %T v%d: %v", r, v, err))
	}
	return c
}

// encodeFrame encodes a request as a client does, without the size prefix.
// (kmsg's RequestFormatter leaves out the body of ControlledShutdown v0.)
func encodeFrame(r kmsg.Request, corr int32, clientID *string) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(r.Key()))
	b = binary.BigEndian.AppendUint16(b, uint16(r.GetVersion()))
	b = binary.BigEndian.AppendUint32(b, uint32(corr))
	if r.Key() != controlledShutdownKey || r.GetVersion() != 0 {
		if clientID == nil {
			b = binary.BigEndian.AppendUint16(b, 0xffff)
		} else {
			b = binary.BigEndian.AppendUint16(b, uint16(len(*clientID)))
			b = append(b, *clientID...)
		}
		if r.IsFlexible() {
			b = append(b, 0)
		}
	}
	return r.AppendTo(b)
}

func TestDecodeRequestRoundTrip(t *testing.T) {
	for i, r := range seedRequests() {
		for _, clientID := range []*string{nil, kmsg.StringPtr("client-1")} {
			name := fmt.Sprintf("%s_v%d_%d", kmsg.NameForKey(r.Key()), r.GetVersion(), i)
			frame := encodeFrame(r, int32(i), clientID)
			got, err := DecodeRequest(frame, kmsgVersions)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			h := got.Header
			if h.APIKey != r.Key() || h.APIVersion != r.GetVersion() || h.CorrelationID != int32(i) || got.Size != len(frame) {
				t.Fatalf("%s: header %+v size %d", name, h, got.Size)
			}
			wantClientID := clientID
			if r.Key() == controlledShutdownKey && r.GetVersion() == 0 {
				wantClientID = nil // header v0 carries none
			}
			if !reflect.DeepEqual(h.ClientID, wantClientID) {
				t.Fatalf("%s: client id %v, want %v", name, h.ClientID, wantClientID)
			}
			if r.Key() == apiVersionsKey && r.GetVersion() > 3 {
				if !got.UnsupportedVersion || got.Body.GetVersion() != 0 {
					t.Fatalf("%s: want the unsupported ApiVersions path, got %+v", name, got)
				}
				continue
			}
			if got.UnsupportedVersion || !reflect.DeepEqual(got.Body, r) {
				t.Fatalf("%s: body\n got %+v\nwant %+v", name, got.Body, r)
			}
		}
	}
}

func TestDecodeRequestHeaderTags(t *testing.T) {
	r := metadataReq(12)
	plain := encodeFrame(r, 1, nil)
	// Insert one unknown header tag (tag 5, 3 bytes) before the body:
	// key(2) version(2) corr(4) client id(2) = 10 bytes, then the tag count.
	tagged := append([]byte{}, plain[:10]...)
	tagged = append(tagged, 1, 5, 3, 'a', 'b', 'c')
	tagged = append(tagged, plain[11:]...)
	got, err := DecodeRequest(tagged, kmsgVersions)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Body, r) {
		t.Fatalf("body %+v", got.Body)
	}
	// A tag longer than the frame is malformed.
	bad := append(append([]byte{}, plain[:10]...), 1, 5, 100)
	if _, err := DecodeRequest(bad, kmsgVersions); !errors.Is(err, ErrMalformedRequest) {
		t.Fatalf("oversized tag: %v", err)
	}
}

func TestDecodeRequestErrors(t *testing.T) {
	meta := encodeFrame(metadataReq(4), 1, kmsg.StringPtr("c"))
	for _, tc := range []struct {
		name  string
		frame []byte
		want  error
	}{
		{"empty", nil, ErrMalformedRequest},
		{"short header", meta[:7], ErrMalformedRequest},
		{"missing client id", meta[:8], ErrMalformedRequest},
		{"client id past end", append(append([]byte{}, meta[:8]...), 0, 50, 'x'), ErrMalformedRequest},
		{"negative client id length", append(append([]byte{}, meta[:8]...), 0xff, 0xf0), ErrMalformedRequest},
		{"truncated body", meta[:len(meta)-1], ErrMalformedRequest},
		{"unknown key", append([]byte{0x7f, 0x7f}, meta[2:]...), ErrUnknownAPIKey},
		{"negative key", append([]byte{0xff, 0xff}, meta[2:]...), ErrUnknownAPIKey},
		{"version above max", append([]byte{0, 3, 0x7f, 0}, meta[4:]...), ErrUnsupportedVersion},
		{"negative version", append([]byte{0, 3, 0xff, 0xff}, meta[4:]...), ErrUnsupportedVersion},
	} {
		if _, err := DecodeRequest(tc.frame, kmsgVersions); !errors.Is(err, tc.want) {
			t.Errorf("%s: err %v, want %v", tc.name, err, tc.want)
		}
	}
	notServed := func(key int16) (int16, int16, bool) { return 0, 0, false }
	if _, err := DecodeRequest(meta, notServed); !errors.Is(err, ErrUnknownAPIKey) {
		t.Errorf("key not served: %v", err)
	}
}

func TestEncodeResponseHeaders(t *testing.T) {
	for _, tc := range []struct {
		resp       kmsg.Response
		version    int16
		headerSize int // correlation id plus tagged fields
	}{
		{kmsg.NewPtrMetadataResponse(), 8, 4},
		{kmsg.NewPtrMetadataResponse(), 9, 5},
		{kmsg.NewPtrApiVersionsResponse(), 0, 4},
		{kmsg.NewPtrApiVersionsResponse(), 3, 4}, // flexible, still header v0
	} {
		tc.resp.SetVersion(tc.version)
		b := encodeResponse(77, tc.resp)
		body := tc.resp.AppendTo(nil)
		if len(b) != 4+tc.headerSize+len(body) || int(b[3]) != len(b)-4 || b[7] != 77 {
			t.Errorf("%T v%d: frame % x", tc.resp, tc.version, b)
		}
	}
}

func FuzzDecodeRequest(f *testing.F) {
	f.Fuzz(func(t *testing.T, frame []byte) {
		req, err := DecodeRequest(frame, kmsgVersions)
		if err != nil {
			return
		}
		if req.Body == nil || req.Size != len(frame) {
			t.Fatalf("decoded request without body or size: %+v", req)
		}
		// A decoded body re-encodes without panicking.
		req.Body.AppendTo(nil)
	})
}

// TestWriteFuzzCorpus rewrites the committed seed corpus when run with
// -update-corpus; otherwise it checks that the corpus is present.
func TestWriteFuzzCorpus(t *testing.T) {
	dir := filepath.Join("testdata", "fuzz", "FuzzDecodeRequest")
	if !*updateCorpus {
		entries, err := os.ReadDir(dir)
		if err != nil || len(entries) < len(seedRequests()) {
			t.Fatalf("seed corpus missing (%v); run go test -run TestWriteFuzzCorpus -update-corpus", err)
		}
		return
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for i, r := range seedRequests() {
		frame := encodeFrame(r, int32(i), kmsg.StringPtr("seed"))
		name := fmt.Sprintf("%02d_%s_v%d", i, kmsg.NameForKey(r.Key()), r.GetVersion())
		content := "go test fuzz v1\n[]byte(" + strconv.Quote(string(frame)) + ")\n"
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
