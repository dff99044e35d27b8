//go:build e2e

package test

// KRaft cluster measurements (issue 4, "Benchmarks (reported)"): controller
// failover (kill -9 of the active controller until a CreateTopics through a
// broker succeeds) and metadata propagation delay (CreateTopics answered
// until every broker's Metadata shows the topic) at 10,000 and more
// partitions. Nothing is asserted on time; the figures are printed with
// t.Logf. Skipped unless GREGOR_BENCH=1:
//
//	GREGOR_BENCH=1 go test -tags e2e -run TestClusterBench -v -timeout 60m ./test/
//
// GREGOR_BENCH_BROKERS (default 3) and GREGOR_BENCH_STEPS (default
// "10000,50000": cumulative partition totals) size the propagation run.
// Each broker holds one open file per partition it leads, so a step must
// keep partitions/brokers under the open files limit. GREGOR_BENCH_OVERRIDES
// ("key=value,key=value") adds settings to every node.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func skipUnlessBench(t *testing.T) {
	t.Helper()
	if os.Getenv("GREGOR_BENCH") != "1" {
		t.Skip("measurement; set GREGOR_BENCH=1 to run it")
	}
}

// benchMachine logs what the figures were measured on.
func benchMachine(t *testing.T) {
	t.Helper()
	model := "?"
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if v, ok := strings.CutPrefix(line, "model name"); ok {
				model = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	memTotal := "?"
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				memTotal = strings.TrimSpace(v)
				break
			}
		}
	}
	var lim syscall.Rlimit
	syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim)
	var uts syscall.Utsname
	syscall.Uname(&uts)
	release := make([]byte, 0, len(uts.Release))
	for _, c := range uts.Release {
		if c == 0 {
			break
		}
		release = append(release, byte(c))
	}
	t.Logf("machine: %d CPUs (%s), memory %s, Linux %s, open files limit %d, %s", runtime.NumCPU(), model, memTotal, release, lim.Cur, runtime.Version())
}

// spread summarizes durations: min, median, p90, max.
type spread []time.Duration

func (s spread) String() string {
	if len(s) == 0 {
		return "-"
	}
	d := slices.Clone(s)
	slices.Sort(d)
	at := func(q float64) time.Duration { return d[min(len(d)-1, int(q*float64(len(d))))] }
	r := func(x time.Duration) string { return x.Round(time.Millisecond).String() }
	return fmt.Sprintf("min %s  median %s  p90 %s  max %s  (n=%d)", r(d[0]), r(at(0.5)), r(at(0.9)), r(d[len(d)-1]), len(d))
}

// pinnedClient is a client whose requests go to one broker (its seed), not
// to whichever broker kgo picks.
type pinnedClient struct {
	cl *kgo.Client
}

func newPinnedClient(t *testing.T, addr string) *pinnedClient {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return &pinnedClient{cl: cl}
}

func (p *pinnedClient) request(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	seeds := p.cl.SeedBrokers()
	if len(seeds) != 1 {
		return nil, fmt.Errorf("%d seed brokers", len(seeds))
	}
	return seeds[0].Request(ctx, req)
}

// quorum asks one broker for DescribeQuorum: the leader and whether every
// voter's log has reached the high watermark.
func (p *pinnedClient) quorum(ctx context.Context) (leader int32, caughtUp bool, err error) {
	req := kmsg.NewPtrDescribeQuorumRequest()
	rt := kmsg.NewDescribeQuorumRequestTopic()
	rt.Topic = "__cluster_metadata"
	rt.Partitions = append(rt.Partitions, kmsg.NewDescribeQuorumRequestTopicPartition())
	req.Topics = append(req.Topics, rt)
	kresp, err := p.request(ctx, req)
	if err != nil {
		return -1, false, err
	}
	resp := kresp.(*kmsg.DescribeQuorumResponse)
	if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return -1, false, fmt.Errorf("describe quorum: error %d, %d topics", resp.ErrorCode, len(resp.Topics))
	}
	rp := resp.Topics[0].Partitions[0]
	if rp.ErrorCode != 0 {
		return -1, false, fmt.Errorf("describe quorum: partition error %d", rp.ErrorCode)
	}
	caughtUp = len(rp.CurrentVoters) > 0
	for _, v := range rp.CurrentVoters {
		if v.LogEndOffset < rp.HighWatermark {
			caughtUp = false
		}
	}
	return rp.LeaderID, caughtUp, nil
}

// complete returns which of the topics the broker's Metadata shows with
// all their partitions, each with a leader.
func (p *pinnedClient) complete(ctx context.Context, topics []string, partitions int) ([]string, error) {
	req := kmsg.NewPtrMetadataRequest()
	for _, name := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(name)
		req.Topics = append(req.Topics, rt)
	}
	kresp, err := p.request(ctx, req)
	if err != nil {
		return nil, err
	}
	var done []string
	for _, rt := range kresp.(*kmsg.MetadataResponse).Topics {
		if rt.ErrorCode != 0 || rt.Topic == nil || len(rt.Partitions) != partitions {
			continue
		}
		led := true
		for _, rp := range rt.Partitions {
			if rp.ErrorCode != 0 || rp.Leader < 0 {
				led = false
				break
			}
		}
		if led {
			done = append(done, *rt.Topic)
		}
	}
	return done, nil
}

// createBenchTopic creates one topic (RF=1) and returns when the answer
// came, retrying while the cluster has no active controller; a topic that
// already exists was created by an earlier attempt that timed out here.
func createBenchTopic(t *testing.T, adm *kadm.Client, name string, partitions int32, deadline time.Time) time.Time {
	t.Helper()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		r, err := adm.CreateTopic(ctx, partitions, 1, nil, name)
		cancel()
		if err == nil && r.Err == nil {
			return time.Now()
		}
		if err == nil {
			err = r.Err
		}
		if strings.Contains(err.Error(), "TOPIC_ALREADY_EXISTS") {
			return time.Now()
		}
		if time.Now().After(deadline) {
			t.Fatalf("create topic %s: %v", name, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestClusterBenchFailover kills -9 the active controller of 3 controllers
// and 3 brokers, again and again, and measures until DescribeQuorum names
// a new leader and until a CreateTopics through a broker succeeds. It runs
// with gregor.controller.quorum.election.on.leader.exit on (the default: the
// survivors campaign as soon as the leader's connections close and its
// listener refuses connections) and off (Kafka's rule: after the election
// timeout), in one run. GREGOR_BENCH_KILLS (default 20) kills per mode,
// GREGOR_BENCH_MODES picks the modes ("on,off"); with GREGOR_BENCH_LOGS=DIR
// every node's log of each mode is written to DIR.
func TestClusterBenchFailover(t *testing.T) {
	skipUnlessBench(t)
	benchMachine(t)
	kills := benchEnvInts(t, "GREGOR_BENCH_KILLS", []int{20})[0]
	modes := []string{"on", "off"}
	if v := os.Getenv("GREGOR_BENCH_MODES"); v != "" {
		modes = strings.Split(v, ",")
	}
	leaders, creates := map[string]spread{}, map[string]spread{}
	for _, mode := range modes {
		t.Run("election-on-leader-exit="+mode, func(t *testing.T) {
			leaders[mode], creates[mode] = controllerFailovers(t, kills, mode != "off")
		})
	}
	var b strings.Builder
	for _, mode := range modes {
		fmt.Fprintf(&b, "\nelection.on.leader.exit=%-5v kill -9 of the active controller -> new leader in DescribeQuorum: %v\n%30s -> CreateTopics through a broker OK: %v",
			mode != "off", leaders[mode], "", creates[mode])
	}
	t.Logf("controller failover, 3 controllers + 3 brokers (controller.quorum.election.timeout.ms=1000):%s", b.String())
}

// controllerFailovers kills -9 the active controller `kills` times,
// restarting it and waiting for a caught-up quorum between kills, and
// returns the times from each kill until DescribeQuorum names another
// leader and until a CreateTopics through a broker succeeds.
func controllerFailovers(t *testing.T, kills int, onExit bool) (toLeader, toCreate spread) {
	c := startCluster(t, 3, 3, fmt.Sprintf("gregor.controller.quorum.election.on.leader.exit=%v", onExit))
	c.createTopic("warm-up", 3)
	adm := kadm.NewClient(c.client())
	quorumVia := newPinnedClient(t, c.brokers[1].addr())

	var rows []string
	for round := range kills {
		// A stable quorum with every voter caught up.
		var leader int32
		c.eventually("a caught-up quorum", 60*time.Second, func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			l, ok, err := quorumVia.quorum(ctx)
			if err != nil {
				return err
			}
			if !ok {
				return errors.New("a voter lags behind the high watermark")
			}
			leader = l
			return nil
		})
		victim := c.controller(leader)

		// Watch DescribeQuorum until another leader is named.
		elected := make(chan time.Duration, 1)
		stop := make(chan struct{})
		var wg sync.WaitGroup
		t0 := time.Now()
		victim.kill9()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				l, _, err := quorumVia.quorum(ctx)
				cancel()
				if err == nil && l >= 0 && l != leader {
					elected <- time.Since(t0)
					return
				}
				select {
				case <-stop:
					return
				case <-time.After(10 * time.Millisecond):
				}
			}
		}()
		created := createBenchTopic(t, adm, fmt.Sprintf("failover-%d", round), 1, time.Now().Add(60*time.Second)).Sub(t0)
		var el time.Duration
		select {
		case el = <-elected:
		case <-time.After(30 * time.Second):
			el = -1
		}
		close(stop)
		wg.Wait()
		if el < 0 {
			t.Fatalf("round %d: no new leader in DescribeQuorum although CreateTopics succeeded after %v", round, created)
		}
		toLeader = append(toLeader, el)
		toCreate = append(toCreate, created)
		rows = append(rows, fmt.Sprintf("%5d  %6d  %s  %17v  %22v", round+1, leader, t0.UTC().Format("15:04:05.000"),
			el.Round(time.Millisecond), created.Round(time.Millisecond)))
		victim.start()
	}
	t.Logf("controller failover, 3 controllers + 3 brokers, kill -9 of the active controller "+
		"(gregor.controller.quorum.election.on.leader.exit=%v, controller.quorum.election.timeout.ms=1000, broker.heartbeat.interval.ms=200, broker.session.timeout.ms=2000):\n"+
		"round  killed  killed at     new leader named  CreateTopics succeeded\n%s\n"+
		"new leader named in DescribeQuorum: %v\nCreateTopics through a broker OK:   %v",
		onExit, strings.Join(rows, "\n"), toLeader, toCreate)
	if dir := os.Getenv("GREGOR_BENCH_LOGS"); dir != "" {
		name := filepath.Join(dir, fmt.Sprintf("controller-failover-on-exit-%v.log", onExit))
		if err := os.WriteFile(name, []byte(c.logs()), 0o644); err != nil {
			t.Errorf("write the logs: %v", err)
		}
	}
	c.sameImages()
	return toLeader, toCreate
}

// benchEnvInts reads a comma-separated list of ints from env, or def.
func benchEnvInts(t *testing.T, name string, def []int) []int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	var out []int
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			t.Fatalf("%s=%q: want positive integers separated by commas", name, v)
		}
		out = append(out, n)
	}
	return out
}

// propagationWatch polls every broker for the topics whose CreateTopics was
// answered and not yet seen there, and records when each broker first
// showed each topic complete.
type propagationWatch struct {
	partitions int
	mu         sync.Mutex
	answered   map[string]time.Time
	seen       []map[string]time.Time // per broker
	errs       []error
}

func (w *propagationWatch) answer(topic string, at time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.answered[topic] = at
}

// pending is what broker i has not shown yet, of the answered topics.
func (w *propagationWatch) pending(i int) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for name := range w.answered {
		if _, ok := w.seen[i][name]; !ok {
			out = append(out, name)
		}
	}
	return out
}

func (w *propagationWatch) poll(i int, p *pinnedClient, stop <-chan struct{}) {
	for {
		if names := w.pending(i); len(names) > 0 {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			done, err := p.complete(ctx, names, w.partitions)
			cancel()
			now := time.Now()
			w.mu.Lock()
			if err != nil {
				w.errs = append(w.errs, err)
			}
			for _, name := range done {
				w.seen[i][name] = now
			}
			w.mu.Unlock()
		}
		select {
		case <-stop:
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// delays returns, per answered topic, the time from its answer until the
// last broker showed it, and when the last topic was seen everywhere.
func (w *propagationWatch) delays() (spread, time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out spread
	var last time.Time
	for name, at := range w.answered {
		var latest time.Time
		for _, seen := range w.seen {
			s, ok := seen[name]
			if !ok {
				return nil, time.Time{}, false
			}
			if s.After(latest) {
				latest = s
			}
		}
		out = append(out, latest.Sub(at))
		if latest.After(last) {
			last = latest
		}
	}
	return out, last, true
}

// TestClusterBenchPropagation: 3 controllers and GREGOR_BENCH_BROKERS
// brokers. Topics of 1,000 partitions (RF=1), one CreateTopics each, are
// created until the cluster holds each step's total; every broker is polled
// for the answered topics. Per step: the CreateTopics latency, per topic
// the delay from the answer until every broker's Metadata shows it with
// leaders, and the delay after the step's last answer. At each step's
// total, five single-partition probe topics measure the delay on an
// otherwise idle cluster.
func TestClusterBenchPropagation(t *testing.T) {
	skipUnlessBench(t)
	benchMachine(t)
	const perTopic = 1000
	nb := benchEnvInts(t, "GREGOR_BENCH_BROKERS", []int{3})[0]
	steps := benchEnvInts(t, "GREGOR_BENCH_STEPS", []int{10000, 50000})
	// Kafka's heartbeat defaults, so that a broker busy creating logs on
	// a loaded machine is not fenced in the middle of a measurement.
	extra := []string{"broker.heartbeat.interval.ms=2000", "broker.session.timeout.ms=9000"}
	if v := os.Getenv("GREGOR_BENCH_OVERRIDES"); v != "" {
		extra = append(extra, strings.Split(v, ",")...)
	}
	t.Logf("%d brokers, steps %v, overrides %v", nb, steps, extra)
	c := startCluster(t, 3, nb, extra...)
	adm := kadm.NewClient(c.client())
	var pinned []*pinnedClient
	for _, b := range c.brokers {
		pinned = append(pinned, newPinnedClient(t, b.addr()))
	}

	watch := func(partitions int, create func(answer func(string, time.Time))) (spread, time.Time, []error) {
		w := &propagationWatch{partitions: partitions, answered: map[string]time.Time{}}
		for range pinned {
			w.seen = append(w.seen, map[string]time.Time{})
		}
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for i, p := range pinned {
			wg.Add(1)
			go func() {
				defer wg.Done()
				w.poll(i, p, stop)
			}()
		}
		create(w.answer)
		deadline := time.Now().Add(10 * time.Minute)
		var d spread
		var last time.Time
		for {
			var ok bool
			if d, last, ok = w.delays(); ok {
				break
			}
			if time.Now().After(deadline) {
				close(stop)
				wg.Wait()
				t.Fatalf("topics not shown by every broker within 10 minutes (%d poll errors)\n%s", len(w.errs), c.logs())
			}
			time.Sleep(10 * time.Millisecond)
		}
		close(stop)
		wg.Wait()
		return d, last, w.errs
	}

	var rows []string
	total := 0
	for _, step := range steps {
		first := total / perTopic
		n := (step - total) / perTopic
		var latency spread
		var lastAnswer time.Time
		start := time.Now()
		delays, lastSeen, errs := watch(perTopic, func(answer func(string, time.Time)) {
			for i := first; i < first+n; i++ {
				name := fmt.Sprintf("p%06d", i)
				t0 := time.Now()
				at := createBenchTopic(t, adm, name, perTopic, time.Now().Add(2*time.Minute))
				latency = append(latency, at.Sub(t0))
				answer(name, at)
				lastAnswer = at
			}
		})
		created := lastAnswer.Sub(start)
		total += n * perTopic
		if len(errs) > 0 {
			t.Logf("step %d: %d Metadata polls failed, first: %v", total, len(errs), errs[0])
		}
		t.Logf("step to %d partitions: %d topics x %d created in %v (%.0f partitions/s)\n"+
			"  CreateTopics latency:                %v\n"+
			"  answer -> shown by every broker:     %v\n"+
			"  last answer -> all shown everywhere: %v",
			total, n, perTopic, created.Round(time.Millisecond), float64(n*perTopic)/created.Seconds(),
			latency, delays, lastSeen.Sub(lastAnswer).Round(time.Millisecond))

		// The brokers keep working after they show the last topic (its
		// logs are created after the image is published); wait until the
		// cluster is idle.
		idle := waitIdle(t, c, 90*time.Second).Sub(lastAnswer)
		t.Logf("  last answer -> cluster idle:         %v", idle.Round(time.Millisecond))

		// Probes on the idle cluster at this size.
		probes, _, _ := watch(1, func(answer func(string, time.Time)) {
			for i := range 10 {
				name := fmt.Sprintf("probe-%d-%d", total, i)
				answer(name, createBenchTopic(t, adm, name, 1, time.Now().Add(time.Minute)))
				time.Sleep(200 * time.Millisecond)
			}
		})
		t.Logf("  probe (1 partition) at %d:        %v", total, probes)
		rows = append(rows, fmt.Sprintf("%10d  %7d  %15v  %16v  %9v  %9v  %17v  %11v  %9v",
			total, n, created.Round(time.Millisecond),
			benchMedian(latency), benchMedian(delays), benchMax(delays), lastSeen.Sub(lastAnswer).Round(time.Millisecond), idle.Round(time.Millisecond), benchMedian(probes)))
	}
	for _, b := range c.brokers {
		rss := procStatus(t, b.cmd.Process.Pid, "VmRSS")
		t.Logf("broker %d: RSS %.0f MiB, %d descriptors", b.id, float64(rss)/(1<<20), openFiles(t, b.cmd.Process.Pid))
	}
	for _, n := range c.controllers {
		t.Logf("controller %d: RSS %.0f MiB", n.id, float64(procStatus(t, n.cmd.Process.Pid, "VmRSS"))/(1<<20))
	}
	t.Logf("metadata propagation, 3 controllers + %d brokers, topics of %d partitions (RF=1), one CreateTopics each, every broker polled every 10 ms:\n"+
		"partitions  +topics  step created in  CreateTopics p50  delay p50  delay max  after last answer  idle after  probe p50\n%s",
		nb, perTopic, strings.Join(rows, "\n"))
}

func benchMedian(s spread) time.Duration {
	if len(s) == 0 {
		return 0
	}
	d := slices.Clone(s)
	slices.Sort(d)
	return d[len(d)/2].Round(time.Millisecond)
}

func benchMax(s spread) time.Duration {
	if len(s) == 0 {
		return 0
	}
	return slices.Max(s).Round(time.Millisecond)
}

// cpuTicks returns the user+system clock ticks a process has used.
func cpuTicks(pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The fields after the command name, which is in parentheses.
	f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return u + s
}

// waitIdle waits until the cluster's processes together use under a tenth
// of a CPU over half a second, and returns when that window began. Every
// 10 s of waiting it logs which nodes are busy.
func waitIdle(t *testing.T, c *cluster, timeout time.Duration) time.Time {
	t.Helper()
	nodes := append(slices.Clone(c.controllers), c.brokers...)
	ticks := func() []int64 {
		n := make([]int64, len(nodes))
		for i, nd := range nodes {
			if nd.cmd != nil {
				n[i] = cpuTicks(nd.cmd.Process.Pid)
			}
		}
		return n
	}
	start := time.Now()
	deadline := start.Add(timeout)
	lastReport := start
	for {
		t0 := time.Now()
		before := ticks()
		time.Sleep(500 * time.Millisecond)
		after := ticks()
		// Clock ticks are 1/100 s: under 5 ticks in 0.5 s is under 0.1 CPU.
		var sum int64
		var busy []string
		for i := range nodes {
			d := after[i] - before[i]
			sum += d
			if d > 0 {
				busy = append(busy, fmt.Sprintf("node %d: %d%%", nodes[i].id, d*2))
			}
		}
		if sum < 5 {
			return t0
		}
		if time.Since(lastReport) >= 10*time.Second {
			t.Logf("  still busy after %v: %s", time.Since(start).Round(time.Second), strings.Join(busy, ", "))
			lastReport = time.Now()
		}
		if time.Now().After(deadline) {
			t.Logf("cluster not idle within %v", timeout)
			return time.Now()
		}
	}
}
