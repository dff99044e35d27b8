package handlers

// AddPartitionsToTxn (key 24), v0-5. v0-3 come from transactional
// producers: the partitions join the producer's transaction (starting it).
// As Kafka's KafkaApis, partitions of unknown topics answer
// UNKNOWN_TOPIC_OR_PARTITION and then every other partition
// OPERATION_NOT_ATTEMPTED, without asking the coordinator; otherwise the
// coordinator's answer applies to every partition. v4+ come from partition
// leaders and batch transactions (KIP-890): a verify-only entry asks
// whether the partitions are in the producer's ongoing transaction
// (TRANSACTION_ABORTABLE for those that are not), others add them as v3
// does. A transactional id twice in one v4+ request is INVALID_REQUEST.
//
// Authorization (Kafka's): v0-3 (from producers) need WRITE on the
// transactional id (else TRANSACTIONAL_ID_AUTHORIZATION_FAILED on every
// partition) and WRITE on each topic (else TOPIC_AUTHORIZATION_FAILED, and
// the other partitions OPERATION_NOT_ATTEMPTED); v4+ (from brokers) need
// CLUSTER_ACTION on the cluster (CLUSTER_AUTHORIZATION_FAILED).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/coordinator"
	"gregor/internal/coordinator/txn"
	"gregor/internal/network"
)

var addPartitionsToTxnAPI = api{key: 24, min: 0, max: 5, handle: (*Handlers).addPartitionsToTxn}

func (h *Handlers) addPartitionsToTxn(ctx context.Context, req *network.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.AddPartitionsToTxnRequest)
	resp := r.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	if r.Version < 4 {
		if code := h.addPartitionsRefused(ctx, req, r); code != nil {
			for _, t := range r.Topics {
				rt := kmsg.NewAddPartitionsToTxnResponseTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
					rp.Partition, rp.ErrorCode = p, code(t.Topic)
					rt.Partitions = append(rt.Partitions, rp)
				}
				resp.Topics = append(resp.Topics, rt)
			}
			return resp, nil
		}
		var topics []kmsg.AddPartitionsToTxnRequestTransactionTopic
		for _, t := range r.Topics {
			topics = append(topics, kmsg.AddPartitionsToTxnRequestTransactionTopic{Topic: t.Topic, Partitions: t.Partitions})
		}
		codes := h.addTxnPartitions(ctx, txn.AddPartitionsRequest{
			TransactionalID: r.TransactionalID, ProducerID: r.ProducerID, ProducerEpoch: r.ProducerEpoch, Version: r.Version,
		}, topics, false)
		for _, t := range r.Topics {
			rt := kmsg.NewAddPartitionsToTxnResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p, codes[txn.TopicPartition{Topic: t.Topic, Partition: p}]
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	}
	if !h.authorizedCluster(ctx, req, kmsg.ACLOperationClusterAction) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	seen := map[string]bool{}
	for _, t := range r.Transactions {
		if seen[t.TransactionalID] {
			resp.ErrorCode = kerr.InvalidRequest.Code
			return resp, nil
		}
		seen[t.TransactionalID] = true
	}
	for _, t := range r.Transactions {
		codes := h.addTxnPartitions(ctx, txn.AddPartitionsRequest{
			TransactionalID: t.TransactionalID, ProducerID: t.ProducerID, ProducerEpoch: t.ProducerEpoch, Version: r.Version,
		}, t.Topics, t.VerifyOnly)
		rt := kmsg.NewAddPartitionsToTxnResponseTransaction()
		rt.TransactionalID = t.TransactionalID
		for _, topic := range t.Topics {
			tt := kmsg.NewAddPartitionsToTxnResponseTransactionTopic()
			tt.Topic = topic.Topic
			for _, p := range topic.Partitions {
				rp := kmsg.NewAddPartitionsToTxnResponseTransactionTopicPartition()
				rp.Partition, rp.ErrorCode = p, codes[txn.TopicPartition{Topic: topic.Topic, Partition: p}]
				tt.Partitions = append(tt.Partitions, rp)
			}
			rt.Topics = append(rt.Topics, tt)
		}
		resp.Transactions = append(resp.Transactions, rt)
	}
	return resp, nil
}

// addTxnPartitions adds (or verifies) one transaction's partitions and
// returns each partition's error code.
// addPartitionsRefused returns, for a producer's request it refuses, the
// code of each topic's partitions (nil: authorized).
func (h *Handlers) addPartitionsRefused(ctx context.Context, req *network.Request, r *kmsg.AddPartitionsToTxnRequest) func(topic string) int16 {
	if !h.authorized(ctx, req, kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTransactionalId, r.TransactionalID) {
		return func(string) int16 { return kerr.TransactionalIDAuthorizationFailed.Code }
	}
	var names []string
	for _, t := range r.Topics {
		names = append(names, t.Topic)
	}
	writable := h.authorizedTopics(ctx, req, kmsg.ACLOperationWrite, names)
	for _, ok := range writable {
		if !ok {
			return func(topic string) int16 {
				if writable[topic] {
					return kerr.OperationNotAttempted.Code
				}
				return kerr.TopicAuthorizationFailed.Code
			}
		}
	}
	return nil
}

func (h *Handlers) addTxnPartitions(ctx context.Context, req txn.AddPartitionsRequest, topics []kmsg.AddPartitionsToTxnRequestTransactionTopic, verifyOnly bool) map[txn.TopicPartition]int16 {
	codes := map[txn.TopicPartition]int16{}
	img := h.image()
	failed := false
	for _, t := range topics {
		it := img.Topics.Topic(t.Topic)
		for _, p := range t.Partitions {
			tp := txn.TopicPartition{Topic: t.Topic, Partition: p}
			req.Partitions = append(req.Partitions, tp)
			if it == nil || it.Partition(p) == nil {
				codes[tp] = kerr.UnknownTopicOrPartition.Code
				failed = true
			}
		}
	}
	if failed {
		for _, tp := range req.Partitions {
			if codes[tp] == 0 {
				codes[tp] = kerr.OperationNotAttempted.Code
			}
		}
		return codes
	}
	all := func(code int16) map[txn.TopicPartition]int16 {
		for _, tp := range req.Partitions {
			codes[tp] = code
		}
		return codes
	}
	if code := h.onTxnShard(ctx, req.TransactionalID, func(c txn.Coordinated, w *coordinator.Writer) {
		if verifyOnly {
			codes = c.VerifyPartitions(req)
			return
		}
		all(c.Run(w, c.AddPartitions(nowMs(), req)).ErrorCode)
	}); code != 0 {
		return all(code)
	}
	return codes
}
