package network

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"

	"github.com/twmb/franz-go/pkg/kmsg"
	"golang.org/x/sys/unix"
)

// Zero-copy responses. A Fetch response is mostly record batches that lie
// in segment files; copying them through the process costs two copies and
// the garbage. A handler instead returns a FileResponse whose encoding
// leaves holes where file ranges go, and the connection writer sends the
// ranges with sendfile(2) from the page cache to the socket (Kafka's
// FileRecords.writeTo / transferTo) on plaintext TCP connections, or copies
// them on other connections.

// FileRange is a byte range of an open file that a response carries by
// reference. The file must stay open until the response is released.
type FileRange struct {
	File   *os.File
	Offset int64
	Size   int64
}

// Frame is an encoded response body with file ranges spliced in: Holes[i]'s
// bytes go on the wire right after Buf[:Holes[i].At]. Holes are in
// increasing At order.
type Frame struct {
	Buf   []byte
	Holes []Hole
}

// Hole places a file range at a position of Frame.Buf.
type Hole struct {
	At int
	FileRange
}

// AppendRange adds a hole for r at the current end of Buf.
func (f *Frame) AppendRange(r FileRange) {
	f.Holes = append(f.Holes, Hole{At: len(f.Buf), FileRange: r})
}

// FileResponse is a response whose encoding refers to file ranges. It is
// still a complete kmsg.Response (its AppendTo copies the ranges in), so
// code that does not know about holes keeps working; the connection writer
// uses AppendFrame instead.
type FileResponse interface {
	kmsg.Response
	// AppendFrame appends the response body, at the version set on it,
	// to f: bytes to f.Buf and file ranges as holes.
	AppendFrame(f *Frame)
	// Release gives back the file ranges. The server calls it exactly once,
	// after the response was written or when it will not be.
	Release()
}

// encodeFileResponse frames a FileResponse like encodeResponse: the size
// prefix counts the holes' bytes too.
func encodeFileResponse(correlationID int32, resp FileResponse) Frame {
	f := Frame{Buf: make([]byte, 8, 256)}
	binary.BigEndian.PutUint32(f.Buf[4:], uint32(correlationID))
	if resp.IsFlexible() && resp.Key() != apiVersionsKey {
		f.Buf = append(f.Buf, 0) // no header tags
	}
	resp.AppendFrame(&f)
	size := int64(len(f.Buf) - 4)
	for _, h := range f.Holes {
		size += h.Size
	}
	binary.BigEndian.PutUint32(f.Buf, uint32(size))
	return f
}

// smallRangeBytes is the size below which a range is copied into the write
// buffer instead of sent with sendfile: a flush plus a sendfile call costs
// more than copying a few KiB, and small ranges then share one write.
const smallRangeBytes = 16 << 10

// errFileShrunk means a range's file ended before the range did (a
// truncated segment). The response's size prefix is already on the wire,
// so the connection must close, as Kafka closes it.
var errFileShrunk = errors.New("file shorter than the range being sent")

// writeFrame writes a frame with holes: bytes through the buffered writer,
// large ranges with sendfile after flushing what precedes them.
func (c *conn) writeFrame(f Frame) error {
	at := 0
	for _, h := range f.Holes {
		if _, err := c.bw.Write(f.Buf[at:h.At]); err != nil {
			return err
		}
		at = h.At
		if err := c.writeRange(h.FileRange); err != nil {
			return err
		}
	}
	_, err := c.bw.Write(f.Buf[at:])
	return err
}

// writeRange sends one file range.
func (c *conn) writeRange(r FileRange) error {
	if r.Size == 0 {
		return nil
	}
	sc, canSendfile := c.nc.(syscall.Conn)
	if !canSendfile || r.Size <= int64(min(smallRangeBytes, c.bw.Available())) {
		return c.copyRange(r)
	}
	if err := c.bw.Flush(); err != nil {
		return err
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return c.copyRange(r)
	}
	sent, err := sendfile(rc, r)
	if errors.Is(err, errNoSendfile) && sent == 0 {
		return c.copyRange(r)
	}
	c.touch()
	return err
}

// copyRange copies a range into the buffered writer.
func (c *conn) copyRange(r FileRange) error {
	n, err := io.Copy(c.bw, io.NewSectionReader(r.File, r.Offset, r.Size))
	if err == nil && n < r.Size {
		err = errFileShrunk
	}
	if err != nil {
		return fmt.Errorf("copy %s at %d: %w", r.File.Name(), r.Offset, err)
	}
	return nil
}

// errNoSendfile means the kernel refused sendfile for this pair of
// descriptors (EINVAL, ENOSYS): nothing was sent, copy instead.
var errNoSendfile = errors.New("sendfile not supported")

// sendfile sends r to the socket behind rc with sendfile(2), at an explicit
// offset so that concurrent sends from one file do not share a position.
// The file descriptor is pinned by its own RawConn for the duration; the
// socket's RawConn.Write waits for writability (and honours the write
// deadline) whenever the socket buffer is full.
func sendfile(rc syscall.RawConn, r FileRange) (int64, error) {
	fc, err := r.File.SyscallConn()
	if err != nil {
		return 0, fmt.Errorf("sendfile %s: %w", r.File.Name(), err)
	}
	off, remain := r.Offset, r.Size
	var sendErr error
	ctlErr := fc.Control(func(src uintptr) {
		werr := rc.Write(func(dst uintptr) bool {
			for remain > 0 {
				n, err := unix.Sendfile(int(dst), int(src), &off, int(min(remain, 1<<30)))
				if n > 0 {
					remain -= int64(n)
				}
				switch {
				case err == unix.EAGAIN:
					return false // wait until the socket is writable
				case err == unix.EINTR:
					continue
				case err == unix.EINVAL || err == unix.ENOSYS:
					sendErr = errNoSendfile
					return true
				case err != nil:
					sendErr = os.NewSyscallError("sendfile", err)
					return true
				case n == 0:
					sendErr = errFileShrunk
					return true
				}
			}
			return true
		})
		if sendErr == nil {
			sendErr = werr // the socket failed or its write deadline passed
		}
	})
	sent := r.Size - remain
	if ctlErr != nil {
		return sent, fmt.Errorf("sendfile %s: %w", r.File.Name(), ctlErr)
	}
	if sendErr != nil {
		return sent, fmt.Errorf("sendfile %s at %d: %w", r.File.Name(), r.Offset, sendErr)
	}
	return sent, nil
}
