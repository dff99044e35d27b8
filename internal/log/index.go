package log

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
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
// An index holds no file descriptor: the file is opened only to map, resize
// or trim it (as Kafka does). An existing index is mapped lazily, on first
// use (Kafka's LazyIndex), and an inactive segment's index may be unmapped
// again when idle (see index_lazy.go), so that many partitions do not mean
// many open maps.
//
// Concurrency: one writer (the log's append lock) appends; readers search
// concurrently. entries is published after the entry bytes are written, so a
// reader never sees a half-written entry. Mapping and remapping (lazy load,
// resize, unmap, close) take mu exclusively, because a reader touching an
// unmapped region would crash the process; searches hold mu shared.
type mmapIndex struct {
	path       string
	baseOffset int64
	entrySize  int

	mu     sync.RWMutex
	mmap   []byte
	mapped bool // mmap reflects the file (nil for a zero-length file)
	closed bool
	// fileSize is the file's length, known without opening it.
	fileSize int64
	// growTo is the length the file takes before its first entry is
	// written (the active segment's full size), 0 when it has it already:
	// loading an idle partition then neither grows, maps nor trims its
	// active segment's indexes (growOnWrite).
	growTo  int64
	entries atomic.Int64
	// maxEntries is the capacity of the current mapping, or of the file
	// while it is not mapped.
	maxEntries int
	// maxIndexSize is segment.index.bytes, the size used when (re)activated.
	maxIndexSize int
	// lastUse is when a reader last searched the index (UnixNano), for the
	// idle unmapping of inactive segments' indexes.
	lastUse atomic.Int64
	// check is the index's sanity check, run when it is mapped on demand
	// (guarded by mu); corrupt is why it failed. A corrupt index reads as
	// empty, so searches scan its segment from the start: slower, correct.
	check   func() error
	corrupt error
	// written is set when an entry is written into the mapping and
	// cleared by msync; unsynced (guarded by mu) when a mapping with
	// written entries was dropped, so that the next flush fsyncs the file:
	// the pages are in the page cache, but no mapping is left to msync.
	written  atomic.Bool
	unsynced bool
}

// open opens or creates an index file. Neither is mapped: a new file is
// preallocated to maxIndexSize (its entries are zero); an existing one is
// only measured, its entries all taken as valid (a cleanly closed index was
// trimmed to them). Either is mapped on first use, so that opening 100,000
// partitions costs no mapping (vm.max_map_count is often 65,530).
func (x *mmapIndex) open(path string, baseOffset int64, entrySize, maxIndexSize int) error {
	x.path, x.baseOffset, x.entrySize, x.maxIndexSize = path, baseOffset, entrySize, maxIndexSize
	// An existing empty file is a trimmed index without entries, not a new one.
	st, err := os.Stat(path)
	if err == nil {
		x.fileSize = st.Size()
		x.maxEntries = int(st.Size()) / entrySize
		x.entries.Store(int64(x.maxEntries))
		return nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("open index: %w", err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("open index: %w", err)
	}
	size := roundDown(maxIndexSize, entrySize)
	if err := f.Truncate(int64(size)); err != nil {
		f.Close()
		return fmt.Errorf("preallocate index %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("create index %s: %w", path, err)
	}
	x.fileSize = int64(size)
	x.maxEntries = size / entrySize
	return nil
}

// growOnWrite gives the index room for size bytes (the active segment's
// full size) without touching the file now: the file grows, sparse, when
// an entry is first written (ensureMapped). An index larger than size is
// resized at once.
func (x *mmapIndex) growOnWrite(size int) error {
	size = roundDown(size, x.entrySize)
	x.mu.Lock()
	if x.closed || int64(size) < x.fileSize {
		x.mu.Unlock()
		return x.resize(size)
	}
	defer x.mu.Unlock()
	x.growTo = 0
	if int64(size) > x.fileSize {
		x.growTo = int64(size)
	}
	x.maxEntries = x.capacity()
	return nil
}

// ensureMapped maps the index, grown to its full size first if it is to
// grow, for a writer holding the log's append lock.
func (x *mmapIndex) ensureMapped() error { return x.ensureMappedFor(-1) }

// ensureMappedFor is ensureMapped for writing slot: when slot is not
// negative and the file is to grow, it grows only to hold that slot (the
// final entry written on roll or close, just before the index is trimmed),
// keeping its capacity.
func (x *mmapIndex) ensureMappedFor(slot int) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return fmt.Errorf("index %s: %w", x.path, ErrClosed)
	}
	need := int64(slot+1) * int64(x.entrySize)
	if x.growTo > x.fileSize && (slot < 0 || need > x.fileSize) {
		target := x.growTo
		if slot >= 0 {
			target = min(need, x.growTo)
		}
		if err := x.unmapLocked(); err != nil {
			return err
		}
		if err := os.Truncate(x.path, target); err != nil {
			return fmt.Errorf("resize index %s: %w", x.path, err)
		}
		x.fileSize = target
		if target == x.growTo {
			x.growTo = 0
		}
	}
	if x.mapped {
		return nil
	}
	return x.mapOnDemandLocked()
}

// mapOnDemandLocked maps the index and sanity-checks it: the load checks
// only the active segment's indexes (as Kafka since KAFKA-7283), so an old
// segment's index is checked when it is first used. The caller holds mu
// exclusively.
func (x *mmapIndex) mapOnDemandLocked() error {
	if err := x.mapLocked(); err != nil {
		return err
	}
	if x.check != nil && x.corrupt == nil {
		x.corrupt = x.check()
	}
	return nil
}

// corruption is why the index failed its sanity check when mapped, or nil.
func (x *mmapIndex) corruption() error {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.corrupt
}

// firstAndLast returns copies of the first and last entries and the entry
// count, read from the mapping when there is one and with two preads of
// the file when not (the file is not mapped for them).
func (x *mmapIndex) firstAndLast() (first, last []byte, n int, err error) {
	x.mu.RLock()
	if x.mapped || x.closed {
		defer x.mu.RUnlock()
		if n = x.mappedCount(); n == 0 {
			return nil, nil, 0, nil
		}
		e := x.entrySize
		return slices.Clone(x.mmap[:e]), slices.Clone(x.mmap[(n-1)*e : n*e]), n, nil
	}
	n = int(min(x.entries.Load(), x.fileSize/int64(x.entrySize)))
	path := x.path
	x.mu.RUnlock()
	if n == 0 {
		return nil, nil, 0, nil
	}
	f, err := openRegular(path, unix.O_RDONLY, 0)
	if err != nil {
		return nil, nil, 0, fmt.Errorf("read index: %w", err)
	}
	defer f.Close()
	first, last = make([]byte, x.entrySize), make([]byte, x.entrySize)
	if _, err := f.ReadAt(first, 0); err != nil {
		return nil, nil, 0, fmt.Errorf("read index %s: %w", path, err)
	}
	if n == 1 {
		return first, first, n, nil
	}
	if _, err := f.ReadAt(last, int64(n-1)*int64(x.entrySize)); err != nil {
		return nil, nil, 0, fmt.Errorf("read index %s: %w", path, err)
	}
	return first, last, n, nil
}

// lastEntry is the last entry's offset and position, (base offset, 0)
// without entries; it does not map the index.
func (x *offsetIndex) lastEntry() (offset, position int64, err error) {
	_, last, n, err := x.firstAndLast()
	if err != nil || n == 0 || x.corruption() != nil {
		return x.baseOffset, 0, err
	}
	return x.baseOffset + int64(binary.BigEndian.Uint32(last)), int64(binary.BigEndian.Uint32(last[4:])), nil
}

// isCorrupt reports whether the index failed its sanity check when mapped.
func (x *mmapIndex) isCorrupt() bool {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.corrupt != nil
}

func roundDown(n, factor int) int { return factor * (n / factor) }

// capacity is how many entries the index may hold: its file's, or the
// size it grows to. The caller holds mu.
func (x *mmapIndex) capacity() int {
	return int(max(x.fileSize, x.growTo)) / x.entrySize
}

// mapLocked maps the whole file. The caller holds mu exclusively.
func (x *mmapIndex) mapLocked() error {
	if x.fileSize == 0 {
		x.mmap, x.maxEntries, x.mapped = nil, x.capacity(), true // nothing to map or open
		return nil
	}
	f, err := openRegular(x.path, unix.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("open index: %w", err)
	}
	defer f.Close()
	return x.mapFileLocked(f)
}

// mapFileLocked maps the first fileSize bytes of f; the mapping outlives the
// descriptor. A zero-size index has no mapping (mmap rejects zero length).
func (x *mmapIndex) mapFileLocked(f *os.File) error {
	x.mmap, x.maxEntries, x.mapped = nil, 0, false
	if x.fileSize > 0 {
		m, err := unix.Mmap(int(f.Fd()), 0, int(x.fileSize), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
		if err != nil {
			return fmt.Errorf("mmap index %s: %w", x.path, err)
		}
		x.mmap = m
	}
	x.maxEntries = x.capacity()
	x.mapped = true
	return nil
}

// unmapLocked releases the mapping; the file keeps its length and entries.
func (x *mmapIndex) unmapLocked() error {
	x.mapped = false
	if x.mmap == nil {
		return nil
	}
	if x.written.Swap(false) {
		x.unsynced = true
	}
	err := unix.Munmap(x.mmap)
	x.mmap = nil
	if err != nil {
		return fmt.Errorf("munmap index %s: %w", x.path, err)
	}
	return nil
}

// resize sets the file length (rounded down to whole entries) and remaps it,
// keeping the entries that still fit (Kafka's AbstractIndex.resize).
func (x *mmapIndex) resize(newSize int) error {
	return x.resizeTo(newSize, true)
}

// resizeTo is resize; with keepMapped false a mapped index is left
// unmapped, to be mapped again by its next use.
func (x *mmapIndex) resizeTo(newSize int, keepMapped bool) error {
	newSize = roundDown(newSize, x.entrySize)
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return fmt.Errorf("resize index %s: %w", x.path, ErrClosed)
	}
	x.growTo = 0
	if x.fileSize == int64(newSize) {
		x.maxEntries = newSize / x.entrySize
		return nil
	}
	// An index not mapped now stays so: the next user maps it.
	wasMapped := x.mapped
	if err := x.unmapLocked(); err != nil {
		return err
	}
	if err := os.Truncate(x.path, int64(newSize)); err != nil {
		return fmt.Errorf("resize index %s: %w", x.path, err)
	}
	x.fileSize = int64(newSize)
	x.maxEntries = newSize / x.entrySize
	if wasMapped && keepMapped {
		if err := x.mapLocked(); err != nil {
			return err
		}
	}
	if n := x.entries.Load(); n > int64(x.maxEntries) {
		x.entries.Store(int64(x.maxEntries))
	}
	return nil
}

// trimToValidSize shrinks the file to its entries, as Kafka does when a
// segment becomes inactive or closes, so that a reopened index knows its
// entry count from its length.
//
// The index is left unmapped: an inactive segment's index is mapped again
// only when searched.
func (x *mmapIndex) trimToValidSize() error {
	return x.resizeTo(int(x.entries.Load())*x.entrySize, false)
}

// isFull reports whether no entry can be appended.
func (x *mmapIndex) isFull() bool { return x.entries.Load() >= int64(x.maxEntries) }

// truncateEntries drops every entry from slot n on. Dropping them all
// (before a rebuild) also forgets that the index was corrupt.
func (x *mmapIndex) truncateEntries(n int) {
	if int64(n) < x.entries.Load() {
		x.entries.Store(int64(n))
	}
	if n == 0 {
		x.mu.Lock()
		x.corrupt = nil
		x.mu.Unlock()
	}
}

// flush writes dirty index pages to disk: msync of the mapping, or an
// fsync of the file when a written mapping was dropped since (resize,
// recovery, the idle sweep).
func (x *mmapIndex) flush() error {
	if err := x.syncDropped(); err != nil {
		return err
	}
	// Searches go on meanwhile: msync needs no exclusive hold.
	x.mu.RLock()
	defer x.mu.RUnlock()
	if x.mmap == nil || !x.written.Swap(false) {
		return nil
	}
	if err := unix.Msync(x.mmap, unix.MS_SYNC); err != nil {
		x.written.Store(true)
		return fmt.Errorf("msync index %s: %w", x.path, err)
	}
	return nil
}

// syncDropped fsyncs the file if a written mapping was dropped unsynced.
func (x *mmapIndex) syncDropped() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if !x.unsynced || x.closed {
		return nil
	}
	f, err := openRegular(x.path, unix.O_RDONLY, 0)
	if err != nil {
		return fmt.Errorf("fsync index: %w", err)
	}
	err = f.Sync()
	f.Close()
	if err != nil {
		return fmt.Errorf("fsync index %s: %w", x.path, err)
	}
	x.unsynced = false
	return nil
}

// replaceEntries makes entries (whole, valid, in order) the index's only
// entries and the file exactly their size, with one write and without a
// mapping; the next flush fsyncs the file.
func (x *mmapIndex) replaceEntries(entries []byte) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return fmt.Errorf("index %s: %w", x.path, ErrClosed)
	}
	if err := x.unmapLocked(); err != nil {
		return err
	}
	f, err := openRegular(x.path, unix.O_RDWR|unix.O_CREAT, 0o644)
	if err != nil {
		return fmt.Errorf("rebuild index: %w", err)
	}
	defer f.Close()
	if x.fileSize != int64(len(entries)) {
		if err := f.Truncate(int64(len(entries))); err != nil {
			return fmt.Errorf("rebuild index %s: %w", x.path, err)
		}
		x.unsynced = true
	}
	if len(entries) > 0 {
		if _, err := f.WriteAt(entries, 0); err != nil {
			return fmt.Errorf("rebuild index %s: %w", x.path, err)
		}
		x.unsynced = true
	}
	n := len(entries) / x.entrySize
	x.fileSize, x.growTo, x.maxEntries, x.corrupt = int64(len(entries)), 0, n, nil
	x.entries.Store(int64(n))
	return nil
}

// writeFinalUnmapped writes slot n, the final entry of a segment that rolls
// or closes, with one pwrite when no mapping is there to write it into,
// and reports whether it did. Mapping a page to store one entry and
// unmapping it just after costs a page fault that reserves the block at
// once: a broker closing 100,000 logs paid for that in each. The next
// flush fsyncs the file, as after replaceEntries.
func (x *mmapIndex) writeFinalUnmapped(n int, entry []byte) (bool, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return false, fmt.Errorf("index %s: %w", x.path, ErrClosed)
	}
	if x.mmap != nil {
		return false, nil
	}
	f, err := openRegular(x.path, unix.O_RDWR|unix.O_CREAT, 0o644)
	if err != nil {
		return false, fmt.Errorf("write index %s: %w", x.path, err)
	}
	defer f.Close()
	end := int64(n+1) * int64(x.entrySize)
	if _, err := f.WriteAt(entry, end-int64(x.entrySize)); err != nil {
		return false, fmt.Errorf("write index %s: %w", x.path, err)
	}
	// Not mapped now, so the next user maps the file at its new size.
	x.mapped = false
	x.fileSize = max(x.fileSize, end)
	if x.growTo <= x.fileSize {
		x.growTo = 0
	}
	x.maxEntries = x.capacity()
	x.unsynced = true
	x.entries.Store(int64(n + 1))
	return true, nil
}

// unsyncedNow reports whether a dropped mapping's writes await an fsync.
func (x *mmapIndex) unsyncedNow() bool {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.unsynced
}

// unmap drops the mapping (a later use maps the file again).
func (x *mmapIndex) unmap() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.unmapLocked()
}

// close trims the file to its entries and releases the mapping.
func (x *mmapIndex) close() error {
	x.mu.RLock()
	closed := x.closed
	x.mu.RUnlock()
	if closed {
		return nil
	}
	err := x.trimToValidSize()
	x.mu.Lock()
	defer x.mu.Unlock()
	err = errors.Join(err, x.unmapLocked())
	x.closed = true
	return err
}

// rename moves the index file (used for .deleted and .swap suffixes).
func (x *mmapIndex) rename(path string) error {
	x.mu.Lock()
	defer x.mu.Unlock()
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
	x.check = func() error { return x.checkLocked(math.MaxInt64) }
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
	x.rlockMapped()
	defer x.mu.RUnlock()
	n := x.count()
	if n == 0 {
		return x.baseOffset
	}
	return x.baseOffset + x.relOffset(n-1)
}

// lookup returns the position to start scanning from for offset target: the
// position of the largest entry <= target, or 0.
func (x *offsetIndex) lookup(target int64) (offset, position int64) {
	x.rlockMapped()
	defer x.mu.RUnlock()
	n := x.count()
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
// mapping cannot change underneath once mapped (only that lock unmaps).
func (x *offsetIndex) append(offset, position int64) error {
	if err := x.ensureMapped(); err != nil {
		return err
	}
	n := int(x.entries.Load())
	if n >= x.maxEntries || n >= len(x.mmap)/offsetIndexEntrySize {
		return fmt.Errorf("append to full offset index %s", x.path)
	}
	if n > 0 && offset <= x.baseOffset+x.relOffset(n-1) {
		return fmt.Errorf("offset index %s: offset %d not above last entry %d", x.path, offset, x.baseOffset+x.relOffset(n-1))
	}
	if !x.canAppendOffset(offset) {
		return fmt.Errorf("offset index %s: offset %d overflows base %d", x.path, offset, x.baseOffset)
	}
	var e [offsetIndexEntrySize]byte
	binary.BigEndian.PutUint32(e[:], uint32(offset-x.baseOffset))
	binary.BigEndian.PutUint32(e[4:], uint32(position))
	if err := x.writeEntry(n, e[:]); err != nil {
		return err
	}
	x.entries.Store(int64(n + 1))
	return nil
}

// truncateTo drops the entries for offsets >= offset.
func (x *offsetIndex) truncateTo(offset int64) {
	x.rlockMapped()
	n := x.count()
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
//
// It reads only the first and last entries, without mapping the index if
// it is not mapped: loading 100,000 partitions must not map and unmap
// 200,000 files.
func (x *offsetIndex) sanityCheck(segmentSize int64) error {
	if err := x.corruption(); err != nil {
		return err
	}
	first, last, n, err := x.firstAndLast()
	if err != nil {
		return err
	}
	return x.checkEntries(n, first, last, segmentSize)
}

// checkLocked is sanityCheck on the mapped index; the caller holds mu.
func (x *offsetIndex) checkLocked(segmentSize int64) error {
	n := x.mappedCount()
	if n == 0 {
		return x.checkEntries(0, nil, nil, segmentSize)
	}
	e := offsetIndexEntrySize
	return x.checkEntries(n, x.mmap[:e], x.mmap[(n-1)*e:n*e], segmentSize)
}

func (x *offsetIndex) checkEntries(n int, firstEntry, lastEntry []byte, segmentSize int64) error {
	if x.fileSize%offsetIndexEntrySize != 0 {
		return fmt.Errorf("%w: %s has size %d, not a multiple of %d", errCorruptIndex, x.path, x.fileSize, offsetIndexEntrySize)
	}
	if n == 0 {
		return nil
	}
	be := binary.BigEndian
	first, last := int64(be.Uint32(firstEntry)), int64(be.Uint32(lastEntry))
	if last <= 0 || last < first {
		return fmt.Errorf("%w: %s last offset %d is not above base %d and first entry %d", errCorruptIndex, x.path, x.baseOffset+last, x.baseOffset, x.baseOffset+first)
	}
	if pos := int64(be.Uint32(lastEntry[4:])); pos >= segmentSize {
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
	x.check = x.checkLocked
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
	x.rlockMapped()
	defer x.mu.RUnlock()
	return x.lastEntryLocked()
}

func (x *timeIndex) lastEntryLocked() (ts, offset int64) {
	n := x.count()
	if n == 0 {
		return noTimestamp, x.baseOffset
	}
	return x.timestamp(n - 1), x.baseOffset + x.relOffset(n-1)
}

// lookup returns the entry with the largest timestamp <= target, or
// (-1, base offset) if there is none.
func (x *timeIndex) lookup(target int64) (ts, offset int64) {
	x.rlockMapped()
	defer x.mu.RUnlock()
	n := x.count()
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
	// Decide on the current mapping first: most calls append nothing, and
	// an index that is to grow (growOnWrite) grows only for an entry.
	x.rlockMapped()
	n := x.count()
	lastTs, lastOff := x.lastEntryLocked()
	maxEntries := x.maxEntries
	x.mu.RUnlock()
	if !skipFullCheck && n >= maxEntries-1 {
		return fmt.Errorf("append to full time index %s", x.path)
	}
	if n > 0 && offset < lastOff {
		return fmt.Errorf("time index %s: offset %d below last entry %d", x.path, offset, lastOff)
	}
	if ts <= lastTs || n >= maxEntries {
		return nil
	}
	// Only the append lock's holder writes, so n and the last entry hold.
	// The final entry (skipFullCheck: roll, close) is followed by a trim:
	// the file grows only to hold it.
	var e [timeIndexEntrySize]byte
	binary.BigEndian.PutUint64(e[:], uint64(ts))
	binary.BigEndian.PutUint32(e[8:], uint32(offset-x.baseOffset))
	slot := -1
	if skipFullCheck {
		slot = n
		if written, err := x.writeFinalUnmapped(n, e[:]); written || err != nil {
			return err
		}
	}
	if err := x.ensureMappedFor(slot); err != nil {
		return err
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	if n >= len(x.mmap)/timeIndexEntrySize {
		return fmt.Errorf("append to full time index %s", x.path)
	}
	if err := x.writeEntry(n, e[:]); err != nil {
		return err
	}
	x.entries.Store(int64(n + 1))
	return nil
}

// truncateTo drops the entries for offsets >= offset.
func (x *timeIndex) truncateTo(offset int64) {
	x.rlockMapped()
	n := x.count()
	keep := n
	for keep > 0 && x.baseOffset+x.relOffset(keep-1) >= offset {
		keep--
	}
	x.mu.RUnlock()
	x.truncateEntries(keep)
}

// sanityCheck is Kafka's TimeIndex.sanityCheck: whole entries, the last
// timestamp not below the first, the last offset not below the base offset.
// It reads only the first and last entries, without mapping the index.
func (x *timeIndex) sanityCheck() error {
	if err := x.corruption(); err != nil {
		return err
	}
	first, last, n, err := x.firstAndLast()
	if err != nil {
		return err
	}
	return x.checkEntries(n, first, last)
}

// checkLocked is sanityCheck on the mapped index; the caller holds mu.
func (x *timeIndex) checkLocked() error {
	n := x.mappedCount()
	if n == 0 {
		return x.checkEntries(0, nil, nil)
	}
	e := timeIndexEntrySize
	return x.checkEntries(n, x.mmap[:e], x.mmap[(n-1)*e:n*e])
}

func (x *timeIndex) checkEntries(n int, firstEntry, lastEntry []byte) error {
	if x.fileSize%timeIndexEntrySize != 0 {
		return fmt.Errorf("%w: %s has size %d, not a multiple of %d", errCorruptIndex, x.path, x.fileSize, timeIndexEntrySize)
	}
	if n == 0 {
		return nil
	}
	first, last := int64(binary.BigEndian.Uint64(firstEntry)), int64(binary.BigEndian.Uint64(lastEntry))
	if last < first {
		return fmt.Errorf("%w: %s last timestamp %d below first %d", errCorruptIndex, x.path, last, first)
	}
	return nil
}

const noTimestamp = int64(-1)
