//go:build chaos

package chaos

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestCommitNotAcknowledgedWhileFollowersStopped is the case that found
// issue 13: a coordinator acknowledged an OffsetCommit as soon as it had
// appended it, before its followers had it, and lost it when it died.
//
// Three combined nodes; a group commits offset 10 while all three replicas
// of its __consumer_offsets partition are in the ISR, and the commit
// record is replicated (readable below the high watermark). Both followers
// are stopped (SIGSTOP) and their fetches in flight drain. An OffsetCommit
// of 20 sent straight to the coordinator must not be acknowledged while
// they are stopped: they are still in the ISR and the ISR cannot shrink,
// because the two stopped nodes are two of the three controllers and no
// AlterPartition can commit without them (replica.lag.time.max.ms, 30 s
// by default, is also longer than the 10 s the test waits). Then the
// coordinator is killed (-9) and the followers continued: the new
// coordinator must answer at least every acknowledged offset, and a
// consumer joining the group must not re-read a record below it.
func TestCommitNotAcknowledgedWhileFollowersStopped(t *testing.T) {
	c := startCluster(t)
	const topic, group = "p5", "p5-group"
	c.createTopic(topic, 1, nil)
	cl := c.client(kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	for i := range 30 {
		if err := cl.ProduceSync(ctxFor(t, 30*time.Second), &kgo.Record{Value: fmt.Appendf(nil, "r%02d", i)}).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
	adm := kadm.NewClient(cl)

	// The coordinator, and its __consumer_offsets partition with ISR = all.
	var coordinator int32
	c.waitFor("the group's coordinator", 60*time.Second, func() error {
		for _, r := range adm.FindGroupCoordinators(ctxFor(t, 5*time.Second), group) {
			if r.Err != nil {
				return r.Err
			}
			coordinator = r.NodeID
		}
		return nil
	})
	offsetsPartition := int32(javaHashCode(group)&0x7fffffff) % 6
	c.waitFor("every replica of the offsets partition in the ISR", 60*time.Second, func() error {
		if err := c.healthy(); err != nil {
			return err
		}
		m, err := c.metadata()
		if err != nil {
			return err
		}
		p := m.Topics["__consumer_offsets"].Partitions[offsetsPartition]
		if p.Leader != coordinator {
			return fmt.Errorf("__consumer_offsets/%d led by %d, the coordinator is %d", offsetsPartition, p.Leader, coordinator)
		}
		return nil
	})
	t.Logf("coordinator %d leads __consumer_offsets/%d", coordinator, offsetsPartition)

	// Commit 10 and wait until the commit record is below the high watermark.
	direct := c.client()
	if _, err := direct.Request(ctxFor(t, 10*time.Second), kmsg.NewPtrMetadataRequest()); err != nil {
		t.Fatal(err)
	}
	c.waitFor("commit 10 acknowledged", 60*time.Second, func() error {
		return commitOffset(ctxFor(t, 10*time.Second), direct, coordinator, group, topic, 10)
	})
	c.waitFor("commit 10 replicated", 60*time.Second, func() error {
		return offsetRecordReplicated(t, c, offsetsPartition, group, topic, 10)
	})

	var followers []*node
	for _, n := range c.nodes {
		if n.id != coordinator {
			followers = append(followers, n)
		}
	}
	for _, f := range followers {
		if err := f.pause(); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("SIGSTOP nodes %d and %d", followers[0].id, followers[1].id)
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			for _, f := range followers {
				f.resume()
			}
		}
	}
	defer resume()
	// Their fetches in flight complete at the leader within
	// replica.fetch.wait.max.ms (500 ms); after that nothing of theirs
	// reaches it. A fixed wait: the scenario needs that time to pass.
	time.Sleep(2 * time.Second)

	type result struct {
		err error
		at  time.Duration
	}
	done := make(chan result, 1)
	sent := time.Now()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		done <- result{commitOffset(ctx, direct, coordinator, group, topic, 20), time.Since(sent)}
	}()
	acknowledged := int64(10)
	const window = 10 * time.Second
	select {
	case r := <-done:
		if r.err == nil {
			acknowledged = 20
			t.Errorf("the commit of 20 was acknowledged after %v while both followers were stopped and in the ISR", r.at.Round(time.Millisecond))
		} else {
			t.Logf("the commit of 20 failed after %v while the followers were stopped: %v", r.at.Round(time.Millisecond), r.err)
		}
		done <- r
	case <-time.After(window):
		t.Logf("the commit of 20 not answered within %v while the followers were stopped", window)
	}

	old := c.node(coordinator)
	old.kill9()
	resume()
	t.Logf("killed node %d (-9), SIGCONT nodes %d and %d", coordinator, followers[0].id, followers[1].id)
	if r := <-done; r.err == nil && acknowledged < 20 {
		acknowledged = 20
		t.Logf("the commit of 20 was acknowledged after %v, once the followers continued", r.at.Round(time.Millisecond))
	}

	// The new coordinator answers every acknowledged commit. Usually a
	// resumed follower takes over. But when a stopped follower was the
	// active controller, on resuming it may fence the brokers whose
	// sessions ran out while it was stopped, the killed coordinator last:
	// that one then stays the partition's only ISR member and, as in Kafka
	// (no unclean election), the partition waits for it. So after 30 s
	// without an answer the killed node is started again; either way the
	// answer must not be older than an acknowledged commit.
	fetched := int64(-2)
	restarted := false
	waitStart := time.Now()
	c.waitFor("OffsetFetch from the new coordinator", 150*time.Second, func() (err error) {
		fetched, err = c.committedOffset(group, topic, 0)
		if err != nil && !restarted && time.Since(waitStart) > 30*time.Second {
			t.Logf("no coordinator answers after 30s (%v): starting node %d again", err, coordinator)
			old.start()
			restarted = true
		}
		return err
	})
	t.Logf("the new coordinator answers offset %d; acknowledged: %d", fetched, acknowledged)
	if fetched < acknowledged {
		t.Errorf("committed offset went backwards: %d acknowledged, the new coordinator answers %d", acknowledged, fetched)
	}

	if !restarted {
		old.start()
	}
	c.waitFor("the cluster healthy again", 120*time.Second, c.healthy)

	// A consumer joining the group starts at the committed offset.
	consumer := c.client(kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit())
	ctx := ctxFor(t, 60*time.Second)
	var first *kgo.Record
	for first == nil && ctx.Err() == nil {
		consumer.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			if first == nil {
				first = r
			}
		})
	}
	if first == nil {
		t.Fatal("the group's consumer read nothing within 60s")
	}
	if first.Offset < acknowledged {
		t.Errorf("a consumer re-read committed records: it began at offset %d, the acknowledged commit is %d", first.Offset, acknowledged)
	}
}

// commitOffset sends one OffsetCommit (no generation: a group with no
// members) straight to a node.
func commitOffset(ctx context.Context, cl *kgo.Client, node int32, group, topic string, offset int64) error {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group = group
	req.Generation = -1
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset, rp.LeaderEpoch = 0, offset, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl.Broker(int(node)))
	if err != nil {
		return err
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return err
			}
		}
	}
	return nil
}

// offsetRecordReplicated: a consumer (bounded by the high watermark, so by
// what every ISR member has) reads the commit record from the offsets
// partition.
func offsetRecordReplicated(t *testing.T, c *cluster, partition int32, group, topic string, offset int64) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.seeds()...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"__consumer_offsets": {partition: kgo.NewOffset().AtStart()}}))
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		found := false
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			var k kmsg.OffsetCommitKey
			var v kmsg.OffsetCommitValue
			if k.ReadFrom(r.Key) != nil || k.Version > 1 || v.ReadFrom(r.Value) != nil {
				return
			}
			if k.Group == group && k.Topic == topic && k.Partition == 0 && v.Offset == offset {
				found = true
			}
		})
		if found {
			return nil
		}
	}
	return fmt.Errorf("commit record of %d not below the high watermark of __consumer_offsets/%d", offset, partition)
}

// javaHashCode is Java's String.hashCode, which Kafka's partitionFor uses
// to place a group in __consumer_offsets.
func javaHashCode(s string) int32 {
	var h int32
	for _, r := range s {
		h = 31*h + int32(r)
	}
	return h
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
