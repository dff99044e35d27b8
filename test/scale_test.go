//go:build e2e

package test

// Scale measurements (issue 3, part 5): 10,000 partitions on one broker,
// and recovery after kill -9 from the recovery point. The figures are
// printed with t.Logf; nothing is asserted on time.

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// procStatus reads a "Key:   value kB" line of /proc/pid/status, in bytes.
func procStatus(t *testing.T, pid int, key string) int64 {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), key+":"); ok {
			fields := strings.Fields(rest)
			n, _ := strconv.ParseInt(fields[0], 10, 64)
			return n << 10
		}
	}
	t.Fatalf("no %s in /proc/%d/status", key, pid)
	return 0
}

// openFiles counts the process's descriptors.
func openFiles(t *testing.T, pid int) int {
	t.Helper()
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// indexMaps counts the memory maps of .index and .timeindex files.
func indexMaps(t *testing.T, pid int) int {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasSuffix(line, ".index") || strings.HasSuffix(line, ".timeindex") {
			n++
		}
	}
	return n
}

// openFilesLimit is the soft RLIMIT_NOFILE of the process.
func openFilesLimit(t *testing.T, pid int) string {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "Max open files") {
			f := strings.Fields(line)
			return f[3] + " soft, " + f[4] + " hard"
		}
	}
	return "?"
}

// settledRSS waits for the resident set to stop moving (the runtime returns
// freed memory lazily) and returns it.
func settledRSS(t *testing.T, pid int) int64 {
	t.Helper()
	prev := procStatus(t, pid, "VmRSS")
	for i := 0; i < 20; i++ {
		time.Sleep(500 * time.Millisecond)
		cur := procStatus(t, pid, "VmRSS")
		if d := cur - prev; d < 256<<10 && d > -(256<<10) {
			return cur
		}
		prev = cur
	}
	return prev
}

// waitProduce produces one record to topic/partition until it is
// acknowledged and returns when that happened.
func waitProduce(t *testing.T, b *broker, topic string, partition int32) time.Time {
	t.Helper()
	cl := newKgo(t, b, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	deadline := time.Now().Add(120 * time.Second)
	for {
		r := &kgo.Record{Topic: topic, Partition: partition, Value: []byte("ready?")}
		err := cl.ProduceSync(ctxT(t, 30*time.Second), r).FirstErr()
		if err == nil {
			return time.Now()
		}
		if time.Now().After(deadline) {
			t.Fatalf("produce to %s-%d: %v\n%s", topic, partition, err, b.log())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestScaleTenThousandPartitions creates 100 topics of 100 partitions with
// one CreateTopics each, restarts cleanly, and reports creation time,
// shutdown and start-up time, resident memory per idle partition, open
// descriptors and index maps.
func TestScaleTenThousandPartitions(t *testing.T) {
	const topics, partitions = 100, 100
	b := startBroker(t)
	pid := b.cmd.Process.Pid
	cl := newKgo(t, b)
	adm := kadm.NewClient(cl)
	// The empty broker, after a first metadata round trip.
	if _, err := adm.BrokerMetadata(ctxT(t, 20*time.Second)); err != nil {
		t.Fatal(err)
	}
	rssEmpty := settledRSS(t, pid)
	fdsEmpty := openFiles(t, pid)

	start := time.Now()
	var lastTen time.Duration
	for i := 0; i < topics; i++ {
		t0 := time.Now()
		createTopic(t, cl, fmt.Sprintf("scale-%03d", i), partitions, nil)
		if i >= topics-10 {
			lastTen += time.Since(t0)
		}
	}
	created := time.Since(start)
	t.Logf("created %d topics x %d partitions (one CreateTopics each) in %v; the last 10 CreateTopics took %v each",
		topics, partitions, created.Round(time.Millisecond), (lastTen / 10).Round(time.Millisecond))
	waitProduce(t, b, fmt.Sprintf("scale-%03d", topics-1), partitions-1)
	t.Logf("broker with %d partitions, just created: RSS %.1f MiB, %d descriptors, %d index maps",
		topics*partitions, float64(procStatus(t, pid, "VmRSS"))/(1<<20), openFiles(t, pid), indexMaps(t, pid))

	// Clean shutdown, then start-up.
	t0 := time.Now()
	b.stop()
	shutdown := time.Since(t0)
	t0 = time.Now()
	b.start()
	listening := time.Since(t0)
	pid = b.cmd.Process.Pid
	ready := waitProduce(t, b, fmt.Sprintf("scale-%03d", topics-1), partitions-1).Sub(t0)
	t.Logf("clean shutdown took %v; restart: listening after %v, first produce to the last partition acknowledged after %v",
		shutdown.Round(time.Millisecond), listening.Round(time.Millisecond), ready.Round(time.Millisecond))

	rssIdle := settledRSS(t, pid)
	fds := openFiles(t, pid)
	t.Logf("idle after restart: RSS %.1f MiB (empty broker %.1f MiB): %d bytes per idle partition; "+
		"%d descriptors (empty broker %d), %d index maps; open files limit %s",
		float64(rssIdle)/(1<<20), float64(rssEmpty)/(1<<20), (rssIdle-rssEmpty)/(topics*partitions),
		fds, fdsEmpty, indexMaps(t, pid), openFilesLimit(t, pid))

	// kill -9: every log is recovered from its recovery point.
	b.kill9()
	t0 = time.Now()
	b.start()
	listening = time.Since(t0)
	ready = waitProduce(t, b, fmt.Sprintf("scale-%03d", topics-1), partitions-1).Sub(t0)
	t.Logf("restart after kill -9: listening after %v, first produce to the last partition acknowledged after %v",
		listening.Round(time.Millisecond), ready.Round(time.Millisecond))
}

// recoveryPointOf reads a partition's entry in the recovery point
// checkpoint (-1 if absent).
func recoveryPointOf(t *testing.T, dataDir, tp string) int64 {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dataDir, "recovery-point-offset-checkpoint"))
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) == 3 && f[0]+"-"+f[1] == tp {
			n, _ := strconv.ParseInt(f[2], 10, 64)
			return n
		}
	}
	return -1
}

// TestScaleRecoveryFromRecoveryPoint checks that a restart after kill -9
// costs time for the data after the recovery point, not for the whole log:
// a large log whose rolled segments are flushed and checkpointed restarts
// about as fast as a small one, and much faster than the same log without
// its checkpoint (everything rescanned).
func TestScaleRecoveryFromRecoveryPoint(t *testing.T) {
	b := startBroker(t, "log.segment.bytes=8388608", "log.flush.offset.checkpoint.interval.ms=500")
	cl := newKgo(t, b, kgo.ProducerBatchMaxBytes(1<<20), kgo.ProducerLinger(5*time.Millisecond),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchCompression(kgo.NoCompression()))
	createTopic(t, cl, "big", 1, nil)
	value := make([]byte, 1000)
	for i := range value {
		value[i] = byte('a' + i%26)
	}
	const records = 400_000 // about 420 MB with batch overhead
	results := make(chan error, 1024)
	for i := 0; i < records; i++ {
		cl.Produce(ctxT(t, 120*time.Second), &kgo.Record{Topic: "big", Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				select {
				case results <- err:
				default:
				}
			}
		})
	}
	if err := cl.Flush(ctxT(t, 120*time.Second)); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-results:
		t.Fatal(err)
	default:
	}
	// The rolled segments are flushed in the background and the recovery
	// point checkpointed every 500 ms; wait until it reaches the active
	// segment (the one with the highest base offset: where a segment ends
	// depends on how the producer batched).
	activeBase := int64(-1)
	ents, err := os.ReadDir(filepath.Join(b.dataDir, "big-0"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if base, ok := strings.CutSuffix(e.Name(), ".log"); ok {
			if n, err := strconv.ParseInt(base, 10, 64); err == nil {
				activeBase = max(activeBase, n)
			}
		}
	}
	if activeBase < records/2 {
		t.Fatalf("active segment at %d: the log did not roll as expected", activeBase)
	}
	deadline := time.Now().Add(60 * time.Second)
	for recoveryPointOf(t, b.dataDir, "big-0") < activeBase {
		if time.Now().After(deadline) {
			cp, _ := os.ReadFile(filepath.Join(b.dataDir, "recovery-point-offset-checkpoint"))
			ents, _ := os.ReadDir(filepath.Join(b.dataDir, "big-0"))
			var names []string
			for _, e := range ents {
				if info, err := e.Info(); err == nil {
					names = append(names, fmt.Sprintf("%s:%d", e.Name(), info.Size()))
				}
			}
			t.Fatalf("recovery point stuck at %d\ncheckpoint:\n%s\nfiles: %v\n%s", recoveryPointOf(t, b.dataDir, "big-0"), cp, names, b.log())
		}
		time.Sleep(100 * time.Millisecond)
	}
	rp := recoveryPointOf(t, b.dataDir, "big-0")

	restart := func() time.Duration {
		b.kill9()
		t0 := time.Now()
		b.start()
		return waitProduce(t, b, "big", 0).Sub(t0)
	}
	withCheckpoint := restart()
	// Without the checkpoint every segment is rescanned.
	b.kill9()
	if err := os.Remove(filepath.Join(b.dataDir, "recovery-point-offset-checkpoint")); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	b.start()
	fullScan := waitProduce(t, b, "big", 0).Sub(t0)
	t.Logf("log of %d records (~%d MB) in 8 MiB segments, recovery point %d: restart after kill -9 ready in %v; "+
		"with the checkpoint removed (every segment rescanned) %v",
		records, records*1030/1_000_000, rp, withCheckpoint.Round(time.Millisecond), fullScan.Round(time.Millisecond))
}
