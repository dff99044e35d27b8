package controller

import (
	"context"
	"math"
	"runtime"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// allocatedDuring is the bytes the process allocated while fn ran (the
// runtime's cumulative TotalAlloc, which only grows).
func allocatedDuring(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestCreateTopicsExcessivePartitions: a request for more than 10,000
// partitions in all (Kafka's MAX_PARTITIONS_PER_BATCH) fails whole with
// POLICY_VIOLATION before any replica is placed, validate_only included.
// Placing 2,147,483,647 partitions first would allocate tens of gigabytes.
func TestCreateTopicsExcessivePartitions(t *testing.T) {
	n := startNode(t, metadataDir(t), testConfig())
	const msg = "Excessively large number of partitions per request."
	manual := newTopic("manual", -1, -1)
	manual.ReplicaAssignment = make([]kmsg.CreateTopicsRequestTopicReplicaAssignment, maxPartitionsPerBatch+1)
	for i := range manual.ReplicaAssignment {
		manual.ReplicaAssignment[i].Partition, manual.ReplicaAssignment[i].Replicas = int32(i), []int32{1}
	}
	for _, tc := range []struct {
		name         string
		validateOnly bool
		topics       []kmsg.CreateTopicsRequestTopic
	}{
		{"max int32", false, []kmsg.CreateTopicsRequestTopic{newTopic("huge", math.MaxInt32, 1)}},
		{"max int32 validate only", true, []kmsg.CreateTopicsRequestTopic{newTopic("huge", math.MaxInt32, 1)}},
		{"max int32 twice (no int32 wrap)", false, []kmsg.CreateTopicsRequestTopic{
			newTopic("a", math.MaxInt32, 1), newTopic("b", math.MaxInt32, 1), newTopic("c", 2, 1)}},
		{"sum over the limit", false, []kmsg.CreateTopicsRequestTopic{
			newTopic("a", 5000, 1), newTopic("b", 5000, 1), newTopic("c", -1, 1)}},
		{"manual assignments", false, []kmsg.CreateTopicsRequestTopic{manual}},
	} {
		var resp *kmsg.CreateTopicsResponse
		allocated := allocatedDuring(func() { resp = n.createTopics(tc.validateOnly, tc.topics...) })
		if len(resp.Topics) != len(tc.topics) {
			t.Fatalf("%s: %d answers", tc.name, len(resp.Topics))
		}
		for _, rt := range resp.Topics {
			wantErr(t, tc.name+" "+rt.Topic, rt.ErrorCode, rt.ErrorMessage, kerr.PolicyViolation, msg)
			if n.c.Image().Topics.Topic(rt.Topic) != nil {
				t.Fatalf("%s: %s created", tc.name, rt.Topic)
			}
		}
		if allocated > 64<<20 {
			t.Errorf("%s: %d bytes allocated refusing it", tc.name, allocated)
		}
	}
	// Under both limits the request is placed and validated: 9,998
	// partitions and two TopicRecords are 10,000 records.
	resp := n.createTopics(true, newTopic("a", 5000, 1), newTopic("b", 4998, 1))
	for _, rt := range resp.Topics {
		wantErr(t, "at the limit "+rt.Topic, rt.ErrorCode, rt.ErrorMessage, nil, "<nil>")
	}
}

// TestCreatePartitionsExcessivePartitions: growing topics by more than
// 10,000 partitions in one request fails every topic with Kafka's
// POLICY_VIOLATION before any replica is placed, validate_only included.
func TestCreatePartitionsExcessivePartitions(t *testing.T) {
	n := startNode(t, metadataDir(t), testConfig())
	n.mustCreate(newTopic("a", 1, 1), newTopic("b", 1, 1))
	for _, tc := range []struct {
		name         string
		validateOnly bool
		topics       []kmsg.CreatePartitionsRequestTopic
	}{
		{"max int32", false, []kmsg.CreatePartitionsRequestTopic{newPartitions("a", math.MaxInt32)}},
		{"max int32 validate only", true, []kmsg.CreatePartitionsRequestTopic{newPartitions("a", math.MaxInt32)}},
		{"sum over the limit", false, []kmsg.CreatePartitionsRequestTopic{newPartitions("a", 5001), newPartitions("b", 5002)}},
	} {
		req := kmsg.NewPtrCreatePartitionsRequest()
		req.Topics, req.ValidateOnly = tc.topics, tc.validateOnly
		var resp *kmsg.CreatePartitionsResponse
		allocated := allocatedDuring(func() { resp = n.c.CreatePartitions(context.Background(), req) })
		if len(resp.Topics) != len(tc.topics) {
			t.Fatalf("%s: %d answers", tc.name, len(resp.Topics))
		}
		for _, rt := range resp.Topics {
			wantErr(t, tc.name+" "+rt.Topic, rt.ErrorCode, rt.ErrorMessage, kerr.PolicyViolation, excessiveBatchMessage)
		}
		if allocated > 64<<20 {
			t.Errorf("%s: %d bytes allocated refusing it", tc.name, allocated)
		}
	}
	img := n.c.Image()
	if img.Topics.Topic("a").NumPartitions() != 1 || img.Topics.Topic("b").NumPartitions() != 1 {
		t.Fatal("partitions were added")
	}
	req := kmsg.NewPtrCreatePartitionsRequest()
	req.Topics = []kmsg.CreatePartitionsRequestTopic{newPartitions("a", 5001), newPartitions("b", 5000)}
	req.ValidateOnly = true
	for _, rt := range n.c.CreatePartitions(context.Background(), req).Topics {
		wantErr(t, "at the limit "+rt.Topic, rt.ErrorCode, rt.ErrorMessage, nil, "<nil>")
	}
}
