//go:build e2e

package test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestReplicationLeaderKills is the ducktape analogue of issue #5: 3
// brokers, RF=3, min.insync.replicas=2; an idempotent acks=all producer
// writes without pause while the test kills -9 a partition leader 20 times
// (GREGOR_LEADER_KILLS overrides), then the active controller. At the end
// a consumer reads every partition: every acknowledged record is there, in
// order, with no duplicates.
func TestReplicationLeaderKills(t *testing.T) {
	replicationLeaderKills(t, startCluster(t, 3, 3, "broker.session.timeout.ms=1500"), leaderKills(20))
}

// leaderKills is how many leaders replicationLeaderKills kills: def, or
// GREGOR_LEADER_KILLS.
func leaderKills(def int) int {
	if v, err := strconv.Atoi(os.Getenv("GREGOR_LEADER_KILLS")); err == nil && v > 0 {
		return v
	}
	return def
}

// replicationLeaderKills is TestReplicationLeaderKills on c, 3 controllers
// and 3 brokers (with a short broker session), killing kills leaders.
func replicationLeaderKills(t *testing.T, c *cluster, kills int) {
	const topic, partitions = "chaos", 3
	adm := kadm.NewClient(c.client())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, partitions, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")}, topic); err != nil {
		t.Fatal(err)
	}
	fullISR := func() error {
		md, err := adm.Metadata(ctx, topic)
		if err != nil {
			return err
		}
		if len(md.Topics[topic].Partitions) != partitions {
			return fmt.Errorf("%d partitions in the metadata", len(md.Topics[topic].Partitions))
		}
		for p, pd := range md.Topics[topic].Partitions {
			if len(pd.ISR) != 3 || pd.Leader < 0 {
				return fmt.Errorf("partition %d: leader %d isr %v", p, pd.Leader, pd.ISR)
			}
		}
		return nil
	}
	c.eventually("every replica in sync", 30*time.Second, fullISR)

	load := startSeqLoad(ctx, c, topic, partitions)
	ackedCount := func() int { return load.count(-1) }

	leaderOf := func(p int32) (int32, error) {
		md, err := adm.Metadata(ctx, topic)
		if err != nil {
			return -1, err
		}
		pd, ok := md.Topics[topic].Partitions[p]
		if !ok || pd.Err != nil {
			return -1, fmt.Errorf("partition %d not in the metadata (%v)", p, pd.Err)
		}
		return pd.Leader, nil
	}
	broker := func(id int32) *node {
		for _, b := range c.brokers {
			if b.id == id {
				return b
			}
		}
		return nil
	}
	for i := range kills {
		p := int32(i % partitions)
		var leader int32
		c.eventually("a leader", 30*time.Second, func() (err error) {
			leader, err = leaderOf(p)
			if err == nil && leader < 0 {
				err = fmt.Errorf("partition %d offline", p)
			}
			return err
		})
		before := ackedCount()
		victim := broker(leader)
		if victim == nil {
			t.Fatalf("partition %d: leader %d is not a broker of this cluster", p, leader)
		}
		victim.kill9()
		c.eventually("a new leader", 30*time.Second, func() error {
			l, err := leaderOf(p)
			if err != nil {
				return err
			}
			if l == leader || l < 0 {
				return fmt.Errorf("leader %d", l)
			}
			return nil
		})
		victim.start()
		c.eventually("every replica back in sync", 60*time.Second, fullISR)
		c.eventually("acknowledgements flowing", 30*time.Second, func() error {
			if n := ackedCount(); n <= before {
				return fmt.Errorf("%d acknowledged, as before the kill", n)
			}
			return nil
		})
		t.Logf("kill %d: leader %d of partition %d; %d records acknowledged", i+1, leader, p, ackedCount())
	}

	// Then the active controller.
	var active int32
	c.eventually("quorum leader", 20*time.Second, func() (err error) {
		active, err = c.quorumLeader()
		return err
	})
	c.controller(active).kill9()
	before := ackedCount()
	c.eventually("acknowledgements flowing after the controller died", 30*time.Second, func() error {
		if n := ackedCount(); n <= before+100 {
			return fmt.Errorf("%d acknowledged", n)
		}
		return nil
	})
	c.controller(active).start()

	load.finish(t, ctx)
	load.verify(t, ctx, c)
}

// TestReplicationUncleanElection: a replica that fell out of the ISR never
// becomes leader while unclean.leader.election.enable is off, so the
// partition stays offline when the ISR's last member dies; turned on, the
// controller elects it, and reports the loss of what only the old leader had.
func TestReplicationUncleanElection(t *testing.T) {
	c := startCluster(t, 3, 2, "broker.session.timeout.ms=1500", "unclean.leader.election.interval.ms=500")
	adm := kadm.NewClient(c.client())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, 1, 2, nil, "u"); err != nil {
		t.Fatal(err)
	}
	state := func() (leader int32, isr []int32, err error) {
		md, err := adm.Metadata(ctx, "u")
		if err != nil {
			return -1, nil, err
		}
		pd, ok := md.Topics["u"].Partitions[0]
		if !ok {
			return -1, nil, fmt.Errorf("no partition")
		}
		return pd.Leader, pd.ISR, nil
	}
	c.eventually("both replicas in sync", 30*time.Second, func() error {
		_, isr, err := state()
		if err == nil && len(isr) != 2 {
			err = fmt.Errorf("isr %v", isr)
		}
		return err
	})
	prod := c.client(kgo.DefaultProduceTopic("u"), kgo.RequiredAcks(kgo.AllISRAcks()))
	produceSome(t, prod, "u", 10)
	leader, _, _ := state()
	var lead, follow *node
	for _, b := range c.brokers {
		if b.id == leader {
			lead = b
		} else {
			follow = b
		}
	}
	// The follower dies and leaves the ISR; the leader takes 10 more
	// records that only it has; then the leader dies too.
	follow.kill9()
	c.eventually("the ISR shrinks to the leader", 30*time.Second, func() error {
		_, isr, err := state()
		if err == nil && len(isr) != 1 {
			err = fmt.Errorf("isr %v", isr)
		}
		return err
	})
	produceSome(t, prod, "u", 10)
	lead.kill9()
	follow.start()
	c.eventually("the follower back and registered", 30*time.Second, func() error {
		if follow.logCount("unfenced by the controller") < 2 {
			return fmt.Errorf("not unfenced yet")
		}
		return nil
	})
	c.eventually("the partition offline once its leader is fenced", 30*time.Second, func() error {
		l, _, err := state()
		if err == nil && l != -1 {
			err = fmt.Errorf("leader %d", l)
		}
		return err
	})
	// Unclean election off: the partition stays offline.
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		if l, _, err := state(); err == nil && l >= 0 {
			t.Fatalf("partition got leader %d with unclean election off:\n%s", l, c.logs())
		}
		time.Sleep(200 * time.Millisecond)
	}
	// On: the controller elects the out-of-sync replica and says so.
	if _, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "unclean.leader.election.enable", Value: kadm.StringPtr("true")}}, "u"); err != nil {
		t.Fatal(err)
	}
	c.eventually("an unclean leader", 30*time.Second, func() error {
		l, _, err := state()
		if err == nil && l != follow.id {
			err = fmt.Errorf("leader %d", l)
		}
		return err
	})
	reported := false
	for _, n := range c.controllers {
		reported = reported || n.logCount("unclean leader election") > 0
	}
	if !reported {
		t.Fatalf("no controller reported the unclean election:\n%s", c.logs())
	}
	// The new leader has the first 10 records only.
	consumeCount(t, c.bootstrap(), "u", 10)
}

// TestFetchFromClosestReplica (KIP-392): with replica.selector.class set to
// the rack-aware selector, a consumer with client.rack is sent to the
// in-sync replica in its rack and reads everything from it.
func TestFetchFromClosestReplica(t *testing.T) {
	c := startCluster(t, 3, 3, "broker.rack=rack-{id}",
		"replica.selector.class=org.apache.kafka.common.replica.RackAwareReplicaSelector")
	adm := kadm.NewClient(c.client())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, 1, 3, nil, "near"); err != nil {
		t.Fatal(err)
	}
	c.eventually("all replicas in sync", 30*time.Second, func() error {
		md, err := adm.Metadata(ctx, "near")
		if err != nil {
			return err
		}
		if p := md.Topics["near"].Partitions[0]; len(p.ISR) != 3 {
			return fmt.Errorf("isr %v", p.ISR)
		}
		return nil
	})
	prod := c.client(kgo.DefaultProduceTopic("near"), kgo.RequiredAcks(kgo.AllISRAcks()))
	produceSome(t, prod, "near", 100)
	md, err := adm.Metadata(ctx, "near")
	if err != nil {
		t.Fatal(err)
	}
	leader := md.Topics["near"].Partitions[0].Leader
	var follower int32
	for _, b := range c.brokers {
		if b.id != leader {
			follower = b.id
			break
		}
	}
	var mu sync.Mutex
	servedBy := map[int32]int{}
	hook := fetchHook(func(node int32, n int) {
		mu.Lock()
		servedBy[node] += n
		mu.Unlock()
	})
	cons := c.client(kgo.ConsumeTopics("near"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.Rack(fmt.Sprintf("rack-%d", follower)), kgo.WithHooks(hook))
	got := 0
	for got < 100 {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of 100", got)
		}
		got += fs.NumRecords()
	}
	mu.Lock()
	defer mu.Unlock()
	if servedBy[follower] != 100 || servedBy[leader] != 0 {
		t.Fatalf("records served by broker: %v; want all 100 from %d (rack-%d), none from the leader %d", servedBy, follower, follower, leader)
	}
}

// fetchHook reports which broker served each fetched batch.
type fetchHook func(node int32, records int)

func (f fetchHook) OnFetchBatchRead(meta kgo.BrokerMetadata, _ string, _ int32, m kgo.FetchBatchMetrics) {
	f(meta.NodeID, m.NumRecords)
}
