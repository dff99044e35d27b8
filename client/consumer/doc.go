// Package consumer is Gregor's Go Kafka consumer, shaped like Kafka's Java
// KafkaConsumer in assign mode: the application assigns partitions and
// polls; a fetcher goroutine fetches ahead from each partition's leader
// (fetch.min.bytes, fetch.max.bytes, max.partition.fetch.bytes,
// fetch.max.wait.ms), follows leader changes, resets out-of-range positions
// by auto.offset.reset, and under isolation.level=read_committed drops the
// records of aborted transactions. Positions move with Seek,
// SeekToBeginning/End and Pause/Resume; with a group.id, offsets are
// committed (CommitSync, CommitAsync, enable.auto.commit) and read back
// (Committed) as Kafka's consumer does for a manual assignment.
//
// Group membership is not here yet: there is no Subscribe, no partition
// assignors and no rebalance listener. A consumer of this package commits
// outside the group's membership, so it cannot share a group that has
// active members.
//
// Configuration uses Kafka's consumer property names (ConfigFromProperties,
// ParseProperties), so a Java client's .properties works unchanged; or a
// Config built from DefaultConfig.
package consumer
