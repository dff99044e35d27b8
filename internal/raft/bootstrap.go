package raft

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"gregor/internal/log"
	"gregor/internal/metadata"
)

// BootstrapCheckpointName is Kafka's bootstrap file in metadata.log.dir
// (BootstrapDirectory): the records `storage format` chose for a new
// cluster (metadata.version, SCRAM credentials from --add-scram), which
// the first active controller writes to the empty metadata log. It is a
// snapshot file at offset 0, epoch 0, outside the log's directory; once
// the log has metadata.version it is not read again.
const BootstrapCheckpointName = "bootstrap.checkpoint"

// WriteBootstrapCheckpoint writes dir/bootstrap.checkpoint atomically.
func WriteBootstrapCheckpoint(dir string, records []metadata.Record) error {
	data, err := encodeSnapshot(SnapshotID{}, 0, 0, time.Now().UnixMilli(), metadata.EncodeAll(records))
	if err != nil {
		return fmt.Errorf("write %s: %w", BootstrapCheckpointName, err)
	}
	path := filepath.Join(dir, BootstrapCheckpointName)
	if err := log.WriteFileAtomic(path, path+".tmp", data); err != nil {
		return fmt.Errorf("write %s: %w", BootstrapCheckpointName, err)
	}
	return nil
}

// ReadBootstrapCheckpoint reads dir/bootstrap.checkpoint: its records, or
// none if there is no such file (a node formatted by itself, or before
// Gregor wrote one). A file Kafka's kafka-storage wrote reads too.
func ReadBootstrapCheckpoint(dir string) ([]metadata.Record, error) {
	path := filepath.Join(dir, BootstrapCheckpointName)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", BootstrapCheckpointName, err)
	}
	snap, _, err := decodeSnapshotFile(data, false)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return snap.Records, nil
}
