package producer

// Interceptor sees every record before it is serialized and every
// acknowledgement: Kafka's ProducerInterceptor. OnSend may return a changed
// record; an interceptor that fails should return its input. Several
// interceptors run in the order configured, each seeing the previous one's
// record.
type Interceptor[K, V any] interface {
	// OnSend runs in Send before serialization and partitioning.
	OnSend(Record[K, V]) Record[K, V]
	// OnAcknowledgement runs when the record is acknowledged or fails,
	// before the record's callback, on the producer's I/O goroutine. It
	// also runs when Send fails before the record reaches the accumulator
	// (a serialization error, a timeout waiting for metadata or memory).
	OnAcknowledgement(RecordMetadata, error)
}
