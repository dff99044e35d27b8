package consumer

import (
	"time"

	"gregor/internal/record"
)

// Header is a record header: a string key and a byte value (nil is null).
type Header = record.RecordHeader

// TopicPartition names one partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// Record is one consumed record: Kafka's ConsumerRecord, with the key and
// value deserialized.
type Record[K, V any] struct {
	Topic     string
	Partition int32
	Offset    int64
	// Timestamp is the record's CreateTime, or the broker's append time
	// when LogAppendTime is set.
	Timestamp     time.Time
	LogAppendTime bool
	Key           K
	Value         V
	Headers       []Header
	// LeaderEpoch is the partition leader epoch the record was written in.
	LeaderEpoch         int32
	SerializedKeySize   int // -1 for a null key
	SerializedValueSize int // -1 for a null value
}

// OffsetAndMetadata is a committed position: Kafka's OffsetAndMetadata.
// Offset is the next record to read, not the last one read.
type OffsetAndMetadata struct {
	Offset int64
	// LeaderEpoch is the leader epoch of the record before Offset; used
	// only when HasLeaderEpoch is true (Kafka's Optional leaderEpoch), so
	// OffsetAndMetadata{Offset: n} commits no epoch.
	LeaderEpoch    int32
	HasLeaderEpoch bool
	Metadata       string
}

// epoch is the leader epoch to send: -1 when there is none.
func (om OffsetAndMetadata) epoch() int32 {
	if om.HasLeaderEpoch {
		return om.LeaderEpoch
	}
	return -1
}

// withEpoch returns the OffsetAndMetadata of offset and epoch (-1: none).
func withEpoch(offset int64, epoch int32) OffsetAndMetadata {
	return OffsetAndMetadata{Offset: offset, LeaderEpoch: epoch, HasLeaderEpoch: epoch >= 0}
}

// OffsetAndTimestamp is OffsetsForTimes' answer for one partition.
type OffsetAndTimestamp struct {
	Offset      int64
	Timestamp   time.Time
	LeaderEpoch int32
}

// Deserializer turns bytes into a key or value: Kafka's Deserializer. data
// is nil for a null key or value. The bytes are not reused by the consumer,
// so a deserializer may keep them.
type Deserializer[T any] interface {
	Deserialize(topic string, headers []Header, data []byte) (T, error)
}

// DeserializerFunc adapts a function to Deserializer.
type DeserializerFunc[T any] func(topic string, headers []Header, data []byte) (T, error)

// Deserialize calls f.
func (f DeserializerFunc[T]) Deserialize(topic string, headers []Header, data []byte) (T, error) {
	return f(topic, headers, data)
}

// ByteArrayDeserializer passes bytes through (Kafka's ByteArrayDeserializer).
type ByteArrayDeserializer struct{}

// Deserialize returns data itself.
func (ByteArrayDeserializer) Deserialize(_ string, _ []Header, data []byte) ([]byte, error) {
	return data, nil
}

// StringDeserializer reads bytes as a string (Kafka's StringDeserializer);
// a null key or value is the empty string.
type StringDeserializer struct{}

// Deserialize returns data as a string.
func (StringDeserializer) Deserialize(_ string, _ []Header, data []byte) (string, error) {
	return string(data), nil
}

// Interceptor sees records before Poll returns them and offsets when they
// are committed: Kafka's ConsumerInterceptor. Several run in the order
// configured, each seeing the previous one's records.
type Interceptor[K, V any] interface {
	// OnConsume runs in Poll before the records are returned; it may
	// return changed or fewer records.
	OnConsume([]Record[K, V]) []Record[K, V]
	// OnCommit runs after a commit succeeds, with the offsets committed,
	// on the goroutine that saw the commit's response.
	OnCommit(map[TopicPartition]OffsetAndMetadata)
}

// CommitCallback receives the outcome of CommitAsync.
type CommitCallback func(map[TopicPartition]OffsetAndMetadata, error)
