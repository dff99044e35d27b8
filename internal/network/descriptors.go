package network

import (
	"fmt"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// DescriptorBudget is the share of the process's file descriptors
// (RLIMIT_NOFILE) that client connections may hold, across every socket
// server of the process (a combined node's broker and controller
// listeners). Kafka bounds connections only by max.connections, whose
// default is unlimited; a process whose connections take every descriptor
// then cannot open a segment file, and Gregor would answer every produce
// and fetch with an error. A connection accepted past the budget is closed
// at once, as one past max.connections is, so the descriptors the log
// needs stay free however many connections clients open (issue #20 item 5).
type DescriptorBudget struct {
	limit int64
	used  atomic.Int64
}

// DescriptorReserve is how many descriptors outside the log's segment-file
// budget are kept from connections: listeners, the metadata log, index
// files being mapped, checkpoints, the HTTP listener, the runtime's own.
const DescriptorReserve = 64

// NewDescriptorBudget returns a budget of limit connections; limit <= 0
// leaves connections unbounded by descriptors.
func NewDescriptorBudget(limit int) *DescriptorBudget {
	return &DescriptorBudget{limit: int64(limit)}
}

// ConnectionDescriptors is the budget for connections in a process whose
// open-file limit is RLIMIT_NOFILE's soft limit: that limit less the
// descriptors the log may keep open (logFiles, gregor.log.max.open.files as
// resolved, counted as at most half the limit: a log budget past the limit
// is not met anyway, and must not leave connections none) and
// DescriptorReserve, at least 1. It is 0 (unbounded) when the limit cannot
// be read or is infinite.
func ConnectionDescriptors(logFiles int) int {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err != nil || rl.Cur == unix.RLIM_INFINITY || rl.Cur > 1<<30 {
		return 0
	}
	return connectionDescriptors(int(rl.Cur), logFiles)
}

func connectionDescriptors(limit, logFiles int) int {
	return max(limit-min(logFiles, limit/2)-DescriptorReserve, 1)
}

// take counts one more connection; false if the budget is spent.
func (b *DescriptorBudget) take() bool {
	if b == nil || b.limit <= 0 {
		return true
	}
	for {
		n := b.used.Load()
		if n >= b.limit {
			return false
		}
		if b.used.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// give gives back a connection's descriptor once it is closed.
func (b *DescriptorBudget) give() {
	if b == nil || b.limit <= 0 {
		return
	}
	b.used.Add(-1)
}

// Limit is the budget (0: unbounded).
func (b *DescriptorBudget) Limit() int {
	if b == nil {
		return 0
	}
	return int(b.limit)
}

// InUse is how many connections hold a descriptor of the budget.
func (b *DescriptorBudget) InUse() int {
	if b == nil {
		return 0
	}
	return int(b.used.Load())
}

// full reports, as an error, that no connection can be accepted now.
func (b *DescriptorBudget) full() error {
	if b == nil || b.limit <= 0 || b.used.Load() < b.limit {
		return nil
	}
	return fmt.Errorf("every one of the %d file descriptors for connections is in use (RLIMIT_NOFILE less the log's gregor.log.max.open.files and a reserve of %d)", b.limit, DescriptorReserve)
}
