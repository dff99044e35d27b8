package raft

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gregor/internal/log"
	"gregor/internal/metadata"
	"gregor/internal/record"
)

// A snapshot file is Kafka's: named <end offset, 20 digits>-<epoch, 10
// digits>.checkpoint in the metadata log's directory (Kafka's Snapshots), and
// holding record batches: a control batch with a SnapshotHeaderRecord, data
// batches of metadata records, a control batch with a SnapshotFooterRecord.
// As Kafka writes them, the batches' offsets start at 0 and their partition
// leader epoch is the snapshot's epoch.
//
// Gregor adds one tagged field to the header record (tag
// snapshotPositionTag, unknown to Kafka, which skips it): the Raft index of
// the snapshot's last entry and the snapshot's end offset. One Raft entry is
// one batch of possibly many records, so the Raft index and the offset are
// different counters, and this pair ties them together after a restart and
// on a follower that receives the snapshot.
const (
	snapshotSuffix        = ".checkpoint"
	snapshotPartialSuffix = ".checkpoint.part"
	snapshotOffsetWidth   = 20
	snapshotEpochWidth    = 10
	// snapshotFilesKept is how many snapshot files stay on disk.
	snapshotFilesKept = 2

	// Kafka's ControlRecordType values for snapshots.
	controlTypeSnapshotHeader = 3
	controlTypeSnapshotFooter = 4
	snapshotHeaderVersion     = 0
	snapshotFooterVersion     = 0
	snapshotPositionTag       = 10000
)

// SnapshotID names a snapshot as Kafka does: the offset after its last record
// (exclusive) and the epoch of that record.
type SnapshotID struct {
	EndOffset int64
	Epoch     int32
}

// snapshotFileName is Kafka's snapshot file name for id.
func snapshotFileName(id SnapshotID) string {
	return fmt.Sprintf("%0*d-%0*d%s", snapshotOffsetWidth, id.EndOffset, snapshotEpochWidth, id.Epoch, snapshotSuffix)
}

// parseSnapshotFileName parses a complete snapshot's file name.
func parseSnapshotFileName(name string) (SnapshotID, bool) {
	base, ok := strings.CutSuffix(name, snapshotSuffix)
	if !ok || len(base) != snapshotOffsetWidth+1+snapshotEpochWidth || base[snapshotOffsetWidth] != '-' {
		return SnapshotID{}, false
	}
	off, err1 := strconv.ParseInt(base[:snapshotOffsetWidth], 10, 64)
	epoch, err2 := strconv.ParseInt(base[snapshotOffsetWidth+1:], 10, 32)
	if err1 != nil || err2 != nil || off < 0 || epoch < 0 {
		return SnapshotID{}, false
	}
	return SnapshotID{EndOffset: off, Epoch: int32(epoch)}, true
}

// listSnapshots returns the complete snapshot files in dir, oldest first, and
// removes partial ones a crash left behind (as Kafka does on start).
func listSnapshots(dir string) ([]SnapshotID, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("list snapshots in %s: %w", dir, err)
	}
	var ids []SnapshotID
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), snapshotPartialSuffix) {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
				return nil, fmt.Errorf("remove partial snapshot: %w", err)
			}
			continue
		}
		if id, ok := parseSnapshotFileName(e.Name()); ok {
			ids = append(ids, id)
		}
	}
	slices.SortFunc(ids, func(a, b SnapshotID) int {
		return cmp.Or(cmp.Compare(a.EndOffset, b.EndOffset), cmp.Compare(a.Epoch, b.Epoch))
	})
	return ids, nil
}

// writeSnapshotFile writes a snapshot atomically: a .part file, fsynced,
// renamed to its final name, directory fsynced.
func writeSnapshotFile(dir string, id SnapshotID, data []byte) error {
	path := filepath.Join(dir, snapshotFileName(id))
	tmp := strings.TrimSuffix(path, snapshotSuffix) + snapshotPartialSuffix
	if err := log.WriteFileAtomic(path, tmp, data); err != nil {
		return fmt.Errorf("write snapshot: %w", err)
	}
	return nil
}

// deleteOldSnapshots keeps the newest snapshotFilesKept snapshot files.
func deleteOldSnapshots(dir string) error {
	ids, err := listSnapshots(dir)
	if err != nil {
		return err
	}
	for len(ids) > snapshotFilesKept {
		if err := os.Remove(filepath.Join(dir, snapshotFileName(ids[0]))); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("delete snapshot: %w", err)
		}
		ids = ids[1:]
	}
	return nil
}

// snapshotPosition is what Gregor's tagged header field carries.
type snapshotPosition struct {
	raftIndex uint64
	endOffset int64
}

// encodeSnapshot builds a snapshot file's bytes.
// values are the encoded records, in order.
func encodeSnapshot(id SnapshotID, raftIndex uint64, lastContainedTimestamp, now int64, values [][]byte) ([]byte, error) {
	opts := func(base int64, control bool) record.BuilderOptions {
		return record.BuilderOptions{BaseOffset: base, Codec: record.CodecNone, ProducerID: record.NoProducerID,
			ProducerEpoch: record.NoProducerEpoch, BaseSequence: record.NoSequence, Control: control,
			PartitionLeaderEpoch: id.Epoch}
	}
	var out []byte
	// Header: SnapshotHeaderRecord v0 (flexible): version, last contained
	// log timestamp, tagged fields.
	value := binary.BigEndian.AppendUint16(nil, snapshotHeaderVersion)
	value = binary.BigEndian.AppendUint64(value, uint64(lastContainedTimestamp))
	value = binary.AppendUvarint(value, 1) // one tagged field
	value = binary.AppendUvarint(value, snapshotPositionTag)
	value = binary.AppendUvarint(value, 16)
	value = binary.BigEndian.AppendUint64(value, raftIndex)
	value = binary.BigEndian.AppendUint64(value, uint64(id.EndOffset))
	raw, err := buildControlBatch(opts(0, true), now, controlTypeSnapshotHeader, value)
	if err != nil {
		return nil, fmt.Errorf("encode snapshot header: %w", err)
	}
	out = append(out, raw...)
	next := int64(1)
	// Data batches, each within KRaft's batch size limit.
	for len(values) > 0 {
		bld := record.NewBuilder(opts(next, false))
		size, n := 0, 0
		for n < len(values) {
			v := values[n]
			if n > 0 && size+len(v)+64 > MaxBatchSizeBytes {
				break
			}
			size += len(v) + 64
			bld.Append(now, nil, v, nil)
			n++
		}
		raw, err := bld.Build()
		if err != nil {
			return nil, fmt.Errorf("encode snapshot batch: %w", err)
		}
		out = append(out, raw...)
		next += int64(n)
		values = values[n:]
	}
	footer := binary.BigEndian.AppendUint16(nil, snapshotFooterVersion)
	footer = binary.AppendUvarint(footer, 0) // no tagged fields
	raw, err = buildControlBatch(opts(next, true), now, controlTypeSnapshotFooter, footer)
	if err != nil {
		return nil, fmt.Errorf("encode snapshot footer: %w", err)
	}
	return append(out, raw...), nil
}

// buildControlBatch builds a control batch of one control record.
func buildControlBatch(opts record.BuilderOptions, now int64, controlType uint16, value []byte) ([]byte, error) {
	key := binary.BigEndian.AppendUint16(nil, controlRecordVersion)
	key = binary.BigEndian.AppendUint16(key, controlType)
	bld := record.NewBuilder(opts)
	bld.Append(now, key, value, nil)
	return bld.Build()
}

// DecodeSnapshot parses a snapshot file's bytes: its records, its end offset
// and epoch. Observers use it on snapshots fetched from a controller.
func DecodeSnapshot(data []byte) (metadata.Snapshot, error) {
	s, _, err := decodeSnapshot(data)
	return s, err
}

// decodeSnapshot parses a snapshot and also returns its Raft position.
func decodeSnapshot(data []byte) (metadata.Snapshot, snapshotPosition, error) {
	return decodeSnapshotFile(data, true)
}

// decodeSnapshotFile parses a snapshot file; needPosition requires
// Gregor's Raft position in the header (every snapshot of the log, not a
// bootstrap file, which Kafka may have written).
func decodeSnapshotFile(data []byte, needPosition bool) (metadata.Snapshot, snapshotPosition, error) {
	var (
		snap                 metadata.Snapshot
		pos                  snapshotPosition
		sawHeader, sawFooter bool
	)
	for rest := data; len(rest) > 0; {
		if sawFooter {
			return snap, pos, errors.New("decode snapshot: batches after the footer")
		}
		h, err := record.ParseHeader(rest)
		if err != nil {
			return snap, pos, fmt.Errorf("decode snapshot: %w", err)
		}
		if h.Size() > len(rest) {
			return snap, pos, fmt.Errorf("decode snapshot: %w", record.ErrShortBatch)
		}
		raw := rest[:h.Size()]
		rest = rest[h.Size():]
		if !h.IsControl() {
			if !sawHeader {
				return snap, pos, errors.New("decode snapshot: data before the header")
			}
			b, err := decodeBatch(raw)
			if err != nil {
				return snap, pos, fmt.Errorf("decode snapshot: %w", err)
			}
			snap.Records = append(snap.Records, b.Records...)
			continue
		}
		_, recs, err := record.ReadRecords(raw)
		if err != nil {
			return snap, pos, fmt.Errorf("decode snapshot: %w", err)
		}
		if len(recs) != 1 || len(recs[0].Key) != 4 {
			return snap, pos, errors.New("decode snapshot: malformed control batch")
		}
		switch typ := binary.BigEndian.Uint16(recs[0].Key[2:]); {
		case typ == controlTypeSnapshotHeader && !sawHeader:
			sawHeader = true
			snap.Epoch = h.PartitionLeaderEpoch
			if pos, err = parseSnapshotHeader(recs[0].Value, needPosition); err != nil {
				return snap, pos, err
			}
			snap.EndOffset = pos.endOffset
		case typ == controlTypeSnapshotFooter && sawHeader:
			sawFooter = true
		default:
			return snap, pos, fmt.Errorf("decode snapshot: unexpected control record type %d", typ)
		}
	}
	if !sawHeader || !sawFooter {
		return snap, pos, errors.New("decode snapshot: missing header or footer")
	}
	return snap, pos, nil
}

// parseSnapshotHeader reads a SnapshotHeaderRecord and Gregor's position
// tag, which must be there if needPosition.
func parseSnapshotHeader(v []byte, needPosition bool) (snapshotPosition, error) {
	var pos snapshotPosition
	bad := errors.New("decode snapshot: malformed header record")
	if len(v) < 10 {
		return pos, bad
	}
	v = v[10:] // version, last contained log timestamp
	n, k := binary.Uvarint(v)
	if k <= 0 {
		return pos, bad
	}
	v = v[k:]
	found := false
	for range n {
		tag, k1 := binary.Uvarint(v)
		if k1 <= 0 {
			return pos, bad
		}
		size, k2 := binary.Uvarint(v[k1:])
		if k2 <= 0 || uint64(len(v)-k1-k2) < size {
			return pos, bad
		}
		field := v[k1+k2 : k1+k2+int(size)]
		v = v[k1+k2+int(size):]
		if tag == snapshotPositionTag && len(field) == 16 {
			pos.raftIndex = binary.BigEndian.Uint64(field)
			pos.endOffset = int64(binary.BigEndian.Uint64(field[8:]))
			found = true
		}
	}
	if needPosition && (!found || pos.endOffset < 0) {
		return pos, errors.New("decode snapshot: no Gregor raft position in the header (not written by Gregor)")
	}
	return pos, nil
}
