package raft

import (
	"sync"
	"testing"
	"time"
)

// raftCounts is what the metrics hooks of one node were told.
type raftCounts struct {
	mu        sync.Mutex
	elections []time.Duration
	fetched   int
}

func (r *raftCounts) election(d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.elections = append(r.elections, d)
}

func (r *raftCounts) fetch(n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fetched += n
}

func (r *raftCounts) get() (int, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.elections), r.fetched
}

// Every voter reports the first election and, after the leader stops, the
// next one; followers count the records the leader sent them, the leader
// counts none of its own.
func TestNodeElectionAndFetchMetrics(t *testing.T) {
	c := newTestCluster(t, 1, 2, 3)
	counts := map[int32]*raftCounts{1: {}, 2: {}, 3: {}}
	c.tweak = func(cfg *NodeConfig) {
		rc := counts[cfg.NodeID]
		cfg.OnElection, cfg.OnFetchedRecords = rc.election, rc.fetch
	}
	for _, id := range c.voters {
		c.start(id)
	}
	defer c.shutdown()
	leader := c.waitLeader()
	for _, id := range c.voters {
		waitFor(t, "each voter's first election", func() bool { n, _ := counts[id].get(); return n == 1 })
	}
	recs := featureRecords()
	c.waitConverged(c.append(recs), c.voters...)
	var others []int32
	for _, id := range c.voters {
		if id != leader {
			others = append(others, id)
			waitFor(t, "a follower's fetched records", func() bool { _, f := counts[id].get(); return f >= len(recs) })
		}
	}
	if _, f := counts[leader].get(); f != 0 {
		t.Errorf("the leader counted %d records of its own as fetched", f)
	}

	// Every voter's loop handled ticks and messages, and waited between them.
	for _, id := range c.voters {
		if r := c.nodes[id].PollIdleRatio(); !(r > 0 && r < 1) {
			t.Errorf("node %d: poll idle ratio %v, want in (0, 1)", id, r)
		}
	}

	c.stop(leader)
	c.waitLeader(others...)
	for _, id := range others {
		waitFor(t, "the second election on the others", func() bool { n, _ := counts[id].get(); return n == 2 })
		counts[id].mu.Lock()
		for _, d := range counts[id].elections {
			if d <= 0 {
				t.Errorf("node %d: election of %v", id, d)
			}
		}
		counts[id].mu.Unlock()
	}
}
