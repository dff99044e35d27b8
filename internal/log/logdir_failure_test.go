package log

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// mountTmpfs mounts a size-limited tmpfs on a fresh directory, unmounted at
// the end of the test. It skips the test where mounting is not permitted.
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs: %v: %s", err, out)
	}
	// Registered after TempDir's removal, so it runs before it.
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// fillDisk writes a file until the file system is full.
func fillDisk(t *testing.T, dir string) {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 4096)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("filling %s: %v", dir, err)
			}
			return
		}
	}
}

// TestIndexStoreOnFullDiskIsAnError: a store into an unallocated page of a
// mapped index on a full file system raises SIGBUS; it must come back as an
// error, not kill the process.
func TestIndexStoreOnFullDiskIsAnError(t *testing.T) {
	dir := mountTmpfs(t, "256k")
	x, err := openOffsetIndex(filepath.Join(dir, "00000000000000000000.index"), 0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer x.close()
	fillDisk(t, dir)
	err = x.append(1, 100)
	if err == nil {
		t.Fatal("append to a mapped index on a full disk succeeded")
	}
	if !isIOError(err) || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("append error %v is not an I/O error matching ENOSPC", err)
	}
	t.Logf("append on a full disk: %v", err)
	if x.entries.Load() != 0 {
		t.Fatalf("failed store counted as an entry")
	}
}

// TestAppendIOErrorTakesDirOffline needs no root: closing the active
// segment's file under the log makes the next write fail as a failing disk
// would.
func TestAppendIOErrorTakesDirOffline(t *testing.T) {
	sick, healthy := t.TempDir(), t.TempDir()
	var out syncBuffer
	m, err := NewManager(ManagerConfig{Dirs: []string{sick, healthy}, Default: testConfig(),
		Logger: slog.New(slog.NewTextHandler(&out, nil))})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := m.GetOrCreate(TopicPartition{"a", 0}, [16]byte{1}, testConfig())
	b, _ := m.GetOrCreate(TopicPartition{"b", 0}, [16]byte{2}, testConfig())
	a2, _ := m.GetOrCreate(TopicPartition{"a", 1}, [16]byte{1}, testConfig())
	if filepath.Dir(a.Dir()) != sick || filepath.Dir(a2.Dir()) != sick || filepath.Dir(b.Dir()) != healthy {
		t.Fatalf("placement: %s %s %s", a.Dir(), a2.Dir(), b.Dir())
	}
	acked := fillLog(t, a, 3, 2, 50, 1000)
	segs, _ := a.snapshot()
	f, err := segs[len(segs)-1].file.acquire()
	if err != nil {
		t.Fatal(err)
	}
	segs[len(segs)-1].file.release()
	f.Close() // the disk "fails": the cached descriptor no longer works

	_, err = a.AppendAsFollower(simpleBatch(t, 6, 2, 2000, 50))
	if !errors.Is(err, ErrKafkaStorage) {
		t.Fatalf("append after the failure: %v, want ErrKafkaStorage", err)
	}
	// The whole dir is offline: the other partition in it too.
	for _, l := range []*Log{a, a2} {
		if l.OfflineError() == nil {
			t.Fatalf("%s still online", l.Dir())
		}
		if _, err := l.Read(0, 1<<20, math.MaxInt64, true); !errors.Is(err, ErrKafkaStorage) {
			t.Fatalf("read of %s: %v, want ErrKafkaStorage", l.Dir(), err)
		}
	}
	if !strings.Contains(out.String(), "dir="+sick) || !strings.Contains(out.String(), "log dir offline") {
		t.Fatalf("the failure is not logged with its dir:\n%s", out.String())
	}
	// The other dir is served, and takes new partitions.
	fillLog(t, b, 2, 2, 50, 1000)
	if res, err := b.Read(0, 1<<20, math.MaxInt64, true); err != nil || len(res.Records) == 0 {
		t.Fatalf("read of the healthy log: %v", err)
	}
	c, err := m.GetOrCreate(TopicPartition{"c", 0}, [16]byte{3}, testConfig())
	if err != nil || filepath.Dir(c.Dir()) != healthy {
		t.Fatalf("new partition on %v (%v), want the healthy dir", c, err)
	}
	descs := m.DescribeDirs()
	if !errors.Is(descs[0].Err, ErrKafkaStorage) || len(descs[0].Partitions) != 0 {
		t.Fatalf("offline dir described as %+v", descs[0])
	}
	if descs[1].Err != nil || len(descs[1].Partitions) != 2 {
		t.Fatalf("healthy dir described as %+v", descs[1])
	}
	if n := m.cleanupLogs(farFuture); n != 0 {
		t.Fatalf("retention touched %d segments", n)
	}
	if err := m.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if _, err := os.Stat(filepath.Join(sick, CleanShutdownFileName)); err == nil {
		t.Fatal("offline dir marked clean")
	}
	if _, err := os.Stat(filepath.Join(healthy, CleanShutdownFileName)); err != nil {
		t.Fatal("healthy dir not marked clean")
	}

	// After a restart the acknowledged batches are all there.
	m, err = NewManager(ManagerConfig{Dirs: []string{sick, healthy}, Default: testConfig(), Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	a, _ = m.Get(TopicPartition{"a", 0})
	res, err := a.Read(0, 1<<20, math.MaxInt64, true)
	if err != nil || !bytes.Equal(res.Records, bytes.Join(acked, nil)) || a.LogEndOffset() != 6 {
		t.Fatalf("after restart: LEO %d, %v", a.LogEndOffset(), err)
	}
}

// TestLogDirOfflineOnDiskFull fills a small tmpfs log.dir until an append
// fails with ENOSPC: the append gets ErrKafkaStorage, the dir goes offline,
// the other dir keeps serving, nothing acknowledged is damaged and no part of
// the failed batch survives, not even after a restart.
func TestLogDirOfflineOnDiskFull(t *testing.T) {
	small := mountTmpfs(t, "512k")
	big := t.TempDir()
	var out syncBuffer
	m, err := NewManager(ManagerConfig{Dirs: []string{small, big}, Default: testConfig(),
		Logger: slog.New(slog.NewTextHandler(&out, nil))})
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig()
	cfg.SegmentBytes = 96 << 10
	cfg.SegmentIndexBytes = 1 << 20 // sparse and larger than the disk: index stores may fault
	full, _ := m.GetOrCreate(TopicPartition{"full", 0}, [16]byte{1}, cfg)
	other, _ := m.GetOrCreate(TopicPartition{"other", 0}, [16]byte{2}, cfg)
	if filepath.Dir(full.Dir()) != small || filepath.Dir(other.Dir()) != big {
		t.Fatalf("placement: %s, %s", full.Dir(), other.Dir())
	}
	var acked [][]byte
	for i := 0; ; i++ {
		b := simpleBatch(t, full.LogEndOffset(), 4, int64(1000+i), 1000)
		_, err := full.AppendAsFollower(b)
		if err != nil {
			if !errors.Is(err, ErrKafkaStorage) || !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("append %d failed with %v, want ErrKafkaStorage from ENOSPC", i, err)
			}
			break
		}
		acked = append(acked, b)
		if i > 1000 {
			t.Fatal("the disk never filled")
		}
	}
	t.Logf("%d batches acknowledged before the disk filled; then: %v", len(acked), full.OfflineError())
	if !strings.Contains(out.String(), "dir="+small) {
		t.Fatalf("the failure is not logged with its dir:\n%s", out.String())
	}
	if _, err := full.Read(0, 1<<20, math.MaxInt64, true); !errors.Is(err, ErrKafkaStorage) {
		t.Fatalf("read of the offline log: %v", err)
	}
	if d := m.DescribeDirs()[0]; !errors.Is(d.Err, ErrKafkaStorage) {
		t.Fatalf("full dir described as %+v", d)
	}
	fillLog(t, other, 5, 4, 1000, 1000)
	if res, err := other.Read(0, 1<<20, math.MaxInt64, true); err != nil || len(res.Records) == 0 {
		t.Fatalf("read on the healthy dir: %v", err)
	}
	if err := m.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}

	// Give the disk room (as an operator would) and restart.
	if o, err := exec.Command("mount", "-o", "remount,size=4m", small).CombinedOutput(); err != nil {
		t.Fatalf("remount: %v: %s", err, o)
	}
	m, err = NewManager(ManagerConfig{Dirs: []string{small, big}, Default: testConfig(), Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	full, _ = m.Get(TopicPartition{"full", 0})
	if want := int64(4 * len(acked)); full.LogEndOffset() != want {
		t.Fatalf("log end %d after restart, want %d (the acknowledged batches only)", full.LogEndOffset(), want)
	}
	for i, b := range acked {
		res, err := full.Read(int64(4*i), int32(len(b)), math.MaxInt64, true)
		if err != nil || !bytes.Equal(res.Records, b) {
			t.Fatalf("acknowledged batch %d after restart: %v", i, err)
		}
	}
	// And the log takes appends again.
	mustAppendFollower(t, full, simpleBatch(t, full.LogEndOffset(), 1, 5000, 10))
}

// TestDescriptorShortageIsNotDiskFailure: running out of file descriptors
// (connections took them) fails the operation but does not take the log
// dir offline, while a disk error does (issue #20 item 5).
func TestDescriptorShortageIsNotDiskFailure(t *testing.T) {
	for _, tc := range []struct {
		err  error
		disk bool
	}{
		{&fs.PathError{Op: "open", Path: "x.log", Err: syscall.EMFILE}, false},
		{fmt.Errorf("roll: %w", &fs.PathError{Op: "open", Path: "x.log", Err: syscall.ENFILE}), false},
		{&fs.PathError{Op: "write", Path: "x.log", Err: syscall.ENOSPC}, true},
		{&fs.PathError{Op: "open", Path: "x.log", Err: syscall.EIO}, true},
	} {
		if got := isIOError(tc.err); got != tc.disk {
			t.Errorf("isIOError(%v) = %v, want %v", tc.err, got, tc.disk)
		}
	}
}

// TestCloseSyncsBeforeMarkingClean: Close closes the logs without fsyncs
// and syncs each directory's file system once; only a directory whose sync
// succeeded gets its recovery points and its clean-shutdown marker. One
// whose sync failed is recovered at the next start, and loses nothing.
func TestCloseSyncsBeforeMarkingClean(t *testing.T) {
	sick, healthy := t.TempDir(), t.TempDir()
	m, err := NewManager(ManagerConfig{Dirs: []string{sick, healthy}, Default: testConfig(), Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	var synced []string
	m.syncFS = func(dir string) error {
		synced = append(synced, dir)
		if dir == sick {
			return errors.New("syncfs: input/output error")
		}
		return syncFileSystem(dir)
	}
	a, _ := m.GetOrCreate(TopicPartition{"a", 0}, [16]byte{1}, testConfig())
	b, _ := m.GetOrCreate(TopicPartition{"b", 0}, [16]byte{2}, testConfig())
	if filepath.Dir(a.Dir()) != sick || filepath.Dir(b.Dir()) != healthy {
		t.Fatalf("placement: %s %s", a.Dir(), b.Dir())
	}
	fillLog(t, a, 3, 2, 50, 1000)
	fillLog(t, b, 3, 2, 50, 1000)
	if err := m.Close(); err == nil || !errors.Is(err, ErrKafkaStorage) {
		t.Fatalf("close with a failed sync: %v, want a storage error", err)
	}
	if !slices.Equal(synced, []string{sick, healthy}) {
		t.Fatalf("synced %v, want each dir once", synced)
	}
	exists := func(path string) bool { _, err := os.Stat(path); return err == nil }
	if exists(filepath.Join(sick, CleanShutdownFileName)) || exists(filepath.Join(sick, RecoveryPointCheckpointFile)) {
		t.Fatal("the dir whose sync failed was marked clean or given recovery points")
	}
	if !exists(filepath.Join(healthy, CleanShutdownFileName)) {
		t.Fatal("the synced dir has no clean-shutdown marker")
	}
	rps, err := readCheckpoint(filepath.Join(healthy, RecoveryPointCheckpointFile))
	if err != nil || rps[TopicPartition{"b", 0}] != 6 {
		t.Fatalf("recovery points of the synced dir: %v (%v), want b-0 at 6", rps, err)
	}
	m, err = NewManager(ManagerConfig{Dirs: []string{sick, healthy}, Default: testConfig(), Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for _, tp := range []TopicPartition{{"a", 0}, {"b", 0}} {
		l, ok := m.Get(tp)
		if !ok || l.LogEndOffset() != 6 {
			t.Fatalf("%s after the restart: %v", tp, l)
		}
	}
}
