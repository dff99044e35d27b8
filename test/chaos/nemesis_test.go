//go:build chaos

package chaos

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// Fault kinds the nemesis injects.
const (
	faultKill          = "kill"           // kill -9 a partition's leader (or a group's coordinator), restart it
	faultPauseLeader   = "pause-leader"   // SIGSTOP a leader, then SIGCONT
	faultPauseFollower = "pause-follower" // SIGSTOP a follower, then SIGCONT
	faultPartition     = "partition"      // cut a leader off from everyone, then heal
	faultDiskFull      = "disk-full"      // fill a leader's tmpfs log.dir, free it, restart if the dir went offline
	faultSlowDisk      = "slow-disk"      // make a leader's or a follower's slowfs log.dir slow, then fast again
)

var faultKinds = []string{faultKill, faultPauseLeader, faultPauseFollower, faultPartition, faultDiskFull, faultSlowDisk}

// A slow disk takes 100–300 ms per write, fsync and uncached read, one
// at a time: a few I/Os a second for the third of the node's replicas on
// that dir, so appends queue and a produce request or a follower's fetch
// round takes seconds (the disk stays busy for the whole hold). It is held
// longer than the other faults, 10–40 s, so that backlogs build up. The
// ISR does not shrink at this latency, rightly: a follower that keeps
// fetching is caught up by Kafka's rule unless one fetch round takes
// replica.lag.time.max.ms (30 s).
const (
	slowDiskLatencyMin = 100 * time.Millisecond
	slowDiskLatencyMax = 300 * time.Millisecond
	slowDiskHoldMin    = 10 * time.Second
	slowDiskHoldMax    = 40 * time.Second
)

// nemesis injects one fault at a time: it picks a kind (every kind once in
// a shuffled round, then again), a partition whose leader or follower is
// the target (half the time the __consumer_offsets partition of one of
// the workloads' groups, so coordinators are hit), holds the fault for a
// random while, heals it and waits for the cluster to be whole again.
type nemesis struct {
	c   *cluster
	h   *History
	rng *rand.Rand

	order       []string
	injected    int
	unhealed    []string // faults after which the cluster was not whole within wholeWithin, and why
	unavailable []string // ... nor available within availableWithin more
}

func (n *nemesis) nextKind() string {
	if len(n.order) == 0 {
		for _, k := range faultKinds {
			if k != faultSlowDisk || !n.c.noSlowDisk {
				n.order = append(n.order, k)
			}
		}
		n.rng.Shuffle(len(n.order), func(i, j int) { n.order[i], n.order[j] = n.order[j], n.order[i] })
	}
	k := n.order[0]
	n.order = n.order[1:]
	return k
}

// target picks a partition and returns its leader and one follower.
func (n *nemesis) target() (subject string, leader, follower *node) {
	leader = n.c.nodes[n.rng.IntN(3)]
	follower = n.c.nodes[(int(leader.id)+n.rng.IntN(2))%3]
	subject = "a random node"
	m, err := n.c.metadata()
	if err != nil {
		return subject, leader, follower
	}
	var topic string
	var partition int32
	if n.rng.IntN(2) == 0 {
		groups := append([]string{etlGroup}, queueGroups...)
		g := groups[n.rng.IntN(len(groups))]
		topic, partition = "__consumer_offsets", int32(javaHashCode(g)&0x7fffffff)%6
		subject = "coordinator of group " + g
	} else {
		topics := []string{queueTopic, txnIn, txnOut, "__transaction_state"}
		topic = topics[n.rng.IntN(len(topics))]
		td, ok := m.Topics[topic]
		if !ok || len(td.Partitions) == 0 {
			return subject, leader, follower
		}
		partition = int32(n.rng.IntN(len(td.Partitions)))
		subject = fmt.Sprintf("%s/%d", topic, partition)
	}
	p, ok := m.Topics[topic].Partitions[partition]
	if !ok || p.Leader < 0 {
		return subject, leader, follower
	}
	leader = n.c.node(p.Leader)
	for _, r := range p.Replicas {
		if r != p.Leader {
			follower = n.c.node(r)
			if n.rng.IntN(2) == 0 {
				break
			}
		}
	}
	return subject, leader, follower
}

// run injects faults until count are done or stop is closed.
func (n *nemesis) run(count int, stop <-chan struct{}) {
	for i := 0; i < count; i++ {
		select {
		case <-stop:
			return
		default:
		}
		n.one(i)
		select {
		case <-stop:
			return
		case <-time.After(time.Duration(500+n.rng.IntN(1500)) * time.Millisecond):
		}
	}
}

func (n *nemesis) one(i int) {
	kind := n.nextKind()
	subject, leader, follower := n.target()
	victim := leader
	if kind == faultPauseFollower {
		victim = follower
	}
	hold := time.Duration(1000+n.rng.IntN(5000)) * time.Millisecond
	var latency time.Duration
	var waitedBefore int64
	if kind == faultSlowDisk {
		if n.rng.IntN(2) == 0 {
			victim = follower
		}
		latency = slowDiskLatencyMin + time.Duration(n.rng.Int64N(int64(slowDiskLatencyMax-slowDiskLatencyMin)))
		hold = slowDiskHoldMin + time.Duration(n.rng.Int64N(int64(slowDiskHoldMax-slowDiskHoldMin)))
	}
	invoke := n.h.Now()
	offlineBefore := victim.logCount("log dir offline")
	var err error
	switch kind {
	case faultKill:
		victim.kill9()
	case faultPauseLeader, faultPauseFollower:
		err = victim.pause()
	case faultPartition:
		err = victim.partition()
	case faultDiskFull:
		err = victim.fillDisk()
	case faultSlowDisk:
		waitedBefore = victim.slowDisk(latency)
	}
	where := fmt.Sprintf("node %d (%s), held %v", victim.id, subject, hold.Round(time.Millisecond))
	if kind == faultSlowDisk {
		where += fmt.Sprintf(", %v per I/O", latency.Round(time.Millisecond))
	}
	if err != nil {
		n.c.t.Logf("fault %d %s on %s: %v", i, kind, where, err)
		return
	}
	n.injected++
	n.h.Add(Op{Process: "nemesis", F: FFault, Outcome: OK, Invoke: invoke, Value: kind, Err: where})
	n.c.t.Logf("fault %d: %s on %s", i, kind, where)
	time.Sleep(hold) // the fault's duration: time passing is the point
	switch kind {
	case faultKill:
		victim.start()
	case faultPauseLeader, faultPauseFollower:
		err = victim.resume()
	case faultPartition:
		err = victim.heal()
	case faultDiskFull:
		err = victim.freeDisk()
		if victim.logCount("log dir offline") > offlineBefore {
			// Kafka's rule: a failed log dir comes back with a restart.
			victim.stop()
			victim.start()
		}
	case faultSlowDisk:
		waited := victim.slowDisk(0) - waitedBefore
		n.c.t.Logf("slow disk of node %d healed: %d I/Os waited %v each", victim.id, waited, latency.Round(time.Millisecond))
	}
	if err != nil {
		n.c.t.Fatalf("heal %s on node %d: %v", kind, victim.id, err)
	}
	n.waitWhole()
}

// wholeWithin is how long a healed cluster may take to be whole again: a
// restarted node re-registers (after its old session expires) and every
// follower catches up and rejoins its ISRs. Past it the run records the
// fault as not healed and waits (availableWithin) only until every
// partition has a leader and min.insync.replicas in its ISR, so that one
// replica that never comes back does not stall the whole run.
const (
	wholeWithin     = 45 * time.Second
	availableWithin = 90 * time.Second
)

// waitWhole waits until all three brokers are registered and every
// partition's ISR is complete again.
func (n *nemesis) waitWhole() {
	start := time.Now()
	err := poll(wholeWithin, n.c.healthy)
	if err == nil {
		n.c.t.Logf("whole again after %v", time.Since(start).Round(100*time.Millisecond))
		return
	}
	n.unhealed = append(n.unhealed, fmt.Sprintf("after fault %d: %v", n.injected, err))
	n.c.t.Logf("the cluster was not whole within %v of healing: %v", wholeWithin, err)
	if err := poll(availableWithin, n.c.available); err != nil {
		n.unavailable = append(n.unavailable, fmt.Sprintf("after fault %d: %v", n.injected, err))
		n.c.t.Logf("the cluster was not available within %v more: %v", availableWithin, err)
	}
}

// healAll ends every fault still in place (at the end of a run).
func (n *nemesis) healAll() {
	for _, v := range n.c.nodes {
		if v.cutOff {
			v.heal()
		}
		if v.filled {
			v.freeDisk()
		}
		if v.slowed {
			v.slowDisk(0)
		}
		v.mu.Lock()
		paused := v.paused
		v.mu.Unlock()
		if paused {
			v.resume()
		}
		if !v.running() {
			v.start()
		}
	}
}
