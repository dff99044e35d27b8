package log

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// TopicPartition names one partition's log.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// String is the log directory name, "topic-0".
func (tp TopicPartition) String() string {
	return tp.Topic + "-" + strconv.FormatInt(int64(tp.Partition), 10)
}

// parseTopicPartition splits a log directory name at its last '-', as
// Kafka's UnifiedLog.parseTopicPartitionName does.
func parseTopicPartition(name string) (TopicPartition, error) {
	i := strings.LastIndexByte(name, '-')
	if i <= 0 || i == len(name)-1 {
		return TopicPartition{}, fmt.Errorf("log directory name %q is not topic-partition", name)
	}
	p, err := strconv.ParseInt(name[i+1:], 10, 32)
	if err != nil || p < 0 {
		return TopicPartition{}, fmt.Errorf("log directory name %q has no partition number", name)
	}
	return TopicPartition{Topic: name[:i], Partition: int32(p)}, nil
}

// Config holds a log's settings, taken from the topic configs. Zero values
// mean Kafka's defaults (see DefaultConfig and withDefaults).
type Config struct {
	SegmentBytes          int32 // segment.bytes
	SegmentMs             int64 // segment.ms
	SegmentJitterMs       int64 // segment.jitter.ms
	SegmentIndexBytes     int32 // segment.index.bytes: size of a preallocated .index/.timeindex
	IndexIntervalBytes    int32 // index.interval.bytes
	FlushIntervalMessages int64 // flush.messages; MaxInt64 leaves flushing to the page cache
	FlushIntervalMs       int64 // flush.ms
	Preallocate           bool  // preallocate
	FileDeleteDelayMs     int64 // file.delete.delay.ms
	// DeleteEnabled is cleanup.policy containing "delete": retention by time
	// and size applies. The zero Config has it off, so a log opened without
	// topic settings never loses data to retention.
	DeleteEnabled  bool
	RetentionMs    int64 // retention.ms; negative: no time limit
	RetentionBytes int64 // retention.bytes; negative: no size limit

	// Compaction (the log cleaner, cleaner*.go). These fields matter only
	// when Compact is set; zero means zero, except MaxCompactionLagMs whose
	// zero (never valid in Kafka) means no limit. DefaultConfig holds
	// Kafka's defaults.
	Compact                bool    // cleanup.policy contains "compact"
	DeleteRetentionMs      int64   // delete.retention.ms: how long tombstones outlive their first clean
	MinCompactionLagMs     int64   // min.compaction.lag.ms
	MaxCompactionLagMs     int64   // max.compaction.lag.ms
	MinCleanableDirtyRatio float64 // min.cleanable.dirty.ratio

	// ProducerIDExpirationMs is producer.id.expiration.ms, a broker setting:
	// producers older than this are left out when the producer state is
	// loaded from a snapshot (the periodic expiry uses the manager's value).
	ProducerIDExpirationMs int64
}

// DefaultConfig returns Kafka's topic-level defaults.
func DefaultConfig() Config {
	return Config{
		SegmentBytes:          1 << 30,
		SegmentMs:             7 * 24 * 60 * 60 * 1000,
		SegmentJitterMs:       0,
		SegmentIndexBytes:     10 << 20,
		IndexIntervalBytes:    4096,
		FlushIntervalMessages: math.MaxInt64,
		FlushIntervalMs:       math.MaxInt64,
		Preallocate:           false,
		FileDeleteDelayMs:     60000,
		DeleteEnabled:         true,
		RetentionMs:           7 * 24 * 60 * 60 * 1000,
		RetentionBytes:        -1,

		DeleteRetentionMs:      24 * 60 * 60 * 1000,
		MaxCompactionLagMs:     math.MaxInt64,
		MinCleanableDirtyRatio: 0.5,

		ProducerIDExpirationMs: 86400000,
	}
}

// withDefaults replaces zero (unset) fields by Kafka's defaults.
func (c Config) withDefaults() Config { return c.withDefaultsFrom(DefaultConfig()) }

// withDefaultsFrom replaces zero (unset) fields by those of d. Jitter,
// Preallocate and the retention settings are legitimately zero, so they are
// kept.
func (c Config) withDefaultsFrom(d Config) Config {
	if c.SegmentBytes <= 0 {
		c.SegmentBytes = d.SegmentBytes
	}
	if c.SegmentMs <= 0 {
		c.SegmentMs = d.SegmentMs
	}
	if c.SegmentJitterMs < 0 {
		c.SegmentJitterMs = 0
	}
	if c.SegmentIndexBytes <= 0 {
		c.SegmentIndexBytes = d.SegmentIndexBytes
	}
	if c.IndexIntervalBytes <= 0 {
		c.IndexIntervalBytes = d.IndexIntervalBytes
	}
	if c.FlushIntervalMessages <= 0 {
		c.FlushIntervalMessages = d.FlushIntervalMessages
	}
	if c.FlushIntervalMs <= 0 {
		c.FlushIntervalMs = d.FlushIntervalMs
	}
	if c.FileDeleteDelayMs <= 0 {
		c.FileDeleteDelayMs = d.FileDeleteDelayMs
	}
	if c.ProducerIDExpirationMs <= 0 {
		c.ProducerIDExpirationMs = d.ProducerIDExpirationMs
	}
	if c.MaxCompactionLagMs <= 0 {
		c.MaxCompactionLagMs = math.MaxInt64
	}
	return c
}

// Errors callers map to Kafka error codes at the handler boundary.
var (
	// ErrOffsetOutOfRange is OFFSET_OUT_OF_RANGE: the offset is below the log
	// start offset or above the log end offset.
	ErrOffsetOutOfRange = errors.New("offset out of range")
	// ErrOffsetsOutOfOrder is Kafka's OffsetsOutOfOrderException: a follower's
	// batches are not strictly increasing.
	ErrOffsetsOutOfOrder = errors.New("offsets out of order")
	// ErrUnexpectedAppendOffset is Kafka's UnexpectedAppendOffsetException: a
	// follower's first batch starts below the log end offset.
	ErrUnexpectedAppendOffset = errors.New("unexpected append offset")
	// ErrRecordBatchTooLarge is RECORD_BATCH_TOO_LARGE: the appended bytes do
	// not fit in one segment.
	ErrRecordBatchTooLarge = errors.New("record batch larger than segment.bytes")
	// ErrClosed is returned by operations on a closed log.
	ErrClosed = errors.New("log closed")
)
