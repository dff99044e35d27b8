package replica

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"gregor/internal/log"
	"gregor/internal/metadata"
)

// parkCounting parks an operation on one partition in every purgatory that
// never completes and counts its tries; it returns the count once the
// operations are parked and tried twice each (once before parking, once
// after), and stops them at the test's end.
func parkCounting(t *testing.T, m *Manager, tp log.TopicPartition) *atomic.Int64 {
	t.Helper()
	var tries atomic.Int64
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	pgs := m.delayed.all()
	for _, pg := range pgs {
		go func() {
			defer func() { done <- struct{}{} }()
			_ = pg.Wait(ctx, []log.TopicPartition{tp}, func() bool { tries.Add(1); return false })
		}()
	}
	t.Cleanup(func() {
		cancel()
		for range pgs {
			<-done
		}
	})
	want := int64(2 * len(pgs))
	deadline := time.Now().Add(10 * time.Second)
	for tries.Load() != want || m.delayed.fetch.Size() != 1 || m.delayed.produce.Size() != 1 || m.delayed.commit.Size() != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("parked operations tried %d times, want %d", tries.Load(), want)
		}
		time.Sleep(time.Millisecond)
	}
	return &tries
}

// TestMetadataChangeWakesOnlyItsPartitions: requests waiting on partition
// a-0 are not tried again by metadata changes that leave a-0 alone (a
// leader change, ISR change, config change, creation and deletion of other
// topics, a broker config no topic reads), and are tried again by each
// change that touches a-0, a broker default that a-0's config inherits
// included. Publish tries waiters on the caller's goroutine, so the counts
// are final when it returns.
func TestMetadataChangeWakesOnlyItsPartitions(t *testing.T) {
	m := newTestManager(t)
	defer m.Close()
	img := feed(t, metadata.EmptyImage(), []*Manager{m}, append(createTopic("a", topicID(1), 2, testNode, 2),
		createTopic("b", topicID(2), 3, testNode, 2)...)...)
	tries := parkCounting(t, m, log.TopicPartition{Topic: "a", Partition: 0})
	perWake := int64(len(m.delayed.all()))
	value := func(s string) *string { return &s }
	step := func(what string, woken bool, recs ...metadata.Record) {
		t.Helper()
		before := tries.Load()
		img = feed(t, img, []*Manager{m}, recs...)
		switch got := tries.Load() - before; {
		case woken && got != perWake:
			t.Fatalf("%s: waiters on a-0 tried %d times, want %d", what, got, perWake)
		case !woken && got != 0:
			t.Fatalf("%s: waiters on a-0 tried %d times, want none", what, got)
		}
	}
	leaderTo := func(id [16]byte, p, leader int32) *metadata.PartitionChangeRecord {
		r := metadata.NewPartitionChangeRecord(id, p)
		r.Leader = leader
		return r
	}
	isr := metadata.NewPartitionChangeRecord(topicID(2), 1)
	isr.ISR = []int32{testNode}

	step("leader change of b-0", false, leaderTo(topicID(2), 0, 2))
	step("ISR change of b-1", false, isr)
	step("leader change of a-1", false, leaderTo(topicID(1), 1, 2))
	step("config of b", false, &metadata.ConfigRecord{ResourceType: metadata.ConfigResourceTopic, ResourceName: "b", Name: "retention.ms", Value: value("1000")})
	step("topic c created", false, createTopic("c", topicID(3), 4, testNode)...)
	step("topic b deleted", false, &metadata.RemoveTopicRecord{TopicID: topicID(2)})
	step("broker config no topic reads", false, &metadata.ConfigRecord{ResourceType: metadata.ConfigResourceBroker, ResourceName: "", Name: "num.io.threads", Value: value("4")})
	step("broker config of another broker", false, &metadata.ConfigRecord{ResourceType: metadata.ConfigResourceBroker, ResourceName: "2", Name: "log.retention.ms", Value: value("5000")})

	step("leader change of a-0", true, leaderTo(topicID(1), 0, 2))
	step("config of a", true, &metadata.ConfigRecord{ResourceType: metadata.ConfigResourceTopic, ResourceName: "a", Name: "segment.ms", Value: value("60000")})
	step("broker default a inherits", true, &metadata.ConfigRecord{ResourceType: metadata.ConfigResourceBroker, ResourceName: "", Name: "log.retention.ms", Value: value("7000")})
	if got := m.HostedPartitions()[log.TopicPartition{Topic: "a", Partition: 0}].Config().RetentionMs; got != 7000 {
		t.Fatalf("a-0 retention.ms %d after the broker default changed, want 7000", got)
	}
	if got := m.HostedPartitions()[log.TopicPartition{Topic: "c", Partition: 0}].Config().RetentionMs; got != 7000 {
		t.Fatalf("c-0 retention.ms %d after the broker default changed, want 7000", got)
	}
	step("topic a deleted", true, &metadata.RemoveTopicRecord{TopicID: topicID(1)})
}

// TestRunParallelRunsEachOnce: every func runs exactly once, whatever the
// number of workers next to the number of funcs.
func TestRunParallelRunsEachOnce(t *testing.T) {
	for _, tc := range []struct{ funcs, workers int }{{0, 8}, {1, 8}, {5, 1}, {5, 8}, {1000, 8}} {
		runs := make([]atomic.Int32, tc.funcs)
		work := make([]func(), tc.funcs)
		for i := range work {
			work[i] = func() { runs[i].Add(1) }
		}
		runParallel(work, tc.workers)
		for i := range runs {
			if n := runs[i].Load(); n != 1 {
				t.Fatalf("%d funcs on %d workers: func %d ran %d times", tc.funcs, tc.workers, i, n)
			}
		}
	}
}
