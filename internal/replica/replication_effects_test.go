package replica

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/log"
	"gregor/internal/metadata"
	"gregor/internal/partition"
)

// fakeController answers AlterPartition as a controller that accepts every
// change: the ISR asked for, the partition epoch bumped. The first
// `failures` requests fail as a lost connection would.
type fakeController struct {
	mu       sync.Mutex
	failures int
	requests []*kmsg.AlterPartitionRequest
	changes  []string
}

func (c *fakeController) alterPartition(_ context.Context, req *kmsg.AlterPartitionRequest) (*kmsg.AlterPartitionResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.requests = append(c.requests, req)
	if c.failures > 0 {
		c.failures--
		return nil, errors.New("controller connection reset")
	}
	rt, rp := req.Topics[0], req.Topics[0].Partitions[0]
	p := kmsg.NewAlterPartitionResponseTopicPartition()
	p.Partition, p.LeaderID, p.LeaderEpoch, p.PartitionEpoch = rp.Partition, req.BrokerID, rp.LeaderEpoch, rp.PartitionEpoch+1
	for _, m := range rp.NewEpochISR {
		p.ISR = append(p.ISR, m.BrokerID)
	}
	t := kmsg.NewAlterPartitionResponseTopic()
	t.TopidID = rt.TopicID // kmsg spells it TopidID
	t.Partitions = append(t.Partitions, p)
	resp := kmsg.NewPtrAlterPartitionResponse()
	resp.Topics = append(resp.Topics, t)
	return resp, nil
}

func (c *fakeController) onISRChange(change string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.changes = append(c.changes, change)
}

func (c *fakeController) seen() (requests []*kmsg.AlterPartitionRequest, changes []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.requests), slices.Clone(c.changes)
}

// waitFor polls cond until it holds or 10s passed.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestFollowerFetchEffectExpandsISR: a follower that catches up makes the
// partition return an AlterPartition effect; the manager sends it with both
// members' broker epochs, resends it after a transport error as the
// partition's answer asks, and the commit reaches the partition's ISR and
// the IsrExpandsPerSec hook once.
func TestFollowerFetchEffectExpandsISR(t *testing.T) {
	m := newTestManager(t)
	defer m.Close()
	ctl := &fakeController{failures: 1}
	m.StartReplication(ReplicationConfig{AlterPartition: ctl.alterPartition, OnISRChange: ctl.onISRChange,
		BrokerEpoch: func() int64 { return 3 }})
	part := partRecord(topicID(1), 0, testNode, 2)
	part.ISR = []int32{testNode}
	feed(t, metadata.EmptyImage(), []*Manager{m},
		&metadata.RegisterBrokerRecord{RecordVersion: metadata.RegisterBrokerRecordVersion, BrokerID: 2, BrokerEpoch: 7,
			IncarnationID: [16]byte{2}, EndPoints: []metadata.BrokerEndpoint{}, Features: []metadata.BrokerFeature{}},
		&metadata.TopicRecord{Name: "t", TopicID: topicID(1)}, part)
	if res := m.Append("t", 0, 1, plainBatch(t, 3)); res.Err != nil {
		t.Fatal(res.Err)
	}
	r, _ := m.ReadAsReplica("t", 0, ReplicaFetch{ReplicaID: 2, BrokerEpoch: 7, CurrentLeaderEpoch: -1, FetchOffset: 3, LastFetchedEpoch: -1, MaxBytes: 1 << 20})
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	p, _ := m.Hosted(log.TopicPartition{Topic: "t", Partition: 0})
	waitFor(t, "the ISR expansion to be committed", func() bool {
		_, changes := ctl.seen()
		return len(changes) == 1 && slices.Equal(p.ISR(), []int32{testNode, 2})
	})
	requests, changes := ctl.seen()
	if len(requests) != 2 {
		t.Fatalf("AlterPartition sent %d times, want 2 (one transport error, one resend)", len(requests))
	}
	for _, req := range requests {
		var got []partition.ISRMember
		for _, e := range req.Topics[0].Partitions[0].NewEpochISR {
			got = append(got, partition.ISRMember{BrokerID: e.BrokerID, BrokerEpoch: e.BrokerEpoch})
		}
		if want := []partition.ISRMember{{BrokerID: testNode, BrokerEpoch: 3}, {BrokerID: 2, BrokerEpoch: 7}}; !slices.Equal(got, want) {
			t.Fatalf("NewIsrWithEpochs = %v, want %v", got, want)
		}
	}
	if !slices.Equal(changes, []string{"expand"}) {
		t.Fatalf("ISR change hook heard %v, want [expand]", changes)
	}
}

// TestISRShrinkEffectWakesProduce: an acks=all produce waits on a follower
// that never fetches; the periodic check returns a shrink effect, and the
// commit's high watermark rise (an effect of the answer) completes the
// produce without any other event on the partition.
func TestISRShrinkEffectWakesProduce(t *testing.T) {
	m := newTestManager(t)
	defer m.Close()
	ctl := &fakeController{}
	m.StartReplication(ReplicationConfig{AlterPartition: ctl.alterPartition, OnISRChange: ctl.onISRChange,
		ReplicaLagTimeMaxMs: 20})
	feed(t, metadata.EmptyImage(), []*Manager{m}, createTopic("t", topicID(1), 1, testNode, 2)...)
	res := m.Append("t", 0, -1, plainBatch(t, 2))
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	done := make(chan error, 1)
	go func() { done <- m.WaitReplicated(context.Background(), "t", 0, res.Info.LastOffset+1) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("acks=all produce after the shrink: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("acks=all produce not answered after the lagging follower was shrunk away")
	}
	p, _ := m.Hosted(log.TopicPartition{Topic: "t", Partition: 0})
	if got := p.HighWatermark(); got != res.Info.LastOffset+1 {
		t.Fatalf("high watermark %d, want %d", got, res.Info.LastOffset+1)
	}
	if _, changes := ctl.seen(); !slices.Equal(changes, []string{"shrink"}) {
		t.Fatalf("ISR change hook heard %v, want [shrink]", changes)
	}
}
