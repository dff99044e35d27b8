//go:build e2e

package test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/record"
)

// node is one process of a multi-node cluster: a controller or a broker.
type node struct {
	t       *testing.T
	id      int32
	roles   string
	dataDir string
	port    int    // its one listener: CONTROLLER for a controller, PLAINTEXT (BROKER when secure) for a broker
	config  string // a server.properties given with --config, under the overrides
	props   []string
	cmd     *exec.Cmd
	logPath string
	exited  chan struct{}
}

func (n *node) addr() string { return fmt.Sprintf("127.0.0.1:%d", n.port) }

// cluster is controllers and brokers as separate processes on loopback.
type cluster struct {
	t           *testing.T
	clusterID   string
	controllers []*node
	brokers     []*node
	voters      string
	extra       []string // overrides for every node
	formatArgs  []string // more arguments of every node's `storage format`
	proxies     map[int32]*proxy
	sec         *clusterSecurity // nil: every listener PLAINTEXT
}

// startCluster formats and starts nc controllers (ids 1..nc) and nb brokers
// (ids 101..), and waits until every broker is registered and unfenced.
func startCluster(t *testing.T, nc, nb int, extra ...string) *cluster {
	t.Helper()
	return startClusterProxied(t, nc, nb, false, extra...)
}

// startClusterProxied is startCluster; with proxied, every connection to a
// controller goes through a TCP proxy the test can cut.
func startClusterProxied(t *testing.T, nc, nb int, proxied bool, extra ...string) *cluster {
	t.Helper()
	return startClusterWith(t, nc, nb, proxied, nil, extra...)
}

// startClusterWith is startClusterProxied that also gives every node's
// `storage format` formatArgs (say, --add-scram).
func startClusterWith(t *testing.T, nc, nb int, proxied bool, formatArgs []string, extra ...string) *cluster {
	t.Helper()
	return startClusterSpec(t, clusterSpec{controllers: nc, brokers: nb, proxied: proxied, formatArgs: formatArgs, extra: extra})
}

// clusterSpec describes the cluster startClusterSpec starts.
type clusterSpec struct {
	controllers, brokers int
	// proxied: every connection to a controller goes through a TCP proxy
	// the test can cut.
	proxied bool
	// secure: every listener is SASL_SSL (see secure_cluster_test.go).
	secure     bool
	formatArgs []string // more arguments of every node's `storage format`
	extra      []string // overrides for every node
}

// startClusterSpec formats and starts the controllers (ids 1..) and brokers
// (ids 101..) of spec, and waits until every broker is registered and
// unfenced.
func startClusterSpec(t *testing.T, spec clusterSpec) *cluster {
	t.Helper()
	nc, nb := spec.controllers, spec.brokers
	out, err := run(t, 10*time.Second, "", gregorBin, "storage", "random-uuid")
	if err != nil {
		t.Fatalf("random-uuid: %v\n%s", err, out)
	}
	c := &cluster{t: t, clusterID: strings.TrimSpace(out), extra: spec.extra, formatArgs: spec.formatArgs}
	if spec.secure {
		c.sec = newClusterSecurity(t)
	}
	var voters []string
	for i := range nc {
		n := &node{t: t, id: int32(i + 1), roles: "controller", dataDir: t.TempDir(), port: freePort(t)}
		addr := n.addr()
		if spec.proxied {
			if c.proxies == nil {
				c.proxies = map[int32]*proxy{}
			}
			p := startProxy(t, n.addr())
			c.proxies[n.id] = p
			addr = p.addr()
		}
		voters = append(voters, fmt.Sprintf("%d@%s", n.id, addr))
		c.controllers = append(c.controllers, n)
	}
	c.voters = strings.Join(voters, ",")
	for i := range nb {
		c.brokers = append(c.brokers, &node{t: t, id: int32(101 + i), roles: "broker", dataDir: t.TempDir(), port: freePort(t)})
	}
	for _, n := range append(slices.Clone(c.controllers), c.brokers...) {
		c.configure(n)
		c.format(n)
	}
	// Registered first, so that a node failing to start does not leave
	// the others running.
	t.Cleanup(func() {
		for _, n := range append(slices.Clone(c.brokers), c.controllers...) {
			n.stop()
		}
		if c.sec != nil {
			c.checkNoPasswordLogged()
		}
	})
	for _, n := range c.controllers {
		n.start()
	}
	for _, n := range c.brokers {
		n.start()
	}
	c.waitBrokers(len(c.brokers))
	return c
}

func (c *cluster) configure(n *node) {
	n.props = []string{
		"node.id=" + fmt.Sprint(n.id),
		"process.roles=" + n.roles,
		"controller.quorum.voters=" + c.voters,
		"controller.listener.names=CONTROLLER",
		"log.dirs=" + n.dataDir,
		"gregor.http.listen=", // off: its port-0 bind could take a port freePort chose for another listener
		"broker.heartbeat.interval.ms=200",
		"broker.session.timeout.ms=2000",
	}
	switch {
	case n.roles == "controller":
		n.props = append(n.props, fmt.Sprintf("listeners=CONTROLLER://%s", n.addr()))
	case c.sec != nil:
		n.props = append(n.props, fmt.Sprintf("listeners=BROKER://%s", n.addr()))
	default:
		n.props = append(n.props, fmt.Sprintf("listeners=PLAINTEXT://%s", n.addr()))
	}
	if c.sec != nil {
		n.props = append(n.props, c.sec.props()...)
	}
	// "{id}" in an override stands for the node's id (say, broker.rack=r{id}).
	for _, e := range c.extra {
		n.props = append(n.props, strings.ReplaceAll(e, "{id}", fmt.Sprint(n.id)))
	}
}

func (c *cluster) format(n *node) {
	args := []string{"storage", "format", "--cluster-id", c.clusterID}
	if n.config != "" {
		args = append(args, "--config", n.config)
	}
	for _, p := range n.props {
		args = append(args, "--override", p)
	}
	args = append(args, c.formatArgs...)
	if c.sec != nil {
		args = append(args, c.sec.formatArgs()...)
	}
	if out, err := run(c.t, 10*time.Second, "", gregorBin, args...); err != nil {
		c.t.Fatalf("format node %d: %v\n%s", n.id, err, out)
	}
}

// start starts the process and waits until it listens (a broker listens
// once it has caught up with the metadata).
func (n *node) start() {
	n.t.Helper()
	n.startWithin(30 * time.Second)
}

// startWithin is start for a node that may take longer to listen (a
// broker loading 100,000 logs after a crash).
func (n *node) startWithin(timeout time.Duration) {
	n.t.Helper()
	n.launch()
	deadline := time.Now().Add(timeout)
	for {
		conn, err := net.DialTimeout("tcp", n.addr(), time.Second)
		if err == nil {
			conn.Close()
			return
		}
		select {
		case <-n.exited:
			n.t.Fatalf("node %d exited during start-up (%v):\n%s", n.id, n.cmd.ProcessState, n.log())
		default:
		}
		if time.Now().After(deadline) {
			n.t.Fatalf("node %d did not listen on %s within %v:\n%s", n.id, n.addr(), timeout, n.log())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// launch starts the process.
func (n *node) launch() {
	n.t.Helper()
	args := []string{"server"}
	if n.config != "" {
		args = append(args, "--config", n.config)
	}
	for _, p := range n.props {
		args = append(args, "--override", p)
	}
	if n.logPath == "" {
		n.logPath = filepath.Join(n.t.TempDir(), "gregor.log")
	}
	logFile, err := os.OpenFile(n.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		n.t.Fatal(err)
	}
	n.cmd = exec.Command(gregorBin, args...)
	n.cmd.Stdout, n.cmd.Stderr = logFile, logFile
	if err := n.cmd.Start(); err != nil {
		n.t.Fatal(err)
	}
	n.exited = make(chan struct{})
	go func() {
		n.cmd.Wait()
		logFile.Close()
		close(n.exited)
	}()
}

func (n *node) stop() {
	n.t.Helper()
	if n.cmd == nil {
		return
	}
	select {
	case <-n.exited:
	default:
		n.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-n.exited:
		case <-time.After(60 * time.Second):
			n.cmd.Process.Kill()
			<-n.exited
			n.t.Errorf("node %d did not stop within 60s of SIGTERM:\n%s", n.id, n.log())
		}
	}
	if ws, ok := n.cmd.ProcessState.Sys().(syscall.WaitStatus); ok && !(ws.Signaled() && ws.Signal() == syscall.SIGKILL) && ws.ExitStatus() != 0 {
		n.t.Errorf("node %d exited with %d:\n%s", n.id, ws.ExitStatus(), n.log())
	}
	n.cmd = nil
}

func (n *node) kill9() {
	n.cmd.Process.Kill()
	<-n.exited
	n.cmd = nil
}

func (n *node) log() string {
	data, _ := os.ReadFile(n.logPath)
	s := string(data)
	if len(s) > 6000 {
		s = "...\n" + s[len(s)-6000:]
	}
	return s
}

// logCount counts a phrase in the node's whole log (all its runs).
func (n *node) logCount(phrase string) int {
	data, _ := os.ReadFile(n.logPath)
	return strings.Count(string(data), phrase)
}

func (c *cluster) logs() string {
	var b strings.Builder
	for _, n := range append(slices.Clone(c.controllers), c.brokers...) {
		fmt.Fprintf(&b, "=== node %d (%s)\n%s\n", n.id, n.roles, n.log())
	}
	return b.String()
}

func (c *cluster) bootstrap() []string {
	var seeds []string
	for _, b := range c.brokers {
		if b.cmd != nil {
			seeds = append(seeds, b.addr())
		}
	}
	return seeds
}

// clientSecurity is what a client needs to connect to the brokers: nothing
// on PLAINTEXT, TLS and SCRAM when secure.
func (c *cluster) clientSecurity() []kgo.Opt {
	if c.sec == nil {
		return nil
	}
	return c.sec.clientOpts
}

func (c *cluster) client(opts ...kgo.Opt) *kgo.Client {
	c.t.Helper()
	cl, err := kgo.NewClient(slices.Concat([]kgo.Opt{kgo.SeedBrokers(c.bootstrap()...)}, c.clientSecurity(), opts)...)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(cl.Close)
	return cl
}

// eventually polls cond until it holds or the deadline passes.
func (c *cluster) eventually(what string, timeout time.Duration, cond func() error) {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("%s: not within %v: %v\n%s", what, timeout, err, c.logs())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitBrokers waits until a broker lists n unfenced brokers.
func (c *cluster) waitBrokers(n int) {
	c.t.Helper()
	c.eventually(fmt.Sprintf("%d brokers registered", n), 30*time.Second, func() error {
		for _, b := range c.brokers {
			if b.cmd == nil {
				continue
			}
			cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(b.addr())}, c.clientSecurity()...)...)
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			m, err := kadm.NewClient(cl).BrokerMetadata(ctx)
			cancel()
			cl.Close()
			if err != nil {
				return err
			}
			if len(m.Brokers) != n {
				return fmt.Errorf("broker %d lists %d brokers: %v", b.id, len(m.Brokers), m.Brokers.NodeIDs())
			}
		}
		return nil
	})
}

// quorumLeader asks DescribeQuorum through a broker.
func (c *cluster) quorumLeader() (int32, error) {
	cl := c.client()
	req := kmsg.NewPtrDescribeQuorumRequest()
	t := kmsg.NewDescribeQuorumRequestTopic()
	t.Topic = "__cluster_metadata"
	p := kmsg.NewDescribeQuorumRequestTopicPartition()
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return -1, err
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return -1, fmt.Errorf("describe quorum: bad response %+v", resp)
	}
	rp := resp.Topics[0].Partitions[0]
	if rp.ErrorCode != 0 {
		return -1, fmt.Errorf("describe quorum: error %d", rp.ErrorCode)
	}
	if len(rp.CurrentVoters) != len(c.controllers) {
		return -1, fmt.Errorf("describe quorum: %d voters", len(rp.CurrentVoters))
	}
	return rp.LeaderID, nil
}

func (c *cluster) controller(id int32) *node {
	for _, n := range c.controllers {
		if n.id == id {
			return n
		}
	}
	c.t.Fatalf("no controller %d", id)
	return nil
}

// createTopic creates a topic through a broker, retrying while the
// cluster has no active controller.
func (c *cluster) createTopic(name string, partitions int32) {
	c.t.Helper()
	adm := kadm.NewClient(c.client())
	c.eventually("create topic "+name, 30*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		r, err := adm.CreateTopic(ctx, partitions, 1, nil, name)
		if err != nil && !strings.Contains(err.Error(), "TOPIC_ALREADY_EXISTS") {
			return err
		}
		_ = r
		return nil
	})
}

// imageDigest describes the cluster as one broker's Metadata sees it:
// brokers, topics, partitions, leaders and epochs. opts are the client's
// security, if any.
func imageDigest(t *testing.T, addr string, opts ...kgo.Opt) (string, error) {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr)}, opts...)...)
	if err != nil {
		return "", err
	}
	defer cl.Close()
	req := kmsg.NewPtrMetadataRequest()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return "", err
	}
	var lines []string
	for _, b := range resp.Brokers {
		lines = append(lines, fmt.Sprintf("broker %d %s:%d", b.NodeID, b.Host, b.Port))
	}
	for _, tp := range resp.Topics {
		for _, p := range tp.Partitions {
			lines = append(lines, fmt.Sprintf("%s %x %d leader=%d epoch=%d replicas=%v isr=%v", *tp.Topic, tp.TopicID, p.Partition, p.Leader, p.LeaderEpoch, p.Replicas, p.ISR))
		}
	}
	sort.Strings(lines)
	sum := sha256.Sum256([]byte(strings.Join(lines, "\n")))
	return hex.EncodeToString(sum[:8]) + fmt.Sprintf(" (%d lines)", len(lines)), nil
}

// sameImages waits until every running broker describes the same cluster.
func (c *cluster) sameImages() string {
	c.t.Helper()
	var digest string
	c.eventually("identical metadata on every broker", 20*time.Second, func() error {
		var first string
		for _, b := range c.brokers {
			if b.cmd == nil {
				continue
			}
			d, err := imageDigest(c.t, b.addr(), c.clientSecurity()...)
			if err != nil {
				return err
			}
			if first == "" {
				first = d
			} else if d != first {
				return fmt.Errorf("broker %d has %s, another has %s", b.id, d, first)
			}
		}
		digest = first
		return nil
	})
	return digest
}

// metadataLogBatches lists the data batches of a controller's metadata log
// as "offset:crc": committed batches are identical on every voter.
func metadataLogBatches(t *testing.T, dir string) []string {
	t.Helper()
	segs, err := filepath.Glob(filepath.Join(dir, "__cluster_metadata-0", "*.log"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(segs)
	var batches []string
	for _, seg := range segs {
		data, err := os.ReadFile(seg)
		if err != nil {
			t.Fatal(err)
		}
		for len(data) > 0 {
			bh, err := record.ParseHeader(data)
			if err != nil || bh.Size() > len(data) {
				break
			}
			if !bh.IsControl() {
				batches = append(batches, fmt.Sprintf("%d:%x", bh.BaseOffset, bh.CRC))
			}
			data = data[bh.Size():]
		}
	}
	return batches
}

func produceSome(t *testing.T, cl *kgo.Client, topic string, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range n {
		r := &kgo.Record{Topic: topic, Key: []byte(fmt.Sprint(i)), Value: []byte(fmt.Sprintf("v%d", i))}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("produce %d to %s: %v", i, topic, err)
		}
	}
}

// consumeCount reads topic from the start until it has read want records;
// opts are the client's security, if any.
func consumeCount(t *testing.T, seeds []string, topic string, want int, opts ...kgo.Opt) {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(seeds...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got := 0
	for got < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d from %s", got, want, topic)
		}
		got += fs.NumRecords()
	}
	if got != want {
		t.Fatalf("consumed %d records from %s, want %d", got, topic, want)
	}
}

// consumeCount is consumeCount through the running brokers, with the
// cluster's client security.
func (c *cluster) consumeCount(topic string, want int) {
	c.t.Helper()
	consumeCount(c.t, c.bootstrap(), topic, want, c.clientSecurity()...)
}

// partitionLeaders is partitionLeaders with the cluster's client security.
func (c *cluster) partitionLeaders(addr, topic string) (map[int32]int32, error) {
	return partitionLeaders(addr, topic, c.clientSecurity()...)
}

// TestClusterControllerFailover: 3 controllers and 3 brokers as separate
// processes. kill -9 the active controller: another is elected, admin
// requests work again, and no committed metadata is lost.
func TestClusterControllerFailover(t *testing.T) { clusterControllerFailover(t, startCluster(t, 3, 3)) }

// clusterControllerFailover is TestClusterControllerFailover on c, 3
// controllers and 3 brokers.
func clusterControllerFailover(t *testing.T, c *cluster) {
	c.createTopic("before", 6)
	cl := c.client(kgo.DefaultProduceTopic("before"))
	produceSome(t, cl, "before", 60)
	before := c.sameImages()

	leader := c.failOverController(20 * time.Second)
	c.createTopic("after", 3)
	produceSome(t, cl, "after", 30)
	c.consumeCount("before", 60)
	c.consumeCount("after", 30)
	after := c.sameImages()
	if after == before {
		t.Fatalf("metadata did not change after creating a topic: %s", after)
	}

	// The killed controller comes back and catches up; after a clean stop
	// every voter holds the same committed metadata log.
	c.controller(leader).start()
	c.createTopic("last", 1)
	c.sameImages()
	for _, n := range c.brokers {
		n.stop()
	}
	// Voters stopped one after another may differ by what the last ones
	// committed meanwhile (fencing the stopped brokers), never in what
	// they share.
	var logs [][]string
	for _, n := range c.controllers {
		n.stop()
		logs = append(logs, metadataLogBatches(t, n.dataDir))
	}
	for i, l := range logs {
		if len(l) < 5 {
			t.Fatalf("controller %d: only %d metadata batches", c.controllers[i].id, len(l))
		}
		shared := min(len(l), len(logs[0]))
		if !slices.Equal(l[:shared], logs[0][:shared]) {
			t.Fatalf("controller %d's metadata log differs from controller %d's within their shared %d batches", c.controllers[i].id, c.controllers[0].id, shared)
		}
	}
}

// TestClusterRestartAll: every node stops and starts again; the brokers
// describe the same cluster as before and the data is still there.
func TestClusterRestartAll(t *testing.T) {
	c := startCluster(t, 3, 3)
	c.createTopic("kept", 6)
	cl := c.client(kgo.DefaultProduceTopic("kept"))
	produceSome(t, cl, "kept", 60)
	cl.Close()
	before := c.sameImages()
	c.restartAll()
	after := c.sameImages()
	// Leader epochs move with each restart (controlled shutdown, then
	// unfencing), so compare what must not change: topics and leaders.
	if before == "" || after == "" {
		t.Fatal("no metadata")
	}
	consumeCount(t, c.bootstrap(), "kept", 60)
	c.createTopic("new", 1)
}

// TestClusterBrokerFencing: a broker killed with -9 is fenced after its
// session times out and its partitions (RF=1) go offline; restarted, it is
// unfenced and leads them again.
func TestClusterBrokerFencing(t *testing.T) { clusterBrokerFencing(t, startCluster(t, 3, 3)) }

// clusterBrokerFencing is TestClusterBrokerFencing on c, 3 controllers and
// 3 brokers.
func clusterBrokerFencing(t *testing.T, c *cluster) {
	c.createTopic("f", 6)
	victim := c.brokers[0]
	victim.kill9()
	other := c.brokers[1].addr()
	c.eventually("the killed broker's partitions go offline", 20*time.Second, func() error {
		leaders, err := c.partitionLeaders(other, "f")
		if err != nil {
			return err
		}
		offline := 0
		for _, l := range leaders {
			if l == victim.id {
				return fmt.Errorf("partition still led by the killed broker %d", victim.id)
			}
			if l == -1 {
				offline++
			}
		}
		if offline == 0 {
			return fmt.Errorf("no partition offline: %v", leaders)
		}
		return nil
	})
	victim.start()
	c.eventually("the broker leads its partitions again", 20*time.Second, func() error {
		leaders, err := c.partitionLeaders(other, "f")
		if err != nil {
			return err
		}
		for p, l := range leaders {
			if l == -1 {
				return fmt.Errorf("partition %d still offline", p)
			}
		}
		return nil
	})
	cl := c.client(kgo.DefaultProduceTopic("f"))
	produceSome(t, cl, "f", 30)
	c.consumeCount("f", 30)
}

// partitionLeaders returns each partition's leader as one broker sees it;
// opts are the client's security, if any.
func partitionLeaders(addr, topic string, opts ...kgo.Opt) (map[int32]int32, error) {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr)}, opts...)...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = &topic
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, err
	}
	leaders := map[int32]int32{}
	for _, t := range resp.Topics {
		if t.ErrorCode != 0 {
			return nil, fmt.Errorf("metadata for %s: error %d", topic, t.ErrorCode)
		}
		for _, p := range t.Partitions {
			leaders[p.Partition] = p.Leader
		}
	}
	return leaders, nil
}

// TestClusterSnapshotCatchUp: with small snapshot and segment sizes the
// controllers snapshot the metadata log and delete the segments below; a
// broker that joins afterwards catches up from the snapshot.
func TestClusterSnapshotCatchUp(t *testing.T) {
	c := startCluster(t, 3, 1,
		"metadata.log.max.record.bytes.between.snapshots=2048",
		"metadata.log.segment.bytes=4096")
	for i := range 30 {
		c.createTopic(fmt.Sprintf("s%02d", i), 2)
	}
	late := c.joinAfterSnapshot(150)
	leaders, err := partitionLeaders(late.addr(), "s29")
	if err != nil || len(leaders) != 2 {
		t.Fatalf("the new broker does not know topic s29: %v %v", leaders, err)
	}
	c.sameImages()
}

// joinAfterSnapshot waits until every controller has snapshotted the
// metadata log and deleted its first segment (with small
// metadata.log.max.record.bytes.between.snapshots and
// metadata.log.segment.bytes), then starts broker id and waits until it is
// registered, having caught up from a snapshot.
func (c *cluster) joinAfterSnapshot(id int32) *node {
	c.t.Helper()
	c.eventually("a snapshot and a cleaned metadata log on every controller", 30*time.Second, func() error {
		for _, n := range c.controllers {
			snaps, _ := filepath.Glob(filepath.Join(n.dataDir, "__cluster_metadata-0", "*.checkpoint"))
			if len(snaps) == 0 {
				return fmt.Errorf("controller %d has no snapshot", n.id)
			}
			if _, err := os.Stat(filepath.Join(n.dataDir, "__cluster_metadata-0", "00000000000000000000.log")); err == nil {
				return fmt.Errorf("controller %d still has its first metadata segment", n.id)
			}
		}
		return nil
	})
	late := &node{t: c.t, id: id, roles: "broker", dataDir: c.t.TempDir(), port: freePort(c.t)}
	c.configure(late)
	c.format(late)
	c.brokers = append(c.brokers, late)
	late.start()
	c.t.Cleanup(late.stop)
	c.waitBrokers(len(c.bootstrap()))
	if !strings.Contains(late.log(), "loaded metadata snapshot") {
		c.t.Fatalf("the new broker did not load a snapshot:\n%s", late.log())
	}
	return late
}

// killActiveController kills -9 the quorum leader and returns its id.
func (c *cluster) killActiveController() int32 {
	c.t.Helper()
	var leader int32
	c.eventually("quorum leader", 20*time.Second, func() (err error) {
		leader, err = c.quorumLeader()
		return err
	})
	c.controller(leader).kill9()
	c.t.Logf("killed controller %d, the active one", leader)
	return leader
}

// restartAll stops every node (brokers first) and starts them again
// (controllers first), then waits for every broker to register.
func (c *cluster) restartAll() {
	c.t.Helper()
	for _, n := range c.brokers {
		n.stop()
	}
	for _, n := range c.controllers {
		n.stop()
	}
	for _, n := range c.controllers {
		n.start()
	}
	for _, n := range c.brokers {
		n.start()
	}
	c.waitBrokers(len(c.brokers))
}

// failOverController kills the active controller with kill -9 and waits
// until another one leads the quorum; it returns the killed one's id.
func (c *cluster) failOverController(within time.Duration) int32 {
	c.t.Helper()
	killed := c.killActiveController()
	c.eventually("a new quorum leader", within, func() error {
		l, err := c.quorumLeader()
		if err != nil {
			return err
		}
		if l == killed {
			return fmt.Errorf("leader still %d", l)
		}
		return nil
	})
	return killed
}

// proxy forwards TCP connections to a target until cut.
type proxy struct {
	t      *testing.T
	ln     net.Listener
	target string
	mu     sync.Mutex
	cut    bool
	conns  []net.Conn
}

func startProxy(t *testing.T, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{t: t, ln: ln, target: target}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			p.mu.Lock()
			if p.cut {
				p.mu.Unlock()
				in.Close()
				continue
			}
			out, err := net.Dial("tcp", target)
			if err != nil {
				p.mu.Unlock()
				in.Close()
				continue
			}
			p.conns = append(p.conns, in, out)
			p.mu.Unlock()
			go func() { io.Copy(out, in); out.Close() }()
			go func() { io.Copy(in, out); in.Close() }()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		p.setCut(true)
	})
	return p
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

// setCut drops every connection and refuses new ones (cut) or lets them
// through again.
func (p *proxy) setCut(cut bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = cut
	if cut {
		for _, c := range p.conns {
			c.Close()
		}
		p.conns = nil
	}
}

// TestClusterIsolatedController: the active controller is cut off from the
// others (nothing reaches it). It cannot commit; the majority elects a new
// leader and carries on; healed, the old leader catches up with the log the
// majority committed.
func TestClusterIsolatedController(t *testing.T) {
	c := startClusterProxied(t, 3, 2, true)
	c.createTopic("a", 2)
	var leader int32
	c.eventually("quorum leader", 20*time.Second, func() (err error) {
		leader, err = c.quorumLeader()
		return err
	})
	c.proxies[leader].setCut(true)
	t.Logf("cut off active controller %d", leader)
	c.eventually("a new quorum leader", 30*time.Second, func() error {
		l, err := c.quorumLeader()
		if err != nil {
			return err
		}
		if l == leader {
			return fmt.Errorf("leader still %d", l)
		}
		return nil
	})
	c.createTopic("during", 2)
	// The isolated controller never committed the topic created while it
	// was cut off: no batch of its log names it.
	iso := c.controller(leader)
	before := metadataLogBatches(t, iso.dataDir)
	var majority []string
	for _, n := range c.controllers {
		if n.id != leader {
			majority = metadataLogBatches(t, n.dataDir)
			break
		}
	}
	if len(majority) == 0 || slices.Contains(before, majority[len(majority)-1]) {
		t.Fatalf("the isolated controller has the batch the majority committed while it was cut off")
	}
	c.proxies[leader].setCut(false)
	c.createTopic("after", 1)
	c.sameImages()
	c.eventually("the healed controller catches up", 20*time.Second, func() error {
		got := metadataLogBatches(t, iso.dataDir)
		var ref []string
		for _, n := range c.controllers {
			if n.id != leader {
				ref = metadataLogBatches(t, n.dataDir)
				break
			}
		}
		if len(got) < len(ref) {
			return fmt.Errorf("%d batches, the majority has %d", len(got), len(ref))
		}
		if !slices.Equal(got[:len(ref)], ref) {
			return fmt.Errorf("log differs from the majority's")
		}
		if len(got) <= len(before) {
			return fmt.Errorf("nothing new since the cut")
		}
		return nil
	})
}

// startCombined starts the README's three-node cluster: each node broker
// and controller, from config/kraft/combined-N.properties, with ports and
// directories overridden so tests run side by side. With secure, both
// listeners of each node are SASL_SSL, the broker one named BROKER. extra
// overrides come last.
func startCombined(t *testing.T, secure bool, extra ...string) *cluster {
	t.Helper()
	out, err := run(t, 10*time.Second, "", gregorBin, "storage", "random-uuid")
	if err != nil {
		t.Fatalf("random-uuid: %v\n%s", err, out)
	}
	c := &cluster{t: t, clusterID: strings.TrimSpace(out)}
	brokerListener := "PLAINTEXT"
	if secure {
		c.sec = newClusterSecurity(t)
		brokerListener = "BROKER"
	}
	ctrlPorts := map[int32]int{}
	var voters []string
	for i := range 3 {
		id := int32(i + 1)
		ctrlPorts[id] = freePort(t)
		voters = append(voters, fmt.Sprintf("%d@127.0.0.1:%d", id, ctrlPorts[id]))
	}
	c.voters = strings.Join(voters, ",")
	for i := range 3 {
		id := int32(i + 1)
		n := &node{t: t, id: id, roles: "broker,controller", dataDir: t.TempDir(), port: freePort(t),
			config: filepath.Join("..", "config", "kraft", fmt.Sprintf("combined-%d.properties", id))}
		n.props = []string{
			fmt.Sprintf("listeners=%s://%s,CONTROLLER://127.0.0.1:%d", brokerListener, n.addr(), ctrlPorts[id]),
			fmt.Sprintf("advertised.listeners=%s://%s", brokerListener, n.addr()),
			"controller.quorum.voters=" + c.voters,
			"log.dirs=" + n.dataDir,
			"gregor.http.listen=", // off: its port-0 bind could take a port freePort chose for another listener
			"broker.heartbeat.interval.ms=200",
			"broker.session.timeout.ms=2000",
		}
		if c.sec != nil {
			n.props = append(n.props, c.sec.props()...)
		}
		n.props = append(n.props, extra...)
		c.format(n)
		c.brokers = append(c.brokers, n)
		c.controllers = append(c.controllers, n)
	}
	t.Cleanup(func() {
		for _, n := range c.brokers {
			n.stop()
		}
		if c.sec != nil {
			c.checkNoPasswordLogged()
		}
	})
	for _, n := range c.brokers {
		n.start()
	}
	c.waitBrokers(3)
	return c
}

// TestClusterCombinedNodes: the README's three combined nodes; topics
// created through one node appear on all, and kill -9 of the active
// controller (which is also a broker) is survived.
func TestClusterCombinedNodes(t *testing.T) { clusterCombinedNodes(t, startCombined(t, false)) }

// clusterCombinedNodes is TestClusterCombinedNodes on c, three combined
// nodes.
func clusterCombinedNodes(t *testing.T, c *cluster) {
	c.createTopic("everywhere", 3)
	c.sameImages()
	cl := c.client(kgo.DefaultProduceTopic("everywhere"))
	produceSome(t, cl, "everywhere", 30)
	cl.Close()
	var leader int32
	c.eventually("quorum leader", 20*time.Second, func() (err error) {
		leader, err = c.quorumLeader()
		return err
	})
	c.controller(leader).kill9()
	t.Logf("killed node %d, the active controller", leader)
	c.createTopic("survived", 2)
	c.sameImages()
	restarted := c.controller(leader)
	restarted.start()
	// A restart inside the session timeout waits for the old session to
	// expire before registering again (DUPLICATE_BROKER_REGISTRATION).
	c.eventually("the restarted node unfenced", 30*time.Second, func() error {
		if n := restarted.logCount("unfenced by the controller"); n < 2 {
			return fmt.Errorf("unfenced %d times", n)
		}
		return nil
	})
	c.waitBrokers(3)
	c.consumeCount("everywhere", 30)

	// Stopped one by one, no node waits out its controlled shutdown: the
	// last one, with no broker left to take its leaderships and the quorum
	// gone, does not ask for one.
	for _, n := range c.controllers {
		n.stop()
	}
	for _, n := range c.controllers {
		if k := n.logCount("controlled shutdown not confirmed"); k > 0 {
			t.Errorf("node %d waited out its controlled shutdown %d times:\n%s", n.id, k, n.log())
		}
	}
	if last := c.controllers[len(c.controllers)-1]; last.logCount("no other live broker") == 0 {
		t.Errorf("the last node %d did not skip its controlled shutdown:\n%s", last.id, last.log())
	}
}

// TestClusterRefusesBadNodes: a broker formatted for another cluster, and a
// second broker with a node.id already in use, stop at start-up with a
// message saying why; the cluster is unaffected.
func TestClusterRefusesBadNodes(t *testing.T) {
	c := startCluster(t, 3, 1)
	refused := func(n *node, initialTimeoutMs int, want string) {
		t.Helper()
		n.props = append(n.props, fmt.Sprintf("initial.broker.registration.timeout.ms=%d", initialTimeoutMs))
		args := []string{"server"}
		for _, p := range n.props {
			args = append(args, "--override", p)
		}
		out, err := run(t, 60*time.Second, "", gregorBin, args...)
		if err == nil || !strings.Contains(out, want) {
			t.Fatalf("node %d: err=%v, want an exit saying %q:\n%s", n.id, err, want, out)
		}
	}

	other := &node{t: t, id: 120, roles: "broker", dataDir: t.TempDir(), port: freePort(t)}
	c.configure(other)
	wrong := &cluster{t: t, clusterID: "AAAAAAAAAAAAAAAAAAAAAA"}
	wrong.format(other)
	refused(other, 20000, "belongs to another cluster")

	dup := &node{t: t, id: c.brokers[0].id, roles: "broker", dataDir: t.TempDir(), port: freePort(t)}
	c.configure(dup)
	c.format(dup)
	refused(dup, 3000, "DUPLICATE_BROKER_REGISTRATION")

	c.createTopic("still-fine", 1)
	c.waitBrokers(1)
}

// TestClusterReplicationBasic: a topic with RF=3 gets its followers into
// the ISR; acks=all writes are on every replica, and after kill -9 of the
// leader the new leader serves every acknowledged record; the old leader,
// restarted, catches up into the ISR.
func TestClusterReplicationBasic(t *testing.T) { clusterReplicationBasic(t, startCluster(t, 3, 3)) }

// clusterReplicationBasic is TestClusterReplicationBasic on c, 3
// controllers and 3 brokers.
func clusterReplicationBasic(t *testing.T, c *cluster) {
	adm := kadm.NewClient(c.client())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, 1, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")}, "r3"); err != nil {
		t.Fatal(err)
	}
	c.eventually("all three replicas in the ISR", 30*time.Second, func() error {
		md, err := adm.Metadata(ctx, "r3")
		if err != nil {
			return err
		}
		p := md.Topics["r3"].Partitions[0]
		if len(p.ISR) != 3 {
			return fmt.Errorf("isr %v", p.ISR)
		}
		return nil
	})
	cl := c.client(kgo.DefaultProduceTopic("r3"), kgo.RequiredAcks(kgo.AllISRAcks()))
	produceSome(t, cl, "r3", 200)
	leaders, err := c.partitionLeaders(c.brokers[0].addr(), "r3")
	if err != nil {
		t.Fatal(err)
	}
	var victim *node
	for _, b := range c.brokers {
		if b.id == leaders[0] {
			victim = b
		}
	}
	victim.kill9()
	t.Logf("killed leader %d", victim.id)
	var other string
	for _, b := range c.brokers {
		if b.cmd != nil {
			other = b.addr()
			break
		}
	}
	c.eventually("a new leader", 20*time.Second, func() error {
		l, err := c.partitionLeaders(other, "r3")
		if err != nil {
			return err
		}
		if l[0] == victim.id || l[0] < 0 {
			return fmt.Errorf("leader %d", l[0])
		}
		return nil
	})
	c.consumeCount("r3", 200)
	produceSome(t, cl, "r3", 50)
	victim.start()
	c.eventually("the old leader back in the ISR", 30*time.Second, func() error {
		md, err := adm.Metadata(ctx, "r3")
		if err != nil {
			return err
		}
		if p := md.Topics["r3"].Partitions[0]; len(p.ISR) != 3 {
			return fmt.Errorf("isr %v", p.ISR)
		}
		return nil
	})
	c.consumeCount("r3", 250)
}
