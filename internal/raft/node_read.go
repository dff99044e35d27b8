package raft

import (
	"errors"
	"fmt"
	"slices"

	"go.etcd.io/raft/v3/tracker"

	"gregor/internal/log"
	"gregor/internal/record"
)

// QuorumStatus is what DescribeQuorum reports.
type QuorumStatus struct {
	LeaderID      int32 // -1: unknown
	LeaderEpoch   int32
	HighWatermark int64
	// Voters is known on the leader; elsewhere only this node's log end.
	Voters []VoterStatus
}

// VoterStatus is one voter's replication state as the leader sees it.
type VoterStatus struct {
	ReplicaID    int32
	LogEndOffset int64 // -1: unknown
	// LastFetchTimestamp and LastCaughtUpTimestamp are in ms, -1 unknown.
	LastFetchTimestamp    int64
	LastCaughtUpTimestamp int64
}

// Status reports the quorum as this node sees it.
func (n *Node) Status() QuorumStatus {
	leader, epoch := n.Leader()
	st := QuorumStatus{LeaderID: leader, LeaderEpoch: epoch, HighWatermark: n.HighWatermark()}
	ran := n.onLoop(func() {
		now := n.cfg.Now().UnixMilli()
		self := RaftID(n.cfg.NodeID)
		progress := map[uint64]tracker.Progress{}
		if leader == n.cfg.NodeID {
			for id, pr := range n.rn.Status().Progress {
				progress[id] = pr
			}
		}
		for _, v := range n.cfg.Voters {
			id := RaftID(v)
			vs := VoterStatus{ReplicaID: v, LogEndOffset: -1, LastFetchTimestamp: -1, LastCaughtUpTimestamp: -1}
			switch pr, ok := progress[id]; {
			case id == self:
				vs.LogEndOffset = n.log.LogEndOffset()
				if leader == n.cfg.NodeID {
					vs.LastFetchTimestamp, vs.LastCaughtUpTimestamp = now, now
				}
			case ok:
				if end, known := n.offsets.end(pr.Match); known {
					vs.LogEndOffset = end
				}
				if t, seen := n.peerContact[id]; seen {
					vs.LastFetchTimestamp = t.lastFetch
					if t.lastCaughtUp > 0 {
						vs.LastCaughtUpTimestamp = t.lastCaughtUp
					}
				}
			}
			st.Voters = append(st.Voters, vs)
		}
	})
	if !ran {
		st.Voters = nil
	}
	slices.SortFunc(st.Voters, func(a, b VoterStatus) int { return int(a.ReplicaID) - int(b.ReplicaID) })
	return st
}

// ReadCommitted returns raw record batches (data and control, as stored)
// from offset, at most maxBytes but at least one batch, never past the high
// watermark. It serves brokers that follow the metadata log.
func (n *Node) ReadCommitted(offset int64, maxBytes int) ([]byte, int64, error) {
	hw := n.HighWatermark()
	if offset < n.log.LogStartOffset() {
		return nil, hw, fmt.Errorf("read metadata log at %d (log start %d): %w", offset, n.log.LogStartOffset(), ErrOffsetBehindSnapshot)
	}
	if offset > hw {
		return nil, hw, fmt.Errorf("read metadata log at %d (high watermark %d): %w", offset, hw, ErrOffsetOutOfRange)
	}
	if offset == hw {
		return nil, hw, nil
	}
	info, err := n.log.Read(offset, int32(min(maxBytes, 1<<30)), hw, true)
	if err != nil {
		if errors.Is(err, log.ErrOffsetOutOfRange) && offset < n.log.LogStartOffset() {
			// A snapshot moved the log start meanwhile.
			return nil, hw, fmt.Errorf("read metadata log at %d: %w", offset, ErrOffsetBehindSnapshot)
		}
		return nil, hw, fmt.Errorf("read metadata log at %d: %w", offset, err)
	}
	return info.Records, hw, nil
}

// DecodeBatches walks raw record batches, skips control batches, and hands
// each decoded data batch to fn; fn's error stops the walk.
func DecodeBatches(raw []byte, fn func(Batch) error) error {
	for rest := raw; len(rest) > 0; {
		h, err := record.ParseHeader(rest)
		if err != nil {
			return fmt.Errorf("decode metadata batches: %w", err)
		}
		if h.Size() > len(rest) {
			return fmt.Errorf("decode metadata batches at %d: %w", h.BaseOffset, record.ErrShortBatch)
		}
		batch := rest[:h.Size()]
		rest = rest[h.Size():]
		if h.IsControl() {
			continue
		}
		b, err := decodeBatch(batch)
		if err != nil {
			return fmt.Errorf("decode metadata batches: %w", err)
		}
		if err := fn(b); err != nil {
			return err
		}
	}
	return nil
}
