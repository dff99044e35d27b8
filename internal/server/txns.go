package server

import (
	"context"
	"time"

	"gregor/internal/coordinator"
	"gregor/internal/coordinator/txn"
	"gregor/internal/coordinator/txnmarker"
	"gregor/internal/handlers"
	"gregor/internal/metadata"
)

// newTxnCoordinator makes the transaction coordinator: a shard per
// __transaction_state partition this broker leads, and the sender of the
// markers its transactions end with.
func (s *Server) newTxnCoordinator() (*coordinator.Runtime, *txnmarker.Sender) {
	b := s.cfg
	var rt *coordinator.Runtime
	markers := txnmarker.New(txnmarker.Config{
		NodeID:   b.NodeID,
		Listener: b.InterBrokerListenerName,
		Security: s.brokerClient,
		Image:    s.replica.Image,
		Logger:   s.logger.With("component", "txn-markers"),
		Done: func(ctx context.Context, txnPartition int32, m txn.Markers, tp txn.TopicPartition) bool {
			err := rt.Do(ctx, txnPartition, func(sh coordinator.Shard, w *coordinator.Writer) {
				c := sh.(txn.Coordinated)
				c.Run(w, c.MarkerWritten(time.Now().UnixMilli(), m.TransactionalID, m.ProducerID, m.ProducerEpoch, tp))
			})
			return err == nil
		},
	})
	rt = coordinator.New(coordinator.Config{
		Topic:  handlers.TransactionStateTopic,
		NodeID: b.NodeID,
		NewShard: func(partition int32) coordinator.Shard {
			// Markers carry the partition's leader epoch so that leaders
			// drop the markers of a deposed coordinator; the replica
			// manager has already taken the new leadership.
			epoch := int32(-1)
			if p, err := s.replica.Leader(handlers.TransactionStateTopic, partition); err == nil {
				epoch = p.LeaderEpoch()
			}
			sh := txn.New(txn.Config{
				CoordinatorEpoch:                        epoch,
				TransactionMaxTimeoutMs:                 int32(b.TransactionMaxTimeoutMs),
				TransactionalIDExpirationMs:             b.TransactionalIDExpirationMs,
				AbortTimedOutTransactionsIntervalMs:     b.TransactionAbortTimedOutIntervalMs,
				RemoveExpiredTransactionalIDsIntervalMs: b.TransactionRemoveExpiredIntervalMs,
				OffsetsTopicPartitions:                  s.offsetsPartitions(),
				ProducerIDs:                             s.producerIDs,
				TransactionVersion: func() int16 {
					return s.replica.Image().Features[metadata.TransactionVersionFeature]
				},
			})
			return txn.Coordinated{Shard: sh, Send: func(ms []txn.Markers) { markers.Send(partition, ms) }}
		},
		Replica: s.replica,
		// Kafka bounds a transaction state write by the transaction's
		// timeout, longer than clients wait for an answer (franz-go gives up
		// after 10 s); offsets.commit.timeout.ms answers first, retriably.
		WriteTimeout: time.Duration(b.OffsetsCommitTimeoutMs) * time.Millisecond,
		Logger:       s.logger.With("component", "txn-coordinator"),
	})
	return rt, markers
}

// offsetsPartitions is the partition count of __consumer_offsets (what
// AddOffsetsToTxn hashes a group over): its actual count once created.
func (s *Server) offsetsPartitions() int32 {
	if t := s.replica.Image().Topics.Topic(handlers.OffsetsTopic); t != nil && t.NumPartitions() > 0 {
		return int32(t.NumPartitions())
	}
	return s.cfg.OffsetsTopicNumPartitions
}
