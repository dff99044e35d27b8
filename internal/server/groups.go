package server

import (
	"time"

	"strconv"
	"strings"

	"gregor/internal/coordinator"
	"gregor/internal/coordinator/group"
	"gregor/internal/handlers"
	"gregor/internal/metadata"
	"gregor/internal/record"
)

// newGroupCoordinator makes the group coordinator's runtime: a shard per
// __consumer_offsets partition this broker leads, loaded as metadata says so.
func (s *Server) newGroupCoordinator() *coordinator.Runtime {
	b := s.cfg
	cfg := group.Config{
		MinSessionTimeoutMs:     int32(b.GroupMinSessionTimeoutMs),
		MaxSessionTimeoutMs:     int32(b.GroupMaxSessionTimeoutMs),
		InitialRebalanceDelayMs: int32(b.GroupInitialRebalanceDelayMs),
		MaxSize:                 int(b.GroupMaxSize),
		OffsetMetadataMaxBytes:  int(b.OffsetMetadataMaxBytes),
		OffsetsRetentionMs:      int64(b.OffsetsRetentionMinutes) * 60000,
		OffsetsRetentionCheckMs: b.OffsetsRetentionCheckIntervalMs,

		ConsumerSessionTimeoutMs:    int32(b.GroupConsumerSessionTimeoutMs),
		ConsumerHeartbeatIntervalMs: int32(b.GroupConsumerHeartbeatIntervalMs),
		ConsumerMaxSize:             b.GroupConsumerMaxSize,
		ConsumerMigrationPolicy:     group.MigrationBidirectional, // Kafka 4.0's default
		Meters:                      s.metrics,
		ShareMemberLeft:             s.shares.MemberLeft,
		ShareSessionTimeoutMs:       int32(b.GroupShare.SessionTimeoutMs),
		ShareHeartbeatIntervalMs:    int32(b.GroupShare.HeartbeatIntervalMs),
		ShareMaxSize:                b.GroupShare.MaxSize,
		// A share group's share.session.timeout.ms and
		// share.heartbeat.interval.ms, as this broker's metadata has them.
		ShareGroupTimeouts: func(groupID string) (int32, int32) {
			img := s.replica.Image()
			if img == nil {
				return 0, 0
			}
			sg := b.ShareGroup(img.Configs(metadata.ConfigResource{Type: metadata.ConfigResourceGroup, Name: groupID}))
			return sg.SessionTimeoutMs, sg.HeartbeatIntervalMs
		},
		// Classic members of consumer groups name topics; the shard
		// resolves them against the metadata this broker follows.
		Topics: func() group.Topics {
			img := s.replica.Image()
			if img == nil {
				return group.Topics{}
			}
			out := make(group.Topics, img.Topics.Len())
			for name, t := range img.Topics.All() {
				out[name] = group.TopicInfo{ID: t.ID, Partitions: int32(t.NumPartitions())}
			}
			return out
		},
	}
	if v, ok := b.Props["group.consumer.migration.policy"]; ok {
		cfg.ConsumerMigrationPolicy = group.ParseMigrationPolicy(v)
	}
	for _, a := range strings.Split(b.Props["group.consumer.assignors"], ",") {
		if name := group.AssignorName(a); name != "" {
			cfg.ConsumerAssignors = append(cfg.ConsumerAssignors, name)
		}
	}
	// offsets.topic.compression.codec is a codec id (0 none, 1 gzip, 2
	// snappy, 3 lz4, 4 zstd), as in Kafka.
	codec := record.CodecNone
	if v, err := strconv.Atoi(b.Props["offsets.topic.compression.codec"]); err == nil && v >= 0 && v <= 4 {
		codec = record.Codec(v)
	}
	return coordinator.New(coordinator.Config{
		Topic:    handlers.OffsetsTopic,
		NodeID:   b.NodeID,
		Replica:  s.replica,
		NewShard: func(int32) coordinator.Shard { return group.Coordinated{Shard: group.NewShard(cfg)} },
		Codec:    codec,
		// Kafka's group coordinator waits this long for a write's commit.
		WriteTimeout: time.Duration(b.OffsetsCommitTimeoutMs) * time.Millisecond,
		Logger:       s.logger.With("component", "group-coordinator"),
	})
}
