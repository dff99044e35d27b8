package server

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// migrationProps are groupProps with a short KIP-848 heartbeat interval, so
// that consumer-protocol members learn of new assignments quickly.
var migrationProps = map[string]string{
	"group.initial.rebalance.delay.ms":         "0",
	"offsets.topic.num.partitions":             "5",
	"group.consumer.heartbeat.interval.ms":     "300",
	"group.consumer.min.heartbeat.interval.ms": "300",
}

// joinCounter counts the JoinGroup requests a client sends: a member stuck
// in an error loop rejoins without end.
type joinCounter struct{ joins atomic.Int64 }

func (c *joinCounter) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, _ error) {
	if key == 11 {
		c.joins.Add(1)
	}
}

// steadyProducer produces a few records every few milliseconds until
// stopped, and counts those acknowledged.
type steadyProducer struct {
	cancel context.CancelFunc
	done   chan struct{}
	acked  atomic.Int64
}

func startSteadyProducer(t *testing.T, cl *kgo.Client, topic string) *steadyProducer {
	ctx, cancel := context.WithCancel(context.Background())
	p := &steadyProducer{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			var recs []*kgo.Record
			for j := 0; j < 5; j++ {
				recs = append(recs, &kgo.Record{Topic: topic, Value: []byte(fmt.Sprint(i*5 + j))})
			}
			// Produced without the loop's context: a batch in flight when
			// the producer stops is still waited for and counted.
			if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
				t.Errorf("produce: %v", err)
				return
			}
			p.acked.Add(int64(len(recs)))
		}
	}()
	return p
}

// stop ends the production and returns how many records were acknowledged.
func (p *steadyProducer) stop() int {
	p.cancel()
	<-p.done
	return int(p.acked.Load())
}

// groupType is the group's type as ListGroups v5 reports it ("" if absent).
func groupType(t *testing.T, cl *kgo.Client, group string) string {
	t.Helper()
	req := kmsg.NewPtrListGroupsRequest()
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		return ""
	}
	for _, g := range resp.Groups {
		if g.Group == group {
			return g.GroupType
		}
	}
	return ""
}

// assignedCounts is how many partitions each member of a classic group
// owns, by DescribeGroups; nil unless the group is Stable.
func classicAssigned(adm *kadm.Client, group string) []int {
	dg, err := adm.DescribeGroups(context.Background(), group)
	if err != nil || dg[group].Err != nil || dg[group].State != "Stable" {
		return nil
	}
	var out []int
	for _, m := range dg[group].Members {
		ca, ok := m.Assigned.AsConsumer()
		if !ok {
			return nil
		}
		n := 0
		for _, tp := range ca.Topics {
			n += len(tp.Partitions)
		}
		out = append(out, n)
	}
	return out
}

func allEqual(ns []int, n, want int) bool {
	if len(ns) != n {
		return false
	}
	for _, x := range ns {
		if x != want {
			return false
		}
	}
	return true
}

// TestGroupMigrationOnline runs Kafka 4.0's online migration with franz-go
// under steady production: two classic members (cooperative-sticky)
// consume a 6-partition topic; a KIP-848 member joins, which upgrades the
// group to a consumer group with two classic members (ListGroups type
// "consumer", ConsumerGroupDescribe shows the member types); the KIP-848
// member leaves first, which downgrades it back to a classic group; then
// the classic members leave. Every record is consumed, the commits reach
// the end of the topic, and no member rejoins without end.
func TestGroupMigrationOnline(t *testing.T) {
	ts := startServer(t, t.TempDir(), migrationProps)
	adm := ts.admin()
	ctx := context.Background()
	const topic, group = "tmig", "gmig"
	if _, err := adm.CreateTopic(ctx, 6, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	raw := ts.client()
	defer raw.Close()
	prod := ts.client()
	defer prod.Close()
	producer := startSteadyProducer(t, prod, topic)
	seen := &seenSet{seen: map[string]int{}}

	var counters [3]joinCounter
	classic := func(i int) []kgo.Opt {
		return []kgo.Opt{kgo.Balancers(kgo.CooperativeStickyBalancer()), kgo.WithHooks(&counters[i])}
	}
	c1 := startConsumer(t, ts, group, topic, seen, classic(0)...)
	c2 := startConsumer(t, ts, group, topic, seen, classic(1)...)
	waitFor(t, "a classic group of 2", 20*time.Second, func() bool {
		return allEqual(classicAssigned(adm, group), 2, 3) && groupType(t, raw, group) == "classic"
	})

	c3 := startConsumer(t, ts, group, topic, seen,
		kgo.ServerSideBalancer(), kgo.Balancers(kgo.RangeBalancer()), kgo.WithHooks(&counters[2]))
	waitFor(t, "the upgraded mixed group", 30*time.Second, func() bool {
		g := describe848(t, raw, group)
		if g.ErrorCode != 0 || g.State != "Stable" || len(g.Members) != 3 {
			return false
		}
		types := map[int8]int{}
		for _, m := range g.Members {
			n := 0
			for _, tp := range m.Assignment.TopicPartitions {
				n += len(tp.Partitions)
			}
			if n != 2 || m.MemberEpoch != g.Epoch {
				return false
			}
			types[m.MemberType]++
		}
		return types[0] == 2 && types[1] == 1 && groupType(t, raw, group) == "consumer"
	})
	if lg, err := adm.ListGroups(ctx); err != nil || lg[group].ProtocolType != "consumer" {
		t.Fatalf("ListGroups = %+v, %v", lg, err)
	}

	// The last consumer-protocol member leaves: the group is classic again.
	c3.stop()
	waitFor(t, "the downgraded classic group", 30*time.Second, func() bool {
		return groupType(t, raw, group) == "classic" && allEqual(classicAssigned(adm, group), 2, 3)
	})
	if g := describe848(t, raw, group); g.ErrorCode == 0 {
		t.Fatalf("ConsumerGroupDescribe of the classic group: %+v", g)
	}

	c1.stop()
	waitFor(t, "one classic member left", 30*time.Second, func() bool {
		return allEqual(classicAssigned(adm, group), 1, 6)
	})
	total := producer.stop()
	waitFor(t, "every record consumed", 30*time.Second, func() bool { return seen.count() == total })
	c2.stop()

	offs, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	offs.Each(func(o kadm.OffsetResponse) { sum += o.At })
	if sum != int64(total) {
		t.Errorf("committed offsets sum to %d, want %d (records produced)", sum, total)
	}
	for i := range counters {
		if n := counters[i].joins.Load(); n > 40 {
			t.Errorf("member %d sent %d JoinGroup requests: a rejoin loop", i, n)
		}
	}
	seen.mu.Lock()
	t.Logf("%d records, %d processed twice, joins %d/%d/%d", total, len(seen.dups), counters[0].joins.Load(), counters[1].joins.Load(), counters[2].joins.Load())
	seen.mu.Unlock()
}

// TestGroupMigrationPolicyDisabled checks group.consumer.migration.policy
// reaches the coordinator: with it disabled, a KIP-848 member cannot join
// a classic group with members (GROUP_ID_NOT_FOUND).
func TestGroupMigrationPolicyDisabled(t *testing.T) {
	props := map[string]string{"group.consumer.migration.policy": "DISABLED"}
	for k, v := range migrationProps {
		props[k] = v
	}
	ts := startServer(t, t.TempDir(), props)
	adm := ts.admin()
	if _, err := adm.CreateTopic(context.Background(), 2, 1, nil, "tpol"); err != nil {
		t.Fatal(err)
	}
	raw := ts.client()
	defer raw.Close()
	seen := &seenSet{seen: map[string]int{}}
	c := startConsumer(t, ts, "gpol", "tpol", seen, kgo.Balancers(kgo.CooperativeStickyBalancer()))
	defer c.stop()
	waitFor(t, "a classic group", 20*time.Second, func() bool { return allEqual(classicAssigned(adm, "gpol"), 1, 2) })

	var once sync.Once
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Group, req.MemberID, req.MemberEpoch, req.RebalanceTimeoutMillis = "gpol", "m848", 0, 10000
	req.SubscribedTopicNames, req.Topics = []string{"tpol"}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	var code int16
	waitFor(t, "a ConsumerGroupHeartbeat answer", 10*time.Second, func() bool {
		resp, err := req.RequestWith(context.Background(), raw)
		if err != nil {
			once.Do(func() { t.Logf("ConsumerGroupHeartbeat: %v", err) })
			return false
		}
		code = resp.ErrorCode
		return true
	})
	if code != 69 { // GROUP_ID_NOT_FOUND
		t.Fatalf("ConsumerGroupHeartbeat to a classic group with the policy disabled: code %d, want 69", code)
	}
}
