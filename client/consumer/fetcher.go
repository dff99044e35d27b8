package consumer

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/record"
)

// fetchVersion caps Fetch at v12, the last version that names topics
// rather than topic ids (the client's metadata does not keep ids). Fetch
// sessions (KIP-227) are not used: every fetch is a full one.
const fetchVersion = 12

// fetchPart is what one fetch asked of one partition.
type fetchPart struct {
	ps     *partState
	gen    uint64
	offset int64
}

// fetchResult is a fetch's response (or error) waiting for the fetcher.
type fetchResult struct {
	node  int32
	parts map[TopicPartition]fetchPart
	resp  *kmsg.FetchResponse
	err   error
}

// fetchLoop is the fetcher: it finds positions, sends one fetch at a time
// to each leader for the partitions that have room in their buffer
// (prefetching while Poll drains what is buffered), and decodes responses.
// It is the only goroutine that sends Fetch, ListOffsets and the initial
// OffsetFetch, so their results apply in order.
func (e *engine) fetchLoop() {
	defer e.wg.Done()
	var metaAt, resetAt time.Time // not before: the retry backoff
	for {
		if e.ctx.Err() != nil {
			return
		}
		now := time.Now()
		if e.needMeta() && !now.Before(metaAt) {
			// Failed or not, the next refresh waits for the backoff: a
			// new leader may not be elected yet.
			_ = e.refreshMeta()
			metaAt = now.Add(e.cfg.RetryBackoff)
		}
		if !now.Before(resetAt) {
			if retry := e.resolvePositions(); retry {
				resetAt = now.Add(e.cfg.RetryBackoff)
			}
		}
		e.processResults()
		e.sendFetches()

		var timer *time.Timer
		var timeout <-chan time.Time
		next := time.Time{}
		if e.needMeta() {
			next = metaAt
		}
		if e.needReset() && (next.IsZero() || resetAt.Before(next)) {
			next = resetAt
		}
		if !next.IsZero() {
			timer = time.NewTimer(max(time.Until(next), time.Millisecond))
			timeout = timer.C
		}
		select {
		case <-e.ctx.Done():
		case <-e.wake:
		case <-timeout:
		}
		if timer != nil {
			timer.Stop()
		}
	}
}

func (e *engine) needMeta() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, ps := range e.order {
		if ps.needMeta {
			return true
		}
	}
	return false
}

func (e *engine) needReset() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, ps := range e.order {
		if ps.reset != posKnown && ps.err == nil {
			return true
		}
	}
	return false
}

// refreshMeta reloads the metadata of the assigned topics and clears
// needMeta for partitions that now have a leader.
func (e *engine) refreshMeta() error {
	e.mu.Lock()
	seen := map[string]bool{}
	var topics []string
	for _, ps := range e.order {
		if !seen[ps.tp.Topic] {
			seen[ps.tp.Topic] = true
			topics = append(topics, ps.tp.Topic)
		}
	}
	e.mu.Unlock()
	if err := e.cl.Refresh(e.ctx, topics); err != nil {
		return fmt.Errorf("metadata: %w", err)
	}
	e.mu.Lock()
	for _, ps := range e.order {
		if e.leader(ps.tp) >= 0 {
			ps.needMeta = false
		}
	}
	e.mu.Unlock()
	return nil
}

// leader is tp's leader from the metadata, or -1.
func (e *engine) leader(tp TopicPartition) int32 {
	t := e.cl.Topic(tp.Topic)
	if t == nil || t.Err != nil || int(tp.Partition) >= len(t.Partitions) {
		return -1
	}
	p := t.Partitions[tp.Partition]
	if p.Err != nil && !errors.Is(p.Err, kerr.ReplicaNotAvailable) {
		return -1
	}
	return p.Leader
}

// sendFetches sends a fetch to each leader that has none in flight, for
// its partitions that are fetchable: assigned, not paused, positioned, and
// buffering less than max.partition.fetch.bytes.
func (e *engine) sendFetches() {
	type req struct {
		r     *kmsg.FetchRequest
		parts map[TopicPartition]fetchPart
	}
	byNode := map[int32]*req{}
	e.mu.Lock()
	for _, ps := range e.order {
		if ps.paused || ps.reset != posKnown || ps.err != nil || ps.inFlight || ps.needMeta ||
			ps.bufBytes >= int(e.cfg.MaxPartitionFetchBytes) {
			continue
		}
		node := e.leader(ps.tp)
		if node < 0 {
			ps.needMeta = true
			continue
		}
		if e.brokerIn[node] {
			continue
		}
		rq := byNode[node]
		if rq == nil {
			r := kmsg.NewPtrFetchRequest()
			r.Version = fetchVersion
			r.ReplicaID = -1
			r.MaxWaitMillis = int32(e.cfg.FetchMaxWait / time.Millisecond)
			r.MinBytes = e.cfg.FetchMinBytes
			r.MaxBytes = e.cfg.FetchMaxBytes
			r.IsolationLevel = e.isolation
			r.SessionID = 0
			r.SessionEpoch = -1 // no fetch session
			rq = &req{r: r, parts: map[TopicPartition]fetchPart{}}
			byNode[node] = rq
		}
		var rt *kmsg.FetchRequestTopic
		if n := len(rq.r.Topics); n > 0 && rq.r.Topics[n-1].Topic == ps.tp.Topic {
			rt = &rq.r.Topics[n-1]
		} else {
			rq.r.Topics = append(rq.r.Topics, kmsg.NewFetchRequestTopic())
			rt = &rq.r.Topics[len(rq.r.Topics)-1]
			rt.Topic = ps.tp.Topic
		}
		p := kmsg.NewFetchRequestTopicPartition()
		p.Partition = ps.tp.Partition
		p.CurrentLeaderEpoch = -1
		p.FetchOffset = ps.fetchPos
		p.LastFetchedEpoch = -1
		p.LogStartOffset = -1
		p.PartitionMaxBytes = e.cfg.MaxPartitionFetchBytes
		rt.Partitions = append(rt.Partitions, p)
		rq.parts[ps.tp] = fetchPart{ps: ps, gen: ps.gen, offset: ps.fetchPos}
		ps.inFlight = true
	}
	for node := range byNode {
		e.brokerIn[node] = true
	}
	e.mu.Unlock()

	for node, rq := range byNode {
		res := fetchResult{node: node, parts: rq.parts}
		dctx, cancel := context.WithTimeout(e.ctx, e.cfg.RequestTimeout)
		cn, err := e.cl.Conn(dctx, node)
		cancel()
		if err != nil {
			res.err = err
			e.addResult(res)
			continue
		}
		cn.DoAsync(rq.r, true, e.cfg.RequestTimeout+e.cfg.FetchMaxWait, func(r kmsg.Response, err error) {
			res.err = err
			if err == nil {
				res.resp = r.(*kmsg.FetchResponse)
			}
			e.addResult(res)
		})
	}
}

// addResult hands a fetch's outcome to the fetcher; it runs on the
// connection's reader goroutine, so it only queues.
func (e *engine) addResult(res fetchResult) {
	e.mu.Lock()
	e.results = append(e.results, res)
	e.mu.Unlock()
	e.wakeFetcher()
}

// processResults decodes the fetch responses that arrived and buffers
// their records.
func (e *engine) processResults() {
	e.mu.Lock()
	results := e.results
	e.results = nil
	e.mu.Unlock()
	for _, res := range results {
		e.processResult(res)
	}
}

func (e *engine) processResult(res fetchResult) {
	type decodedPart struct {
		fp     fetchPart
		chunks []chunk
		next   int64
		bytes  int
		err    error
	}
	var out []decodedPart
	if res.err == nil && res.resp.ErrorCode != 0 {
		res.err = kerr.ErrorForCode(res.resp.ErrorCode)
	}
	if res.err == nil {
		for i := range res.resp.Topics {
			rt := &res.resp.Topics[i]
			for j := range rt.Partitions {
				rp := &rt.Partitions[j]
				fp, ok := res.parts[TopicPartition{rt.Topic, rp.Partition}]
				if !ok {
					continue
				}
				d := decodedPart{fp: fp}
				if rp.ErrorCode != 0 {
					d.err = kerr.ErrorForCode(rp.ErrorCode)
				} else {
					d.chunks, d.next, d.bytes, d.err = decodePartition(rp, fp.offset, e.isolation == 1)
				}
				out = append(out, d)
			}
		}
	}

	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.brokerIn, res.node)
	for _, fp := range res.parts {
		fp.ps.inFlight = false
	}
	if res.err != nil {
		// The connection failed or the broker refused the whole fetch:
		// look the leaders up again before the next one.
		for _, fp := range res.parts {
			fp.ps.needMeta = true
		}
		e.notifyLocked()
		return
	}
	for _, d := range out {
		ps := d.fp.ps
		if ps.gen != d.fp.gen || e.parts[ps.tp] != ps || ps.fetchPos != d.fp.offset {
			continue // moved or unassigned while the fetch was out
		}
		switch {
		case d.err == nil:
			ps.buf = append(ps.buf, d.chunks...)
			ps.bufBytes += d.bytes
			ps.fetchPos = d.next
			if len(ps.buf) == 0 {
				ps.position = d.next
			}
		case errors.Is(d.err, kerr.OffsetOutOfRange):
			if e.cfg.AutoOffsetReset == "none" {
				ps.err = &OffsetOutOfRangeError{TopicPartition: ps.tp, Offset: d.fp.offset}
				continue
			}
			e.nextGen++
			ps.gen = e.nextGen
			ps.reset = resetFor(e.cfg.AutoOffsetReset)
			ps.buf, ps.bufBytes = nil, 0
			ps.position, ps.fetchPos = -1, -1
		case isRetriable(d.err):
			// NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION,
			// FENCED_LEADER_EPOCH, KAFKA_STORAGE_ERROR...: the leader
			// moved or is not ready; find it again.
			ps.needMeta = true
		default:
			ps.err = fmt.Errorf("fetch %s-%d at offset %d: %w", ps.tp.Topic, ps.tp.Partition, d.fp.offset, d.err)
		}
	}
	e.notifyLocked()
}

func resetFor(strategy string) resetKind {
	if strategy == "earliest" {
		return posEarliest
	}
	return posLatest
}

// isRetriable reports whether err is a Kafka error a client retries
// after refreshing its metadata.
func isRetriable(err error) bool {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Retriable
	}
	return false
}

// OffsetOutOfRangeError is Poll's error when a partition's position is
// outside its log and auto.offset.reset is none (Kafka's
// OffsetOutOfRangeException). Seek the partition to go on.
type OffsetOutOfRangeError struct {
	TopicPartition TopicPartition
	Offset         int64
}

func (e *OffsetOutOfRangeError) Error() string {
	return fmt.Sprintf("offset %d of %s-%d is out of range and auto.offset.reset is none",
		e.Offset, e.TopicPartition.Topic, e.TopicPartition.Partition)
}

// Unwrap makes the error match kerr.OffsetOutOfRange.
func (e *OffsetOutOfRangeError) Unwrap() error { return kerr.OffsetOutOfRange }

// NoOffsetError is Poll's error for a partition with no committed offset
// when auto.offset.reset is none (Kafka's NoOffsetForPartitionException).
type NoOffsetError struct{ TopicPartition TopicPartition }

func (e *NoOffsetError) Error() string {
	return fmt.Sprintf("%s-%d has no committed offset and auto.offset.reset is none",
		e.TopicPartition.Topic, e.TopicPartition.Partition)
}

// decodePartition decodes one partition's record batches from offset on.
// It returns the chunks with records to return, the offset to fetch next
// and the bytes buffered. A partial batch at the end (Kafka may cut the
// last one at the size limit) is dropped; it is fetched again next time.
//
// Under read_committed the batches of aborted transactions are skipped:
// the response lists each aborted transaction's producer id and first
// offset, and a producer's batches are skipped from that offset until its
// abort marker, as Kafka's consumer does. Control batches (commit and
// abort markers) are never returned.
func decodePartition(rp *kmsg.FetchResponseTopicPartition, offset int64, readCommitted bool) ([]chunk, int64, int, error) {
	var chunks []chunk
	next, size := offset, 0
	aborted := rp.AbortedTransactions
	sortAborted(aborted)
	abortedPIDs := map[int64]bool{}
	b := rp.RecordBatches
	for len(b) > 0 {
		h, err := record.ParseHeader(b)
		if errors.Is(err, record.ErrShortBatch) {
			break
		}
		if err != nil {
			return nil, 0, 0, fmt.Errorf("batch at offset %d: %w", next, err)
		}
		if len(b) < h.Size() {
			break
		}
		batch := b[:h.Size()]
		b = b[h.Size():]
		if h.LastOffset() < next {
			continue // wholly before the position (the broker sends whole batches)
		}
		if readCommitted {
			for len(aborted) > 0 && aborted[0].FirstOffset <= h.LastOffset() {
				abortedPIDs[aborted[0].ProducerID] = true
				aborted = aborted[1:]
			}
		}
		if h.IsControl() {
			if readCommitted && abortedPIDs[h.ProducerID] && isAbortMarker(batch, h) {
				delete(abortedPIDs, h.ProducerID)
			}
			next = h.NextOffset()
			continue
		}
		if readCommitted && h.IsTransactional() && abortedPIDs[h.ProducerID] {
			next = h.NextOffset()
			continue
		}
		_, recs, err := record.ReadRecords(batch)
		if err != nil {
			return nil, 0, 0, fmt.Errorf("batch at offset %d: %w", h.BaseOffset, err)
		}
		i := 0
		for i < len(recs) && h.BaseOffset+int64(recs[i].OffsetDelta) < next {
			i++
		}
		next = h.NextOffset()
		if i < len(recs) {
			chunks = append(chunks, chunk{h: h, recs: recs[i:], size: len(batch)})
			size += len(batch)
		}
	}
	return chunks, next, size, nil
}

// isAbortMarker reads a control batch's record key: version int16, type
// int16 where 0 is ABORT and 1 is COMMIT.
func isAbortMarker(batch []byte, h record.BatchHeader) bool {
	_, recs, err := record.ReadRecords(batch)
	if err != nil || len(recs) == 0 || len(recs[0].Key) < 4 {
		return false
	}
	return binary.BigEndian.Uint16(recs[0].Key[2:4]) == 0
}

func sortAborted(a []kmsg.FetchResponseTopicPartitionAbortedTransaction) {
	for i := 1; i < len(a); i++ {
		for j := i; j > 0 && a[j].FirstOffset < a[j-1].FirstOffset; j-- {
			a[j], a[j-1] = a[j-1], a[j]
		}
	}
}

// resolvePositions finds the positions of partitions that have none: the
// group's committed offset first, then auto.offset.reset (or the SeekTo*
// the application asked for) through ListOffsets. It reports whether some
// lookup failed and should be retried after the backoff.
func (e *engine) resolvePositions() (retry bool) {
	type want struct {
		ps   *partState
		gen  uint64
		kind resetKind
	}
	e.mu.Lock()
	var committed, reset []want
	for _, ps := range e.order {
		if ps.reset == posKnown || ps.err != nil {
			continue
		}
		w := want{ps, ps.gen, ps.reset}
		if ps.reset == posCommitted {
			if e.cfg.GroupID != "" {
				committed = append(committed, w)
				continue
			}
			w.kind = resetFor(e.cfg.AutoOffsetReset)
			if e.cfg.AutoOffsetReset == "none" {
				ps.err = &NoOffsetError{TopicPartition: ps.tp}
				e.notifyLocked()
				continue
			}
		}
		reset = append(reset, w)
	}
	e.mu.Unlock()

	if len(committed) > 0 {
		tps := make([]TopicPartition, len(committed))
		for i, w := range committed {
			tps[i] = w.ps.tp
		}
		ctx, cancel := context.WithTimeout(e.ctx, e.cfg.DefaultAPITimeout)
		offs, err := e.fetchCommitted(ctx, tps)
		cancel()
		if err != nil {
			if isKafkaErr(err) && !isRetriable(err) {
				// The coordinator refused (e.g. GROUP_AUTHORIZATION_FAILED):
				// Poll reports it until the application seeks.
				e.mu.Lock()
				for _, w := range committed {
					if w.ps.gen == w.gen && e.parts[w.ps.tp] == w.ps {
						w.ps.err = err
					}
				}
				e.notifyLocked()
				e.mu.Unlock()
			}
			return true
		}
		e.mu.Lock()
		for _, w := range committed {
			if w.ps.gen != w.gen || e.parts[w.ps.tp] != w.ps {
				continue
			}
			if om, ok := offs[w.ps.tp]; ok {
				w.ps.reset = posKnown
				w.ps.position, w.ps.fetchPos, w.ps.epoch = om.Offset, om.Offset, om.epoch()
				continue
			}
			if e.cfg.AutoOffsetReset == "none" {
				w.ps.err = &NoOffsetError{TopicPartition: w.ps.tp}
				continue
			}
			w.ps.reset = resetFor(e.cfg.AutoOffsetReset)
			w.kind = w.ps.reset
			reset = append(reset, w)
		}
		e.notifyLocked()
		e.mu.Unlock()
	}
	if len(reset) == 0 {
		return false
	}
	q := map[TopicPartition]int64{}
	for _, w := range reset {
		if w.kind == posEarliest {
			q[w.ps.tp] = -2
		} else {
			q[w.ps.tp] = -1
		}
	}
	got, failed := e.listOffsets(e.ctx, q)
	e.mu.Lock()
	for _, w := range reset {
		r, ok := got[w.ps.tp]
		if !ok || w.ps.gen != w.gen || e.parts[w.ps.tp] != w.ps {
			continue
		}
		w.ps.reset = posKnown
		w.ps.position, w.ps.fetchPos, w.ps.epoch = r.Offset, r.Offset, r.LeaderEpoch
	}
	e.notifyLocked()
	e.mu.Unlock()
	return failed
}

// listOffsets asks each partition's leader for the offset at a timestamp
// (-2 earliest, -1 latest). Partitions whose lookup failed are missing
// from the answer; failed says there were some (their leaders are looked
// up again).
func (e *engine) listOffsets(ctx context.Context, q map[TopicPartition]int64) (map[TopicPartition]OffsetAndTimestamp, bool) {
	byNode := map[int32]*kmsg.ListOffsetsRequest{}
	failed := false
	e.mu.Lock()
	for tp, ts := range q {
		node := e.leader(tp)
		if node < 0 {
			failed = true
			if ps := e.parts[tp]; ps != nil {
				ps.needMeta = true
			}
			continue
		}
		r := byNode[node]
		if r == nil {
			r = kmsg.NewPtrListOffsetsRequest()
			r.ReplicaID = -1
			r.IsolationLevel = e.isolation
			byNode[node] = r
		}
		var rt *kmsg.ListOffsetsRequestTopic
		for i := range r.Topics {
			if r.Topics[i].Topic == tp.Topic {
				rt = &r.Topics[i]
			}
		}
		if rt == nil {
			r.Topics = append(r.Topics, kmsg.NewListOffsetsRequestTopic())
			rt = &r.Topics[len(r.Topics)-1]
			rt.Topic = tp.Topic
		}
		p := kmsg.NewListOffsetsRequestTopicPartition()
		p.Partition = tp.Partition
		p.CurrentLeaderEpoch = -1
		p.Timestamp = ts
		rt.Partitions = append(rt.Partitions, p)
	}
	e.mu.Unlock()
	out := map[TopicPartition]OffsetAndTimestamp{}
	for node, r := range byNode {
		r.Version = 7 // the version before KIP-1005's earliest-local timestamps, which this client does not use
		resp, err := e.cl.Request(ctx, node, r)
		if err != nil {
			failed = true
			e.markNeedMeta(r)
			continue
		}
		for _, rt := range resp.(*kmsg.ListOffsetsResponse).Topics {
			for _, rp := range rt.Partitions {
				tp := TopicPartition{rt.Topic, rp.Partition}
				if rp.ErrorCode != 0 {
					failed = true
					e.mu.Lock()
					if ps := e.parts[tp]; ps != nil {
						ps.needMeta = true
					}
					e.mu.Unlock()
					continue
				}
				ot := OffsetAndTimestamp{Offset: rp.Offset, LeaderEpoch: rp.LeaderEpoch}
				if rp.Timestamp >= 0 {
					ot.Timestamp = time.UnixMilli(rp.Timestamp)
				}
				out[tp] = ot
			}
		}
	}
	return out, failed
}

func (e *engine) markNeedMeta(r *kmsg.ListOffsetsRequest) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, rt := range r.Topics {
		for _, p := range rt.Partitions {
			if ps := e.parts[TopicPartition{rt.Topic, p.Partition}]; ps != nil {
				ps.needMeta = true
			}
		}
	}
}
