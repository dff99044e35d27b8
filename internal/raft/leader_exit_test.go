package raft

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// fakeProbe is a LeaderProbe whose answers the test sets.
type fakeProbe struct {
	mu     sync.Mutex
	gone   map[int32]bool
	probed map[int32]int
}

func newFakeProbe() *fakeProbe {
	return &fakeProbe{gone: map[int32]bool{}, probed: map[int32]int{}}
}

func (p *fakeProbe) probe(_ context.Context, voter int32) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.probed[voter]++
	return p.gone[voter]
}

func (p *fakeProbe) set(voter int32, gone bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.gone[voter] = gone
}

func (p *fakeProbe) count(voter int32) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.probed[voter]
}

// exitCluster starts three voters whose election timeout is far longer than
// any test runs, so only an election on the leader's exit can replace a
// leader; node 1 is made leader by a campaign.
func exitCluster(t *testing.T, probe *fakeProbe) *testCluster {
	c := newTestCluster(t, 1, 2, 3)
	c.tweak = func(cfg *NodeConfig) {
		cfg.ElectionTimeout = time.Hour
		cfg.LeaderProbe = probe.probe
	}
	for _, id := range c.voters {
		c.start(id)
	}
	c.nodes[1].onLoop(func() {
		if err := c.nodes[1].rn.Campaign(); err != nil {
			t.Errorf("campaign: %v", err)
		}
	})
	if l := c.waitLeader(); l != 1 {
		t.Fatalf("leader %d, want 1", l)
	}
	last := c.append(featureRecords())
	c.waitConverged(last, 1, 2, 3)
	return c
}

// waitFollowing waits until id's raft state follows leader.
func waitFollowing(c *testCluster, id, leader int32) {
	c.t.Helper()
	waitFor(c.t, "node following the leader", func() bool {
		var ok bool
		c.nodes[id].onLoop(func() { ok = c.nodes[id].lead == RaftID(leader) })
		return ok
	})
}

// When the leader's connections close and the probe says its process is
// gone, the lowest surviving voter is elected at once (the election timeout,
// an hour here, never runs out), and the other survivor does not split the
// vote.
func TestNodeElectionOnLeaderExit(t *testing.T) {
	defer goleak.VerifyNone(t)
	probe := newFakeProbe()
	c := exitCluster(t, probe)
	defer c.shutdown()
	_, oldEpoch := c.nodes[1].Leader()
	waitFollowing(c, 2, 1)
	waitFollowing(c, 3, 1)
	conns := map[int32]chan struct{}{2: make(chan struct{}), 3: make(chan struct{})}
	for id, ch := range conns {
		c.nodes[id].WatchPeerConnection(1, ch)
		c.nodes[id].WatchPeerConnection(1, ch) // the same connection again: one watch
	}
	c.stop(1)
	probe.set(1, true)
	for _, ch := range conns {
		close(ch)
	}
	if l := c.waitLeader(2, 3); l != 2 {
		t.Fatalf("leader %d after the exit, want 2 (the lowest survivor)", l)
	}
	if _, epoch := c.nodes[2].Leader(); epoch != oldEpoch+1 {
		t.Fatalf("epoch %d after the exit, want %d (one election)", epoch, oldEpoch+1)
	}
	last := c.append(topicRecords("after-exit", 2, 1), 2, 3)
	c.waitConverged(last, 2, 3)
}

// A leader that closes a connection but whose listener still answers is
// left alone, and so is a close from a voter that is not the leader.
func TestNodeNoElectionWhileLeaderListens(t *testing.T) {
	defer goleak.VerifyNone(t)
	probe := newFakeProbe()
	c := exitCluster(t, probe)
	defer c.shutdown()
	_, epoch := c.nodes[1].Leader()
	waitFollowing(c, 2, 1)

	fromLeader := make(chan struct{})
	c.nodes[2].WatchPeerConnection(1, fromLeader)
	close(fromLeader)
	waitFor(t, "the leader probed", func() bool { return probe.count(1) == 1 })

	fromFollower := make(chan struct{})
	c.nodes[2].WatchPeerConnection(3, fromFollower)
	probe.set(3, true)
	close(fromFollower)

	// A replaced connection's later close says nothing either.
	replaced := make(chan struct{})
	c.nodes[3].WatchPeerConnection(1, replaced)
	c.nodes[3].WatchPeerConnection(1, make(chan struct{}))
	probe.set(1, true)
	close(replaced)

	last := c.append(topicRecords("still-leader", 2, 1), 1)
	c.waitConverged(last, 1, 2, 3)
	if l, e := c.nodes[2].Leader(); l != 1 || e != epoch {
		t.Fatalf("node 2 sees leader %d epoch %d, want 1 epoch %d", l, e, epoch)
	}
	if n := probe.count(3); n != 0 {
		t.Fatalf("a follower's closed connection was probed %d times", n)
	}
}

// ProbeGone reports a refused dial as gone and a listening peer as not.
func TestNetTransportProbeGone(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := closedLn.Addr().String()
	closedLn.Close()
	defer ln.Close()
	tr := NewNetTransport(NetTransportConfig{NodeID: 1, Peers: map[int32]string{2: ln.Addr().String(), 3: closedAddr},
		RequestTimeout: 5 * time.Second, Logger: quietLogger()})
	ctx := context.Background()
	if tr.ProbeGone(ctx, 2) {
		t.Fatal("a listening voter probed as gone")
	}
	if !tr.ProbeGone(ctx, 3) {
		t.Fatal("a voter whose port refuses connections probed as not gone")
	}
	if tr.ProbeGone(ctx, 4) {
		t.Fatal("an unknown voter probed as gone")
	}
}
