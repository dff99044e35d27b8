package controller

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/metadata"
)

// splitPartition splits "topic-N" at its last dash.
func splitPartition(t *testing.T, s string) (string, int32) {
	i := strings.LastIndexByte(s, '-')
	if i < 0 {
		t.Fatalf("%q: want topic-partition", s)
	}
	n, err := strconv.Atoi(s[i+1:])
	if err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return s[:i], int32(n)
}

func (h *harness) reassign(t *testing.T, d *datadriven.TestData) string {
	req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	d.MaybeScanArgs(t, "version", &req.Version)
	d.MaybeScanArgs(t, "allow-rf-change", &req.AllowReplicationFactorChange)
	for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
		if line == "" {
			continue
		}
		f := strings.Fields(line)
		topic, partition := splitPartition(t, f[0])
		rp := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
		rp.Partition = partition
		switch f[1] {
		case "cancel":
			rp.Replicas = nil
		case "empty":
			rp.Replicas = []int32{}
		default:
			for _, v := range strings.Split(f[1], ",") {
				n, err := strconv.Atoi(v)
				if err != nil {
					t.Fatalf("%q: %v", line, err)
				}
				rp.Replicas = append(rp.Replicas, int32(n))
			}
		}
		if n := len(req.Topics); n > 0 && req.Topics[n-1].Topic == topic {
			req.Topics[n-1].Partitions = append(req.Topics[n-1].Partitions, rp)
			continue
		}
		rt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
		rt.Topic, rt.Partitions = topic, []kmsg.AlterPartitionAssignmentsRequestTopicPartition{rp}
		req.Topics = append(req.Topics, rt)
	}
	resp := h.c.AlterPartitionReassignments(context.Background(), req)
	var b strings.Builder
	if resp.ErrorCode != 0 {
		fmt.Fprintf(&b, "error %s\n", errName(resp.ErrorCode))
	}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			fmt.Fprintf(&b, "%s-%d %s %s\n", rt.Topic, rp.Partition, errName(rp.ErrorCode), deref(rp.ErrorMessage))
		}
	}
	return b.String()
}

func (h *harness) listReassignments(t *testing.T, d *datadriven.TestData) string {
	req := kmsg.NewPtrListPartitionReassignmentsRequest()
	if arg, ok := d.Arg("partitions"); ok {
		req.Topics = []kmsg.ListPartitionReassignmentsRequestTopic{}
		for _, v := range arg.Vals {
			if v == "none" {
				continue
			}
			topic, p := splitPartition(t, v)
			if n := len(req.Topics); n > 0 && req.Topics[n-1].Topic == topic {
				req.Topics[n-1].Partitions = append(req.Topics[n-1].Partitions, p)
				continue
			}
			rt := kmsg.NewListPartitionReassignmentsRequestTopic()
			rt.Topic, rt.Partitions = topic, []int32{p}
			req.Topics = append(req.Topics, rt)
		}
	}
	resp := h.c.ListPartitionReassignments(context.Background(), req)
	var b strings.Builder
	if resp.ErrorCode != 0 {
		fmt.Fprintf(&b, "error %s\n", errName(resp.ErrorCode))
	}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			fmt.Fprintf(&b, "%s-%d replicas=%s adding=%s removing=%s\n", rt.Topic, rp.Partition,
				ints(rp.Replicas), ints(rp.AddingReplicas), ints(rp.RemovingReplicas))
		}
	}
	if b.Len() == 0 {
		return "(none)\n"
	}
	return b.String()
}

func TestNewReassignmentReplicas(t *testing.T) {
	for _, tc := range []struct {
		current, target          []int32
		replicas, adding, remove []int32
	}{
		// The target first, then the removed replicas in id order.
		{[]int32{3, 1, 2}, []int32{4, 1, 2}, []int32{4, 1, 2, 3}, []int32{4}, []int32{3}},
		{[]int32{1, 2, 3}, []int32{6, 5, 4}, []int32{6, 5, 4, 1, 2, 3}, []int32{4, 5, 6}, []int32{1, 2, 3}},
		{[]int32{3, 2, 1}, []int32{1, 2, 3}, []int32{1, 2, 3}, []int32{}, []int32{}},
		{[]int32{5, 2, 9}, []int32{2}, []int32{2, 5, 9}, []int32{}, []int32{5, 9}},
		{[]int32{1}, []int32{1, 2}, []int32{1, 2}, []int32{2}, []int32{}},
	} {
		r := newReassignmentReplicas(tc.current, tc.target)
		if !slices.Equal(r.replicas, tc.replicas) || !slices.Equal(r.adding, tc.adding) || !slices.Equal(r.removing, tc.remove) {
			t.Errorf("%v -> %v: replicas=%v adding=%v removing=%v, want %v %v %v",
				tc.current, tc.target, r.replicas, r.adding, r.removing, tc.replicas, tc.adding, tc.remove)
		}
		if r.adding == nil || r.removing == nil {
			t.Errorf("%v -> %v: nil adding/removing would mean \"unchanged\" in a record", tc.current, tc.target)
		}
	}
}

func TestCompleteReassignment(t *testing.T) {
	for _, tc := range []struct {
		name                  string
		isr, replicas         []int32
		adding, removing      []int32
		wantISR, wantReplicas []int32
		wantComplete          bool
	}{
		{"target replica missing from the ISR", []int32{1, 2}, []int32{1, 2, 4, 3}, []int32{4}, []int32{3}, nil, nil, false},
		{"all target replicas in sync", []int32{3, 1, 2, 4}, []int32{1, 2, 4, 3}, []int32{4}, []int32{3}, []int32{1, 2, 4}, []int32{1, 2, 4}, true},
		{"only removing", []int32{1, 2, 3}, []int32{1, 2, 3}, nil, []int32{3}, []int32{1, 2}, []int32{1, 2}, true},
		{"the ISR would be empty", []int32{3}, []int32{1, 3}, []int32{1}, []int32{3}, nil, nil, false},
		{"only adding, in sync", []int32{1, 2}, []int32{1, 2}, []int32{2}, nil, []int32{1, 2}, []int32{1, 2}, true},
		{"nothing in progress", []int32{1}, []int32{1, 2}, nil, nil, nil, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &partitionChange{
				current:        &metadata.Partition{Replicas: tc.replicas, ISR: tc.isr},
				targetISR:      slices.Clone(tc.isr),
				targetReplicas: slices.Clone(tc.replicas),
				targetAdding:   nonNil(tc.adding),
				targetRemoving: nonNil(tc.removing),
			}
			b.completeReassignment()
			done := len(b.targetAdding) == 0 && len(b.targetRemoving) == 0 && (len(tc.adding) > 0 || len(tc.removing) > 0)
			if done != tc.wantComplete {
				t.Fatalf("completed=%v, want %v", done, tc.wantComplete)
			}
			if !done {
				if !slices.Equal(b.targetISR, tc.isr) || !slices.Equal(b.targetReplicas, tc.replicas) {
					t.Fatalf("not completed but changed: isr=%v replicas=%v", b.targetISR, b.targetReplicas)
				}
				return
			}
			if !slices.Equal(b.targetISR, tc.wantISR) || !slices.Equal(b.targetReplicas, tc.wantReplicas) {
				t.Fatalf("isr=%v replicas=%v, want %v %v", b.targetISR, b.targetReplicas, tc.wantISR, tc.wantReplicas)
			}
		})
	}
}
