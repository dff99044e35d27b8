package controller

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/metadata"
	"gregor/internal/raft"
)

// TestLifecycle runs the golden scripts in testdata/lifecycle against a
// controller on a real one-voter quorum (a raft.Node whose only voter is itself) with a fake clock. Rewrite the
// expected output with `go test ./internal/controller -run TestLifecycle -rewrite`.
//
// Commands:
//
//	register id=N [inc=S] [rack=S] [dirs=(S,...)] [cluster=S] [mv=(MIN,MAX)] [zk]
//	         [feature=(NAME,MIN,MAX)]  a supported feature besides metadata.version
//	         [prev-epoch=N]            the epoch of a clean shutdown (default -1)
//	heartbeat id=N [epoch=N] [offset=N|hw] [fence] [shutdown] [conn=S]
//	                          conn names the connection it comes on (none: in process)
//	close-conn name=S         the broker closes connection S (the peer-closed signal);
//	                          waits until the controller has handled it
//	tick ms=N                 advance the clock, then run the due timers
//	                          (session expiry, leader rebalance, unclean elections)
//	create-topic name=S partitions=N rf=N
//	create-partitions name=S count=N
//	set-config [topic=S|broker=N] key=S value=S   (neither: cluster default)
//	set-feature name=S level=N                    a FeatureLevelRecord, unchecked
//	leader id=N epoch=N       the quorum reports a leader
//	image                     compact summary of the controller's image
//	unregister id=N           UnregisterBroker
//
// and the replication commands of TestReplication (replication_test.go).
//
// Every command's output ends with the batches committed during it.
func TestLifecycle(t *testing.T) {
	datadriven.Walk(t, "testdata/lifecycle", func(t *testing.T, path string) {
		h := newHarness(t)
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			out := h.run(t, d)
			return out + h.rec.drain(h.c.Image())
		})
	})
}

type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// recorder is a raft.Listener that keeps the committed batches.
type recorder struct {
	mu      sync.Mutex
	batches []raft.Batch
	names   map[[16]byte]string // topic ids seen, for printing deleted topics too
}

func (r *recorder) HandleCommit(b raft.Batch) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.batches = append(r.batches, b)
}
func (r *recorder) HandleSnapshot(raft.Snapshot)  {}
func (r *recorder) HandleLeaderChange(_, _ int32) {}

func (r *recorder) drain(img *metadata.Image) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, t := range img.Topics.All() {
		r.names[t.ID] = t.Name
	}
	var b strings.Builder
	for _, batch := range r.batches {
		fmt.Fprintf(&b, "batch %d:\n", batch.BaseOffset)
		for _, rec := range batch.Records {
			fmt.Fprintf(&b, "  %s\n", formatRecord(rec, r.names))
		}
	}
	r.batches = nil
	return b.String()
}

type harness struct {
	t     *testing.T
	clock *fakeClock
	q     *raft.Node
	c     *Controller
	rec   *recorder
	// conns are the named connections heartbeats came on: closed when the
	// script closes them.
	conns map[string]chan struct{}
	// probes answers the controller's ProbeGone.
	probes *probeSet
}

// probeSet is a fake ProbeGone: the addresses the script said are gone.
// A probe of a gone address answers only once the script released the
// probes, so that the fencing it causes shows in a known command's output.
type probeSet struct {
	mu      sync.Mutex
	gone    map[string]bool
	probed  map[string]int
	release chan struct{}
}

func (p *probeSet) probe(ctx context.Context, addr string) bool {
	p.mu.Lock()
	p.probed[addr]++
	gone := p.gone[addr]
	p.mu.Unlock()
	if !gone {
		return false
	}
	select {
	case <-p.release:
		return true
	case <-ctx.Done():
		return false
	}
}

func (p *probeSet) total() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, c := range p.probed {
		n += c
	}
	return n
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	clock := &fakeClock{now: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)}
	cfg := testConfig()
	cfg.Now = clock.Now
	cfg.BrokerSessionTimeout = 9 * time.Second
	cfg.FenceOnConnectionClose = true
	// Only metadata.version, which the scripts' brokers register (the
	// feature levels are features_test.go's subject).
	cfg.Bootstrap = []metadata.Record{&metadata.FeatureLevelRecord{Name: metadata.MetadataVersionFeature, FeatureLevel: metadata.LatestMetadataVersion}}
	probes := &probeSet{gone: map[string]bool{}, probed: map[string]int{}, release: make(chan struct{})}
	cfg.ProbeGone = probes.probe
	q, err := raft.NewNode(raft.NodeConfig{Dir: metadataDir(t), NodeID: cfg.NodeID, Voters: []int32{cfg.NodeID}, Logger: cfg.Logger, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	c := New(cfg, q)
	c.placement = rand.New(rand.NewPCG(1, 2))
	rec := &recorder{names: map[[16]byte]string{}}
	q.Register(rec)
	if err := q.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Close()
		if err := q.Close(); err != nil {
			t.Error(err)
		}
	})
	waitActive(t, c, true)
	rec.drain(c.Image()) // the activation's metadata.version
	return &harness{t: t, clock: clock, q: q, c: c, rec: rec, conns: map[string]chan struct{}{}, probes: probes}
}

func waitActive(t *testing.T, c *Controller, want bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); c.Active() != want; {
		if time.Now().After(deadline) {
			t.Fatalf("Active() stayed %v", !want)
		}
		time.Sleep(time.Millisecond)
	}
}

// testID turns a short name into an id (its bytes, zero padded) and back.
func testID(s string) [16]byte {
	var id [16]byte
	copy(id[:], s)
	return id
}

func idName(id [16]byte) string {
	if id == ([16]byte{}) {
		return "0"
	}
	if id[0] == 0 {
		return fmt.Sprintf("reserved-%d", id[15])
	}
	return strings.TrimRight(string(id[:]), "\x00")
}

func (h *harness) run(t *testing.T, d *datadriven.TestData) string {
	ctx := context.Background()
	switch d.Cmd {
	case "register":
		return h.register(t, d)
	case "heartbeat":
		return h.heartbeat(t, d)
	case "close-conn":
		var name string
		d.ScanArgs(t, "name", &name)
		h.closeConn(t, name)
		return ""
	case "tick":
		var ms int
		d.ScanArgs(t, "ms", &ms)
		h.clock.advance(time.Duration(ms) * time.Millisecond)
		if err := h.c.submit(ctx, func() { h.c.runTimers(ctx) }); err != nil {
			t.Fatal(err)
		}
		return ""
	case "create-topic":
		var name string
		var partitions, rf int
		d.ScanArgs(t, "name", &name)
		d.ScanArgs(t, "partitions", &partitions)
		d.ScanArgs(t, "rf", &rf)
		req := kmsg.NewPtrCreateTopicsRequest()
		req.Version, req.Topics = 7, []kmsg.CreateTopicsRequestTopic{newTopic(name, int32(partitions), int16(rf))}
		rt := h.c.CreateTopics(ctx, req).Topics[0]
		return fmt.Sprintf("%s %s\n", errName(rt.ErrorCode), deref(rt.ErrorMessage))
	case "create-partitions":
		var name string
		var count int
		d.ScanArgs(t, "name", &name)
		d.ScanArgs(t, "count", &count)
		req := kmsg.NewPtrCreatePartitionsRequest()
		pt := kmsg.NewCreatePartitionsRequestTopic()
		pt.Topic, pt.Count = name, int32(count)
		req.Topics = []kmsg.CreatePartitionsRequestTopic{pt}
		rt := h.c.CreatePartitions(ctx, req).Topics[0]
		return fmt.Sprintf("%s %s\n", errName(rt.ErrorCode), deref(rt.ErrorMessage))
	case "set-config":
		var topic, broker, key, value string
		d.MaybeScanArgs(t, "topic", &topic)
		d.MaybeScanArgs(t, "broker", &broker)
		d.ScanArgs(t, "key", &key)
		d.ScanArgs(t, "value", &value)
		r := &metadata.ConfigRecord{ResourceType: metadata.ConfigResourceBroker, ResourceName: broker, Name: key, Value: &value}
		if topic != "" {
			r.ResourceType, r.ResourceName = metadata.ConfigResourceTopic, topic
		}
		if _, err := h.q.Append(ctx, []metadata.Record{r}); err != nil {
			t.Fatal(err)
		}
		return ""
	case "set-feature":
		var name string
		var level int
		d.ScanArgs(t, "name", &name)
		d.ScanArgs(t, "level", &level)
		if _, err := h.q.Append(ctx, []metadata.Record{&metadata.FeatureLevelRecord{Name: name, FeatureLevel: int16(level)}}); err != nil {
			t.Fatal(err)
		}
		return ""
	case "leader":
		var id, epoch int
		d.ScanArgs(t, "id", &id)
		d.ScanArgs(t, "epoch", &epoch)
		h.c.listener.HandleLeaderChange(int32(id), int32(epoch))
		waitActive(t, h.c, int32(id) == h.c.cfg.NodeID)
		return fmt.Sprintf("active=%v\n", h.c.Active())
	case "image":
		return imageSummary(h.c.Image())
	case "unregister":
		var id int
		d.ScanArgs(t, "id", &id)
		req := kmsg.NewPtrUnregisterBrokerRequest()
		req.BrokerID = int32(id)
		resp := h.c.UnregisterBroker(ctx, req)
		return fmt.Sprintf("%s %s\n", errName(resp.ErrorCode), deref(resp.ErrorMessage))
	case "gone":
		var addr string
		d.ScanArgs(t, "addr", &addr)
		h.probes.mu.Lock()
		h.probes.gone[addr] = true
		h.probes.mu.Unlock()
		return ""
	case "wait-probed":
		var n int
		d.ScanArgs(t, "n", &n)
		waitFor(t, fmt.Sprintf("%d probes", n), func() bool { return h.probes.total() >= n })
		h.probes.mu.Lock()
		defer h.probes.mu.Unlock()
		var b strings.Builder
		for _, addr := range slices.Sorted(maps.Keys(h.probes.probed)) {
			fmt.Fprintf(&b, "%s probed %d gone=%v\n", addr, h.probes.probed[addr], h.probes.gone[addr])
		}
		return b.String()
	case "release-probes":
		// Gone addresses answer now; wait for the broker their answer fences.
		var id int
		d.ScanArgs(t, "fenced", &id)
		close(h.probes.release)
		waitFor(t, fmt.Sprintf("broker %d fenced", id), func() bool {
			b := h.c.Image().Brokers[int32(id)]
			return b != nil && b.Fenced
		})
		return ""
	}
	if out, ok := h.runReplication(t, d); ok {
		return out
	}
	t.Fatalf("unknown command %q", d.Cmd)
	return ""
}

func (h *harness) register(t *testing.T, d *datadriven.TestData) string {
	var id int
	d.ScanArgs(t, "id", &id)
	inc, cluster := fmt.Sprintf("inc%d", id), h.c.cfg.ClusterID
	d.MaybeScanArgs(t, "inc", &inc)
	d.MaybeScanArgs(t, "cluster", &cluster)
	req := kmsg.NewPtrBrokerRegistrationRequest()
	req.Version = 4
	req.BrokerID, req.ClusterID, req.IncarnationID = int32(id), cluster, testID(inc)
	l := kmsg.NewBrokerRegistrationRequestListener()
	l.Name, l.Host, l.Port = "PLAINTEXT", "localhost", uint16(9090+id)
	req.Listeners = []kmsg.BrokerRegistrationRequestListener{l}
	if d.HasArg("rack") {
		var rack string
		d.ScanArgs(t, "rack", &rack)
		req.Rack = &rack
	}
	dirs := []string{fmt.Sprintf("dir%d", id)}
	if arg, ok := d.Arg("dirs"); ok {
		dirs = arg.Vals
	}
	for _, dir := range dirs {
		switch dir {
		case "none":
		case "reserved":
			req.LogDirs = append(req.LogDirs, [16]byte{15: 1})
		default:
			req.LogDirs = append(req.LogDirs, testID(dir))
		}
	}
	minV, maxV := metadata.MinMetadataVersion, metadata.LatestMetadataVersion
	if arg, ok := d.Arg("mv"); ok {
		lo, _ := strconv.Atoi(arg.Vals[0])
		hi, _ := strconv.Atoi(arg.Vals[1])
		minV, maxV = int16(lo), int16(hi)
	}
	if !d.HasArg("no-mv") {
		f := kmsg.NewBrokerRegistrationRequestFeature()
		f.Name, f.MinSupportedVersion, f.MaxSupportedVersion = metadata.MetadataVersionFeature, minV, maxV
		req.Features = []kmsg.BrokerRegistrationRequestFeature{f}
	}
	if arg, ok := d.Arg("feature"); ok {
		lo, _ := strconv.Atoi(arg.Vals[1])
		hi, _ := strconv.Atoi(arg.Vals[2])
		f := kmsg.NewBrokerRegistrationRequestFeature()
		f.Name, f.MinSupportedVersion, f.MaxSupportedVersion = arg.Vals[0], int16(lo), int16(hi)
		req.Features = append(req.Features, f)
	}
	d.MaybeScanArgs(t, "prev-epoch", &req.PreviousBrokerEpoch)
	req.IsMigratingZkBroker = d.HasArg("zk")
	epoch, err := h.c.registerBroker(context.Background(), req)
	if err != nil {
		return errLine(err)
	}
	return fmt.Sprintf("epoch=%d\n", epoch)
}

func (h *harness) heartbeat(t *testing.T, d *datadriven.TestData) string {
	var id int
	d.ScanArgs(t, "id", &id)
	req := kmsg.NewPtrBrokerHeartbeatRequest()
	req.BrokerID = int32(id)
	req.BrokerEpoch = -1
	if b := h.c.Image().Brokers[int32(id)]; b != nil {
		req.BrokerEpoch = b.Epoch
	}
	if d.HasArg("epoch") {
		d.ScanArgs(t, "epoch", &req.BrokerEpoch)
	}
	// By default the broker has seen everything committed.
	req.CurrentMetadataOffset = h.q.HighWatermark() - 1
	if arg, ok := d.Arg("offset"); ok && arg.Vals[0] != "hw" {
		req.CurrentMetadataOffset, _ = strconv.ParseInt(arg.Vals[0], 10, 64)
	}
	req.WantFence, req.WantShutdown = d.HasArg("fence"), d.HasArg("shutdown")
	var conn chan struct{}
	if d.HasArg("conn") {
		var name string
		d.ScanArgs(t, "conn", &name)
		if conn = h.conns[name]; conn == nil {
			conn = make(chan struct{})
			h.conns[name] = conn
		}
	}
	var peerClosed <-chan struct{}
	if conn != nil {
		peerClosed = conn
	}
	resp, err := h.c.heartbeat(context.Background(), req, peerClosed)
	if err != nil {
		return errLine(err)
	}
	return fmt.Sprintf("%s caught-up=%v fenced=%v should-shutdown=%v\n", errName(resp.ErrorCode), resp.IsCaughtUp, resp.IsFenced, resp.ShouldShutdown)
}

// closeConn closes a named connection and waits until no broker session
// watches it any more: the controller handled the close, or had already
// stopped watching the connection.
// waitFor polls cond until it holds, failing the test after 10s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func (h *harness) closeConn(t *testing.T, name string) {
	conn := h.conns[name]
	if conn == nil {
		t.Fatalf("no connection %q", name)
	}
	close(conn)
	for deadline := time.Now().Add(10 * time.Second); ; {
		watched := false
		if err := h.c.submit(context.Background(), func() {
			for _, s := range h.c.sessions {
				if s.conn == (<-chan struct{})(conn) {
					watched = true
				}
			}
		}); err != nil {
			t.Fatal(err)
		}
		if !watched {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("connection %q is still watched 10s after its close", name)
		}
		time.Sleep(time.Millisecond)
	}
}

// errLine prints an error as its Kafka code and message.
func errLine(err error) string {
	var ke *kerr.Error
	if !errors.As(err, &ke) {
		return fmt.Sprintf("error: %v\n", err)
	}
	return fmt.Sprintf("%s: %s\n", ke.Message, strings.TrimPrefix(strings.TrimPrefix(err.Error(), ke.Error()), ": "))
}

func errName(code int16) string {
	if code == 0 {
		return "NONE"
	}
	return kerr.ErrorForCode(code).(*kerr.Error).Message
}

func ints(s []int32) string {
	parts := make([]string, len(s))
	for i, v := range s {
		parts[i] = strconv.Itoa(int(v))
	}
	return "[" + strings.Join(parts, ",") + "]"
}

func formatRecord(r metadata.Record, names map[[16]byte]string) string {
	switch r := r.(type) {
	case *metadata.RegisterBrokerRecord:
		rack := "-"
		if r.Rack != nil {
			rack = *r.Rack
		}
		var dirs, features []string
		for _, dir := range r.LogDirs {
			dirs = append(dirs, idName(dir))
		}
		for _, f := range r.Features {
			features = append(features, fmt.Sprintf("%s:%d-%d", f.Name, f.MinSupportedVersion, f.MaxSupportedVersion))
		}
		return fmt.Sprintf("RegisterBroker id=%d epoch=%d inc=%s fenced=%v in-controlled-shutdown=%v rack=%s dirs=%v features=%v",
			r.BrokerID, r.BrokerEpoch, idName(r.IncarnationID), r.Fenced, r.InControlledShutdown, rack, dirs, features)
	case *metadata.BrokerRegistrationChangeRecord:
		return fmt.Sprintf("BrokerRegistrationChange id=%d epoch=%d fenced=%d in-controlled-shutdown=%d",
			r.BrokerID, r.BrokerEpoch, r.Fenced, r.InControlledShutdown)
	case *metadata.TopicRecord:
		names[r.TopicID] = r.Name
		return fmt.Sprintf("Topic %s", r.Name)
	case *metadata.PartitionRecord:
		return fmt.Sprintf("Partition %s-%d replicas=%s isr=%s leader=%d", names[r.TopicID], r.PartitionID, ints(r.Replicas), ints(r.ISR), r.Leader)
	case *metadata.PartitionChangeRecord:
		s := fmt.Sprintf("PartitionChange %s-%d", names[r.TopicID], r.PartitionID)
		if r.Leader != metadata.NoLeaderChange {
			s += fmt.Sprintf(" leader=%d", r.Leader)
		}
		if r.ISR != nil {
			s += " isr=" + ints(r.ISR)
		}
		if r.LeaderRecoveryState != metadata.NoLeaderRecoveryStateChange {
			s += fmt.Sprintf(" recovery=%d", r.LeaderRecoveryState)
		}
		if r.Replicas != nil {
			s += " replicas=" + ints(r.Replicas)
		}
		if r.AddingReplicas != nil {
			s += " adding=" + ints(r.AddingReplicas)
		}
		if r.RemovingReplicas != nil {
			s += " removing=" + ints(r.RemovingReplicas)
		}
		if r.EligibleLeaderReplicas != nil {
			s += " elr=" + ints(r.EligibleLeaderReplicas)
		}
		if r.LastKnownELR != nil {
			s += " last-known-elr=" + ints(r.LastKnownELR)
		}
		if r.Directories != nil {
			dirs := make([]string, len(r.Directories))
			for i, d := range r.Directories {
				dirs[i] = idName(d)
			}
			s += " dirs=[" + strings.Join(dirs, ",") + "]"
		}
		return s
	case *metadata.UnregisterBrokerRecord:
		return fmt.Sprintf("UnregisterBroker id=%d epoch=%d", r.BrokerID, r.BrokerEpoch)
	case *metadata.FeatureLevelRecord:
		return fmt.Sprintf("FeatureLevel %s=%d", r.Name, r.FeatureLevel)
	case *metadata.ConfigRecord:
		return fmt.Sprintf("Config %d/%q %s=%s", r.ResourceType, r.ResourceName, r.Name, deref(r.Value))
	}
	return fmt.Sprintf("%T", r)
}

func imageSummary(img *metadata.Image) string {
	var b strings.Builder
	b.WriteString("brokers:\n")
	for _, id := range img.SortedBrokerIDs() {
		br := img.Brokers[id]
		rack := "-"
		if br.Rack != nil {
			rack = *br.Rack
		}
		fmt.Fprintf(&b, "  %d epoch=%d fenced=%v in-controlled-shutdown=%v rack=%s\n", id, br.Epoch, br.Fenced, br.InControlledShutdown, rack)
	}
	b.WriteString("partitions:\n")
	for _, tp := range partitionsWhere(img, func(*metadata.Partition) bool { return true }) {
		p := tp.topic.Partition(tp.partition)
		fmt.Fprintf(&b, "  %s-%d replicas=%s isr=%s leader=%d leader-epoch=%d partition-epoch=%d", tp.topic.Name, tp.partition,
			ints(p.Replicas), ints(p.ISR), p.Leader, p.LeaderEpoch, p.PartitionEpoch)
		if p.LeaderRecoveryState != metadata.LeaderRecovered {
			b.WriteString(" recovering")
		}
		if reassigning(p) {
			fmt.Fprintf(&b, " adding=%s removing=%s", ints(p.AddingReplicas), ints(p.RemovingReplicas))
		}
		b.WriteString("\n")
	}
	return b.String()
}
