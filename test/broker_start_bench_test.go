//go:build e2e

package test

// A broker process with many partitions, stopped and started again (issue
// 15, part 4: "a broker with 100k partitions starts (clean shutdown) in
// < 10 s and recovers after kill -9 in time bounded by the recovery-point
// checkpoints"), measured end to end with real processes: what a user
// waits for, not only the log layer (internal/log's TestScaleBench).
// Figures are printed with t.Logf; nothing is asserted on time.

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// startFigures is one size's measurement; each stop is measured from the
// signal, each start from the process's launch.
type startFigures struct {
	partitions int
	create     time.Duration // CreateTopics sent -> the broker leads every partition, one record in each
	cleanStop  time.Duration // SIGTERM -> exited
	clean      restartFigures
	crash      restartFigures // after kill -9
}

type restartFigures struct {
	listen  time.Duration // -> accepts connections
	led     time.Duration // -> its Metadata shows it leading every partition
	produce time.Duration // -> it took a produce on probed partitions of every topic
}

// TestBrokerStartBench starts 1 controller and 1 broker, creates topics of
// 1,000 partitions (RF=1) and writes one record to each partition, then
// stops the broker with SIGTERM and starts it again, and then kills it
// with -9 and starts it again. A broker that leads nothing while it is
// away (RF=1: its partitions are offline) is elected leader of all of
// them again once it registers, so "led" includes that election.
// GREGOR_BENCH_START_PARTITIONS sets the sizes (default "1000,100000"),
// run in one process one after the other: the 1k figures are the same-run
// baseline of the large ones.
func TestBrokerStartBench(t *testing.T) {
	skipUnlessBench(t)
	benchMachine(t)
	var all []startFigures
	for _, n := range benchEnvInts(t, "GREGOR_BENCH_START_PARTITIONS", []int{1000, 100000}) {
		t.Run(fmt.Sprint(n), func(t *testing.T) { all = append(all, brokerStartRun(t, n)) })
	}
	t.Logf("broker stop and start, 1 controller + 1 broker, RF=1, one record per partition:")
	t.Logf("  %10s %10s %10s | %-34s | %-34s", "partitions", "create", "SIGTERM", "after SIGTERM: listen / led / produce", "after kill -9: listen / led / produce")
	for _, f := range all {
		t.Logf("  %10d %10v %10v | %10v %10v %12v | %10v %10v %12v", f.partitions,
			f.create.Round(time.Millisecond), f.cleanStop.Round(time.Millisecond),
			f.clean.listen.Round(time.Millisecond), csDur(f.clean.led), csDur(f.clean.produce),
			f.crash.listen.Round(time.Millisecond), csDur(f.crash.led), csDur(f.crash.produce))
	}
}

func brokerStartRun(t *testing.T, n int) startFigures {
	f := startFigures{partitions: n}
	c := startCluster(t, 1, 1, "broker.heartbeat.interval.ms=2000", "broker.session.timeout.ms=9000")
	b := c.brokers[0]
	per := min(n, csTopicPartitions)
	var topics []string
	for i := 0; i*per < n; i++ {
		topics = append(topics, fmt.Sprintf("st-%04d", i))
	}
	leader := func(int32) int32 { return b.id }

	start := time.Now()
	bsCreate(t, c, topics, per)
	if pending := csWaitLed(t, newPinnedClient(t, b.addr()), topics, per, 1, leader, 30*time.Minute); len(pending) > 0 {
		t.Fatalf("%d topics not led within 30m", len(pending))
	}
	pc := newPinnedClient(t, b.addr())
	everyPartition := map[string][]int32{}
	for _, topic := range topics {
		for p := range int32(per) {
			everyPartition[topic] = append(everyPartition[topic], p)
		}
	}
	for deadline := time.Now().Add(10 * time.Minute); len(everyPartition) > 0; {
		if time.Now().After(deadline) {
			t.Fatalf("a record in every partition: %d topics left after 10m", len(everyPartition))
		}
		csProduce(t, pc, everyPartition)
	}
	f.create = time.Since(start)
	waitIdle(t, c, time.Minute)

	probes := func() map[string][]int32 {
		m := map[string][]int32{}
		for _, topic := range topics {
			m[topic] = []int32{0, int32(per - 1)}
		}
		return m
	}
	restart := func() restartFigures {
		var r restartFigures
		launched := time.Now()
		b.startWithin(10 * time.Minute)
		r.listen = time.Since(launched)
		pc := newPinnedClient(t, b.addr())
		r.led, r.produce = -1, -1
		pending, ps := topics, probes()
		deadline := launched.Add(10 * time.Minute)
		for len(pending) > 0 || len(ps) > 0 {
			if time.Now().After(deadline) {
				t.Logf("%d partitions: after 10m, %d topics not all led, %d topics' probes refused", n, len(pending), len(ps))
				break
			}
			if len(pending) > 0 {
				var err error
				if pending, err = csNotLedBy(pc, pending, per, 1, leader); err == nil && len(pending) == 0 {
					r.led = time.Since(launched)
				}
			}
			if len(ps) > 0 {
				csProduce(t, pc, ps)
				if len(ps) == 0 {
					r.produce = time.Since(launched)
				}
			}
			if len(pending) > 0 || len(ps) > 0 {
				time.Sleep(20 * time.Millisecond)
			}
		}
		return r
	}

	sigterm := time.Now()
	if err := b.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-b.exited:
		f.cleanStop = time.Since(sigterm)
	case <-time.After(5 * time.Minute):
		t.Fatalf("broker did not exit within 5m of SIGTERM:\n%s", b.log())
	}
	b.stop() // checks the exit status
	for _, line := range strings.Split(b.log(), "\n") {
		if strings.Contains(line, "shutdown stage took long") {
			t.Logf("broker: %s", line)
		}
	}
	f.clean = restart()
	waitIdle(t, c, time.Minute)
	b.kill9()
	f.crash = restart()
	t.Logf("%d partitions: create %v; SIGTERM → exit %v; start after it: listen %v, led %v, produce %v; after kill -9: listen %v, led %v, produce %v",
		n, f.create.Round(time.Millisecond), f.cleanStop.Round(time.Millisecond),
		f.clean.listen.Round(time.Millisecond), csDur(f.clean.led), csDur(f.clean.produce),
		f.crash.listen.Round(time.Millisecond), csDur(f.crash.led), csDur(f.crash.produce))
	return f
}

// bsCreate creates the topics with per partitions each, RF=1.
func bsCreate(t *testing.T, c *cluster, topics []string, per int) {
	t.Helper()
	createTopicsInSteps(t, c, topics, per, func(rt *kmsg.CreateTopicsRequestTopic) {
		rt.NumPartitions, rt.ReplicationFactor = int32(per), 1
	})
}
