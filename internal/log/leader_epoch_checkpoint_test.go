package log

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"gregor/internal/record"
)

// epochBatch is a follower batch of n records at baseOffset stamped with a
// partition leader epoch (the CRC does not cover the epoch).
func epochBatch(t *testing.T, baseOffset int64, n int, epoch int32) []byte {
	t.Helper()
	b := simpleBatch(t, baseOffset, n, 1_000, 20)
	record.SetPartitionLeaderEpoch(b, epoch)
	return b
}

// appendEpochs appends, as a follower, one batch of n records per epoch in
// epochs, from the log end.
func appendEpochs(t *testing.T, l *Log, n int, epochs ...int32) {
	t.Helper()
	for _, e := range epochs {
		mustAppendFollower(t, l, epochBatch(t, l.LogEndOffset(), n, e))
	}
}

func wantLogEpochs(t *testing.T, l *Log, want ...EpochEntry) {
	t.Helper()
	if got := l.EpochEntries(); !slices.Equal(got, want) {
		t.Fatalf("epoch entries %v, want %v", got, want)
	}
	// The file is written by the next flush (markEpochsDirty).
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	onDisk, err := readLeaderEpochCheckpoint(l.Dir())
	if err != nil {
		t.Fatalf("read %s: %v", LeaderEpochCheckpointFile, err)
	}
	if !slices.Equal(onDisk, want) {
		t.Fatalf("%s holds %v, want %v", LeaderEpochCheckpointFile, onDisk, want)
	}
}

func reopen(t *testing.T, l *Log, dir string, clean bool, recoveryPoint, logStart int64) *Log {
	t.Helper()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if clean {
		markClean(t, dir)
	} else {
		os.Remove(filepath.Join(filepath.Dir(dir), CleanShutdownFileName))
	}
	nl, err := Open(dir, testConfig(), recoveryPoint, logStart, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nl.Close() })
	return nl
}

func TestLeaderEpochCheckpointFormatRoundTrip(t *testing.T) {
	dir := t.TempDir()
	entries := []EpochEntry{{0, 0}, {3, 120}, {7, 1 << 40}}
	if err := writeLeaderEpochCheckpoint(dir, entries, true); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, LeaderEpochCheckpointFile))
	if err != nil {
		t.Fatal(err)
	}
	if want := "0\n3\n0 0\n3 120\n7 1099511627776\n"; string(raw) != want {
		t.Fatalf("file %q, want Kafka's format %q", raw, want)
	}
	got, err := readLeaderEpochCheckpoint(dir)
	if err != nil || !slices.Equal(got, entries) {
		t.Fatalf("read back %v (%v), want %v", got, err, entries)
	}
	if err := writeLeaderEpochCheckpoint(dir, nil, true); err != nil {
		t.Fatal(err)
	}
	if got, err := readLeaderEpochCheckpoint(dir); err != nil || len(got) != 0 {
		t.Fatalf("empty checkpoint read as %v (%v)", got, err)
	}
	if _, err := readLeaderEpochCheckpoint(t.TempDir()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v, want not exist", err)
	}
	for _, bad := range []string{"", "1\n0\n", "0\n", "0\n2\n1 0\n", "0\n1\n1\n", "0\n1\n1 0 0\n", "0\n1\nx 0\n",
		"0\n1\n-1 0\n", "0\n1\n1 -5\n", "0\n1\n1 0\n2 5\n", "0\nabc\n", "\x00\x00\x00"} {
		if err := os.WriteFile(filepath.Join(dir, LeaderEpochCheckpointFile), []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		if got, err := readLeaderEpochCheckpoint(dir); err == nil {
			t.Fatalf("malformed checkpoint %q read as %v", bad, got)
		}
	}
}

func TestLeaderEpochsFromLeaderAppends(t *testing.T) {
	l, _ := openTestLog(t, testConfig())
	defer l.Close()
	// A new log writes no checkpoint until its first epoch: a missing file
	// is an empty cache, and it stays so across a reopen.
	if got := l.EpochEntries(); len(got) != 0 {
		t.Fatalf("new log has epoch entries %v", got)
	}
	if _, err := os.Stat(filepath.Join(l.Dir(), LeaderEpochCheckpointFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("new log's %s: %v, want none", LeaderEpochCheckpointFile, err)
	}
	l = reopen(t, l, l.Dir(), true, 0, 0)
	if got := l.EpochEntries(); len(got) != 0 {
		t.Fatalf("reopened new log has epoch entries %v", got)
	}
	if _, ok := l.LatestEpoch(); ok {
		t.Fatal("new log has a latest epoch")
	}
	lead := func(epoch int32) {
		t.Helper()
		if _, err := l.AppendAsLeader(simpleBatch(t, 0, 2, 1_700_000_000_000, 10), epoch, leaderOpts()); err != nil {
			t.Fatal(err)
		}
	}
	lead(3)
	lead(3)
	wantLogEpochs(t, l, EpochEntry{3, 0})
	// A new leader assigns its epoch at its log end before it writes.
	if err := l.AssignEpochStartOffset(5, l.LogEndOffset()); err != nil {
		t.Fatal(err)
	}
	wantLogEpochs(t, l, EpochEntry{3, 0}, EpochEntry{5, 4})
	lead(5)
	wantLogEpochs(t, l, EpochEntry{3, 0}, EpochEntry{5, 4})
	if e, ok := l.LatestEpoch(); !ok || e != 5 {
		t.Fatalf("latest epoch %d %v, want 5", e, ok)
	}
	for _, c := range []struct {
		req, epoch int32
		end        int64
	}{{3, 3, 4}, {4, 3, 4}, {5, 5, 6}, {2, 2, 0}, {6, UndefinedEpoch, UndefinedEpochOffset}, {UndefinedEpoch, UndefinedEpoch, UndefinedEpochOffset}} {
		if e, end := l.EndOffsetForEpoch(c.req); e != c.epoch || end != c.end {
			t.Fatalf("EndOffsetForEpoch(%d) = (%d, %d), want (%d, %d)", c.req, e, end, c.epoch, c.end)
		}
	}
	if err := l.AssignEpochStartOffset(-1, 0); err == nil {
		t.Fatal("negative epoch accepted")
	}
}

func TestLeaderEpochsFromFollowerAppends(t *testing.T) {
	l, _ := openTestLog(t, testConfig())
	defer l.Close()
	appendEpochs(t, l, 1, 1, 2, 2, 3)
	wantLogEpochs(t, l, EpochEntry{1, 0}, EpochEntry{2, 1}, EpochEntry{3, 3})
	// Several batches in one fetch response, one without an epoch (skipped).
	var many []byte
	many = append(many, epochBatch(t, 4, 2, 3)...)
	many = append(many, epochBatch(t, 6, 2, record.NoPartitionLeaderEpoch)...)
	many = append(many, epochBatch(t, 8, 2, 6)...)
	many = append(many, epochBatch(t, 10, 2, 6)...)
	mustAppendFollower(t, l, many)
	wantLogEpochs(t, l, EpochEntry{1, 0}, EpochEntry{2, 1}, EpochEntry{3, 3}, EpochEntry{6, 8})
	if e, end := l.EndOffsetForEpoch(4); e != 3 || end != 8 {
		t.Fatalf("EndOffsetForEpoch(4) = (%d, %d), want (3, 8)", e, end)
	}
	if e, end := l.EndOffsetForEpoch(6); e != 6 || end != 12 {
		t.Fatalf("EndOffsetForEpoch(6) = (%d, %d), want (6, 12)", e, end)
	}
	// A rejected append leaves the cache alone.
	if _, err := l.AppendAsFollower(epochBatch(t, 3, 1, 9)); !errors.Is(err, ErrUnexpectedAppendOffset) {
		t.Fatalf("append below the end: %v", err)
	}
	wantLogEpochs(t, l, EpochEntry{1, 0}, EpochEntry{2, 1}, EpochEntry{3, 3}, EpochEntry{6, 8})
}

func TestLeaderEpochsFollowTruncation(t *testing.T) {
	l, _ := openTestLog(t, testConfig())
	defer l.Close()
	appendEpochs(t, l, 2, 1, 1, 2, 2, 4, 4) // epochs 1@0, 2@4, 4@8; LEO 12
	wantLogEpochs(t, l, EpochEntry{1, 0}, EpochEntry{2, 4}, EpochEntry{4, 8})

	// Truncating inside epoch 4's first batch removes epoch 4.
	if err := l.TruncateTo(9); err != nil {
		t.Fatal(err)
	}
	if l.LogEndOffset() != 8 {
		t.Fatalf("LEO %d, want 8", l.LogEndOffset())
	}
	wantLogEpochs(t, l, EpochEntry{1, 0}, EpochEntry{2, 4})

	// A former leader assigned epoch 5 at its end and wrote nothing; the
	// new leader's history wins even when nothing is cut.
	if err := l.AssignEpochStartOffset(5, l.LogEndOffset()); err != nil {
		t.Fatal(err)
	}
	if err := l.TruncateTo(l.LogEndOffset()); err != nil {
		t.Fatal(err)
	}
	wantLogEpochs(t, l, EpochEntry{1, 0}, EpochEntry{2, 4})

	// The follower then appends the new leader's epoch 6.
	appendEpochs(t, l, 2, 6)
	wantLogEpochs(t, l, EpochEntry{1, 0}, EpochEntry{2, 4}, EpochEntry{6, 8})

	if err := l.TruncateTo(4); err != nil {
		t.Fatal(err)
	}
	wantLogEpochs(t, l, EpochEntry{1, 0})

	if err := l.TruncateFullyAndStartAt(100); err != nil {
		t.Fatal(err)
	}
	wantLogEpochs(t, l)
	appendEpochs(t, l, 1, 7)
	wantLogEpochs(t, l, EpochEntry{7, 100})
}

func TestLeaderEpochsSurviveRestart(t *testing.T) {
	l, dir := openTestLog(t, testConfig())
	appendEpochs(t, l, 2, 0, 0, 3, 5)
	want := []EpochEntry{{0, 0}, {3, 4}, {5, 6}}

	l = reopen(t, l, dir, true, 0, 0)
	wantLogEpochs(t, l, want...)

	// Unclean: the segment is rescanned, and the cache agrees with it.
	l = reopen(t, l, dir, false, 0, 0)
	wantLogEpochs(t, l, want...)
	appendEpochs(t, l, 1, 6)
	wantLogEpochs(t, l, append(want, EpochEntry{6, 8})...)
}

func TestLeaderEpochsRebuiltFromTheLog(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 300 // a few batches per segment
	l, dir := openTestLog(t, cfg)
	appendEpochs(t, l, 2, 0, 0, 1, 1, 1, 4, 4, 4, 4, 9, 9)
	want := []EpochEntry{{0, 0}, {1, 4}, {4, 10}, {9, 18}}
	wantLogEpochs(t, l, want...)
	if segs, _ := l.snapshot(); len(segs) < 3 {
		t.Fatalf("%d segments, want several", len(segs))
	}
	path := filepath.Join(dir, LeaderEpochCheckpointFile)
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name     string
		contents []byte // nil: no file
		clean    bool
	}{
		{"missing after a clean shutdown", nil, true},
		{"missing after a crash", nil, false},
		{"torn", good[:len(good)/2], true},
		{"garbage", []byte("\x7fELF\x00\x01 not a checkpoint"), true},
		{"empty", []byte{}, true},
		{"wrong version", []byte("1\n0\n"), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			if c.contents == nil {
				os.Remove(path)
			} else if err := os.WriteFile(path, c.contents, 0o644); err != nil {
				t.Fatal(err)
			}
			if c.clean {
				markClean(t, dir)
			} else {
				os.Remove(filepath.Join(filepath.Dir(dir), CleanShutdownFileName))
			}
			l, err = Open(dir, cfg, l.RecoveryPoint(), 0, testLogger())
			if err != nil {
				t.Fatalf("open with a %s checkpoint: %v", c.name, err)
			}
			wantLogEpochs(t, l, want...)
		})
	}
	l.Close()
}

func TestLeaderEpochsReconciledWithTheLogOnOpen(t *testing.T) {
	l, dir := openTestLog(t, testConfig())
	appendEpochs(t, l, 2, 1, 2, 3) // 1@0, 2@2, 3@4; LEO 6
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// A checkpoint written ahead of the log (an epoch assigned before its
	// batch reached the disk) loses the entries past the log end.
	if err := writeLeaderEpochCheckpoint(dir, []EpochEntry{{1, 0}, {2, 2}, {3, 4}, {7, 6}, {8, 9}}, true); err != nil {
		t.Fatal(err)
	}
	markClean(t, dir)
	l, err := Open(dir, testConfig(), 6, 0, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	wantLogEpochs(t, l, EpochEntry{1, 0}, EpochEntry{2, 2}, EpochEntry{3, 4})
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	// A checkpoint missing entries (a truncation that reached the file but
	// not the log): after a crash the rescanned segments restore them, as
	// in Kafka's recovery.
	if err := writeLeaderEpochCheckpoint(dir, []EpochEntry{{1, 0}}, true); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(filepath.Dir(dir), CleanShutdownFileName))
	l, err = Open(dir, testConfig(), 0, 0, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	wantLogEpochs(t, l, EpochEntry{1, 0}, EpochEntry{2, 2}, EpochEntry{3, 4})
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	// A checkpointed log start offset above the first epoch's start moves
	// that epoch's start up to it.
	markClean(t, dir)
	l, err = Open(dir, testConfig(), 6, 3, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	wantLogEpochs(t, l, EpochEntry{2, 3}, EpochEntry{3, 4})
}

func TestLeaderEpochsFollowTheLogStartOffset(t *testing.T) {
	l, dir, _ := retentionLog(t, testConfig())
	for _, e := range []int32{1, 1, 2, 2, 2, 5} { // one 2-record batch per segment
		mustAppendFollower(t, l, epochBatch(t, l.LogEndOffset(), 2, e))
	}
	l.SetHighWatermark(l.LogEndOffset())
	wantLogEpochs(t, l, EpochEntry{1, 0}, EpochEntry{2, 4}, EpochEntry{5, 10})

	// DeleteRecords into epoch 1's second batch: epoch 1 now starts there.
	if _, err := l.DeleteRecordsBefore(3); err != nil {
		t.Fatal(err)
	}
	wantLogEpochs(t, l, EpochEntry{1, 3}, EpochEntry{2, 4}, EpochEntry{5, 10})

	// Retention by size deletes whole segments; the first kept segment's
	// base offset, inside epoch 2, becomes its start.
	cfg := testConfig()
	cfg.SegmentBytes = l.config().SegmentBytes
	cfg.RetentionBytes = 3 * int64(len(epochBatch(t, 0, 2, 0)))
	cfg.RetentionMs = -1
	l.UpdateConfig(cfg)
	if n, err := l.DeleteOldSegments(farFuture); err != nil || n == 0 {
		t.Fatalf("retention deleted %d segments (%v)", n, err)
	}
	start := l.LogStartOffset()
	if start <= 4 || start > 10 {
		t.Fatalf("log start %d, want inside epoch 2", start)
	}
	wantLogEpochs(t, l, EpochEntry{2, start}, EpochEntry{5, 10})
	if e, end := l.EndOffsetForEpoch(1); e != 1 || end != start {
		t.Fatalf("EndOffsetForEpoch(1) after retention = (%d, %d), want (1, %d)", e, end, start)
	}

	l = reopen(t, l, dir, true, l.LogEndOffset(), start)
	wantLogEpochs(t, l, EpochEntry{2, start}, EpochEntry{5, 10})
}

func TestLeaderEpochQueriesDuringAppends(t *testing.T) {
	l, _ := openTestLog(t, testConfig())
	defer l.Close()
	const epochs = 50
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			latest, ok := l.LatestEpoch()
			if !ok {
				continue
			}
			// Every epoch e ends where e+1 starts: at 2*(e+1), or at the
			// log end for the latest one, which is never below its start.
			e, end := l.EndOffsetForEpoch(latest)
			if e != latest || end < 2*int64(latest) {
				t.Errorf("EndOffsetForEpoch(%d) = (%d, %d) with latest %d", latest, e, end, latest)
				return
			}
			if latest > 0 {
				if e, end := l.EndOffsetForEpoch(latest - 1); e != latest-1 || end != 2*int64(latest) {
					t.Errorf("EndOffsetForEpoch(%d) = (%d, %d)", latest-1, e, end)
					return
				}
			}
		}
	}()
	for e := int32(0); e < epochs; e++ {
		appendEpochs(t, l, 1, e, e)
	}
	close(done)
	wg.Wait()
	if got := len(l.EpochEntries()); got != epochs {
		t.Fatalf("%d entries, want %d", got, epochs)
	}
}

// TestLeaderEpochSyncedBeforeRecoveryPoint: a new epoch's entry is written
// and fsynced by the next flush, before the recovery point passes its
// records (markEpochsDirty). What a crash before that flush leaves —
// the previous file, or a torn one — loses nothing: the records above the
// recovery point are rescanned and give their epochs back.
func TestLeaderEpochSyncedBeforeRecoveryPoint(t *testing.T) {
	for _, crashLeaves := range []string{"previous file", "torn file"} {
		t.Run(crashLeaves, func(t *testing.T) {
			l, dir := openTestLog(t, testConfig())
			file := filepath.Join(dir, LeaderEpochCheckpointFile)
			lead := func(epoch int32) {
				t.Helper()
				if _, err := l.AppendAsLeader(simpleBatch(t, 0, 2, 1_700_000_000_000, 10), epoch, leaderOpts()); err != nil {
					t.Fatal(err)
				}
			}
			lead(3)
			if err := l.Flush(); err != nil {
				t.Fatal(err)
			}
			if l.epochsDirty.Load() {
				t.Fatal("a flush left the checkpoint unwritten")
			}
			rp := l.RecoveryPoint()
			previous, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if err := l.AssignEpochStartOffset(5, l.LogEndOffset()); err != nil {
				t.Fatal(err)
			}
			if got := l.EpochEntries(); !slices.Equal(got, []EpochEntry{{3, 0}, {5, 2}}) {
				t.Fatalf("cache %v", got)
			}
			if now, _ := os.ReadFile(file); !bytes.Equal(now, previous) || !l.epochsDirty.Load() {
				t.Fatal("a new epoch is not left to the next flush")
			}
			lead(5)
			if err := l.flushUpTo(l.LogEndOffset(), true); err != nil {
				t.Fatal(err)
			}
			if got, err := readLeaderEpochCheckpoint(dir); err != nil || !slices.Equal(got, []EpochEntry{{3, 0}, {5, 2}}) {
				t.Fatalf("after the flush the file holds %v (%v)", got, err)
			}
			// The crash: as if that flush never happened — the file is the
			// previous one (or torn) and the recovery point where it was.
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			lost := previous
			if crashLeaves == "torn file" {
				lost = []byte("0\n2\n3 0\n5")
			}
			if err := os.WriteFile(file, lost, 0o644); err != nil {
				t.Fatal(err)
			}
			l = reopen(t, l, dir, false, rp, 0)
			wantLogEpochs(t, l, EpochEntry{3, 0}, EpochEntry{5, 2})
		})
	}
}
