package network

import (
	"context"
	"net"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestFranzGoClient proves the framing with a real client: franz-go first
// sends ApiVersions v5 (above our v3, so the KIP-511 path answers v0 and it
// retries with v3, header v0 response), then flexible Metadata requests.
func TestFranzGoClient(t *testing.T) {
	var addr *net.TCPAddr
	var mu sync.Mutex
	var metadataVersions []int16
	h := &testHandler{fn: func(ctx context.Context, req *Request) (kmsg.Response, error) {
		if _, ok := req.Body.(*kmsg.MetadataRequest); !ok {
			t.Errorf("unexpected request %T", req.Body)
			return nil, nil
		}
		mu.Lock()
		metadataVersions = append(metadataVersions, req.Header.APIVersion)
		mu.Unlock()
		resp := kmsg.NewPtrMetadataResponse()
		resp.ClusterID = kmsg.StringPtr("gregor-test")
		resp.ControllerID = 0
		resp.Brokers = []kmsg.MetadataResponseBroker{{NodeID: 0, Host: addr.IP.String(), Port: int32(addr.Port)}}
		return resp, nil
	}}
	s := startServer(t, Config{}, h)
	addr = s.Addr("PLAINTEXT").(*net.TCPAddr)

	cl, err := kgo.NewClient(kgo.SeedBrokers(addr.String()), kgo.RequestRetries(0))
	if err != nil {
		t.Fatalf("new client: %v", err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), ioTimeout)
	defer cancel()
	for range 3 {
		resp, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("metadata request: %v", err)
		}
		if resp.ClusterID == nil || *resp.ClusterID != "gregor-test" || len(resp.Brokers) != 1 ||
			resp.Brokers[0].Port != int32(addr.Port) {
			t.Fatalf("metadata response: %+v", resp)
		}
	}
	if err := cl.Ping(ctx); err != nil {
		t.Fatalf("ping: %v", err)
	}
	for _, v := range []int16{-1, 3} {
		if _, ok := h.apiVersionsSeen.Load(v); !ok {
			t.Errorf("franz-go sent no ApiVersions request at version %d (-1: unsupported)", v)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for _, v := range metadataVersions {
		if v != 12 {
			t.Fatalf("franz-go used Metadata v%d, want v12 (our max)", v)
		}
	}
}
