package raft

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"gregor/internal/metadata"
)

// The conformance suite runs the same scripts against quorums of 1, 3 and 5
// voters: the zero-config node's one-voter quorum is held to what a
// cluster's quorum promises. After every script, every running voter has
// the same state, and every append that was acknowledged is in it.

type conformance struct {
	*testCluster
	acked  map[string]bool // topics whose append was acknowledged
	last   int64           // the highest acknowledged offset
	serial int
}

func TestConformance(t *testing.T) {
	scripts := []struct {
		name string
		run  func(*conformance)
	}{
		{"AppendAndRestartAll", scriptRestartAll},
		{"LoseTheLeader", scriptLoseLeader},
		{"LoseAMinorityUnderTraffic", scriptLoseMinority},
		{"IsolatedLeaderCommitsNothing", scriptIsolatedLeader},
		{"CatchUpThroughASnapshot", scriptSnapshotCatchUp},
		{"TornTail", scriptTornTail},
	}
	for _, size := range []int{1, 3, 5} {
		for _, s := range scripts {
			t.Run(fmt.Sprintf("%s/voters=%d", s.name, size), func(t *testing.T) {
				defer goleak.VerifyNone(t)
				voters := make([]int32, size)
				for i := range voters {
					voters[i] = int32(i + 1)
				}
				c := &conformance{testCluster: newTestCluster(t, voters...), acked: map[string]bool{}}
				defer c.shutdown()
				for _, id := range voters {
					c.start(id)
				}
				c.appendTopics(1) // metadata.version comes with the first topic
				s.run(c)
				c.converge()
			})
		}
	}
}

// running lists the voters that run.
func (c *conformance) running() []int32 {
	var ids []int32
	for _, id := range c.voters {
		if c.nodes[id] != nil {
			ids = append(ids, id)
		}
	}
	return ids
}

// followers are the running voters other than the leader.
func (c *conformance) followers() []int32 {
	leader := c.waitLeader(c.running()...)
	var ids []int32
	for _, id := range c.running() {
		if id != leader {
			ids = append(ids, id)
		}
	}
	return ids
}

// minority is the most voters that may stop with the quorum still serving,
// chosen among the followers.
func (c *conformance) minority() []int32 {
	return c.followers()[:(len(c.voters)-1)/2]
}

func (c *conformance) nextTopic() (string, []metadata.Record) {
	c.serial++
	name := fmt.Sprintf("t%04d", c.serial)
	id := [16]byte{14: byte(c.serial >> 8), 15: byte(c.serial)}
	recs := []metadata.Record{&metadata.TopicRecord{Name: name, TopicID: id},
		&metadata.PartitionRecord{RecordVersion: 1, TopicID: id, Replicas: []int32{1}, ISR: []int32{1},
			RemovingReplicas: []int32{}, AddingReplicas: []int32{}, Leader: 1, Directories: [][16]byte{{}}}}
	if c.serial == 1 {
		recs = append(featureRecords(), recs...)
	}
	return name, recs
}

// appendTopics appends n topics, one batch each, on whoever leads.
func (c *conformance) appendTopics(n int) {
	c.t.Helper()
	for range n {
		name, recs := c.nextTopic()
		c.ack(name, c.append(recs, c.running()...))
	}
}

func (c *conformance) ack(name string, last int64) {
	c.acked[name] = true
	c.last = max(c.last, last)
}

// concurrentAppends appends from several goroutines at once, each retrying
// while leadership moves, as several clients' CreateTopics would.
func (c *conformance) concurrentAppends(workers, each int) {
	c.t.Helper()
	type job struct {
		name string
		recs []metadata.Record
	}
	jobs := make([][]job, workers)
	for w := range workers {
		for range each {
			name, recs := c.nextTopic()
			jobs[w] = append(jobs[w], job{name, recs})
		}
	}
	leader := c.waitLeader(c.running()...)
	nodes := map[int32]*Node{}
	for _, id := range c.running() {
		nodes[id] = c.nodes[id]
	}
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, j := range jobs[w] {
				last, err := appendRetrying(nodes, leader, j.recs)
				mu.Lock()
				if err != nil {
					errs = append(errs, fmt.Errorf("%s: %w", j.name, err))
				} else {
					c.ack(j.name, last)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		c.t.Fatalf("concurrent appends: %v", errs)
	}
}

// appendRetrying appends on the node that leads, trying each in turn
// while none does, until a deadline generous for a loaded machine.
func appendRetrying(nodes map[int32]*Node, hint int32, recs []metadata.Record) (int64, error) {
	deadline := time.Now().Add(30 * time.Second)
	try := hint
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		last, err := nodes[try].Append(ctx, recs)
		cancel()
		if err == nil {
			return last, nil
		}
		if !errors.Is(err, ErrNotLeader) && !errors.Is(err, context.DeadlineExceeded) || time.Now().After(deadline) {
			return 0, err
		}
		for id, n := range nodes {
			if l, _ := n.Leader(); l == id {
				try = id
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// converge waits until every running voter has the acknowledged state,
// then checks they agree and that nothing acknowledged is missing.
func (c *conformance) converge() {
	c.t.Helper()
	ids := c.running()
	c.waitConverged(c.last, ids...)
	for _, id := range ids {
		img := c.loaders[id].Image()
		for name := range c.acked {
			if img.Topics.Topic(name) == nil {
				c.t.Fatalf("voter %d lost acknowledged topic %s (image at %d)", id, name, img.Offset)
			}
		}
	}
	// Voters that saw the whole log as batches saw the same batches.
	var ref []int32
	for _, id := range ids {
		if c.recs[id].snapshotCount() == 0 {
			ref = append(ref, id)
		}
	}
	for _, id := range ref[min(1, len(ref)):] {
		if got, want := c.recs[id].batchIDs(), c.recs[ref[0]].batchIDs(); !reflect.DeepEqual(got, want) {
			c.t.Fatalf("voter %d batches %v, voter %d %v", id, got, ref[0], want)
		}
	}
}

func (c *conformance) restart(ids ...int32) {
	for _, id := range ids {
		c.stop(id)
	}
	for _, id := range ids {
		c.start(id)
	}
}

func scriptRestartAll(c *conformance) {
	c.appendTopics(5)
	c.converge()
	c.restart(c.voters...)
	c.converge()
	c.appendTopics(3)
}

// scriptLoseLeader stops the leader; a quorum that remains goes on
// without it; it comes back and catches up.
func scriptLoseLeader(c *conformance) {
	c.appendTopics(3)
	leader := c.waitLeader()
	c.stop(leader)
	if len(c.voters) > 1 {
		c.appendTopics(3)
		c.converge()
	}
	c.start(leader)
	c.converge()
	c.appendTopics(2)
}

// scriptLoseMinority stops as many followers as the quorum can lose and
// appends concurrently meanwhile.
func scriptLoseMinority(c *conformance) {
	down := c.minority()
	for _, id := range down {
		c.stop(id)
	}
	c.concurrentAppends(4, 8)
	c.converge()
	for _, id := range down {
		c.start(id)
	}
	c.converge()
	c.concurrentAppends(3, 3)
}

// scriptIsolatedLeader cuts the leader off: what it is asked to append
// cannot commit unless it is the whole quorum, and a new leader takes over.
func scriptIsolatedLeader(c *conformance) {
	c.appendTopics(2)
	c.converge()
	leader := c.waitLeader()
	c.net.isolate(leader, c.voters, true)
	name, recs := c.nextTopic()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	last, err := c.nodes[leader].Append(ctx, recs)
	cancel()
	if len(c.voters) == 1 {
		if err != nil {
			c.t.Fatalf("the only voter, alone: %v", err)
		}
		c.ack(name, last)
	} else {
		if err == nil {
			c.t.Fatalf("an isolated leader of %d voters committed offset %d", len(c.voters), last)
		}
		var others []int32
		for _, id := range c.voters {
			if id != leader {
				others = append(others, id)
			}
		}
		n2, recs2 := c.nextTopic()
		c.ack(n2, c.append(recs2, others...))
	}
	c.net.isolate(leader, c.voters, false)
	c.converge()
	if !c.acked[name] {
		for _, id := range c.running() {
			if c.loaders[id].Image().Topics.Topic(name) != nil {
				c.t.Fatalf("voter %d has %s, which was never acknowledged", id, name)
			}
		}
	}
	c.appendTopics(2)
}

// scriptSnapshotCatchUp: a voter comes back after the log it missed was
// compacted into a snapshot (the only voter: after its own snapshot), and
// its state comes through the snapshot.
func scriptSnapshotCatchUp(c *conformance) {
	c.tweak = func(cfg *NodeConfig) {
		cfg.SnapshotMaxNewRecordBytes = 1500
		cfg.SegmentBytes = 1200
	}
	c.restart(c.voters...) // with the tweak
	var victim int32
	if len(c.voters) == 1 {
		victim = c.voters[0]
		c.appendTopics(40)
		c.stop(victim)
	} else {
		victim = c.followers()[0]
		c.stop(victim)
		c.appendTopics(40)
	}
	c.start(victim)
	c.converge()
	if c.recs[victim].snapshotCount() == 0 {
		c.t.Fatalf("voter %d caught up without a snapshot", victim)
	}
	c.appendTopics(2)
}

// scriptTornTail: a voter's log ends in a torn write (a crash mid-append);
// it restarts without the torn batch and rejoins.
func scriptTornTail(c *conformance) {
	c.appendTopics(4)
	c.converge()
	victim := c.voters[len(c.voters)-1]
	c.stop(victim)
	segs, err := filepath.Glob(filepath.Join(c.dir(victim), "*.log"))
	if err != nil || len(segs) == 0 {
		c.t.Fatalf("segments of voter %d: %v %v", victim, segs, err)
	}
	slices.Sort(segs)
	f, err := os.OpenFile(segs[len(segs)-1], os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		c.t.Fatal(err)
	}
	if _, err := f.Write([]byte{0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 1, 0, 0xde, 0xad}); err != nil {
		c.t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		c.t.Fatal(err)
	}
	c.start(victim)
	c.converge()
	c.appendTopics(2)
}
