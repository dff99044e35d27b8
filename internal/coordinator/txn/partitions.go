package txn

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/coordinator"
)

// AddPartitionsRequest is one transaction of an AddPartitionsToTxn request:
// the whole request for v0-v3 (from producers), one entry of Transactions
// for v4+ (from partition leaders on behalf of producers, KIP-890).
// Authorization and the check that the partitions exist are the handler's.
type AddPartitionsRequest struct {
	TransactionalID string
	ProducerID      int64
	ProducerEpoch   int16
	Partitions      []TopicPartition
	// Version is the AddPartitionsToTxn request version. v4+ come from
	// brokers for transaction version 2 producers (Kafka's
	// transactionVersionForAddPartitionsToTxn).
	Version int16
}

// AddPartitions adds partitions to a transaction, starting it if none is
// ongoing (Kafka's handleAddPartitionsToTransaction). The Outcome's error
// code applies to every partition.
func (s *Shard) AddPartitions(now int64, req AddPartitionsRequest) Result {
	tv := int16(0)
	if req.Version > 3 {
		tv = 2
	}
	return fencedForOldClients(s.addPartitions(now, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Partitions, tv), req.Version, 2)
}

// AddOffsets adds the __consumer_offsets partition of the group to the
// transaction, so that TxnOffsetCommit may write there and the markers
// reach the group coordinator (Kafka's handleAddOffsetsToTxnRequest).
func (s *Shard) AddOffsets(now int64, req *kmsg.AddOffsetsToTxnRequest) Result {
	tp := TopicPartition{Topic: ConsumerOffsetsTopic, Partition: coordinator.PartitionFor(req.Group, s.cfg.OffsetsTopicPartitions)}
	r := s.addPartitions(now, req.TransactionalID, req.ProducerID, req.ProducerEpoch, []TopicPartition{tp}, 0)
	return fencedForOldClients(r, req.Version, 2)
}

func (s *Shard) addPartitions(now int64, id string, pid int64, epoch int16, partitions []TopicPartition, tv int16) Result {
	if id == "" {
		return errAnswer(kerr.InvalidRequest)
	}
	t := s.txns[id]
	switch {
	case t == nil || t.producerID != pid:
		return errAnswer(kerr.InvalidProducerIDMapping)
	case t.producerEpoch != epoch:
		return errAnswer(kerr.ProducerFenced)
	case t.hasPending, t.state == PrepareCommit, t.state == PrepareAbort:
		return errAnswer(kerr.ConcurrentTransactions)
	case t.state == Ongoing && t.hasAll(partitions):
		return answer(0, noProducerID, noProducerEpoch) // nothing new to write
	}
	next, err := t.prepareAddPartitions(partitions, now, tv)
	if err != nil {
		return answer(codeOf(err), noProducerID, noProducerEpoch)
	}
	return s.transition(t, next, func() Outcome {
		return Outcome{ProducerID: noProducerID, ProducerEpoch: noProducerEpoch}
	})
}

func (t *txnMetadata) hasAll(partitions []TopicPartition) bool {
	for _, tp := range partitions {
		if _, ok := t.partitions[tp]; !ok {
			return false
		}
	}
	return true
}

// VerifyPartitions answers a verify-only AddPartitionsToTxn entry (KIP-890
// part 1): a partition leader asks whether a transactional batch's
// partition is in the producer's ongoing transaction before appending it.
// Nothing is written. Partitions not in the transaction get
// TRANSACTION_ABORTABLE; the whole entry fails with
// INVALID_PRODUCER_ID_MAPPING, PRODUCER_FENCED or CONCURRENT_TRANSACTIONS.
func (s *Shard) VerifyPartitions(req AddPartitionsRequest) map[TopicPartition]int16 {
	out := make(map[TopicPartition]int16, len(req.Partitions))
	all := func(code int16) map[TopicPartition]int16 {
		for _, tp := range req.Partitions {
			out[tp] = code
		}
		return out
	}
	t := s.txns[req.TransactionalID]
	switch {
	case req.TransactionalID == "":
		return all(kerr.InvalidRequest.Code)
	case t == nil || t.producerID != req.ProducerID:
		return all(kerr.InvalidProducerIDMapping.Code)
	case t.producerEpoch != req.ProducerEpoch:
		return all(kerr.ProducerFenced.Code)
	case t.state == PrepareCommit || t.state == PrepareAbort:
		return all(kerr.ConcurrentTransactions.Code)
	}
	for _, tp := range req.Partitions {
		if _, ok := t.partitions[tp]; ok {
			out[tp] = 0
		} else {
			out[tp] = kerr.TransactionAbortable.Code
		}
	}
	return out
}
