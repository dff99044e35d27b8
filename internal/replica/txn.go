package replica

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"gregor/internal/log"
	"gregor/internal/record"
)

// Appends by coordinators (Kafka's ReplicaManager.appendRecords with
// AppendOrigin.COORDINATOR and requiredAcks -1): the transaction
// coordinator's markers (WriteTxnMarkers) and the group coordinator's
// transactional offset commits. They are leader appends like a produce, but
// the producer state checks only epochs. WriteTxnMarker waits for the ISR;
// the coordinator runtime's own appends do not, it waits for the commit
// before it answers (coordinator.Runtime.Do).

// TxnMarker is one end transaction marker to write to a partition.
type TxnMarker struct {
	ProducerID       int64
	ProducerEpoch    int16
	CoordinatorEpoch int32
	Commit           bool
	// TransactionVersion is the WriteTxnMarkers request's transaction
	// version: 0 or 1 (the zero value) accept a marker at the producer's
	// current epoch; 2 (KIP-890) wants the bumped epoch the coordinator
	// writes, except for a retry of the marker that ended the last
	// transaction.
	TransactionVersion int16
}

// WriteTxnMarker appends a commit/abort control batch to a partition this
// broker leads and waits until the HW passes it (acks=-1), like Kafka's
// WriteTxnMarkers path (AppendOrigin.COORDINATOR). Errors are *kerr.Error
// values (wrapped with context): NOT_LEADER_OR_FOLLOWER,
// UNKNOWN_TOPIC_OR_PARTITION, INVALID_PRODUCER_EPOCH (the marker's epoch is
// below the producer's), TRANSACTION_COORDINATOR_FENCED (its coordinator
// epoch is below the last marker's), KAFKA_STORAGE_ERROR,
// NOT_ENOUGH_REPLICAS(_AFTER_APPEND), REQUEST_TIMED_OUT at ctx's end. A
// marker for a producer without an open transaction here is written all
// the same, as Kafka does.
func (m *Manager) WriteTxnMarker(ctx context.Context, topic string, partition int32, marker TxnMarker) error {
	res := m.AppendTxnMarker(topic, partition, marker)
	if res.Err != nil {
		return res.Err
	}
	if err := m.WaitReplicated(ctx, topic, partition, res.Info.LastOffset+1); err != nil {
		return fmt.Errorf("write transaction marker to %s-%d: %w", topic, partition, err)
	}
	return nil
}

// AppendTxnMarker appends a transaction marker as WriteTxnMarker does, but
// does not wait for the ISR: a coordinator writing to its own partition
// waits for the commit itself (coordinator.Runtime).
func (m *Manager) AppendTxnMarker(topic string, partition int32, marker TxnMarker) ProduceResult {
	batch, err := log.BuildTxnMarker(marker.ProducerID, marker.ProducerEpoch, marker.CoordinatorEpoch, marker.Commit, m.cfg.Now().UnixMilli())
	if err != nil {
		return ProduceResult{Err: fmt.Errorf("write transaction marker to %s-%d: %w", topic, partition, kerr.UnknownServerError), LogStartOffset: -1}
	}
	res := m.appendCoordinator(topic, partition, batch, marker.TransactionVersion)
	if res.Err != nil {
		res.Err = fmt.Errorf("write transaction marker to %s-%d: %w", topic, partition, res.Err)
	}
	return res
}

// AppendCoordinator appends a batch written by a coordinator
// (AppendOrigin.COORDINATOR: producer epoch checked, sequence not) with
// acks=-1 and does not wait for the ISR: the coordinator runtime waits for
// the commit itself. Res.Err is a *kerr.Error (wrapped) as for
// WriteTxnMarker.
func (m *Manager) AppendCoordinator(topic string, partition int32, records []byte) ProduceResult {
	return m.appendCoordinator(topic, partition, records, 0)
}

// appendCoordinator appends without waiting; Err is a *kerr.Error.
func (m *Manager) appendCoordinator(topic string, partition int32, records []byte, transactionVersion int16) ProduceResult {
	part, err := m.Leader(topic, partition)
	if err != nil {
		return ProduceResult{Err: err, LogStartOffset: -1}
	}
	info, err := part.AppendAsCoordinator(records, transactionVersion, m.cfg.Now().UnixMilli())
	res := ProduceResult{Info: info, LogStartOffset: part.Log().LogStartOffset()}
	if err != nil {
		res.Err = fmt.Errorf("%w: %w", kafkaError(err), err)
		return res
	}
	m.partitionChanged(part.TopicPartition)
	return res
}

// kafkaError maps a log append error to its Kafka error.
func kafkaError(err error) *kerr.Error {
	var ke *kerr.Error
	switch {
	case errors.As(err, &ke):
		return ke
	case errors.Is(err, log.ErrKafkaStorage):
		return kerr.KafkaStorageError
	case errors.Is(err, log.ErrInvalidProducerEpoch):
		return kerr.InvalidProducerEpoch
	case errors.Is(err, log.ErrTransactionCoordinatorFenced):
		return kerr.TransactionCoordinatorFenced
	case errors.Is(err, log.ErrInvalidTxnState):
		return kerr.InvalidTxnState
	case errors.Is(err, log.ErrOutOfOrderSequence):
		return kerr.OutOfOrderSequenceNumber
	case errors.Is(err, log.ErrClosed):
		return kerr.NotLeaderForPartition
	}
	if e := kerr.ErrorForCode(record.KafkaErrorCode(err)); e != nil {
		var ke *kerr.Error
		if errors.As(e, &ke) {
			return ke
		}
	}
	return kerr.UnknownServerError
}

// StartTxnVerification returns the guard a transactional producer's batch
// is appended with (AppendVerified) and whether the transaction coordinator
// must first confirm that the partition is in the producer's transaction
// (KIP-890 part 1; log.Log.MaybeStartTxnVerification).
func (m *Manager) StartTxnVerification(topic string, p int32, producerID int64, epoch int16) (log.VerificationGuard, bool, error) {
	part, err := m.Leader(topic, p)
	if err != nil {
		return 0, false, err
	}
	guard, needed := part.Log().MaybeStartTxnVerification(producerID, epoch)
	return guard, needed, nil
}

// AppendVerified is Append for a batch verified under guard.
func (m *Manager) AppendVerified(topic string, p int32, acks int16, records []byte, guard log.VerificationGuard) ProduceResult {
	part, err := m.Leader(topic, p)
	if err != nil {
		return ProduceResult{Err: err, LogStartOffset: -1}
	}
	info, err := part.AppendAsLeaderVerified(records, acks, m.cfg.Now().UnixMilli(), guard)
	res := ProduceResult{Info: info, LogStartOffset: part.Log().LogStartOffset(), Err: err}
	if err == nil {
		m.partitionChanged(part.TopicPartition)
	}
	return res
}

// ReadToLogEnd reads a partition this broker leads up to its log end offset,
// not the high watermark, and returns the records and the log end. A
// coordinator loading its state reads this way, as Kafka's loaders read to
// the log end: a new leader's high watermark can lag records the old leader
// had committed, and whatever the new leader's log holds becomes committed
// as its followers catch up from it.
func (m *Manager) ReadToLogEnd(topic string, p int32, offset int64, maxBytes int32) ([]byte, int64, error) {
	part, err := m.Leader(topic, p)
	if err != nil {
		return nil, -1, err
	}
	l := part.Log()
	leo := l.LogEndOffset()
	if offset >= leo {
		return nil, leo, nil
	}
	info, err := l.Read(offset, maxBytes, leo, true)
	if err != nil {
		return nil, leo, fmt.Errorf("read %s-%d at %d: %w", topic, p, offset, err)
	}
	return info.Records, leo, nil
}
