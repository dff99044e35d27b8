package producer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Producer sends records to Kafka: Kafka's KafkaProducer. It is safe for
// concurrent use; one producer per application is usual, as in Java.
type Producer[K, V any] struct {
	e            *engine
	keySer       Serializer[K]
	valueSer     Serializer[V]
	interceptors []Interceptor[K, V]
	onAck        func(RecordMetadata, error) // all interceptors; nil when none
}

// New starts a producer. It connects lazily: the first Send fetches the
// topic's metadata (and, with idempotence, a producer id).
func New[K, V any](cfg Config, keySer Serializer[K], valueSer Serializer[V], interceptors ...Interceptor[K, V]) (*Producer[K, V], error) {
	if keySer == nil || valueSer == nil {
		return nil, errors.New("producer: a key and a value serializer are required")
	}
	r, err := cfg.validate()
	if err != nil {
		return nil, fmt.Errorf("producer config: %w", err)
	}
	e, err := newEngine(r)
	if err != nil {
		return nil, fmt.Errorf("producer: %w", err)
	}
	p := &Producer[K, V]{e: e, keySer: keySer, valueSer: valueSer, interceptors: interceptors}
	if len(interceptors) > 0 {
		p.onAck = func(md RecordMetadata, err error) {
			for _, i := range interceptors {
				i.OnAcknowledgement(md, err)
			}
		}
	}
	return p, nil
}

// NewFromProperties starts a producer configured by Kafka producer property
// names, as a Java client's .properties file holds them.
func NewFromProperties[K, V any](props map[string]string, keySer Serializer[K], valueSer Serializer[V], interceptors ...Interceptor[K, V]) (*Producer[K, V], error) {
	cfg, err := ConfigFromProperties(props)
	if err != nil {
		return nil, fmt.Errorf("producer config: %w", err)
	}
	return New(cfg, keySer, valueSer, interceptors...)
}

// ErrRecordTooLarge is the error of a record larger than max.request.size
// or buffer.memory (Kafka's RecordTooLargeException).
var ErrRecordTooLarge = kerr.MessageTooLarge

// Send hands a record to the producer and returns once it is in the
// accumulator; cb (which may be nil: fire-and-forget) gets its outcome. Send
// blocks up to max.block.ms for the topic's metadata and for buffer.memory
// to have room; ctx can end the wait sooner. When Send returns an error the
// record was not accepted and cb is not called.
func (p *Producer[K, V]) Send(ctx context.Context, rec Record[K, V], cb Callback) error {
	for _, i := range p.interceptors {
		rec = i.OnSend(rec)
	}
	err := p.send(ctx, rec, cb)
	if err != nil && p.onAck != nil {
		part := int32(-1)
		if rec.HasPartition {
			part = rec.Partition
		}
		p.onAck(RecordMetadata{Topic: rec.Topic, Partition: part, Offset: -1}, err)
	}
	return err
}

func (p *Producer[K, V]) send(ctx context.Context, rec Record[K, V], cb Callback) error {
	e := p.e
	now := time.Now()
	deadline := now.Add(e.cfg.MaxBlock)
	if rec.Topic == "" {
		return errors.New("send: record has no topic")
	}
	want := int32(-1)
	if rec.HasPartition {
		if rec.Partition < 0 {
			return fmt.Errorf("send: invalid partition %d", rec.Partition)
		}
		want = rec.Partition
	}
	t, err := e.topicMetadata(ctx, rec.Topic, want, now)
	if err != nil {
		return fmt.Errorf("send to %s: %w", rec.Topic, err)
	}
	key, err := p.keySer.Serialize(rec.Topic, rec.Headers, rec.Key)
	if err != nil {
		return fmt.Errorf("send to %s: serialize key: %w", rec.Topic, err)
	}
	value, err := p.valueSer.Serialize(rec.Topic, rec.Headers, rec.Value)
	if err != nil {
		return fmt.Errorf("send to %s: serialize value: %w", rec.Topic, err)
	}
	size := estimateSize(key, value, rec.Headers)
	if size > e.cfg.MaxRequestSize || int64(size) > e.cfg.BufferMemory {
		return fmt.Errorf("send to %s: record of %d bytes is larger than max.request.size (%d) or buffer.memory (%d): %w",
			rec.Topic, size, e.cfg.MaxRequestSize, e.cfg.BufferMemory, ErrRecordTooLarge)
	}
	numPartitions := int32(len(t.Partitions))
	var partition int32
	switch {
	case rec.HasPartition:
		partition = rec.Partition
	case e.cfg.Partitioner != nil:
		partition = e.cfg.Partitioner.Partition(rec.Topic, key, value, clusterView{e})
		if partition < 0 || partition >= numPartitions {
			return fmt.Errorf("send to %s: partitioner chose partition %d of %d", rec.Topic, partition, numPartitions)
		}
	case key != nil && !e.cfg.PartitionerIgnoreKeys:
		partition = keyPartition(key, numPartitions)
	default:
		var load partitionLoad
		if e.cfg.PartitionerAdaptive {
			load = e
		}
		partition = e.sticky.partition(rec.Topic, size, numPartitions, t.Available, load)
	}
	if err := e.memory.reserve(ctx, int64(size), deadline); err != nil {
		return fmt.Errorf("send to %s: %w", rec.Topic, err)
	}
	ts := rec.Timestamp
	if ts.IsZero() {
		ts = now
	}
	pr := pendingRecord{cb: cb, onAck: p.onAck, timestamp: ts.UnixMilli(), keySize: sizeOrNull(key), valueSize: sizeOrNull(value)}
	e.mu.Lock()
	if e.closing {
		e.mu.Unlock()
		e.memory.release(int64(size))
		return fmt.Errorf("send to %s: %w", rec.Topic, ErrProducerClosed)
	}
	_, wake := e.appendLocked(topicPartition{rec.Topic, partition}, pr.timestamp, key, value, rec.Headers, pr, int64(size), time.Now())
	e.mu.Unlock()
	if wake || e.cfg.Linger == 0 {
		e.signal()
	}
	return nil
}

// estimateSize bounds a record's encoded size from above (Kafka's
// DefaultRecord.sizeInBytes plus varint slack), for buffer.memory and
// max.request.size.
func estimateSize(key, value []byte, headers []Header) int {
	n := 21 + len(key) + len(value)
	for _, h := range headers {
		n += 10 + len(h.Key) + len(h.Value)
	}
	return n
}

func sizeOrNull(b []byte) int {
	if b == nil {
		return -1
	}
	return len(b)
}

// SendSync sends a record and waits for its acknowledgement (Kafka's
// send(record).get()). When ctx ends first SendSync returns ctx's error;
// the record may still be delivered.
func (p *Producer[K, V]) SendSync(ctx context.Context, rec Record[K, V]) (RecordMetadata, error) {
	type outcome struct {
		md  RecordMetadata
		err error
	}
	ch := make(chan outcome, 1)
	if err := p.Send(ctx, rec, func(md RecordMetadata, err error) { ch <- outcome{md, err} }); err != nil {
		return RecordMetadata{}, err
	}
	select {
	case o := <-ch:
		return o.md, o.err
	case <-ctx.Done():
		return RecordMetadata{}, ctx.Err()
	}
}

// Flush sends every record accepted before the call without waiting for
// linger.ms and waits until each is acknowledged or failed (Kafka's
// flush). When ctx ends first it returns ctx's error.
func (p *Producer[K, V]) Flush(ctx context.Context) error {
	e := p.e
	e.mu.Lock()
	e.flushing++
	waits := make([]chan struct{}, 0, len(e.incomplete))
	for b := range e.incomplete {
		waits = append(waits, b.done)
	}
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		e.flushing--
		e.mu.Unlock()
	}()
	e.signal()
	for _, w := range waits {
		select {
		case <-w:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// Close sends what is accepted and waits up to timeout for it to be
// acknowledged, then stops (Kafka's close(Duration)). Records still
// unacknowledged at the timeout fail with ErrProducerClosed. A timeout of
// 0 fails them at once. Send after Close fails with ErrProducerClosed.
func (p *Producer[K, V]) Close(timeout time.Duration) error {
	e := p.e
	e.mu.Lock()
	e.closing = true
	e.mu.Unlock()
	e.signal()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var err error
	select {
	case <-e.stopped:
	case <-timer.C:
		e.mu.Lock()
		e.forced = true
		n := len(e.incomplete)
		e.mu.Unlock()
		if n > 0 {
			err = fmt.Errorf("close: %d batch(es) not acknowledged within %v: %w", n, timeout, ErrProducerClosed)
		}
		e.signal()
		e.cluster.Close() // fail the requests in flight
		<-e.stopped
	}
	e.cluster.Close()
	e.compressor.close()
	return err
}

// clusterView is the Partitioner's view of the metadata.
type clusterView struct{ e *engine }

func (c clusterView) NumPartitions(topic string) int32 {
	if t := c.e.cluster.Topic(topic); t != nil {
		return int32(len(t.Partitions))
	}
	return 0
}

func (c clusterView) AvailablePartitions(topic string) []int32 {
	if t := c.e.cluster.Topic(topic); t != nil {
		return t.Available
	}
	return nil
}
