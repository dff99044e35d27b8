package replica

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"net"
	"strconv"
	"sync"
	"time"
	"unicode/utf16"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/log"
	"gregor/internal/partition"
	"gregor/internal/record"
	"gregor/internal/rpc"
)

// FetcherConfig is the follower side's settings (Kafka's replica.fetch.*).
type FetcherConfig struct {
	ClusterID string
	// Listener is inter.broker.listener.name: the leader endpoint fetched from.
	Listener string
	// Security is how the follower authenticates to that listener.
	Security    rpc.Security
	MaxBytes    int32         // replica.fetch.max.bytes
	ResponseMax int32         // replica.fetch.response.max.bytes
	MaxWait     time.Duration // replica.fetch.wait.max.ms
	MinBytes    int32         // replica.fetch.min.bytes
	Backoff     time.Duration // replica.fetch.backoff.ms
	// NumFetchers is num.replica.fetchers: fetchers per source broker, each
	// with its own connection, fetch session and fetch in flight (at least 1).
	NumFetchers int
}

// fetchVersion names topics (v12) and carries LastFetchedEpoch and
// DivergingEpoch (KIP-320), so a follower truncates by leader epoch.
const fetchVersion = 12

// fetcherKey names a fetcher: its source broker and its index among that
// broker's num.replica.fetchers fetchers.
type fetcherKey struct {
	leader int32
	id     int
}

// fetcherID is the fetcher of a source broker that fetches tp, as Kafka's
// AbstractFetcherManager.getFetcherId hashes it: abs(31 * hash(topic) +
// partition) mod the fetcher count, with Java's String.hashCode and
// Utils.abs (which maps MinInt32 to 0) over int32 arithmetic.
func fetcherID(tp log.TopicPartition, numFetchers int) int {
	if numFetchers <= 1 {
		return 0
	}
	h := 31*javaStringHash(tp.Topic) + tp.Partition
	if h == math.MinInt32 {
		h = 0
	} else if h < 0 {
		h = -h
	}
	return int(h) % numFetchers
}

// javaStringHash is Java's String.hashCode: s[0]*31^(n-1) + ... + s[n-1]
// over the string's UTF-16 code units, in int32 arithmetic.
func javaStringHash(s string) int32 {
	var h int32
	for _, u := range utf16.Encode([]rune(s)) {
		h = 31*h + int32(u)
	}
	return h
}

// fetcher pulls the partitions this broker follows from one leader, as
// Kafka's ReplicaFetcherThread does: one Fetch at a time for all of them,
// in an incremental fetch session (KIP-227) when the leader grants one,
// batches appended unchanged, the high watermark learnt from the answers.
// A leader's partitions are spread over num.replica.fetchers fetchers
// (fetcherID), so that many fetches to it may be in flight at once.
type fetcher struct {
	m      *Manager
	key    fetcherKey
	addr   string
	logger *slog.Logger

	mu    sync.Mutex
	parts map[log.TopicPartition]*partition.Partition
	// lags is how far each partition's log end was behind the leader's
	// high watermark at its last answer (Kafka's FetcherLagMetrics), under mu.
	lags map[log.TopicPartition]int64

	// session is the fetch session with the leader (fetcher_session.go),
	// used by run's goroutine only.
	session followerSession

	stop context.CancelFunc
	done chan struct{}
}

func (m *Manager) newFetcher(key fetcherKey, addr string) *fetcher {
	ctx, cancel := context.WithCancel(context.Background())
	f := &fetcher{m: m, key: key, addr: addr, logger: m.cfg.Logger.With("component", "replica-fetcher", "leader", key.leader, "fetcher", key.id),
		parts: map[log.TopicPartition]*partition.Partition{}, lags: map[log.TopicPartition]int64{}, stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(f.done)
		f.run(ctx)
	}()
	return f
}

func (f *fetcher) add(p *partition.Partition) {
	f.mu.Lock()
	f.parts[p.TopicPartition] = p
	f.mu.Unlock()
}

// remove drops a partition; it reports whether the fetcher is now idle.
func (f *fetcher) remove(tp log.TopicPartition) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.parts, tp)
	delete(f.lags, tp)
	return len(f.parts) == 0
}

func (f *fetcher) close() {
	f.stop()
	<-f.done
}

func (f *fetcher) run(ctx context.Context) {
	cfg := f.m.repl.Fetcher
	client := rpc.NewClient(f.addr, "gregor-replica-fetcher-"+strconv.Itoa(int(f.m.cfg.NodeID))+"-"+strconv.Itoa(f.key.id), cfg.Security)
	// fetchOnce is done with each answer (its records are in the log)
	// before it sends the next fetch.
	client.ReuseResponseBuffer()
	defer client.Close()
	var lastErr string
	for ctx.Err() == nil {
		err := f.fetchOnce(ctx, client)
		if err == nil {
			lastErr = ""
			continue
		}
		if ctx.Err() != nil {
			return
		}
		if msg := err.Error(); msg != lastErr {
			f.logger.Warn("replica fetch failed", "err", err)
			lastErr = msg
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(cfg.Backoff):
		}
	}
}

func (f *fetcher) snapshot() []*partition.Partition {
	f.mu.Lock()
	defer f.mu.Unlock()
	parts := make([]*partition.Partition, 0, len(f.parts))
	for _, p := range f.parts {
		parts = append(parts, p)
	}
	return parts
}

func (f *fetcher) fetchOnce(ctx context.Context, client *rpc.Client) error {
	cfg := f.m.repl.Fetcher
	parts := f.snapshot()
	if len(parts) == 0 {
		select {
		case <-ctx.Done():
		case <-time.After(cfg.MaxWait):
		}
		return nil
	}
	req := kmsg.NewPtrFetchRequest()
	req.Version = fetchVersion
	req.ClusterID = &cfg.ClusterID
	req.ReplicaID = f.m.cfg.NodeID
	req.MaxWaitMillis = int32(cfg.MaxWait.Milliseconds())
	req.MinBytes = cfg.MinBytes
	req.MaxBytes = cfg.ResponseMax
	// The leader epoch each partition was fetched in: an answer is applied
	// only while the partition still follows in that epoch.
	epochs := map[log.TopicPartition]int32{}
	want := make(map[log.TopicPartition]kmsg.FetchRequestTopicPartition, len(parts))
	order := make([]log.TopicPartition, 0, len(parts))
	for _, p := range parts {
		if f.followerThrottled(p) {
			continue // asked for again once the rate is under the bound
		}
		l := p.Log()
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition = p.TopicPartition.Partition
		rp.CurrentLeaderEpoch = p.LeaderEpoch()
		epochs[p.TopicPartition] = rp.CurrentLeaderEpoch
		rp.FetchOffset = l.LogEndOffset()
		rp.LogStartOffset = l.LogStartOffset()
		rp.LastFetchedEpoch = -1
		if e, ok := l.LatestEpoch(); ok {
			rp.LastFetchedEpoch = e
		}
		rp.PartitionMaxBytes = cfg.MaxBytes
		want[p.TopicPartition] = rp
		order = append(order, p.TopicPartition)
	}
	if len(want) == 0 {
		// Every partition waits for the follower throttle's rate to fall:
		// back off, as Kafka's fetcher does with nothing to fetch.
		select {
		case <-ctx.Done():
		case <-time.After(cfg.Backoff):
		}
		return nil
	}
	// Only the partitions whose parameters changed, in a fetch session.
	f.session.fill(req, want, order)
	rctx, cancel := context.WithTimeout(ctx, cfg.MaxWait+30*time.Second)
	defer cancel()
	kresp, err := client.Request(rctx, req)
	if err != nil {
		f.session.failed()
		return err
	}
	resp := kresp.(*kmsg.FetchResponse)
	f.session.answered(resp)
	switch resp.ErrorCode {
	case 0:
	case kerr.FetchSessionIDNotFound.Code, kerr.InvalidFetchSessionEpoch.Code:
		// The session is gone (evicted, or the leader restarted): the
		// next fetch is a full one, at once, as Kafka's fetcher does.
		return nil
	default:
		return fmt.Errorf("fetch from leader %d: %w", f.key.leader, kerr.ErrorForCode(resp.ErrorCode))
	}
	var firstErr error
	for _, t := range resp.Topics {
		for i := range t.Partitions {
			rp := &t.Partitions[i]
			tp := log.TopicPartition{Topic: t.Topic, Partition: rp.Partition}
			f.mu.Lock()
			p := f.parts[tp]
			f.mu.Unlock()
			if p == nil {
				continue // removed meanwhile
			}
			// Under the partition's lock, so it cannot become leader (and
			// start its epoch at the log end) halfway through the append.
			ran, err := p.AsFollower(epochs[tp], func() error { return f.handle(p, rp) })
			if ran {
				// Consumers fetching from this follower (KIP-392) may
				// have more to read; outside the partition's lock, which
				// their conditions take.
				f.m.partitionChanged(tp)
			}
			if err != nil && firstErr == nil {
				firstErr = fmt.Errorf("%s: %w", tp, err)
			}
		}
	}
	return firstErr
}

// followerThrottled is Kafka's shouldFollowerThrottle: a throttled
// partition this follower is behind on (its lag behind the leader's high
// watermark not known to be 0) is left out of the fetch while the
// follower throttle's rate is over its bound.
func (f *fetcher) followerThrottled(p *partition.Partition) bool {
	q := f.m.repl.FollowerQuota
	if q == nil || !q.IsThrottled(p.TopicPartition.Topic, p.TopicPartition.Partition) {
		return false
	}
	f.mu.Lock()
	lag, known := f.lags[p.TopicPartition]
	f.mu.Unlock()
	inSync := known && lag <= 0
	return !inSync && q.IsQuotaExceeded()
}

// handle applies one partition's answer as partition.DecideFetchAnswer and
// AdoptLeaderOffsets decide: truncate on a diverging epoch (or an offset
// out of range), append the batches, adopt the leader's high watermark and
// log start.
func (f *fetcher) handle(p *partition.Partition, rp *kmsg.FetchResponseTopicPartition) error {
	l := p.Log()
	a := partition.FetchAnswer{Err: kerr.ErrorForCode(rp.ErrorCode), HighWatermark: rp.HighWatermark, LogStartOffset: rp.LogStartOffset,
		DivergingEpoch: rp.DivergingEpoch.Epoch, DivergingEndOffset: rp.DivergingEpoch.EndOffset}
	switch d := partition.DecideFetchAnswer(l, a); d.Step {
	case partition.FollowerFail:
		return d.Err
	case partition.FollowerStartOver:
		f.logger.Warn("behind the leader's log start: starting over", "partition", p.TopicPartition, "logStart", d.Offset)
		return l.TruncateFullyAndStartAt(d.Offset)
	case partition.FollowerTruncate:
		if d.Offset < l.LogEndOffset() {
			f.logger.Info("truncating to the leader's log", "partition", p.TopicPartition, "from", l.LogEndOffset(), "to", d.Offset,
				"divergingEpoch", rp.DivergingEpoch.Epoch, "error", a.Err)
		}
		if err := l.TruncateTo(d.Offset); err != nil {
			return fmt.Errorf("truncate: %w", err)
		}
		return nil
	}
	if len(rp.RecordBatches) > 0 {
		batches := completeBatches(rp.RecordBatches)
		if len(batches) > 0 {
			if _, err := l.AppendAsFollower(batches); err != nil {
				return fmt.Errorf("append as follower: %w", err)
			}
			f.m.replicationBytesIn.Add(int64(len(batches)))
			if q := f.m.repl.FollowerQuota; q != nil && q.IsThrottled(p.TopicPartition.Topic, p.TopicPartition.Partition) {
				q.Record(len(batches))
			}
		}
	}
	if rp.HighWatermark >= 0 {
		lag := max(rp.HighWatermark-l.LogEndOffset(), 0)
		f.mu.Lock()
		if f.parts[p.TopicPartition] != nil {
			f.lags[p.TopicPartition] = lag
		}
		f.mu.Unlock()
	}
	adopt := partition.AdoptLeaderOffsets(l, a)
	if adopt.HighWatermark >= 0 {
		l.SetHighWatermark(adopt.HighWatermark)
	}
	if adopt.DeleteBefore >= 0 {
		if _, err := l.DeleteRecordsBefore(adopt.DeleteBefore); err != nil {
			return fmt.Errorf("follow the leader's log start: %w", err)
		}
	}
	return nil
}

// completeBatches drops a partial batch at the end of a fetch answer.
func completeBatches(raw []byte) []byte {
	n := 0
	for n < len(raw) {
		h, err := record.ParseHeader(raw[n:])
		if err != nil || h.Size() > len(raw)-n {
			break
		}
		n += h.Size()
	}
	return raw[:n]
}

// leaderAddr is the leader's inter-broker endpoint from the image.
func (m *Manager) leaderAddr(leader int32) (string, bool) {
	b, ok := m.image.Load().Brokers[leader]
	if !ok {
		return "", false
	}
	ep, ok := b.Listener(m.repl.Fetcher.Listener)
	if !ok {
		return "", false
	}
	return net.JoinHostPort(ep.Host, strconv.Itoa(ep.Port)), true
}

// follow makes this broker fetch a partition from its leader, moving it
// from the fetcher of a previous leader.
func (m *Manager) follow(p *partition.Partition, leader int32) {
	m.fetchMu.Lock()
	defer m.fetchMu.Unlock()
	m.followLocked(p, leader)
}

func (m *Manager) followLocked(p *partition.Partition, leader int32) {
	if m.fetchers == nil {
		return // replication not started (a test, or shutting down)
	}
	tp := p.TopicPartition
	key := fetcherKey{leader: leader, id: fetcherID(tp, m.numFetchers)}
	if cur, ok := m.following[tp]; ok {
		if cur == key {
			m.fetchers[key].add(p) // the partition object may be new
			return
		}
		m.unfollowLocked(tp)
	}
	f := m.fetchers[key]
	if f == nil {
		addr, ok := m.leaderAddr(leader)
		if !ok {
			m.cfg.Logger.Warn("no endpoint for the leader; not fetching", "partition", tp, "leader", leader, "listener", m.repl.Fetcher.Listener)
			return
		}
		f = m.newFetcher(key, addr)
		m.fetchers[key] = f
	}
	f.add(p)
	m.following[tp] = key
}

// unfollow stops fetching a partition (this broker leads it now, or no
// longer hosts it).
func (m *Manager) unfollow(tp log.TopicPartition) {
	m.fetchMu.Lock()
	defer m.fetchMu.Unlock()
	m.unfollowLocked(tp)
}

func (m *Manager) unfollowLocked(tp log.TopicPartition) {
	key, ok := m.following[tp]
	if !ok {
		return
	}
	delete(m.following, tp)
	if f := m.fetchers[key]; f != nil && f.remove(tp) {
		delete(m.fetchers, key)
		// Closing waits for the fetch in flight (bounded by
		// replica.fetch.wait.max.ms); not under fetchMu.
		m.bg.Add(1)
		go func() {
			defer m.bg.Done()
			f.close()
		}()
	}
}

// SetNumReplicaFetchers applies a new num.replica.fetchers (a dynamic
// broker config): as Kafka's resizeThreadPool, every followed partition is
// handed to the fetcher its hash names under the new count; fetchers left
// without partitions stop. Values below 1 count as 1.
func (m *Manager) SetNumReplicaFetchers(n int) {
	n = max(n, 1)
	m.fetchMu.Lock()
	defer m.fetchMu.Unlock()
	if m.fetchers == nil || n == m.numFetchers {
		return
	}
	m.numFetchers = n
	type move struct {
		p      *partition.Partition
		leader int32
	}
	var moves []move
	for tp, key := range m.following {
		if fetcherID(tp, n) == key.id {
			continue
		}
		f := m.fetchers[key]
		f.mu.Lock()
		p := f.parts[tp]
		f.mu.Unlock()
		if p != nil {
			moves = append(moves, move{p, key.leader})
		}
	}
	for _, mv := range moves {
		m.unfollowLocked(mv.p.TopicPartition)
		m.followLocked(mv.p, mv.leader)
	}
	m.cfg.Logger.Info("replica fetchers per source broker changed", "num.replica.fetchers", n, "moved", len(moves))
}
