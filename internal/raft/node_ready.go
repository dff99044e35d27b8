package raft

import (
	"bytes"
	"fmt"
	"time"

	etcdraft "go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"

	"gregor/internal/record"
)

// handleReady persists, sends, applies, in that order (etcd raft's contract
// for synchronous storage).
func (n *Node) handleReady(rd etcdraft.Ready) error {
	if rd.SoftState != nil {
		n.lead, n.raftState = rd.SoftState.Lead, rd.SoftState.RaftState
		n.timeElection()
	}
	if !etcdraft.IsEmptySnap(rd.Snapshot) {
		if err := n.installSnapshot(rd.Snapshot); err != nil {
			return err
		}
	}
	if len(rd.Entries) > 0 {
		if err := n.persistEntries(rd.Entries); err != nil {
			return err
		}
	}
	if !etcdraft.IsEmptyHardState(rd.HardState) && !n.soleVoterCommitOnly(rd.HardState) {
		commitEnd, _ := n.offsets.end(rd.HardState.Commit)
		st := hardStateFile(n.cfg.ClusterID, rd.HardState, n.leaderNodeID(), n.cfg.Voters, commitEnd-1)
		if err := writeQuorumState(n.cfg.Dir, st); err != nil {
			return err
		}
		n.storedLeader = st.LeaderID
	}
	if !etcdraft.IsEmptyHardState(rd.HardState) {
		n.hardState = rd.HardState
		if err := n.storage.SetHardState(rd.HardState); err != nil {
			return err
		}
	}
	if len(rd.Messages) > 0 {
		n.cfg.Transport.Send(rd.Messages)
	}
	// Leadership: a lost leadership fails the waiting appends; another
	// node's leadership is reported at once, this node's only once its
	// first entry of the term is applied (in apply).
	if n.raftState != etcdraft.StateLeader && len(n.pending) > 0 {
		n.failPending(ErrNotLeader)
	}
	if n.lead != RaftID(n.cfg.NodeID) {
		n.notifyLeader(n.leaderNodeID(), int32(n.hardState.Term))
	}
	if !etcdraft.IsEmptySnap(rd.Snapshot) {
		if err := n.applySnapshot(rd.Snapshot); err != nil {
			return err
		}
	}
	if err := n.apply(rd.CommittedEntries); err != nil {
		return err
	}
	n.rn.Advance(rd)
	return nil
}

// soleVoterCommitOnly reports a hard state that differs from the stored one
// only in its commit index (same term, vote and leader), on a one-voter
// quorum. Its write is skipped: such a node reloads its whole log as
// committed (NewNode), so the write would add two fsyncs to every append
// and protect nothing.
func (n *Node) soleVoterCommitOnly(hs raftpb.HardState) bool {
	return len(n.cfg.Voters) == 1 && hs.Term == n.hardState.Term && hs.Vote == n.hardState.Vote &&
		n.leaderNodeID() == n.storedLeader
}

func (n *Node) leaderNodeID() int32 {
	if n.lead == 0 {
		return -1
	}
	return NodeIDOf(n.lead)
}

// notifyLeader tells the listeners about a new leader or epoch.
func (n *Node) notifyLeader(leader, epoch int32) {
	cur := leaderAndEpoch{leader, epoch}
	if cur == n.announced {
		return
	}
	n.announced = cur
	if leader >= 0 {
		n.logger.Info("metadata quorum leader", "leader", leader, "epoch", epoch)
	} else {
		n.logger.Info("metadata quorum has no leader", "epoch", epoch)
	}
	n.leaderID.Store(leader)
	n.leaderEpoch.Store(epoch)
	for _, l := range n.listenersCopy() {
		l.HandleLeaderChange(leader, epoch)
	}
	if leader == n.cfg.NodeID {
		select {
		case <-n.ledc:
		default:
			close(n.ledc)
		}
	}
}

// persistEntries writes new entries to the log (cutting a conflicting
// suffix first) and fsyncs them, then adds them to the Raft storage.
func (n *Node) persistEntries(ents []raftpb.Entry) error {
	first := ents[0].Index
	if first <= n.offsets.last() {
		base, ok := n.offsets.end(first - 1)
		if !ok {
			return fmt.Errorf("persist entries: index %d is before the snapshot at %d", first, n.offsets.first)
		}
		if err := n.log.TruncateTo(base); err != nil {
			return fmt.Errorf("truncate the metadata log to %d: %w", base, err)
		}
		n.offsets.truncateAfter(first - 1)
	}
	if first != n.offsets.last()+1 {
		return fmt.Errorf("persist entries: index %d does not follow %d", first, n.offsets.last())
	}
	now := n.cfg.Now().UnixMilli()
	base, _ := n.offsets.end(first - 1)
	var buf []byte
	ends := make([]int64, 0, len(ents))
	fetched := 0 // data records that came from the leader
	for _, e := range ents {
		b, err := entryBatch(e, base, n.leaderNodeID(), n.cfg.Voters, now)
		if err != nil {
			return fmt.Errorf("persist entries: %w", err)
		}
		h, _ := record.ParseHeader(b)
		base = h.NextOffset()
		ends = append(ends, base)
		buf = append(buf, b...)
		if !h.IsControl() && n.raftState != etcdraft.StateLeader {
			fetched += int(h.NumRecords)
		}
	}
	if _, err := n.log.AppendAsFollower(buf); err != nil {
		return fmt.Errorf("persist entries: %w", err)
	}
	if err := n.log.Flush(); err != nil {
		return fmt.Errorf("persist entries: %w", err)
	}
	n.offsets.ends = append(n.offsets.ends, ends...)
	if err := n.storage.Append(ents); err != nil {
		return fmt.Errorf("persist entries: %w", err)
	}
	if fetched > 0 && n.cfg.OnFetchedRecords != nil {
		n.cfg.OnFetchedRecords(fetched)
	}
	return nil
}

// timeElection follows the leader this node knows: it notes when it knows
// none (at start, or after losing it) and reports to OnElection how long
// that lasted once it knows one again.
func (n *Node) timeElection() {
	switch {
	case n.lead == 0 && n.leaderlessSince.IsZero():
		n.leaderlessSince = n.cfg.Now()
	case n.lead != 0 && !n.leaderlessSince.IsZero():
		if n.cfg.OnElection != nil {
			n.cfg.OnElection(n.cfg.Now().Sub(n.leaderlessSince))
		}
		n.leaderlessSince = time.Time{}
	}
}

// apply hands committed entries to the listeners, answers the appends they
// complete, announces this node's leadership once its term's first entry is
// applied, and takes a snapshot when enough has been applied.
func (n *Node) apply(ents []raftpb.Entry) error {
	if len(ents) == 0 {
		return nil
	}
	ls := n.listenersCopy()
	for _, e := range ents {
		if e.Index <= n.applied {
			continue
		}
		base, ok := n.offsets.end(e.Index - 1)
		if !ok {
			return fmt.Errorf("apply entry %d: no offset known", e.Index)
		}
		var last, ts int64
		if len(e.Data) > 0 {
			b, err := decodeEntry(e, base)
			if err != nil {
				return fmt.Errorf("apply: %w", err)
			}
			for _, l := range ls {
				l.HandleCommit(b)
			}
			last, ts = b.LastOffset, b.AppendTimestamp
			n.newBytes += int64(len(e.Data))
		}
		n.applied = e.Index
		end, _ := n.offsets.end(e.Index)
		n.highWatermark.Store(end)
		n.log.SetHighWatermark(end)
		n.completePending(e, last)
		if n.raftState == etcdraft.StateLeader && e.Term == n.hardState.Term && n.lead == RaftID(n.cfg.NodeID) {
			n.notifyLeader(n.cfg.NodeID, int32(e.Term))
		}
		if len(e.Data) > 0 {
			n.maybeSnapshot(e, end, ts)
		}
	}
	return nil
}

// completePending answers the appends that entry e settles: its own (FIFO,
// same bytes), and any of an earlier term, which can no longer commit.
func (n *Node) completePending(e raftpb.Entry, last int64) {
	for len(n.pending) > 0 {
		p := n.pending[0]
		switch {
		case p.term < e.Term:
			p.done <- proposalResult{err: ErrNotLeader}
		case p.term == e.Term && len(e.Data) > 0 && bytes.Equal(p.data, e.Data):
			p.done <- proposalResult{lastOffset: last}
		default:
			return
		}
		n.pending = n.pending[1:]
	}
}
