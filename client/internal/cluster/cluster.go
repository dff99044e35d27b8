// Package cluster is the client's view of a Kafka cluster: one connection per
// broker, and the topic metadata (partitions and their leaders) learned from
// Metadata requests. It decides nothing about producing or consuming.
package cluster

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/client/internal/wire"
)

// Config is what the cluster view needs from the client's configuration.
type Config struct {
	Bootstrap      []string // bootstrap.servers
	ClientID       string   // client.id
	Dial           wire.DialFunc
	RequestTimeout time.Duration // request.timeout.ms, for metadata requests
	// AllowAutoCreate is allow.auto.create.topics: whether a Metadata
	// request for an unknown topic asks the broker to create it.
	AllowAutoCreate bool
}

// Partition is one partition's metadata.
type Partition struct {
	ID          int32
	Leader      int32 // -1 when the partition has no leader
	LeaderEpoch int32
	Err         error // the partition's error in the Metadata response, e.g. LEADER_NOT_AVAILABLE
}

// Topic is one topic's metadata. Partitions is indexed by partition id.
type Topic struct {
	Name       string
	Err        error // the topic's error, e.g. UNKNOWN_TOPIC_OR_PARTITION
	Partitions []Partition
	// Available lists the partitions with a leader, in id order.
	Available []int32
}

// snapshot is one immutable view of the metadata, replaced whole.
type snapshot struct {
	brokers map[int32]string
	topics  map[string]*Topic
}

// Cluster holds the broker connections and the metadata.
type Cluster struct {
	cfg  Config
	meta atomic.Pointer[snapshot]

	mu     sync.Mutex
	conns  map[int32]*wire.Conn
	dialMu map[int32]*sync.Mutex // one dial per broker at a time
	seed   *wire.Conn            // a connection to a bootstrap server
	closed bool
}

// New returns a cluster view; it connects lazily.
func New(cfg Config) (*Cluster, error) {
	if len(cfg.Bootstrap) == 0 {
		return nil, errors.New("bootstrap.servers is empty")
	}
	c := &Cluster{cfg: cfg, conns: map[int32]*wire.Conn{}, dialMu: map[int32]*sync.Mutex{}}
	c.meta.Store(&snapshot{brokers: map[int32]string{}, topics: map[string]*Topic{}})
	return c, nil
}

// Topic returns the last known metadata of topic, or nil.
func (c *Cluster) Topic(name string) *Topic { return c.meta.Load().topics[name] }

// Topics returns the names of the topics with known metadata.
func (c *Cluster) Topics() []string {
	m := c.meta.Load().topics
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	return names
}

// Conn returns the connection to broker node, dialing it when there is none
// or the last one failed.
func (c *Cluster) Conn(ctx context.Context, node int32) (*wire.Conn, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, errors.New("client closed")
	}
	if cn := c.conns[node]; cn != nil && !cn.Closed() {
		c.mu.Unlock()
		return cn, nil
	}
	dm := c.dialMu[node]
	if dm == nil {
		dm = new(sync.Mutex)
		c.dialMu[node] = dm
	}
	c.mu.Unlock()

	dm.Lock()
	defer dm.Unlock()
	c.mu.Lock()
	if cn := c.conns[node]; cn != nil && !cn.Closed() {
		c.mu.Unlock()
		return cn, nil
	}
	c.mu.Unlock()
	addr, ok := c.meta.Load().brokers[node]
	if !ok {
		return nil, fmt.Errorf("broker %d is not in the metadata", node)
	}
	cn, err := wire.Dial(ctx, c.cfg.Dial, addr, c.cfg.ClientID)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		cn.Close()
		return nil, errors.New("client closed")
	}
	if old := c.conns[node]; old != nil {
		old.Close()
	}
	c.conns[node] = cn
	c.mu.Unlock()
	return cn, nil
}

// anyConn returns a connection to some broker: a known one, else a
// bootstrap server.
func (c *Cluster) anyConn(ctx context.Context) (*wire.Conn, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, errors.New("client closed")
	}
	for _, cn := range c.conns {
		if !cn.Closed() {
			c.mu.Unlock()
			return cn, nil
		}
	}
	if c.seed != nil && !c.seed.Closed() {
		cn := c.seed
		c.mu.Unlock()
		return cn, nil
	}
	c.mu.Unlock()

	// Known brokers first (bootstrap servers may be gone), then the
	// bootstrap list, each in random order.
	var addrs []string
	for _, a := range c.meta.Load().brokers {
		addrs = append(addrs, a)
	}
	boot := append([]string(nil), c.cfg.Bootstrap...)
	rand.Shuffle(len(boot), func(i, j int) { boot[i], boot[j] = boot[j], boot[i] })
	addrs = append(addrs, boot...)
	var errs []error
	for _, a := range addrs {
		cn, err := wire.Dial(ctx, c.cfg.Dial, a, c.cfg.ClientID)
		if err != nil {
			errs = append(errs, err)
			if ctx.Err() != nil {
				break
			}
			continue
		}
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			cn.Close()
			return nil, errors.New("client closed")
		}
		if c.seed != nil {
			c.seed.Close()
		}
		c.seed = cn
		c.mu.Unlock()
		return cn, nil
	}
	return nil, fmt.Errorf("no broker reachable: %w", errors.Join(errs...))
}

// Refresh asks a broker for the metadata of topics and replaces what is
// known of them (and of the brokers).
func (c *Cluster) Refresh(ctx context.Context, topics []string) error {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.RequestTimeout)
	defer cancel()
	cn, err := c.anyConn(ctx)
	if err != nil {
		return err
	}
	req := kmsg.NewPtrMetadataRequest()
	req.AllowAutoTopicCreation = c.cfg.AllowAutoCreate
	for _, t := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(t)
		req.Topics = append(req.Topics, rt)
	}
	if len(topics) == 0 {
		req.Topics = []kmsg.MetadataRequestTopic{} // none, not all
	}
	req.Version = 12
	r, err := cn.Do(ctx, req, true)
	if err != nil {
		return fmt.Errorf("metadata: %w", err)
	}
	resp := r.(*kmsg.MetadataResponse)
	old := c.meta.Load()
	next := &snapshot{brokers: make(map[int32]string, len(resp.Brokers)), topics: make(map[string]*Topic, len(old.topics))}
	for _, b := range resp.Brokers {
		next.brokers[b.NodeID] = fmt.Sprintf("%s:%d", b.Host, b.Port)
	}
	if len(next.brokers) == 0 {
		next.brokers = old.brokers
	}
	for n, t := range old.topics {
		next.topics[n] = t
	}
	for _, rt := range resp.Topics {
		if rt.Topic == nil {
			continue
		}
		t := &Topic{Name: *rt.Topic, Err: kerr.ErrorForCode(rt.ErrorCode)}
		if t.Err == nil {
			maxID := int32(-1)
			for _, p := range rt.Partitions {
				maxID = max(maxID, p.Partition)
			}
			t.Partitions = make([]Partition, maxID+1)
			for i := range t.Partitions {
				t.Partitions[i] = Partition{ID: int32(i), Leader: -1, Err: kerr.LeaderNotAvailable}
			}
			for _, p := range rt.Partitions {
				t.Partitions[p.Partition] = Partition{ID: p.Partition, Leader: p.Leader, LeaderEpoch: p.LeaderEpoch,
					Err: kerr.ErrorForCode(p.ErrorCode)}
			}
			for _, p := range t.Partitions {
				if _, ok := next.brokers[p.Leader]; ok && p.Leader >= 0 {
					t.Available = append(t.Available, p.ID)
				}
			}
		}
		next.topics[t.Name] = t
	}
	c.meta.Store(next)
	c.closeStale(next.brokers)
	return nil
}

// closeStale closes connections to brokers that left the cluster.
func (c *Cluster) closeStale(brokers map[int32]string) {
	c.mu.Lock()
	var stale []*wire.Conn
	for id, cn := range c.conns {
		if addr, ok := brokers[id]; !ok || addr != cn.Addr() {
			stale = append(stale, cn)
			delete(c.conns, id)
		}
	}
	c.mu.Unlock()
	for _, cn := range stale {
		cn.Close()
	}
}

// Forget drops topic from the metadata (the producer stops refreshing
// topics it has not used for metadata.max.idle.ms).
func (c *Cluster) Forget(topic string) {
	for {
		old := c.meta.Load()
		if _, ok := old.topics[topic]; !ok {
			return
		}
		next := &snapshot{brokers: old.brokers, topics: make(map[string]*Topic, len(old.topics))}
		for n, t := range old.topics {
			if n != topic {
				next.topics[n] = t
			}
		}
		if c.meta.CompareAndSwap(old, next) {
			return
		}
	}
}

// Request sends req to broker node (any broker when node is -1) within
// request.timeout.ms.
func (c *Cluster) Request(ctx context.Context, node int32, req kmsg.Request) (kmsg.Response, error) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.RequestTimeout)
	defer cancel()
	var cn *wire.Conn
	var err error
	if node < 0 {
		cn, err = c.anyConn(ctx)
	} else {
		cn, err = c.Conn(ctx, node)
	}
	if err != nil {
		return nil, err
	}
	return cn.Do(ctx, req, true)
}

// Close closes every connection.
func (c *Cluster) Close() {
	c.mu.Lock()
	c.closed = true
	conns := c.conns
	c.conns = map[int32]*wire.Conn{}
	seed := c.seed
	c.seed = nil
	c.mu.Unlock()
	for _, cn := range conns {
		cn.Close()
	}
	if seed != nil {
		seed.Close()
	}
}
