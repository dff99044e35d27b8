package replica

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"gregor/internal/metadata"
	"gregor/internal/record"
)

func plainBatch(t *testing.T, n int) []byte {
	t.Helper()
	b := record.NewBuilder(record.BuilderOptions{ProducerID: record.NoProducerID, ProducerEpoch: record.NoProducerEpoch, BaseSequence: record.NoSequence})
	for range n {
		b.Append(time.Now().UnixMilli(), nil, []byte("v"), nil)
	}
	batch, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return batch
}

// waitSize polls until a purgatory holds n operations.
func waitSize(t *testing.T, m *Manager, name string, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for m.PurgatorySizes()[name] != n {
		if time.Now().After(deadline) {
			t.Fatalf("%s purgatory holds %d, want %d", name, m.PurgatorySizes()[name], n)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestFetchWaitsOnlyForItsPartitions: a fetch parked on one partition stays
// parked while another partition takes appends, and completes on the first
// append to its own (the broadcast it replaces woke every waiting fetch on
// every append).
func TestFetchWaitsOnlyForItsPartitions(t *testing.T) {
	m := newTestManager(t)
	defer m.Close()
	feed(t, metadata.EmptyImage(), []*Manager{m}, createTopic("t", topicID(1), 2, testNode)...)
	watches := []FetchWatch{{Topic: "t", Partition: 0}}
	seen := m.FetchPositions(watches)
	done := make(chan error, 1)
	go func() { done <- m.WaitFetchable(context.Background(), watches, seen) }()
	waitSize(t, m, PurgatoryFetch, 1)
	for range 200 {
		if res := m.Append("t", 1, 1, plainBatch(t, 1)); res.Err != nil {
			t.Fatal(res.Err)
		}
	}
	// A wake-up completes on the appender's goroutine; give the waiter a
	// moment to report it (this can only miss a bug, never invent one).
	select {
	case err := <-done:
		t.Fatalf("fetch on t-0 woke (%v) after appends to t-1", err)
	case <-time.After(50 * time.Millisecond):
	}
	if res := m.Append("t", 0, 1, plainBatch(t, 1)); res.Err != nil {
		t.Fatal(res.Err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("fetch on t-0 not woken by an append to t-0")
	}
	waitSize(t, m, PurgatoryFetch, 0)
}

// TestFetchWakesOnLeaderChange: a parked fetch completes when its
// partition's leadership moves, so the consumer learns of it at once.
func TestFetchWakesOnLeaderChange(t *testing.T) {
	m := newTestManager(t)
	defer m.Close()
	img := feed(t, metadata.EmptyImage(), []*Manager{m}, createTopic("t", topicID(1), 1, testNode, 2)...)
	watches := []FetchWatch{{Topic: "t", Partition: 0}}
	done := make(chan error, 1)
	go func() { done <- m.WaitFetchable(context.Background(), watches, m.FetchPositions(watches)) }()
	waitSize(t, m, PurgatoryFetch, 1)
	feed(t, img, []*Manager{m}, &metadata.PartitionChangeRecord{PartitionID: 0, TopicID: topicID(1), Leader: 2, ISR: []int32{2}})
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("fetch not woken by the leader change")
	}
}

// TestWaitReplicatedByFollowerFetch: an acks=all wait completes when the
// follower's fetch moves the high watermark past it, answers
// NOT_LEADER_OR_FOLLOWER when leadership moves first, REQUEST_TIMED_OUT at
// its deadline, and NOT_LEADER_OR_FOLLOWER when the broker closes.
func TestWaitReplicatedByFollowerFetch(t *testing.T) {
	m := newTestManager(t)
	defer m.Close()
	img := feed(t, metadata.EmptyImage(), []*Manager{m}, createTopic("t", topicID(1), 1, testNode, 2)...)
	res := m.Append("t", 0, -1, plainBatch(t, 3))
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	done := make(chan error, 1)
	go func() { done <- m.WaitReplicated(context.Background(), "t", 0, res.Info.LastOffset+1) }()
	waitSize(t, m, PurgatoryProduce, 1)
	if r, _ := m.ReadAsReplica("t", 0, ReplicaFetch{ReplicaID: 2, BrokerEpoch: -1, CurrentLeaderEpoch: -1, FetchOffset: 2, LastFetchedEpoch: -1, MaxBytes: 1 << 20}); r.Err != nil {
		t.Fatal(r.Err)
	}
	select {
	case err := <-done:
		t.Fatalf("answered (%v) with the follower at 2 of 3", err)
	case <-time.After(50 * time.Millisecond):
	}
	if r, _ := m.ReadAsReplica("t", 0, ReplicaFetch{ReplicaID: 2, BrokerEpoch: -1, CurrentLeaderEpoch: -1, FetchOffset: 3, LastFetchedEpoch: -1, MaxBytes: 1 << 20}); r.Err != nil {
		t.Fatal(r.Err)
	}
	if err := <-done; err != nil {
		t.Fatalf("after the follower fetched: %v", err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	res = m.Append("t", 0, -1, plainBatch(t, 1))
	if err := m.WaitReplicated(ctx, "t", 0, res.Info.LastOffset+1); !errors.Is(err, kerr.RequestTimedOut) {
		t.Fatalf("at the deadline: %v, want REQUEST_TIMED_OUT", err)
	}

	go func() { done <- m.WaitCommitted(context.Background(), "t", 0, res.Info.LastOffset+1) }()
	waitSize(t, m, PurgatoryCoordinatorWrite, 1)
	feed(t, img, []*Manager{m}, &metadata.PartitionChangeRecord{PartitionID: 0, TopicID: topicID(1), Leader: 2, ISR: []int32{2}})
	if err := <-done; !errors.Is(err, kerr.NotLeaderForPartition) {
		t.Fatalf("after leadership moved: %v, want NOT_LEADER_OR_FOLLOWER", err)
	}
}

// TestCloseReleasesWaiters: shutdown answers every parked request.
func TestCloseReleasesWaiters(t *testing.T) {
	m := newTestManager(t)
	feed(t, metadata.EmptyImage(), []*Manager{m}, createTopic("t", topicID(1), 1, testNode, 2)...)
	res := m.Append("t", 0, -1, plainBatch(t, 1))
	produce := make(chan error, 1)
	fetch := make(chan error, 1)
	go func() { produce <- m.WaitReplicated(context.Background(), "t", 0, res.Info.LastOffset+1) }()
	watches := []FetchWatch{{Topic: "t", Partition: 0}}
	go func() { fetch <- m.WaitFetchable(context.Background(), watches, m.FetchPositions(watches)) }()
	waitSize(t, m, PurgatoryProduce, 1)
	waitSize(t, m, PurgatoryFetch, 1)
	m.Close()
	if err := <-produce; !errors.Is(err, kerr.NotLeaderForPartition) {
		t.Fatalf("produce at shutdown: %v", err)
	}
	if err := <-fetch; err == nil {
		t.Fatal("fetch at shutdown: no error")
	}
}
