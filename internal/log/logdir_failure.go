package log

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"runtime/debug"
	"sync/atomic"
	"syscall"
)

// ErrKafkaStorage is KAFKA_STORAGE_ERROR: the log's directory went offline
// after an I/O error (a full disk, a failing device), so the log takes no
// more appends and serves no more reads until the broker restarts.
var ErrKafkaStorage = errors.New("log directory offline")

// dirHealth is one log.dir's online state, shared by the Manager and every
// Log in that directory (Kafka's LogDirFailureChannel): the first I/O error
// in any of them takes the whole directory offline. It is lock-free because
// it is reached from under a log's append lock, and the manager takes that
// lock while holding its own.
type dirHealth struct {
	path    string
	logger  *slog.Logger
	failure atomic.Pointer[error]
}

func newDirHealth(path string, logger *slog.Logger) *dirHealth {
	return &dirHealth{path: path, logger: logger}
}

// offline is nil while the directory is online, else why it is not; the
// error matches ErrKafkaStorage.
func (h *dirHealth) offline() error {
	if p := h.failure.Load(); p != nil {
		return *p
	}
	return nil
}

// fail takes the directory offline; the first failure is the one reported.
func (h *dirHealth) fail(cause error) {
	err := fmt.Errorf("%w: %s: %w", ErrKafkaStorage, h.path, cause)
	if h.failure.CompareAndSwap(nil, &err) {
		h.logger.Error("log dir offline after an I/O error; its partitions answer KAFKA_STORAGE_ERROR until restart",
			"dir", h.path, "err", cause)
	}
}

// isIOError tells an error of the file system (Kafka's IOException) from a
// logic error: only the former takes a log.dir offline. Running out of file
// descriptors (EMFILE, ENFILE: connections took them) is the process's
// shortage, not the disk's failure: the operation fails and its caller
// answers with an error, but the directory stays online and the next
// operation, once descriptors are free again, succeeds (issue #20 item 5).
func isIOError(err error) bool {
	if errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
		return false
	}
	var pathErr *fs.PathError
	var sysErr *os.SyscallError
	var linkErr *os.LinkError
	var errno syscall.Errno
	return errors.As(err, &pathErr) || errors.As(err, &sysErr) || errors.As(err, &linkErr) || errors.As(err, &errno)
}

// OfflineError is nil while the log's directory is online; otherwise an
// error matching ErrKafkaStorage that names the directory and the cause.
func (l *Log) OfflineError() error { return l.health.offline() }

// checkIO passes err through, except that an I/O error takes the log's
// directory offline and comes back matching ErrKafkaStorage (Kafka's
// maybeHandleIOException).
func (l *Log) checkIO(err error) error {
	if err == nil || errors.Is(err, ErrKafkaStorage) || !isIOError(err) {
		return err
	}
	l.health.fail(err)
	return fmt.Errorf("%w: %w", ErrKafkaStorage, err)
}

// failAppendLocked handles an append that failed after it may have written
// bytes: an I/O error takes the directory offline, and the bytes beyond the
// published end of the active segment are cut so that a partial batch never
// becomes readable, not even after a restart. The caller holds mu.
func (l *Log) failAppendLocked(err error) error {
	err = l.checkIO(err)
	if !errors.Is(err, ErrKafkaStorage) {
		return err
	}
	segs, _ := l.snapshot()
	active := segs[len(segs)-1]
	if !active.preallocated {
		// Best effort: shrinking needs no space. If it fails too, recovery
		// at the next start cuts the torn batch (the dir is not marked clean).
		if terr := active.file.withFile(func(f *os.File) error { return f.Truncate(active.size.Load()) }); terr != nil {
			l.logger.Warn("cutting failed append", "dir", l.dir, "err", terr)
		}
	}
	return err
}

// releaseFilesLocked closes an offline log's files without writing to them
// (Kafka's closeHandlers): no flush, no final index entry, no trim. Restart
// recovers the log from its recovery point. The caller holds mu.
func (l *Log) releaseFilesLocked() error {
	l.flushMu.Lock()
	l.filesClosed = true
	l.flushMu.Unlock()
	segs, _ := l.snapshot()
	var errs []error
	for _, s := range segs {
		errs = append(errs, s.release())
	}
	for _, p := range l.pendingDeletes {
		errs = append(errs, p.seg.release())
	}
	l.pendingDeletes = nil
	if err := errors.Join(errs...); err != nil {
		l.logger.Warn("releasing files of offline log", "dir", l.dir, "err", err)
	}
	return nil
}

// release closes the segment's files without writing.
func (s *segment) release() error {
	return errors.Join(s.offsetIdx.release(), s.timeIdx.release(), s.file.close())
}

// release unmaps the index without writing (no trim).
func (x *mmapIndex) release() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return nil
	}
	x.closed = true
	return x.unmapLocked()
}

// writeEntry stores index slot n into the mapping. On a full file system a
// store into a not yet allocated page of the (sparse, preallocated) mapped
// file raises SIGBUS, which would kill the process; with panic-on-fault set
// for the store, it becomes an error (matching ENOSPC, its usual cause) and
// the log.dir goes offline instead.
func (x *mmapIndex) writeEntry(n int, entry []byte) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		if _, fault := r.(interface{ Addr() uintptr }); !fault {
			panic(r) // a bug, not the file system
		}
		err = &fs.PathError{Op: "write index entry", Path: x.path,
			Err: fmt.Errorf("%w: fault storing into the mapping (%v)", syscall.ENOSPC, r)}
	}()
	copy(x.mmap[n*x.entrySize:(n+1)*x.entrySize], entry)
	x.written.Store(true)
	return nil
}
