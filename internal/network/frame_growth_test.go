package network

import (
	"bytes"
	"context"
	"encoding/binary"
	"runtime"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// A frame's memory follows the bytes its client sent: connections that
// claim 100 MiB frames and then send almost nothing make the broker hold
// little (each held its whole claim before, 1.6 GB for these sixteen), and
// a large frame that does arrive is read intact through the growing
// buffer (issue #20 item 7).
func TestStalledLargeFramesHoldLittleMemory(t *testing.T) {
	name := bytes.Repeat([]byte("0123456789abcdefghijklmnopqrstu-"), (5<<20)/32) // 5 MiB topic name
	h := &testHandler{fn: func(ctx context.Context, req *Request) (kmsg.Response, error) {
		resp := echoMetadata(req).(*kmsg.MetadataResponse)
		if m, ok := req.Body.(*kmsg.MetadataRequest); !ok || len(m.Topics) != 1 || m.Topics[0].Topic == nil || *m.Topics[0].Topic != string(name) {
			resp.ControllerID = -1
		}
		return resp, nil
	}}
	// A budget far above what is claimed only counts the frames read.
	s := startServer(t, Config{QueuedMaxRequestBytes: 1 << 40}, h)

	const stalled = 16
	const claim = DefaultSocketRequestMaxBytes - 1
	for range stalled {
		c := dial(t, s)
		frame := binary.BigEndian.AppendUint32(nil, claim)
		c.sendRaw(append(frame, make([]byte, 100)...))
	}
	waitFor(t, "the stalled frames' sizes to be read", func() bool {
		return s.requestBytes.inUse() == stalled*claim
	})
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	if limit := uint64(256 << 20); ms.HeapAlloc > limit {
		t.Fatalf("heap holds %d MiB with %d stalled frames claiming %d MiB each; want under %d MiB", ms.HeapAlloc>>20, stalled, claim>>20, limit>>20)
	}

	c := dial(t, s)
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 12
	topic := kmsg.NewMetadataRequestTopic()
	topic.Topic = kmsg.StringPtr(string(name))
	req.Topics = append(req.Topics, topic)
	corr := c.send(req)
	resp := kmsg.NewPtrMetadataResponse()
	resp.Version = 12
	if got := c.recv(resp); got != corr || resp.ControllerID != corr {
		t.Fatalf("5 MiB frame: answer to %d with ControllerID %d, want %d (-1: the request arrived damaged)", got, resp.ControllerID, corr)
	}
}
