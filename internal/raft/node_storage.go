package raft

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/twmb/franz-go/pkg/kmsg"
	etcdraft "go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"

	"gregor/internal/log"
	"gregor/internal/record"
)

// Raft ids and Kafka node ids: etcd raft reserves id 0 for "none", and Kafka
// node ids start at 0, so a node's Raft id is its node id plus one.

// RaftID is the etcd raft id of a Kafka node id.
func RaftID(nodeID int32) uint64 { return uint64(nodeID) + 1 }

// NodeIDOf is the Kafka node id of an etcd raft id; 0 (none) is -1.
func NodeIDOf(raftID uint64) int32 { return int32(raftID) - 1 }

// raftStorage is the entries since the last snapshot in memory (the log is
// small), with the static voter set as the configuration: the voters come
// from controller.quorum.voters, so the log never holds a conf change.
type raftStorage struct {
	*etcdraft.MemoryStorage
	conf raftpb.ConfState
}

func (s *raftStorage) InitialState() (raftpb.HardState, raftpb.ConfState, error) {
	hs, _, err := s.MemoryStorage.InitialState()
	return hs, s.conf, err
}

// entryOffsets maps Raft indexes to offsets. One entry is one batch of one or
// more records, so the index counts batches and the offset counts records;
// ends[i] is the offset after entry first+i. ends[0] belongs to the snapshot
// (or index 0: offset 0).
type entryOffsets struct {
	first uint64
	ends  []int64
}

// end returns the offset after entry index; ok is false when index is
// compacted away or not persisted.
func (o *entryOffsets) end(index uint64) (int64, bool) {
	if index < o.first || index-o.first >= uint64(len(o.ends)) {
		return 0, false
	}
	return o.ends[index-o.first], true
}

func (o *entryOffsets) last() uint64 { return o.first + uint64(len(o.ends)) - 1 }

// truncateAfter forgets entries above index.
func (o *entryOffsets) truncateAfter(index uint64) {
	if index < o.last() {
		o.ends = o.ends[:index-o.first+1]
	}
}

// reset starts over at a snapshot.
func (o *entryOffsets) reset(index uint64, end int64) {
	o.first, o.ends = index, []int64{end}
}

// compact forgets entries below index.
func (o *entryOffsets) compact(index uint64) {
	if index > o.first && index <= o.last() {
		o.ends = append([]int64(nil), o.ends[index-o.first:]...)
		o.first = index
	}
}

// indexOfEnd finds the entry whose end offset is end.
func (o *entryOffsets) indexOfEnd(end int64) (uint64, bool) {
	for i, e := range o.ends {
		if e == end {
			return o.first + uint64(i), true
		}
	}
	return 0, false
}

// loadedState is what a node reads from its directory on open.
type loadedState struct {
	snapshot     *raftpb.Snapshot // nil: none
	snapshotID   SnapshotID
	entries      []raftpb.Entry
	offsets      entryOffsets
	hardState    raftpb.HardState
	quorumLeader int32
}

// loadState reads the latest snapshot, the log after it, and the hard
// state. A log that does not continue the snapshot (a crash while a
// snapshot was installed) is started over at the snapshot.
func loadState(dir string, l *log.Log, qs quorumState) (loadedState, error) {
	var st loadedState
	st.offsets.reset(0, 0)
	ids, err := listSnapshots(dir)
	if err != nil {
		return st, err
	}
	if len(ids) > 0 {
		id := ids[len(ids)-1]
		data, err := os.ReadFile(filepath.Join(dir, snapshotFileName(id)))
		if err != nil {
			return st, fmt.Errorf("read snapshot: %w", err)
		}
		_, pos, err := decodeSnapshot(data)
		if err != nil {
			return st, fmt.Errorf("snapshot %s: %w", snapshotFileName(id), err)
		}
		if pos.endOffset != id.EndOffset {
			return st, fmt.Errorf("snapshot %s: header says end offset %d", snapshotFileName(id), pos.endOffset)
		}
		st.snapshot = &raftpb.Snapshot{Data: data, Metadata: raftpb.SnapshotMetadata{Index: pos.raftIndex, Term: uint64(id.Epoch)}}
		st.snapshotID = id
		st.offsets.reset(pos.raftIndex, id.EndOffset)
		if err := alignLogWithSnapshot(l, id); err != nil {
			return st, err
		}
	} else if start := l.LogStartOffset(); start != 0 {
		return st, fmt.Errorf("metadata log starts at offset %d but there is no snapshot", start)
	}
	// Every batch from the snapshot on is one entry.
	offset, end := st.offsets.ends[0], l.LogEndOffset()
	index := st.offsets.first
	for offset < end {
		info, err := l.Read(offset, readChunkBytes, end, true)
		if err != nil {
			return st, fmt.Errorf("load metadata log at %d: %w", offset, err)
		}
		if len(info.Records) == 0 {
			return st, fmt.Errorf("load metadata log: nothing readable at %d below the log end %d", offset, end)
		}
		for rest := info.Records; len(rest) > 0; {
			h, err := record.ParseHeader(rest)
			if err != nil {
				return st, fmt.Errorf("load metadata log at %d: %w", offset, err)
			}
			if h.BaseOffset != offset {
				return st, fmt.Errorf("load metadata log: batch at %d where %d was expected", h.BaseOffset, offset)
			}
			index++
			e := raftpb.Entry{Type: raftpb.EntryNormal, Term: uint64(h.PartitionLeaderEpoch), Index: index}
			if !h.IsControl() {
				e.Data = normalizeEntryData(rest[:h.Size()])
			}
			st.entries = append(st.entries, e)
			offset = h.NextOffset()
			st.offsets.ends = append(st.offsets.ends, offset)
			rest = rest[h.Size():]
		}
	}
	// The hard state: the term never below the log's, the vote only for
	// the stored term, the commit point from the applied offset.
	hs := raftpb.HardState{Term: uint64(max(qs.LeaderEpoch, 0))}
	if qs.VotedID >= 0 {
		hs.Vote = RaftID(qs.VotedID)
	}
	if n := len(st.entries); n > 0 && st.entries[n-1].Term > hs.Term {
		hs.Term, hs.Vote = st.entries[n-1].Term, 0
	}
	if st.snapshot != nil && st.snapshot.Metadata.Term > hs.Term {
		hs.Term, hs.Vote = st.snapshot.Metadata.Term, 0
	}
	hs.Commit = st.offsets.first
	for i := len(st.offsets.ends) - 1; i >= 0; i-- {
		if st.offsets.ends[i] <= qs.AppliedOffset+1 {
			hs.Commit = st.offsets.first + uint64(i)
			break
		}
	}
	st.hardState = hs
	st.quorumLeader = qs.LeaderID
	return st, nil
}

// alignLogWithSnapshot checks that the log continues the snapshot: it holds
// the snapshot's last batch with the snapshot's epoch (the same history), or
// starts right at its end. Otherwise (a crash while a snapshot from the
// leader was installed) the log starts over, empty, at the snapshot's end.
// Batches before the snapshot stay readable for brokers that follow the log.
func alignLogWithSnapshot(l *log.Log, id SnapshotID) error {
	start, end := l.LogStartOffset(), l.LogEndOffset()
	consistent := start <= id.EndOffset && end >= id.EndOffset
	if consistent && start < id.EndOffset {
		info, err := l.Read(id.EndOffset-1, 1, end, true)
		if err != nil {
			return fmt.Errorf("load metadata log: %w", err)
		}
		h, err := record.ParseHeader(info.Records)
		consistent = err == nil && h.LastOffset() == id.EndOffset-1 && h.PartitionLeaderEpoch == id.Epoch
	}
	if !consistent {
		if err := l.TruncateFullyAndStartAt(id.EndOffset); err != nil {
			return fmt.Errorf("start the metadata log at snapshot %d: %w", id.EndOffset, err)
		}
	}
	return nil
}

// normalizeEntryData is a batch as an entry carries it: a copy with base
// offset 0 and no leader epoch. Both fields lie outside the CRC; the node
// that persists the entry sets them (offset from its position, epoch = term).
func normalizeEntryData(batch []byte) []byte {
	b := append([]byte(nil), batch...)
	record.SetBaseOffset(b, 0)
	record.SetPartitionLeaderEpoch(b, record.NoPartitionLeaderEpoch)
	return b
}

// entryBatch is the batch that stores entry e at offset base: its data batch
// with base offset and epoch set, or for an empty entry (a leader's first of
// its term) a LeaderChangeMessage control batch.
func entryBatch(e raftpb.Entry, base int64, leader int32, voters []int32, now int64) ([]byte, error) {
	if len(e.Data) == 0 {
		msg := kmsg.LeaderChangeMessage{Version: leaderChangeMessageVersion, LeaderID: leader}
		for _, v := range voters {
			msg.Voters = append(msg.Voters, kmsg.LeaderChangeMessageVoter{VoterID: v})
		}
		if leader >= 0 {
			msg.GrantingVoters = []kmsg.LeaderChangeMessageVoter{{VoterID: leader}}
		}
		opts := record.BuilderOptions{BaseOffset: base, Codec: record.CodecNone, ProducerID: record.NoProducerID,
			ProducerEpoch: record.NoProducerEpoch, BaseSequence: record.NoSequence, Control: true,
			PartitionLeaderEpoch: int32(e.Term)}
		raw, err := buildControlBatch(opts, now, controlTypeLeaderChange, msg.AppendTo(nil))
		if err != nil {
			return nil, fmt.Errorf("entry %d: leader change batch: %w", e.Index, err)
		}
		return raw, nil
	}
	h, err := record.ParseHeader(e.Data)
	if err != nil {
		return nil, fmt.Errorf("entry %d: %w", e.Index, err)
	}
	if h.Size() != len(e.Data) || h.IsControl() {
		return nil, fmt.Errorf("entry %d: not one data batch (%d bytes, batch of %d)", e.Index, len(e.Data), h.Size())
	}
	b := append([]byte(nil), e.Data...)
	record.SetBaseOffset(b, base)
	record.SetPartitionLeaderEpoch(b, int32(e.Term))
	return b, nil
}

// entryRecordCount is how many offsets entry e takes.
func entryRecordCount(e raftpb.Entry) (int64, error) {
	if len(e.Data) == 0 {
		return 1, nil
	}
	h, err := record.ParseHeader(e.Data)
	if err != nil {
		return 0, fmt.Errorf("entry %d: %w", e.Index, err)
	}
	return int64(h.LastOffsetDelta) + 1, nil
}

// decodeEntry is a committed data entry as listeners get it.
func decodeEntry(e raftpb.Entry, base int64) (Batch, error) {
	b, err := entryBatch(e, base, -1, nil, 0)
	if err != nil {
		return Batch{}, err
	}
	return decodeBatch(b)
}

// hardStateFile is the quorum-state for a hard state.
func hardStateFile(clusterID string, hs raftpb.HardState, leader int32, voters []int32, appliedOffset int64) quorumState {
	st := quorumState{ClusterID: clusterID, LeaderID: leader, LeaderEpoch: int32(hs.Term), VotedID: -1,
		AppliedOffset: appliedOffset, CurrentVoters: make([]voter, 0, len(voters))}
	if hs.Vote != 0 {
		st.VotedID = NodeIDOf(hs.Vote)
	}
	for _, v := range voters {
		st.CurrentVoters = append(st.CurrentVoters, voter{VoterID: v})
	}
	return st
}

var errNodeFailed = errors.New("metadata quorum node stopped after a storage failure")
