package raft

import (
	"context"
	"slices"
	"time"

	etcdraft "go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"

	"gregor/internal/rpc"
)

// An election on the leader's exit (gregor.controller.quorum.election.on.leader.exit)
// is Gregor's, not Kafka's: KRaft, like Raft, waits for the election timeout
// (controller.quorum.election.timeout.ms, randomized) before a follower
// campaigns, whatever the reason it stopped hearing from the leader.
//
// Gregor starts the election at once when two facts say the leader's
// process is gone:
//
//  1. the connection the leader's Raft messages came on was closed by the
//     leader's side (the reader saw EOF or a reset: what the kernel sends for
//     every socket of a process that ended, kill -9 included), and
//  2. dials to the leader's controller listener are refused (nothing listens
//     on its port any more).
//
// A live leader keeps its listener open, so (2) does not hold for it, and
// a leader that is merely slow or cut off by the network produces neither
// fact: those cases wait for the election timeout as in Kafka. Safety never
// depends on it: the election is an ordinary Raft election (votes, the log
// up-to-date rule); the facts only decide when it starts. The campaign is
// etcd raft's leadership-transfer campaign (MsgTimeoutNow), which skips
// pre-vote and asks the other voters to vote although they heard from the
// leader within their check-quorum lease; they saw the same connections
// close.
//
// All surviving voters see the leader go at the same moment. Were they all
// to campaign at once, each would vote for itself and nobody would win, so
// they go in turn: the lowest surviving voter id at once, the next one
// exitElectionStagger later, and so on, each only while its term is still
// the dead leader's and it has not heard of anyone else's election (else it
// waits for that election, or for the election timeout).

// exitElectionStagger is how long the n-th surviving voter (by id) waits
// after the (n-1)-th before it campaigns for a leader that exited.
const exitElectionStagger = 150 * time.Millisecond

// LeaderProbe reports whether a voter's process is known to be gone: its
// controller listener refuses connections. It returns false when unsure
// (the dial connected or timed out).
type LeaderProbe func(ctx context.Context, voter int32) bool

// ProbeGone is the NetTransport's LeaderProbe: rpc.ProbeGone of the
// voter's controller listener.
func (t *NetTransport) ProbeGone(ctx context.Context, voter int32) bool {
	addr, ok := t.cfg.Peers[voter]
	return ok && rpc.ProbeGone(ctx, addr, t.cfg.RequestTimeout)
}

// WatchPeerConnection tells the node which connection a voter's Raft
// messages came on (the request's network.Request.PeerClosed; nil: none).
// When the voter closes it while it is this follower's leader, the node
// probes the leader (NodeConfig.LeaderProbe) and, if its process is gone,
// campaigns at once (see exitElectionStagger). Cheap when the connection is
// the one already watched; safe to call from any goroutine.
func (n *Node) WatchPeerConnection(voter int32, closed <-chan struct{}) {
	if closed == nil || n.cfg.LeaderProbe == nil || voter == n.cfg.NodeID {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed || !n.started || n.peerConns[voter].closed == closed {
		return
	}
	if n.peerConns == nil {
		n.peerConns = map[int32]peerConn{}
	}
	if old, ok := n.peerConns[voter]; ok {
		close(old.replaced) // the voter moved to another connection
	}
	pc := peerConn{closed: closed, replaced: make(chan struct{})}
	n.peerConns[voter] = pc
	n.bg.Add(1)
	go func() {
		defer n.bg.Done()
		select {
		case <-closed:
		case <-pc.replaced:
			return
		case <-n.bgCtx.Done():
			return
		}
		n.mu.Lock()
		current := n.peerConns[voter].closed == closed
		if current {
			delete(n.peerConns, voter)
		}
		n.mu.Unlock()
		if current {
			n.onLoop(func() { n.peerClosed(voter) })
		}
	}()
}

// peerConn is the watched connection of a voter: closed is its
// network.Request.PeerClosed, replaced ends the watch when the voter's
// messages come on another connection.
type peerConn struct {
	closed   <-chan struct{}
	replaced chan struct{}
}

// peerClosed runs on the loop when a voter closed the connection its
// messages came on: if it is this follower's leader, probe it.
func (n *Node) peerClosed(voter int32) {
	if n.failed != nil || n.raftState != etcdraft.StateFollower || n.lead != RaftID(voter) {
		return
	}
	term := n.hardState.Term
	delay := exitElectionStagger * time.Duration(n.survivorRank(voter))
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return
	}
	n.bg.Add(1)
	go func() {
		defer n.bg.Done()
		ctx := n.bgCtx
		if !n.cfg.LeaderProbe(ctx, voter) {
			n.logger.Info("the quorum leader closed its connection but its controller listener is not refusing connections; waiting for the election timeout",
				"leader", voter, "term", term)
			return
		}
		if delay > 0 {
			select {
			case <-time.After(delay):
			case <-ctx.Done():
				return
			}
		}
		n.onLoop(func() { n.campaignOnLeaderExit(voter, term) })
	}()
}

// survivorRank is this node's place among the voters other than the
// exited leader, by id (0: the lowest).
func (n *Node) survivorRank(exited int32) int {
	rank := 0
	for _, v := range slices.Sorted(slices.Values(n.cfg.Voters)) {
		if v == n.cfg.NodeID {
			break
		}
		if v != exited {
			rank++
		}
	}
	return rank
}

// campaignOnLeaderExit starts an election if the node is still a follower of
// the exited leader in the same term: nobody else's election has reached it.
func (n *Node) campaignOnLeaderExit(exited int32, term uint64) {
	if n.failed != nil || n.raftState != etcdraft.StateFollower || n.lead != RaftID(exited) || n.hardState.Term != term {
		return
	}
	n.logger.Info("the quorum leader's process is gone (it closed its connection and its controller listener refuses connections); campaigning now",
		"leader", exited, "term", term)
	self := RaftID(n.cfg.NodeID)
	if err := n.rn.Step(raftpb.Message{Type: raftpb.MsgTimeoutNow, From: self, To: self}); err != nil {
		n.logger.Warn("cannot start an election after the leader's exit", "err", err)
	}
}
