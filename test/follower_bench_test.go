//go:build e2e

package test

// Follower fetch measurements (issue 15, part 1), printed with t.Logf,
// nothing asserted on time. Skipped unless GREGOR_BENCH=1:
//
//	GREGOR_BENCH=1 go test -tags e2e -run 'TestFollowerBench' -v -timeout 30m ./test/
//
// TestFollowerBenchCatchUp: how fast a follower copies a leader's log
// against how fast a consumer reads the same log from the same broker.
// TestFollowerBenchAcksAll: RF=3 acks=all on three brokers against RF=1
// acks=all on one. GREGOR_BENCH_MB (default 512) is the log size of the
// catch-up, GREGOR_BENCH_SECONDS (default 10) each produce phase's length,
// GREGOR_BENCH_ROUNDS (default 2) the rounds; GREGOR_BENCH_OVERRIDES adds
// settings to every node (num.replica.fetchers=3, say); GREGOR_BENCH_BIN
// measures another binary with these benchmarks.

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const fbPartitions = 3

// TestFollowerBenchCatchUp: 1 controller and 2 brokers. A topic of 3
// partitions, all on broker A (RF=1), is filled with GREGOR_BENCH_MB of
// 1 KiB random records (acks=1). Each round: a franz-go consumer reads the
// whole log from A (its time from the first fetch to the last record);
// then the partitions are reassigned to [A, B] and B copies the log (time
// from the reassignment until B's segment files hold every record); then
// B is removed again (reassigned back to [A]) and its copy deleted. Both
// move the same bytes, so the ratio of the rates is the inverse ratio of
// the times.
func TestFollowerBenchCatchUp(t *testing.T) {
	skipUnlessBench(t)
	benchMachine(t)
	mb := rbEnvInt(t, "GREGOR_BENCH_MB", 512)
	rounds := rbEnvInt(t, "GREGOR_BENCH_ROUNDS", 2)
	c := startCluster(t, 1, 2, rbOverrides()...)
	a, b := c.brokers[0], c.brokers[1]
	adm := kadm.NewClient(c.client())
	const topic = "catchup"
	fbCreateOn(t, c, topic, a.id)

	records := mb << 10
	fill := rbProducer(t, c.bootstrap(), false, 5*time.Millisecond, kgo.DefaultProduceTopic(topic))
	value := make([]byte, rbRecordSize)
	rand.Read(value)
	var failed error
	var mu sync.Mutex
	start := time.Now()
	for i := range records {
		fill.Produce(context.Background(), &kgo.Record{Value: value, Partition: int32(i % fbPartitions)}, func(_ *kgo.Record, err error) {
			if err != nil {
				mu.Lock()
				failed = cmpErr(failed, err)
				mu.Unlock()
			}
		})
	}
	if err := fill.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	fill.Close()
	if failed != nil {
		t.Fatalf("fill: %v", failed)
	}
	t.Logf("filled %d MiB in %v", mb, time.Since(start).Round(time.Millisecond))
	ends := fbEndOffsets(t, adm, topic)

	var rows []string
	var ratios []float64
	for round := range rounds {
		consume := fbConsume(t, c, topic, records)
		follow := fbFollow(t, c, adm, topic, ends, a.id, b.id)
		cMBs := float64(mb) * (1 << 20) / consume.Seconds() / 1e6
		fMBs := float64(mb) * (1 << 20) / follow.Seconds() / 1e6
		ratios = append(ratios, fMBs/cMBs)
		row := fmt.Sprintf("round %d: consumer %v (%.1f MB/s)  follower %v (%.1f MB/s)  follower/consumer %.2f",
			round+1, consume.Round(time.Millisecond), cMBs, follow.Round(time.Millisecond), fMBs, fMBs/cMBs)
		rows = append(rows, row)
		t.Log(row)
	}
	slices.Sort(ratios)
	t.Logf("follower catch-up vs consumer read, same leader, %d MiB in %d partitions of 1 KiB records, overrides %v:\n  %s\nRATIO follower_vs_consumer=%.2f (median of %d)",
		mb, fbPartitions, rbOverrides(), strings.Join(rows, "\n  "), ratios[len(ratios)/2], len(ratios))
}

func cmpErr(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

// fbCreateOn creates the topic with every partition on broker id alone.
func fbCreateOn(t *testing.T, c *cluster, topic string, id int32) {
	t.Helper()
	cl := c.client()
	defer cl.Close()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
	for p := range int32(fbPartitions) {
		ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		ra.Partition, ra.Replicas = p, []int32{id}
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
	}
	req.Topics = append(req.Topics, rt)
	req.TimeoutMillis = 30000
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil {
		t.Fatalf("create %s: %v", topic, err)
	}
	adm := kadm.NewClient(cl)
	c.eventually(topic+" has leaders", 30*time.Second, func() error {
		md, err := adm.Metadata(ctx, topic)
		if err != nil {
			return err
		}
		if n := len(md.Topics[topic].Partitions); n != fbPartitions {
			return fmt.Errorf("%d partitions", n)
		}
		for p, pd := range md.Topics[topic].Partitions {
			if pd.Leader != id {
				return fmt.Errorf("partition %d: leader %d", p, pd.Leader)
			}
		}
		return nil
	})
}

// fbEndOffsets is each partition's high watermark.
func fbEndOffsets(t *testing.T, adm *kadm.Client, topic string) map[int32]int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	offs, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int32]int64{}
	offs.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			t.Fatalf("end offset of %d: %v", o.Partition, o.Err)
		}
		out[o.Partition] = o.Offset
	})
	return out
}

// fbConsume reads the whole topic with a fresh franz-go consumer (its
// defaults) and returns the time from its first poll to its last record.
func fbConsume(t *testing.T, c *cluster, topic string, records int) time.Duration {
	t.Helper()
	cl := c.client(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	n := 0
	for n < records {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d records: %v", n, records, err)
		}
		fs.EachError(func(_ string, p int32, err error) { t.Fatalf("consume partition %d: %v", p, err) })
		n += fs.NumRecords()
	}
	return time.Since(start)
}

// fbFollow adds follower to every partition and times until its segment
// files hold every record (ends); it then removes the follower again and
// waits until its copy is gone.
func fbFollow(t *testing.T, c *cluster, adm *kadm.Client, topic string, ends map[int32]int64, leader, follower int32) time.Duration {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	reassign := func(replicas ...int32) {
		var req kadm.AlterPartitionAssignmentsReq
		for p := range int32(fbPartitions) {
			req.Assign(topic, p, replicas)
		}
		resps, err := adm.AlterPartitionAssignments(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if err := resps.Error(); err != nil {
			t.Fatalf("reassign to %v: %v", replicas, err)
		}
	}
	var dir string
	for _, b := range c.brokers {
		if b.id == follower {
			dir = b.dataDir
		}
	}
	tails := map[int32]*rbTail{}
	for p := range int32(fbPartitions) {
		tails[p] = &rbTail{dir: fmt.Sprintf("%s/%s-%d", dir, topic, p)}
	}
	defer func() {
		for _, tl := range tails {
			tl.close()
		}
	}()
	start := time.Now()
	reassign(leader, follower)
	for {
		done := true
		for p, tl := range tails {
			leo, err := tl.read()
			if err != nil || leo < ends[p] {
				done = false
				break
			}
		}
		if done {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("follower %d did not catch up: %v", follower, ctx.Err())
		}
		time.Sleep(5 * time.Millisecond)
	}
	took := time.Since(start)
	// Wait for the reassignment to finish before undoing it.
	c.eventually("reassignment to the follower done", time.Minute, func() error {
		r, err := adm.ListPartitionReassignments(ctx, nil)
		if err != nil {
			return err
		}
		if len(r) > 0 {
			return errors.New("still reassigning")
		}
		return nil
	})
	reassign(leader)
	c.eventually("the follower's copy deleted", time.Minute, func() error {
		for p := range int32(fbPartitions) {
			if _, err := (&rbTail{dir: tails[p].dir}).read(); err == nil {
				return fmt.Errorf("partition %d still on %d", p, follower)
			}
		}
		return nil
	})
	return took
}

// TestFollowerBenchAcksAll: the saturating produce of
// TestReplicationBenchProduce (1 KiB random records, linger 5 ms, acks=all,
// idempotent) into 3 partitions, on one broker with RF=1 and on three
// brokers with RF=3 (min.insync.replicas=2), each with one controller,
// alternating for GREGOR_BENCH_ROUNDS rounds; the ratio is RF=3's rate
// over RF=1's.
//
// Each phase also reports the CPU the brokers and the client (this test
// process) used per GiB acknowledged, and the brokers' CPU per GiB stored
// (acknowledged × RF): on one machine the client and every broker share the
// cores, and each RF=3 broker writes every byte, so when the phases are
// CPU-bound the rate ratio is bounded by the storage work, not by the
// replication protocol. The last ratio compares the bytes stored per broker
// CPU-second with RF=3 and RF=1: how much the replicated path costs per
// byte it stores, beyond storing it.
func TestFollowerBenchAcksAll(t *testing.T) {
	skipUnlessBench(t)
	benchMachine(t)
	dur := time.Duration(rbEnvInt(t, "GREGOR_BENCH_SECONDS", 10)) * time.Second
	rounds := rbEnvInt(t, "GREGOR_BENCH_ROUNDS", 2)
	var rows []string
	var ratios, effRatios []float64
	for round := range rounds {
		var mbs, storedPerCPU [2]float64
		for i, rf := range []int16{1, 3} {
			c := startCluster(t, 1, int(rf), rbOverrides()...)
			adm := kadm.NewClient(c.client())
			var configs map[string]*string
			if rf == 3 {
				configs = map[string]*string{"min.insync.replicas": kadm.StringPtr("2")}
			}
			topic := fmt.Sprintf("acksall-rf%d", rf)
			rbCreate(t, c, adm, topic, fbPartitions, rf, configs)
			brokers0, client0 := brokerCPU(c), selfCPU(t)
			res := rbProduce(t, rbLoad{seeds: c.bootstrap(), topic: topic, acksAll: true, linger: 5 * time.Millisecond, dur: dur})
			brokerSecs, clientSecs := brokerCPU(c)-brokers0, selfCPU(t)-client0
			adm.Close()
			mbs[i] = res.mbs()
			gib := float64(res.records) * rbRecordSize / (1 << 30)
			storedPerCPU[i] = gib * float64(rf) / brokerSecs
			row := fmt.Sprintf("round %d RF=%d on %d broker(s)  %7.1f MB/s  %s  failed %d  CPU s/GiB: brokers %.1f, client %.1f; brokers per GiB stored %.1f",
				round+1, rf, rf, res.mbs(), rbQuantiles(res.lat), res.failed, brokerSecs/gib, clientSecs/gib, brokerSecs/(gib*float64(rf)))
			rows = append(rows, row)
			t.Log(row)
			for _, n := range append(slices.Clone(c.brokers), c.controllers...) {
				n.stop()
			}
		}
		ratios = append(ratios, mbs[1]/mbs[0])
		effRatios = append(effRatios, storedPerCPU[1]/storedPerCPU[0])
	}
	slices.Sort(ratios)
	slices.Sort(effRatios)
	t.Logf("produce acks=all, %d partitions, %d B random values, linger 5ms, %v per phase, overrides %v:\n  %s\nRATIO rf3_3nodes_vs_rf1_1node=%.2f (median of %d)\nRATIO bytes_stored_per_broker_cpu_second_rf3_vs_rf1=%.2f (median of %d)",
		fbPartitions, rbRecordSize, dur, rbOverrides(), strings.Join(rows, "\n  "), ratios[len(ratios)/2], len(ratios), effRatios[len(effRatios)/2], len(effRatios))
}

// brokerCPU is the CPU seconds (user and system) c's brokers have used.
func brokerCPU(c *cluster) float64 {
	var ticks int64
	for _, b := range c.brokers {
		if b.cmd != nil {
			ticks += cpuTicks(b.cmd.Process.Pid)
		}
	}
	return float64(ticks) / 100 // Linux reports clock ticks of 1/100 s to user space
}

// selfCPU is the CPU seconds this test process has used: the client's.
func selfCPU(t *testing.T) float64 {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}
