//go:build e2e

package test

// Controlled shutdown of a broker with many partitions (issue 15, part 4:
// "controlled shutdown of such a broker moves leadership in < 5 s"),
// measured end to end with real processes. Figures are printed with
// t.Logf; nothing is asserted on time.

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// csTopicPartitions is the size of the bench's topics.
const csTopicPartitions = 1000

// csFigures is one size's measurement.
type csFigures struct {
	partitions int
	create     time.Duration // CreateTopics sent -> both brokers show every partition led
	settle     time.Duration // -> the cluster idle
	toImage    time.Duration // SIGTERM -> the survivor's Metadata shows it leading all
	toProduce  time.Duration // SIGTERM -> the survivor took a produce on each probed partition
	toExit     time.Duration // SIGTERM -> the stopped broker's process exited
	probes     int
}

// TestControlledShutdownBench starts 1 controller and 2 brokers, creates
// topics of 1,000 partitions (RF=2, each broker leading half: partition p
// is led by broker 101 when p is even), waits until the cluster is idle,
// then sends SIGTERM to broker 101 and measures until broker 102's Metadata
// shows it leading every partition, until broker 102 took an acks=1
// produce on two partitions of every topic that 101 led (so their epoch
// entries are durable and they lead, not just the image), and until 101's
// process exited. GREGOR_BENCH_CS_PARTITIONS sets the sizes (default
// "1000,10000,100000"), run in one process one after the other, so the 1k figures
// are the same-run baseline of the large ones.
func TestControlledShutdownBench(t *testing.T) {
	skipUnlessBench(t)
	benchMachine(t)
	var all []csFigures
	for _, n := range benchEnvInts(t, "GREGOR_BENCH_CS_PARTITIONS", []int{1000, 10000, 100000}) {
		t.Run(fmt.Sprint(n), func(t *testing.T) { all = append(all, controlledShutdownRun(t, n)) })
	}
	t.Logf("controlled shutdown of one of 2 brokers, RF=2, each leading half:")
	t.Logf("  %10s %12s %10s %12s %14s %12s", "partitions", "create", "→ idle", "→ image", "→ produce ok", "→ exit")
	for _, f := range all {
		t.Logf("  %10d %12v %10v %12v %14v %12v  (%d probes; create %.0f partitions/s)", f.partitions,
			f.create.Round(time.Millisecond), f.settle.Round(time.Millisecond), csDur(f.toImage),
			csDur(f.toProduce), f.toExit.Round(time.Millisecond), f.probes,
			float64(f.partitions)/f.create.Seconds())
	}
	if len(all) > 1 {
		base := all[0]
		for _, f := range all[1:] {
			produce := "n/a"
			if f.toProduce > 0 && base.toProduce > 0 {
				produce = fmt.Sprintf("%.1fx", f.toProduce.Seconds()/base.toProduce.Seconds())
			}
			t.Logf("  %d vs %d partitions (%.0fx): create %.1fx, → produce ok %s, → exit %.1fx", f.partitions,
				base.partitions, float64(f.partitions)/float64(base.partitions),
				f.create.Seconds()/base.create.Seconds(), produce, f.toExit.Seconds()/base.toExit.Seconds())
		}
	}
}

func controlledShutdownRun(t *testing.T, n int) csFigures {
	f := csFigures{partitions: n}
	// Kafka's default heartbeat and session (the harness's 200 ms / 2 s
	// fence a broker busy creating thousands of logs on a loaded machine).
	c := startCluster(t, 1, 2, "broker.heartbeat.interval.ms=2000", "broker.session.timeout.ms=9000")
	stopping, survivor := c.brokers[0], c.brokers[1]
	per := min(n, csTopicPartitions)
	var topics []string
	for i := 0; i*per < n; i++ {
		topics = append(topics, fmt.Sprintf("cs-%04d", i))
	}

	start := time.Now()
	csCreate(t, c, topics, per, stopping.id, survivor.id)
	assigned := func(p int32) int32 { return csLeader(p, stopping.id, survivor.id) }
	for _, b := range c.brokers {
		pending := csWaitLed(t, newPinnedClient(t, b.addr()), topics, per, 1, assigned, 30*time.Minute)
		if len(pending) > 0 {
			t.Fatalf("broker %d: %d topics not led as assigned within 30m", b.id, len(pending))
		}
	}
	f.create = time.Since(start)
	// Both replicas in every ISR, or the stopping broker's leaderships
	// cannot all move. On a loaded machine the controller may fence a
	// broker now and then (heartbeats answered late), which shrinks the
	// ISRs for a while: wait, within reason, and say so.
	if pending := csWaitLed(t, newPinnedClient(t, survivor.addr()), topics, per, 2, assigned, 5*time.Minute); len(pending) > 0 {
		t.Logf("%d partitions: %d of %d topics still without both replicas in every ISR after 5m; measuring anyway",
			n, len(pending), len(topics))
	}
	idle := waitIdle(t, c, time.Minute)
	f.settle = max(idle.Sub(start)-f.create, 0)

	// The probes: two partitions that the stopping broker leads per topic.
	probes := map[string][]int32{}
	for _, topic := range topics {
		probes[topic] = []int32{0}
		if per > 2 {
			probes[topic] = append(probes[topic], int32(per-2)&^1)
		}
		f.probes += len(probes[topic])
	}
	pc := newPinnedClient(t, survivor.addr())
	sigterm := time.Now()
	if err := stopping.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	exitedAt := make(chan time.Time, 1)
	go func() {
		<-stopping.exited // closed once Wait returned, a moment after the exit
		exitedAt <- time.Now()
	}()
	pending := topics
	deadline := sigterm.Add(3 * time.Minute)
	f.toImage, f.toProduce = -1, -1 // not reached
	for len(pending) > 0 || len(probes) > 0 {
		if time.Now().After(deadline) {
			t.Logf("%d partitions: after 3m, %d topics not all led by %d (%d partitions not), %d topics' probes refused",
				n, len(pending), survivor.id, csCountNotLed(t, pc, pending, survivor.id), len(probes))
			break
		}
		if len(pending) > 0 {
			var err error
			pending, err = csNotLedBy(pc, pending, per, 1, func(int32) int32 { return survivor.id })
			if err == nil && len(pending) == 0 {
				f.toImage = time.Since(sigterm)
			}
		}
		if len(probes) > 0 {
			csProduce(t, pc, probes)
			if len(probes) == 0 {
				f.toProduce = time.Since(sigterm)
			}
		}
		if len(pending) > 0 || len(probes) > 0 {
			time.Sleep(20 * time.Millisecond)
		}
	}
	select {
	case at := <-exitedAt:
		f.toExit = at.Sub(sigterm)
	case <-time.After(10 * time.Minute):
		t.Fatalf("broker %d did not exit within 10m of SIGTERM", stopping.id)
	}
	stopping.stop() // checks the exit status
	t.Logf("%d partitions: create %v, idle after %v more; SIGTERM → image %v, → produce ok %v, → exit %v",
		n, f.create.Round(time.Millisecond), f.settle.Round(time.Millisecond), csDur(f.toImage),
		csDur(f.toProduce), f.toExit.Round(time.Millisecond))
	return f
}

// csDur prints a measured duration, or "not reached" for -1.
func csDur(d time.Duration) string {
	if d < 0 {
		return "not reached"
	}
	return d.Round(time.Millisecond).String()
}

// csLeader is the leader the bench assigns to partition p.
func csLeader(p int32, even, odd int32) int32 {
	if p%2 == 0 {
		return even
	}
	return odd
}

// csCreate creates the topics, with partition p's replicas [even, odd] for
// even p and [odd, even] otherwise.
func csCreate(t *testing.T, c *cluster, topics []string, per int, even, odd int32) {
	t.Helper()
	createTopicsInSteps(t, c, topics, per, func(rt *kmsg.CreateTopicsRequestTopic) {
		rt.NumPartitions, rt.ReplicationFactor = -1, -1
		for p := range int32(per) {
			ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
			ra.Partition = p
			ra.Replicas = []int32{even, odd}
			if p%2 == 1 {
				ra.Replicas = []int32{odd, even}
			}
			rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
		}
	})
}

// createTopicsInSteps creates the topics of per partitions each, as many
// per CreateTopics request as the controller takes (10,000 records: a
// TopicRecord and a PartitionRecord per partition); shape sets each
// topic's partitions and replicas.
func createTopicsInSteps(t *testing.T, c *cluster, topics []string, per int, shape func(*kmsg.CreateTopicsRequestTopic)) {
	t.Helper()
	cl := c.client()
	defer cl.Close()
	step := max(1, 10000/(per+1))
	for i := 0; i < len(topics); i += step {
		batch := topics[i:min(i+step, len(topics))]
		req := kmsg.NewPtrCreateTopicsRequest()
		req.TimeoutMillis = 120_000
		for _, name := range batch {
			rt := kmsg.NewCreateTopicsRequestTopic()
			rt.Topic = name
			shape(&rt)
			req.Topics = append(req.Topics, rt)
		}
		c.eventually(fmt.Sprintf("create %s..%s", batch[0], batch[len(batch)-1]), 10*time.Minute, func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			resp, err := req.RequestWith(ctx, cl)
			if err != nil {
				return err
			}
			for _, rt := range resp.Topics {
				if err := kerr.ErrorForCode(rt.ErrorCode); err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
					return fmt.Errorf("%s: %w", rt.Topic, err)
				}
			}
			return nil
		})
	}
}

// csCountNotLed counts the partitions of the topics that the broker's
// Metadata does not show led by leader.
func csCountNotLed(t *testing.T, pc *pinnedClient, topics []string, leader int32) int {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	for _, name := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(name)
		req.Topics = append(req.Topics, rt)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	kresp, err := pc.request(ctx, req)
	if err != nil {
		t.Logf("metadata: %v", err)
		return -1
	}
	n := 0
	for _, rt := range kresp.(*kmsg.MetadataResponse).Topics {
		for _, rp := range rt.Partitions {
			if rp.Leader != leader {
				n++
			}
		}
	}
	return n
}

// csWaitLed polls the broker until its Metadata shows every partition of
// the topics led by leader(p) with at least minISR replicas in sync, or
// timeout passed; it returns the topics that were not.
func csWaitLed(t *testing.T, pc *pinnedClient, topics []string, per, minISR int, leader func(int32) int32, timeout time.Duration) []string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	pending := topics
	for len(pending) > 0 && time.Now().Before(deadline) {
		var err error
		if pending, err = csNotLedBy(pc, pending, per, minISR, leader); err != nil {
			t.Logf("metadata: %v", err)
		}
		if len(pending) > 0 {
			time.Sleep(200 * time.Millisecond)
		}
	}
	return pending
}

// csNotLedBy returns the topics whose partitions the broker's Metadata
// does not show all led by leader(p) with at least minISR replicas in sync.
func csNotLedBy(pc *pinnedClient, topics []string, per, minISR int, leader func(int32) int32) ([]string, error) {
	req := kmsg.NewPtrMetadataRequest()
	for _, name := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(name)
		req.Topics = append(req.Topics, rt)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	kresp, err := pc.request(ctx, req)
	if err != nil {
		return topics, err
	}
	done := map[string]bool{}
	for _, rt := range kresp.(*kmsg.MetadataResponse).Topics {
		if rt.ErrorCode != 0 || rt.Topic == nil || len(rt.Partitions) != per {
			continue
		}
		led := true
		for _, rp := range rt.Partitions {
			if rp.ErrorCode != 0 || rp.Leader != leader(rp.Partition) || len(rp.ISR) < minISR {
				led = false
				break
			}
		}
		done[*rt.Topic] = led
	}
	var pending []string
	for _, name := range topics {
		if !done[name] {
			pending = append(pending, name)
		}
	}
	return pending, nil
}

// csProduce sends one acks=1 record to each probed partition and removes
// from probes the partitions that took it (and topics left without any).
func csProduce(t *testing.T, pc *pinnedClient, probes map[string][]int32) {
	req := kmsg.NewPtrProduceRequest()
	req.Acks = 1
	req.TimeoutMillis = 10_000
	for topic, parts := range probes {
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = topic
		for _, p := range parts {
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Partition = p
			rp.Records = buildBatch(t, batchOpts{values: []string{"probe"}})
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	kresp, err := pc.request(ctx, req)
	if err != nil {
		return // the next round asks again
	}
	for _, rt := range kresp.(*kmsg.ProduceResponse).Topics {
		for _, rp := range rt.Partitions {
			if rp.ErrorCode != 0 {
				continue
			}
			left := probes[rt.Topic][:0]
			for _, p := range probes[rt.Topic] {
				if p != rp.Partition {
					left = append(left, p)
				}
			}
			probes[rt.Topic] = left
			if len(left) == 0 {
				delete(probes, rt.Topic)
			}
		}
	}
}
