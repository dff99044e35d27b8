package handlers

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/coordinator/txn"
	"gregor/internal/log"
	"gregor/internal/record"
)

// Peers sends a request to another broker's inter-broker listener.
type Peers interface {
	Request(ctx context.Context, broker int32, req kmsg.Request) (kmsg.Response, error)
}

// txnVerification is one partition of a transactional produce: the guard
// its batch is appended with, or the error it is answered with.
type txnVerification struct {
	guard log.VerificationGuard
	code  int16
	msg   string
}

// verifyTxnProduce verifies the partitions of a transactional produce whose
// producer has no transaction open there yet (KIP-890 part 1, with
// transaction.partition.verification.enable): one AddPartitionsToTxn
// verify-only entry to the transactional id's coordinator, as Kafka's
// AddPartitionsToTxnManager sends. With transactions v2 (Produce v12+ while
// transaction.version is 2, KIP-890 part 2) the producer sends no
// AddPartitionsToTxn of its own: the entry adds the partitions to the
// transaction instead (AddPartitionsToTxn v5, not verify-only), whatever
// the verification setting, since nothing else would add them. Partitions
// not in the result need no verification (and are appended as usual).
func (h *Handlers) verifyTxnProduce(ctx context.Context, r *kmsg.ProduceRequest, writable map[string]bool) map[txn.TopicPartition]txnVerification {
	if r.TransactionID == nil || h.d.Broker == nil {
		return nil
	}
	add := r.Version >= produceTV2Version && h.transactionsV2()
	if !add && !h.d.Broker.TransactionPartitionVerification {
		return nil
	}
	out := map[txn.TopicPartition]txnVerification{}
	var pid int64 = -1
	var epoch int16 = -1
	var topics []kmsg.AddPartitionsToTxnRequestTransactionTopic
	for _, t := range r.Topics {
		if !writable[t.Topic] {
			continue // answered TOPIC_AUTHORIZATION_FAILED
		}
		var parts []int32
		for _, p := range t.Partitions {
			hd, err := record.ParseHeader(p.Records)
			if err != nil || !hd.IsTransactional() || hd.ProducerID < 0 {
				continue
			}
			guard, needed, err := h.d.Replica.StartTxnVerification(t.Topic, p.Partition, hd.ProducerID, hd.ProducerEpoch)
			if err != nil || !needed {
				continue // the append answers the error
			}
			pid, epoch = hd.ProducerID, hd.ProducerEpoch
			out[txn.TopicPartition{Topic: t.Topic, Partition: p.Partition}] = txnVerification{guard: guard}
			parts = append(parts, p.Partition)
		}
		if len(parts) > 0 {
			topics = append(topics, kmsg.AddPartitionsToTxnRequestTransactionTopic{Topic: t.Topic, Partitions: parts})
		}
	}
	if len(out) == 0 {
		return nil
	}
	codes := h.verifyAtCoordinator(ctx, *r.TransactionID, pid, epoch, topics, add)
	if add {
		codes = h.retryConcurrentAdd(ctx, codes, func() map[txn.TopicPartition]int16 {
			return h.verifyAtCoordinator(ctx, *r.TransactionID, pid, epoch, topics, add)
		})
	}
	for tp, v := range out {
		code := codes[tp]
		switch kerr.ErrorForCode(code) {
		case kerr.ProducerFenced:
			code = kerr.InvalidProducerEpoch.Code
		case kerr.ClusterAuthorizationFailed:
			code = kerr.InvalidTxnState.Code
		case kerr.TransactionAbortable:
			// Produce v11 brought TRANSACTION_ABORTABLE (KIP-890);
			// older producers know the partition was not added as
			// INVALID_TXN_STATE, as Kafka maps it for them.
			if r.Version < 11 {
				code = kerr.InvalidTxnState.Code
			}
		}
		switch kerr.ErrorForCode(code) {
		case kerr.InvalidTxnState:
			v.msg = "Partition was not added to the transaction"
		case kerr.ConcurrentTransactions, kerr.CoordinatorLoadInProgress, kerr.CoordinatorNotAvailable, kerr.NotCoordinator:
			// Retriable for every producer, as Kafka's ReplicaManager maps them.
			v.msg = "Unable to verify the partition has been added to the transaction. Underlying error: " + kerr.ErrorForCode(code).Error()
			code = kerr.NotEnoughReplicas.Code
		}
		v.code = code
		out[tp] = v
	}
	return out
}

// verifyAtCoordinator asks the transactional id's coordinator (this broker's
// shard, or another broker) whether the partitions are in the producer's
// transaction, or with add to add them to it (transactions v2), and
// returns each partition's code.
func (h *Handlers) verifyAtCoordinator(ctx context.Context, transactionalID string, pid int64, epoch int16, topics []kmsg.AddPartitionsToTxnRequestTransactionTopic, add bool) map[txn.TopicPartition]int16 {
	all := func(code int16) map[txn.TopicPartition]int16 {
		out := map[txn.TopicPartition]int16{}
		for _, t := range topics {
			for _, p := range t.Partitions {
				out[txn.TopicPartition{Topic: t.Topic, Partition: p}] = code
			}
		}
		return out
	}
	t := h.image().Topics.Topic(TransactionStateTopic)
	if t == nil {
		return all(kerr.CoordinatorNotAvailable.Code)
	}
	p := t.Partition(h.txnPartition(transactionalID))
	if p == nil || p.Leader < 0 {
		return all(kerr.CoordinatorNotAvailable.Code)
	}
	if p.Leader == h.d.NodeID {
		return h.addTxnPartitions(ctx, txn.AddPartitionsRequest{
			TransactionalID: transactionalID, ProducerID: pid, ProducerEpoch: epoch, Version: addPartitionsToTxnAPI.max,
		}, topics, !add)
	}
	if h.d.Peers == nil {
		return all(kerr.CoordinatorNotAvailable.Code)
	}
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	// v5 is transactions v2's (KIP-890 part 2), as Kafka's
	// AddPartitionsToTxnManager sends it to add; v4 verifies.
	req.Version = 4
	if add {
		req.Version = 5
	}
	tr := kmsg.NewAddPartitionsToTxnRequestTransaction()
	tr.TransactionalID, tr.ProducerID, tr.ProducerEpoch, tr.VerifyOnly, tr.Topics = transactionalID, pid, epoch, !add, topics
	req.Transactions = append(req.Transactions, tr)
	kresp, err := h.d.Peers.Request(ctx, p.Leader, req)
	if err != nil {
		h.d.Logger.Warn("verify transaction partitions", "transactional_id", transactionalID, "coordinator", p.Leader, "err", err)
		return all(kerr.NetworkException.Code)
	}
	resp := kresp.(*kmsg.AddPartitionsToTxnResponse)
	if resp.ErrorCode != 0 {
		return all(resp.ErrorCode)
	}
	out := map[txn.TopicPartition]int16{}
	for _, rt := range resp.Transactions {
		for _, t := range rt.Topics {
			for _, rp := range t.Partitions {
				out[txn.TopicPartition{Topic: t.Topic, Partition: rp.Partition}] = rp.ErrorCode
			}
		}
	}
	return out
}

// Kafka's add.partitions.to.txn.retry.backoff.ms and
// add.partitions.to.txn.retry.backoff.max.ms defaults: how a partition
// leader retries adding partitions while the coordinator still completes
// the producer's previous transaction.
const (
	addPartitionsRetryBackoff    = 20 * time.Millisecond
	addPartitionsRetryBackoffMax = 100 * time.Millisecond
)

// retryConcurrentAdd asks again while the coordinator answers
// CONCURRENT_TRANSACTIONS to an add (transactions v2): the producer's
// previous transaction, ended just before, is still writing its markers,
// and waiting here briefly spares the producer a round trip (Kafka's
// ReplicaManager retries likewise). It gives up with the last answer.
func (h *Handlers) retryConcurrentAdd(ctx context.Context, codes map[txn.TopicPartition]int16, again func() map[txn.TopicPartition]int16) map[txn.TopicPartition]int16 {
	concurrent := func(codes map[txn.TopicPartition]int16) bool {
		for _, c := range codes {
			if c == kerr.ConcurrentTransactions.Code {
				return true
			}
		}
		return false
	}
	deadline := time.Now().Add(addPartitionsRetryBackoffMax)
	for concurrent(codes) && time.Now().Add(addPartitionsRetryBackoff).Before(deadline) {
		t := time.NewTimer(addPartitionsRetryBackoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return codes
		case <-t.C:
		}
		codes = again()
	}
	return codes
}
