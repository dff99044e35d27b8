package producer

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/record"
)

// The accumulator (Kafka's RecordAccumulator) holds records per partition in
// batches until the sender drains them. All of its state is guarded by the
// engine's mu.
//
// Idempotence invariants, per partition:
//   - A batch gets its base sequence (and the producer epoch) the first time
//     it is drained and keeps it on retries, so the broker can tell a retry
//     from a new batch and answer a duplicate with the original offset.
//   - Batches are sequenced in queue order and the queue is kept in sequence
//     order: a batch coming back for a retry is put back before every
//     unsequenced batch and after the sequenced ones below it.
//   - A sequenced batch is sent again only when none of the partition's
//     batches is in flight, so retries reach the broker in sequence order
//     even with max.in.flight.requests.per.connection up to 5.
//   - From the partition's oldest unacknowledged batch to its newest sent
//     one there are at most max.in.flight.requests.per.connection (<= 5)
//     batches. The broker remembers a producer's last 5 batches to answer a
//     retried duplicate with its offset; a batch written on a connection
//     that then broke, followed by 5 more, would be forgotten, and its
//     retry refused as out of sequence. Counting in-flight requests alone
//     does not bound this: a later batch can be acknowledged on a new
//     connection while the older one awaits its retry.

type topicPartition struct {
	topic     string
	partition int32
}

// pendingRecord is what completing a record needs.
type pendingRecord struct {
	cb          Callback
	onAck       func(RecordMetadata, error) // the interceptors; nil when none
	timestamp   int64                       // ms
	keySize     int
	valueSize   int
	offsetDelta int32
}

type batch struct {
	tp      topicPartition
	records []pendingRecord
	// buf holds record.HeaderSize bytes of room for the batch header, then
	// the encoded records, uncompressed; an uncompressed batch is sent from
	// it without a copy.
	buf           []byte
	baseTimestamp int64
	maxTimestamp  int64
	memory        int64 // bytes reserved from buffer.memory
	created       time.Time
	done          chan struct{} // closed when the batch completes

	closed bool // drained at least once; no more appends

	// Set when sequenced (idempotence): order ranks the partition's
	// batches in sequence order; seq is -1 before sequencing.
	seq   int32
	order uint64
	pid   int64
	epoch int16

	// framed is HeaderSize bytes of room then the records as sent
	// (compressed when compression is on); encoded is framed with the
	// header written for the current pid/epoch/seq.
	framed  []byte
	encoded []byte

	attempts  int
	retryAt   time.Time
	ambiguous bool // the last attempt failed without an answer: it may have been written
}

func (b *batch) size() int { return len(b.buf) }

// records returns the encoded records.
func (b *batch) recordBytes() []byte { return b.buf[record.HeaderSize:] }

// newBuf returns an empty batch buffer of batch.size bytes, reused from
// completed batches when one is free (Kafka's BufferPool keeps batch.size
// buffers for the same reason).
func (p *engine) newBuf() []byte {
	if bp, ok := p.bufs.Get().(*[]byte); ok {
		return (*bp)[:record.HeaderSize]
	}
	return make([]byte, record.HeaderSize, record.HeaderSize+p.cfg.BatchSize)
}

// freeBuf returns a completed batch's buffer for reuse. Nothing refers to
// it any more: a request copies the batch into its own buffer when it is
// encoded, before the request can complete.
func (p *engine) freeBuf(b *batch) {
	if cap(b.buf) == record.HeaderSize+p.cfg.BatchSize {
		buf := b.buf
		p.bufs.Put(&buf)
	}
	b.buf, b.framed, b.encoded = nil, nil, nil
}

type partitionState struct {
	tp       topicPartition
	queue    []*batch
	inflight []*batch // sent, awaiting the answer
	nextSeq  int32
	order    uint64
	// gapOrder, when not zero, is the order of the first batch that will
	// not reach the broker in the current epoch (failed, expired, or
	// refused as out of sequence): batches at or after it wait for the
	// epoch bump that resets sequences.
	gapOrder uint64
}

// appendLocked adds a record to tp's last batch when it fits within
// batch.size (memory is the record's size bound), or starts a batch. It
// reports whether the sender should be woken.
func (p *engine) appendLocked(tp topicPartition, ts int64, key, value []byte, headers []Header, pr pendingRecord, memory int64, now time.Time) (*batch, bool) {
	ps := p.parts[tp]
	if ps == nil {
		ps = &partitionState{tp: tp}
		p.parts[tp] = ps
	}
	var b *batch
	if n := len(ps.queue); n > 0 {
		last := ps.queue[n-1]
		if !last.closed && last.size()+int(memory) <= p.cfg.BatchSize {
			b = last
		}
	}
	wake := false
	if b == nil {
		b = &batch{tp: tp, created: now, done: make(chan struct{}), seq: -1,
			baseTimestamp: ts, maxTimestamp: ts, buf: p.newBuf()}
		// Wake the sender: the previous batch is full, or the new batch's
		// linger.ms deadline is one it has not seen.
		wake = true
		ps.queue = append(ps.queue, b)
		p.incomplete[b] = struct{}{}
	}
	pr.offsetDelta = int32(len(b.records))
	r := record.Record{OffsetDelta: pr.offsetDelta, Key: key, Value: value, Headers: headers}
	b.buf = record.AppendRecord(b.buf, &r, ts-b.baseTimestamp)
	b.maxTimestamp = max(b.maxTimestamp, ts)
	b.records = append(b.records, pr)
	b.memory += memory
	if b.size() >= p.cfg.BatchSize {
		wake = true
	}
	return b, wake
}

// queueSizes is the adaptive partitioner's load view: queued batches per
// partition, and whether the partition's leader is available (it has not
// had data waiting longer than partitioner.availability.timeout.ms).
func (p *engine) queueSizes(topic string, partitions []int32) ([]int, []bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	sizes := make([]int, len(partitions))
	up := make([]bool, len(partitions))
	timeout := p.cfg.PartitionerAvailabilityTimeout
	now := time.Now()
	for i, id := range partitions {
		up[i] = true
		ps := p.parts[topicPartition{topic, id}]
		if ps == nil {
			continue
		}
		sizes[i] = len(ps.queue) + len(ps.inflight)
		if timeout > 0 && len(ps.queue) > 0 && now.Sub(ps.queue[0].created) > timeout+p.cfg.Linger {
			up[i] = false
		}
	}
	return sizes, up
}

// requeueLocked puts a batch back in its partition's queue for a retry, in
// sequence order.
func (p *engine) requeueLocked(ps *partitionState, b *batch, now time.Time) {
	b.retryAt = now.Add(p.backoff(b.attempts))
	i := 0
	for i < len(ps.queue) && ps.queue[i].seq >= 0 && ps.queue[i].order < b.order {
		i++
	}
	if b.seq < 0 {
		i = 0 // never sequenced (not idempotent): back to the front
	}
	ps.queue = append(ps.queue, nil)
	copy(ps.queue[i+1:], ps.queue[i:])
	ps.queue[i] = b
}

// removeInflight drops b from its partition's in-flight list.
func (ps *partitionState) removeInflight(b *batch) {
	for i, o := range ps.inflight {
		if o == b {
			ps.inflight = append(ps.inflight[:i], ps.inflight[i+1:]...)
			return
		}
	}
}

// oldestUnacked is the order of the partition's oldest sequenced batch not
// yet acknowledged (in flight or queued for a retry), or 0.
func (ps *partitionState) oldestUnacked() uint64 {
	var low uint64
	for _, o := range ps.inflight {
		if o.seq >= 0 && (low == 0 || o.order < low) {
			low = o.order
		}
	}
	if len(ps.queue) > 0 && ps.queue[0].seq >= 0 && (low == 0 || ps.queue[0].order < low) {
		low = ps.queue[0].order
	}
	return low
}

// lowestUnresolved reports whether b is the first of its partition's
// unacknowledged sequenced batches.
func (ps *partitionState) lowestUnresolved(b *batch) bool {
	for _, o := range ps.inflight {
		if o.seq >= 0 && o.order < b.order {
			return false
		}
	}
	for _, o := range ps.queue {
		if o.seq >= 0 && o.order < b.order {
			return false
		}
	}
	return true
}

// markGap records that b will not be written in the current epoch, so the
// batches sequenced after it must be re-sequenced under a new epoch.
func (p *engine) markGapLocked(ps *partitionState, b *batch) {
	if b.seq < 0 || !p.cfg.idempotent {
		return
	}
	if ps.gapOrder == 0 || b.order < ps.gapOrder {
		ps.gapOrder = b.order
	}
	p.bumpNeeded = true
}

// drainable reports whether the partition's front batch may be sent now,
// given its leader's in-flight requests are below the limit.
func (p *engine) drainableLocked(ps *partitionState, now time.Time) bool {
	if len(ps.queue) == 0 {
		return false
	}
	b := ps.queue[0]
	if b.retryAt.After(now) {
		return false
	}
	if p.cfg.idempotent {
		if b.seq >= 0 && len(ps.inflight) > 0 {
			return false // retries go one at a time, in sequence order
		}
		if b.seq < 0 {
			if low := ps.oldestUnacked(); low != 0 && ps.order+1-low >= uint64(p.cfg.MaxInFlight) {
				return false // the window of the broker's duplicate check is full
			}
		}
		if p.bumpNeeded || p.pid < 0 {
			// Only batches of the current epoch below any gap may go
			// before the bump; the rest wait for their new sequence.
			if b.seq < 0 || b.epoch != p.epoch || b.pid != p.pid || (ps.gapOrder != 0 && b.order >= ps.gapOrder) {
				return false
			}
		}
	} else if p.cfg.MaxInFlight == 1 && len(ps.inflight) > 0 {
		return false
	}
	return true
}

// readyLocked reports whether the front batch should be sent now, and if
// not, when it will be.
func (p *engine) readyLocked(ps *partitionState, now time.Time) (bool, time.Time) {
	b := ps.queue[0]
	if b.closed { // a retry
		return !b.retryAt.After(now), b.retryAt
	}
	lingerEnd := b.created.Add(p.cfg.Linger)
	full := len(ps.queue) > 1 || b.size() >= p.cfg.BatchSize
	if full || !lingerEnd.After(now) || p.flushing > 0 || p.closing || p.memory.hasWaiters() {
		return true, now
	}
	return false, lingerEnd
}

// sequenceLocked gives b its base sequence when it has none.
func (p *engine) sequenceLocked(ps *partitionState, b *batch) {
	if !p.cfg.idempotent || b.seq >= 0 {
		return
	}
	b.seq = ps.nextSeq
	b.pid, b.epoch = p.pid, p.epoch
	ps.nextSeq = record.IncrementSequence(ps.nextSeq, int32(len(b.records)))
	ps.order++
	b.order = ps.order
	b.encoded = nil
}

// encode builds the wire batch of b for its producer id, epoch and sequence
// (with compression, once). It runs on the sender goroutine outside mu: a
// drained batch belongs to the sender until its request is answered.
func (p *engine) encode(b *batch) error {
	if b.encoded != nil {
		return nil
	}
	if b.framed == nil {
		if p.cfg.codec == record.CodecNone {
			b.framed = b.buf
		} else {
			out, err := p.compressor.compress(make([]byte, record.HeaderSize, record.HeaderSize+len(b.buf)/2+64), b.recordBytes())
			if err != nil {
				return err
			}
			b.framed = out
		}
	}
	payloadLen := len(b.framed) - record.HeaderSize
	rb := kmsg.RecordBatch{
		FirstOffset:          0,
		PartitionLeaderEpoch: -1,
		Magic:                2,
		Attributes:           int16(p.cfg.codec) & 0x07,
		LastOffsetDelta:      int32(len(b.records) - 1),
		FirstTimestamp:       b.baseTimestamp,
		MaxTimestamp:         b.maxTimestamp,
		ProducerID:           -1,
		ProducerEpoch:        -1,
		FirstSequence:        -1,
		NumRecords:           int32(len(b.records)),
	}
	if b.seq >= 0 {
		rb.ProducerID, rb.ProducerEpoch, rb.FirstSequence = b.pid, b.epoch, b.seq
	}
	// Length counts from the partition leader epoch to the end.
	rb.Length = int32(record.HeaderSize - record.LogOverhead + payloadLen)
	// The header is written into the room before the records (no copy of
	// the records); AppendTo stays within the buffer's capacity.
	rb.AppendTo(b.framed[:0])
	out := b.framed
	record.UpdateCRC(out)
	b.encoded = out
	return nil
}
