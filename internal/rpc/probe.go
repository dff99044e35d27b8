package rpc

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"
	"time"
)

// probeAttempts and probeGap bound ProbeGone: a dial that connects is tried
// again probeGap later, up to probeAttempts dials, since a process in the
// middle of exiting may still have its listener open for a moment after
// its other sockets closed.
const (
	probeAttempts = 3
	probeGap      = 20 * time.Millisecond
)

// ProbeGone reports whether nothing listens at addr any more: a dial is
// refused (ECONNREFUSED, the kernel's answer for a port no socket listens
// on). That is a fact about the peer's process (it ended, or closed its
// listener to shut down), not a guess from silence: a dial that connects,
// times out (timeout bounds each dial) or fails otherwise reports false.
func ProbeGone(ctx context.Context, addr string, timeout time.Duration) bool {
	d := net.Dialer{Timeout: timeout}
	for attempt := range probeAttempts {
		if attempt > 0 {
			t := time.NewTimer(probeGap)
			select {
			case <-ctx.Done():
				t.Stop()
				return false
			case <-t.C:
			}
		}
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return errors.Is(err, syscall.ECONNREFUSED)
		}
		conn.Close()
	}
	return false
}

// PeerClosed reports whether a Request failed because the peer closed or
// reset the connection (EOF, ECONNRESET, EPIPE), as opposed to a timeout, a
// refused dial or a bad answer: the connection was dead before or during
// the exchange, and the next Request dials a new one.
func PeerClosed(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}
