package cli

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"gregor/internal/record"
)

// Index entry layouts (internal/log's index.go, Kafka's OffsetIndex and
// TimeIndex): big-endian, offsets relative to the segment's base offset.
const (
	offsetIndexEntrySize = 8  // 4-byte relative offset, 4-byte position
	timeIndexEntrySize   = 12 // 8-byte timestamp, 4-byte relative offset
)

type offsetEntry struct {
	offset   int64
	position int64
}

type timeEntry struct {
	timestamp int64
	offset    int64
}

// readIndexEntries reads an index file's entries. An active segment's index
// is preallocated with zeros, so, as kafka-dump-log does, the entries end at
// the first one after slot 0 whose offset is the base offset; and an
// all-zero first slot followed only by zeros is no entry (the segment has
// written none yet; its first batch, at position 0, is never indexed).
func readIndexEntries[E any](d *dumper, path string, entrySize int, parse func(int64, []byte) E, offsetOf func(E) int64) (int64, []E, bool) {
	base, err := baseOffsetOf(path)
	if err != nil {
		d.problem(path, "%v", err)
		return 0, nil, false
	}
	b, err := os.ReadFile(path)
	if err != nil {
		d.problem(path, "%v", err)
		return 0, nil, false
	}
	if len(b)%entrySize != 0 {
		d.problem(path, "index size %d is not a multiple of the entry size %d", len(b), entrySize)
	}
	var entries []E
	for i := 0; i+entrySize <= len(b); i += entrySize {
		e := parse(base, b[i:i+entrySize])
		if i > 0 && offsetOf(e) == base {
			break
		}
		entries = append(entries, e)
	}
	if len(b) >= entrySize && allZero(b) {
		entries = nil
	}
	return base, entries, true
}

func parseOffsetEntry(base int64, b []byte) offsetEntry {
	return offsetEntry{offset: base + int64(binary.BigEndian.Uint32(b)), position: int64(binary.BigEndian.Uint32(b[4:]))}
}

func parseTimeEntry(base int64, b []byte) timeEntry {
	return timeEntry{timestamp: int64(binary.BigEndian.Uint64(b)), offset: base + int64(binary.BigEndian.Uint32(b[8:]))}
}

// openSiblingLog opens the .log next to an index; nil (and no problem) when
// there is none, since an index may be dumped on its own.
func (d *dumper) openSiblingLog(path string) (*os.File, int64) {
	f, err := os.Open(siblingLog(path))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0
	}
	if err != nil {
		d.problem(path, "%v", err)
		return nil, 0
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		d.problem(path, "%v", err)
		return nil, 0
	}
	return f, st.Size()
}

// batchHeaderAt reads the header of the batch at pos.
func batchHeaderAt(f *os.File, pos int64) (record.BatchHeader, error) {
	var head [record.HeaderSize]byte
	if _, err := f.ReadAt(head[:], pos); err != nil {
		if errors.Is(err, io.EOF) {
			return record.BatchHeader{}, fmt.Errorf("no whole batch header at position %d", pos)
		}
		return record.BatchHeader{}, err
	}
	return record.ParseHeader(head[:])
}

// dumpOffsetIndex prints an offset index and checks each entry against the
// log next to it: the entry's position must hold the batch whose last offset
// is the entry's offset, and offsets and positions must increase.
func (d *dumper) dumpOffsetIndex(path string) {
	base, entries, ok := readIndexEntries(d, path, offsetIndexEntrySize, parseOffsetEntry, func(e offsetEntry) int64 { return e.offset })
	if !ok {
		return
	}
	if len(entries) == 0 {
		fmt.Fprintf(d.out, "%s is empty.\n", path)
		return
	}
	if d.opts.indexSanityOnly {
		// Kafka's OffsetIndex.sanityCheck (size checked while reading).
		if last := entries[len(entries)-1].offset; last < base {
			d.problem(path, "corrupt index: last offset %d is below the base offset %d", last, base)
			return
		}
		fmt.Fprintf(d.out, "%s passed sanity check.\n", path)
		return
	}
	logFile, logSize := d.openSiblingLog(path)
	if logFile != nil {
		defer logFile.Close()
	}
	for i, e := range entries {
		if i > 0 {
			if prev := entries[i-1]; e.offset <= prev.offset {
				d.indexNotIncreasing.add(path, e.offset, prev.offset)
			} else if e.position <= prev.position {
				d.problem(path, "entry %d: position %d does not follow the previous entry's position %d", i, e.position, prev.position)
			}
		}
		if logFile != nil {
			if e.position >= logSize {
				d.problem(path, "entry %d (offset %d): position %d is beyond the log's size %d", i, e.offset, e.position, logSize)
			} else if h, err := batchHeaderAt(logFile, e.position); err != nil {
				d.problem(path, "entry %d (offset %d): position %d: %v", i, e.offset, e.position, err)
			} else if h.LastOffset() != e.offset {
				d.indexMismatches.add(path, e.offset, h.LastOffset())
			}
		}
		if !d.opts.verifyOnly {
			fmt.Fprintf(d.out, "offset: %d position: %d\n", e.offset, e.position)
		}
	}
}

// dumpTimeIndex prints a time index and checks each entry as kafka-dump-log
// does: the entry's offset must be the last offset of a batch in the log
// whose max timestamp is the entry's timestamp, and timestamps must increase.
func (d *dumper) dumpTimeIndex(path string) {
	base, entries, ok := readIndexEntries(d, path, timeIndexEntrySize, parseTimeEntry, func(e timeEntry) int64 { return e.offset })
	if !ok {
		return
	}
	if len(entries) == 0 {
		fmt.Fprintf(d.out, "%s is empty.\n", path)
		return
	}
	if d.opts.indexSanityOnly {
		// Kafka's TimeIndex.sanityCheck.
		first, last := entries[0], entries[len(entries)-1]
		switch {
		case last.timestamp < first.timestamp:
			d.problem(path, "corrupt time index: last timestamp %d is below the first %d", last.timestamp, first.timestamp)
		case last.offset < base:
			d.problem(path, "corrupt time index: last offset %d is below the base offset %d", last.offset, base)
		default:
			fmt.Fprintf(d.out, "%s passed sanity check.\n", path)
		}
		return
	}
	logFile, logSize := d.openSiblingLog(path)
	if logFile != nil {
		defer logFile.Close()
	}
	// The offset index next to it, when present, tells where to start
	// looking for each entry's batch.
	var offsets []offsetEntry
	if idx := siblingIndex(path); idx != "" && logFile != nil {
		if b, err := os.ReadFile(idx); err == nil {
			for i := 0; i+offsetIndexEntrySize <= len(b); i += offsetIndexEntrySize {
				e := parseOffsetEntry(base, b[i:])
				if i > 0 && e.offset == base {
					break
				}
				offsets = append(offsets, e)
			}
		}
	}
	prevTimestamp := record.NoTimestamp
	for _, e := range entries {
		if logFile != nil {
			h, found, err := findBatch(logFile, logSize, startPosition(offsets, e.offset), e.offset)
			switch {
			case err != nil:
				d.problem(path, "entry for offset %d: %v", e.offset, err)
			case !found:
				d.timeOffsetNotFound.add(path, e.offset, -1)
			case h.LastOffset() != e.offset:
				d.timeOffsetNotFound.add(path, e.offset, h.LastOffset())
			default:
				if h.MaxTimestamp != e.timestamp {
					d.timeMismatches.add(path, e.timestamp, h.MaxTimestamp)
				}
				if prevTimestamp >= e.timestamp {
					d.timeOutOfOrder.add(path, e.timestamp, prevTimestamp)
				}
			}
		}
		if !d.opts.verifyOnly {
			fmt.Fprintf(d.out, "timestamp: %d offset: %d\n", e.timestamp, e.offset)
		}
		prevTimestamp = e.timestamp
	}
}

// siblingIndex is the .index of a .timeindex's segment.
func siblingIndex(path string) string {
	return path[:len(path)-len(timeIndexFileSuffix)] + indexFileSuffix
}

// startPosition is the position of the largest offset index entry at or
// below offset (Kafka's OffsetIndex.lookup), or 0.
func startPosition(entries []offsetEntry, offset int64) int64 {
	pos := int64(0)
	for _, e := range entries {
		if e.offset > offset {
			break
		}
		pos = e.position
	}
	return pos
}

// findBatch walks batch headers from pos to the first batch whose last
// offset is at least offset.
func findBatch(f *os.File, size, pos, offset int64) (record.BatchHeader, bool, error) {
	for pos+record.HeaderSize <= size {
		h, err := batchHeaderAt(f, pos)
		if err != nil {
			return h, false, fmt.Errorf("position %d: %w", pos, err)
		}
		if h.LastOffset() >= offset {
			return h, true, nil
		}
		pos += int64(h.Size())
	}
	return record.BatchHeader{}, false, nil
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
