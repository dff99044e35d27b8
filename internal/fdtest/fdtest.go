// Package fdtest runs a test with the process out of file descriptors:
// the open-file limit lowered to what is open plus some headroom, and that
// headroom taken by descriptors of /dev/null, so the next open, accept or
// socket fails with EMFILE. Tests of what the broker does then (the log
// giving back idle files, a listener backing off) share it.
package fdtest

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// Hogs are the descriptors Exhaust opened; Free gives them back.
type Hogs struct {
	files []*os.File
}

// Exhaust lowers RLIMIT_NOFILE to the descriptors open now plus headroom
// and opens /dev/null until none is left. At the test's cleanup the hogs
// are closed and the limit restored. It skips the test where the limit
// cannot be read or lowered.
func Exhaust(t testing.TB, headroom int) *Hogs {
	t.Helper()
	var old unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &old); err != nil {
		t.Skip(err)
	}
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip(err)
	}
	limited := old
	limited.Cur = uint64(len(fds) + headroom)
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &limited); err != nil {
		t.Skip(err)
	}
	h := &Hogs{}
	t.Cleanup(func() {
		h.Free(-1)
		_ = unix.Setrlimit(unix.RLIMIT_NOFILE, &old)
	})
	for {
		f, err := os.Open(os.DevNull)
		if err != nil {
			break // EMFILE: no descriptor left
		}
		h.files = append(h.files, f)
	}
	return h
}

// Free closes n of the hogs, or all of them when n < 0.
func (h *Hogs) Free(n int) {
	if n < 0 || n > len(h.files) {
		n = len(h.files)
	}
	for _, f := range h.files[len(h.files)-n:] {
		f.Close()
	}
	h.files = h.files[:len(h.files)-n]
}
