package log

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// LeaderEpochCheckpointFile is the leader epoch cache's file in each
// partition directory, in Kafka's checkpoint format: a version line (0), a
// count line, then one "epoch startOffset" line per entry, oldest first.
const LeaderEpochCheckpointFile = "leader-epoch-checkpoint"

// writeLeaderEpochCheckpoint replaces the partition's leader-epoch-checkpoint
// by a rename (temporary file, rename), durably with sync (fsyncs of the
// file and the directory). Without, a crash may leave the old file or a torn
// one that loading rebuilds from the log.
func writeLeaderEpochCheckpoint(dir string, entries []EpochEntry, sync bool) error {
	path := filepath.Join(dir, LeaderEpochCheckpointFile)
	return replaceFile(path, path+".tmp", formatLeaderEpochs(entries), sync)
}

// formatLeaderEpochs renders entries in Kafka's checkpoint format.
func formatLeaderEpochs(entries []EpochEntry) []byte {
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "0\n%d\n", len(entries))
	for _, e := range entries {
		fmt.Fprintf(&buf, "%d %d\n", e.Epoch, e.StartOffset)
	}
	return buf.Bytes()
}

// readLeaderEpochCheckpoint reads the partition's leader-epoch-checkpoint. A
// missing file is an error matching os.ErrNotExist; a torn or garbled one
// (bad version or count, a bad line, a negative epoch or offset) is a
// malformed-checkpoint error.
func readLeaderEpochCheckpoint(dir string) ([]EpochEntry, error) {
	path := filepath.Join(dir, LeaderEpochCheckpointFile)
	lines, err := readCheckpointEntries(path, 2)
	if err != nil {
		return nil, err
	}
	entries := make([]EpochEntry, 0, len(lines))
	for _, f := range lines {
		epoch, err1 := strconv.ParseInt(f[0], 10, 32)
		offset, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil || epoch < 0 || offset < 0 {
			return nil, fmt.Errorf("malformed checkpoint %s: bad entry %q", path, strings.Join(f, " "))
		}
		entries = append(entries, EpochEntry{Epoch: int32(epoch), StartOffset: offset})
	}
	return entries, nil
}

// loadLeaderEpochsLocked builds the epoch cache of a log being opened, after
// its segments were loaded and recovered (Kafka's LeaderEpochFileCache
// construction and the cache steps of LogLoader):
//   - the checkpoint is read through assign, which drops entries that break
//     monotonicity, as Kafka's constructor does;
//   - a missing, torn or garbled checkpoint is rebuilt from every batch in
//     the log (Kafka would start empty or fail to load);
//   - after an unclean shutdown the segments rescanned from the recovery
//     point hold the truth: the entries from the first rescanned segment on
//     are dropped and assigned again from its batches;
//   - entries at or past the log end go and the entry covering the log start
//     offset moves to it, since a truncation or start move may have reached
//     the file and not the log, or the other way round.
//
// The file is rewritten, by the first flush, when the cache differs from
// it. The caller owns the log being opened.
func (l *Log) loadLeaderEpochsLocked(hadCleanShutdown bool, recoveryPoint int64) error {
	l.epochs = newLeaderEpochCache(l.dir, l.logger)
	segs, leo := l.snapshot()
	stored, readErr := readLeaderEpochCheckpoint(l.dir)
	scanFrom := -1 // the first segment whose batches assign epochs, if any
	switch {
	case errors.Is(readErr, os.ErrNotExist):
		scanFrom = 0
	case readErr != nil:
		l.logger.Warn("rebuilding leader epoch cache from the log", "dir", l.dir, "reason", readErr)
		scanFrom = 0
	default:
		for _, e := range stored {
			if _, err := l.epochs.assign(e.Epoch, e.StartOffset); err != nil {
				return err
			}
		}
		if !hadCleanShutdown {
			scanFrom = max(floorSegment(segs, recoveryPoint), 0)
		}
	}
	if scanFrom >= 0 {
		l.epochs.truncateFromEnd(segs[scanFrom].baseOffset)
		for _, s := range segs[scanFrom:] {
			if err := l.assignSegmentEpochs(s); err != nil {
				return err
			}
		}
	}
	l.epochs.truncateFromEnd(leo)
	l.epochs.truncateFromStart(l.logStartOffset.Load())
	entries := l.epochs.epochEntries()
	if errors.Is(readErr, os.ErrNotExist) && len(entries) == 0 && leo == l.logStartOffset.Load() {
		// A new (or emptied) log: a missing file already means an empty
		// cache, and the flush after its first epoch writes it. Not
		// writing an empty one spares each new partition a file.
		return nil
	}
	if readErr != nil || !slices.Equal(stored, entries) {
		// Written by the first flush, as any change (markEpochsDirty):
		// until then what differs is above the recovery point, rescanned
		// again if this start is cut short. A broker recovering 100,000
		// logs after a crash rewrote and fsynced the file of each first.
		l.markEpochsDirty()
	}
	return nil
}

// assignSegmentEpochs assigns the epochs of a segment's batches as Kafka's
// LogSegment.recover does: a batch's epoch is assigned at its base offset
// when it is above the latest epoch, so each epoch starts at its first batch.
func (l *Log) assignSegmentEpochs(s *segment) error {
	sc, err := s.scanner(0, s.size.Load())
	if err != nil {
		return err
	}
	defer sc.release()
	for sc.next() {
		h := sc.hdr
		if h.Magic < 2 || h.PartitionLeaderEpoch < 0 {
			continue
		}
		if latest, ok := l.epochs.latest(); ok && h.PartitionLeaderEpoch <= latest.Epoch {
			continue
		}
		if _, err := l.epochs.assign(h.PartitionLeaderEpoch, h.BaseOffset); err != nil {
			return err
		}
	}
	if sc.err != nil {
		return fmt.Errorf("rebuild leader epoch cache from segment %d: %w", s.baseOffset, sc.err)
	}
	return nil
}
