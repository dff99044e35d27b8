package raft

import (
	"fmt"

	"gregor/internal/metadata"
	"gregor/internal/record"
)

// Kafka's control record types (ControlRecordType) used here.
const (
	controlRecordVersion       = 0
	controlTypeLeaderChange    = 2
	leaderChangeMessageVersion = 0
)

// readChunkBytes bounds one read of the log during replay.
const readChunkBytes = 1 << 20

// decodeBatch turns a data batch of the metadata log into a Batch.
func decodeBatch(raw []byte) (Batch, error) {
	h, recs, err := record.ReadRecords(raw)
	if err != nil {
		return Batch{}, fmt.Errorf("batch at %d: %w", h.BaseOffset, err)
	}
	b := Batch{BaseOffset: h.BaseOffset, LastOffset: h.LastOffset(), Epoch: h.PartitionLeaderEpoch,
		AppendTimestamp: h.MaxTimestamp, Records: make([]metadata.Record, 0, len(recs))}
	for _, r := range recs {
		if int64(r.OffsetDelta) != int64(len(b.Records)) {
			return Batch{}, fmt.Errorf("batch at %d: record offset delta %d out of sequence", h.BaseOffset, r.OffsetDelta)
		}
		m, err := metadata.Decode(r.Value)
		if err != nil {
			return Batch{}, fmt.Errorf("record at offset %d: %w", h.BaseOffset+int64(r.OffsetDelta), err)
		}
		b.Records = append(b.Records, m)
	}
	return b, nil
}
