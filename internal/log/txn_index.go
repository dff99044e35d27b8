package log

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
)

// The transaction index is Kafka's TransactionIndex: per segment, a
// "<base offset>.txnindex" file listing the aborted transactions whose ABORT
// marker lies in that segment, so that a read_committed fetch can tell the
// consumer which producers' records to drop. Entries are 34 bytes, big
// endian, in marker order:
//
//	version            int16 (0)
//	producer_id        int64
//	first_offset       int64  the transaction's first offset (maybe in an older segment)
//	last_offset        int64  the ABORT marker's offset
//	last_stable_offset int64  the partition's LSO right after the abort
//
// The file is created at the first entry (most segments never have one) and
// written without a mapping: entries are rare (one per aborted transaction
// and partition) and read only by read_committed fetches that cross them.
// Its descriptor is one of the segment files under the broker's budget
// (file_cache.go).

const (
	txnIndexEntrySize  = 2 + 8 + 8 + 8 + 8
	abortedTxnVersion0 = 0
)

// errCorruptTxnIndex is Kafka's CorruptIndexException for the transaction
// index; the segment is then recovered, which rebuilds the index.
var errCorruptTxnIndex = errors.New("corrupt transaction index")

// AbortedTxn is one entry of a transaction index (Kafka's AbortedTxn).
type AbortedTxn struct {
	ProducerID  int64
	FirstOffset int64
	// LastOffset is the offset of the transaction's ABORT marker.
	LastOffset int64
	// LastStableOffset is the partition's last stable offset once the abort
	// was written: the first offset of the oldest transaction then still
	// open, or LastOffset+1. A search ends at an entry whose LSO passes its
	// upper bound: no transaction aborted later can start below it.
	LastStableOffset int64
}

func (a AbortedTxn) encode(b []byte) {
	be := binary.BigEndian
	be.PutUint16(b[0:], abortedTxnVersion0)
	be.PutUint64(b[2:], uint64(a.ProducerID))
	be.PutUint64(b[10:], uint64(a.FirstOffset))
	be.PutUint64(b[18:], uint64(a.LastOffset))
	be.PutUint64(b[26:], uint64(a.LastStableOffset))
}

func decodeAbortedTxn(b []byte) (AbortedTxn, error) {
	be := binary.BigEndian
	if v := int16(be.Uint16(b)); v != abortedTxnVersion0 {
		return AbortedTxn{}, fmt.Errorf("%w: unknown entry version %d", errCorruptTxnIndex, v)
	}
	return AbortedTxn{
		ProducerID:       int64(be.Uint64(b[2:])),
		FirstOffset:      int64(be.Uint64(b[10:])),
		LastOffset:       int64(be.Uint64(b[18:])),
		LastStableOffset: int64(be.Uint64(b[26:])),
	}, nil
}

// txnIndex is one segment's transaction index file.
type txnIndex struct {
	baseOffset int64
	// size is the file's length in bytes, readable without mu so that
	// searches skip segments without aborted transactions.
	size atomic.Int64

	mu   sync.Mutex
	path string
	file *cachedFile // opened at the first append or read
	// lastOffset is the last entry's marker offset (-1: none); entries must
	// be appended in marker order.
	lastOffset int64
	dirty      bool
	closed     bool
}

// newTxnIndex describes the transaction index at path, known not to exist.
func newTxnIndex(path string, baseOffset int64, files *fileCache) *txnIndex {
	return &txnIndex{baseOffset: baseOffset, path: path, lastOffset: -1, file: files.file(path)}
}

// openTxnIndex describes the transaction index at path; the file need not
// exist.
func openTxnIndex(path string, baseOffset int64, files *fileCache) (*txnIndex, error) {
	x := newTxnIndex(path, baseOffset, files)
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("open transaction index: %w", err)
	default:
		x.size.Store(st.Size())
		x.lastOffset = -2 // unknown until read
	}
	return x, nil
}

// fileLocked returns the file pinned open, creating it when create is set;
// nil (and no error) when it does not exist and create is not set. The
// caller releases a returned file with x.file.release.
func (x *txnIndex) fileLocked(create bool) (*os.File, error) {
	if x.closed {
		return nil, fmt.Errorf("transaction index %s: %w", x.path, ErrClosed)
	}
	if create && x.size.Load() == 0 {
		f, err := os.OpenFile(x.path, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return nil, fmt.Errorf("open transaction index: %w", err)
		}
		if err := f.Close(); err != nil {
			return nil, fmt.Errorf("create transaction index %s: %w", x.path, err)
		}
	}
	f, err := x.file.acquire()
	if errors.Is(err, os.ErrNotExist) && !create {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("transaction index: %w", err)
	}
	return f, nil
}

// readAllLocked decodes every entry.
func (x *txnIndex) readAllLocked() ([]AbortedTxn, error) {
	size := x.size.Load()
	if size == 0 {
		return nil, nil
	}
	if size%txnIndexEntrySize != 0 {
		return nil, fmt.Errorf("%w: %s is %d bytes, not a multiple of %d", errCorruptTxnIndex, x.path, size, txnIndexEntrySize)
	}
	f, err := x.fileLocked(false)
	if err != nil || f == nil {
		return nil, err
	}
	defer x.file.release()
	buf := make([]byte, size)
	if n, err := f.ReadAt(buf, 0); int64(n) < size {
		return nil, fmt.Errorf("read transaction index %s: %w", x.path, errors.Join(err, errShortRead))
	}
	out := make([]AbortedTxn, 0, size/txnIndexEntrySize)
	for b := buf; len(b) > 0; b = b[txnIndexEntrySize:] {
		a, err := decodeAbortedTxn(b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", x.path, err)
		}
		out = append(out, a)
	}
	return out, nil
}

// entries returns every entry, in marker order.
func (x *txnIndex) entries() ([]AbortedTxn, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.readAllLocked()
}

// append adds an aborted transaction; its marker must follow the last
// entry's (Kafka's TransactionIndex.append).
func (x *txnIndex) append(a AbortedTxn) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.lastOffset == -2 {
		all, err := x.readAllLocked()
		if err != nil {
			return err
		}
		x.lastOffset = -1
		if len(all) > 0 {
			x.lastOffset = all[len(all)-1].LastOffset
		}
	}
	if x.lastOffset >= a.LastOffset {
		return fmt.Errorf("transaction index %s: the last offset of appended transactions must increase: %d after %d",
			x.path, a.LastOffset, x.lastOffset)
	}
	f, err := x.fileLocked(true)
	if err != nil {
		return err
	}
	defer x.file.release()
	var b [txnIndexEntrySize]byte
	a.encode(b[:])
	size := x.size.Load()
	if _, err := f.WriteAt(b[:], size); err != nil {
		return fmt.Errorf("append to transaction index %s: %w", x.path, err)
	}
	x.size.Store(size + txnIndexEntrySize)
	x.lastOffset = a.LastOffset
	x.dirty = true
	return nil
}

// collect returns the entries whose transactions overlap [fetchOffset,
// upperBound) and whether the search may stop here: an entry's last stable
// offset reached upperBound (Kafka's TransactionIndex.collectAbortedTxns).
func (x *txnIndex) collect(fetchOffset, upperBound int64) (found []AbortedTxn, complete bool, err error) {
	if x.size.Load() == 0 {
		return nil, false, nil
	}
	all, err := x.entries()
	if err != nil {
		return nil, false, err
	}
	for _, a := range all {
		if a.LastOffset >= fetchOffset && a.FirstOffset < upperBound {
			found = append(found, a)
		}
		if a.LastStableOffset >= upperBound {
			return found, true, nil
		}
	}
	return found, false, nil
}

// truncateTo drops the entries whose marker is at or after offset.
func (x *txnIndex) truncateTo(offset int64) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	all, err := x.readAllLocked()
	if err != nil {
		return err
	}
	keep := len(all)
	for i, a := range all {
		if a.LastOffset >= offset {
			keep = i
			break
		}
	}
	if keep == len(all) {
		return nil
	}
	return x.truncateEntriesLocked(all[:keep])
}

// reset empties the index (segment recovery rebuilds it).
func (x *txnIndex) reset() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.size.Load() == 0 && x.lastOffset == -1 {
		return nil
	}
	return x.truncateEntriesLocked(nil)
}

func (x *txnIndex) truncateEntriesLocked(kept []AbortedTxn) error {
	f, err := x.fileLocked(false)
	if err != nil {
		return err
	}
	size := int64(len(kept)) * txnIndexEntrySize
	if f != nil {
		defer x.file.release()
		if err := f.Truncate(size); err != nil {
			return fmt.Errorf("truncate transaction index %s: %w", x.path, err)
		}
		x.dirty = true
	}
	x.size.Store(size)
	x.lastOffset = -1
	if len(kept) > 0 {
		x.lastOffset = kept[len(kept)-1].LastOffset
	}
	return nil
}

// sanityCheck is Kafka's TransactionIndex.sanityCheck: whole entries, each
// marker inside this segment or after it.
func (x *txnIndex) sanityCheck() error {
	all, err := x.entries()
	if err != nil {
		return err
	}
	for _, a := range all {
		if a.LastOffset < x.baseOffset {
			return fmt.Errorf("%w: %s: last offset %d of aborted transaction of producer %d is below the segment's base offset %d",
				errCorruptTxnIndex, x.path, a.LastOffset, a.ProducerID, x.baseOffset)
		}
	}
	return nil
}

// flush fsyncs entries written since the last flush.
func (x *txnIndex) flush() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if !x.dirty {
		return nil
	}
	f, err := x.fileLocked(false)
	if err != nil {
		return err
	}
	if f == nil {
		return fmt.Errorf("fsync transaction index %s: %w", x.path, os.ErrNotExist)
	}
	defer x.file.release()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("fsync transaction index %s: %w", x.path, err)
	}
	x.dirty = false
	return nil
}

// close releases the file; later appends and reads fail.
func (x *txnIndex) close() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.closed = true
	return x.file.close()
}

// rename moves the file, if there is one, to path.
func (x *txnIndex) rename(path string) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if err := x.file.rename(path, true); err != nil {
		return fmt.Errorf("rename transaction index: %w", err)
	}
	x.path = path
	return nil
}

// delete removes the file, if there is one.
func (x *txnIndex) delete() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if err := os.Remove(x.path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("delete transaction index: %w", err)
	}
	return nil
}
