package config

import (
	"fmt"
	"strconv"
	"strings"
)

// Topic is the effective, typed configuration of one topic: its overrides
// over the broker's defaults over the built-in defaults.
type Topic struct {
	CleanupPolicy               []string // cleanup.policy
	CompressionType             string   // compression.type
	SegmentBytes                int32    // segment.bytes
	SegmentMs                   int64    // segment.ms
	SegmentJitterMs             int64    // segment.jitter.ms
	SegmentIndexBytes           int32    // segment.index.bytes
	IndexIntervalBytes          int32    // index.interval.bytes
	FlushMessages               int64    // flush.messages
	FlushMs                     int64    // flush.ms
	RetentionMs                 int64    // retention.ms; -1 = forever
	RetentionBytes              int64    // retention.bytes; -1 = no limit
	MaxMessageBytes             int32    // max.message.bytes
	MessageTimestampType        string   // message.timestamp.type: CreateTime or LogAppendTime
	MessageTimestampBeforeMaxMs int64    // message.timestamp.before.max.ms
	MessageTimestampAfterMaxMs  int64    // message.timestamp.after.max.ms
	MinInsyncReplicas           int32    // min.insync.replicas
	Preallocate                 bool     // preallocate
	UncleanLeaderElectionEnable bool     // unclean.leader.election.enable
	DeleteRetentionMs           int64    // delete.retention.ms
	MinCompactionLagMs          int64    // min.compaction.lag.ms
	MaxCompactionLagMs          int64    // max.compaction.lag.ms
	MinCleanableDirtyRatio      float64  // min.cleanable.dirty.ratio
	FileDeleteDelayMs           int64    // file.delete.delay.ms
	CompressionGzipLevel        int32    // compression.gzip.level
	CompressionLz4Level         int32    // compression.lz4.level
	CompressionZstdLevel        int32    // compression.zstd.level
}

// Compact reports whether cleanup.policy includes compact.
func (t Topic) Compact() bool { return containsFold(t.CleanupPolicy, "compact") }

// Delete reports whether cleanup.policy includes delete.
func (t Topic) Delete() bool { return containsFold(t.CleanupPolicy, "delete") }

func containsFold(list []string, s string) bool {
	for _, item := range list {
		if strings.EqualFold(item, s) {
			return true
		}
	}
	return false
}

// ResolveTopic computes a topic's effective configuration from the layers
// (l.Topic holds its overrides). It fails if a stored value does not parse
// or violates its range, or if min.compaction.lag.ms exceeds
// max.compaction.lag.ms (Kafka's LogConfig.validateValues).
func ResolveTopic(l Layers) (Topic, error) {
	values := map[string]string{}
	for _, d := range topicDefList {
		v, overridden := topicValue(d, l)
		if err := d.Check(v); err != nil {
			if overridden {
				return Topic{}, fmt.Errorf("topic override: %w", err)
			}
			return Topic{}, fmt.Errorf("server default of %s: %w", d.Name, err)
		}
		values[d.Name] = v
	}
	i64 := func(name string) int64 {
		n, _ := strconv.ParseInt(values[name], 10, 64)
		return n
	}
	i32 := func(name string) int32 { return int32(i64(name)) }
	t := Topic{
		CleanupPolicy:               splitList(values["cleanup.policy"]),
		CompressionType:             values["compression.type"],
		SegmentBytes:                i32("segment.bytes"),
		SegmentMs:                   i64("segment.ms"),
		SegmentJitterMs:             i64("segment.jitter.ms"),
		SegmentIndexBytes:           i32("segment.index.bytes"),
		IndexIntervalBytes:          i32("index.interval.bytes"),
		FlushMessages:               i64("flush.messages"),
		FlushMs:                     i64("flush.ms"),
		RetentionMs:                 i64("retention.ms"),
		RetentionBytes:              i64("retention.bytes"),
		MaxMessageBytes:             i32("max.message.bytes"),
		MessageTimestampType:        values["message.timestamp.type"],
		MessageTimestampBeforeMaxMs: i64("message.timestamp.before.max.ms"),
		MessageTimestampAfterMaxMs:  i64("message.timestamp.after.max.ms"),
		MinInsyncReplicas:           i32("min.insync.replicas"),
		Preallocate:                 values["preallocate"] == "true",
		UncleanLeaderElectionEnable: values["unclean.leader.election.enable"] == "true",
		DeleteRetentionMs:           i64("delete.retention.ms"),
		MinCompactionLagMs:          i64("min.compaction.lag.ms"),
		MaxCompactionLagMs:          i64("max.compaction.lag.ms"),
		FileDeleteDelayMs:           i64("file.delete.delay.ms"),
		CompressionGzipLevel:        i32("compression.gzip.level"),
		CompressionLz4Level:         i32("compression.lz4.level"),
		CompressionZstdLevel:        i32("compression.zstd.level"),
	}
	t.MinCleanableDirtyRatio, _ = strconv.ParseFloat(values["min.cleanable.dirty.ratio"], 64)
	if t.MinCompactionLagMs > t.MaxCompactionLagMs {
		return Topic{}, fmt.Errorf("conflict topic config setting min.compaction.lag.ms (%d) > max.compaction.lag.ms (%d)",
			t.MinCompactionLagMs, t.MaxCompactionLagMs)
	}
	return t, nil
}
