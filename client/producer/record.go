package producer

import (
	"time"

	"gregor/internal/record"
)

// Header is a record header: a string key and a byte value (nil is null).
type Header = record.RecordHeader

// Record is what the application sends: Kafka's ProducerRecord. The key and
// value are typed; the producer's serializers turn them into bytes.
type Record[K, V any] struct {
	Topic string
	// Partition is used only when HasPartition is true; otherwise the
	// partitioner chooses (Kafka's ProducerRecord with a null partition).
	Partition    int32
	HasPartition bool
	Key          K
	Value        V
	Headers      []Header
	// Timestamp is the record's CreateTime; the zero time means now.
	Timestamp time.Time
}

// RecordMetadata is what the broker acknowledged for one record: Kafka's
// RecordMetadata.
type RecordMetadata struct {
	Topic     string
	Partition int32
	// Offset is the record's offset, or -1 when it is not known (acks=0).
	Offset int64
	// Timestamp is the record's CreateTime, or the broker's append time
	// when the topic uses LogAppendTime.
	Timestamp           time.Time
	SerializedKeySize   int // -1 for a null key
	SerializedValueSize int // -1 for a null value
}

// Callback receives the outcome of one Send: the metadata, or the error the
// record failed with. Callbacks run on the producer's I/O goroutines, in
// send order within a batch and for a partition's batches answered on one
// connection; a batch that is retried completes after the batches sent
// behind it. A callback that blocks delays the completion of other
// records, as in Kafka's Java producer.
type Callback func(RecordMetadata, error)
