package handlers

import (
	"context"
	"errors"
	"net"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/coordinator"
	"gregor/internal/coordinator/group"
	"gregor/internal/network"
	"gregor/internal/replica"
)

// OffsetsTopic is the internal topic of group offsets and metadata.
const OffsetsTopic = "__consumer_offsets"

// internalPartitions is how many partitions an internal topic has: its
// actual count once created, the configured count before.
func (h *Handlers) internalPartitions(topic string, configured int32) int32 {
	if t := h.image().Topics.Topic(topic); t != nil && t.NumPartitions() > 0 {
		return int32(t.NumPartitions())
	}
	return configured
}

// groupPartition is the __consumer_offsets partition coordinating a group.
func (h *Handlers) groupPartition(groupID string) int32 {
	return coordinator.PartitionFor(groupID, h.internalPartitions(OffsetsTopic, h.d.Broker.OffsetsTopicNumPartitions))
}

// onGroupShard runs fn on the shard coordinating groupID and returns the
// Kafka error code when it cannot (NOT_COORDINATOR,
// COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE).
func (h *Handlers) onGroupShard(ctx context.Context, groupID string, fn func(s *group.Shard, w group.Writer)) int16 {
	if h.d.Groups == nil {
		return kerr.CoordinatorNotAvailable.Code
	}
	return coordinatorErrorCode(h.d.Groups.Do(ctx, h.groupPartition(groupID), func(s coordinator.Shard, w *coordinator.Writer) {
		fn(s.(group.Coordinated).Shard, group.RuntimeWriter{W: w})
	}))
}

// coordinatorErrorCode is the Kafka code of a coordinator runtime's Do
// error: its own kerr (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS), else
// COORDINATOR_NOT_AVAILABLE; 0 for none.
func coordinatorErrorCode(err error) int16 {
	if err == nil {
		return 0
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	return kerr.CoordinatorNotAvailable.Code
}

// completeGroupTransaction writes a transaction marker to a
// __consumer_offsets partition through its shard, so that the marker and
// the transaction's offsets apply in the partition's order, and returns the
// Kafka error code for the marker's partition. As in Kafka's
// WriteTxnMarkers handler, a partition whose coordinator is not ready here
// (not leader, loading, unloaded meanwhile) answers NOT_LEADER_OR_FOLLOWER,
// which the transaction coordinator retries; a write error is answered as is.
func (h *Handlers) completeGroupTransaction(ctx context.Context, partition int32, m replica.TxnMarker) int16 {
	if h.d.Groups == nil {
		return kerr.NotLeaderForPartition.Code
	}
	err := h.d.Groups.CompleteTransaction(ctx, partition, m)
	if err == nil {
		return 0
	}
	var ke *kerr.Error
	switch {
	case errors.As(err, &ke):
		switch ke {
		case kerr.NotCoordinator, kerr.CoordinatorLoadInProgress, kerr.CoordinatorNotAvailable:
			return kerr.NotLeaderForPartition.Code
		}
		return ke.Code
	case ctx.Err() != nil:
		return kerr.RequestTimedOut.Code
	}
	h.d.Logger.Warn("complete group transaction", "partition", partition, "producer", m.ProducerID, "err", err)
	return kerr.UnknownServerError.Code
}

// finish writes a Result and delivers its replies.
func finish(w group.Writer, r group.Result) error {
	return group.Finish(w, r, group.AppendErrorCode)
}

// awaitReply makes a responder for a delayed answer and the function that
// waits for it.
func awaitReply() (group.Responder, func(ctx context.Context) (kmsg.Response, error)) {
	ch := make(chan kmsg.Response, 1)
	respond := func(resp kmsg.Response) {
		select {
		case ch <- resp:
		default:
		}
	}
	return respond, func(ctx context.Context) (kmsg.Response, error) {
		startWaiting(ctx)
		select {
		case resp := <-ch:
			return resp, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func nowMs() int64 { return time.Now().UnixMilli() }

// clientInfo is the client id and host a group records for a member
// (Kafka writes the host as "/" + address).
func clientInfo(req *network.Request) (clientID, clientHost string) {
	if req.Header.ClientID != nil {
		clientID = *req.Header.ClientID
	}
	if a, ok := req.ClientAddr.(*net.TCPAddr); ok {
		clientHost = "/" + a.IP.String()
	} else if req.ClientAddr != nil {
		clientHost = "/" + req.ClientAddr.String()
	}
	return clientID, clientHost
}

// ensureOffsetsTopic creates __consumer_offsets through the controller, as
// Kafka's broker does on the first FindCoordinator for a group:
// offsets.topic.num.partitions partitions of offsets.topic.replication.factor
// replicas, compacted, segment.bytes = offsets.topic.segment.bytes.
func (h *Handlers) ensureOffsetsTopic(ctx context.Context) string {
	b := h.d.Broker
	return h.ensureInternalTopic(ctx, internalTopic{
		name:              OffsetsTopic,
		partitions:        b.OffsetsTopicNumPartitions,
		replicationFactor: b.OffsetsTopicReplicationFactor,
		factorKey:         "offsets.topic.replication.factor",
		configs: map[string]string{
			"cleanup.policy":   "compact",
			"segment.bytes":    strconv.Itoa(int(b.OffsetsTopicSegmentBytes)),
			"compression.type": "producer",
		},
	})
}
