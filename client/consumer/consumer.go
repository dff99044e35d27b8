package consumer

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Consumer reads records from Kafka partitions: Kafka's KafkaConsumer in
// assign mode. Like Java's, it is meant for one goroutine: Poll, Seek,
// Commit and the rest are safe to call concurrently but interleave in no
// defined order. The blocking calls other than Poll (Position, Committed,
// CommitSync, OffsetsForTimes, BeginningOffsets, EndOffsets and Close's
// commit) end when their ctx does or after default.api.timeout.ms,
// whichever comes first.
type Consumer[K, V any] struct {
	e            *engine
	keyDes       Deserializer[K]
	valueDes     Deserializer[V]
	interceptors []Interceptor[K, V]
}

// New starts a consumer with no assignment; it connects when partitions
// are assigned. Close it to stop its goroutines and connections.
func New[K, V any](cfg Config, keyDes Deserializer[K], valueDes Deserializer[V], interceptors ...Interceptor[K, V]) (*Consumer[K, V], error) {
	if keyDes == nil || valueDes == nil {
		return nil, errors.New("consumer: a key and a value deserializer are required")
	}
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("consumer config: %w", err)
	}
	c := &Consumer[K, V]{keyDes: keyDes, valueDes: valueDes, interceptors: interceptors}
	e, err := newEngine(cfg, func(e *engine) {
		if len(interceptors) > 0 {
			e.onCommit = func(offs map[TopicPartition]OffsetAndMetadata) {
				for _, i := range interceptors {
					i.OnCommit(offs)
				}
			}
		}
	})
	if err != nil {
		return nil, fmt.Errorf("consumer: %w", err)
	}
	c.e = e
	return c, nil
}

// NewFromProperties starts a consumer configured by Kafka consumer
// property names, as a Java client's .properties file holds them.
func NewFromProperties[K, V any](props map[string]string, keyDes Deserializer[K], valueDes Deserializer[V], interceptors ...Interceptor[K, V]) (*Consumer[K, V], error) {
	cfg, err := ConfigFromProperties(props)
	if err != nil {
		return nil, fmt.Errorf("consumer config: %w", err)
	}
	return New(cfg, keyDes, valueDes, interceptors...)
}

// Assign sets the partitions to read, replacing the previous assignment
// (an empty list unassigns all). A partition kept keeps its position; a
// new one starts at the group's committed offset, or where
// auto.offset.reset says when there is none (or no group.id).
func (c *Consumer[K, V]) Assign(partitions []TopicPartition) error {
	return c.e.assign(partitions)
}

// Assignment returns the assigned partitions.
func (c *Consumer[K, V]) Assignment() []TopicPartition { return c.e.assignment() }

// Poll returns the next records of the assigned partitions, at most
// max.poll.records, as soon as some are buffered; the fetcher keeps
// fetching ahead while the application works. When ctx ends first Poll
// returns no records and ctx's error; with no partition assigned it
// returns an error at once. A partition error (offset out of
// range with auto.offset.reset=none, no committed offset, a fetch the
// broker refused) is returned once nothing else is ready, and again until
// the application seeks the partition. Poll also commits the positions
// every auto.commit.interval.ms when enable.auto.commit is on.
func (c *Consumer[K, V]) Poll(ctx context.Context) ([]Record[K, V], error) {
	e := c.e
	for {
		e.mu.Lock()
		if e.closed {
			e.mu.Unlock()
			return nil, errClosed
		}
		if len(e.order) == 0 {
			// As Kafka's consumer: polling nothing is a mistake, not a wait.
			e.mu.Unlock()
			return nil, errNoAssignment
		}
		e.maybeAutoCommitLocked()
		ds, err := e.drainLocked(e.cfg.MaxPollRecords)
		ch := e.changed
		e.mu.Unlock()
		if err != nil {
			return nil, err
		}
		e.wakeFetcher() // buffers have room again: prefetch
		if len(ds) > 0 {
			recs, err := c.convert(ds)
			if err != nil && len(recs) == 0 {
				return nil, err
			}
			for _, i := range c.interceptors {
				recs = i.OnConsume(recs)
			}
			return recs, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-ch:
		}
	}
}

var errNoAssignment = errors.New("poll: no partitions are assigned to this consumer")

// DeserializationError is a record the key or value deserializer refused
// (Kafka's RecordDeserializationException). The partition's position stays
// at the record: Seek past it to go on.
type DeserializationError struct {
	TopicPartition TopicPartition
	Offset         int64
	Err            error
}

func (e *DeserializationError) Error() string {
	return fmt.Sprintf("deserialize %s-%d at offset %d: %v", e.TopicPartition.Topic, e.TopicPartition.Partition, e.Offset, e.Err)
}

func (e *DeserializationError) Unwrap() error { return e.Err }

// convert deserializes drained records. At a record that fails, it stops:
// the records before it are returned, and every partition is put back at
// its first record not returned.
func (c *Consumer[K, V]) convert(ds []drained) ([]Record[K, V], error) {
	n := 0
	for _, d := range ds {
		n += len(d.recs)
	}
	out := make([]Record[K, V], 0, n)
	for di, d := range ds {
		tp := d.ps.tp
		for ri := range d.recs {
			r := &d.recs[ri]
			off := d.h.BaseOffset + int64(r.OffsetDelta)
			rec := Record[K, V]{
				Topic:               tp.Topic,
				Partition:           tp.Partition,
				Offset:              off,
				LogAppendTime:       d.h.LogAppendTime(),
				Headers:             r.Headers,
				LeaderEpoch:         d.h.PartitionLeaderEpoch,
				SerializedKeySize:   -1,
				SerializedValueSize: -1,
			}
			if rec.LogAppendTime {
				rec.Timestamp = time.UnixMilli(d.h.MaxTimestamp)
			} else {
				rec.Timestamp = time.UnixMilli(d.h.BaseTimestamp + r.TimestampDelta)
			}
			if r.Key != nil {
				rec.SerializedKeySize = len(r.Key)
			}
			if r.Value != nil {
				rec.SerializedValueSize = len(r.Value)
			}
			var err error
			if rec.Key, err = c.keyDes.Deserialize(tp.Topic, r.Headers, r.Key); err == nil {
				rec.Value, err = c.valueDes.Deserialize(tp.Topic, r.Headers, r.Value)
			}
			if err != nil {
				c.rewind(ds, di, ri)
				return out, &DeserializationError{TopicPartition: tp, Offset: off, Err: err}
			}
			out = append(out, rec)
		}
	}
	return out, nil
}

// rewind puts each partition drained from ds[di].recs[ri] on back at its
// first record not returned.
func (c *Consumer[K, V]) rewind(ds []drained, di, ri int) {
	e := c.e
	e.mu.Lock()
	defer e.mu.Unlock()
	seen := map[*partState]bool{}
	for i := di; i < len(ds); i++ {
		d := ds[i]
		if seen[d.ps] {
			continue
		}
		seen[d.ps] = true
		r := d.recs[0]
		if i == di {
			r = d.recs[ri]
		}
		e.rewindLocked(d.ps, d.gen, d.h.BaseOffset+int64(r.OffsetDelta))
	}
}

// Seek sets the offset the next Poll of tp starts at.
func (c *Consumer[K, V]) Seek(tp TopicPartition, offset int64) error {
	return c.e.seek(tp, OffsetAndMetadata{Offset: offset})
}

// SeekTo is Seek to a committed position: its leader epoch is kept with the
// position and committed with it.
func (c *Consumer[K, V]) SeekTo(tp TopicPartition, offset OffsetAndMetadata) error {
	return c.e.seek(tp, offset)
}

// SeekToBeginning moves the partitions (all assigned when nil) to their
// first offset; the offset is looked up on the next Poll or Position.
func (c *Consumer[K, V]) SeekToBeginning(partitions []TopicPartition) error {
	return c.e.seekTo(partitions, posEarliest)
}

// SeekToEnd moves the partitions (all assigned when nil) to their end (the
// last stable offset under read_committed), looked up lazily.
func (c *Consumer[K, V]) SeekToEnd(partitions []TopicPartition) error {
	return c.e.seekTo(partitions, posLatest)
}

// Position returns the offset of the next record Poll returns for tp,
// waiting for it to be looked up when needed.
func (c *Consumer[K, V]) Position(ctx context.Context, tp TopicPartition) (int64, error) {
	return c.e.position(ctx, tp)
}

// Pause stops fetching and returning records of the partitions until
// Resume; what is buffered is kept.
func (c *Consumer[K, V]) Pause(partitions []TopicPartition) error { return c.e.pause(partitions, true) }

// Resume undoes Pause.
func (c *Consumer[K, V]) Resume(partitions []TopicPartition) error {
	return c.e.pause(partitions, false)
}

// Paused returns the paused partitions.
func (c *Consumer[K, V]) Paused() []TopicPartition { return c.e.paused() }

// OffsetsForTimes returns, for each partition, the earliest offset whose
// timestamp is at or after the time given, or nil when there is none.
func (c *Consumer[K, V]) OffsetsForTimes(ctx context.Context, times map[TopicPartition]time.Time) (map[TopicPartition]*OffsetAndTimestamp, error) {
	q := make(map[TopicPartition]int64, len(times))
	for tp, t := range times {
		if t.UnixMilli() < 0 {
			return nil, fmt.Errorf("offsets for times: %s-%d: timestamp before 1970", tp.Topic, tp.Partition)
		}
		q[tp] = t.UnixMilli()
	}
	ctx, cancel := c.e.apiCtx(ctx)
	defer cancel()
	return c.e.offsetsFor(ctx, q)
}

// BeginningOffsets returns the partitions' first offsets.
func (c *Consumer[K, V]) BeginningOffsets(ctx context.Context, partitions []TopicPartition) (map[TopicPartition]int64, error) {
	ctx, cancel := c.e.apiCtx(ctx)
	defer cancel()
	return c.e.endOffsets(ctx, partitions, -2)
}

// EndOffsets returns the partitions' end offsets (the last stable offsets
// under read_committed).
func (c *Consumer[K, V]) EndOffsets(ctx context.Context, partitions []TopicPartition) (map[TopicPartition]int64, error) {
	ctx, cancel := c.e.apiCtx(ctx)
	defer cancel()
	return c.e.endOffsets(ctx, partitions, -1)
}

// Committed returns the group's committed offsets of the partitions;
// partitions with none are missing from the map.
func (c *Consumer[K, V]) Committed(ctx context.Context, partitions []TopicPartition) (map[TopicPartition]OffsetAndMetadata, error) {
	ctx, cancel := c.e.apiCtx(ctx)
	defer cancel()
	return c.e.fetchCommitted(ctx, partitions)
}

// CommitSync commits offsets to the group (the current positions of all
// assigned partitions when offsets is nil) and waits for the coordinator's
// answer, retrying while it moves or loads. The consumer commits outside
// the group's membership (generation -1, as Kafka's consumer does for a
// manual assignment), so the coordinator refuses it while the group has
// members.
func (c *Consumer[K, V]) CommitSync(ctx context.Context, offsets map[TopicPartition]OffsetAndMetadata) error {
	if offsets == nil {
		c.e.mu.Lock()
		offsets = c.e.positionsLocked()
		c.e.mu.Unlock()
	}
	ctx, cancel := c.e.apiCtx(ctx)
	defer cancel()
	return c.e.commitSync(ctx, offsets)
}

// CommitAsync commits like CommitSync without waiting; commits are sent in
// the order made, and cb (which may be nil) gets each outcome on the
// consumer's commit goroutine, within default.api.timeout.ms.
func (c *Consumer[K, V]) CommitAsync(offsets map[TopicPartition]OffsetAndMetadata, cb CommitCallback) {
	c.e.commitAsync(offsets, cb)
}

// Close commits the positions when enable.auto.commit is on (waiting at
// most until ctx ends), then stops the fetcher and closes the connections.
// Queued CommitAsync callbacks not yet run get an error.
func (c *Consumer[K, V]) Close(ctx context.Context) error { return c.e.close(ctx) }
