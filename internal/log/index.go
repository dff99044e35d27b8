package log

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// errCorruptIndex means an index failed its sanity check and must be rebuilt
// from the segment's batches (Kafka's CorruptIndexException).
var errCorruptIndex = errors.New("corrupt index")

// mmapIndex is the part shared by the offset and time indexes (Kafka's
// AbstractIndex): a file of fixed-size big-endian entries, preallocated to the
// maximum index size while the segment is active, memory-mapped, and trimmed
// to its entries when the segment becomes inactive or is closed.
//
// Concurrency: one writer (the log's append lock) appends; readers search
// concurrently. entries is published after the entry bytes are written, so a
// reader never sees a half-written entry. Remapping (resize, close) takes mu
// exclusively, because a reader touching an unmapped region would crash the
// process; searches hold mu shared.
type mmapIndex struct {
	path       string
	baseOffset int64
	entrySize  int

	mu      sync.RWMutex
	file    *os.File
	mmap    []byte
	entries atomic.Int64
	// maxEntries is the capacity of the current mapping.
	maxEntries int
	// maxIndexSize is segment.index.bytes, the size used when (re)activated.
	maxIndexSize int
}

// open opens or creates an index file. A new file is preallocated to
// maxIndexSize; an existing one is mapped at its current length, whose entries
// are all taken as valid (a cleanly closed index was trimmed to them).
func (x *mmapIndex) open(path string, baseOffset int64, entrySize, maxIndexSize int) error {
	// An existing empty file is a trimmed index without entries, not a new one.
	newlyCreated := false
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err == nil {
		newlyCreated = true
	} else if errors.Is(err, os.ErrExist) {
		f, err = os.OpenFile(path, os.O_RDWR, 0)
	}
	if err != nil {
		return fmt.Errorf("open index: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("stat index %s: %w", path, err)
	}
	x.path, x.baseOffset, x.entrySize, x.file, x.maxIndexSize = path, baseOffset, entrySize, f, maxIndexSize
	size := int(st.Size())
	if newlyCreated {
		size = roundDown(maxIndexSize, entrySize)
		if err := f.Truncate(int64(size)); err != nil {
			f.Close()
			return fmt.Errorf("preallocate index %s: %w", path, err)
		}
	}
	if err := x.mapLocked(size); err != nil {
		f.Close()
		return err
	}
	if !newlyCreated {
		x.entries.Store(int64(size / entrySize))
	}
	return nil
}

func roundDown(n, factor int) int { return factor * (n / factor) }

// mapLocked maps the first size bytes of the file. A zero-size index has no
// mapping (mmap rejects zero length).
func (x *mmapIndex) mapLocked(size int) error {
	x.mmap = nil
	x.maxEntries = 0
	if size == 0 {
		return nil
	}
	m, err := unix.Mmap(int(x.file.Fd()), 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return fmt.Errorf("mmap index %s: %w", x.path, err)
	}
	x.mmap = m
	x.maxEntries = size / x.entrySize
	return nil
}

func (x *mmapIndex) unmapLocked() error {
	if x.mmap == nil {
		return nil
	}
	err := unix.Munmap(x.mmap)
	x.mmap = nil
	x.maxEntries = 0
	if err != nil {
		return fmt.Errorf("munmap index %s: %w", x.path, err)
	}
	return nil
}

// resize sets the file length (rounded down to whole entries) and remaps it,
// keeping the entries that still fit (Kafka's AbstractIndex.resize).
func (x *mmapIndex) resize(newSize int) error {
	newSize = roundDown(newSize, x.entrySize)
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.file == nil {
		return fmt.Errorf("resize index %s: %w", x.path, ErrClosed)
	}
	if x.mmap != nil && len(x.mmap) == newSize {
		return nil
	}
	if err := x.unmapLocked(); err != nil {
		return err
	}
	if err := x.file.Truncate(int64(newSize)); err != nil {
		return fmt.Errorf("resize index %s: %w", x.path, err)
	}
	if err := x.mapLocked(newSize); err != nil {
		return err
	}
	if n := x.entries.Load(); n > int64(x.maxEntries) {
		x.entries.Store(int64(x.maxEntries))
	}
	return nil
}

// trimToValidSize shrinks the file to its entries, as Kafka does when a
// segment becomes inactive or closes, so that a reopened index knows its
// entry count from its length.
func (x *mmapIndex) trimToValidSize() error {
	return x.resize(int(x.entries.Load()) * x.entrySize)
}

// isFull reports whether no entry can be appended.
func (x *mmapIndex) isFull() bool { return x.entries.Load() >= int64(x.maxEntries) }

// truncateEntries drops every entry from slot n on.
func (x *mmapIndex) truncateEntries(n int) {
	if int64(n) < x.entries.Load() {
		x.entries.Store(int64(n))
	}
}

// flush writes dirty index pages to disk.
func (x *mmapIndex) flush() error {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if x.mmap == nil {
		return nil
	}
	if err := unix.Msync(x.mmap, unix.MS_SYNC); err != nil {
		return fmt.Errorf("msync index %s: %w", x.path, err)
	}
	return nil
}

// close trims the file to its entries and releases the mapping and handle.
func (x *mmapIndex) close() error {
	err := x.trimToValidSize()
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.file == nil {
		return err
	}
	err = errors.Join(err, x.unmapLocked(), x.file.Close())
	x.file = nil
	return err
}

// rename moves the index file (used for .deleted and .swap suffixes).
func (x *mmapIndex) rename(path string) error {
	if err := os.Rename(x.path, path); err != nil {
		return fmt.Errorf("rename index: %w", err)
	}
	x.path = path
	return nil
}

// binarySearch returns the largest slot whose key is <= target, or -1. key
// reads a slot's key from the mapping; callers hold mu shared.
func (x *mmapIndex) binarySearch(n int, target int64, key func(slot int) int64) int {
	if n == 0 || key(0) > target {
		return -1
	}
	lo, hi := 0, n-1
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if key(mid) <= target {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

// offsetIndex maps offsets to file positions in a segment: 8-byte entries of
// a 4-byte offset relative to the segment's base offset and a 4-byte position.
// An entry (o, p) says the batches from position p on hold every offset >= o.
type offsetIndex struct{ mmapIndex }

const offsetIndexEntrySize = 8

func openOffsetIndex(path string, baseOffset int64, maxIndexSize int) (*offsetIndex, error) {
	x := &offsetIndex{}
	if err := x.open(path, baseOffset, offsetIndexEntrySize, maxIndexSize); err != nil {
		return nil, err
	}
	return x, nil
}

func (x *offsetIndex) relOffset(slot int) int64 {
	return int64(binary.BigEndian.Uint32(x.mmap[slot*offsetIndexEntrySize:]))
}

func (x *offsetIndex) position(slot int) int64 {
	return int64(binary.BigEndian.Uint32(x.mmap[slot*offsetIndexEntrySize+4:]))
}

// lastOffset is the offset of the last entry, or the base offset if empty.
func (x *offsetIndex) lastOffset() int64 {
	x.mu.RLock()
	defer x.mu.RUnlock()
	n := int(x.entries.Load())
	if n == 0 {
		return x.baseOffset
	}
	return x.baseOffset + x.relOffset(n-1)
}

// lookup returns the position to start scanning from for offset target: the
// position of the largest entry <= target, or 0.
func (x *offsetIndex) lookup(target int64) (offset, position int64) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	n := int(x.entries.Load())
	slot := x.binarySearch(n, target-x.baseOffset, x.relOffset)
	if slot < 0 {
		return x.baseOffset, 0
	}
	return x.baseOffset + x.relOffset(slot), x.position(slot)
}

// canAppendOffset reports whether offset fits in a relative 4-byte offset.
func (x *offsetIndex) canAppendOffset(offset int64) bool {
	rel := offset - x.baseOffset
	return rel >= 0 && rel <= int64(maxRelativeOffset)
}

const maxRelativeOffset = 1<<31 - 1

// append adds (offset, position). Only the log's append lock calls it, so the
// mapping cannot change underneath.
func (x *offsetIndex) append(offset, position int64) error {
	n := int(x.entries.Load())
	if n >= x.maxEntries {
		return fmt.Errorf("append to full offset index %s", x.path)
	}
	if n > 0 && offset <= x.baseOffset+x.relOffset(n-1) {
		return fmt.Errorf("offset index %s: offset %d not above last entry %d", x.path, offset, x.baseOffset+x.relOffset(n-1))
	}
	if !x.canAppendOffset(offset) {
		return fmt.Errorf("offset index %s: offset %d overflows base %d", x.path, offset, x.baseOffset)
	}
	e := x.mmap[n*offsetIndexEntrySize:]
	binary.BigEndian.PutUint32(e, uint32(offset-x.baseOffset))
	binary.BigEndian.PutUint32(e[4:], uint32(position))
	x.entries.Store(int64(n + 1))
	return nil
}

// truncateTo drops the entries for offsets >= offset.
func (x *offsetIndex) truncateTo(offset int64) {
	x.mu.RLock()
	n := int(x.entries.Load())
	slot := x.binarySearch(n, offset-x.baseOffset, x.relOffset)
	keep := 0
	if slot >= 0 {
		keep = slot + 1
		if x.baseOffset+x.relOffset(slot) == offset {
			keep = slot
		}
	}
	x.mu.RUnlock()
	x.truncateEntries(keep)
}

// sanityCheck is Kafka's OffsetIndex.sanityCheck plus a bound on positions:
// whole entries only, the last offset above the base offset and not below the
// first, and the last position inside the segment. An index left preallocated
// by a crash ends in zero entries and fails here.
func (x *offsetIndex) sanityCheck(segmentSize int64) error {
	x.mu.RLock()
	defer x.mu.RUnlock()
	st, err := x.file.Stat()
	if err != nil {
		return fmt.Errorf("stat index %s: %w", x.path, err)
	}
	if st.Size()%offsetIndexEntrySize != 0 {
		return fmt.Errorf("%w: %s has size %d, not a multiple of %d", errCorruptIndex, x.path, st.Size(), offsetIndexEntrySize)
	}
	n := int(x.entries.Load())
	if n == 0 {
		return nil
	}
	last, first := x.relOffset(n-1), x.relOffset(0)
	if last <= 0 || last < first {
		return fmt.Errorf("%w: %s last offset %d is not above base %d and first entry %d", errCorruptIndex, x.path, x.baseOffset+last, x.baseOffset, x.baseOffset+first)
	}
	if pos := x.position(n - 1); pos >= segmentSize {
		return fmt.Errorf("%w: %s last position %d beyond segment size %d", errCorruptIndex, x.path, pos, segmentSize)
	}
	return nil
}

// timeIndex maps timestamps to offsets: 12-byte entries of an 8-byte
// timestamp and a 4-byte relative offset. An entry (t, o) says the largest
// timestamp up to offset o is t; entries increase in both.
type timeIndex struct{ mmapIndex }

const timeIndexEntrySize = 12

func openTimeIndex(path string, baseOffset int64, maxIndexSize int) (*timeIndex, error) {
	x := &timeIndex{}
	if err := x.open(path, baseOffset, timeIndexEntrySize, maxIndexSize); err != nil {
		return nil, err
	}
	return x, nil
}

func (x *timeIndex) timestamp(slot int) int64 {
	return int64(binary.BigEndian.Uint64(x.mmap[slot*timeIndexEntrySize:]))
}

func (x *timeIndex) relOffset(slot int) int64 {
	return int64(binary.BigEndian.Uint32(x.mmap[slot*timeIndexEntrySize+8:]))
}

// isFull keeps the last slot free for the entry written when the segment
// becomes inactive (Kafka's TimeIndex.isFull).
func (x *timeIndex) isFull() bool { return x.entries.Load() >= int64(x.maxEntries)-1 }

// lastEntry is the last (timestamp, offset), or (-1, base offset) if empty.
func (x *timeIndex) lastEntry() (ts, offset int64) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.lastEntryLocked()
}

func (x *timeIndex) lastEntryLocked() (ts, offset int64) {
	n := int(x.entries.Load())
	if n == 0 {
		return noTimestamp, x.baseOffset
	}
	return x.timestamp(n - 1), x.baseOffset + x.relOffset(n-1)
}

// lookup returns the entry with the largest timestamp <= target, or
// (-1, base offset) if there is none.
func (x *timeIndex) lookup(target int64) (ts, offset int64) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	n := int(x.entries.Load())
	slot := x.binarySearch(n, target, x.timestamp)
	if slot < 0 {
		return noTimestamp, x.baseOffset
	}
	return x.timestamp(slot), x.baseOffset + x.relOffset(slot)
}

// maybeAppend adds (ts, offset) if ts is above the last entry's timestamp.
// skipFullCheck is for the entry written on roll and close, which may use the
// reserved last slot.
func (x *timeIndex) maybeAppend(ts, offset int64, skipFullCheck bool) error {
	x.mu.RLock()
	defer x.mu.RUnlock()
	n := int(x.entries.Load())
	if !skipFullCheck && n >= x.maxEntries-1 {
		return fmt.Errorf("append to full time index %s", x.path)
	}
	lastTs, lastOff := x.lastEntryLocked()
	if n > 0 && offset < lastOff {
		return fmt.Errorf("time index %s: offset %d below last entry %d", x.path, offset, lastOff)
	}
	if ts <= lastTs || n >= x.maxEntries {
		return nil
	}
	e := x.mmap[n*timeIndexEntrySize:]
	binary.BigEndian.PutUint64(e, uint64(ts))
	binary.BigEndian.PutUint32(e[8:], uint32(offset-x.baseOffset))
	x.entries.Store(int64(n + 1))
	return nil
}

// truncateTo drops the entries for offsets >= offset.
func (x *timeIndex) truncateTo(offset int64) {
	x.mu.RLock()
	n := int(x.entries.Load())
	keep := n
	for keep > 0 && x.baseOffset+x.relOffset(keep-1) >= offset {
		keep--
	}
	x.mu.RUnlock()
	x.truncateEntries(keep)
}

// sanityCheck is Kafka's TimeIndex.sanityCheck: whole entries, the last
// timestamp not below the first, the last offset not below the base offset.
func (x *timeIndex) sanityCheck() error {
	x.mu.RLock()
	defer x.mu.RUnlock()
	st, err := x.file.Stat()
	if err != nil {
		return fmt.Errorf("stat index %s: %w", x.path, err)
	}
	if st.Size()%timeIndexEntrySize != 0 {
		return fmt.Errorf("%w: %s has size %d, not a multiple of %d", errCorruptIndex, x.path, st.Size(), timeIndexEntrySize)
	}
	n := int(x.entries.Load())
	if n == 0 {
		return nil
	}
	if x.timestamp(n-1) < x.timestamp(0) {
		return fmt.Errorf("%w: %s last timestamp %d below first %d", errCorruptIndex, x.path, x.timestamp(n-1), x.timestamp(0))
	}
	return nil
}

const noTimestamp = int64(-1)
