package log

import (
	"container/list"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Segment files under a descriptor budget. Kafka keeps every segment's .log
// open for the life of the broker; with 100,000 partitions that is more
// descriptors than a process may have (ulimit -n is often 20,000 or less).
// Gregor opens a segment's .log on demand and keeps at most a budget of them
// open across the broker (gregor.log.max.open.files), closing the least
// recently used idle ones, like a cache. A file in use — an append, a scan,
// a pending zero-copy send — is pinned and never closed under its user: a
// budget exceeded only by pinned files is exceeded, not enforced by failing
// a read. A partition being written keeps its active segment open because it
// is used all the time; an idle one costs no descriptor.
//
// Reopening is safe because the file's state lives in the file system and
// in the segment (its size), not in the descriptor: writes go through
// WriteAt at positions the segment tracks, and an fsync through a new
// descriptor flushes every dirty page of the file.

// DefaultMaxOpenFiles is the budget when none is configured and the
// descriptor limit cannot be read.
const DefaultMaxOpenFiles = 10000

// defaultMaxOpenFiles is half of RLIMIT_NOFILE (the other half is for
// connections, index mappings being opened, checkpoints and the rest), at
// most DefaultMaxOpenFiles and at least 64.
func defaultMaxOpenFiles() int {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err != nil || rl.Cur == unix.RLIM_INFINITY {
		return DefaultMaxOpenFiles
	}
	return int(max(min(rl.Cur/2, DefaultMaxOpenFiles), 64))
}

// MaxOpenFiles is the segment-file budget gregor.log.max.open.files
// resolves to: configured if positive, else defaultMaxOpenFiles.
func MaxOpenFiles(configured int) int {
	if configured > 0 {
		return configured
	}
	return defaultMaxOpenFiles()
}

// fileCache is the set of open segment files and their budget. Files that
// are open and not pinned sit in lru, most recently used first; pinned files
// are out of it, so eviction takes the back of the list in O(1).
//
// open counts descriptors that exist or are about to: a slot is taken
// before a file is opened and given back only after a file is closed, so
// the process never holds more segment descriptors than open says, and open
// stays within the budget unless pinned files alone exceed it.
type fileCache struct {
	budget int // at most this many open files; <= 0 means no limit

	mu   sync.Mutex
	lru  list.List // of *cachedFile: open, unpinned
	open int       // open files, pinned or not, and slots being opened or closed

	opens atomic.Int64 // files opened (first opens and reopens), for tests and metrics
}

func newFileCache(budget int) *fileCache {
	c := &fileCache{budget: budget}
	c.lru.Init()
	return c
}

// openFiles is how many segment files are open now (or being opened or
// closed).
func (c *fileCache) openFiles() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.open
}

// cachedFile is one segment file that the cache opens and closes.
type cachedFile struct {
	cache *fileCache

	// openMu serializes opening and renaming: a rename never races an
	// open of the old path.
	openMu sync.Mutex
	path   string // guarded by openMu

	// Guarded by cache.mu.
	f       *os.File // nil while closed
	pins    int
	lastUse int64         // UnixNano of the last release, for closeIdle
	elem    *list.Element // in cache.lru while open and unpinned
	closed  bool          // closed for good: acquire fails, the last release closes f
}

func (c *fileCache) file(path string) *cachedFile {
	return &cachedFile{cache: c, path: path}
}

// acquire returns the open file, opening it if needed, and pins it until
// release. The file must not be closed by the caller.
func (cf *cachedFile) acquire() (*os.File, error) {
	c := cf.cache
	c.mu.Lock()
	f, ok := cf.pinLocked()
	closed := cf.closed
	c.mu.Unlock()
	if ok {
		return f, nil
	}
	if closed {
		return nil, fmt.Errorf("segment file %s: %w", cf.pathNow(), ErrClosed)
	}

	cf.openMu.Lock()
	defer cf.openMu.Unlock()
	c.mu.Lock()
	// Another user may have opened it while this one waited for openMu.
	if f, ok := cf.pinLocked(); ok || cf.closed {
		c.mu.Unlock()
		if !ok {
			return nil, fmt.Errorf("segment file %s: %w", cf.path, ErrClosed)
		}
		return f, nil
	}
	c.open++ // the slot for this file
	victims := c.evictLocked()
	c.mu.Unlock()
	c.closeFiles(victims)

	f, err := openRegular(cf.path, unix.O_RDWR, 0)
	if errors.Is(err, unix.EMFILE) || errors.Is(err, unix.ENFILE) {
		// The process ran out of descriptors (connections took them):
		// give back every idle segment file and try once more, rather
		// than fail a read or an append.
		c.closeFiles(c.evictAll())
		f, err = openRegular(cf.path, unix.O_RDWR, 0)
	}
	if err != nil {
		c.mu.Lock()
		c.open--
		c.mu.Unlock()
		return nil, fmt.Errorf("open segment: %w", err)
	}
	c.opens.Add(1)
	c.mu.Lock()
	if cf.closed {
		c.mu.Unlock()
		c.closeFiles([]*os.File{f})
		return nil, fmt.Errorf("segment file %s: %w", cf.path, ErrClosed)
	}
	cf.f, cf.pins = f, 1
	c.mu.Unlock()
	return f, nil
}

// pinLocked pins the file if it is open. The caller holds cache.mu.
func (cf *cachedFile) pinLocked() (*os.File, bool) {
	if cf.f == nil || cf.closed {
		return nil, false
	}
	if cf.pins == 0 {
		cf.cache.lru.Remove(cf.elem)
		cf.elem = nil
	}
	cf.pins++
	return cf.f, true
}

// release gives back a pin taken by acquire. The file stays open (as the
// most recently used) unless the budget needs the room or it was closed
// meanwhile.
func (cf *cachedFile) release() {
	c := cf.cache
	c.mu.Lock()
	cf.pins--
	if cf.pins > 0 {
		c.mu.Unlock()
		return
	}
	var victims []*os.File
	if cf.closed {
		victims = append(victims, cf.f)
		cf.f = nil
	} else {
		cf.lastUse = time.Now().UnixNano()
		cf.elem = c.lru.PushFront(cf)
		victims = c.evictLocked()
	}
	c.mu.Unlock()
	c.closeFiles(victims)
}

// evictLocked takes the least recently used idle files out of the cache
// until the budget holds, and returns them for closeFiles, which gives
// their slots back once they are closed.
func (c *fileCache) evictLocked() []*os.File {
	var victims []*os.File
	for c.budget > 0 && c.open-len(victims) > c.budget {
		back := c.lru.Back()
		if back == nil {
			break // everything open is pinned
		}
		cf := back.Value.(*cachedFile)
		c.lru.Remove(back)
		victims = append(victims, cf.f)
		cf.f, cf.elem = nil, nil
	}
	return victims
}

// FileIdleCloseAfter is how long a segment file stays open unused before the
// manager's sweep closes it, budget or not: a broker whose partitions went
// quiet gives its descriptors back.
const FileIdleCloseAfter = 10 * time.Minute

// closeIdle closes the files unused since cutoff and returns how many.
func (c *fileCache) closeIdle(cutoff time.Time) int {
	c.mu.Lock()
	var victims []*os.File
	for back := c.lru.Back(); back != nil; back = c.lru.Back() {
		cf := back.Value.(*cachedFile)
		if cf.lastUse > cutoff.UnixNano() {
			break // the list is in order of use
		}
		c.lru.Remove(back)
		victims = append(victims, cf.f)
		cf.f, cf.elem = nil, nil
	}
	c.mu.Unlock()
	c.closeFiles(victims)
	return len(victims)
}

// evictAll takes every idle file out of the cache, for closeFiles.
func (c *fileCache) evictAll() []*os.File {
	c.mu.Lock()
	defer c.mu.Unlock()
	var victims []*os.File
	for back := c.lru.Back(); back != nil; back = c.lru.Back() {
		cf := back.Value.(*cachedFile)
		c.lru.Remove(back)
		victims = append(victims, cf.f)
		cf.f, cf.elem = nil, nil
	}
	return victims
}

// closeFiles closes files taken out of the cache and gives back their
// slots. Nobody waits for the close errors: the files were only read, or
// written and flushed (or left to flush) by their segment; an fsync through
// a later descriptor still reports a write-back failure.
func (c *fileCache) closeFiles(files []*os.File) {
	if len(files) == 0 {
		return
	}
	for _, f := range files {
		_ = f.Close()
	}
	c.mu.Lock()
	c.open -= len(files)
	c.mu.Unlock()
}

// close closes the file for good: now if nobody pins it, else at the last
// release (a pending zero-copy send keeps reading it).
func (cf *cachedFile) close() error {
	c := cf.cache
	c.mu.Lock()
	if cf.closed {
		c.mu.Unlock()
		return nil
	}
	cf.closed = true
	var f *os.File
	if cf.pins == 0 && cf.f != nil {
		f = cf.f
		c.lru.Remove(cf.elem)
		cf.f, cf.elem = nil, nil
	}
	c.mu.Unlock()
	if f == nil {
		return nil
	}
	err := f.Close()
	c.mu.Lock()
	c.open--
	c.mu.Unlock()
	if err != nil {
		return fmt.Errorf("close segment %s: %w", cf.pathNow(), err)
	}
	return nil
}

// rename moves the file; an open descriptor stays valid. With missingOK a
// file that does not exist (yet) is renamed in name only.
func (cf *cachedFile) rename(path string, missingOK bool) error {
	cf.openMu.Lock()
	defer cf.openMu.Unlock()
	if err := os.Rename(cf.path, path); err != nil && !(missingOK && errors.Is(err, os.ErrNotExist)) {
		return fmt.Errorf("rename segment file: %w", err)
	}
	cf.path = path
	return nil
}

func (cf *cachedFile) pathNow() string {
	cf.openMu.Lock()
	defer cf.openMu.Unlock()
	return cf.path
}

// isOpen reports whether the file holds a descriptor now (for tests).
func (cf *cachedFile) isOpen() bool {
	cf.cache.mu.Lock()
	defer cf.cache.mu.Unlock()
	return cf.f != nil
}

// withFile runs fn with the file pinned.
func (cf *cachedFile) withFile(fn func(f *os.File) error) error {
	f, err := cf.acquire()
	if err != nil {
		return err
	}
	defer cf.release()
	return fn(f)
}

// openRegular opens a regular file without offering it to the runtime's
// network poller: os.OpenFile tries that (and fails) for every file, five
// wasted system calls that loading 100,000 partitions would pay several
// times each.
func openRegular(path string, flags int, perm uint32) (*os.File, error) {
	fd, err := unix.Open(path, flags|unix.O_CLOEXEC, perm)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}

// readFile is os.ReadFile through openRegular, for the small files a log
// reads at load (checkpoints, snapshots, partition.metadata).
//
// It reads with bare system calls into a buffer that grows while reads
// fill it: a read of a regular file that returns less than asked is at the
// file's end, so a small file costs open, one read and close (os.ReadFile
// adds a stat, an fcntl and a read that returns 0).
func readFile(path string) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	buf := make([]byte, 0, 512)
	for {
		n, err := unix.Read(fd, buf[len(buf):cap(buf)])
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "read", Path: path, Err: err}
		}
		buf = buf[:len(buf)+n]
		if len(buf) < cap(buf) {
			return buf, nil
		}
		buf = slices.Grow(buf, cap(buf))
	}
}
