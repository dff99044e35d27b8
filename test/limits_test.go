//go:build e2e

package test

import (
	"math"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestExcessivePartitionRequests: CreateTopics and CreatePartitions asking
// for 2,147,483,647 partitions, with and without validate_only, are refused
// with POLICY_VIOLATION before anything is allocated for them (issue 20,
// item 1: replica placement used to build every assignment first and ran the
// process out of memory). The broker's peak RSS stays small and a normal
// client is served afterwards.
func TestExcessivePartitionRequests(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	cl := newKgo(t, b)
	createTopic(t, cl, "limits-grow", 1, nil)
	rc := dialRaw(t, b)

	for _, validateOnly := range []bool{true, false} {
		ct := kmsg.NewPtrCreateTopicsRequest()
		ct.Version, ct.ValidateOnly, ct.TimeoutMillis = 7, validateOnly, 30000
		topic := kmsg.NewCreateTopicsRequestTopic()
		topic.Topic, topic.NumPartitions, topic.ReplicationFactor = "limits-huge", math.MaxInt32, 1
		ct.Topics = append(ct.Topics, topic)
		resp := rc.roundTrip(ct).(*kmsg.CreateTopicsResponse)
		if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != kerr.PolicyViolation.Code {
			t.Fatalf("CreateTopics validate_only=%v of MaxInt32 partitions: %+v", validateOnly, resp.Topics)
		}

		cp := kmsg.NewPtrCreatePartitionsRequest()
		cp.Version, cp.ValidateOnly, cp.TimeoutMillis = 3, validateOnly, 30000
		grow := kmsg.NewCreatePartitionsRequestTopic()
		grow.Topic, grow.Count = "limits-grow", math.MaxInt32
		cp.Topics = append(cp.Topics, grow)
		presp := rc.roundTrip(cp).(*kmsg.CreatePartitionsResponse)
		if len(presp.Topics) != 1 || presp.Topics[0].ErrorCode != kerr.PolicyViolation.Code {
			t.Fatalf("CreatePartitions validate_only=%v to MaxInt32 partitions: %+v", validateOnly, presp.Topics)
		}
	}

	// The peak resident size (VmHWM) covers any transient allocation; an
	// idle broker holds well under 100 MiB.
	if peak := procStatus(t, b.cmd.Process.Pid, "VmHWM"); peak > 512<<20 {
		t.Errorf("peak RSS %d MiB after the refused requests", peak>>20)
	}
	createTopic(t, cl, "limits-after", 3, nil)
	if err := cl.ProduceSync(ctxT(t, 30*time.Second), &kgo.Record{Topic: "limits-after", Value: []byte("still served")}).FirstErr(); err != nil {
		t.Fatalf("produce after the refused requests: %v", err)
	}
}
