package controller

import (
	"context"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestAllocateProducerIDs: blocks of 1000 follow each other, survive a
// controller restart (the ProducerIdsRecord is replayed), and a stale broker
// epoch is refused.
func TestAllocateProducerIDs(t *testing.T) {
	dir := metadataDir(t)
	n := startNode(t, dir, testConfig())
	epoch := n.c.Image().Brokers[1].Epoch
	for i := int64(0); i < 2; i++ {
		b, err := n.c.AllocateProducerIDs(context.Background(), 1, epoch)
		if err != nil {
			t.Fatal(err)
		}
		if b.FirstProducerID != i*ProducerIDBlockSize || b.Size != ProducerIDBlockSize || b.BrokerID != 1 {
			t.Fatalf("block %d: %+v", i, b)
		}
	}
	if _, err := n.c.AllocateProducerIDs(context.Background(), 1, epoch+1); !errors.Is(err, kerr.StaleBrokerEpoch) {
		t.Fatalf("stale epoch: %v", err)
	}
	if _, err := n.c.AllocateProducerIDs(context.Background(), 9, 0); !errors.Is(err, kerr.StaleBrokerEpoch) {
		t.Fatalf("unregistered broker: %v", err)
	}
	if next := n.c.Image().NextProducerID; next != 2*ProducerIDBlockSize {
		t.Fatalf("next producer id %d", next)
	}
	n.stop()

	n = startNode(t, dir, testConfig())
	b, err := n.c.AllocateProducerIDs(context.Background(), 1, n.c.Image().Brokers[1].Epoch)
	if err != nil {
		t.Fatal(err)
	}
	if b.FirstProducerID != 2*ProducerIDBlockSize {
		t.Fatalf("after restart: %+v", b)
	}
}
