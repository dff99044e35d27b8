package log

import (
	"errors"
	"fmt"
	"os"
	"sync"
)

// Zero-copy reads. A consumer fetch does not copy record bytes into the
// process: ReadFileRange returns where they lie in a segment file, and the
// network layer sends them from the page cache with sendfile (Kafka's
// FileRecords.slice and transferTo). The range pins the segment's file in
// the descriptor cache (file_cache.go), so neither the budget nor a segment
// deleted, cleaned or closed meanwhile closes its descriptor before the send
// has finished (Kafka relies on file.delete.delay.ms alone).

// FileRange is whole record batches in a segment file: Size bytes from
// Position. A range with Size > 0 holds a reference on the file that must be
// given back with Release, once, when the bytes are sent (or not needed).
type FileRange struct {
	ref      *fileRangeRef
	Position int64
	Size     int64
	// FirstBatchOffset is the base offset of the first batch in the range,
	// or -1 when the range is empty.
	FirstBatchOffset int64
}

type fileRangeRef struct {
	seg  *segment
	f    *os.File // pinned open until Release
	once sync.Once
}

// File is the open segment file the range lies in; nil for an empty range.
// It stays open until Release.
func (r FileRange) File() *os.File {
	if r.ref == nil {
		return nil
	}
	return r.ref.f
}

// Release gives back the range's reference on its file. Calls after the
// first do nothing.
func (r FileRange) Release() {
	if r.ref != nil {
		r.ref.once.Do(r.ref.seg.file.release)
	}
}

// ReadAll copies the range's bytes into memory (for senders that cannot use
// sendfile). It does not release the range.
func (r FileRange) ReadAll() ([]byte, error) {
	if r.Size == 0 {
		return []byte{}, nil
	}
	buf := make([]byte, r.Size)
	n, err := r.File().ReadAt(buf, r.Position)
	if int64(n) < r.Size {
		return nil, fmt.Errorf("read %s at %d: %w", r.ref.seg.logPath, r.Position, errors.Join(err, errShortRead))
	}
	return buf, nil
}

// ReadFileRange is Read without the copy: the same batches (whole batches
// from the one holding offset, entirely below maxOffset, within maxBytes
// unless minOneBatch lets the first one exceed it), returned as a range of
// the segment file. Finding the range reads only batch headers near its two
// ends: the offset index gives the start, and the end is the segment's
// published size, the batch holding maxOffset, or the last batch boundary
// within maxBytes found from the nearest index entry.
func (l *Log) ReadFileRange(offset int64, maxBytes int32, maxOffset int64, minOneBatch bool) (FileRange, error) {
	empty := FileRange{FirstBatchOffset: -1}
	if maxBytes < 0 {
		return empty, fmt.Errorf("read %s: invalid max bytes %d", l.dir, maxBytes)
	}
	if err := l.OfflineError(); err != nil {
		return empty, err
	}
	segs, leo := l.snapshot()
	logStart := l.logStartOffset.Load()
	if offset < logStart || offset > leo {
		return empty, fmt.Errorf("read %s at %d (log start %d, log end %d): %w", l.dir, offset, logStart, leo, ErrOffsetOutOfRange)
	}
	if offset == leo || offset >= maxOffset {
		return empty, nil
	}
	for i := max(floorSegment(segs, offset), 0); i < len(segs); i++ {
		seg := segs[i]
		limit := seg.size.Load()
		first, found, err := seg.translateOffset(offset, limit)
		if err != nil {
			return empty, fmt.Errorf("read %s at %d: %w", l.dir, offset, err)
		}
		if !found {
			continue
		}
		if first.hdr.LastOffset() >= maxOffset {
			return empty, nil
		}
		// The bound ends the range in this segment if it lies before the next.
		if maxOffset < leo && (i+1 == len(segs) || maxOffset < segs[i+1].baseOffset) {
			bound, found, err := seg.translateOffset(maxOffset, limit)
			if err != nil {
				return empty, fmt.Errorf("read %s at %d: %w", l.dir, offset, err)
			}
			if found {
				limit = bound.pos
			}
		}
		budget := int64(maxBytes)
		if minOneBatch && first.size > budget {
			budget = first.size
		}
		if budget < first.size {
			return empty, nil
		}
		end := limit
		if first.pos+budget < limit {
			if end, err = seg.lastBatchEnd(first.pos, first.pos+budget); err != nil {
				return empty, fmt.Errorf("read %s at %d: %w", l.dir, offset, err)
			}
		}
		f, err := seg.file.acquire()
		if err != nil {
			// Closed under us (deleted or the log closed): as a read of a
			// file that is gone.
			return empty, fmt.Errorf("read %s at %d: %w", l.dir, offset, err)
		}
		return FileRange{ref: &fileRangeRef{seg: seg, f: f}, Position: first.pos, Size: end - first.pos,
			FirstBatchOffset: first.hdr.BaseOffset}, nil
	}
	return empty, nil
}

// lastBatchEnd is the end of the last whole batch that starts at or after
// from and ends at or before limit; from must be a batch boundary. The scan
// starts at the last index entry before limit, so it reads about
// index.interval.bytes plus one batch, not the whole range.
func (s *segment) lastBatchEnd(from, limit int64) (int64, error) {
	start := max(from, s.offsetIdx.floorPosition(limit))
	sc, err := s.scanner(start, limit)
	if err != nil {
		return 0, err
	}
	defer sc.release()
	end := start
	for sc.next() {
		end = sc.pos + sc.size
	}
	if sc.err != nil {
		return 0, fmt.Errorf("segment %s: %w", s.logPath, sc.err)
	}
	return end, nil
}

// floorPosition is the largest indexed batch position <= pos, or 0. Index
// positions are batch boundaries and increase with the offsets.
func (x *offsetIndex) floorPosition(pos int64) int64 {
	x.rlockMapped()
	defer x.mu.RUnlock()
	slot := x.binarySearch(x.count(), pos, x.position)
	if slot < 0 {
		return 0
	}
	return x.position(slot)
}
