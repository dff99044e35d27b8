//go:build e2e

package test

// Replication measurements (issue 5, "Benchmarks (reported)"): produce
// throughput and acknowledgement latency with acks=1 and acks=all on RF=3
// (RF=1 as the baseline) over 3 brokers; how far followers trail the leader
// under that load; and the time from kill -9 of a partition leader until a
// produce to that partition is acknowledged by the new leader. Nothing is
// asserted on time; the figures are printed with t.Logf. Skipped unless
// GREGOR_BENCH=1:
//
//	GREGOR_BENCH=1 go test -tags e2e -run 'TestReplicationBench' -v -timeout 30m ./test/
//
// GREGOR_BENCH_SECONDS (default 10) is each produce phase's length,
// GREGOR_BENCH_RATE (default 2000) the records per second of the fixed-rate
// latency phases, GREGOR_BENCH_OVERRIDES ("key=value,...") adds settings to
// every node. GREGOR_BENCH_TOOLS (default /work/shared/tools/bench) is the
// shared bench kit: its physbench and kfake-server measure, in the same run,
// the disk and loopback limits and a broker that does no work (kfake
// -blackhole) under the same producer; without it those lines are skipped.

import (
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"gregor/internal/record"
)

const (
	rbRecordSize = 1024
	rbPartitions = 6
)

func rbEnvInt(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		t.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}

func rbOverrides() []string {
	if v := os.Getenv("GREGOR_BENCH_OVERRIDES"); v != "" {
		return strings.Split(v, ",")
	}
	return nil
}

// rbLoad is one produce phase.
type rbLoad struct {
	seeds   []string
	topic   string
	acksAll bool          // acks=all with the idempotent producer (Kafka's default); else acks=1, not idempotent
	rate    int           // records per second; 0: as fast as the client can
	linger  time.Duration // producer linger
	dur     time.Duration
	onAck   func(partition int32, offset int64, at time.Time)
}

type rbResult struct {
	records, failed int
	elapsed         time.Duration // first Produce until every record is answered
	lat             []time.Duration
	firstErr        error
}

func (r rbResult) mbs() float64 {
	return float64(r.records) * rbRecordSize / r.elapsed.Seconds() / 1e6
}

// rbProducer is the client both phases use: no compression (the values are
// random), Kafka's producer defaults otherwise (5 requests in flight per
// broker, idempotent only with acks=all).
func rbProducer(t *testing.T, seeds []string, acksAll bool, linger time.Duration, extra ...kgo.Opt) *kgo.Client {
	t.Helper()
	opts := []kgo.Opt{
		kgo.SeedBrokers(seeds...),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.ProducerLinger(linger),
		kgo.RecordDeliveryTimeout(60 * time.Second),
	}
	if acksAll {
		opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
	} else {
		opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite(), kgo.MaxProduceRequestsInflightPerBroker(5))
	}
	cl, err := kgo.NewClient(append(opts, extra...)...)
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// rbProduce writes 1 KiB random records for l.dur and waits for every
// answer. A record's latency runs from its Produce call (which blocks while
// the client's buffer is full) to its acknowledgement.
func rbProduce(t *testing.T, l rbLoad) rbResult {
	t.Helper()
	cl := rbProducer(t, l.seeds, l.acksAll, l.linger, kgo.DefaultProduceTopic(l.topic))
	defer cl.Close()
	value := make([]byte, rbRecordSize)
	rand.Read(value)

	var mu sync.Mutex
	var res rbResult
	ctx := context.Background()
	produce := func() {
		at := time.Now()
		cl.Produce(ctx, &kgo.Record{Value: value}, func(r *kgo.Record, err error) {
			now := time.Now()
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				res.failed++
				if res.firstErr == nil {
					res.firstErr = err
				}
				return
			}
			res.records++
			res.lat = append(res.lat, now.Sub(at))
			if l.onAck != nil {
				l.onAck(r.Partition, r.Offset, now)
			}
		})
	}
	start := time.Now()
	end := start.Add(l.dur)
	if l.rate == 0 {
		for time.Now().Before(end) {
			for range 100 {
				produce()
			}
		}
	} else {
		// Bursts every 5 ms keep the rate without a timer per record.
		const tick = 5 * time.Millisecond
		sent := 0
		for now := time.Now(); now.Before(end); now = time.Now() {
			due := int(float64(l.rate) * now.Sub(start).Seconds())
			for ; sent < due; sent++ {
				produce()
			}
			time.Sleep(tick)
		}
	}
	fctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := cl.Flush(fctx); err != nil {
		t.Fatalf("%s: flush: %v", l.topic, err)
	}
	res.elapsed = time.Since(start)
	return res
}

// rbQuantiles prints p50/p99/p99.9/max of latencies.
func rbQuantiles(d []time.Duration) string {
	if len(d) == 0 {
		return "-"
	}
	s := slices.Clone(d)
	slices.Sort(s)
	at := func(q float64) string {
		x := s[min(len(s)-1, int(q*float64(len(s))))]
		return fmt.Sprintf("%.1fms", float64(x)/1e6)
	}
	return fmt.Sprintf("p50 %s  p99 %s  p99.9 %s  max %s", at(0.5), at(0.99), at(0.999), at(1))
}

// rbTail follows one replica's log on disk and returns its log end offset:
// the next offset after the last complete batch of the newest segment. The
// broker writes segments with pwrite, so the page cache shows a replica's
// appends at once; no broker API reports a follower's LEO (DescribeLogDirs
// gives sizes only, ListOffsets is answered by the leader).
type rbTail struct {
	dir string
	seg string
	f   *os.File
	pos int64
	leo int64
	hdr [record.HeaderSize]byte
}

func (r *rbTail) close() {
	if r.f != nil {
		r.f.Close()
		r.f = nil
	}
}

func (r *rbTail) read() (int64, error) {
	ents, err := os.ReadDir(r.dir)
	if err != nil {
		return -1, err
	}
	newest := ""
	for _, e := range ents {
		if n := e.Name(); strings.HasSuffix(n, ".log") && n > newest {
			newest = n
		}
	}
	if newest == "" {
		return -1, fmt.Errorf("%s: no segment", r.dir)
	}
	if newest != r.seg {
		r.close()
		f, err := os.Open(filepath.Join(r.dir, newest))
		if err != nil {
			return -1, err
		}
		base, err := strconv.ParseInt(strings.TrimSuffix(newest, ".log"), 10, 64)
		if err != nil {
			f.Close()
			return -1, fmt.Errorf("segment name %s: %w", newest, err)
		}
		r.f, r.seg, r.pos, r.leo = f, newest, 0, base
	}
	st, err := r.f.Stat()
	if err != nil {
		return -1, err
	}
	if st.Size() < r.pos {
		return -1, fmt.Errorf("%s shrank below %d (truncated)", r.seg, r.pos)
	}
	for r.pos+record.HeaderSize <= st.Size() {
		if _, err := r.f.ReadAt(r.hdr[:], r.pos); err != nil && !errors.Is(err, io.EOF) {
			return -1, err
		}
		h, err := record.ParseHeader(r.hdr[:])
		if err != nil || r.pos+int64(h.Size()) > st.Size() {
			break // a batch still being written
		}
		r.pos += int64(h.Size())
		r.leo = h.NextOffset()
	}
	return r.leo, nil
}

// rbReplicas is where each partition's replicas live: leader first.
type rbReplicas struct {
	partition int32
	leader    *rbTail
	followers []*rbTail
	ids       []int32 // leader, followers
}

func rbLayout(t *testing.T, c *cluster, adm *kadm.Client, topic string) []*rbReplicas {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	md, err := adm.Metadata(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	dirOf := func(id, p int32) string {
		for _, b := range c.brokers {
			if b.id == id {
				return filepath.Join(b.dataDir, fmt.Sprintf("%s-%d", topic, p))
			}
		}
		t.Fatalf("no broker %d", id)
		return ""
	}
	var out []*rbReplicas
	for p, pd := range md.Topics[topic].Partitions {
		r := &rbReplicas{partition: p, leader: &rbTail{dir: dirOf(pd.Leader, p)}, ids: []int32{pd.Leader}}
		for _, id := range pd.Replicas {
			if id != pd.Leader {
				r.followers = append(r.followers, &rbTail{dir: dirOf(id, p)})
				r.ids = append(r.ids, id)
			}
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b *rbReplicas) int { return cmp.Compare(a.partition, b.partition) })
	return out
}

// rbSample is one follower's position against its leader's at one instant
// (the leader's file is read first, then the followers').
type rbSample struct {
	at        time.Time
	partition int32
	leaderLEO int64
	followLEO int64
}

// rbLagWatch samples every follower of every partition every 25 ms.
type rbLagWatch struct {
	parts   []*rbReplicas
	mu      sync.Mutex
	samples []rbSample
	errs    int
	stop    chan struct{}
	wg      sync.WaitGroup
}

func (w *rbLagWatch) once() (behind int64) {
	for _, p := range w.parts {
		now := time.Now()
		lleo, err := p.leader.read()
		if err != nil {
			w.mu.Lock()
			w.errs++
			w.mu.Unlock()
			continue
		}
		for _, f := range p.followers {
			fleo, err := f.read()
			w.mu.Lock()
			if err != nil {
				w.errs++
			} else {
				w.samples = append(w.samples, rbSample{at: now, partition: p.partition, leaderLEO: lleo, followLEO: fleo})
				behind += max(0, lleo-fleo)
			}
			w.mu.Unlock()
		}
	}
	return behind
}

func (w *rbLagWatch) start() {
	w.stop = make(chan struct{})
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		for {
			w.once()
			select {
			case <-w.stop:
				return
			case <-time.After(25 * time.Millisecond):
			}
		}
	}()
}

// finish stops sampling and waits until every follower holds its leader's
// log end, returning how long that took.
func (w *rbLagWatch) finish(t *testing.T) time.Duration {
	t.Helper()
	close(w.stop)
	w.wg.Wait()
	start := time.Now()
	for w.once() > 0 {
		if time.Since(start) > time.Minute {
			t.Fatalf("followers still behind a minute after the load stopped")
		}
		time.Sleep(5 * time.Millisecond)
	}
	for _, p := range w.parts {
		p.leader.close()
		for _, f := range p.followers {
			f.close()
		}
	}
	return time.Since(start)
}

// rbAcks records, per partition, when each offset was acknowledged (acks=1:
// right after the leader appended it).
type rbAcks struct {
	mu  sync.Mutex
	per map[int32][]rbAck
}

type rbAck struct {
	offset int64
	at     time.Time
}

func (a *rbAcks) add(p int32, off int64, at time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.per[p] = append(a.per[p], rbAck{off, at})
}

// lagTime is how long before the sample the leader had acknowledged the
// first record the follower lacked: 0 when it lacked none, or none was
// acknowledged yet.
func (a *rbAcks) lagTime(s rbSample) (time.Duration, bool) {
	if s.followLEO >= s.leaderLEO {
		return 0, true
	}
	acks := a.per[s.partition]
	i := sort.Search(len(acks), func(i int) bool { return acks[i].offset >= s.followLEO })
	if i == len(acks) {
		return 0, false
	}
	return max(0, s.at.Sub(acks[i].at)), true
}

func rbIntQuantiles(v []int64) string {
	if len(v) == 0 {
		return "-"
	}
	s := slices.Clone(v)
	slices.Sort(s)
	at := func(q float64) int64 { return s[min(len(s)-1, int(q*float64(len(s))))] }
	return fmt.Sprintf("p50 %d  p99 %d  max %d", at(0.5), at(0.99), s[len(s)-1])
}

// rbLagReport summarizes the samples in records and, with acks, in time.
func rbLagReport(w *rbLagWatch, acks *rbAcks) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var recs []int64
	var ms []time.Duration
	caughtUp := 0
	for _, s := range w.samples {
		recs = append(recs, max(0, s.leaderLEO-s.followLEO))
		if s.followLEO >= s.leaderLEO {
			caughtUp++
		}
		if acks != nil {
			if d, ok := acks.lagTime(s); ok {
				ms = append(ms, d)
			}
		}
	}
	out := fmt.Sprintf("follower lag in records: %s; %d samples (%.0f%% at the leader's LEO), %d read errors",
		rbIntQuantiles(recs), len(w.samples), 100*float64(caughtUp)/float64(max(1, len(w.samples))), w.errs)
	if acks != nil {
		slices.Sort(ms)
		if len(ms) > 0 {
			q := func(x float64) string {
				return fmt.Sprintf("%.1fms", float64(ms[min(len(ms)-1, int(x*float64(len(ms))))])/1e6)
			}
			out += fmt.Sprintf("\n      follower lag in time (since the leader acknowledged the first record the follower lacks): p50 %s  p99 %s  max %s", q(0.5), q(0.99), q(1))
		}
	}
	return out
}

// rbCreate creates a topic and waits until every replica is in the ISR.
func rbCreate(t *testing.T, c *cluster, adm *kadm.Client, topic string, partitions int32, rf int16, configs map[string]*string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if r, err := adm.CreateTopic(ctx, partitions, rf, configs, topic); err != nil || r.Err != nil {
		t.Fatalf("create %s: %v %v", topic, err, r.Err)
	}
	c.eventually(topic+": every replica in the ISR", 60*time.Second, func() error {
		md, err := adm.Metadata(ctx, topic)
		if err != nil {
			return err
		}
		if n := len(md.Topics[topic].Partitions); n != int(partitions) {
			return fmt.Errorf("%d partitions", n)
		}
		for p, pd := range md.Topics[topic].Partitions {
			if pd.Leader < 0 || len(pd.ISR) != int(rf) {
				return fmt.Errorf("partition %d: leader %d isr %v", p, pd.Leader, pd.ISR)
			}
		}
		return nil
	})
}

// rbStored adds up the topic's high watermarks (ListOffsets latest).
func rbStored(t *testing.T, adm *kadm.Client, topic string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	offs, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("list end offsets of %s: %v", topic, err)
	}
	var sum int64
	offs.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			t.Fatalf("list end offsets of %s/%d: %v", topic, o.Partition, o.Err)
		}
		sum += o.Offset
	})
	return sum
}

// rbTools builds the shared kit's physbench and kfake-server, or says why not.
func rbTools(t *testing.T) (physbench, kfake string, err error) {
	t.Helper()
	kit := cmp.Or(os.Getenv("GREGOR_BENCH_TOOLS"), "/work/shared/tools/bench")
	if _, err := os.Stat(filepath.Join(kit, "physbench")); err != nil {
		return "", "", fmt.Errorf("bench kit not found: %w", err)
	}
	bin := t.TempDir()
	for _, tool := range []string{"physbench", "kfake-server"} {
		cmd := exec.Command("go", "build", "-o", filepath.Join(bin, tool), "./"+tool)
		cmd.Dir = kit
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", "", fmt.Errorf("build %s: %v\n%s", tool, err, out)
		}
	}
	return filepath.Join(bin, "physbench"), filepath.Join(bin, "kfake-server"), nil
}

// rbPhysical runs physbench's disk (1 GiB, one fdatasync at the end, on
// the disk of t.TempDir, where the brokers' logs are) and loopback tests.
func rbPhysical(t *testing.T, physbench string) string {
	t.Helper()
	dir := t.TempDir()
	var lines []string
	for _, args := range [][]string{
		{"disk", "-dir", dir, "-mib", "1024", "-sync", "none", "-max", "45s"}, // warm-up, not reported
		{"disk", "-dir", dir, "-mib", "1024", "-sync", "end", "-max", "45s"},
		{"tcp", "-addr", fmt.Sprintf("127.0.0.1:%d", freePort(t)), "-dur", "3s"},
	} {
		out, err := exec.Command(physbench, args...).CombinedOutput()
		if err != nil {
			t.Logf("physbench %v: %v\n%s", args, err, out)
			continue
		}
		if !slices.Contains(args, "none") {
			lines = append(lines, strings.TrimSpace(string(out)))
		}
	}
	return strings.Join(lines, "\n  ")
}

// rbCeiling runs the saturating produce phase against kfake -blackhole: a
// broker that acknowledges without storing, i.e. what the client and the
// CPUs allow on this machine.
func rbCeiling(t *testing.T, kfake string, dur time.Duration) []string {
	t.Helper()
	port := freePort(t)
	cmd := exec.Command(kfake, "-port", strconv.Itoa(port), "-blackhole", "-default-partitions", strconv.Itoa(rbPartitions), "-max-life", "10m")
	if err := cmd.Start(); err != nil {
		t.Logf("kfake-server: %v", err)
		return nil
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	seed := fmt.Sprintf("127.0.0.1:%d", port)
	cl, err := kgo.NewClient(kgo.SeedBrokers(seed))
	if err != nil {
		t.Fatal(err)
	}
	adm := kadm.NewClient(cl)
	defer adm.Close()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err := adm.CreateTopic(ctx, rbPartitions, 1, nil, "ceiling")
		cancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Logf("kfake-server: create topic: %v", err)
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	var out []string
	for _, acksAll := range []bool{false, true} {
		r := rbProduce(t, rbLoad{seeds: []string{seed}, topic: "ceiling", acksAll: acksAll, linger: 5 * time.Millisecond, dur: dur})
		out = append(out, fmt.Sprintf("kfake -blackhole        %-8s  %7.1f MB/s  %7.0f rec/s  %s", rbAcksName(acksAll), r.mbs(), float64(r.records)/r.elapsed.Seconds(), rbQuantiles(r.lat)))
	}
	return out
}

func rbAcksName(all bool) string {
	if all {
		return "acks=all"
	}
	return "acks=1"
}

// TestReplicationBenchProduce: 3 controllers and 3 brokers. For RF=1 and
// RF=3 (min.insync.replicas=2) topics of 6 partitions: a saturating phase
// (as fast as the client can, linger 5 ms) and a fixed-rate phase (linger 0)
// with acks=1 and with acks=all, each on a fresh topic. On RF=3 the
// followers' log end offsets are sampled from their files against the
// leader's during every phase; afterwards, the time until every follower
// has caught up.
func TestReplicationBenchProduce(t *testing.T) {
	skipUnlessBench(t)
	benchMachine(t)
	dur := time.Duration(rbEnvInt(t, "GREGOR_BENCH_SECONDS", 10)) * time.Second
	rate := rbEnvInt(t, "GREGOR_BENCH_RATE", 2000)

	var ceiling []string
	physical := "skipped"
	if pb, kf, err := rbTools(t); err != nil {
		t.Logf("no same-run ceilings: %v", err)
	} else {
		physical = rbPhysical(t, pb)
		ceiling = rbCeiling(t, kf, dur)
	}

	c := startCluster(t, 3, 3, rbOverrides()...)
	adm := kadm.NewClient(c.client())
	var rows, lags []string
	for _, rf := range []int16{1, 3} {
		for _, fixed := range []bool{false, true} {
			for _, acksAll := range []bool{false, true} {
				mode, r, linger := "max", 0, 5*time.Millisecond
				if fixed {
					mode, r, linger = fmt.Sprintf("%d/s", rate), rate, 0
				}
				topic := fmt.Sprintf("rf%d-%s-%s", rf, strings.TrimSuffix(mode, "/s"), strings.ReplaceAll(rbAcksName(acksAll), "=", ""))
				var configs map[string]*string
				if rf == 3 {
					configs = map[string]*string{"min.insync.replicas": kadm.StringPtr("2")}
				}
				rbCreate(t, c, adm, topic, rbPartitions, rf, configs)
				load := rbLoad{seeds: c.bootstrap(), topic: topic, acksAll: acksAll, rate: r, linger: linger, dur: dur}
				var w *rbLagWatch
				var acks *rbAcks
				if rf == 3 {
					w = &rbLagWatch{parts: rbLayout(t, c, adm, topic)}
					if !acksAll {
						acks = &rbAcks{per: map[int32][]rbAck{}}
						load.onAck = acks.add
					}
					w.start()
				}
				res := rbProduce(t, load)
				row := fmt.Sprintf("RF=%d  %-7s  %-8s  %7.1f MB/s  %7.0f rec/s  %s  failed %d",
					rf, mode, rbAcksName(acksAll), res.mbs(), float64(res.records)/res.elapsed.Seconds(), rbQuantiles(res.lat), res.failed)
				if res.firstErr != nil {
					row += fmt.Sprintf(" (first: %v)", res.firstErr)
				}
				rows = append(rows, row)
				t.Log(row)
				if w != nil {
					catchUp := w.finish(t)
					lag := fmt.Sprintf("RF=3  %-7s  %-8s  %s\n      every follower at its leader's LEO %v after the last acknowledgement",
						mode, rbAcksName(acksAll), rbLagReport(w, acks), catchUp.Round(time.Millisecond))
					lags = append(lags, lag)
					t.Log(lag)
				}
				// The high watermark follows the followers' next fetch.
				stored := rbStored(t, adm, topic)
				for deadline := time.Now().Add(5 * time.Second); stored != int64(res.records) && time.Now().Before(deadline); {
					time.Sleep(50 * time.Millisecond)
					stored = rbStored(t, adm, topic)
				}
				if stored != int64(res.records) {
					t.Logf("%s: %d records acknowledged, the partitions' high watermarks add up to %d", topic, res.records, stored)
				}
			}
		}
	}
	var cpu []string
	for _, b := range c.brokers {
		cpu = append(cpu, fmt.Sprintf("broker %d %.1fs", b.id, float64(cpuTicks(b.cmd.Process.Pid))/100))
	}
	for _, n := range c.controllers {
		cpu = append(cpu, fmt.Sprintf("controller %d %.1fs", n.id, float64(cpuTicks(n.cmd.Process.Pid))/100))
	}
	t.Logf("produce, 3 controllers + 3 brokers on loopback, %d partitions, %d B random values, no compression, %v per phase; "+
		"acks=1: not idempotent, acks=all: idempotent, both 5 requests in flight per broker; RF=3 with min.insync.replicas=2; "+
		"latency from Produce call (blocks while the client buffer is full) to acknowledgement\n"+
		"physical (same run): %s\nceiling (same run, same producer, max rate, linger 5ms):\n  %s\n"+
		"gregor:\n  %s\nreplication lag (follower LEO read from its segment files every 25 ms vs the leader's):\n  %s\nCPU time used: %s",
		rbPartitions, rbRecordSize, dur, physical, strings.Join(ceiling, "\n  "), strings.Join(rows, "\n  "), strings.Join(lags, "\n  "), strings.Join(cpu, ", "))
}

// TestReplicationBenchFailover: 3 controllers and 3 brokers, an RF=3 topic
// of 3 partitions (min.insync.replicas=2), an idempotent acks=all producer
// at a steady 1,000 records a second (spread over the partitions). Five
// times: kill -9 the leader of one partition; time until a surviving
// broker's Metadata names a new leader, and until the first record
// produced after the kill to that partition is acknowledged (necessarily by
// the new leader); then restart the victim and wait for the full ISR.
func TestReplicationBenchFailover(t *testing.T) {
	skipUnlessBench(t)
	benchMachine(t)
	const topic, partitions, rounds, rate = "failover", 3, 5, 1000
	overrides := rbOverrides()
	c := startCluster(t, 3, 3, overrides...)
	adm := kadm.NewClient(c.client())
	rbCreate(t, c, adm, topic, partitions, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")})

	// Metadata refreshes at most every 100 ms, as the Java client's
	// retry.backoff.ms; franz-go's own default (5 s) would dominate.
	prod := rbProducer(t, c.bootstrap(), true, 0, kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.MetadataMinAge(100*time.Millisecond))
	defer prod.Close()
	type watchState struct {
		target            int32
		killAt            time.Time
		lastBefore, first time.Time
		failed            int
		acked             int
		lastAck           [partitions]time.Time
	}
	var mu sync.Mutex
	var st watchState
	st.target = -1
	value := make([]byte, 100)
	rand.Read(value)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		start := time.Now()
		for sent := 0; ; {
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
			due := int(rate * time.Since(start).Seconds())
			for ; sent < due; sent++ {
				p := int32(sent % partitions)
				at := time.Now()
				prod.Produce(context.Background(), &kgo.Record{Partition: p, Value: value}, func(r *kgo.Record, err error) {
					now := time.Now()
					mu.Lock()
					defer mu.Unlock()
					if err != nil {
						st.failed++
						return
					}
					st.acked++
					st.lastAck[p] = now
					if p == st.target && !st.killAt.IsZero() && !at.Before(st.killAt) && st.first.IsZero() {
						st.first = now
					}
				})
			}
		}
	}()
	defer func() {
		close(stop)
		wg.Wait()
	}()

	leaderVia := func(addr string, p int32) (int32, error) {
		l, err := partitionLeaders(addr, topic)
		if err != nil {
			return -1, err
		}
		return l[p], nil
	}
	var toMetadata, toAck, gap spread
	var rows []string
	for round := range rounds {
		p := int32(round % partitions)
		var leader int32
		c.eventually("a leader and acknowledgements flowing", 30*time.Second, func() (err error) {
			mu.Lock()
			before := st.acked
			mu.Unlock()
			time.Sleep(50 * time.Millisecond)
			mu.Lock()
			after := st.acked
			mu.Unlock()
			if after <= before {
				return fmt.Errorf("no acknowledgements")
			}
			leader, err = leaderVia(c.bootstrap()[0], p)
			if err == nil && leader < 0 {
				err = fmt.Errorf("partition %d offline", p)
			}
			return err
		})
		var victim *node
		var other string
		for _, b := range c.brokers {
			if b.id == leader {
				victim = b
			} else if other == "" {
				other = b.addr()
			}
		}
		mu.Lock()
		st.target, st.first = p, time.Time{}
		st.killAt = time.Now()
		st.lastBefore = st.lastAck[p]
		killAt := st.killAt
		mu.Unlock()
		victim.kill9()

		var metaAt time.Time
		deadline := time.Now().Add(60 * time.Second)
		for metaAt.IsZero() || func() bool { mu.Lock(); defer mu.Unlock(); return st.first.IsZero() }() {
			if metaAt.IsZero() {
				if l, err := leaderVia(other, p); err == nil && l >= 0 && l != leader {
					metaAt = time.Now()
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("round %d: no new leader serving partition %d within 60s\n%s", round+1, p, c.logs())
			}
			time.Sleep(5 * time.Millisecond)
		}
		mu.Lock()
		first, last := st.first, st.lastBefore
		st.killAt = time.Time{}
		mu.Unlock()
		toMetadata = append(toMetadata, metaAt.Sub(killAt))
		toAck = append(toAck, first.Sub(killAt))
		gap = append(gap, first.Sub(last))
		newLeader, _ := leaderVia(other, p)
		rows = append(rows, fmt.Sprintf("%5d  %9d  %6d  %10d  %21v  %23v  %18v", round+1, p, leader, newLeader,
			metaAt.Sub(killAt).Round(time.Millisecond), first.Sub(killAt).Round(time.Millisecond), first.Sub(last).Round(time.Millisecond)))
		t.Log(rows[len(rows)-1])

		victim.start()
		c.eventually("every replica back in the ISR", 60*time.Second, func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			md, err := adm.Metadata(ctx, topic)
			if err != nil {
				return err
			}
			for q, pd := range md.Topics[topic].Partitions {
				if len(pd.ISR) != 3 || pd.Leader < 0 {
					return fmt.Errorf("partition %d: leader %d isr %v", q, pd.Leader, pd.ISR)
				}
			}
			return nil
		})
	}
	mu.Lock()
	failed := st.failed
	mu.Unlock()
	t.Logf("partition leader failover, 3 controllers + 3 brokers, RF=3, min.insync.replicas=2, idempotent acks=all producer at %d records/s over %d partitions, "+
		"franz-go metadata min age 100ms; overrides %v (startCluster: broker.heartbeat.interval.ms=200, broker.session.timeout.ms=2000)\n"+
		"round  partition  killed  new leader  new leader in Metadata  first post-kill record acked  ack gap on partition\n%s\n"+
		"kill -> new leader in Metadata:        %v\nkill -> post-kill produce acknowledged: %v\nlast ack before -> first ack after:     %v\nrecords failed: %d",
		rate, partitions, overrides, strings.Join(rows, "\n"), toMetadata, toAck, gap, failed)
}
