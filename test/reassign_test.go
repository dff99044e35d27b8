//go:build e2e

package test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// TestReassignUnderLoad is issue #5's "reassignment moves a partition under
// load with nothing lost": 3 controllers, 4 brokers, an RF=3 topic with
// min.insync.replicas=2 and an idempotent acks=all producer writing
// continuously. Partition 0 is reassigned (kadm AlterPartitionAssignments,
// forwarded by a broker to the active controller) to the three brokers that
// are not its leader: one broker is added and the leader is removed. The
// test waits for ListPartitionReassignments to show nothing and the
// metadata to show the new replicas, checks the removed leader deleted its
// copy, keeps producing through the new leader, then reads everything back:
// every acknowledged record, in order, once.
func TestReassignUnderLoad(t *testing.T) {
	const topic, partitions = "moving", 2
	c := startCluster(t, 3, 4)
	adm := kadm.NewClient(c.client())
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, partitions, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")}, topic); err != nil {
		t.Fatal(err)
	}
	partition := func(p int32) (kadm.PartitionDetail, error) {
		md, err := adm.Metadata(ctx, topic)
		if err != nil {
			return kadm.PartitionDetail{}, err
		}
		pd, ok := md.Topics[topic].Partitions[p]
		if !ok || pd.Err != nil {
			return pd, fmt.Errorf("partition %d not in the metadata (%v)", p, pd.Err)
		}
		return pd, nil
	}
	c.eventually("every replica in sync", 30*time.Second, func() error {
		for p := range int32(partitions) {
			pd, err := partition(p)
			if err != nil {
				return err
			}
			if len(pd.ISR) != 3 || pd.Leader < 0 {
				return fmt.Errorf("partition %d: leader %d isr %v", p, pd.Leader, pd.ISR)
			}
		}
		return nil
	})

	load := startSeqLoad(ctx, c, topic, partitions)
	ackedCount := func() int { return load.count(-1) }
	waitAcks := func(what string, more int) {
		before := ackedCount()
		c.eventually(what, 30*time.Second, func() error {
			if n := ackedCount(); n < before+more {
				return fmt.Errorf("%d acknowledged, %d before", n, before)
			}
			return nil
		})
	}
	waitAcks("acknowledgements flowing", 2000)

	// Move partition 0 to every broker but its leader.
	old, err := partition(0)
	if err != nil {
		t.Fatal(err)
	}
	var target []int32
	for _, b := range c.brokers {
		if b.id != old.Leader {
			target = append(target, b.id)
		}
	}
	added := slices.DeleteFunc(slices.Clone(target), func(id int32) bool { return slices.Contains(old.Replicas, id) })
	t.Logf("partition 0: replicas %v leader %d -> %v (adding %v)", old.Replicas, old.Leader, target, added)
	var req kadm.AlterPartitionAssignmentsReq
	req.Assign(topic, 0, target)
	resps, err := adm.AlterPartitionAssignments(ctx, req)
	if err != nil {
		t.Fatalf("AlterPartitionAssignments: %v", err)
	}
	resps.Each(func(r kadm.AlterPartitionAssignmentsResponse) {
		if r.Err != nil {
			t.Fatalf("AlterPartitionAssignments %s-%d: %v %s", r.Topic, r.Partition, r.Err, r.ErrMessage)
		}
	})
	// The reassignment is visible while the new replica catches up (or it
	// already completed).
	listSet := kadm.TopicsSet{}
	listSet.Add(topic, 0, 1)
	c.eventually("the reassignment finished", 60*time.Second, func() error {
		ongoing, err := adm.ListPartitionReassignments(ctx, listSet)
		if err != nil {
			return err
		}
		if len(ongoing.Sorted()) > 0 {
			return fmt.Errorf("in progress: %+v", ongoing.Sorted())
		}
		pd, err := partition(0)
		if err != nil {
			return err
		}
		if !slices.Equal(pd.Replicas, target) {
			return fmt.Errorf("replicas %v, want %v", pd.Replicas, target)
		}
		if !slices.Contains(target, pd.Leader) || len(pd.ISR) != 3 {
			return fmt.Errorf("leader %d isr %v", pd.Leader, pd.ISR)
		}
		return nil
	})
	// The new replica had to catch up: the leader's ISR expansion, not the
	// request, completed the move.
	completions := 0
	for _, n := range c.controllers {
		completions += n.logCount("AlterPartition completed the partition reassignment")
	}
	if completions != 1 {
		t.Errorf("%d completions by AlterPartition logged, want 1", completions)
	}
	pd, _ := partition(0)
	t.Logf("partition 0 now: replicas %v isr %v leader %d; %d acknowledged", pd.Replicas, pd.ISR, pd.Leader, ackedCount())
	for _, b := range c.brokers {
		if b.id == old.Leader {
			dir := filepath.Join(b.dataDir, topic+"-0")
			c.eventually("the removed replica's log deleted", 30*time.Second, func() error {
				if _, err := os.Stat(dir); err == nil {
					return fmt.Errorf("%s still exists", dir)
				}
				return nil
			})
		}
	}
	// Partition 0 is still written, now through its new leader.
	before := load.count(0)
	c.eventually("partition 0 acknowledged after the move", 30*time.Second, func() error {
		if n := load.count(0); n < before+500 {
			return fmt.Errorf("%d acknowledged, %d before", n, before)
		}
		return nil
	})

	load.finish(t, ctx)
	load.verify(t, ctx, c)
}
