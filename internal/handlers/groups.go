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
)

// OffsetsTopic is the internal topic of group offsets and metadata.
const OffsetsTopic = "__consumer_offsets"

// offsetsPartitions is how many partitions __consumer_offsets has: its
// actual count once created, offsets.topic.num.partitions before.
func (h *Handlers) offsetsPartitions() int32 {
	if t := h.image().Topics.ByName[OffsetsTopic]; t != nil && len(t.Partitions) > 0 {
		return int32(len(t.Partitions))
	}
	return h.d.Broker.OffsetsTopicNumPartitions
}

// groupPartition is the __consumer_offsets partition coordinating a group.
func (h *Handlers) groupPartition(groupID string) int32 {
	return coordinator.PartitionFor(groupID, h.offsetsPartitions())
}

// onGroupShard runs fn on the shard coordinating groupID and returns the
// Kafka error code when it cannot (NOT_COORDINATOR,
// COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE).
func (h *Handlers) onGroupShard(ctx context.Context, groupID string, fn func(s *group.Shard, w group.Writer)) int16 {
	if h.d.Groups == nil {
		return kerr.CoordinatorNotAvailable.Code
	}
	err := h.d.Groups.Do(ctx, h.groupPartition(groupID), func(s coordinator.Shard, w *coordinator.Writer) {
		fn(s.(group.Coordinated).Shard, group.RuntimeWriter{W: w})
	})
	if err == nil {
		return 0
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	return kerr.CoordinatorNotAvailable.Code
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
// offsets.topic.num.partitions partitions, compacted, segment.bytes =
// offsets.topic.segment.bytes. Kafka refuses to create it with fewer live
// brokers than offsets.topic.replication.factor; Gregor caps the factor at
// the live brokers so that a single node works with Kafka's default of 3.
func (h *Handlers) ensureOffsetsTopic(ctx context.Context) {
	img := h.image()
	if _, ok := img.Topics.ByName[OffsetsTopic]; ok {
		return
	}
	live := int16(0)
	for _, b := range img.Brokers {
		if !b.Fenced {
			live++
		}
	}
	rf := min(h.d.Broker.OffsetsTopicReplicationFactor, max(live, 1))
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version = createTopicsAPI.max
	req.TimeoutMillis = 30000
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = OffsetsTopic, h.d.Broker.OffsetsTopicNumPartitions, rf
	for k, v := range map[string]string{
		"cleanup.policy":   "compact",
		"segment.bytes":    strconv.Itoa(int(h.d.Broker.OffsetsTopicSegmentBytes)),
		"compression.type": "producer",
	} {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = k, kmsg.StringPtr(v)
		t.Configs = append(t.Configs, c)
	}
	req.Topics = append(req.Topics, t)
	resp := h.d.Controller.CreateTopics(ctx, req)
	for _, rt := range resp.Topics {
		if rt.ErrorCode != 0 && rt.ErrorCode != kerr.TopicAlreadyExists.Code {
			h.d.Logger.Warn("create __consumer_offsets failed", "err", kerr.ErrorForCode(rt.ErrorCode))
		}
	}
}
