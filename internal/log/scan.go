package log

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"gregor/internal/record"
)

// minBatchSize is the smallest valid v2 batch: a header with no records.
const minBatchSize = record.HeaderSize

// batchScanner walks the batches of a segment file between two positions,
// reading ahead in chunks so that small batches cost no syscall each (Kafka's
// FileLogInputStream). It stops cleanly at a partial batch at the end (a torn
// write) and with errCorruptBatch at a batch whose header is impossible.
type batchScanner struct {
	f   *os.File
	pos int64 // file position of the current batch
	end int64 // the scan never reads at or past end

	buf    []byte
	bufPos int64 // file position of buf[0]
	bufLen int   // valid bytes in buf

	hdr  record.BatchHeader
	size int64 // current batch's size on disk
	err  error
	// partial is set when the scan stopped at a batch that runs past end.
	partial bool
	started bool
	// pinned is the cached file f belongs to, given back by release.
	pinned *cachedFile
}

// errCorruptBatch marks a batch that fails a header check; recovery truncates
// the segment at its position.
var errCorruptBatch = errors.New("corrupt batch")

var scanBufPool = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

func newBatchScanner(f *os.File, start, end int64) *batchScanner {
	bp := scanBufPool.Get().(*[]byte)
	return &batchScanner{f: f, pos: start, end: end, buf: *bp}
}

// release returns the read-ahead buffer and the pin on the file; the scanner
// is unusable afterwards.
func (s *batchScanner) release() {
	s.unpin()
	if s.buf != nil && cap(s.buf) == 32<<10 {
		b := s.buf[:cap(s.buf)]
		scanBufPool.Put(&b)
	}
	s.buf = nil
}

// unpin gives back the pin on the file, keeping the buffer (a cleaner's
// scanner reads through the cleaner's own buffer).
func (s *batchScanner) unpin() {
	if s.pinned != nil {
		s.pinned.release()
		s.pinned = nil
	}
}

// next advances to the next batch and reports whether there is one.
func (s *batchScanner) next() bool {
	if s.err != nil {
		return false
	}
	if s.started {
		s.pos += s.size
	}
	s.started = true
	s.size = 0
	remaining := s.end - s.pos
	if remaining <= 0 {
		return false
	}
	if remaining < record.LogOverhead+5 {
		s.partial = true
		return false
	}
	want := int64(record.HeaderSize)
	if remaining < want {
		want = remaining
	}
	hb, err := s.window(s.pos, want)
	if err != nil {
		s.err = err
		return false
	}
	hdr, err := record.ParseHeader(hb)
	if err != nil && !errors.Is(err, record.ErrShortBatch) {
		s.err = fmt.Errorf("%w at position %d: %v", errCorruptBatch, s.pos, err)
		return false
	}
	size := int64(hdr.Length) + record.LogOverhead
	if hdr.Length < minBatchSize-record.LogOverhead {
		s.err = fmt.Errorf("%w at position %d: batch length %d below the minimum", errCorruptBatch, s.pos, hdr.Length)
		return false
	}
	if size > remaining {
		s.partial = true
		return false
	}
	if hdr.LastOffsetDelta < 0 {
		s.err = fmt.Errorf("%w at position %d: negative last offset delta %d", errCorruptBatch, s.pos, hdr.LastOffsetDelta)
		return false
	}
	s.hdr, s.size = hdr, size
	return true
}

// window returns n bytes at file position p, from the read-ahead buffer when
// it holds them, else by refilling it. n must not exceed len(buf).
func (s *batchScanner) window(p, n int64) ([]byte, error) {
	if p >= s.bufPos && p+n <= s.bufPos+int64(s.bufLen) {
		off := p - s.bufPos
		return s.buf[off : off+n], nil
	}
	toRead := int64(len(s.buf))
	if s.end-p < toRead {
		toRead = s.end - p
	}
	got, err := s.f.ReadAt(s.buf[:toRead], p)
	if int64(got) < n {
		if err == nil || errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		s.bufLen = 0
		return nil, fmt.Errorf("read segment at %d: %w", p, err)
	}
	s.bufPos, s.bufLen = p, got
	return s.buf[:n], nil
}

// batch returns the current batch's bytes. They stay valid until the next
// call to next or batch.
func (s *batchScanner) batch() ([]byte, error) {
	if s.size <= int64(len(s.buf)) {
		return s.window(s.pos, s.size)
	}
	// A batch larger than the read-ahead buffer gets a buffer of its own.
	big := make([]byte, s.size)
	if _, err := s.f.ReadAt(big, s.pos); err != nil {
		return nil, fmt.Errorf("read batch at %d: %w", s.pos, err)
	}
	return big, nil
}

// validateBatch checks a whole batch as Kafka's ensureValid does for v2:
// at least a header long, and the stored CRC32C matches.
func validateBatch(b []byte, hdr record.BatchHeader) error {
	if len(b) < minBatchSize {
		return fmt.Errorf("%w: batch of %d bytes is shorter than a header", record.ErrCorruptMessage, len(b))
	}
	if crc := record.ComputeCRC(b); crc != hdr.CRC {
		return fmt.Errorf("%w: batch at offset %d has CRC %#x, computed %#x", record.ErrCorruptMessage, hdr.BaseOffset, hdr.CRC, crc)
	}
	return nil
}
