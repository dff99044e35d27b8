package log

import "time"

// Lazy index maps (Kafka's LazyIndex). A broker with 10,000 partitions, each
// with a few old segments, must not hold tens of thousands of mappings and
// descriptors: an existing index is measured at open and mapped only when a
// reader first searches it, and an inactive segment's indexes are unmapped
// again once nobody has searched them for a while. The active segment's
// indexes stay mapped: every append writes to them.

// IndexIdleUnmapAfter is how long an inactive segment's index stays mapped
// after its last search.
const IndexIdleUnmapAfter = 10 * time.Minute

// rlockMapped takes mu shared with the file mapped (if it has any bytes).
// The caller releases mu with RUnlock. If mapping fails, the index reads as
// empty (count is 0): searches then start at the segment's first batch,
// which is slower but correct.
func (x *mmapIndex) rlockMapped() {
	x.lastUse.Store(time.Now().UnixNano())
	x.mu.RLock()
	if x.mapped || x.closed {
		return
	}
	x.mu.RUnlock()
	x.mu.Lock()
	if !x.mapped && !x.closed {
		_ = x.mapLocked()
	}
	// Downgrade: the idle sweep unmaps only under the log's append lock and
	// only indexes idle for minutes, so a remap between Unlock and RLock is
	// harmless (count guards the reads either way).
	x.mu.Unlock()
	x.mu.RLock()
}

// count is the number of entries readable from the current mapping. The
// caller holds mu.
func (x *mmapIndex) count() int {
	return int(min(x.entries.Load(), int64(len(x.mmap)/x.entrySize)))
}

// isMapped reports whether the index currently holds a mapping.
func (x *mmapIndex) isMapped() bool {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.mmap != nil
}

// unmapIfIdle drops the mapping when nobody has searched the index since
// cutoff. Only indexes of inactive, flushed segments may be unmapped (dirty
// pages are flushed by the segment's flush before; an unmapped index is not
// msynced again), which the caller ensures.
func (x *mmapIndex) unmapIfIdle(cutoff time.Time) (bool, error) {
	if x.lastUse.Load() > cutoff.UnixNano() {
		return false, nil
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if !x.mapped || x.mmap == nil || x.closed {
		return false, nil
	}
	return true, x.unmapLocked()
}

// unmapIdleIndexes unmaps the indexes of inactive segments below the
// recovery point that have not been searched since cutoff, and returns how
// many mappings it released. The append lock keeps the active segment (the
// only one appended to, and the one truncation makes active) stable.
func (l *Log) unmapIdleIndexes(cutoff time.Time) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return 0, nil
	}
	segs, _ := l.snapshot()
	rp := l.recoveryPoint.Load()
	released := 0
	for i := 0; i+1 < len(segs); i++ {
		if segs[i+1].baseOffset > rp {
			break // not flushed yet: its index pages may be dirty
		}
		for _, x := range []*mmapIndex{&segs[i].offsetIdx.mmapIndex, &segs[i].timeIdx.mmapIndex} {
			done, err := x.unmapIfIdle(cutoff)
			if err != nil {
				return released, err
			}
			if done {
				released++
			}
		}
	}
	return released, nil
}

// MappedIndexes counts the index mappings the log holds (for tests and
// diagnostics).
func (l *Log) MappedIndexes() int {
	segs, _ := l.snapshot()
	n := 0
	for _, s := range segs {
		if s.offsetIdx.isMapped() {
			n++
		}
		if s.timeIdx.isMapped() {
			n++
		}
	}
	return n
}

// indexSweepInterval is how often the manager looks for idle index maps.
const indexSweepInterval = time.Minute

// unmapIdleIndexes releases the index maps that no reader has used for
// IndexIdleUnmapAfter, in every log.
func (m *Manager) unmapIdleIndexes(now time.Time) {
	cutoff := now.Add(-IndexIdleUnmapAfter)
	for tp, l := range m.All() {
		if _, err := l.unmapIdleIndexes(cutoff); err != nil {
			m.logger.Warn("unmapping idle indexes failed", "partition", tp.String(), "err", err)
		}
	}
}
