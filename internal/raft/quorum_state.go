package raft

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"gregor/internal/log"
)

// QuorumStateFileName is the file holding a voter's Raft hard state, next to
// the log segments (Kafka's FileQuorumStateStore).
const QuorumStateFileName = "quorum-state"

// quorumState is Kafka's QuorumStateData version 0 in its JSON form, field
// order included, so Kafka's tools read Gregor's file and the other way round.
type quorumState struct {
	ClusterID     string  `json:"clusterId"`
	LeaderID      int32   `json:"leaderId"`
	LeaderEpoch   int32   `json:"leaderEpoch"`
	VotedID       int32   `json:"votedId"`
	AppliedOffset int64   `json:"appliedOffset"`
	CurrentVoters []voter `json:"currentVoters"`
	DataVersion   int16   `json:"data_version"`
}

type voter struct {
	VoterID int32 `json:"voterId"`
}

// readQuorumState reads the hard state; a missing file is a fresh voter
// (epoch 0, no leader, no vote).
func readQuorumState(dir string) (quorumState, error) {
	path := filepath.Join(dir, QuorumStateFileName)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return quorumState{LeaderID: -1, VotedID: -1}, nil
	}
	if err != nil {
		return quorumState{}, fmt.Errorf("read %s: %w", path, err)
	}
	st := quorumState{LeaderID: -1, VotedID: -1}
	if err := json.Unmarshal(b, &st); err != nil {
		return quorumState{}, fmt.Errorf("parse %s: %w", path, err)
	}
	if st.DataVersion != 0 && st.DataVersion != 1 {
		return quorumState{}, fmt.Errorf("parse %s: unsupported data_version %d", path, st.DataVersion)
	}
	if st.LeaderEpoch < 0 {
		st.LeaderEpoch = 0
	}
	return st, nil
}

// writeQuorumState replaces the hard state atomically: write a temporary
// file, fsync it, rename it over the old one, fsync the directory. A crash
// leaves either the old or the new state, never a torn one.
func writeQuorumState(dir string, st quorumState) error {
	path := filepath.Join(dir, QuorumStateFileName)
	b, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return log.WriteFileAtomic(path, path+".tmp", b)
}
