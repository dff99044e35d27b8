package raft

import (
	"context"
	"sync/atomic"

	"gregor/internal/purgatory"
)

// PurgatoryRaftFetch is the delayedOperation label of the metadata long
// polls waiting for the quorum's high watermark.
const PurgatoryRaftFetch = "RaftFetch"

// watermark is a quorum's high watermark with the purgatory of the
// metadata fetches that wait for it to move past their offset (a broker
// following the metadata log long-polls with Fetch; Kafka's
// KafkaRaftClient parks such fetches until the high watermark moves).
type watermark struct {
	offset  atomic.Int64
	waiting *purgatory.Purgatory[struct{}]
}

func newWatermark() watermark {
	return watermark{waiting: purgatory.New[struct{}](PurgatoryRaftFetch)}
}

// Load is the high watermark.
func (w *watermark) Load() int64 { return w.offset.Load() }

// Store moves the high watermark and wakes the fetches it satisfies.
func (w *watermark) Store(offset int64) {
	w.offset.Store(offset)
	w.waiting.Check(struct{}{})
}

// wait blocks until the high watermark passes offset (nil), ctx ends or
// the quorum closes.
func (w *watermark) wait(ctx context.Context, offset int64) error {
	return w.waiting.Wait(ctx, []struct{}{{}}, func() bool { return w.offset.Load() > offset })
}

func (w *watermark) close() { w.waiting.Close() }
