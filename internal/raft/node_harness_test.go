package raft

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"

	"go.etcd.io/raft/v3/raftpb"

	"gregor/internal/metadata"
)

// testNet delivers Raft messages between in-process nodes, through their
// protobuf encoding as the real transport does. Links can be cut one way.
type testNet struct {
	mu    sync.Mutex
	peers map[int32]*testPeer
	cut   map[[2]int32]bool
	sent  map[int32]int // messages sent per node, for the storage-failure test
}

type testPeer struct {
	node  *Node
	inbox chan raftpb.Message
	stop  chan struct{}
	done  chan struct{}
}

func newTestNet() *testNet {
	return &testNet{peers: map[int32]*testPeer{}, cut: map[[2]int32]bool{}, sent: map[int32]int{}}
}

type testTransport struct {
	net  *testNet
	from int32
}

func (tr testTransport) Send(msgs []raftpb.Message) {
	tn := tr.net
	tn.mu.Lock()
	defer tn.mu.Unlock()
	tn.sent[tr.from] += len(msgs)
	for _, m := range msgs {
		to := NodeIDOf(m.To)
		p := tn.peers[to]
		if p == nil || tn.cut[[2]int32{tr.from, to}] {
			if m.Type == raftpb.MsgSnap {
				if src := tn.peers[tr.from]; src != nil {
					src.node.ReportSnapshot(m.To, true)
				}
			}
			continue
		}
		b, err := m.Marshal()
		if err != nil {
			panic(err)
		}
		var copied raftpb.Message
		if err := copied.Unmarshal(b); err != nil {
			panic(err)
		}
		select {
		case p.inbox <- copied:
		default: // a full inbox drops, as a network may
		}
	}
}

// attach starts delivering messages to n.
func (tn *testNet) attach(id int32, n *Node) {
	p := &testPeer{node: n, inbox: make(chan raftpb.Message, 1024), stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		for {
			select {
			case m := <-p.inbox:
				_ = n.Step(context.Background(), m)
			case <-p.stop:
				return
			}
		}
	}()
	tn.mu.Lock()
	tn.peers[id] = p
	tn.mu.Unlock()
}

// detach stops delivering to id and waits for its delivery goroutine.
func (tn *testNet) detach(id int32) {
	tn.mu.Lock()
	p := tn.peers[id]
	delete(tn.peers, id)
	tn.mu.Unlock()
	if p != nil {
		close(p.stop)
		<-p.done
	}
}

// isolate cuts (or heals) every link between id and the others.
func (tn *testNet) isolate(id int32, others []int32, cut bool) {
	tn.mu.Lock()
	defer tn.mu.Unlock()
	for _, o := range others {
		if o == id {
			continue
		}
		tn.cut[[2]int32{id, o}] = cut
		tn.cut[[2]int32{o, id}] = cut
	}
}

func (tn *testNet) sentBy(id int32) int {
	tn.mu.Lock()
	defer tn.mu.Unlock()
	return tn.sent[id]
}

// recorder is a listener that keeps what it is told.
type recorder struct {
	mu      sync.Mutex
	batches []Batch
	snaps   []Snapshot
	leaders [][2]int32
}

func (r *recorder) HandleCommit(b Batch) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.batches = append(r.batches, b)
}

func (r *recorder) HandleSnapshot(s Snapshot) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.snaps = append(r.snaps, s)
	r.batches = nil // the snapshot replaces everything before it
}

func (r *recorder) HandleLeaderChange(leader, epoch int32) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.leaders = append(r.leaders, [2]int32{leader, epoch})
}

// batchIDs summarizes the recorded batches as (base, last, epoch, records).
func (r *recorder) batchIDs() [][4]int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out [][4]int64
	for _, b := range r.batches {
		out = append(out, [4]int64{b.BaseOffset, b.LastOffset, int64(b.Epoch), int64(len(b.Records))})
	}
	return out
}

func (r *recorder) snapshotCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.snaps)
}

// testCluster runs voters in-process in temporary directories.
type testCluster struct {
	t       *testing.T
	net     *testNet
	voters  []int32
	root    string
	nodes   map[int32]*Node
	loaders map[int32]*metadata.Loader
	recs    map[int32]*recorder
	tweak   func(*NodeConfig)
}

func newTestCluster(t *testing.T, voters ...int32) *testCluster {
	return &testCluster{t: t, net: newTestNet(), voters: voters, root: t.TempDir(),
		nodes: map[int32]*Node{}, loaders: map[int32]*metadata.Loader{}, recs: map[int32]*recorder{}}
}

func (c *testCluster) dir(id int32) string {
	return filepath.Join(c.root, fmt.Sprintf("node%d", id), "__cluster_metadata-0")
}

// start opens and starts a voter from its directory.
func (c *testCluster) start(id int32) *Node {
	c.t.Helper()
	loader := metadata.NewLoader("c1", quietLogger())
	cfg := NodeConfig{Dir: c.dir(id), NodeID: id, ClusterID: "c1", Voters: c.voters,
		Transport: testTransport{net: c.net, from: id}, TickInterval: 5 * time.Millisecond,
		ElectionTimeout: 60 * time.Millisecond, Snapshot: loaderSnapshot(loader), Logger: quietLogger()}
	if c.tweak != nil {
		c.tweak(&cfg)
	}
	n, err := NewNode(cfg)
	if err != nil {
		c.t.Fatal(err)
	}
	rec := &recorder{}
	n.Register(loader)
	n.Register(rec)
	if err := n.Start(context.Background()); err != nil {
		c.t.Fatal(err)
	}
	c.nodes[id], c.loaders[id], c.recs[id] = n, loader, rec
	c.net.attach(id, n)
	return n
}

func (c *testCluster) stop(id int32) {
	c.t.Helper()
	c.net.detach(id)
	if n := c.nodes[id]; n != nil {
		if err := n.Close(); err != nil {
			c.t.Errorf("close node %d: %v", id, err)
		}
	}
	delete(c.nodes, id)
}

func (c *testCluster) shutdown() {
	for id := range c.nodes {
		c.stop(id)
	}
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitLeader waits until one running node among candidates leads (its
// listeners were told) and returns it.
func (c *testCluster) waitLeader(candidates ...int32) int32 {
	c.t.Helper()
	if len(candidates) == 0 {
		candidates = c.voters
	}
	var leader int32 = -1
	waitFor(c.t, "a leader", func() bool {
		for _, id := range candidates {
			if n := c.nodes[id]; n != nil {
				if l, _ := n.Leader(); l == id {
					leader = id
					return true
				}
			}
		}
		return false
	})
	return leader
}

// append appends on the current leader among candidates, retrying while
// leadership moves.
func (c *testCluster) append(recs []metadata.Record, candidates ...int32) int64 {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		leader := c.waitLeader(candidates...)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		last, err := c.nodes[leader].Append(ctx, recs)
		cancel()
		if err == nil {
			return last
		}
		if !errors.Is(err, ErrNotLeader) || time.Now().After(deadline) {
			c.t.Fatalf("append on leader %d: %v", leader, err)
		}
	}
}

// waitConverged waits until every listed node's listeners reached offset
// and their images agree.
func (c *testCluster) waitConverged(lastOffset int64, ids ...int32) {
	c.t.Helper()
	waitFor(c.t, fmt.Sprintf("nodes %v at offset %d", ids, lastOffset), func() bool {
		for _, id := range ids {
			if c.loaders[id].Image().Offset < lastOffset {
				return false
			}
		}
		return true
	})
	want := c.loaders[ids[0]].Image()
	for _, id := range ids[1:] {
		got := c.loaders[id].Image()
		if got.Offset != want.Offset || got.Epoch != want.Epoch || !reflect.DeepEqual(maps.Collect(got.Topics.All()), maps.Collect(want.Topics.All())) ||
			!reflect.DeepEqual(got.Features, want.Features) {
			c.t.Fatalf("node %d image (offset %d epoch %d) differs from node %d (offset %d epoch %d)",
				id, got.Offset, got.Epoch, ids[0], want.Offset, want.Epoch)
		}
	}
}

func featureRecords() []metadata.Record {
	return []metadata.Record{&metadata.FeatureLevelRecord{Name: "metadata.version", FeatureLevel: 25}}
}

// loaderSnapshot is a node's snapshot source as the controller's is: the
// image's records, when the image is exactly at the end offset.
func loaderSnapshot(l *metadata.Loader) SnapshotSource {
	return func(end int64) ([][]byte, bool) {
		img := l.Image()
		if img.Offset+1 != end {
			return nil, false
		}
		return metadata.EncodeAll(img.Records()), true
	}
}
