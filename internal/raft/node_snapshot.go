package raft

import (
	"fmt"

	"go.etcd.io/raft/v3/raftpb"
)

// installSnapshot stores a snapshot received from the leader: the file, then
// the log started over at its end offset, then the Raft storage. Listeners
// get it in applySnapshot, after the hard state is written.
func (n *Node) installSnapshot(snap raftpb.Snapshot) error {
	_, pos, err := decodeSnapshot(snap.Data)
	if err != nil {
		return fmt.Errorf("install snapshot: %w", err)
	}
	if pos.raftIndex != snap.Metadata.Index {
		return fmt.Errorf("install snapshot: header index %d, raft index %d", pos.raftIndex, snap.Metadata.Index)
	}
	id := SnapshotID{EndOffset: pos.endOffset, Epoch: int32(snap.Metadata.Term)}
	if err := writeSnapshotFile(n.cfg.Dir, id, snap.Data); err != nil {
		return fmt.Errorf("install snapshot: %w", err)
	}
	if err := n.log.TruncateFullyAndStartAt(id.EndOffset); err != nil {
		return fmt.Errorf("install snapshot: %w", err)
	}
	if err := n.storage.ApplySnapshot(snap); err != nil {
		return fmt.Errorf("install snapshot: %w", err)
	}
	n.offsets.reset(snap.Metadata.Index, id.EndOffset)
	n.prevSnap = snapshotPoint{index: snap.Metadata.Index, end: id.EndOffset}
	n.setLatestSnapshot(id, snap.Data)
	if err := deleteOldSnapshots(n.cfg.Dir); err != nil {
		n.logger.Warn("deleting old snapshots failed", "err", err)
	}
	n.logger.Info("installed metadata snapshot from the leader", "end_offset", id.EndOffset, "epoch", id.Epoch)
	return nil
}

// applySnapshot hands an installed snapshot to the listeners.
func (n *Node) applySnapshot(snap raftpb.Snapshot) error {
	s, err := DecodeSnapshot(snap.Data)
	if err != nil {
		return fmt.Errorf("apply snapshot: %w", err)
	}
	for _, l := range n.listenersCopy() {
		l.HandleSnapshot(s)
	}
	n.applied = snap.Metadata.Index
	n.newBytes = 0
	n.lastSnap = n.cfg.Now()
	n.highWatermark.Store(s.EndOffset)
	n.log.SetHighWatermark(s.EndOffset)
	return nil
}

// maybeSnapshot takes a snapshot after entry e (whose batch ends at end)
// when enough bytes were applied since the last one, or enough time passed
// (Kafka's metadata.log.max.record.bytes.between.snapshots and
// metadata.log.max.snapshot.interval.ms). The log below it is then deleted.
// A failed snapshot is logged; the log stays, so nothing is lost.
func (n *Node) maybeSnapshot(e raftpb.Entry, end, lastTimestamp int64) {
	if n.cfg.Snapshot == nil || n.newBytes == 0 {
		return
	}
	now := n.cfg.Now()
	due := n.newBytes >= n.cfg.SnapshotMaxNewRecordBytes ||
		(n.cfg.SnapshotMaxInterval > 0 && now.Sub(n.lastSnap) >= n.cfg.SnapshotMaxInterval)
	if !due {
		return
	}
	values, ok := n.cfg.Snapshot(end)
	if !ok {
		// The state is not exactly as of this entry; try after the next.
		return
	}
	id := SnapshotID{EndOffset: end, Epoch: int32(e.Term)}
	data, err := encodeSnapshot(id, e.Index, lastTimestamp, now.UnixMilli(), values)
	if err != nil {
		n.logger.Error("encoding a metadata snapshot failed", "err", err)
		return
	}
	if err := writeSnapshotFile(n.cfg.Dir, id, data); err != nil {
		n.logger.Error("writing a metadata snapshot failed", "err", err)
		return
	}
	if _, err := n.storage.CreateSnapshot(e.Index, &n.storage.conf, data); err != nil {
		n.logger.Error("metadata snapshot", "err", err)
		return
	}
	// Entries and log are kept back to the previous snapshot, so a voter or
	// broker a little behind still catches up from the log; behind that it
	// gets this snapshot.
	if prev := n.prevSnap; prev.index > n.offsets.first {
		if err := n.storage.Compact(prev.index); err != nil {
			n.logger.Error("compacting raft storage failed", "err", err)
			return
		}
		n.offsets.compact(prev.index)
		if _, err := n.log.DeleteRecordsBefore(prev.end); err != nil {
			n.logger.Warn("moving the metadata log start to the previous snapshot failed", "err", err)
		}
	}
	n.prevSnap = snapshotPoint{index: e.Index, end: end}
	n.setLatestSnapshot(id, data)
	n.newBytes = 0
	n.lastSnap = now
	if err := deleteOldSnapshots(n.cfg.Dir); err != nil {
		n.logger.Warn("deleting old snapshots failed", "err", err)
	}
	n.logger.Info("took metadata snapshot", "end_offset", id.EndOffset, "epoch", id.Epoch, "records", len(data))
}

// snapshotPoint is a snapshot's last Raft index and end offset.
type snapshotPoint struct {
	index uint64
	end   int64
}

func (n *Node) setLatestSnapshot(id SnapshotID, data []byte) {
	n.snapMu.Lock()
	defer n.snapMu.Unlock()
	n.snapID, n.snapData = id, data
}

// LatestSnapshot returns the newest snapshot's id and file bytes.
func (n *Node) LatestSnapshot() (id SnapshotID, data []byte, ok bool) {
	n.snapMu.Lock()
	defer n.snapMu.Unlock()
	return n.snapID, n.snapData, n.snapData != nil
}
