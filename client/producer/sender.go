package producer

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/client/internal/cluster"
)

// ErrDeliveryTimeout is the error of records that were not acknowledged
// within delivery.timeout.ms of being accepted by Send (Kafka's
// TimeoutException for expiring batches).
var ErrDeliveryTimeout = errors.New("delivery.timeout.ms expired before the record was acknowledged")

// ErrProducerClosed is the error of Send after Close, and of records Close
// gave up on when its timeout passed.
var ErrProducerClosed = errors.New("producer closed")

// engine is the producer without its types: the accumulator, the sender
// goroutine (Kafka's Sender thread) and the idempotence state.
type engine struct {
	cfg        resolved
	cluster    *cluster.Cluster
	memory     *memoryPool
	sticky     *stickyPartitioner
	compressor *compressor // used by the sender goroutine only

	wake    chan struct{} // buffered 1: something for the sender to look at
	stopped chan struct{} // closed when the sender goroutine returns
	bufs    sync.Pool     // *[]byte batch buffers of HeaderSize+batch.size bytes
	metrics producerMetrics

	mu         sync.Mutex
	parts      map[topicPartition]*partitionState
	incomplete map[*batch]struct{}
	nodes      map[int32]int // requests in flight per broker
	flushing   int           // Flush calls in progress
	closing    bool          // Close called: send everything now
	forced     bool          // Close timed out: fail instead of sending
	pid        int64         // -1 until InitProducerId answered (idempotence)
	epoch      int16
	bumpNeeded bool
	epochBumps int

	// Metadata wanted by Send and by the sender.
	topics      map[string]*atomic.Int64 // topic -> last used (unix ns), for metadata.max.idle.ms
	metaWanted  bool
	metaUpdated chan struct{} // closed and replaced after each refresh
	// topicsView is a copy of topics for Send's lock-free path, replaced
	// whenever topics gains or loses a topic.
	topicsView   atomic.Pointer[map[string]*atomic.Int64]
	metaErr      error // the last refresh's error
	lastMetadata time.Time
}

func newEngine(cfg resolved) (*engine, error) {
	cl, err := cluster.New(cluster.Config{
		Bootstrap:       cfg.BootstrapServers,
		ClientID:        cfg.ClientID,
		Dial:            cfg.Dial,
		RequestTimeout:  cfg.RequestTimeout,
		AllowAutoCreate: true,
	})
	if err != nil {
		return nil, err
	}
	comp, err := newCompressor(cfg.codec, cfg.CompressionLevel)
	if err != nil {
		return nil, err
	}
	e := &engine{
		cfg:         cfg,
		cluster:     cl,
		memory:      newMemoryPool(cfg.BufferMemory),
		sticky:      newStickyPartitioner(cfg.BatchSize, cfg.PartitionerAdaptive),
		compressor:  comp,
		wake:        make(chan struct{}, 1),
		stopped:     make(chan struct{}),
		parts:       map[topicPartition]*partitionState{},
		incomplete:  map[*batch]struct{}{},
		nodes:       map[int32]int{},
		pid:         -1,
		epoch:       -1,
		topics:      map[string]*atomic.Int64{},
		metaUpdated: make(chan struct{}),
	}
	go e.run()
	return e, nil
}

func (e *engine) signal() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// backoff is retry.backoff.ms growing exponentially per attempt up to
// retry.backoff.max.ms, with ±20% jitter (KIP-580).
func (e *engine) backoff(attempts int) time.Duration {
	d := e.cfg.RetryBackoff
	for i := 1; i < attempts && d < e.cfg.RetryBackoffMax; i++ {
		d *= 2
	}
	d = min(d, max(e.cfg.RetryBackoffMax, e.cfg.RetryBackoff))
	return time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
}

// completion is a batch's outcome, delivered outside mu.
type completion struct {
	b             *batch
	err           error
	baseOffset    int64
	logAppendTime int64
}

// run is the sender goroutine: refresh metadata, get a producer id, expire
// batches, drain ready batches per broker, and send them.
func (e *engine) run() {
	defer close(e.stopped)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		now := time.Now()
		e.maybeRefreshMetadata(now)
		pidFailed := false
		if e.cfg.idempotent {
			// On failure it is retried after a backoff; batches expire
			// meanwhile if it never succeeds, and Close still ends the loop.
			pidFailed = e.maybeInitProducerID() != nil
		}
		e.mu.Lock()
		done := e.expireLocked(now)
		reqs, next := e.drainLocked(now)
		exit := (e.closing && len(e.incomplete) == 0) || e.forced
		if e.forced {
			done = append(done, e.failAllQueuedLocked(ErrProducerClosed)...)
		}
		e.mu.Unlock()
		e.complete(done)
		for _, r := range reqs {
			e.send(r)
		}
		if exit {
			if e.forced {
				e.waitInflight()
			}
			return
		}
		wait := time.Until(next)
		if pidFailed {
			wait = e.backoff(1)
		} else if len(reqs) > 0 {
			continue // drain again: more may be ready, limits permitting
		}
		e.sleep(timer, wait)
	}
}

func (e *engine) sleep(timer *time.Timer, d time.Duration) {
	if d <= 0 {
		return
	}
	timer.Reset(d)
	select {
	case <-e.wake:
	case <-timer.C:
	}
	if !timer.Stop() {
		select {
		case <-timer.C:
		default:
		}
	}
}

// waitInflight waits for the answers (or failures) of requests in flight
// after a forced close closed the connections.
func (e *engine) waitInflight() {
	e.cluster.Close()
	for {
		e.mu.Lock()
		n := 0
		for _, c := range e.nodes {
			n += c
		}
		e.mu.Unlock()
		if n == 0 {
			return
		}
		<-e.wake
	}
}

// produceRequest is one Produce request to one broker.
type produceRequest struct {
	node    int32
	batches []*batch
}

// drainLocked takes the sendable batches, at most one per partition per
// request and max.request.size per request, for every broker below
// max.in.flight.requests.per.connection. It returns the requests and when
// to look again.
func (e *engine) drainLocked(now time.Time) ([]produceRequest, time.Time) {
	next := now.Add(e.cfg.MetadataMaxAge)
	if e.cfg.idempotent && e.pid < 0 {
		return nil, now.Add(e.cfg.RetryBackoff)
	}
	byNode := map[int32][]*partitionState{}
	for _, ps := range e.parts {
		if len(ps.queue) == 0 {
			continue
		}
		ready, at := e.readyLocked(ps, now)
		if !ready {
			next = minTime(next, at)
			continue
		}
		if !e.drainableLocked(ps, now) {
			continue
		}
		t := e.cluster.Topic(ps.tp.topic)
		if t == nil || int(ps.tp.partition) >= len(t.Partitions) || t.Partitions[ps.tp.partition].Leader < 0 {
			e.metaWanted = true
			next = minTime(next, now.Add(e.cfg.RetryBackoff))
			continue
		}
		leader := t.Partitions[ps.tp.partition].Leader
		byNode[leader] = append(byNode[leader], ps)
	}
	var reqs []produceRequest
	for node, pss := range byNode {
		if e.nodes[node] >= e.cfg.MaxInFlight {
			continue // an answer will wake the sender
		}
		// Partitions in a rotating order so one partition's large batches
		// do not always take the request's room first.
		sort.Slice(pss, func(i, j int) bool {
			if pss[i].tp.topic != pss[j].tp.topic {
				return pss[i].tp.topic < pss[j].tp.topic
			}
			return pss[i].tp.partition < pss[j].tp.partition
		})
		start := rand.IntN(len(pss))
		var r produceRequest
		r.node = node
		size := 0
		for k := range pss {
			ps := pss[(start+k)%len(pss)]
			b := ps.queue[0]
			if size > 0 && size+b.size() > e.cfg.MaxRequestSize {
				continue
			}
			ps.queue = ps.queue[1:]
			b.closed = true
			e.sequenceLocked(ps, b)
			b.attempts++
			ps.inflight = append(ps.inflight, b)
			r.batches = append(r.batches, b)
			size += b.size()
		}
		if len(r.batches) > 0 {
			e.nodes[node]++
			reqs = append(reqs, r)
		}
	}
	return reqs, next
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// send encodes the request's batches and writes the request; the answer is
// handled on the connection's goroutine.
func (e *engine) send(r produceRequest) {
	req := kmsg.NewPtrProduceRequest()
	req.Version = 12 // topics by name; v13 names them by id
	req.Acks = e.cfg.Acks
	req.TimeoutMillis = int32(e.cfg.RequestTimeout.Milliseconds())
	var encErr error
	topicIdx := map[string]int{}
	for _, b := range r.batches {
		if err := e.encode(b); err != nil {
			encErr = err
			break
		}
		i, ok := topicIdx[b.tp.topic]
		if !ok {
			i = len(req.Topics)
			topicIdx[b.tp.topic] = i
			t := kmsg.NewProduceRequestTopic()
			t.Topic = b.tp.topic
			req.Topics = append(req.Topics, t)
		}
		p := kmsg.NewProduceRequestTopicPartition()
		p.Partition = b.tp.partition
		p.Records = b.encoded
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, p)
	}
	if encErr != nil {
		e.handleResponse(r, nil, encErr)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), e.cfg.RequestTimeout)
	cn, err := e.cluster.Conn(ctx, r.node)
	cancel()
	if err != nil {
		e.handleResponse(r, nil, err)
		return
	}
	sentAt := time.Now()
	records := 0
	e.metrics.mu.Lock()
	for _, b := range r.batches {
		records += len(b.records)
		e.metrics.batchSize.record(float64(len(b.encoded)), sentAt)
	}
	e.metrics.recordSend.record(float64(records), sentAt)
	e.metrics.recordsPerReq.record(float64(records), sentAt)
	e.metrics.mu.Unlock()
	cn.DoAsync(req, true, e.cfg.RequestTimeout+e.cfg.RequestTimeout/10, func(resp kmsg.Response, err error) {
		if err == nil {
			now := time.Now()
			e.metrics.mu.Lock()
			e.metrics.requestLatency.record(float64(now.Sub(sentAt).Microseconds())/1000, now)
			e.metrics.mu.Unlock()
		}
		pr, _ := resp.(*kmsg.ProduceResponse)
		e.handleResponse(r, pr, err)
	})
}

// partitionResult finds b's partition in the response.
func partitionResult(resp *kmsg.ProduceResponse, b *batch) *kmsg.ProduceResponseTopicPartition {
	if resp == nil {
		return nil
	}
	for i := range resp.Topics {
		t := &resp.Topics[i]
		if t.Topic != b.tp.topic {
			continue
		}
		for j := range t.Partitions {
			if t.Partitions[j].Partition == b.tp.partition {
				return &t.Partitions[j]
			}
		}
	}
	return nil
}

// handleResponse decides each batch's fate: done, retried, or failed.
func (e *engine) handleResponse(r produceRequest, resp *kmsg.ProduceResponse, reqErr error) {
	now := time.Now()
	var done []completion
	e.mu.Lock()
	e.nodes[r.node]--
	for _, b := range r.batches {
		ps := e.parts[b.tp]
		ps.removeInflight(b)
		err := reqErr
		var pr *kmsg.ProduceResponseTopicPartition
		if err == nil && e.cfg.Acks != 0 {
			if pr = partitionResult(resp, b); pr == nil {
				err = fmt.Errorf("produce response from broker %d has no answer for %s/%d", r.node, b.tp.topic, b.tp.partition)
			} else if pr.ErrorCode != 0 && pr.ErrorCode != kerr.DuplicateSequenceNumber.Code {
				err = kerr.ErrorForCode(pr.ErrorCode)
				if pr.ErrorMessage != nil && *pr.ErrorMessage != "" {
					err = fmt.Errorf("%w: %s", err, *pr.ErrorMessage)
				}
			}
		}
		if err == nil {
			c := completion{b: b, baseOffset: -1, logAppendTime: -1}
			if pr != nil {
				c.baseOffset, c.logAppendTime = pr.BaseOffset, pr.LogAppendTime
			}
			done = append(done, c)
			continue
		}
		done = append(done, e.failedAttemptLocked(ps, b, err, reqErr != nil, now)...)
	}
	e.mu.Unlock()
	e.complete(done)
	e.signal()
}

// failedAttemptLocked retries b or fails it.
func (e *engine) failedAttemptLocked(ps *partitionState, b *batch, err error, transport bool, now time.Time) []completion {
	var ke *kerr.Error
	isKafka := errors.As(err, &ke)
	b.ambiguous = transport
	outOfSequence := isKafka && (ke == kerr.OutOfOrderSequenceNumber || ke == kerr.UnknownProducerID)
	retriable := transport || (isKafka && ke.Retriable) || (outOfSequence && e.cfg.idempotent)
	if isKafka && (ke == kerr.NotLeaderForPartition || ke == kerr.UnknownTopicOrPartition ||
		ke == kerr.LeaderNotAvailable || ke == kerr.FencedLeaderEpoch || ke == kerr.UnknownLeaderEpoch ||
		ke == kerr.KafkaStorageError || ke == kerr.NotEnoughReplicas) || transport {
		e.metaWanted = true
	}
	expired := !now.Before(b.created.Add(e.cfg.DeliveryTimeout))
	if retriable && b.attempts <= e.cfg.Retries && !expired && !e.forced {
		if outOfSequence && ps.lowestUnresolved(b) {
			// The broker lost or never had the sequences before b (its
			// producer state expired, or a batch before b failed for
			// good): b and its successors go again under a new epoch.
			e.markGapLocked(ps, b)
		}
		e.metrics.mu.Lock()
		e.metrics.recordRetry.record(float64(len(b.records)), now)
		e.metrics.mu.Unlock()
		e.requeueLocked(ps, b, now)
		return nil
	}
	if expired && retriable {
		err = fmt.Errorf("%w (%d attempts, last error: %w)", ErrDeliveryTimeout, b.attempts, err)
	}
	if e.forced {
		err = fmt.Errorf("%w: %w", ErrProducerClosed, err)
	}
	e.markGapLocked(ps, b)
	return []completion{{b: b, err: err}}
}

// expireLocked fails queued batches older than delivery.timeout.ms.
func (e *engine) expireLocked(now time.Time) []completion {
	var done []completion
	for _, ps := range e.parts {
		kept := ps.queue[:0]
		for _, b := range ps.queue {
			if now.Before(b.created.Add(e.cfg.DeliveryTimeout)) {
				kept = append(kept, b)
				continue
			}
			e.markGapLocked(ps, b)
			done = append(done, completion{b: b, err: fmt.Errorf("%w: %d record(s) for %s-%d, %v since the batch was created",
				ErrDeliveryTimeout, len(b.records), b.tp.topic, b.tp.partition, now.Sub(b.created).Round(time.Millisecond))})
		}
		clear(ps.queue[len(kept):])
		ps.queue = kept
	}
	return done
}

// failAllQueuedLocked fails every batch not in flight.
func (e *engine) failAllQueuedLocked(err error) []completion {
	var done []completion
	for _, ps := range e.parts {
		for _, b := range ps.queue {
			done = append(done, completion{b: b, err: err})
		}
		ps.queue = nil
	}
	return done
}

// complete runs the records' interceptors and callbacks, then frees the
// batches' memory and wakes Flush.
func (e *engine) complete(done []completion) {
	for _, c := range done {
		b := c.b
		if c.err != nil {
			e.metrics.mu.Lock()
			e.metrics.recordError.record(float64(len(b.records)), time.Now())
			e.metrics.mu.Unlock()
		}
		for i := range b.records {
			r := &b.records[i]
			md := RecordMetadata{Topic: b.tp.topic, Partition: b.tp.partition, Offset: -1,
				Timestamp: time.UnixMilli(r.timestamp), SerializedKeySize: r.keySize, SerializedValueSize: r.valueSize}
			if c.err == nil {
				if c.baseOffset >= 0 {
					md.Offset = c.baseOffset + int64(r.offsetDelta)
				}
				if c.logAppendTime >= 0 {
					md.Timestamp = time.UnixMilli(c.logAppendTime)
				}
			}
			if r.onAck != nil {
				r.onAck(md, c.err)
			}
			if r.cb != nil {
				r.cb(md, c.err)
			}
		}
		e.mu.Lock()
		delete(e.incomplete, b)
		e.mu.Unlock()
		e.memory.release(b.memory)
		e.freeBuf(b)
		close(b.done)
	}
}

// maybeInitProducerID gets a producer id when there is none, and bumps the
// epoch (KIP-360) once nothing of the old epoch is in flight or may still
// be sent under it.
func (e *engine) maybeInitProducerID() error {
	e.mu.Lock()
	need := e.pid < 0 && len(e.incomplete) > 0
	if e.bumpNeeded && e.pid >= 0 {
		need = true
		for _, ps := range e.parts {
			if len(ps.inflight) > 0 {
				need = false
				break
			}
			for _, b := range ps.queue {
				if b.seq >= 0 && b.pid == e.pid && b.epoch == e.epoch && (ps.gapOrder == 0 || b.order < ps.gapOrder) {
					need = false // an old-epoch retry still to resolve
					break
				}
			}
		}
	}
	pid, epoch := e.pid, e.epoch
	e.mu.Unlock()
	if !need {
		return nil
	}
	req := kmsg.NewPtrInitProducerIDRequest()
	req.TransactionTimeoutMillis = 60000
	req.ProducerID, req.ProducerEpoch = pid, epoch
	ctx := context.Background()
	resp, err := e.cluster.Request(ctx, -1, req)
	if err == nil && req.Version < 3 && pid >= 0 {
		// The broker cannot bump an epoch (before KIP-360): ask for a new id.
		req.ProducerID, req.ProducerEpoch = -1, -1
		resp, err = e.cluster.Request(ctx, -1, req)
	}
	if err != nil {
		return fmt.Errorf("init producer id: %w", err)
	}
	r := resp.(*kmsg.InitProducerIDResponse)
	if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
		e.mu.Lock()
		if !kerr.IsRetriable(err) {
			// Fatal for idempotence (e.g. CLUSTER_AUTHORIZATION_FAILED):
			// fail what waits; later sends fail the same way.
			done := e.failAllQueuedLocked(fmt.Errorf("init producer id: %w", err))
			e.mu.Unlock()
			e.complete(done)
		} else {
			e.mu.Unlock()
		}
		return fmt.Errorf("init producer id: %w", err)
	}
	e.mu.Lock()
	e.pid, e.epoch = r.ProducerID, r.ProducerEpoch
	if e.bumpNeeded {
		e.epochBumps++
		// New epoch: every partition's sequences start again at 0, and
		// unsent or refused batches get new sequences in queue order.
		for _, ps := range e.parts {
			ps.nextSeq, ps.gapOrder = 0, 0
			for _, b := range ps.queue {
				b.seq, b.encoded = -1, nil
			}
		}
		e.bumpNeeded = false
	}
	e.mu.Unlock()
	return nil
}

func cloneTopics(m map[string]*atomic.Int64) *map[string]*atomic.Int64 {
	c := make(map[string]*atomic.Int64, len(m))
	for k, v := range m {
		c[k] = v
	}
	return &c
}

// usedTopic returns topic's last-used clock when the topic is in use.
func (e *engine) usedTopic(topic string) *atomic.Int64 {
	if m := e.topicsView.Load(); m != nil {
		return (*m)[topic]
	}
	return nil
}

// maybeRefreshMetadata refreshes the used topics' metadata when something
// asked for it (at most once per retry.backoff.ms) or metadata.max.age.ms
// passed, and forgets topics idle for metadata.max.idle.ms.
func (e *engine) maybeRefreshMetadata(now time.Time) {
	e.mu.Lock()
	due := now.Sub(e.lastMetadata) >= e.cfg.MetadataMaxAge ||
		(e.metaWanted && now.Sub(e.lastMetadata) >= e.cfg.RetryBackoff)
	var topics []string
	for t, used := range e.topics {
		if now.Sub(time.Unix(0, used.Load())) > e.cfg.MetadataMaxIdle {
			delete(e.topics, t)
			e.topicsView.Store(cloneTopics(e.topics))
			e.cluster.Forget(t)
			continue
		}
		topics = append(topics, t)
	}
	if !due || len(topics) == 0 {
		e.mu.Unlock()
		return
	}
	e.metaWanted = false
	e.lastMetadata = now
	e.mu.Unlock()
	err := e.cluster.Refresh(context.Background(), topics)
	e.mu.Lock()
	if err != nil {
		e.metaWanted = true
	}
	e.metaErr = err
	close(e.metaUpdated)
	e.metaUpdated = make(chan struct{})
	e.mu.Unlock()
}

// topicMetadata returns topic's metadata, asking the sender for it and
// waiting until deadline when it is not known (Kafka's waitOnMetadata).
// When partition is not -1 the topic must have that partition.
func (e *engine) topicMetadata(ctx context.Context, topic string, partition int32, now time.Time) (*cluster.Topic, error) {
	// The common case takes no lock: the topic is known and in use.
	if t := e.cluster.Topic(topic); t != nil && t.Err == nil && len(t.Partitions) > 0 && int(partition) < len(t.Partitions) {
		if used := e.usedTopic(topic); used != nil {
			used.Store(now.UnixNano())
			return t, nil
		}
	}
	deadline := now.Add(e.cfg.MaxBlock)
	for {
		e.mu.Lock()
		if e.closing {
			e.mu.Unlock()
			return nil, ErrProducerClosed
		}
		used, known := e.topics[topic]
		if !known {
			used = new(atomic.Int64)
			e.topics[topic] = used
			e.topicsView.Store(cloneTopics(e.topics))
		}
		used.Store(time.Now().UnixNano())
		t := e.cluster.Topic(topic)
		if t != nil && t.Err == nil && len(t.Partitions) > 0 && int(partition) < len(t.Partitions) {
			e.mu.Unlock()
			return t, nil
		}
		var terr *kerr.Error
		if t != nil && errors.As(t.Err, &terr) && !terr.Retriable {
			e.mu.Unlock()
			return nil, fmt.Errorf("topic %s: %w", topic, t.Err)
		}
		e.metaWanted = true
		if !known {
			e.lastMetadata = time.Time{} // a new topic: ask now, not after the backoff
		}
		updated := e.metaUpdated
		lastErr := e.metaErr
		e.mu.Unlock()
		e.signal()
		timer := time.NewTimer(time.Until(deadline))
		select {
		case <-updated:
			timer.Stop()
		case <-timer.C:
			why := "topic not present in metadata"
			if t != nil && t.Err != nil {
				why = t.Err.Error()
			} else if t != nil && int(partition) >= len(t.Partitions) {
				why = fmt.Sprintf("partition %d not present (the topic has %d)", partition, len(t.Partitions))
			} else if lastErr != nil {
				why = lastErr.Error()
			}
			return nil, fmt.Errorf("topic %s not available within max.block.ms: %s: %w", topic, why, kerr.RequestTimedOut)
		case <-ctx.Done():
			timer.Stop()
			return nil, ctx.Err()
		}
	}
}
