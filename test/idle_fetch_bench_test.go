//go:build e2e

package test

// Idle long-polling consumers (the fetch purgatory keyed by partition,
// issue "done when"): a fetch waiting on one partition must not be woken by
// appends to others, so 1,000 idle consumers should cost the broker next to
// no CPU while another partition is busy. One broker, a topic "busy" of 1
// partition and a topic "idle" of GREGOR_BENCH_IDLE partitions (one topic
// rather than 1,000: the purgatory is keyed by topic and partition alike,
// and one CreateTopics keeps the set-up short).
//
//   - rest: 3 s with no load;
//   - phase A: a raw producer (one connection, acks=1, batches of 5 records
//     of 100 B, at most 16 Produce requests in flight) appends to busy at a
//     steady GREGOR_BENCH_RATE records/s; nobody fetches;
//   - GREGOR_BENCH_IDLE consumers connect, one connection each, and
//     long-poll their own idle partition (Fetch v11, MinBytes 1, a max wait
//     no fetch reaches before B ends, re-issued when answered); once the
//     Fetch purgatory holds them all: 3 s settling, a pause until 15 s after
//     they connected, 3 s of rest with them parked;
//   - phase B: A's load again, the idle fetches parked. An answer before
//     the max wait means a fetch was woken and found data or an error: none
//     should come.
//
// Reported per phase: the broker's CPU time (utime+stime of
// /proc/<pid>/stat) per second and per 1,000 records, B/A of both, the
// produce latency, the idle fetches' answers, and the Fetch purgatory size
// and goroutines from /metrics (binaries without the purgatory metric show
// "-"). Nothing is asserted on time. queued.max.requests stays at its
// default (500), below the parked fetches: a dispatched request gives its
// slot back (network.Request.Dispatched). The comparison below was taken
// before that change, with the setting raised to idle+500 (then the parked
// fetches held every slot and the broker stopped reading other requests);
// after it, at the default, on the same machine (826b50b):
//
//	                     CPU s/s: rest  A busy  1000 parked, rest  B busy+parked  B/A    B produce p50/p99   idle answers  Fetch purgatory
//	826b50b                      0.013  0.191   0.027              0.214          x1.12  2.1ms/6.1ms         0             1000
//
// Skipped unless GREGOR_BENCH=1:
//
//	GREGOR_BENCH=1 go test -tags e2e -run TestIdleFetchBench -v -timeout 10m ./test/
//
// GREGOR_BENCH_COMPARE_BIN names a second gregor binary (another commit's)
// measured after this one in the same run, with the same phases;
// GREGOR_BENCH_BIN (TestMain) replaces this tree's binary. GREGOR_BENCH_SECONDS
// (default 10) is each load phase's length, GREGOR_BENCH_RATE (default 5000)
// the records per second, GREGOR_BENCH_IDLE (default 1000) the idle
// fetches, GREGOR_BENCH_OVERRIDES ("key=value,...") adds broker settings.
//
// Measured 2026-12-01 on 2 shared cores (load average 4-7 from other
// engineers' tests), this tree (af4907a, purgatory keyed by partition)
// against its parent 91bbeba (one channel closed on every append, waking
// every waiting fetch), built with go build -o /tmp/gregor-old in a
// worktree of 91bbeba:
//
//	GREGOR_BENCH=1 GREGOR_BENCH_COMPARE_BIN=/tmp/gregor-old go test -tags e2e -run TestIdleFetchBench -v -timeout 10m ./test/
//
//	                     CPU s/s: rest  A busy  1000 parked, rest  B busy+parked  B/A   B produce p50/p99   idle answers  Fetch purgatory
//	af4907a                      0.010  0.176   0.020              0.183          x1.04  2.0ms/12.9ms        0             1000
//	91bbeba                      0.020  0.199   0.023              0.692          x3.48  659ms/1310ms        0             -
//	reversed order (91bbeba first, GREGOR_BENCH_BIN and _COMPARE_BIN swapped):
//	91bbeba                      0.017  0.191   0.017              1.166          x6.10  644ms/1417ms        0             -
//	af4907a                      0.013  0.206   0.037              0.264          x1.28  2.2ms/18.6ms        0             1000
//
// No idle fetch was answered before its max wait with either binary: the
// old one woke them on every append, found nothing and parked them again,
// which is what its B costs (and, bounded by 16 requests in flight, the
// producer's latency). With the purgatory an append to busy checks only
// busy-0's waiters; what B adds over A is within this machine's noise.

import (
	"bufio"
	"cmp"
	"crypto/rand"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	ibRecordsPerBatch = 5
	ibValueSize       = 100
	ibInflight        = 16
	// ibRest is the length of the phases without load; ibSettle the time
	// from connecting the idle fetchers until phase B's rest phase. The
	// broker's CPU stays above its resting level for some seconds after
	// 1,000 connections arrive and park their fetches (in-process
	// measurements, not a wake-up: no fetch is answered); the settling
	// phase shows that transient, which B should not include.
	ibRest   = 3 * time.Second
	ibSettle = 15 * time.Second
)

// ibPhase is one phase's figures.
type ibPhase struct {
	name                       string
	appends, records, failed   int
	elapsed                    time.Duration
	lat                        []time.Duration
	cpuTicks                   int64 // broker utime+stime, 1/100 s
	early, withData, atMaxWait int64 // idle fetch answers during the phase
	fetchErrors                int64
	gcs                        float64 // garbage collections during the phase
	after                      ibMetrics
}

func (p ibPhase) cpuPerSecond() float64 { return float64(p.cpuTicks) / 100 / p.elapsed.Seconds() }

func (p ibPhase) cpuMsPer1k() float64 {
	if p.records == 0 {
		return 0
	}
	return float64(p.cpuTicks) * 10 / float64(p.records) * 1000
}

// ibProduce appends batch to partition 0 of topic at appendsPerSecond for
// dur over one connection, at most ibInflight requests in flight, and
// waits for every answer. A request's latency runs from when it was due
// to its answer, so time spent waiting for an in-flight slot counts.
func ibProduce(t *testing.T, b *broker, topic string, batch []byte, appendsPerSecond float64, dur time.Duration) ibPhase {
	t.Helper()
	rc := dialRaw(t, b)
	req := produceRequest(topic, 0, 1, batch)
	type due struct {
		corr int32
		at   time.Time
	}
	sent := make(chan due, ibInflight-1) // plus the one the reader waits on
	failed := make(chan struct{})
	var res ibPhase
	var readErr error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for d := range sent {
			frame, err := rc.readFrame(30 * time.Second)
			if err == nil {
				resp := kmsg.NewPtrProduceResponse()
				resp.SetVersion(req.Version)
				if err = decodeResponse(frame, d.corr, resp); err == nil && (len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1) {
					err = fmt.Errorf("produce answer of %d topics", len(resp.Topics))
				}
				if err == nil {
					res.lat = append(res.lat, time.Since(d.at))
					if resp.Topics[0].Partitions[0].ErrorCode != 0 {
						res.failed++
					} else {
						res.appends++
						res.records += ibRecordsPerBatch
					}
					continue
				}
			}
			readErr = err
			close(failed)
			return
		}
	}()
	start := time.Now()
	var writeErr error
	n := 0
send:
	for now := start; now.Sub(start) < dur; now = time.Now() {
		for target := int(appendsPerSecond * now.Sub(start).Seconds()); n < target; n++ {
			at := start.Add(time.Duration(float64(n) / appendsPerSecond * float64(time.Second)))
			select {
			case sent <- due{corr: rc.corr + 1, at: at}:
			case <-failed:
				break send
			}
			if writeErr = rc.write(rc.frame(req)); writeErr != nil {
				break send
			}
		}
		time.Sleep(time.Millisecond)
	}
	close(sent)
	wg.Wait()
	res.elapsed = time.Since(start)
	if readErr != nil || writeErr != nil {
		t.Fatalf("produce to %s: read %v, write %v, %d answered\n%s", topic, readErr, writeErr, res.appends, b.log())
	}
	return res
}

// ibIdleFetchers are the idle consumers: one connection and one
// outstanding long poll each.
type ibIdleFetchers struct {
	maxWait                    time.Duration
	started                    time.Time
	issued                     atomic.Int64
	early, withData, atMaxWait atomic.Int64
	errors                     atomic.Int64
	stopping                   atomic.Bool
	conns                      []*rawConn
	wg                         sync.WaitGroup
}

func ibStartIdle(t *testing.T, b *broker, topic string, n int, maxWait time.Duration) *ibIdleFetchers {
	t.Helper()
	f := &ibIdleFetchers{maxWait: maxWait, started: time.Now()}
	for p := range n {
		rc := dialRaw(t, b)
		f.conns = append(f.conns, rc)
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			f.poll(rc, topic, int32(p))
		}()
	}
	return f
}

// poll long-polls one partition at offset 0 (empty) until stop.
func (f *ibIdleFetchers) poll(rc *rawConn, topic string, partition int32) {
	req := kmsg.NewPtrFetchRequest()
	req.Version = 11
	req.ReplicaID = -1
	req.MaxWaitMillis = int32(f.maxWait / time.Millisecond)
	req.MinBytes = 1
	req.MaxBytes = 1 << 20
	req.SessionEpoch = -1
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = topic
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.Partition = partition
	fp.PartitionMaxBytes = 1 << 20
	fp.CurrentLeaderEpoch = -1
	fp.LogStartOffset = -1
	ft.Partitions = append(ft.Partitions, fp)
	req.Topics = append(req.Topics, ft)
	for !f.stopping.Load() {
		at := time.Now()
		if err := rc.write(rc.frame(req)); err != nil {
			f.fail()
			return
		}
		f.issued.Add(1)
		frame, err := rc.readFrame(f.maxWait + 30*time.Second)
		if err != nil {
			f.fail()
			return
		}
		took := time.Since(at)
		resp := kmsg.NewPtrFetchResponse()
		resp.SetVersion(req.Version)
		if err := decodeResponse(frame, rc.corr, resp); err != nil || resp.ErrorCode != 0 ||
			len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
			f.errors.Add(1)
			continue
		}
		switch {
		case len(resp.Topics[0].Partitions[0].RecordBatches) > 0:
			f.withData.Add(1)
		case took < f.maxWait-time.Second:
			f.early.Add(1)
		default:
			f.atMaxWait.Add(1)
		}
	}
}

// fail counts a connection failure unless the fetchers are being stopped.
func (f *ibIdleFetchers) fail() {
	if !f.stopping.Load() {
		f.errors.Add(1)
	}
}

func (f *ibIdleFetchers) stop() {
	f.stopping.Store(true)
	for _, rc := range f.conns {
		rc.c.Close()
	}
	f.wg.Wait()
}

// ibMetrics are the figures read from the broker's /metrics; -1 for one
// the binary does not report.
type ibMetrics struct {
	purgatory  float64 // kafka_server_delayedoperationpurgatory_purgatorysize{delayedOperation="Fetch"}
	goroutines float64 // go_goroutines
	gcs        float64 // go_gc_duration_seconds_count
}

// ibScrape reads /metrics. A failed scrape is an error: the handler
// answers 500 when a collector fails (the group lag collector asks the
// broker's own Kafka listener, which a stalled broker does not read).
func ibScrape(httpAddr string) (ibMetrics, error) {
	m := ibMetrics{-1, -1, -1}
	cl := http.Client{Timeout: 10 * time.Second}
	resp, err := cl.Get("http://" + httpAddr + "/metrics")
	if err != nil {
		return m, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return m, fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		var dst *float64
		switch {
		case strings.HasPrefix(line, `kafka_server_delayedoperationpurgatory_purgatorysize{delayedOperation="Fetch"} `):
			dst = &m.purgatory
		case strings.HasPrefix(line, "go_goroutines "):
			dst = &m.goroutines
		case strings.HasPrefix(line, "go_gc_duration_seconds_count "):
			dst = &m.gcs
		default:
			continue
		}
		f := strings.Fields(line)
		if v, err := strconv.ParseFloat(f[len(f)-1], 64); err == nil {
			*dst = v
		}
	}
	return m, sc.Err()
}

// ibRun's phases, in the order they ran.
type ibRunResult struct {
	rest, a, settling, parked, b ibPhase
}

// ibRun measures the phases on a fresh broker of binary bin.
func ibRun(t *testing.T, bin string, idle, rate int, dur time.Duration) ibRunResult {
	t.Helper()
	httpAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	args := []string{"gregor.http.listen=" + httpAddr}
	b := &broker{t: t, bin: bin, dataDir: t.TempDir(), port: freePort(t), args: append(args, rbOverrides()...)}
	b.start()
	// Killed, not stopped: a clean stop would wait out the parked fetches'
	// max wait (network.Server.Shutdown lets requests in flight finish
	// before the fetch purgatory is closed).
	defer b.kill9()
	cl := newKgo(t, b)
	createTopic(t, cl, "busy", 1, nil)
	createTopic(t, cl, "idle", int32(idle), nil)
	cl.Close()
	pid := b.cmd.Process.Pid

	values := make([]string, ibRecordsPerBatch)
	for i := range values {
		v := make([]byte, ibValueSize)
		rand.Read(v)
		values[i] = string(v)
	}
	batch := buildBatch(t, batchOpts{values: values})
	appendsPerSecond := float64(rate) / ibRecordsPerBatch
	ibProduce(t, b, "busy", batch, appendsPerSecond, 2*time.Second) // warm-up, not reported

	scrape := func() ibMetrics {
		m, err := ibScrape(httpAddr)
		if err != nil {
			t.Fatalf("scrape %s/metrics: %v", httpAddr, err)
		}
		return m
	}
	// measure runs one phase: the producer's load for dur, or, if load is
	// false, nothing for ibRest.
	measure := func(name string, f *ibIdleFetchers, load bool) ibPhase {
		var early, withData, atMaxWait, errs int64
		if f != nil {
			early, withData, atMaxWait, errs = f.early.Load(), f.withData.Load(), f.atMaxWait.Load(), f.errors.Load()
		}
		gcs := scrape().gcs
		before := cpuTicks(pid)
		var p ibPhase
		if load {
			p = ibProduce(t, b, "busy", batch, appendsPerSecond, dur)
		} else {
			start := time.Now()
			time.Sleep(ibRest)
			p.elapsed = time.Since(start)
		}
		p.cpuTicks = cpuTicks(pid) - before
		p.name = name
		if f != nil {
			p.early, p.withData = f.early.Load()-early, f.withData.Load()-withData
			p.atMaxWait, p.fetchErrors = f.atMaxWait.Load()-atMaxWait, f.errors.Load()-errs
		}
		p.after = scrape()
		p.gcs = p.after.gcs - gcs
		return p
	}
	var r ibRunResult
	r.rest = measure("rest", nil, false)
	r.a = measure("A: busy", nil, true)

	// Long enough that no idle fetch expires before phase B ends.
	maxWait := dur + ibSettle + ibRest + 30*time.Second
	fetchers := ibStartIdle(t, b, "idle", idle, maxWait)
	defer fetchers.stop()
	deadline := time.Now().Add(30 * time.Second)
	for fetchers.issued.Load() < int64(idle) {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d idle fetches sent after 30s", fetchers.issued.Load(), idle)
		}
		time.Sleep(10 * time.Millisecond)
	}
	for {
		purgatory := scrape().purgatory
		if purgatory < 0 {
			time.Sleep(2 * time.Second) // no metric: give the broker time to park them
			break
		}
		if purgatory >= float64(idle) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Fetch purgatory holds %.0f of %d idle fetches after 30s", purgatory, idle)
		}
		time.Sleep(100 * time.Millisecond)
	}
	r.settling = measure(fmt.Sprintf("%d parked, settling", idle), fetchers, false)
	for time.Since(fetchers.started) < ibSettle {
		time.Sleep(100 * time.Millisecond)
	}
	r.parked = measure(fmt.Sprintf("%d parked, rest", idle), fetchers, false)
	r.b = measure(fmt.Sprintf("B: busy + %d parked", idle), fetchers, true)
	return r
}

func TestIdleFetchBench(t *testing.T) {
	skipUnlessBench(t)
	benchMachine(t)
	dur := time.Duration(rbEnvInt(t, "GREGOR_BENCH_SECONDS", 10)) * time.Second
	rate := rbEnvInt(t, "GREGOR_BENCH_RATE", 5000)
	idle := rbEnvInt(t, "GREGOR_BENCH_IDLE", 1000)
	bins := []string{gregorBin}
	if other := os.Getenv("GREGOR_BENCH_COMPARE_BIN"); other != "" {
		if _, err := os.Stat(other); err != nil {
			t.Fatalf("GREGOR_BENCH_COMPARE_BIN: %v", err)
		}
		bins = append(bins, other)
	}
	var rows []string
	for _, bin := range bins {
		r := ibRun(t, bin, idle, rate, dur)
		rows = append(rows, bin)
		for _, p := range []ibPhase{r.rest, r.a, r.settling, r.parked, r.b} {
			perRecord := "-"
			if p.records > 0 {
				perRecord = fmt.Sprintf("%.2f", p.cpuMsPer1k())
			}
			row := fmt.Sprintf("  %-27s %6.0f %7.0f  %7.3f %9s  %4.0f   %d/%d/%d/%d  %9s %10s   %s",
				p.name, float64(p.appends)/p.elapsed.Seconds(), float64(p.records)/p.elapsed.Seconds(),
				p.cpuPerSecond(), perRecord, p.gcs, p.early, p.withData, p.atMaxWait, p.fetchErrors,
				ibFigure(p.after.purgatory), ibFigure(p.after.goroutines), rbQuantiles(p.lat))
			if p.failed > 0 {
				row += fmt.Sprintf("  (%d appends failed)", p.failed)
			}
			rows = append(rows, row)
			t.Log(row)
		}
		rows = append(rows, fmt.Sprintf("  B/A: CPU per second x%.2f, CPU per record x%.2f; parked fetches at rest: %+.3f CPU s/s",
			r.b.cpuPerSecond()/cmp.Or(r.a.cpuPerSecond(), 1e-9), r.b.cpuMsPer1k()/cmp.Or(r.a.cpuMsPer1k(), 1e-9),
			r.parked.cpuPerSecond()-r.rest.cpuPerSecond()))
		t.Log(rows[len(rows)-1])
	}
	t.Logf("idle long-polling fetches, 1 broker, produce to busy/0 at %d records/s (%d per batch, acks=1, %d in flight at most), "+
		"%v per load phase, %v per rest phase; then %d fetches (v11, MinBytes 1, one connection each) park on their own partitions of idle, "+
		"settle until %v after connecting, and B repeats A's load; "+
		"idle answers: early (before the max wait) / with data / at the max wait / errors\n"+
		"  phase                       appends/s  rec/s  CPU s/s ms/1k rec   GCs  idle answers  Fetch purg. goroutines  produce latency\n%s",
		rate, ibRecordsPerBatch, ibInflight, dur, ibRest, idle, ibSettle, strings.Join(rows, "\n"))
}

func ibFigure(v float64) string {
	if v < 0 {
		return "-"
	}
	return strconv.FormatFloat(v, 'f', 0, 64)
}
