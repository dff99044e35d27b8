package producer

import (
	"math/rand/v2"
	"sync"

	"gregor/internal/record"
)

// Partitioner chooses a record's partition: Kafka's Partitioner. It is
// called from Send, possibly from several goroutines at once.
type Partitioner interface {
	// Partition returns a partition in [0, cluster.NumPartitions(topic)).
	Partition(topic string, key, value []byte, cluster ClusterView) int32
}

// ClusterView is what a Partitioner may know of a topic.
type ClusterView interface {
	// NumPartitions is the topic's partition count.
	NumPartitions(topic string) int32
	// AvailablePartitions lists the partitions that have a leader.
	AvailablePartitions(topic string) []int32
}

// RoundRobinPartitioner spreads records over a topic's available partitions
// in turn, keys ignored: Kafka's RoundRobinPartitioner.
type RoundRobinPartitioner struct {
	mu   sync.Mutex
	next map[string]int
}

// NewRoundRobinPartitioner returns a RoundRobinPartitioner.
func NewRoundRobinPartitioner() *RoundRobinPartitioner {
	return &RoundRobinPartitioner{next: map[string]int{}}
}

// Partition returns the topic's next partition, among the available ones
// when there are any.
func (p *RoundRobinPartitioner) Partition(topic string, _, _ []byte, cluster ClusterView) int32 {
	p.mu.Lock()
	i := p.next[topic]
	p.next[topic] = i + 1
	p.mu.Unlock()
	if avail := cluster.AvailablePartitions(topic); len(avail) > 0 {
		return avail[i%len(avail)]
	}
	return int32(i % int(cluster.NumPartitions(topic)))
}

// keyPartition is Kafka's default placement of a keyed record: murmur2 of
// the key, made positive, modulo the partition count (all partitions, not
// only available ones, so a key's partition does not move when a leader is
// down).
func keyPartition(key []byte, numPartitions int32) int32 {
	return record.PartitionForKey(key, numPartitions)
}

// stickyPartitioner is Kafka's built-in partitioner for records without a
// key (KIP-794 uniform sticky): all of a topic's keyless records go to one
// partition until batch.size bytes have gone there, then another partition
// is chosen. With adaptive partitioning the choice is weighted towards
// partitions with fewer queued batches, and partitions whose leader is
// unavailable (partitioner.availability.timeout.ms) are skipped.
type stickyPartitioner struct {
	batchSize int
	adaptive  bool

	mu     sync.Mutex
	topics map[string]*stickyTopic
}

type stickyTopic struct {
	partition int32 // -1 before the first choice
	produced  int   // bytes placed on partition since it was chosen
}

func newStickyPartitioner(batchSize int, adaptive bool) *stickyPartitioner {
	return &stickyPartitioner{batchSize: max(batchSize, 1), adaptive: adaptive, topics: map[string]*stickyTopic{}}
}

// partitionLoad is the accumulator's view that adaptive partitioning uses.
type partitionLoad interface {
	// queueSizes returns the number of queued batches of each of the
	// candidate partitions and whether each one's leader is available.
	queueSizes(topic string, partitions []int32) (sizes []int, available []bool)
}

// partition returns the sticky partition for a record of size bytes and
// counts the bytes against it.
func (s *stickyPartitioner) partition(topic string, size int, numPartitions int32, avail []int32, load partitionLoad) int32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.topics[topic]
	if st == nil {
		st = &stickyTopic{partition: -1}
		s.topics[topic] = st
	}
	if st.partition < 0 || st.partition >= numPartitions || st.produced >= s.batchSize {
		st.partition = s.next(topic, numPartitions, avail, load)
		st.produced = 0
	}
	st.produced += size
	return st.partition
}

// next chooses a new sticky partition.
func (s *stickyPartitioner) next(topic string, numPartitions int32, avail []int32, load partitionLoad) int32 {
	candidates := avail
	if len(candidates) == 0 {
		return rand.Int32N(numPartitions)
	}
	if !s.adaptive || load == nil {
		return candidates[rand.IntN(len(candidates))]
	}
	sizes, up := load.queueSizes(topic, candidates)
	// Kafka's BuiltInPartitioner weights a partition by (max queue + 1 -
	// its queue), so an idle partition is the likeliest pick and the
	// longest queue still gets a chance.
	maxSize := 0
	for i, n := range sizes {
		if up[i] {
			maxSize = max(maxSize, n)
		}
	}
	total := 0
	weights := make([]int, len(sizes))
	for i, n := range sizes {
		if up[i] {
			weights[i] = maxSize + 1 - n
			total += weights[i]
		}
	}
	if total == 0 {
		return candidates[rand.IntN(len(candidates))]
	}
	r := rand.IntN(total)
	for i, w := range weights {
		if r < w {
			return candidates[i]
		}
		r -= w
	}
	return candidates[len(candidates)-1]
}
