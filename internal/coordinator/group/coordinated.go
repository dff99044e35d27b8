package group

import (
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"gregor/internal/coordinator"
)

// Coordinated adapts a Shard to the coordinator runtime (coordinator.Shard):
// the runtime's goroutine feeds it time and records, and its Results are
// written through the runtime's Writer.
type Coordinated struct {
	*Shard
}

var (
	_ coordinator.Shard              = Coordinated{}
	_ coordinator.TransactionalShard = Coordinated{}
)

// Replay implements coordinator.Shard.
func (c Coordinated) Replay(now time.Time, key, value []byte) error {
	return c.Shard.Replay(now.UnixMilli(), key, value)
}

// ReplayTransactional implements coordinator.TransactionalShard.
func (c Coordinated) ReplayTransactional(now time.Time, producerID int64, _ int16, key, value []byte) error {
	return c.Shard.ReplayTransactional(now.UnixMilli(), producerID, key, value)
}

// ReplayEndTxn implements coordinator.TransactionalShard.
func (c Coordinated) ReplayEndTxn(producerID int64, commit bool) error {
	c.Shard.ReplayEndTxn(producerID, commit)
	return nil
}

// Tick implements coordinator.Shard.
func (c Coordinated) Tick(now time.Time, w *coordinator.Writer) {
	_ = Finish(RuntimeWriter{w}, c.Shard.Tick(now.UnixMilli()), AppendErrorCode)
}

// NextDeadline implements coordinator.Shard.
func (c Coordinated) NextDeadline() time.Time {
	if d := c.Shard.NextDeadline(); d > 0 {
		return time.UnixMilli(d)
	}
	return time.Time{}
}

// Unload implements coordinator.Shard.
func (c Coordinated) Unload() { deliver(c.Shard.Unload(kerr.NotCoordinator.Code)) }

// RuntimeWriter writes a Result's records with the runtime's Writer.
type RuntimeWriter struct{ W *coordinator.Writer }

// Write implements Writer.
func (w RuntimeWriter) Write(records []Record) error {
	return w.W.Write(runtimeRecords(records))
}

// WriteTransactional implements Writer.
func (w RuntimeWriter) WriteTransactional(producerID int64, producerEpoch int16, records []Record) error {
	return w.W.WriteTransactional(producerID, producerEpoch, runtimeRecords(records))
}

// AfterCommit implements Writer.
func (w RuntimeWriter) AfterCommit(fn func(error)) { w.W.AfterCommit(fn) }

func runtimeRecords(records []Record) []coordinator.Record {
	out := make([]coordinator.Record, len(records))
	for i, r := range records {
		out[i] = coordinator.Record{Key: r.Key, Value: r.Value}
	}
	return out
}

// AppendErrorCode maps a failed write to __consumer_offsets to the code a
// group client is told, as Kafka's coordinator does (a batch over
// max.message.bytes, as an oversized subscription makes in SyncGroup, is
// UNKNOWN_SERVER_ERROR).
func AppendErrorCode(err error) int16 {
	var ke *kerr.Error
	if !errors.As(err, &ke) {
		return kerr.UnknownServerError.Code
	}
	switch ke {
	case kerr.UnknownTopicOrPartition, kerr.NotEnoughReplicas, kerr.NotEnoughReplicasAfterAppend, kerr.RequestTimedOut:
		return kerr.CoordinatorNotAvailable.Code
	case kerr.NotLeaderForPartition, kerr.KafkaStorageError:
		return kerr.NotCoordinator.Code
	case kerr.MessageTooLarge, kerr.RecordListTooLarge, kerr.InvalidFetchSize:
		// Kafka 4's coordinator runtime (CoordinatorOperationExceptionHelper);
		// INVALID_COMMIT_OFFSET_SIZE was the old coordinator's answer.
		return kerr.UnknownServerError.Code
	}
	return ke.Code
}
