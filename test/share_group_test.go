//go:build e2e

package test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestShareGroupLeaderKill: a share group (KIP-932) reads a partition
// replicated on 3 brokers with franz-go's share consumer, accepting every
// record; half way through, the partition's leader is killed (-9). Every
// record is delivered (at least once, the share group guarantee), and no
// record whose acceptance the broker acknowledged is delivered again: the
// acknowledged state was in __share_group_state, committed, before the
// broker answered, and the new leader resumed from it.
func TestShareGroupLeaderKill(t *testing.T) {
	c := startCluster(t, 1, 3)
	const topic, group, total = "jobs", "workers", 400
	adm := kadm.NewClient(c.client())
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c.eventually("create "+topic, 30*time.Second, func() error {
		_, err := adm.CreateTopic(ctx, 1, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")}, topic)
		return err
	})
	// The group reads from the start.
	c.eventually("share.auto.offset.reset=earliest", 30*time.Second, func() error {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		res := kmsg.NewIncrementalAlterConfigsRequestResource()
		res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
		cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		cfg.Name, cfg.Value = "share.auto.offset.reset", kmsg.StringPtr("earliest")
		res.Configs = append(res.Configs, cfg)
		req.Resources = append(req.Resources, res)
		resp, err := req.RequestWith(ctx, c.client())
		if err != nil {
			return err
		}
		return kerr.ErrorForCode(resp.Resources[0].ErrorCode)
	})
	produceSome(t, c.client(), topic, total)
	var mu sync.Mutex
	ackFailed := false
	cl := c.client(kgo.ConsumeTopics(topic), kgo.ShareGroup(group), kgo.ShareMaxRecords(20),
		kgo.ShareAckCallback(func(_ *kgo.Client, rs kgo.ShareAckResults) {
			if !rs.Ok() {
				mu.Lock()
				ackFailed = true
				mu.Unlock()
			}
		}))
	delivered := map[int]int{}     // record (its key) -> deliveries
	acknowledged := map[int]bool{} // records whose acceptance the broker acknowledged
	redelivered := 0
	killed := false
	var held []int // records held, not acknowledged, when the leader died
	// heldAgain: every held record was delivered again.
	heldAgain := func() bool {
		for _, k := range held {
			if delivered[k] < 2 {
				return false
			}
		}
		return true
	}
	for len(delivered) < total || !heldAgain() {
		if ctx.Err() != nil {
			t.Fatalf("%d of %d records delivered before the deadline (held when the leader died: %v, delivered again: %v)", len(delivered), total, held, heldAgain())
		}
		pctx, pcancel := context.WithTimeout(ctx, 5*time.Second)
		fs := cl.PollFetches(pctx)
		pcancel()
		var polled []int
		fs.EachRecord(func(r *kgo.Record) {
			k, err := strconv.Atoi(string(r.Key))
			if err != nil {
				t.Fatalf("record key %q", r.Key)
			}
			if acknowledged[k] {
				t.Errorf("record %d delivered again after its acceptance was acknowledged", k)
			}
			if delivered[k] > 0 {
				redelivered++
			}
			delivered[k]++
			polled = append(polled, k)
		})
		if len(polled) == 0 {
			continue
		}
		mu.Lock()
		ackFailed = false
		mu.Unlock()
		cl.MarkAcks(kgo.AckAccept)
		fctx, fcancel := context.WithTimeout(ctx, 30*time.Second)
		err := cl.FlushAcks(fctx)
		fcancel()
		mu.Lock()
		ok := err == nil && !ackFailed
		mu.Unlock()
		if ok {
			for _, k := range polled {
				acknowledged[k] = true
			}
		}
		if !killed && len(acknowledged) >= total/2 {
			// Hold a batch the leader handed out, unacknowledged, as it
			// dies: the new leader must deliver those records again.
			for len(held) == 0 && ctx.Err() == nil {
				pctx, pcancel := context.WithTimeout(ctx, 5*time.Second)
				cl.PollFetches(pctx).EachRecord(func(r *kgo.Record) {
					k, _ := strconv.Atoi(string(r.Key))
					delivered[k]++
					held = append(held, k)
				})
				pcancel()
			}
			leaders, err := c.partitionLeaders(c.brokers[0].addr(), topic)
			if err != nil {
				t.Fatal(err)
			}
			for _, b := range c.brokers {
				if b.id == leaders[0] {
					b.kill9()
				}
			}
			killed = true
		}
	}
	if !killed {
		t.Fatal("the leader was never killed")
	}
	t.Logf("%d records delivered, %d acknowledged; %d held when the leader died, %d deliveries were repeats",
		len(delivered), len(acknowledged), len(held), redelivered)
	// Every record accepted: DescribeShareGroupOffsets v1 answers the
	// start offset at the end and no lag (KIP-1226; the end offset asked
	// of the partition's leader, which need not be the coordinator).
	c.eventually("start offset at the end, lag 0", 60*time.Second, func() error {
		d, err := adm.DescribeShareGroupOffsets(ctx, group)
		if err == nil {
			err = d.Error()
		}
		if err != nil {
			return err
		}
		o, ok := d[group].Offsets[topic][0]
		if !ok || o.Err != nil || o.StartOffset != total || o.Lag != 0 {
			return fmt.Errorf("partition 0: %+v", o)
		}
		return nil
	})
}
