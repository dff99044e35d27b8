package log

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestCheckpointRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), RecoveryPointCheckpointFile)
	in := map[TopicPartition]int64{{"a", 0}: 5, {"a", 1}: 0, {"b-c", 12}: 1 << 40}
	if err := writeCheckpoint(path, in); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	if want := "0\n3\na 0 5\na 1 0\nb-c 12 1099511627776\n"; string(data) != want {
		t.Fatalf("checkpoint file:\n%s\nwant:\n%s", data, want)
	}
	out, err := readCheckpoint(path)
	if err != nil || len(out) != 3 || out[TopicPartition{"b-c", 12}] != 1<<40 {
		t.Fatalf("read back %v, %v", out, err)
	}
	if _, err := os.Stat(path + ".tmp"); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("temporary file left behind")
	}
	for _, bad := range []string{"1\n0\n", "0\n2\na 0 1\n", "0\n1\na x 1\n", "0\n1\na 0 1\nb 0 2\n"} {
		os.WriteFile(path, []byte(bad), 0o644)
		if _, err := readCheckpoint(path); err == nil {
			t.Fatalf("malformed checkpoint %q accepted", bad)
		}
	}
	if m, err := readCheckpoint(filepath.Join(t.TempDir(), "missing")); err != nil || len(m) != 0 {
		t.Fatalf("missing checkpoint: %v %v", m, err)
	}
}

func TestMetaPropertiesRoundTrip(t *testing.T) {
	dir := t.TempDir()
	if _, err := ReadMetaProperties(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing meta.properties: %v", err)
	}
	mp := MetaProperties{Version: 1, ClusterID: "MkU3OEVBNTcwNTJENDM2Qk", NodeID: 3, DirectoryID: "7nVvTNyVQ2KBMtNfIlRjqw"}
	if err := WriteMetaProperties(dir, mp); err != nil {
		t.Fatal(err)
	}
	got, err := ReadMetaProperties(dir)
	if err != nil || got != mp {
		t.Fatalf("read back %+v, %v", got, err)
	}
	// Kafka's own file, with its comment header.
	kafka := "#\n#Thu Jan 01 00:00:00 UTC 2025\nnode.id=1\ndirectory.id=abc\nversion=1\ncluster.id=xyz\n"
	os.WriteFile(filepath.Join(dir, MetaPropertiesFile), []byte(kafka), 0o644)
	got, err = ReadMetaProperties(dir)
	if err != nil || got != (MetaProperties{Version: 1, ClusterID: "xyz", NodeID: 1, DirectoryID: "abc"}) {
		t.Fatalf("Kafka's meta.properties: %+v, %v", got, err)
	}
}

func TestPartitionMetadataFormat(t *testing.T) {
	dir := t.TempDir()
	id := [16]byte{0xfb, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 0xff}
	if err := writePartitionMetadata(dir, id); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(filepath.Join(dir, PartitionMetadataFile))
	if !regexp.MustCompile(`^version: 0\ntopic_id: [A-Za-z0-9_-]{22}$`).Match(data) {
		t.Fatalf("partition.metadata = %q", data)
	}
	got, err := readPartitionMetadata(dir)
	if err != nil || got != id {
		t.Fatalf("read back %x, %v", got, err)
	}
}

func TestManagerLifecycle(t *testing.T) {
	root := t.TempDir()
	dirs := []string{filepath.Join(root, "d1"), filepath.Join(root, "d2")}
	cfg := ManagerConfig{Dirs: dirs, Default: testConfig(), Logger: testLogger()}
	m, err := NewManager(cfg)
	if err != nil {
		t.Fatal(err)
	}
	id := [16]byte{1, 2, 3}
	tps := []TopicPartition{{"orders", 0}, {"orders", 1}, {"my-topic", 2}, {"my-topic", 3}}
	for i, tp := range tps {
		l, err := m.GetOrCreate(tp, id, Config{})
		if err != nil {
			t.Fatal(err)
		}
		fillLog(t, l, i+1, 2, 10, 1)
	}
	// Partitions spread over the dirs, fewest first.
	perDir := map[string]int{}
	for _, d := range m.DescribeDirs() {
		if d.Err != nil || d.TotalBytes <= 0 || d.UsableBytes <= 0 {
			t.Fatalf("describe %s: %+v", d.Path, d)
		}
		perDir[d.Path] = len(d.Partitions)
		for _, p := range d.Partitions {
			if p.Size <= 0 {
				t.Fatalf("partition %s size %d", p.TP, p.Size)
			}
		}
	}
	if perDir[dirs[0]] != 2 || perDir[dirs[1]] != 2 {
		t.Fatalf("partitions per dir: %v", perDir)
	}
	if _, err := m.GetOrCreate(tps[0], [16]byte{9}, Config{}); !errors.Is(err, ErrInconsistentTopicID) {
		t.Fatalf("other topic id: %v", err)
	}
	l, _ := m.Get(tps[0])
	if again, err := m.GetOrCreate(tps[0], id, Config{}); err != nil || again != l {
		t.Fatalf("GetOrCreate of an existing log: %v", err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, CleanShutdownFileName)); err != nil {
			t.Fatalf("no clean shutdown marker in %s: %v", d, err)
		}
		rp, err := readCheckpoint(filepath.Join(d, RecoveryPointCheckpointFile))
		if err != nil || len(rp) != 2 {
			t.Fatalf("recovery points in %s: %v %v", d, rp, err)
		}
	}

	// A log start offset past the first segment (DeleteRecords, retention)
	// comes from log-start-offset-checkpoint.
	var startDir string
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, tps[3].String())); err == nil {
			startDir = d
		}
	}
	if err := writeCheckpoint(filepath.Join(startDir, LogStartOffsetCheckpointFile), map[TopicPartition]int64{tps[3]: 4}); err != nil {
		t.Fatal(err)
	}

	// Reload: every log is back, trusted, with its topic id; the marker is gone.
	m, err = NewManager(cfg)
	if err != nil {
		t.Fatal(err)
	}
	all := m.All()
	if len(all) != len(tps) {
		t.Fatalf("%d logs after reload", len(all))
	}
	for i, tp := range tps {
		l := all[tp]
		if l == nil || l.LogEndOffset() != int64(2*(i+1)) || l.RecoveryPoint() != l.LogEndOffset() {
			t.Fatalf("%s after reload: %v", tp, l)
		}
		if got, ok := m.TopicID(tp); !ok || got != id {
			t.Fatalf("%s topic id %x %v", tp, got, ok)
		}
	}
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, CleanShutdownFileName)); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("clean shutdown marker left in %s after load", d)
		}
	}
	if got := all[tps[3]].LogStartOffset(); got != 4 {
		t.Fatalf("log start offset %d, want 4 from the checkpoint", got)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	starts, err := readCheckpoint(filepath.Join(startDir, LogStartOffsetCheckpointFile))
	if err != nil || len(starts) != 1 || starts[tps[3]] != 4 {
		t.Fatalf("log start checkpoint after close: %v %v", starts, err)
	}
}

func TestManagerDeleteRenamesThenRemoves(t *testing.T) {
	root := t.TempDir()
	cfg := ManagerConfig{Dirs: []string{root}, Default: testConfig(), FileDeleteDelayMs: 50, Logger: testLogger()}
	m, err := NewManager(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m.Start(ctx)
	defer m.Close()
	tp := TopicPartition{"gone", 0}
	l, err := m.GetOrCreate(tp, [16]byte{7}, Config{})
	if err != nil {
		t.Fatal(err)
	}
	fillLog(t, l, 3, 1, 10, 1)
	if err := m.Delete(tp); err != nil {
		t.Fatal(err)
	}
	if _, ok := m.Get(tp); ok {
		t.Fatal("deleted log still listed")
	}
	matches, _ := filepath.Glob(filepath.Join(root, "gone-0.*-delete"))
	if len(matches) != 1 || !regexp.MustCompile(`gone-0\.[0-9a-f]{32}-delete$`).MatchString(matches[0]) {
		t.Fatalf("renamed dir: %v", matches)
	}
	if _, err := os.Stat(filepath.Join(root, "gone-0")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("original dir still present")
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(matches[0]); errors.Is(err, os.ErrNotExist) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("deleted dir not removed after file.delete.delay.ms")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The same partition can be created again, empty.
	l, err = m.GetOrCreate(tp, [16]byte{8}, Config{})
	if err != nil || l.LogEndOffset() != 0 {
		t.Fatalf("recreate: %v", err)
	}
}

func TestManagerFlushSchedulerAndCheckpoints(t *testing.T) {
	root := t.TempDir()
	def := testConfig()
	def.FlushIntervalMs = 20
	cfg := ManagerConfig{Dirs: []string{root}, Default: def, FlushSchedulerIntervalMs: 10,
		FlushOffsetCheckpointIntervalMs: 20, FlushStartOffsetCheckpointIntervalMs: 20, Logger: testLogger()}
	m, err := NewManager(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m.Start(ctx)
	defer m.Close()
	l, err := m.GetOrCreate(TopicPartition{"t", 0}, [16]byte{}, def)
	if err != nil {
		t.Fatal(err)
	}
	fillLog(t, l, 5, 2, 10, 1)
	// flush.ms moves the recovery point, and the checkpoint writer records it.
	deadline := time.Now().Add(10 * time.Second)
	for {
		rp, _ := readCheckpoint(filepath.Join(root, RecoveryPointCheckpointFile))
		if rp[TopicPartition{"t", 0}] == 10 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("recovery point checkpoint %v, log recovery point %d", rp, l.RecoveryPoint())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestFlushByMessages(t *testing.T) {
	cfg := testConfig()
	cfg.FlushIntervalMessages = 4
	l, _ := openTestLog(t, cfg)
	defer l.Close()
	mustAppendFollower(t, l, simpleBatch(t, 0, 3, 1, 1))
	if l.RecoveryPoint() != 0 {
		t.Fatalf("flushed after 3 messages: recovery point %d", l.RecoveryPoint())
	}
	mustAppendFollower(t, l, simpleBatch(t, 3, 2, 1, 1))
	if l.RecoveryPoint() != 5 {
		t.Fatalf("recovery point %d after 5 messages with flush.messages 4", l.RecoveryPoint())
	}
}

func TestMsDurationSaturates(t *testing.T) {
	if got := msDuration(math.MaxInt64); got <= 0 {
		t.Fatalf("msDuration(Long.MAX_VALUE) = %v, want a huge positive duration", got)
	}
	if got := msDuration(1500); got != 1500*time.Millisecond {
		t.Fatalf("msDuration(1500) = %v", got)
	}
}

// TestHighWatermarkCheckpoint: the high watermark survives a restart
// through replication-offset-checkpoint, bounded by the log end.
func TestHighWatermarkCheckpoint(t *testing.T) {
	dir := t.TempDir()
	cfg := ManagerConfig{Dirs: []string{dir}, Default: testConfig(), Logger: testLogger()}
	m, err := NewManager(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tp := TopicPartition{"hw", 0}
	l, err := m.GetOrCreate(tp, [16]byte{7}, Config{})
	if err != nil {
		t.Fatal(err)
	}
	fillLog(t, l, 1, 4, 10, 1)
	hw := l.LogEndOffset() - 3
	l.SetHighWatermark(hw)
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, HighWatermarkCheckpointFile)); err != nil {
		t.Fatal(err)
	}
	m, err = NewManager(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	l, _ = m.Get(tp)
	if got := l.HighWatermark(); got != hw {
		t.Fatalf("high watermark after restart %d, want %d", got, hw)
	}
}

// TestManagerDeleteLongTopicName: a partition of a 249-character topic (the
// longest name Kafka allows) is renamed for deletion under a name that fits
// 255 bytes, its topic shortened as Kafka's logDeleteDirName does (the full
// name failed with ENAMETOOLONG), and removed; a manager started on a log
// dir holding such a directory removes it too.
func TestManagerDeleteLongTopicName(t *testing.T) {
	root := t.TempDir()
	cfg := ManagerConfig{Dirs: []string{root}, Default: testConfig(), FileDeleteDelayMs: 50, Logger: testLogger()}
	topic := strings.Repeat("t", 249)
	waitGone := func(path string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s not removed after file.delete.delay.ms", filepath.Base(path))
			}
			time.Sleep(10 * time.Millisecond)
		}
	}

	m, err := NewManager(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m.Start(ctx)
	for _, p := range []int32{0, 12345} {
		tp := TopicPartition{topic, p}
		l, err := m.GetOrCreate(tp, [16]byte{7}, Config{})
		if err != nil {
			t.Fatal(err)
		}
		fillLog(t, l, 2, 1, 10, 1)
		if err := m.Delete(tp); err != nil {
			t.Fatalf("delete %s-%d: %v", topic[:8], p, err)
		}
		if _, err := os.Stat(filepath.Join(root, tp.String())); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("partition %d: original dir still present", p)
		}
	}
	matches, _ := filepath.Glob(filepath.Join(root, "ttt*-delete"))
	if len(matches) != 2 {
		t.Fatalf("renamed dirs: %v", matches)
	}
	for _, path := range matches {
		name := filepath.Base(path)
		if len(name) != 255 || !regexp.MustCompile(`^t+-(0|12345)\.[0-9a-f]{32}-delete$`).MatchString(name) {
			t.Fatalf("renamed dir %q (%d bytes)", name, len(name))
		}
		waitGone(path)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}

	// One left behind (say the broker stopped within the delay) is found by
	// its suffix and removed at the next start.
	left := filepath.Join(root, deleteDirName(TopicPartition{topic, 3}, [16]byte{1}))
	if err := os.MkdirAll(left, 0o755); err != nil {
		t.Fatal(err)
	}
	m, err = NewManager(cfg)
	if err != nil {
		t.Fatal(err)
	}
	m.Start(ctx)
	defer m.Close()
	waitGone(left)
}

// TestManagerConcurrentCreate: logs created at once (outside the manager's
// mutex) are each created once: callers asking for the same partition get
// the same log, and a Delete of it waits for its creation.
func TestManagerConcurrentCreate(t *testing.T) {
	root := t.TempDir()
	m, err := NewManager(ManagerConfig{Dirs: []string{root}, Default: testConfig(), Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	const partitions, callers = 20, 4
	got := make([][callers]*Log, partitions)
	var wg sync.WaitGroup
	for p := range partitions {
		for c := range callers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				l, err := m.GetOrCreate(TopicPartition{"many", int32(p)}, [16]byte{9}, Config{})
				if err != nil {
					t.Error(err)
					return
				}
				got[p][c] = l
			}()
		}
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := m.Delete(TopicPartition{"many", 0}); err != nil {
			t.Error(err)
		}
	}()
	wg.Wait()
	for p := 1; p < partitions; p++ {
		for c := 1; c < callers; c++ {
			if got[p][c] != got[p][0] {
				t.Fatalf("partition %d: two logs created", p)
			}
		}
		if id, ok := m.TopicID(TopicPartition{"many", int32(p)}); !ok || id != [16]byte{9} {
			t.Fatalf("partition %d: topic id %v %v", p, id, ok)
		}
	}
	if n := len(m.All()); n != partitions && n != partitions-1 {
		t.Fatalf("%d logs", n)
	}
}
