//go:build chaos

package chaos

import (
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

var (
	faultCount  = flag.Int("chaos.faults", 10, "faults to inject")
	seedFlag    = flag.Uint64("chaos.seed", 0, "the nemesis's random seed (0: from the clock); printed for reproduction")
	historyPath = flag.String("chaos.history", "", "write the history here (JSON lines); on failure it is written to the cluster's kept directory anyway")
)

// TestChaos runs the three workloads (an idempotent acks=all queue with a
// reader, consumer groups committing offsets, transactional
// read-process-write with a read_committed reader) on three nodes while
// the nemesis injects -chaos.faults faults, heals the cluster, reads
// everything back and checks the history.
func TestChaos(t *testing.T) {
	seed := *seedFlag
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (rerun: -chaos.seed=%d -chaos.faults=%d)", seed, seed, *faultCount)
	start := time.Now()
	c := startCluster(t)
	for _, tp := range []struct {
		name       string
		partitions int32
	}{{queueTopic, 6}, {txnIn, 3}, {txnOut, 3}} {
		c.createTopic(tp.name, tp.partitions, nil)
	}
	h := NewHistory()
	w := startWorkloads(c, h, seed)
	// The internal topics appear as the workloads first use them.
	c.waitFor("workloads running, cluster whole", 120*time.Second, func() error {
		m, err := c.metadata()
		if err != nil {
			return err
		}
		for _, it := range []string{"__consumer_offsets", "__transaction_state"} {
			if _, ok := m.Topics[it]; !ok {
				return fmt.Errorf("no %s yet", it)
			}
		}
		return c.healthy()
	})
	t.Logf("cluster up and workloads running after %v", time.Since(start).Round(time.Second))
	// The slow-disk fault is only a fault if partitions live on the slow
	// dir: each node's should hold about a third of its replicas.
	for _, n := range c.nodes {
		count, err := n.slowDirPartitions()
		if err != nil || count == 0 {
			t.Fatalf("node %d's slow log.dir %s holds %d partitions (%v)", n.id, n.slowDir, count, err)
		}
		t.Logf("node %d: %d partitions on its slow log.dir", n.id, count)
	}

	nem := &nemesis{c: c, h: h, rng: rand.New(rand.NewPCG(seed, 13))}
	faultsStart := time.Now()
	nem.run(*faultCount, nil)
	nem.healAll()
	nem.waitWhole()
	t.Logf("%d faults in %v", *faultCount, time.Since(faultsStart).Round(time.Second))
	// Quiet time for the workloads, fault-free, before they stop.
	time.Sleep(3 * time.Second)

	inputEnd := map[int32]int64{}
	var processed map[int32]int64
	catchUp := func() error {
		if len(inputEnd) == 0 {
			ends, err := listEnds(c, txnIn)
			if err != nil {
				return err
			}
			inputEnd = ends
		}
		got, ok := w.fetchOffsets("final", etlGroup)
		if !ok {
			return fmt.Errorf("OffsetFetch of %s failed", etlGroup)
		}
		processed = map[int32]int64{}
		for p, end := range inputEnd {
			processed[p] = got[TP{txnIn, p}]
			if end > 0 && got[TP{txnIn, p}] < end {
				return fmt.Errorf("%s/%d: committed %d of %d", txnIn, p, got[TP{txnIn, p}], end)
			}
		}
		return nil
	}
	if err := w.stop(catchUp); err != nil {
		t.Errorf("the read-process-write group did not process all of %s within 180s of the last fault: %v", txnIn, err)
	}
	for _, g := range queueGroups {
		w.fetchOffsets("final", g)
	}

	st := State{Logs: map[TP][]Rec{}}
	for _, topic := range []string{queueTopic, txnIn, txnOut} {
		logs, err := readAll(c, topic)
		if err != nil {
			t.Fatalf("final read of %s: %v", topic, err)
		}
		for tp, recs := range logs {
			st.Logs[tp] = recs
		}
	}
	rep := Check(Config{Queues: []string{queueTopic, txnIn}, TxnInput: txnIn, TxnOutput: txnOut, TxnProcessed: processed}, h.Ops(), st)
	t.Logf("seed %d, %v in all; faults after which the cluster was not whole within %v: %d, not available within %v more: %d\n%s",
		seed, time.Since(start).Round(time.Second), wholeWithin, len(nem.unhealed), availableWithin, len(nem.unavailable), rep.Summary())
	// Not anomalies of the history, but a fault that heals must leave a
	// cluster that heals: every replica back in its ISR.
	for _, u := range nem.unhealed {
		t.Errorf("not whole again %s", u)
	}
	for _, u := range nem.unavailable {
		t.Errorf("not available again %s", u)
	}
	path := *historyPath
	if len(rep.Anomalies) > 0 || t.Failed() {
		t.Errorf("%d anomalies (seed %d)", len(rep.Anomalies), seed)
		if path == "" {
			path = filepath.Join(c.dir, "history.jsonl")
		}
	}
	if path != "" {
		f, err := os.Create(path)
		if err == nil {
			err = h.WriteJSON(f)
			f.Close()
		}
		if err != nil {
			t.Errorf("write history: %v", err)
		} else {
			t.Logf("history: %s", path)
		}
	}
}

// listEnds is each partition's high watermark.
func listEnds(c *cluster, topic string) (map[int32]int64, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.seeds()...))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	listed, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		return nil, err
	}
	ends := map[int32]int64{}
	var perr error
	listed.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			perr = o.Err
		}
		ends[o.Partition] = o.Offset
	})
	return ends, perr
}

// readAll reads every partition of topic from offset 0 to its high
// watermark, read_uncommitted, control records kept.
func readAll(c *cluster, topic string) (map[TP][]Rec, error) {
	ends, err := listEnds(c, topic)
	if err != nil {
		return nil, err
	}
	parts := map[int32]kgo.Offset{}
	out := map[TP][]Rec{}
	for p, end := range ends {
		out[TP{topic, p}] = nil
		if end > 0 {
			parts[p] = kgo.NewOffset().At(0)
		}
	}
	if len(parts) == 0 {
		return out, nil
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.seeds()...), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: parts}),
		kgo.FetchIsolationLevel(kgo.ReadUncommitted()), kgo.KeepControlRecords())
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	reached := func() bool {
		for p, end := range ends {
			recs := out[TP{topic, p}]
			if end > 0 && (len(recs) == 0 || recs[len(recs)-1].Offset < end-1) {
				return false
			}
		}
		return true
	}
	for !reached() {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return nil, fmt.Errorf("not read to %v within 120s", ends)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset >= ends[r.Partition] {
				return
			}
			rec := Rec{Offset: r.Offset, Value: string(r.Value), ProducerID: r.ProducerID,
				Transactional: r.Attrs.IsTransactional(), Control: r.Attrs.IsControl()}
			if rec.Control {
				rec.Value = ""
				// A control record's key: version (int16), type (int16: 0 abort, 1 commit).
				rec.Commit = len(r.Key) >= 4 && binary.BigEndian.Uint16(r.Key[2:4]) == 1
			}
			out[TP{topic, r.Partition}] = append(out[TP{topic, r.Partition}], rec)
		})
	}
	return out, nil
}
