package handlers

// WriteTxnMarkers (key 27), v0-2: sent by transaction coordinators to
// partition leaders. Each partition gets a commit or abort control batch for
// the producer, written with acks=all; the answer per partition is that
// write's error (NOT_LEADER_OR_FOLLOWER, INVALID_PRODUCER_EPOCH for a
// producer epoch older than the partition's, TRANSACTION_COORDINATOR_FENCED
// for a coordinator epoch older than the one that last marked the producer,
// ...). Markers for __consumer_offsets go through the group coordinator's
// shard, which applies the transaction's pending offsets when it writes the
// marker. v2 carries the transaction's version: a version 2 (KIP-890)
// marker must bump the producer's epoch. Partitions are written
// concurrently; the answer waits for all.
//
// Sent by transaction coordinators: needs CLUSTER_ACTION on the cluster,
// else every partition gets CLUSTER_AUTHORIZATION_FAILED (as Kafka).
// Without an authorizer Kafka serves it to anyone; Gregor then serves it
// only on the inter-broker listener (inter.broker.listener.name), where
// coordinators send it, so that a client of another listener cannot end
// other producers' transactions. An operator aborting a hanging
// transaction (kafka-transactions.sh abort) connects to that listener.

import (
	"context"
	"strings"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/network"
	"gregor/internal/replica"
)

var writeTxnMarkersAPI = api{key: 27, min: 0, max: 2, handle: (*Handlers).writeTxnMarkers}

func (h *Handlers) writeTxnMarkers(ctx context.Context, req *network.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.WriteTxnMarkersRequest)
	resp := r.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
	allowed := h.authorizedCluster(ctx, req, kmsg.ACLOperationClusterAction) &&
		(h.d.Authorizer != nil || h.onInterBrokerListener(req))
	var wg sync.WaitGroup
	for _, m := range r.Markers {
		rm := kmsg.NewWriteTxnMarkersResponseMarker()
		rm.ProducerID = m.ProducerID
		marker := replica.TxnMarker{ProducerID: m.ProducerID, ProducerEpoch: m.ProducerEpoch, CoordinatorEpoch: m.CoordinatorEpoch, Commit: m.Committed,
			TransactionVersion: int16(m.TransactionVersion)}
		for _, t := range m.Topics {
			rt := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
			rt.Topic = t.Topic
			rt.Partitions = make([]kmsg.WriteTxnMarkersResponseMarkerTopicPartition, len(t.Partitions))
			for i, p := range t.Partitions {
				rp := &rt.Partitions[i]
				rp.Default()
				rp.Partition = p
				if !allowed {
					rp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
					continue
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					rp.ErrorCode = h.writeTxnMarker(ctx, t.Topic, p, marker)
				}()
			}
			rm.Topics = append(rm.Topics, rt)
		}
		resp.Markers = append(resp.Markers, rm)
	}
	wg.Wait()
	return resp, nil
}

// writeTxnMarker writes one partition's marker and returns its error code.
func (h *Handlers) writeTxnMarker(ctx context.Context, topic string, partition int32, m replica.TxnMarker) int16 {
	if topic == OffsetsTopic {
		return h.completeGroupTransaction(ctx, partition, m)
	}
	err := h.d.Replica.WriteTxnMarker(ctx, topic, partition, m)
	code := errorCode(err)
	if code == kerr.UnknownServerError.Code {
		h.d.Logger.Warn("write txn marker", "topic", topic, "partition", partition, "err", err)
	}
	return code
}

// onInterBrokerListener reports whether req came in on the inter-broker
// listener, the stand-in for CLUSTER_ACTION when there is no authorizer.
func (h *Handlers) onInterBrokerListener(req *network.Request) bool {
	return h.d.Broker != nil && strings.EqualFold(req.Listener, h.d.Broker.InterBrokerListenerName)
}
