//go:build e2e

package test

// Partition failover measurement (issue 15 part 5): kill -9 of a partition
// leader until the first acknowledged produce, with Kafka's default
// broker.heartbeat.interval.ms (2000) and broker.session.timeout.ms (9000)
// and a franz-go producer with its defaults (acks=all, idempotent). It runs
// twice in one go: with gregor.broker.fence.on.connection.close on (the
// default: the controller fences a broker as soon as the broker's side
// closes its heartbeat connection) and off (Kafka's behaviour: fenced after
// the session timeout). Nothing is asserted on time; the figures are
// printed with t.Logf. Skipped unless GREGOR_BENCH=1:
//
//	GREGOR_BENCH=1 go test -tags e2e -run TestFailoverBench -v -timeout 60m ./test/
//
// GREGOR_BENCH_KILLS (default 20) is the number of kills per mode;
// GREGOR_BENCH_MODES picks the modes, "on,off,on-minage,on-librdkafka" by
// default: on-minage is on with a producer whose MetadataMinAge is 100ms
// instead of 5s, which shows how much of the figure is the client's pacing
// of its metadata refreshes rather than the cluster's failover;
// on-librdkafka (and off-librdkafka) produce with librdkafka's defaults
// instead (confluent-kafka, failover_confluent.py), a client that refreshes
// its metadata about 100 ms after it lost a leader, as Kafka's Java client
// does.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// producerWarmUp is how long the producer runs before the kill: longer than
// franz-go's default MetadataMinAge (5s), as for any producer that did not
// start just now. One that did waits out the rest of those 5s before it
// looks for the new leader, against Kafka as against Gregor.
const producerWarmUp = 6 * time.Second

func TestFailoverBench(t *testing.T) {
	skipUnlessBench(t)
	benchMachine(t)
	kills := benchEnvInts(t, "GREGOR_BENCH_KILLS", []int{20})[0]
	modes := []string{"on", "off", "on-minage", "on-librdkafka"}
	if v := os.Getenv("GREGOR_BENCH_MODES"); v != "" {
		modes = strings.Split(v, ",")
	}
	results, visible := map[string]spread{}, map[string]spread{}
	for _, mode := range modes {
		t.Run("fence-on-close="+mode, func(t *testing.T) {
			fenceOnClose, client, _ := strings.Cut(mode, "-")
			var start startProducer
			switch client {
			case "":
				start = franzProducer()
			case "minage":
				start = franzProducer(kgo.MetadataMinAge(100 * time.Millisecond))
			case "librdkafka":
				needPythonModule(t, "confluent_kafka")
				start = librdkafkaProducer
			default:
				t.Fatalf("unknown mode %q", mode)
			}
			visible[mode], results[mode] = partitionFailovers(t, kills, fenceOnClose != "off", start)
		})
	}
	var b strings.Builder
	for _, mode := range modes {
		client := "franz-go defaults"
		switch {
		case strings.HasSuffix(mode, "-minage"):
			client = "MetadataMinAge=100ms"
		case strings.HasSuffix(mode, "-librdkafka"):
			client = "librdkafka defaults"
		}
		fmt.Fprintf(&b, "\nfence.on.connection.close=%-5v %-20s kill -9 of the leader -> new leader in Metadata: %v\n%47s -> first acknowledged produce: %v",
			!strings.HasPrefix(mode, "off"), client, visible[mode], "", results[mode])
	}
	t.Logf("partition failover, 3 controllers + 3 brokers, RF=3, default heartbeat/session configs, franz-go producer defaults (acks=all):%s", b.String())
}

// partitionFailovers starts 3 controllers and 3 brokers with Kafka's default
// heartbeat and session configs, and kills -9 the leader of a partition of
// an RF=3 topic `kills` times, restarting it and waiting for a full ISR
// between kills. It returns, per kill, the time from the kill to the first
// acknowledgement of a produce sent after it.
func partitionFailovers(t *testing.T, kills int, fenceOnClose bool, startProducer startProducer) (visible, firstAck spread) {
	c := startCluster(t, 3, 3,
		"broker.heartbeat.interval.ms=2000", "broker.session.timeout.ms=9000",
		fmt.Sprintf("gregor.broker.fence.on.connection.close=%v", fenceOnClose))
	const topic, partitions = "failover", 3
	adm := kadm.NewClient(c.client())
	c.eventually("create "+topic, 30*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		r, err := adm.CreateTopic(ctx, partitions, 3, nil, topic)
		if err == nil {
			err = r.Err
		}
		if err != nil && !strings.Contains(err.Error(), "TOPIC_ALREADY_EXISTS") {
			return err
		}
		return nil
	})
	leaderOf := func(p int32) (leader int32, fullISR bool, err error) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		md, err := adm.Metadata(ctx, topic)
		if err != nil {
			return -1, false, err
		}
		fullISR = true
		for _, pd := range md.Topics[topic].Partitions {
			if pd.Err != nil || pd.Leader < 0 || len(pd.ISR) != 3 {
				fullISR = false
			}
		}
		pd, ok := md.Topics[topic].Partitions[p]
		if !ok || pd.Err != nil {
			return -1, false, fmt.Errorf("partition %d not in the metadata (%v)", p, pd.Err)
		}
		return pd.Leader, fullISR, nil
	}
	broker := func(id int32) *node {
		for _, b := range c.brokers {
			if b.id == id {
				return b
			}
		}
		return nil
	}

	// One pinned client per broker, to ask a surviving one for the leader.
	pinned := map[int32]*pinnedClient{}
	for _, b := range c.brokers {
		pinned[b.id] = newPinnedClient(t, b.addr())
	}
	var took, shown spread
	var rows []string
	for i := range kills {
		p := int32(i % partitions)
		var leader int32
		c.eventually("a leader and a full ISR", 120*time.Second, func() error {
			l, full, err := leaderOf(p)
			switch {
			case err != nil:
				return err
			case l < 0 || !full:
				return fmt.Errorf("partition %d: leader %d, ISR not full", p, l)
			}
			leader = l
			return nil
		})
		victim := broker(leader)
		if victim == nil {
			t.Fatalf("partition %d: leader %d is not a broker of this cluster", p, leader)
		}
		// A producer acknowledged by the leader before the kill and
		// producing one record at a time when it comes.
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		acks := &ackWatch{first: make(chan time.Duration, 1)}
		stopProducer := startProducer(ctx, t, c, topic, p, acks)
		// A long-running producer: franz-go refreshes metadata on a failed
		// produce only once metadata.min.age (MetadataMinAge, 5s) has passed
		// since its last refresh, the one it made when it started.
		time.Sleep(producerWarmUp)
		killedAt := time.Now()
		acks.killed(killedAt)
		victim.kill9()
		visible := leaderVisible(t, pinned, victim.id, p, killedAt)
		var d time.Duration
		select {
		case d = <-acks.first:
		case <-ctx.Done():
			t.Fatalf("kill %d: no produce acknowledged within 2 minutes of killing broker %d\n%s", i+1, leader, c.logs())
		}
		cancel()
		stopProducer()
		took = append(took, d)
		shown = append(shown, visible)
		rows = append(rows, fmt.Sprintf("%4d  %9d  %6d  %17v  %v", i+1, p, leader, visible.Round(time.Millisecond), d.Round(time.Millisecond)))
		victim.start()
	}
	t.Logf("gregor.broker.fence.on.connection.close=%v\nkill  partition  leader  new leader visible  first ack after the kill\n%s\n"+
		"new leader in a surviving broker's Metadata: %v\nfirst acknowledged produce:                  %v",
		fenceOnClose, strings.Join(rows, "\n"), shown, took)
	return shown, took
}

// ackWatch reports the first acknowledgement of a produce begun after the
// kill, as the time from the kill.
type ackWatch struct {
	mu       sync.Mutex
	killedAt time.Time
	first    chan time.Duration // buffered: one value
}

func (w *ackWatch) killed(at time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.killedAt = at
}

// acked notes a produce begun at start and acknowledged at ack.
func (w *ackWatch) acked(start, ack time.Time) {
	w.mu.Lock()
	k := w.killedAt
	w.mu.Unlock()
	if k.IsZero() || start.Before(k) {
		return
	}
	select {
	case w.first <- ack.Sub(k):
	default:
	}
}

// startProducer starts a producer of one record at a time to partition p
// that tells acks of every acknowledgement, after one acknowledged produce
// (it fails the test if there is none). It runs until ctx ends; stop
// waits for it.
type startProducer func(ctx context.Context, t *testing.T, c *cluster, topic string, p int32, acks *ackWatch) (stop func())

// franzProducer is a franz-go producer with its defaults (acks=all,
// idempotent) and opts.
func franzProducer(opts ...kgo.Opt) startProducer {
	return func(ctx context.Context, t *testing.T, c *cluster, topic string, p int32, acks *ackWatch) func() {
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.bootstrap()...), kgo.DefaultProduceTopic(topic),
			kgo.RecordPartitioner(kgo.ManualPartitioner())}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		produce := func() error {
			return cl.ProduceSync(ctx, &kgo.Record{Partition: p, Value: []byte("x")}).FirstErr()
		}
		if err := produce(); err != nil {
			t.Fatalf("produce before the kill: %v", err)
		}
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				start := time.Now()
				err := produce()
				if err == nil {
					acks.acked(start, time.Now())
				} else if ctx.Err() == nil {
					t.Logf("produce: %v", err)
				}
			}
		}()
		return func() {
			wg.Wait()
			cl.Close()
		}
	}
}

// librdkafkaProducer runs failover_confluent.py: a librdkafka producer
// with librdkafka's defaults.
func librdkafkaProducer(ctx context.Context, t *testing.T, c *cluster, topic string, p int32, acks *ackWatch) func() {
	cmd := exec.CommandContext(ctx, python, "failover_confluent.py", strings.Join(c.bootstrap(), ","), topic, fmt.Sprint(p))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	type delivery struct {
		Start, Ack float64
		Err        *string
	}
	at := func(sec float64) time.Time { return time.Unix(0, int64(sec*1e9)) }
	first := make(chan error, 1)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var d delivery
			if err := json.Unmarshal(sc.Bytes(), &d); err != nil {
				t.Errorf("librdkafka producer: %q: %v", sc.Text(), err)
				continue
			}
			if d.Err != nil {
				t.Logf("librdkafka delivery: %s", *d.Err)
				select {
				case first <- errors.New(*d.Err):
				default:
				}
				continue
			}
			select {
			case first <- nil:
			default:
			}
			acks.acked(at(d.Start), at(d.Ack))
		}
	}()
	stop := func() {
		wg.Wait()
		_ = cmd.Wait() // killed by ctx
	}
	select {
	case err := <-first:
		if err != nil {
			t.Fatalf("librdkafka produce before the kill: %v", err)
		}
	case <-ctx.Done():
		stop()
		t.Fatalf("librdkafka producer: no delivery before the kill\n%s", stderr.String())
	}
	return stop
}

// leaderVisible asks a broker other than the killed one for partition p's
// leader, every millisecond, until it names another broker; it returns the
// time since the kill.
func leaderVisible(t *testing.T, pinned map[int32]*pinnedClient, killed, p int32, killedAt time.Time) time.Duration {
	t.Helper()
	var ask *pinnedClient
	for id, pc := range pinned {
		if id != killed {
			ask = pc
			break
		}
	}
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr("failover")
	req.Topics = append(req.Topics, rt)
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		kresp, err := ask.request(ctx, req)
		cancel()
		if err != nil {
			continue
		}
		for _, t := range kresp.(*kmsg.MetadataResponse).Topics {
			for _, rp := range t.Partitions {
				if rp.Partition == p && rp.Leader >= 0 && rp.Leader != killed {
					return time.Since(killedAt)
				}
			}
		}
	}
	t.Fatalf("partition %d: no other leader in the metadata within 2 minutes of killing broker %d", p, killed)
	return 0
}
