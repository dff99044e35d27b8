// Package txnmarker sends the transaction coordinator's commit and abort
// markers to the partitions' leaders (Kafka's
// TransactionMarkerChannelManager): the markers of every transaction
// waiting on one broker go in one WriteTxnMarkers request, at most one
// request per broker in flight. A partition whose marker is written is
// reported back to the coordinator (Config.Done), which completes the
// transaction once all its partitions are marked. Retriable failures
// (leader moved or offline, not enough replicas, a broker down) are retried
// until the marker is written; a partition whose topic was deleted counts
// as done, as in Kafka.
package txnmarker

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/coordinator/txn"
	"gregor/internal/metadata"
	"gregor/internal/rpc"
)

// Config configures a Sender.
type Config struct {
	NodeID int32
	// Listener is inter.broker.listener.name: where leaders are reached.
	Listener string
	// Security is how this node authenticates to that listener.
	Security rpc.Security
	// StateTopic is __transaction_state: markers of transactions whose
	// partition of it this broker no longer leads are dropped (the new
	// coordinator sends them again when it loads the partition).
	StateTopic string
	Image      func() *metadata.Image
	// Done reports a partition marked. It returns false when the
	// coordinator no longer owns the transaction (its shard moved), which
	// stops the transaction's other markers too.
	Done func(ctx context.Context, txnPartition int32, m txn.Markers, tp txn.TopicPartition) bool
	// RequestTimeout bounds one WriteTxnMarkers exchange (request.timeout.ms).
	RequestTimeout time.Duration
	// Backoff spaces retries of a partition that could not be marked.
	Backoff time.Duration
	Logger  *slog.Logger
}

// entry is one partition of one transaction's markers.
type entry struct {
	txnPartition int32
	m            txn.Markers // Partitions unused: tp is the one
	tp           txn.TopicPartition
	notBefore    time.Time
}

// Sender queues markers and sends them; Start runs it until Close.
type Sender struct {
	cfg Config

	mu      sync.Mutex
	pending []*entry
	wake    chan struct{}

	clients map[string]*rpc.Client // by address; used by one request at a time per broker

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// New returns a sender; Start starts it.
func New(cfg Config) *Sender {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = 30 * time.Second
	}
	if cfg.Backoff <= 0 {
		cfg.Backoff = 100 * time.Millisecond
	}
	return &Sender{cfg: cfg, wake: make(chan struct{}, 1), clients: map[string]*rpc.Client{}}
}

// Send queues markers of transactions coordinated by the given
// __transaction_state partition. It never blocks.
func (s *Sender) Send(txnPartition int32, markers []txn.Markers) {
	s.mu.Lock()
	for _, m := range markers {
		for _, tp := range m.Partitions {
			e := &entry{txnPartition: txnPartition, m: m, tp: tp}
			e.m.Partitions = nil
			s.pending = append(s.pending, e)
		}
	}
	s.mu.Unlock()
	s.poke()
}

func (s *Sender) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Start runs the send loop until Close.
func (s *Sender) Start() {
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.run(ctx)
	}()
}

// Close stops sending and waits for requests in flight. Markers still
// queued are left: the coordinator that loads the transaction next sends
// them again.
func (s *Sender) Close() {
	if s.cancel != nil {
		s.cancel()
	}
	s.wg.Wait()
	for _, c := range s.clients {
		c.Close()
	}
}

// result is what a request reports back for its entries.
type result struct {
	broker int32
	retry  []*entry
}

func (s *Sender) run(ctx context.Context) {
	inFlight := map[int32]bool{}
	results := make(chan result)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		now := time.Now()
		next := s.dispatch(ctx, now, inFlight, results)
		wait := time.Hour
		if !next.IsZero() {
			wait = max(next.Sub(now), time.Millisecond)
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			for len(inFlight) > 0 {
				r := <-results
				delete(inFlight, r.broker)
			}
			return
		case <-s.wake:
		case <-timer.C:
		case r := <-results:
			delete(inFlight, r.broker)
			s.mu.Lock()
			s.pending = append(s.pending, r.retry...)
			s.mu.Unlock()
		}
	}
}

// dispatch starts a request to every broker that has due entries and no
// request in flight. It returns when the earliest entry not yet due is.
func (s *Sender) dispatch(ctx context.Context, now time.Time, inFlight map[int32]bool, results chan<- result) (next time.Time) {
	img := s.cfg.Image()
	s.mu.Lock()
	pending := s.pending
	s.pending = nil
	s.mu.Unlock()
	byBroker := map[int32][]*entry{}
	var keep, gone []*entry
	state := img.Topics.Topic(s.cfg.StateTopic)
	for _, e := range pending {
		if s.cfg.StateTopic != "" && !leads(state, e.txnPartition, s.cfg.NodeID) {
			continue // not this broker's transaction any more
		}
		if e.notBefore.After(now) {
			keep = append(keep, e)
			if next.IsZero() || e.notBefore.Before(next) {
				next = e.notBefore
			}
			continue
		}
		t := img.Topics.Topic(e.tp.Topic)
		var p *metadata.Partition
		if t != nil {
			p = t.Partition(e.tp.Partition)
		}
		switch {
		case p == nil:
			// The topic or partition is gone: nothing left to mark.
			gone = append(gone, e)
		case p.Leader < 0 || inFlight[p.Leader]:
			e.notBefore = now
			if p.Leader < 0 {
				e.notBefore = now.Add(s.cfg.Backoff)
			}
			keep = append(keep, e)
			if p.Leader < 0 && (next.IsZero() || e.notBefore.Before(next)) {
				next = e.notBefore
			}
		default:
			byBroker[p.Leader] = append(byBroker[p.Leader], e)
		}
	}
	s.mu.Lock()
	s.pending = append(keep, s.pending...)
	s.mu.Unlock()
	if len(gone) > 0 {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.report(ctx, gone)
		}()
	}
	for broker, entries := range byBroker {
		addr := ""
		if b := img.Brokers[broker]; b != nil {
			if ep, ok := b.Listener(s.cfg.Listener); ok {
				addr = ep.Host + ":" + strconv.Itoa(ep.Port)
			}
		}
		if addr == "" {
			s.cfg.Logger.Warn("no endpoint for a partition leader; markers wait", "broker", broker, "listener", s.cfg.Listener)
			for _, e := range entries {
				e.notBefore = now.Add(s.cfg.Backoff)
			}
			s.mu.Lock()
			s.pending = append(s.pending, entries...)
			s.mu.Unlock()
			if next.IsZero() || now.Add(s.cfg.Backoff).Before(next) {
				next = now.Add(s.cfg.Backoff)
			}
			continue
		}
		c := s.clients[addr]
		if c == nil {
			c = rpc.NewClient(addr, "gregor-txn-markers-"+strconv.Itoa(int(s.cfg.NodeID)), s.cfg.Security)
			s.clients[addr] = c
		}
		inFlight[broker] = true
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			retry := s.send(ctx, c, entries)
			select {
			case results <- result{broker: broker, retry: retry}:
			case <-ctx.Done():
				// run drains results until every request reported.
				results <- result{broker: broker}
			}
		}()
	}
	return next
}

// leads reports whether node leads a partition of t (nil: no such topic).
func leads(t *metadata.Topic, partition, node int32) bool {
	if t == nil {
		return false
	}
	p := t.Partition(partition)
	return p != nil && p.Leader == node
}

// markerKey groups entries into one request marker.
type markerKey struct {
	pid      int64
	epoch    int16
	commit   bool
	coordEpo int32
	tv       int16
}

// send writes one broker's entries and returns those to retry.
func (s *Sender) send(ctx context.Context, c *rpc.Client, entries []*entry) (retry []*entry) {
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	req.Version = 2
	index := map[markerKey]int{}
	for _, e := range entries {
		k := markerKey{e.m.ProducerID, e.m.ProducerEpoch, e.m.Commit, e.m.CoordinatorEpoch, e.m.TransactionVersion}
		i, ok := index[k]
		if !ok {
			m := kmsg.NewWriteTxnMarkersRequestMarker()
			m.ProducerID, m.ProducerEpoch, m.Committed, m.CoordinatorEpoch, m.TransactionVersion = k.pid, k.epoch, k.commit, k.coordEpo, int8(k.tv)
			req.Markers = append(req.Markers, m)
			i = len(req.Markers) - 1
			index[k] = i
		}
		m := &req.Markers[i]
		j := -1
		for x := range m.Topics {
			if m.Topics[x].Topic == e.tp.Topic {
				j = x
			}
		}
		if j < 0 {
			t := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
			t.Topic = e.tp.Topic
			m.Topics = append(m.Topics, t)
			j = len(m.Topics) - 1
		}
		m.Topics[j].Partitions = append(m.Topics[j].Partitions, e.tp.Partition)
	}
	rctx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
	defer cancel()
	kresp, err := c.Request(rctx, req)
	backoff := time.Now().Add(s.cfg.Backoff)
	if err != nil {
		if ctx.Err() == nil {
			s.cfg.Logger.Warn("write txn markers failed; retrying", "broker", c.Addr(), "err", err)
		}
		for _, e := range entries {
			e.notBefore = backoff
		}
		return entries
	}
	resp := kresp.(*kmsg.WriteTxnMarkersResponse)
	// The response's markers answer the request's, in order.
	codes := map[markerKey]map[txn.TopicPartition]int16{}
	for k, i := range index {
		if i >= len(resp.Markers) || resp.Markers[i].ProducerID != k.pid {
			continue
		}
		codes[k] = map[txn.TopicPartition]int16{}
		for _, t := range resp.Markers[i].Topics {
			for _, p := range t.Partitions {
				codes[k][txn.TopicPartition{Topic: t.Topic, Partition: p.Partition}] = p.ErrorCode
			}
		}
	}
	var done []*entry
	fenced := map[txnKey]bool{}
	for _, e := range entries {
		k := markerKey{e.m.ProducerID, e.m.ProducerEpoch, e.m.Commit, e.m.CoordinatorEpoch, e.m.TransactionVersion}
		code, ok := codes[k][e.tp]
		if !ok {
			code = kerr.UnknownServerError.Code
		}
		switch kerr.ErrorForCode(code) {
		case nil, kerr.UnsupportedForMessageFormat, kerr.UnsupportedVersion:
			done = append(done, e)
		case kerr.InvalidProducerEpoch, kerr.TransactionCoordinatorFenced:
			// This coordinator is stale for the producer: another one
			// (or a newer epoch) owns the transaction now.
			s.cfg.Logger.Warn("transaction marker refused; this coordinator stops sending it",
				"transactional_id", e.m.TransactionalID, "partition", e.tp.Topic+"-"+strconv.Itoa(int(e.tp.Partition)), "err", kerr.ErrorForCode(code))
			fenced[keyOf(e)] = true
		default:
			e.notBefore = backoff
			retry = append(retry, e)
		}
	}
	if len(fenced) > 0 {
		s.dropTransactions(fenced)
		kept := retry[:0]
		for _, e := range retry {
			if !fenced[keyOf(e)] {
				kept = append(kept, e)
			}
		}
		retry = kept
	}
	s.report(ctx, done)
	return retry
}

// report tells the coordinator about marked partitions; a transaction
// whose coordinator moved is dropped from the queue.
func (s *Sender) report(ctx context.Context, done []*entry) {
	stale := map[txnKey]bool{}
	for _, e := range done {
		if stale[keyOf(e)] {
			continue
		}
		if !s.cfg.Done(ctx, e.txnPartition, e.m, e.tp) {
			stale[keyOf(e)] = true
		}
	}
	if len(stale) > 0 {
		s.dropTransactions(stale)
	}
}

// txnKey names one transaction's markers: a later transaction of the same
// transactional id has another producer epoch (or id).
type txnKey struct {
	id    string
	pid   int64
	epoch int16
}

func keyOf(e *entry) txnKey { return txnKey{e.m.TransactionalID, e.m.ProducerID, e.m.ProducerEpoch} }

// dropTransactions forgets the queued entries of some transactions.
func (s *Sender) dropTransactions(ids map[txnKey]bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	kept := s.pending[:0]
	for _, e := range s.pending {
		if !ids[keyOf(e)] {
			kept = append(kept, e)
		}
	}
	s.pending = kept
}
