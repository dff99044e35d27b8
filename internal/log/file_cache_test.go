package log

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"gregor/internal/fdtest"
)

// openFilesUnder lists the segment files (.log, .txnindex: what the budget
// covers) under root that this process holds a descriptor on, from
// /proc/self/fd. Other files (checkpoints, producer snapshots being
// fsynced by a background flush) are open only for a moment.
func openFilesUnder(t testing.TB, root string) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	var out []string
	for _, e := range entries {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		if err != nil {
			continue // closed since the listing
		}
		segmentFile := strings.HasSuffix(target, logFileSuffix) || strings.HasSuffix(target, txnIndexFileSuffix) ||
			strings.HasSuffix(target, logFileSuffix+deletedFileSuffix)
		if strings.HasPrefix(target, root+string(filepath.Separator)) && segmentFile {
			out = append(out, target)
		}
	}
	return out
}

// waitRolledFlushed waits for the background flush of l's rolled segments.
func waitRolledFlushed(t *testing.T, l *Log) {
	t.Helper()
	segs, _ := l.snapshot()
	deadline := time.Now().Add(30 * time.Second)
	for l.RecoveryPoint() < segs[len(segs)-1].baseOffset || l.flushRunning.Load() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: recovery point stuck at %d", l.Dir(), l.RecoveryPoint())
		}
		time.Sleep(time.Millisecond)
	}
}

// newBudgetManager opens a Manager over a fresh log.dir with a descriptor
// budget and parts partitions of small segments.
func newBudgetManager(t *testing.T, budget, parts int) (*Manager, string, []*Log, Config) {
	t.Helper()
	root := t.TempDir()
	m, err := NewManager(ManagerConfig{Dirs: []string{root}, Default: testConfig(), Logger: testLogger(), MaxOpenFiles: budget})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	cfg := testConfig()
	cfg.SegmentBytes = 4 << 10
	logs := make([]*Log, parts)
	for i := range logs {
		if logs[i], err = m.GetOrCreate(TopicPartition{"budget", int32(i)}, [16]byte{7}, cfg); err != nil {
			t.Fatal(err)
		}
	}
	return m, root, logs, cfg
}

// TestFileBudgetHolds appends to, reads and zero-copy reads more partitions
// (and many more segments) than the descriptor budget allows open, checking
// the data and that the process never holds more than the budget of
// descriptors on the log dir.
func TestFileBudgetHolds(t *testing.T) {
	const budget, parts = 8, 40
	m, root, logs, _ := newBudgetManager(t, budget, parts)
	if n := len(openFilesUnder(t, root)); n != 0 {
		t.Fatalf("%d files open after creating %d partitions, want 0", n, parts)
	}
	check := func(when string) {
		t.Helper()
		if open := openFilesUnder(t, root); len(open) > budget {
			t.Fatalf("%s: %d files open under the log dir, budget %d: %v", when, len(open), budget, open)
		}
		if n := m.OpenSegmentFiles(); n > budget {
			t.Fatalf("%s: the cache counts %d open files, budget %d", when, n, budget)
		}
	}
	written := make([][][]byte, parts)
	for round := range 3 {
		for i, l := range logs {
			written[i] = append(written[i], fillLog(t, l, 6, 5, 200, int64(1_700_000_000_000+round*100))...)
			// A roll flushes the rolled segment in the background, and a
			// file being fsynced is pinned (in use) like any other: wait
			// for it, so that the check sees the budget alone.
			waitRolledFlushed(t, l)
			check(fmt.Sprintf("append round %d to partition %d", round, i))
		}
	}
	if segs, _ := logs[0].snapshot(); len(segs) < 3 {
		t.Fatalf("want several segments per partition, have %d", len(segs))
	}
	for i, l := range logs {
		off := int64(0)
		for j, b := range written[i] {
			res, err := l.Read(off, int32(len(b)), math.MaxInt64, true)
			if err != nil {
				t.Fatalf("read partition %d batch %d: %v", i, j, err)
			}
			if !bytes.Equal(res.Records, b) {
				t.Fatalf("partition %d batch %d read back other bytes", i, j)
			}
			off += 5
		}
		check(fmt.Sprintf("reads of partition %d", i))
	}
	for i, l := range logs {
		all := bytes.Join(written[i], nil)
		for off := int64(0); off < l.LogEndOffset(); {
			r, err := l.ReadFileRange(off, math.MaxInt32, math.MaxInt64, true)
			if err != nil {
				t.Fatalf("range of partition %d at %d: %v", i, off, err)
			}
			got, err := r.ReadAll()
			r.Release()
			if err != nil {
				t.Fatal(err)
			}
			pos := int(off/5) * len(written[i][0])
			if len(got) == 0 || !bytes.Equal(got, all[pos:pos+len(got)]) {
				t.Fatalf("range of partition %d at %d: %d bytes, not the appended ones", i, off, len(got))
			}
			off += int64(len(got) / len(written[i][0]) * 5)
			check(fmt.Sprintf("range of partition %d", i))
		}
	}
	if opens := m.files.opens.Load(); opens <= parts {
		t.Fatalf("only %d opens for %d partitions: the budget never closed a file", opens, parts)
	}
}

// TestFileBudgetKeepsPendingRangeOpen checks that a segment file with a
// pending zero-copy range is not closed while the budget evicts around it,
// and is closed (as any idle file) once released.
func TestFileBudgetKeepsPendingRangeOpen(t *testing.T) {
	const budget, parts = 2, 5
	_, root, logs, _ := newBudgetManager(t, budget, parts)
	written := make([][][]byte, parts)
	for i, l := range logs {
		written[i] = fillLog(t, l, 3, 5, 100, 1_700_000_000_000)
	}
	readAll := func(l *Log) {
		t.Helper()
		if _, err := l.Read(0, math.MaxInt32, math.MaxInt64, true); err != nil {
			t.Fatal(err)
		}
	}
	r, err := logs[0].ReadFileRange(0, math.MaxInt32, math.MaxInt64, true)
	if err != nil {
		t.Fatal(err)
	}
	pinned := r.File().Name()
	for _, l := range logs[1:] {
		readAll(l)
	}
	open := openFilesUnder(t, root)
	if !slices.Contains(open, pinned) {
		t.Fatalf("the file of a pending range was closed by the budget; open: %v", open)
	}
	if len(open) > budget+1 {
		t.Fatalf("%d files open, want at most the budget %d and the pinned one", len(open), budget)
	}
	got, err := r.ReadAll()
	if err != nil || !bytes.Equal(got, bytes.Join(written[0], nil)) {
		t.Fatalf("pending range read %d bytes (%v), not the appended ones", len(got), err)
	}
	r.Release()
	for _, l := range logs[1:] {
		readAll(l)
	}
	open = openFilesUnder(t, root)
	if slices.Contains(open, pinned) {
		t.Fatalf("a released, idle file outlived the budget; open: %v", open)
	}
	if len(open) > budget {
		t.Fatalf("%d files open, budget %d", len(open), budget)
	}
}

// TestFileBudgetConcurrent appends to and reads many partitions from
// several goroutines under a budget far below the partitions, as a broker's
// handlers do; every read must return what was appended.
func TestFileBudgetConcurrent(t *testing.T) {
	const budget, parts, workers = 4, 24, 6
	m, root, logs, _ := newBudgetManager(t, budget, parts)
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Each worker owns the partitions i%workers == w: appends need
			// one writer per log to know their offsets.
			for round := range 4 {
				for i := w; i < parts; i += workers {
					l := logs[i]
					b := simpleBatch(t, l.LogEndOffset(), 5, int64(1_700_000_000_000+round), 150)
					if _, err := l.AppendAsFollower(b); err != nil {
						errs <- fmt.Errorf("append to %d: %w", i, err)
						return
					}
					// Read another worker's partition from its start.
					other := logs[(i+round+1)%parts]
					res, err := other.Read(0, math.MaxInt32, math.MaxInt64, true)
					if err != nil {
						errs <- fmt.Errorf("read %d: %w", (i+round+1)%parts, err)
						return
					}
					if len(res.Records) > 0 && res.FirstBatchOffset != 0 {
						errs <- fmt.Errorf("read %d from 0 began at %d", (i+round+1)%parts, res.FirstBatchOffset)
						return
					}
					r, err := l.ReadFileRange(l.LogEndOffset()-5, math.MaxInt32, math.MaxInt64, true)
					if err != nil {
						errs <- fmt.Errorf("range of %d: %w", i, err)
						return
					}
					got, err := r.ReadAll()
					r.Release()
					if err != nil || !bytes.Equal(got, b) {
						errs <- fmt.Errorf("range of %d: %d bytes (%v), not the batch appended", i, len(got), err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n := m.OpenSegmentFiles(); n > budget {
		t.Fatalf("%d files open after the work, budget %d", n, budget)
	}
	if open := openFilesUnder(t, root); len(open) > budget {
		t.Fatalf("%d files open under the log dir after the work, budget %d", len(open), budget)
	}
}

// TestIdleFilesClosed checks that the manager's sweep closes segment files
// unused for FileIdleCloseAfter, within the budget too, but not one pinned
// by a pending range, and that the closed files reopen for the next read.
func TestIdleFilesClosed(t *testing.T) {
	m, root, logs, _ := newBudgetManager(t, 100, 4)
	written := make([][][]byte, len(logs))
	for i, l := range logs {
		written[i] = fillLog(t, l, 3, 5, 100, 1_700_000_000_000)
		waitRolledFlushed(t, l)
	}
	if len(openFilesUnder(t, root)) == 0 {
		t.Fatal("no segment file open after appends")
	}
	r, err := logs[0].ReadFileRange(0, math.MaxInt32, math.MaxInt64, true)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	m.unmapIdleIndexes(time.Now().Add(FileIdleCloseAfter + time.Minute))
	if open := openFilesUnder(t, root); len(open) != 1 || open[0] != r.File().Name() {
		t.Fatalf("after the idle sweep open: %v, want only the pinned %s", open, r.File().Name())
	}
	for i, l := range logs {
		res, err := l.Read(0, math.MaxInt32, math.MaxInt64, true)
		if err != nil || !bytes.Equal(res.Records, bytes.Join(written[i], nil)) {
			t.Fatalf("read of partition %d after the sweep: %v", i, err)
		}
	}
}

// TestFileCacheGivesBackOnEMFILE runs the process out of descriptors and
// checks that a read of a closed segment file still succeeds: the cache
// closes its idle files and opens again instead of failing the read.
func TestFileCacheGivesBackOnEMFILE(t *testing.T) {
	_, root, logs, _ := newBudgetManager(t, 100, 4)
	written := make([][][]byte, len(logs))
	for i, l := range logs {
		written[i] = fillLog(t, l, 2, 5, 100, 1_700_000_000_000)
	}
	// Partition 0's file closed; the others' open and idle in the cache.
	segs, _ := logs[0].snapshot()
	logs[0].files.closeFiles(logs[0].files.evictAll())
	for _, l := range logs[1:] {
		if _, err := l.Read(0, math.MaxInt32, math.MaxInt64, true); err != nil {
			t.Fatal(err)
		}
	}
	if segs[0].file.isOpen() || len(openFilesUnder(t, root)) != len(logs)-1 {
		t.Fatalf("setup: open %v", openFilesUnder(t, root))
	}

	fdtest.Exhaust(t, 8)
	res, err := logs[0].Read(0, math.MaxInt32, math.MaxInt64, true)
	if err != nil {
		t.Fatalf("read with no descriptor left: %v", err)
	}
	if !bytes.Equal(res.Records, bytes.Join(written[0], nil)) {
		t.Fatal("read back other bytes")
	}
}
