// Package log is Gregor's commit log engine in Kafka's on-disk format: one
// partition's log is a directory of segments (%020d.log with its sparse,
// memory-mapped .index and .timeindex), appended to at the end, read by offset
// or timestamp, rolled by size, age or full index, and recovered after a crash
// by rescanning what was not flushed. Each log also keeps its producers'
// state (epochs and last sequences of idempotent producers, with Kafka's
// <offset>.snapshot files) and checks producer batches against it; with
// it the open transactions, which bound the last stable offset, and per
// segment a .txnindex of aborted transactions for read_committed fetches
// and the cleaner. Each log also keeps its
// leader epoch cache (the first offset of each leader epoch, kept in the
// leader-epoch-checkpoint file), which answers OffsetsForLeaderEpoch. The
// Manager owns every log of a broker's log.dirs, their checkpoint files and
// the background flusher, retention and producer expiry. An idle partition
// holds no descriptor and no mapping: segment files are opened on demand
// under a broker-wide budget (file_cache.go) and indexes are mapped while
// used (index_lazy.go), so that one broker hosts 100,000 partitions.
//
// The layering follows Kafka's: Log (UnifiedLog/LocalLog) -> segment
// (LogSegment) -> offsetIndex/timeIndex/txnIndex. Record batches are stored
// exactly as validated by package record; nothing here decodes records
// except the timestamp search, which needs record-level timestamps, the
// transaction markers and the cleaner.
package log
