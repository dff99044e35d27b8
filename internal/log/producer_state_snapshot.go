package log

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"slices"
	"sort"
	"strings"
)

// Producer state snapshots are Kafka's "<20-digit offset>.snapshot" files
// in the partition directory (ProducerStateManager.writeSnapshot): the
// producers as of that offset (exclusive), so that loading a log replays only
// the batches after its latest snapshot. Kafka's format, version 1, big
// endian:
//
//	version              int16 (1)
//	crc                  uint32, CRC32C of everything after this field
//	producer_entries     int32 count, then per producer:
//	  producer_id              int64
//	  epoch                    int16
//	  last_sequence            int32
//	  last_offset              int64
//	  offset_delta             int32
//	  timestamp                int64
//	  coordinator_epoch        int32
//	  current_txn_first_offset int64 (-1: none)
//
// Only each producer's last batch is kept, as in Kafka: after a restart,
// duplicates of that batch are still recognized; older in-flight retries are
// answered OUT_OF_ORDER_SEQUENCE_NUMBER.
const (
	producerSnapshotFileSuffix = ".snapshot"
	producerSnapshotVersion    = 1
	producerSnapshotHeaderSize = 2 + 4 + 4
	producerSnapshotEntrySize  = 8 + 2 + 4 + 8 + 4 + 8 + 4 + 8
	// producerSnapshotCRCStart is where the CRC-covered bytes start.
	producerSnapshotCRCStart = 6
)

// castagnoli is the CRC32C table of the snapshot checksum; a constant table.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// errCorruptSnapshot is Kafka's CorruptSnapshotException: the snapshot is
// dropped and an older one (or the log itself) is used instead.
var errCorruptSnapshot = errors.New("corrupt producer state snapshot")

func producerSnapshotPath(dir string, offset int64) string {
	return segmentFileName(dir, offset, producerSnapshotFileSuffix)
}

// producerSnapshotOffsets returns the offsets of the snapshot files among
// a directory's entries, in order.
func producerSnapshotOffsets(entries []os.DirEntry) []int64 {
	var offsets []int64
	for _, e := range entries {
		name := e.Name()
		if !e.Type().IsRegular() || !strings.HasSuffix(name, producerSnapshotFileSuffix) {
			continue
		}
		if off, ok := parseSegmentBase(name); ok {
			offsets = append(offsets, off)
		}
	}
	slices.Sort(offsets)
	return offsets
}

// encodeProducerSnapshot serializes the producers, ordered by id.
func encodeProducerSnapshot(producers map[int64]*producerStateEntry) []byte {
	ids := make([]int64, 0, len(producers))
	for id := range producers {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	b := make([]byte, producerSnapshotHeaderSize, producerSnapshotHeaderSize+len(ids)*producerSnapshotEntrySize)
	binary.BigEndian.PutUint16(b[0:], producerSnapshotVersion)
	binary.BigEndian.PutUint32(b[6:], uint32(len(ids)))
	for _, id := range ids {
		e := producers[id]
		b = binary.BigEndian.AppendUint64(b, uint64(id))
		b = binary.BigEndian.AppendUint16(b, uint16(e.epoch))
		b = binary.BigEndian.AppendUint32(b, uint32(e.lastSeq()))
		b = binary.BigEndian.AppendUint64(b, uint64(e.lastDataOffset()))
		b = binary.BigEndian.AppendUint32(b, uint32(e.lastOffsetDelta()))
		b = binary.BigEndian.AppendUint64(b, uint64(e.lastTimestamp))
		b = binary.BigEndian.AppendUint32(b, uint32(e.coordinatorEpoch))
		b = binary.BigEndian.AppendUint64(b, uint64(e.currentTxnFirstOffset))
	}
	binary.BigEndian.PutUint32(b[2:], crc32.Checksum(b[producerSnapshotCRCStart:], castagnoli))
	return b
}

// decodeProducerSnapshot parses a snapshot file's bytes (Kafka's
// readSnapshot). A producer whose last offset is negative has no batch.
func decodeProducerSnapshot(b []byte) ([]*producerStateEntry, error) {
	if len(b) < producerSnapshotHeaderSize {
		return nil, fmt.Errorf("%w: %d bytes, shorter than the header", errCorruptSnapshot, len(b))
	}
	if v := int16(binary.BigEndian.Uint16(b)); v != producerSnapshotVersion {
		return nil, fmt.Errorf("%w: unknown file version %d", errCorruptSnapshot, v)
	}
	if stored, computed := binary.BigEndian.Uint32(b[2:]), crc32.Checksum(b[producerSnapshotCRCStart:], castagnoli); stored != computed {
		return nil, fmt.Errorf("%w: stored crc %d, computed %d", errCorruptSnapshot, stored, computed)
	}
	count := int32(binary.BigEndian.Uint32(b[6:]))
	rest := b[producerSnapshotHeaderSize:]
	if count < 0 || int64(len(rest)) != int64(count)*producerSnapshotEntrySize {
		return nil, fmt.Errorf("%w: %d entries in %d bytes", errCorruptSnapshot, count, len(rest))
	}
	entries := make([]*producerStateEntry, 0, count)
	for ; len(rest) > 0; rest = rest[producerSnapshotEntrySize:] {
		e := newProducerStateEntry(int64(binary.BigEndian.Uint64(rest)))
		e.epoch = int16(binary.BigEndian.Uint16(rest[8:]))
		seq := int32(binary.BigEndian.Uint32(rest[10:]))
		lastOffset := int64(binary.BigEndian.Uint64(rest[14:]))
		delta := int32(binary.BigEndian.Uint32(rest[22:]))
		e.lastTimestamp = int64(binary.BigEndian.Uint64(rest[26:]))
		e.coordinatorEpoch = int32(binary.BigEndian.Uint32(rest[34:]))
		e.currentTxnFirstOffset = max(int64(binary.BigEndian.Uint64(rest[38:])), -1)
		if lastOffset >= 0 {
			e.batches[0] = batchMetadata{lastSeq: seq, lastOffset: lastOffset, offsetDelta: delta, timestamp: e.lastTimestamp}
			e.n = 1
		}
		entries = append(entries, e)
	}
	return entries, nil
}

// writeProducerSnapshot writes the snapshot file for offset, fsyncing it
// when sync is set (a snapshot taken at roll is synced later, off the
// append lock, by the background flush).
func writeProducerSnapshot(path string, producers map[int64]*producerStateEntry, sync bool) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("write producer snapshot: %w", err)
	}
	_, err = f.Write(encodeProducerSnapshot(producers))
	if err == nil && sync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write producer snapshot %s: %w", path, err)
	}
	return nil
}

// syncFile fsyncs a file that may have been deleted meanwhile.
func syncFile(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("fsync %s: %w", path, err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", path, err)
	}
	return nil
}

// takeSnapshot writes a snapshot at lastMapOffset unless the latest snapshot
// is already there (Kafka's takeSnapshot) and returns its path ("" if none).
func (m *producerStateManager) takeSnapshot(sync bool) (string, error) {
	if m.lastMapOffset <= m.lastSnapOffset {
		return "", nil
	}
	path := producerSnapshotPath(m.dir, m.lastMapOffset)
	if err := writeProducerSnapshot(path, m.producers, sync); err != nil {
		return "", err
	}
	if i, found := slices.BinarySearch(m.snapshots, m.lastMapOffset); !found {
		m.snapshots = slices.Insert(m.snapshots, i, m.lastMapOffset)
	}
	m.lastSnapOffset = m.lastMapOffset
	return path, nil
}

// latestSnapshot is the offset of the newest snapshot, if any.
func (m *producerStateManager) latestSnapshot() (int64, bool) {
	if len(m.snapshots) == 0 {
		return 0, false
	}
	return m.snapshots[len(m.snapshots)-1], true
}

// deleteSnapshot removes one snapshot file and forgets it.
func (m *producerStateManager) deleteSnapshot(offset int64) error {
	i, found := slices.BinarySearch(m.snapshots, offset)
	if !found {
		return nil
	}
	m.snapshots = slices.Delete(m.snapshots, i, i+1)
	if err := os.Remove(producerSnapshotPath(m.dir, offset)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("delete producer snapshot: %w", err)
	}
	return nil
}

// deleteSnapshotsBefore removes the snapshots below offset.
func (m *producerStateManager) deleteSnapshotsBefore(offset int64) error {
	var errs []error
	for len(m.snapshots) > 0 && m.snapshots[0] < offset {
		errs = append(errs, m.deleteSnapshot(m.snapshots[0]))
	}
	return errors.Join(errs...)
}

// removeStraySnapshots deletes the snapshots that match no segment's base
// offset, except the newest one if it lies above every segment: the one a
// clean shutdown wrote at the log end (Kafka's removeStraySnapshots).
func (m *producerStateManager) removeStraySnapshots(segmentBases []int64) error {
	var errs []error
	maxBase := int64(-1)
	if len(segmentBases) > 0 {
		maxBase = segmentBases[len(segmentBases)-1]
	}
	for _, off := range slices.Clone(m.snapshots) {
		if i := sort.Search(len(segmentBases), func(i int) bool { return segmentBases[i] >= off }); i < len(segmentBases) && segmentBases[i] == off {
			continue
		}
		if latest, _ := m.latestSnapshot(); off == latest && off > maxBase {
			continue
		}
		errs = append(errs, m.deleteSnapshot(off))
	}
	return errors.Join(errs...)
}

// loadLatestSnapshot loads the newest readable snapshot, deleting corrupt
// ones on the way, and sets the map offsets to it; without one the state
// starts empty at logStartOffset (Kafka's loadFromSnapshot). Expired
// producers are left out.
func (m *producerStateManager) loadLatestSnapshot(logStartOffset, nowMs int64) error {
	for {
		off, ok := m.latestSnapshot()
		if !ok {
			m.lastSnapOffset, m.lastMapOffset = logStartOffset, logStartOffset
			return nil
		}
		entries, err := m.readSnapshot(off)
		if err != nil {
			if !errors.Is(err, errCorruptSnapshot) && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("load producer snapshot %d: %w", off, err)
			}
			if derr := m.deleteSnapshot(off); derr != nil {
				return derr
			}
			continue
		}
		for _, e := range entries {
			if !m.isExpired(nowMs, e) {
				m.producers[e.producerID] = e
				if e.currentTxnFirstOffset >= 0 {
					m.txns.begin(e.producerID, e.currentTxnFirstOffset)
				}
			}
		}
		m.lastSnapOffset, m.lastMapOffset = off, off
		return nil
	}
}

// readSnapshot reads and decodes the snapshot at off.
func (m *producerStateManager) readSnapshot(off int64) ([]*producerStateEntry, error) {
	b, err := readFile(producerSnapshotPath(m.dir, off))
	if err != nil {
		return nil, err
	}
	return decodeProducerSnapshot(b)
}

// loadSnapshotAtOrBelow loads the newest readable snapshot at or below
// offset without deleting anything (segment recovery's view of the past);
// without one the state starts empty at logStartOffset.
func (m *producerStateManager) loadSnapshotAtOrBelow(offset, logStartOffset, nowMs int64) error {
	for i := len(m.snapshots) - 1; i >= 0; i-- {
		off := m.snapshots[i]
		if off > offset {
			continue
		}
		entries, err := m.readSnapshot(off)
		if err != nil {
			if errors.Is(err, errCorruptSnapshot) || errors.Is(err, os.ErrNotExist) {
				continue
			}
			return fmt.Errorf("load producer snapshot %d: %w", off, err)
		}
		for _, e := range entries {
			if !m.isExpired(nowMs, e) {
				m.producers[e.producerID] = e
				if e.currentTxnFirstOffset >= 0 {
					m.txns.begin(e.producerID, e.currentTxnFirstOffset)
				}
			}
		}
		m.lastSnapOffset, m.lastMapOffset = off, off
		return nil
	}
	m.lastSnapOffset, m.lastMapOffset = logStartOffset, logStartOffset
	return nil
}

// truncateAndReload drops the snapshots outside (logStartOffset, logEnd]
// and, unless the state already ends at logEnd, reloads it from the newest
// snapshot left (Kafka's truncateAndReload). The caller replays the log from
// lastMapOffset to logEnd.
func (m *producerStateManager) truncateAndReload(logStartOffset, logEnd, nowMs int64) error {
	var errs []error
	for _, off := range slices.Clone(m.snapshots) {
		if off > logEnd || off <= logStartOffset {
			errs = append(errs, m.deleteSnapshot(off))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if logEnd != m.lastMapOffset {
		m.clear()
		return m.loadLatestSnapshot(logStartOffset, nowMs)
	}
	m.onLogStartOffsetIncremented(logStartOffset)
	return nil
}

// onLogStartOffsetIncremented moves the map offsets up to a new log start.
// The producers stay (KIP-360).
func (m *producerStateManager) onLogStartOffsetIncremented(logStartOffset int64) {
	m.lastMapOffset = max(m.lastMapOffset, logStartOffset)
	if off, ok := m.latestSnapshot(); ok {
		m.lastSnapOffset = off
	} else {
		m.lastSnapOffset = logStartOffset
	}
}

// truncateFullyAndStartAt forgets every producer and snapshot.
func (m *producerStateManager) truncateFullyAndStartAt(offset int64) error {
	m.clear()
	var errs []error
	for _, off := range slices.Clone(m.snapshots) {
		errs = append(errs, m.deleteSnapshot(off))
	}
	m.lastSnapOffset, m.lastMapOffset = 0, offset
	return errors.Join(errs...)
}
