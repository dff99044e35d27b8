package network

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestParkedRequestsBounded (issue #20 item 2): at most MaxParkedRequests
// requests hold a parked place at once; a request finding none answers at
// once; a place comes back when its request ends (here: its client left).
func TestParkedRequestsBounded(t *testing.T) {
	var parked, refused atomic.Int32
	h := &testHandler{fn: func(ctx context.Context, req *Request) (kmsg.Response, error) {
		req.Dispatched()
		if !req.Park() {
			refused.Add(1)
			return echoMetadata(req), nil
		}
		if !req.Park() {
			t.Error("Park while holding a place returned false")
		}
		parked.Add(1)
		<-ctx.Done()
		parked.Add(-1)
		return nil, ctx.Err()
	}}
	s := startServer(t, Config{MaxParkedRequests: 3}, h)
	a, b := dial(t, s), dial(t, s)
	a.send(metadataReq(12))
	a.send(metadataReq(12))
	waitFor(t, "two parked", func() bool { return parked.Load() == 2 })
	b.send(metadataReq(12))
	waitFor(t, "three parked", func() bool { return parked.Load() == 3 })
	c := dial(t, s)
	c.roundTrip(12) // no place: answered at once
	if refused.Load() != 1 {
		t.Fatalf("%d requests refused a place, want 1", refused.Load())
	}
	a.nc.Close()
	waitFor(t, "the closed connection's places given back", func() bool { return parked.Load() == 1 })
	c.send(metadataReq(12))
	waitFor(t, "a place taken again", func() bool { return parked.Load() == 2 })
	b.nc.Close()
	c.nc.Close()
	waitFor(t, "every place given back", func() bool { return parked.Load() == 0 && s.parking.n.Load() == 0 })
}
