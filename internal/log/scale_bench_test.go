package log

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"
)

// TestScaleBench measures the log side of a broker hosting many idle
// partitions (issue 15, part 4): descriptors and index maps held, heap per
// idle partition, and the time to load every log after a clean shutdown
// and after a crash (no clean-shutdown marker; recovery starts at the
// recovery-point checkpoint). A 1,000-partition baseline runs first in the
// same process. It runs only with GREGOR_BENCH=1 and reports with t.Log
// (go test -v); GREGOR_BENCH_PARTITIONS sets the large count (default
// 100000). It asserts correctness (every log reloaded at its end), never a
// time.
func TestScaleBench(t *testing.T) {
	if os.Getenv("GREGOR_BENCH") != "1" {
		t.Skip("benchmark: set GREGOR_BENCH=1")
	}
	n := 100000
	if s := os.Getenv("GREGOR_BENCH_PARTITIONS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v <= 0 {
			t.Fatalf("GREGOR_BENCH_PARTITIONS=%q", s)
		}
		n = v
	}
	for _, parts := range []int{1000, n} {
		runScaleBench(t, parts)
	}
}

type scaleFigures struct {
	heapPerPartition float64
	fds, maps        int
	segmentFiles     int // open in the manager's cache
}

func measureScale(t *testing.T, m *Manager, heapBefore uint64, parts int) scaleFigures {
	t.Helper()
	return scaleFigures{
		segmentFiles:     m.OpenSegmentFiles(),
		heapPerPartition: float64(int64(heapAfterGC())-int64(heapBefore)) / float64(parts),
		fds:              countLines(t, "/proc/self/fd", true),
		maps:             countLines(t, "/proc/self/maps", false),
	}
}

func runScaleBench(t *testing.T, parts int) {
	root := t.TempDir()
	cfg := ManagerConfig{Dirs: []string{root}, Default: DefaultConfig(), Logger: testLogger()}
	tps := make([]TopicPartition, parts)
	for i := range tps {
		tps[i] = TopicPartition{Topic: fmt.Sprintf("scale-%06d", i), Partition: 0}
	}
	// The partitions are copies of one made by Open, one batch appended and
	// Close: byte for byte what a cleanly stopped broker leaves, with the
	// log.dir's recovery-point and log-start checkpoints and the clean
	// shutdown marker. Creating them through GetOrCreate fsyncs the log.dir
	// once per partition, one at a time: minutes for 100k on this disk, and
	// not what is measured here.
	start := time.Now()
	template := filepath.Join(t.TempDir(), "template-0")
	l, err := Open(template, cfg.Default, 0, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.AppendAsFollower(simpleBatch(t, 0, 1, 1_700_000_000_000, 100)); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(template)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, e := range entries {
		if files[e.Name()], err = os.ReadFile(filepath.Join(template, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	recoveryPoints, logStarts := map[TopicPartition]int64{}, map[TopicPartition]int64{}
	for _, tp := range tps {
		dir := filepath.Join(root, tp.String())
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, data := range files {
			if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		recoveryPoints[tp], logStarts[tp] = 1, 0
	}
	if err := errors.Join(writeCheckpoint(filepath.Join(root, RecoveryPointCheckpointFile), recoveryPoints),
		writeCheckpoint(filepath.Join(root, LogStartOffsetCheckpointFile), logStarts),
		os.WriteFile(filepath.Join(root, CleanShutdownFileName), nil, 0o644)); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d partitions: written (copies of one, %d files each) in %v", parts, len(files), time.Since(start).Round(time.Millisecond))

	baseFDs := countLines(t, "/proc/self/fd", true)
	baseMaps := countLines(t, "/proc/self/maps", false)
	heap0 := heapAfterGC()
	start = time.Now()
	m, err := NewManager(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d partitions: first load (clean, files not in the page cache's recent use) %v", parts, time.Since(start).Round(time.Millisecond))
	checkLoaded(t, m, tps)
	// Idle: what the flusher and the index and file sweep do to a quiet
	// partition.
	for _, l := range m.All() {
		if err := l.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	m.unmapIdleIndexes(time.Now().Add(max(IndexIdleUnmapAfter, FileIdleCloseAfter) + time.Second))
	idle := measureScale(t, m, heap0, parts)
	t.Logf("%d partitions idle: heap %.0f B/partition, fds %d (+%d), maps %d (+%d), segment files open %d (budget %d)",
		parts, idle.heapPerPartition, idle.fds, idle.fds-baseFDs, idle.maps, idle.maps-baseMaps, idle.segmentFiles, m.cfg.MaxOpenFiles)
	start = time.Now()
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d partitions: clean shutdown %v", parts, time.Since(start).Round(time.Millisecond))
	m = nil

	heap1 := heapAfterGC()
	start = time.Now()
	clean, err := NewManager(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cleanLoad := time.Since(start)
	loaded := measureScale(t, clean, heap1, parts)
	t.Logf("%d partitions after a clean shutdown: load %v, heap %.0f B/partition, fds %d (+%d), maps %d (+%d), segment files open %d",
		parts, cleanLoad.Round(time.Millisecond), loaded.heapPerPartition, loaded.fds, loaded.fds-baseFDs,
		loaded.maps, loaded.maps-baseMaps, loaded.segmentFiles)
	checkLoaded(t, clean, tps)

	// A crash: this manager is dropped without Close, so its log.dir has no
	// clean-shutdown marker (the load removed it) and the recovery points
	// are those of the last checkpoint. It gives its descriptors back (a
	// dead process holds none) and the next load recovers every partition
	// from its recovery point.
	clean.files.closeFiles(clean.files.evictAll())
	start = time.Now()
	crashed, err := NewManager(cfg)
	if err != nil {
		t.Fatal(err)
	}
	crashLoad := time.Since(start)
	t.Logf("%d partitions after a crash: load with recovery %v", parts, crashLoad.Round(time.Millisecond))
	checkLoaded(t, crashed, tps)
	if err := crashed.Close(); err != nil {
		t.Fatal(err)
	}
	if err := clean.Close(); err != nil {
		t.Fatal(err)
	}
}

// checkLoaded checks that every partition came back with its one batch.
func checkLoaded(t *testing.T, m *Manager, tps []TopicPartition) {
	t.Helper()
	for _, tp := range tps {
		l, ok := m.Get(tp)
		if !ok {
			t.Fatalf("%s not loaded", tp)
		}
		if leo := l.LogEndOffset(); leo != 1 {
			t.Fatalf("%s loaded with log end offset %d, want 1", tp, leo)
		}
	}
}

func heapAfterGC() uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// countLines counts the entries of a /proc directory or the lines of a
// /proc file.
func countLines(t *testing.T, path string, dir bool) int {
	t.Helper()
	if dir {
		entries, err := os.ReadDir(path)
		if err != nil {
			t.Skipf("no %s: %v", path, err)
		}
		return len(entries)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Skipf("no %s: %v", path, err)
	}
	defer f.Close()
	n := 0
	for sc := bufio.NewScanner(f); sc.Scan(); {
		n++
	}
	return n
}

// TestRecoveryBoundedByCheckpointBench shows that loading after a crash
// costs what lies past the recovery-point checkpoint, not the data size:
// the same partitions (8 segments each) recover once with their
// checkpointed recovery points at the log end (Kafka's rule: only the
// segment holding it is rescanned) and once without the checkpoint file
// (everything is rescanned). GREGOR_BENCH=1 only; it reports, never
// asserts a time.
func TestRecoveryBoundedByCheckpointBench(t *testing.T) {
	if os.Getenv("GREGOR_BENCH") != "1" {
		t.Skip("benchmark: set GREGOR_BENCH=1")
	}
	const parts, batchesPerPart, batchRecords, valueSize = 200, 64, 32, 1000
	root := t.TempDir()
	def := DefaultConfig()
	def.SegmentBytes = 256 << 10
	cfg := ManagerConfig{Dirs: []string{root}, Default: def, Logger: testLogger()}
	m, err := NewManager(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var bytesWritten int64
	for i := range parts {
		l, err := m.GetOrCreate(TopicPartition{Topic: fmt.Sprintf("rec-%03d", i)}, [16]byte{}, Config{})
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range fillLog(t, l, batchesPerPart, batchRecords, valueSize, 1_700_000_000_000) {
			bytesWritten += int64(len(b))
		}
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	crashLoad := func(dropCheckpoint bool) time.Duration {
		t.Helper()
		if err := os.Remove(filepath.Join(root, CleanShutdownFileName)); err != nil {
			t.Fatal(err)
		}
		if dropCheckpoint {
			if err := os.Remove(filepath.Join(root, RecoveryPointCheckpointFile)); err != nil {
				t.Fatal(err)
			}
		}
		start := time.Now()
		m, err := NewManager(cfg)
		if err != nil {
			t.Fatal(err)
		}
		took := time.Since(start)
		for tp, l := range m.All() {
			if want := int64(batchesPerPart * batchRecords); l.LogEndOffset() != want {
				t.Fatalf("%s recovered to %d, want %d", tp, l.LogEndOffset(), want)
			}
		}
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
		return took
	}
	withCheckpoint := crashLoad(false)
	without := crashLoad(true)
	t.Logf("%d partitions, %d MiB: crash load with recovery points at the log end %v, without the checkpoint (all rescanned) %v (%.1fx)",
		parts, bytesWritten>>20, withCheckpoint.Round(time.Millisecond), without.Round(time.Millisecond),
		float64(without)/float64(withCheckpoint))
}
