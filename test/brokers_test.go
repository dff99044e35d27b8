//go:build e2e

package test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Issue #17 part 3, "brokers come and go", through the gregor binary's
// commands as an operator runs them.

// gregorCLI runs `gregor args... --bootstrap-server addr` and fails the test
// if it fails.
func gregorCLI(t *testing.T, timeout time.Duration, addr string, args ...string) string {
	t.Helper()
	out, err := run(t, timeout, "", gregorBin, append(args, "--bootstrap-server", addr)...)
	if err != nil {
		t.Fatalf("gregor %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// TestDecommissionBrokerUnderLoad: a controller and three brokers, an RF=2
// topic and an idempotent acks=all producer writing continuously. `gregor
// cluster decommission --broker 103` moves every replica off broker 103 and
// returns once it holds none; `--unregister` refuses to unregister it while
// it runs, and does once it is stopped (a second `gregor cluster
// unregister` finds it gone); the producer goes on through it all, and
// every acknowledged record is read back, in order, once.
func TestDecommissionBrokerUnderLoad(t *testing.T) {
	const topic, partitions = "shrinking", 4
	c := startCluster(t, 1, 3)
	adm := kadm.NewClient(c.client())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, partitions, 2, nil, topic); err != nil {
		t.Fatal(err)
	}
	replicasOn := func(broker int32) ([]string, error) {
		md, err := adm.Metadata(ctx)
		if err != nil {
			return nil, err
		}
		var on []string
		for name, td := range md.Topics {
			for p, pd := range td.Partitions {
				if slices.Contains(pd.Replicas, broker) || slices.Contains(pd.ISR, broker) {
					on = append(on, fmt.Sprintf("%s-%d", name, p))
				}
			}
		}
		return on, nil
	}
	c.eventually("every replica in sync", 30*time.Second, func() error {
		md, err := adm.Metadata(ctx, topic)
		if err != nil {
			return err
		}
		for p, pd := range md.Topics[topic].Partitions {
			if len(pd.ISR) != 2 || pd.Leader < 0 {
				return fmt.Errorf("partition %d: leader %d isr %v", p, pd.Leader, pd.ISR)
			}
		}
		return nil
	})
	if on, err := replicasOn(103); err != nil || len(on) == 0 {
		t.Fatalf("broker 103 holds %v (%v): the test needs it to hold replicas", on, err)
	}

	load := startSeqLoad(ctx, c, topic, partitions)
	waitAcks := func(what string, more int) {
		before := load.count(-1)
		c.eventually(what, 60*time.Second, func() error {
			if n := load.count(-1); n < before+more {
				return fmt.Errorf("%d acknowledged, %d before", n, before)
			}
			return nil
		})
	}
	waitAcks("acknowledgements flowing", 2000)

	out := gregorCLI(t, 4*time.Minute, c.brokers[0].addr(), "cluster", "decommission", "--broker", "103", "--wait-timeout", "3m")
	t.Logf("decommission:\n%s", out)
	if !strings.Contains(out, "Broker 103 holds no partition replicas.") {
		t.Fatalf("decommission output:\n%s", out)
	}
	if on, err := replicasOn(103); err != nil || len(on) > 0 {
		t.Fatalf("after decommission broker 103 still holds %v (%v)", on, err)
	}
	waitAcks("acknowledgements after the moves", 2000)

	// A running broker would register again: --unregister refuses it.
	out, err := run(t, time.Minute, "", gregorBin, "cluster", "decommission", "--broker", "103", "--unregister",
		"--bootstrap-server", c.brokers[0].addr())
	if err == nil || !strings.Contains(out, "broker 103 is still running, so it was not unregistered") {
		t.Fatalf("decommission --unregister of a running broker: %v\n%s", err, out)
	}
	c.brokers[2].stop()
	// Stopped, it is fenced once the controller sees its connection close
	// (or its session expire): until then it counts as running.
	c.eventually("the stopped broker unregistered", 30*time.Second, func() error {
		out, err := run(t, time.Minute, "", gregorBin, "cluster", "decommission", "--broker", "103", "--unregister",
			"--bootstrap-server", c.brokers[0].addr())
		if err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		if out != "Broker 103 holds no partition replicas.\nBroker 103 is no longer registered.\n" {
			t.Fatalf("decommission --unregister of the stopped broker: %q", out)
		}
		return nil
	})
	out, err = run(t, time.Minute, "", gregorBin, "cluster", "unregister", "--id", "103", "--bootstrap-server", c.brokers[0].addr())
	if err == nil || !strings.Contains(out, "BROKER_ID_NOT_REGISTERED") {
		t.Fatalf("unregister again: %v\n%s", err, out)
	}
	c.eventually("broker 103 gone from the cluster", 30*time.Second, func() error {
		out, err := run(t, 30*time.Second, "", gregorBin, "cluster", "describe", "--bootstrap-server", c.brokers[0].addr())
		if err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		if !strings.Contains(out, "Brokers: 2") {
			return fmt.Errorf("describe: %s", out)
		}
		return nil
	})
	waitAcks("acknowledgements with broker 103 gone", 2000)
	load.finish(t, ctx)
	load.verify(t, ctx, c)
}

// TestReassignWithThrottle moves a partition holding ~8 MiB from one broker
// to another with `gregor reassign execute`, and back with --throttle
// 1048576, and measures each movement: log bytes over the time from execute
// until `reassign verify` reports it complete (both rates are logged). The
// assertion on the throttled one is generous (at most 2x the throttle, since
// the rate is measured over windows and the first fetches go out before it
// has any); a loaded machine only makes the movement slower. verify then
// removes the throttles. Last, a throttled move is listed while in
// progress and cancelled: the partition keeps its replicas and the
// throttles go.
func TestReassignWithThrottle(t *testing.T) {
	const topic, throttle = "throttled", 1 << 20
	c := startCluster(t, 1, 2)
	adm := kadm.NewClient(c.client())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, 1, -1, nil, topic); err != nil {
		t.Fatal(err)
	}
	var from []int32
	c.eventually("the partition has a leader", 30*time.Second, func() error {
		md, err := adm.Metadata(ctx, topic)
		if err != nil {
			return err
		}
		pd := md.Topics[topic].Partitions[0]
		if len(pd.Replicas) != 1 || pd.Leader != pd.Replicas[0] {
			return fmt.Errorf("replicas %v leader %d", pd.Replicas, pd.Leader)
		}
		from = pd.Replicas
		return nil
	})
	to := int32(101)
	if from[0] == 101 {
		to = 102
	}
	prod := c.client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerBatchMaxBytes(1<<20), kgo.ProducerBatchCompression(kgo.NoCompression()))
	value := strings.Repeat("x", 10_000)
	for i := 0; i < 800; i++ {
		prod.Produce(ctx, &kgo.Record{Topic: topic, Value: []byte(value)}, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Errorf("produce: %v", err)
			}
		})
	}
	if err := prod.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	dirs, err := adm.DescribeBrokerLogDirs(ctx, from[0], kadm.TopicsSet{topic: {0: {}}})
	if err != nil {
		t.Fatal(err)
	}
	var size int64
	dirs.EachPartition(func(p kadm.DescribedLogDirPartition) { size += p.Size })
	if size < 7<<20 {
		t.Fatalf("partition holds %d bytes, want about 8 MiB", size)
	}

	addr := c.brokers[0].addr()
	// move reassigns the partition to broker to (with --throttle when
	// throttle > 0) and returns how long it took until verify reported it
	// complete.
	move := func(to int32, throttle int64) time.Duration {
		t.Helper()
		plan := filepath.Join(t.TempDir(), "plan.json")
		if err := os.WriteFile(plan, []byte(fmt.Sprintf(`{"version":1,"partitions":[{"topic":%q,"partition":0,"replicas":[%d]}]}`, topic, to)), 0o600); err != nil {
			t.Fatal(err)
		}
		args := []string{"reassign", "execute", "--reassignment-json-file", plan}
		if throttle > 0 {
			args = append(args, "--throttle", fmt.Sprint(throttle))
		}
		start := time.Now()
		out := gregorCLI(t, time.Minute, addr, args...)
		if want := fmt.Sprintf("The inter-broker throttle limit was set to %d B/s", throttle); throttle > 0 && !strings.Contains(out, want) {
			t.Fatalf("execute:\n%s", out)
		}
		var elapsed time.Duration
		c.eventually(fmt.Sprintf("move to %d complete", to), 3*time.Minute, func() error {
			out, err := run(t, time.Minute, "", gregorBin, "reassign", "verify", "--reassignment-json-file", plan, "--bootstrap-server", addr)
			if err != nil {
				return fmt.Errorf("%v: %s", err, out)
			}
			if !strings.Contains(out, "is completed.") {
				return fmt.Errorf("verify: %s", out)
			}
			elapsed = time.Since(start)
			if !strings.Contains(out, "Clearing topic-level throttles on topic "+topic) {
				t.Errorf("verify did not clear the throttles:\n%s", out)
			}
			return nil
		})
		return elapsed
	}
	unthrottled := move(to, 0)
	t.Logf("unthrottled: moved %d bytes in %v: %.0f B/s", size, unthrottled.Round(time.Millisecond), float64(size)/unthrottled.Seconds())
	movedTo := to
	to = from[0] // and back, throttled

	elapsed := move(to, throttle)
	rate := float64(size) / elapsed.Seconds()
	t.Logf("throttled: moved %d bytes in %v: %.0f B/s with a throttle of %d B/s (%.2fx)", size, elapsed.Round(time.Millisecond), rate, throttle, rate/throttle)
	if rate > 2*throttle {
		t.Fatalf("moved at %.0f B/s, more than twice the %d B/s throttle", rate, throttle)
	}

	// A throttled move is still in progress right after execute: list
	// shows it, cancel ends it (the partition keeps its replicas from
	// before) and removes the throttles.
	plan := filepath.Join(t.TempDir(), "cancelled.json")
	if err := os.WriteFile(plan, []byte(fmt.Sprintf(`{"version":1,"partitions":[{"topic":%q,"partition":0,"replicas":[%d]}]}`, topic, movedTo)), 0o600); err != nil {
		t.Fatal(err)
	}
	gregorCLI(t, time.Minute, addr, "reassign", "execute", "--reassignment-json-file", plan, "--throttle", fmt.Sprint(throttle))
	if out := gregorCLI(t, time.Minute, addr, "reassign", "list"); !strings.Contains(out, fmt.Sprintf("%s-0: replicas: ", topic)) ||
		!strings.Contains(out, fmt.Sprintf("adding: %d.", movedTo)) {
		t.Fatalf("list during the move:\n%s", out)
	}
	out := gregorCLI(t, time.Minute, addr, "reassign", "cancel", "--reassignment-json-file", plan)
	if !strings.Contains(out, fmt.Sprintf("Successfully cancelled partition reassignment for: %s-0", topic)) ||
		!strings.Contains(out, "Clearing topic-level throttles on topic "+topic) {
		t.Fatalf("cancel:\n%s", out)
	}
	c.eventually("the cancelled move undone", 30*time.Second, func() error {
		md, err := adm.Metadata(ctx, topic)
		if err != nil {
			return err
		}
		if got := md.Topics[topic].Partitions[0].Replicas; !slices.Equal(got, []int32{to}) {
			return fmt.Errorf("replicas %v, want [%d]", got, to)
		}
		return nil
	})

	cfgs, err := adm.DescribeTopicConfigs(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	for _, rc := range cfgs {
		for _, cfg := range rc.Configs {
			if strings.Contains(cfg.Key, "throttled") && cfg.Value != nil && *cfg.Value != "" {
				t.Errorf("%s=%s left after verify and cancel", cfg.Key, *cfg.Value)
			}
		}
	}
	md, err := adm.Metadata(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	if got := md.Topics[topic].Partitions[0].Replicas; !slices.Equal(got, []int32{to}) {
		t.Fatalf("replicas after the move: %v, want [%d]", got, to)
	}
}
