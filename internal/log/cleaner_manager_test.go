package log

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"gregor/internal/record"
)

func newCleanerManager(t *testing.T, dir string, now func() time.Time) *Manager {
	t.Helper()
	m, err := NewManager(ManagerConfig{Dirs: []string{dir}, Default: testConfig(), Logger: testLogger(),
		Cleaner: CleanerConfig{Enable: true, Threads: 1, DedupeBufferSize: 1 << 20, BackoffMs: 10, Now: now}})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// fillKeyed appends n single-record batches cycling over keys, with the
// given timestamp, then rolls.
func fillKeyed(t *testing.T, l *Log, n, keys int, ts int64) {
	t.Helper()
	for i := 0; i < n; i++ {
		appendKeyed(t, l, ts, record.CodecNone, noProducer, val(fmt.Sprint("k", i%keys), fmt.Sprint("value-", i)))
	}
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	l.SetHighWatermark(l.LogEndOffset())
}

// TestCleanerSelection checks which logs the cleaner picks (Kafka's
// grabFilthiestCompactedLog): only compacted logs, only above
// min.cleanable.dirty.ratio, not segments younger than min.compaction.lag.ms,
// but anything older than max.compaction.lag.ms whatever the ratio, and never
// past the high watermark.
func TestCleanerSelection(t *testing.T) {
	now := time.UnixMilli(testNowMs)
	m := newCleanerManager(t, t.TempDir(), func() time.Time { return now })
	defer m.Close()
	lc := m.cleaner
	grab := func(at time.Time) (logToClean, bool) {
		ltc, ok := lc.grabFilthiestCompactedLog(at)
		if ok {
			lc.mu.Lock()
			delete(lc.inProgress, ltc.tp)
			lc.mu.Unlock()
		}
		return ltc, ok
	}
	clean := func(ltc logToClean) {
		t.Helper()
		lc.cleanLog(context.Background(), lc.cleaners[0], ltc, now)
		if st := m.CleanerStats(); st.Failed != 0 {
			t.Fatalf("clean failed: %+v", st)
		}
	}

	cfg := compactConfig()
	cfg.MinCleanableDirtyRatio = 0.5
	compacted, err := m.GetOrCreate(TopicPartition{"compacted", 0}, [16]byte{1}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := m.GetOrCreate(TopicPartition{"plain", 0}, [16]byte{2}, testConfig())
	if err != nil {
		t.Fatal(err)
	}
	fillKeyed(t, plain, 100, 10, testNowMs)
	if _, ok := grab(now); ok {
		t.Fatal("picked a log without cleanup.policy=compact")
	}

	// Everything dirty: ratio 1 > 0.5, but not past the high watermark.
	fillKeyed(t, compacted, 100, 10, testNowMs)
	compacted.SetHighWatermark(0)
	if ltc, ok := grab(now); ok {
		t.Fatalf("picked a log whose high watermark is at its start: %+v", ltc)
	}
	compacted.SetHighWatermark(compacted.LogEndOffset())
	ltc, ok := grab(now)
	if !ok || ltc.tp.Topic != "compacted" || ltc.cleanableRatio() != 1 {
		t.Fatalf("dirty log not picked: %+v %v", ltc, ok)
	}
	clean(ltc)
	if off, ok := m.CleanerCheckpoint(ltc.tp); !ok || off != 100 {
		t.Fatalf("checkpoint %d %v, want 100", off, ok)
	}
	file, err := readCheckpoint(filepath.Join(filepath.Dir(compacted.Dir()), CleanerOffsetCheckpointFile))
	if err != nil || file[ltc.tp] != 100 || len(file) != 1 {
		t.Fatalf("cleaner-offset-checkpoint holds %v (%v)", file, err)
	}

	// A little dirt: below the ratio.
	fillKeyed(t, compacted, 3, 10, testNowMs)
	if ltc, ok := grab(now); ok {
		t.Fatalf("picked a log below min.cleanable.dirty.ratio: ratio %.2f", ltc.cleanableRatio())
	}
	// max.compaction.lag.ms forces it once the dirty records are old enough.
	cfg.MaxCompactionLagMs = 60_000
	compacted.UpdateConfig(cfg)
	if _, ok := grab(now.Add(59 * time.Second)); ok {
		t.Fatal("picked before max.compaction.lag.ms")
	}
	ltc, ok = grab(now.Add(61 * time.Second))
	if !ok || !ltc.needCompactionNow {
		t.Fatalf("max.compaction.lag.ms did not force a clean: %+v %v", ltc, ok)
	}
	clean(ltc)

	// min.compaction.lag.ms holds back segments with young records.
	cfg.MaxCompactionLagMs = 0
	cfg.MinCompactionLagMs = 3_600_000
	compacted.UpdateConfig(cfg)
	fillKeyed(t, compacted, 200, 10, testNowMs+10_000)
	if ltc, ok := grab(now.Add(time.Hour)); ok {
		t.Fatalf("picked segments younger than min.compaction.lag.ms: %+v", ltc)
	}
	if ltc, ok := grab(now.Add(2 * time.Hour)); !ok || ltc.firstUncleanableOffset != compacted.LogEndOffset() {
		t.Fatalf("not picked once old enough: %+v %v", ltc, ok)
	}
}

// TestManagerRunsCleaner runs the cleaner thread: a compacted log is
// cleaned in the background, the checkpoint survives a restart, and Close
// stops the thread (goleak checks).
func TestManagerRunsCleaner(t *testing.T) {
	dir := t.TempDir()
	m := newCleanerManager(t, dir, nil)
	tp := TopicPartition{"compacted", 0}
	cfg := compactConfig()
	cfg.MinCleanableDirtyRatio = 0.01
	l, err := m.GetOrCreate(tp, [16]byte{1}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	fillKeyed(t, l, 500, 20, time.Now().UnixMilli())
	m.Start(context.Background())
	deadline := time.Now().Add(10 * time.Second)
	for m.CleanerStats().Runs == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no clean within 10s: %+v", m.CleanerStats())
		}
		time.Sleep(5 * time.Millisecond)
	}
	recs, _ := readLog(t, l)
	if len(recs) != 20 {
		t.Fatalf("%d records after cleaning, want 20", len(recs))
	}
	st := m.CleanerStats()
	if st.MessagesRead != 500 || st.MessagesRetained != 20 || st.BytesWritten >= st.BytesRead {
		t.Errorf("stats %+v", st)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	m2 := newCleanerManager(t, dir, nil)
	defer m2.Close()
	if off, ok := m2.CleanerCheckpoint(tp); !ok || off != 500 {
		t.Fatalf("checkpoint after restart %d %v, want 500", off, ok)
	}
}

// TestCleanerConcurrentWithAppendsAndReads cleans while a writer appends
// and rolls and a reader reads the whole log over and over; in the end the
// newest value of every key is there and the reader never saw an error.
func TestCleanerConcurrentWithAppendsAndReads(t *testing.T) {
	m := newCleanerManager(t, t.TempDir(), nil)
	cfg := compactConfig()
	cfg.SegmentBytes = 8192
	cfg.MinCleanableDirtyRatio = 0.01
	l, err := m.GetOrCreate(TopicPartition{"busy", 0}, [16]byte{1}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	m.Start(context.Background())
	defer m.Close()

	stop := make(chan struct{})
	readerDone := make(chan error, 1)
	go func() {
		for {
			select {
			case <-stop:
				readerDone <- nil
				return
			default:
			}
			off := l.LogStartOffset()
			for off < l.HighWatermark() {
				ri, err := l.Read(off, 64<<10, l.HighWatermark(), true)
				if err != nil {
					readerDone <- err
					return
				}
				if len(ri.Records) == 0 {
					break
				}
				for rest := ri.Records; len(rest) > 0; {
					h, err := record.ParseHeader(rest)
					if err != nil {
						readerDone <- err
						return
					}
					if _, _, err := record.ReadRecords(rest[:h.Size()]); err != nil {
						readerDone <- err
						return
					}
					off = max(off, h.NextOffset())
					rest = rest[h.Size():]
				}
			}
		}
	}()
	// Write until the cleaner has run three times during the writes.
	latest := map[string]string{}
	deadline := time.Now().Add(20 * time.Second)
	for i := 0; i < 3000 || m.CleanerStats().Runs < 3; i++ {
		if time.Now().After(deadline) {
			break
		}
		k, v := fmt.Sprint("k", i%97), fmt.Sprint("value-", i)
		appendKeyed(t, l, time.Now().UnixMilli(), record.CodecLZ4, noProducer, val(k, v))
		latest[k] = v
		l.SetHighWatermark(l.LogEndOffset())
	}
	close(stop)
	if err := <-readerDone; err != nil {
		t.Fatalf("reader: %v", err)
	}
	if st := m.CleanerStats(); st.Runs < 3 || st.Failed != 0 {
		t.Fatalf("cleaner stats %+v", st)
	}
	recs, _ := readLog(t, l)
	got := map[string]string{}
	for _, r := range recs {
		got[string(r.key)] = string(r.value)
	}
	if fmt.Sprint(got) != fmt.Sprint(latest) {
		t.Fatalf("latest values\n%v\nwant\n%v", got, latest)
	}
	if st := m.CleanerStats(); st.MessagesRetained >= st.MessagesRead {
		t.Fatalf("nothing was compacted: %+v", st)
	}
}
