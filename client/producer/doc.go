// Package producer is Gregor's Go Kafka producer, shaped like Kafka's Java
// KafkaProducer so that Java habits carry over: a Config read from Kafka's
// property names (or a Java client's .properties file), typed records with
// key and value serializers, interceptors, and three ways to send:
// fire-and-forget (Send with a nil callback), asynchronous (Send with a
// callback) and synchronous (SendSync). Flush and Close(timeout) behave as
// Java's flush() and close(Duration).
//
// It speaks Kafka's protocol to any Kafka-compatible broker; requests and
// record batches are encoded with franz-go's kmsg, and compression reuses
// Gregor's broker codecs.
//
// # How records travel
//
// Send runs the interceptors' OnSend, waits (up to max.block.ms) for the
// topic's metadata, serializes key and value, picks a partition and
// reserves the record's bytes from buffer.memory, blocking up to
// max.block.ms when it is full (then ErrBufferExhausted). The partition is
// the record's own (HasPartition), the configured Partitioner's choice, the
// murmur2 hash of the key (Kafka's default), or, for keyless records,
// KIP-794's uniform sticky partition (partitioner.adaptive.partitioning.enable,
// partitioner.availability.timeout.ms, partitioner.ignore.keys).
//
// Records gather per partition into batches of up to batch.size bytes. One
// sender goroutine sends a batch when it is full, when linger.ms has passed,
// on Flush or Close, or when a Send waits for memory; it groups batches by
// partition leader into one Produce request per broker (at most
// max.request.size), with at most max.in.flight.requests.per.connection
// requests outstanding per broker, and compresses them (compression.type,
// compression.<type>.level).
//
// Failed batches are retried (retries) after retry.backoff.ms growing
// exponentially to retry.backoff.max.ms; leader errors refresh the metadata
// first. A record not acknowledged within delivery.timeout.ms of Send fails
// with ErrDeliveryTimeout; a broker that does not answer within
// request.timeout.ms has its connection closed and the batches retried.
//
// # Idempotence
//
// enable.idempotence is on by default (it is turned off when acks is not
// all or more than 5 requests may be in flight, unless set explicitly, in
// which case that is an error). The producer gets a producer id, numbers
// each partition's batches, and keeps them in order through retries with
// up to 5 in flight: a batch is retried only after every earlier batch of
// its partition is answered, and no more than 5 batches are outstanding
// from the oldest unacknowledged one, the window in which a broker
// recognises a retried batch as a duplicate and answers with its first
// offset. When the broker reports a sequence gap (OUT_OF_ORDER_SEQUENCE_NUMBER
// or UNKNOWN_PRODUCER_ID on the oldest batch) or a numbered batch fails for
// good, the producer waits for its requests in flight, bumps its epoch
// (KIP-360) and numbers the remaining batches again from 0.
//
// Metrics returns the producer's metrics by Kafka's names (record-send-rate,
// record-error-rate, record-retry-rate, batch-size-avg, request-latency-avg
// and more) for the application to export.
//
// Limits: transactions (transactional.id) are not implemented yet; nor are
// TLS and SASL (security.protocol other than PLAINTEXT is refused). A batch
// that fails for good after its request was cut off may nonetheless have
// been written, as with Kafka's Java producer.
package producer
