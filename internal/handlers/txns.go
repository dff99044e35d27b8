package handlers

import (
	"context"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"

	"gregor/internal/coordinator"
	"gregor/internal/coordinator/txn"
)

// TransactionStateTopic is the internal topic of the transaction
// coordinator's state.
const TransactionStateTopic = "__transaction_state"

// txnPartition is the __transaction_state partition coordinating a
// transactional id (over transaction.state.log.num.partitions until the
// topic exists).
func (h *Handlers) txnPartition(transactionalID string) int32 {
	return coordinator.PartitionFor(transactionalID, h.internalPartitions(TransactionStateTopic, h.d.Broker.TransactionStateLogNumPartitions))
}

// ensureTxnTopic creates __transaction_state as Kafka's broker does on the
// first FindCoordinator for a transactional id: transaction.state.log.*
// partitions and replicas, compacted, uncompressed, min.insync.replicas =
// transaction.state.log.min.isr, unclean election off.
func (h *Handlers) ensureTxnTopic(ctx context.Context) string {
	b := h.d.Broker
	return h.ensureInternalTopic(ctx, internalTopic{
		name:              TransactionStateTopic,
		partitions:        b.TransactionStateLogNumPartitions,
		replicationFactor: b.TransactionStateLogReplicationFactor,
		factorKey:         "transaction.state.log.replication.factor",
		minISR:            b.TransactionStateLogMinISR,
		minISRKey:         "transaction.state.log.min.isr",
		configs: map[string]string{
			"cleanup.policy":                 "compact",
			"compression.type":               "uncompressed",
			"segment.bytes":                  strconv.Itoa(int(b.TransactionStateLogSegmentBytes)),
			"unclean.leader.election.enable": "false",
		},
	})
}

// onTxnShard runs fn on the shard coordinating a transactional id and
// returns the Kafka error code when it cannot (NOT_COORDINATOR,
// COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE).
func (h *Handlers) onTxnShard(ctx context.Context, transactionalID string, fn func(c txn.Coordinated, w *coordinator.Writer)) int16 {
	if h.d.Txns == nil {
		return kerr.CoordinatorNotAvailable.Code
	}
	return coordinatorErrorCode(h.d.Txns.Do(ctx, h.txnPartition(transactionalID), func(s coordinator.Shard, w *coordinator.Writer) {
		fn(s.(txn.Coordinated), w)
	}))
}
