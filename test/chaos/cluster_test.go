//go:build chaos

package chaos

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"gregor/test/chaos/slowfs"
	"gregor/test/gregorbin"
)

// The cluster: three combined nodes (broker and controller), each a gregor
// process in a network namespace of its own, joined by a bridge in the root
// namespace, where the test and its clients run. Every byte between nodes
// (Raft, replica fetches, AlterPartition, heartbeats, forwarding, markers)
// crosses the bridge, so taking a node's link down partitions it from the
// others, and from the clients too (they carry on with the other two).
// Each node has three log.dirs: a regular directory, holding the metadata
// log; a small tmpfs that the nemesis can fill; and a FUSE loopback of a
// regular directory (slowfs, served by this test process) that the
// nemesis can make slow. The slow disk is a log.dir of its own rather
// than the first one so that it slows partition data (appends, flushes,
// fetches missing the page cache), not the KRaft metadata log, and so
// that the other faults hit what they hit before. Gregor puts a new
// partition on the dir holding the fewest, so each dir gets a third of a
// node's replicas (checked by slowDirPartitions).

var gregorBin string

// TestMain runs the tests, or, started by TestShareGroupConsumerKilled
// with shareConsumerEnv set, one share consumer of that test.
func TestMain(m *testing.M) {
	if spec := os.Getenv(shareConsumerEnv); spec != "" {
		os.Exit(shareConsumerMain(spec))
	}
	os.Exit(gregorbin.Main(m.Run, &gregorBin))
}

// node is one gregor process in its namespace.
type node struct {
	c         *cluster
	id        int32
	ns        string // network namespace
	link      string // the root namespace's end of its veth pair
	ip        string
	dataDir   string
	smallDir  string // the tmpfs log.dir
	slowDir   string // the slowfs log.dir
	slowFS    *slowfs.FS
	props     []string
	logPath   string
	mu        sync.Mutex
	cmd       *exec.Cmd
	exited    chan struct{}
	paused    bool
	cutOff    bool
	filled    bool
	slowed    bool
	restarted int
}

func (n *node) addr() string { return n.ip + ":9092" }

// cluster is the three nodes and what the test set up for them.
type cluster struct {
	t         *testing.T
	dir       string
	bridge    string
	net       string // "10.213.k", the nodes' /24
	clusterID string
	nodes     []*node
	overrides []string
	teardown  []func()
	// noSlowDisk is set when FUSE could not be mounted here.
	noSlowDisk bool
}

const smallDirSize = "256m"

// sh runs a setup command and fails the test if it fails.
func (c *cluster) sh(name string, args ...string) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, name, args...).CombinedOutput(); err != nil {
		c.t.Fatalf("%s %s: %v: %s", name, strings.Join(args, " "), err, out)
	}
}

// quiet runs a teardown command, reporting but not failing on errors.
func quiet(name string, args ...string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, name, args...).CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "teardown: %s %s: %v: %s\n", name, strings.Join(args, " "), err, out)
	}
}

// startCluster sets up the namespaces, formats and starts three nodes with
// the overrides given (on top of the suite's defaults), and waits until
// every broker is registered.
func startCluster(t *testing.T, overrides ...string) *cluster {
	if os.Geteuid() != 0 {
		t.Skip("network namespaces and tmpfs mounts need root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("no ip(8)")
	}
	k := os.Getpid()%250 + 1
	dir, err := os.MkdirTemp("", "gregor-chaos-")
	if err != nil {
		t.Fatal(err)
	}
	// Kept when the test fails: the nodes' logs and data are the evidence.
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("cluster kept in %s", dir)
		} else {
			os.RemoveAll(dir)
		}
	})
	c := &cluster{t: t, dir: dir, bridge: fmt.Sprintf("gch%db", k), net: fmt.Sprintf("10.213.%d", k), overrides: overrides}
	t.Cleanup(func() {
		for i := len(c.teardown) - 1; i >= 0; i-- {
			c.teardown[i]()
		}
	})
	c.sh("ip", "link", "add", c.bridge, "type", "bridge", "forward_delay", "0")
	c.teardown = append(c.teardown, func() { quiet("ip", "link", "del", c.bridge) })
	c.sh("ip", "addr", "add", c.net+".254/24", "dev", c.bridge)
	c.sh("ip", "link", "set", c.bridge, "up")
	out, err := exec.Command(gregorBin, "storage", "random-uuid").Output()
	if err != nil {
		t.Fatalf("random-uuid: %v", err)
	}
	c.clusterID = strings.TrimSpace(string(out))
	var voters []string
	for i := range 3 {
		voters = append(voters, fmt.Sprintf("%d@%s.%d:9093", i+1, c.net, i+1))
	}
	for i := range 3 {
		id := int32(i + 1)
		n := &node{c: c, id: id, ns: fmt.Sprintf("gch%dn%d", k, id), link: fmt.Sprintf("gch%dv%d", k, id),
			ip: fmt.Sprintf("%s.%d", c.net, id)}
		n.dataDir = filepath.Join(c.dir, fmt.Sprintf("n%d", id), "data")
		n.smallDir = filepath.Join(c.dir, fmt.Sprintf("n%d", id), "small")
		n.slowDir = filepath.Join(c.dir, fmt.Sprintf("n%d", id), "slow")
		slowBacking := filepath.Join(c.dir, fmt.Sprintf("n%d", id), "slow-backing")
		n.logPath = filepath.Join(c.dir, fmt.Sprintf("n%d", id), "gregor.log")
		for _, d := range []string{n.dataDir, n.smallDir, n.slowDir, slowBacking} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		c.sh("mount", "-t", "tmpfs", "-o", "size="+smallDirSize, "tmpfs", n.smallDir)
		c.teardown = append(c.teardown, func() { quiet("umount", "-l", n.smallDir) })
		if n.slowFS, err = slowfs.Mount(slowBacking, n.slowDir); err != nil {
			// A machine without FUSE still runs every other fault: the
			// slow dir stays a plain directory and the nemesis leaves the
			// slow disk out (said loudly, not silently skipped).
			t.Logf("NO SLOW DISK in this run: cannot mount the FUSE loopback (%v); the slow-disk fault is left out", err)
			n.slowFS, c.noSlowDisk = nil, true
		} else {
			fs := n.slowFS
			c.teardown = append(c.teardown, func() {
				if err := fs.Unmount(); err != nil {
					fmt.Fprintf(os.Stderr, "teardown: %v\n", err)
				}
			})
		}
		c.sh("ip", "netns", "add", n.ns)
		c.teardown = append(c.teardown, func() { quiet("ip", "netns", "del", n.ns) })
		peer := fmt.Sprintf("gch%dp%d", k, id)
		c.sh("ip", "link", "add", n.link, "type", "veth", "peer", "name", peer)
		c.sh("ip", "link", "set", peer, "netns", n.ns)
		c.sh("ip", "link", "set", n.link, "master", c.bridge)
		c.sh("ip", "link", "set", n.link, "up")
		c.sh("ip", "netns", "exec", n.ns, "ip", "addr", "add", n.ip+"/24", "dev", peer)
		c.sh("ip", "netns", "exec", n.ns, "ip", "link", "set", peer, "up")
		c.sh("ip", "netns", "exec", n.ns, "ip", "link", "set", "lo", "up")
		n.props = []string{
			"node.id=" + fmt.Sprint(id),
			"process.roles=broker,controller",
			"controller.quorum.voters=" + strings.Join(voters, ","),
			fmt.Sprintf("listeners=PLAINTEXT://%s:9092,CONTROLLER://%s:9093", n.ip, n.ip),
			fmt.Sprintf("advertised.listeners=PLAINTEXT://%s:9092", n.ip),
			"controller.listener.names=CONTROLLER",
			"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
			"log.dirs=" + n.dataDir + "," + n.smallDir + "," + n.slowDir,
			"gregor.http.listen=",
			"broker.heartbeat.interval.ms=250",
			"broker.session.timeout.ms=4000",
			"default.replication.factor=3",
			"min.insync.replicas=2",
			"offsets.topic.replication.factor=3",
			"offsets.topic.num.partitions=6",
			"transaction.state.log.replication.factor=3",
			"transaction.state.log.min.isr=2",
			"transaction.state.log.num.partitions=6",
			"num.partitions=3",
		}
		n.props = append(n.props, overrides...)
		args := []string{"storage", "format", "--cluster-id", c.clusterID}
		for _, p := range n.props {
			args = append(args, "--override", p)
		}
		c.sh(gregorBin, args...)
		c.nodes = append(c.nodes, n)
	}
	c.teardown = append(c.teardown, func() {
		for _, n := range c.nodes {
			n.forceStop()
		}
	})
	for _, n := range c.nodes {
		n.start()
	}
	c.waitFor("three brokers registered", 60*time.Second, c.brokersRegistered)
	return c
}

// start runs the node's process in its namespace and waits until its
// broker listener accepts connections.
func (n *node) start() {
	t := n.c.t
	t.Helper()
	args := []string{"netns", "exec", n.ns, gregorBin, "server"}
	for _, p := range n.props {
		args = append(args, "--override", p)
	}
	logFile, err := os.OpenFile(n.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(logFile, "==== %s start\n", time.Now().Format(time.RFC3339Nano))
	// ip netns exec execs the command: the process is gregor itself, so
	// signals reach it directly.
	cmd := exec.Command("ip", args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		logFile.Close()
		close(exited)
	}()
	n.mu.Lock()
	n.cmd, n.exited, n.paused = cmd, exited, false
	n.mu.Unlock()
	deadline := time.Now().Add(60 * time.Second)
	for {
		conn, err := net.DialTimeout("tcp", n.addr(), time.Second)
		if err == nil {
			conn.Close()
			return
		}
		select {
		case <-exited:
			t.Fatalf("node %d exited during start-up (%v); log %s", n.id, cmd.ProcessState, n.logPath)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("node %d did not listen on %s within 60s; log %s", n.id, n.addr(), n.logPath)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (n *node) running() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.cmd != nil
}

func (n *node) signal(sig syscall.Signal) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil {
		return fmt.Errorf("node %d is not running", n.id)
	}
	return n.cmd.Process.Signal(sig)
}

// kill9 kills the process, no chance to flush anything.
func (n *node) kill9() {
	n.mu.Lock()
	cmd, exited := n.cmd, n.exited
	n.cmd = nil
	n.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Kill()
	<-exited
}

// stop asks for a clean shutdown (SIGTERM) and kills after 60 s.
func (n *node) stop() {
	n.mu.Lock()
	cmd, exited, paused := n.cmd, n.exited, n.paused
	n.cmd = nil
	n.mu.Unlock()
	if cmd == nil {
		return
	}
	if paused {
		cmd.Process.Signal(syscall.SIGCONT)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(60 * time.Second):
		n.c.t.Logf("node %d did not stop within 60s of SIGTERM; killed", n.id)
		cmd.Process.Kill()
		<-exited
	}
}

// forceStop is the teardown: whatever state the node is in, it ends.
func (n *node) forceStop() {
	n.mu.Lock()
	paused := n.paused
	n.mu.Unlock()
	if paused {
		n.signal(syscall.SIGCONT)
	}
	n.stop()
}

func (n *node) pause() error {
	if err := n.signal(syscall.SIGSTOP); err != nil {
		return err
	}
	n.mu.Lock()
	n.paused = true
	n.mu.Unlock()
	return nil
}

func (n *node) resume() error {
	n.mu.Lock()
	n.paused = false
	n.mu.Unlock()
	return n.signal(syscall.SIGCONT)
}

// partition takes the node's link down: nothing reaches it or leaves it.
func (n *node) partition() error {
	if err := exec.Command("ip", "link", "set", n.link, "down").Run(); err != nil {
		return fmt.Errorf("partition node %d: %w", n.id, err)
	}
	n.cutOff = true
	return nil
}

func (n *node) heal() error {
	if err := exec.Command("ip", "link", "set", n.link, "up").Run(); err != nil {
		return fmt.Errorf("heal node %d: %w", n.id, err)
	}
	n.cutOff = false
	return nil
}

// fillDisk fills the node's tmpfs log.dir to the last byte.
func (n *node) fillDisk() error {
	f, err := os.Create(filepath.Join(n.smallDir, "chaos-filler"))
	if err != nil {
		return err
	}
	defer f.Close()
	n.filled = true
	buf := make([]byte, 1<<20)
	for {
		if _, err := f.Write(buf); err != nil {
			if errors.Is(err, syscall.ENOSPC) {
				return nil
			}
			return fmt.Errorf("fill node %d's disk: %w", n.id, err)
		}
	}
}

// freeDisk removes the filler. A log.dir that failed stays offline until
// the broker restarts (Kafka's rule), which the nemesis does next.
func (n *node) freeDisk() error {
	n.filled = false
	err := os.Remove(filepath.Join(n.smallDir, "chaos-filler"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

// slowDisk makes every write, fsync and uncached read on the node's
// slowfs log.dir take latency, one at a time (0: full speed again). It
// returns how many I/Os have waited so far.
func (n *node) slowDisk(latency time.Duration) int64 {
	if n.slowFS == nil {
		return 0 // no FUSE here: the nemesis does not pick this fault
	}
	n.slowFS.SetLatency(latency)
	n.slowed = latency > 0
	return n.slowFS.Waited()
}

// slowDirPartitions counts the partition directories on the node's slow
// log.dir.
func (n *node) slowDirPartitions() (int, error) {
	entries, err := os.ReadDir(n.slowDir)
	if err != nil {
		return 0, err
	}
	count := 0
	for _, e := range entries {
		// A partition's directory is topic-partition; the dir's own
		// files (meta.properties, checkpoints) have no dash.
		if e.IsDir() && strings.Contains(e.Name(), "-") && !strings.HasSuffix(e.Name(), "-delete") {
			count++
		}
	}
	return count, nil
}

func (n *node) logCount(phrase string) int {
	data, _ := os.ReadFile(n.logPath)
	return strings.Count(string(data), phrase)
}

func (c *cluster) seeds() []string {
	var s []string
	for _, n := range c.nodes {
		s = append(s, n.addr())
	}
	return s
}

// client is a franz-go client seeded with every node, closed with the test.
func (c *cluster) client(opts ...kgo.Opt) *kgo.Client {
	c.t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.seeds()...),
		kgo.DialTimeout(3 * time.Second), kgo.RequestTimeoutOverhead(5 * time.Second)}, opts...)...)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(cl.Close)
	return cl
}

// waitFor polls cond until it holds; past the deadline the test fails.
func (c *cluster) waitFor(what string, timeout time.Duration, cond func() error) {
	c.t.Helper()
	if err := poll(timeout, cond); err != nil {
		c.t.Fatalf("%s: not within %v: %v", what, timeout, err)
	}
}

// poll calls cond until it returns nil or timeout passes (the last error).
func poll(timeout time.Duration, cond func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// metadata asks any node for brokers and topics (all, internal included).
func (c *cluster) metadata() (kadm.Metadata, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.seeds()...), kgo.DialTimeout(2*time.Second))
	if err != nil {
		return kadm.Metadata{}, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return kadm.NewClient(cl).Metadata(ctx)
}

func (c *cluster) brokersRegistered() error {
	m, err := c.metadata()
	if err != nil {
		return err
	}
	if len(m.Brokers) != 3 {
		return fmt.Errorf("%d brokers registered: %v", len(m.Brokers), m.Brokers.NodeIDs())
	}
	return nil
}

// healthy: three brokers, and every partition of every topic has a leader
// and all three replicas in its ISR, as each node itself answers.
func (c *cluster) healthy() error { return c.replicated(3) }

// available: three brokers, and every partition has a leader and at least
// min.insync.replicas (2) in its ISR, so every workload can go on.
func (c *cluster) available() error { return c.replicated(2) }

func (c *cluster) replicated(minISR int) error {
	for _, n := range c.nodes {
		cl, err := kgo.NewClient(kgo.SeedBrokers(n.addr()), kgo.DialTimeout(2*time.Second))
		if err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		m, err := kadm.NewClient(cl).Metadata(ctx)
		cancel()
		cl.Close()
		if err != nil {
			return fmt.Errorf("node %d: %w", n.id, err)
		}
		if len(m.Brokers) != 3 {
			return fmt.Errorf("node %d lists %d brokers", n.id, len(m.Brokers))
		}
		for _, td := range m.Topics {
			for _, p := range td.Partitions {
				if p.Leader < 0 || len(p.ISR) < min(minISR, len(p.Replicas)) {
					return fmt.Errorf("node %d: %s/%d leader %d isr %v replicas %v", n.id, td.Topic, p.Partition, p.Leader, p.ISR, p.Replicas)
				}
			}
		}
	}
	return nil
}

func (c *cluster) node(id int32) *node {
	for _, n := range c.nodes {
		if n.id == id {
			return n
		}
	}
	return nil
}

// createTopic creates a topic with RF 3, retrying while the cluster cannot.
func (c *cluster) createTopic(name string, partitions int32, configs map[string]*string) {
	c.t.Helper()
	adm := kadm.NewClient(c.client())
	c.waitFor("create topic "+name, 60*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := adm.CreateTopic(ctx, partitions, 3, configs, name)
		if err != nil && !strings.Contains(err.Error(), "TOPIC_ALREADY_EXISTS") {
			return err
		}
		return nil
	})
}

// committedOffset asks the group's coordinator, through a new client (one
// that knows no coordinator yet), for a partition's committed offset.
func (c *cluster) committedOffset(group, topic string, partition int32) (int64, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.seeds()...), kgo.DialTimeout(2*time.Second))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := kadm.NewClient(cl).FetchOffsets(ctx, group)
	if err != nil {
		return 0, err
	}
	if err := resp.Error(); err != nil {
		return 0, err
	}
	o, ok := resp.Lookup(topic, partition)
	if !ok {
		return -1, nil
	}
	return o.At, o.Err
}
