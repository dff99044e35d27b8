package log

import "time"

// Lazy index maps (Kafka's LazyIndex). A broker with 100,000 partitions
// must not hold hundreds of thousands of mappings and descriptors (the
// kernel's vm.max_map_count is often 65,530): an index is measured or
// created at open and mapped only when first searched or appended to, and
// an index is unmapped again once nobody has used it for a while and its
// pages are flushed. That includes the active segment's, once the log is
// idle and flushed to its end: the next append maps it again.

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
	if x.mapped || x.closed || x.entries.Load() == 0 {
		return // (without entries, count is 0: nothing to read)
	}
	x.mu.RUnlock()
	x.mu.Lock()
	if !x.mapped && !x.closed {
		_ = x.mapOnDemandLocked()
	}
	// Downgrade: the idle sweep unmaps only under the log's append lock and
	// only indexes idle for minutes, so a remap between Unlock and RLock is
	// harmless (count guards the reads either way).
	x.mu.Unlock()
	x.mu.RLock()
}

// count is the number of entries readable from the current mapping, none
// if the index is corrupt. The caller holds mu.
func (x *mmapIndex) count() int {
	if x.corrupt != nil {
		return 0
	}
	return x.mappedCount()
}

// mappedCount is count whatever the sanity check said.
func (x *mmapIndex) mappedCount() int {
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

// unmapIdleIndexes unmaps the indexes of segments below the recovery
// point that have not been used since cutoff, and returns how many
// mappings it released. The active segment counts as below the recovery
// point when the log is flushed to its end. The append lock keeps the
// active segment (the only one appended to, and the one truncation makes
// active) stable, and appends out: a recovery point at the log end means
// every index entry written so far was flushed before it was published.
func (l *Log) unmapIdleIndexes(cutoff time.Time) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return 0, nil
	}
	segs, leo := l.snapshot()
	rp := l.recoveryPoint.Load()
	released := 0
	for i := 0; i < len(segs); i++ {
		if i+1 < len(segs) && segs[i+1].baseOffset > rp || i+1 == len(segs) && rp < leo {
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
// IndexIdleUnmapAfter, in every log, and closes the segment files unused
// for FileIdleCloseAfter.
func (m *Manager) unmapIdleIndexes(now time.Time) {
	m.files.closeIdle(now.Add(-FileIdleCloseAfter))
	cutoff := now.Add(-IndexIdleUnmapAfter)
	for tp, l := range m.All() {
		if _, err := l.unmapIdleIndexes(cutoff); err != nil {
			m.logger.Warn("unmapping idle indexes failed", "partition", tp.String(), "err", err)
		}
	}
}
