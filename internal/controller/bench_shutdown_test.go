package controller

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/metadata"
)

// TestBenchControlledShutdown measures, with GREGOR_BENCH=1, what the
// active controller spends on a controlled shutdown with N partitions of
// replication factor 3 on three brokers: the heartbeat that starts it
// (which writes the records moving the broker out of every ISR and
// leadership), a heartbeat while it waits for the other brokers to catch
// up (it comes every 50 ms), an ordinary heartbeat of another broker, and
// the heartbeat that ends it (which fences the broker). The
// figures are logged, not asserted.
func TestBenchControlledShutdown(t *testing.T) {
	if os.Getenv("GREGOR_BENCH") == "" {
		t.Skip("set GREGOR_BENCH=1 to measure")
	}
	for _, n := range []int{1_000, 10_000, 100_000} {
		h := newHarness(t)
		ctx := context.Background()
		for id := int32(1); id <= 3; id++ {
			benchRegister(t, h, id)
			benchHeartbeat(t, h, id, false)
		}
		const perTopic = 1000
		for i := 0; i < n/perTopic; i++ {
			req := kmsg.NewPtrCreateTopicsRequest()
			req.Version, req.Topics = 7, []kmsg.CreateTopicsRequestTopic{newTopic(fmt.Sprintf("t%d", i), perTopic, 3)}
			if rt := h.c.CreateTopics(ctx, req).Topics[0]; rt.ErrorCode != 0 {
				t.Fatalf("create: %s", deref(rt.ErrorMessage))
			}
		}
		led := 0
		for _, top := range h.c.Image().Topics.All() {
			for _, p := range top.Partitions() {
				if p.Leader == 1 {
					led++
				}
			}
		}
		offset := h.q.HighWatermark()
		t0 := time.Now()
		first := benchHeartbeat(t, h, 1, true)
		start := time.Since(t0)
		moved := h.q.HighWatermark() - offset
		// The other brokers have not seen those records yet: the broker
		// waits in controlled shutdown, heartbeating.
		t0 = time.Now()
		const waiting = 20
		for range waiting {
			if benchHeartbeat(t, h, 1, true).ShouldShutdown {
				t.Fatal("shutdown allowed before the other brokers caught up")
			}
		}
		wait := time.Since(t0) / waiting
		t0 = time.Now()
		benchHeartbeat(t, h, 2, false)
		other := time.Since(t0)
		benchHeartbeat(t, h, 3, false)
		t0 = time.Now()
		last := benchHeartbeat(t, h, 1, true)
		done := time.Since(t0)
		if first.ShouldShutdown || !last.ShouldShutdown {
			t.Fatalf("%d partitions: should-shutdown %v then %v", n, first.ShouldShutdown, last.ShouldShutdown)
		}
		for _, top := range h.c.Image().Topics.All() {
			for _, p := range top.Partitions() {
				if p.Leader == 1 {
					t.Fatalf("%d partitions: broker 1 still leads %s-%v", n, top.Name, p)
				}
			}
		}
		t.Logf("%7d partitions (broker 1 led %d): shutdown heartbeat %v (%d records), heartbeat while waiting %v, another broker's heartbeat %v, the heartbeat that ends it %v",
			n, led, start.Round(time.Microsecond), moved, wait.Round(time.Microsecond), other.Round(time.Microsecond), done.Round(time.Microsecond))
	}
}

func benchRegister(t *testing.T, h *harness, id int32) {
	t.Helper()
	req := kmsg.NewPtrBrokerRegistrationRequest()
	req.Version = 4
	req.BrokerID, req.ClusterID, req.IncarnationID = id, h.c.cfg.ClusterID, testID(fmt.Sprintf("inc%d", id))
	l := kmsg.NewBrokerRegistrationRequestListener()
	l.Name, l.Host, l.Port = "PLAINTEXT", "localhost", uint16(9090+id)
	req.Listeners = []kmsg.BrokerRegistrationRequestListener{l}
	req.LogDirs = [][16]byte{testID(fmt.Sprintf("dir%d", id))}
	for _, sf := range metadata.SupportedFeatures() {
		f := kmsg.NewBrokerRegistrationRequestFeature()
		f.Name, f.MinSupportedVersion, f.MaxSupportedVersion = sf.Name, sf.Min, sf.Max
		req.Features = append(req.Features, f)
	}
	if _, err := h.c.registerBroker(context.Background(), req); err != nil {
		t.Fatal(err)
	}
}

// benchHeartbeat sends a heartbeat of a broker that has seen everything
// committed.
func benchHeartbeat(t *testing.T, h *harness, id int32, shutdown bool) *kmsg.BrokerHeartbeatResponse {
	t.Helper()
	req := kmsg.NewPtrBrokerHeartbeatRequest()
	req.BrokerID, req.BrokerEpoch = id, h.c.Image().Brokers[id].Epoch
	req.CurrentMetadataOffset = h.q.HighWatermark() - 1
	req.WantShutdown = shutdown
	resp, err := h.c.heartbeat(context.Background(), req, nil)
	if err != nil {
		t.Fatalf("heartbeat of %d: %v", id, err)
	}
	return resp
}
