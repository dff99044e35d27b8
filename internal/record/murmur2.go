package record

// Murmur2 is Kafka's Utils.murmur2, the hash of the default partitioner:
// 32-bit MurmurHash2 with Kafka's seed, little-endian words, and Java's
// signed int result. Keys must hash exactly as Java clients hash them, or
// keyed records land on different partitions depending on the client.
func Murmur2(b []byte) int32 {
	const (
		seed = uint32(0x9747b28c)
		m    = uint32(0x5bd1e995)
		r    = 24
	)
	length := len(b)
	h := seed ^ uint32(length)
	for i := 0; i+4 <= length; i += 4 {
		k := uint32(b[i]) | uint32(b[i+1])<<8 | uint32(b[i+2])<<16 | uint32(b[i+3])<<24
		k *= m
		k ^= k >> r
		k *= m
		h *= m
		h ^= k
	}
	tail := b[length&^3:]
	switch len(tail) {
	case 3:
		h ^= uint32(tail[2]) << 16
		fallthrough
	case 2:
		h ^= uint32(tail[1]) << 8
		fallthrough
	case 1:
		h ^= uint32(tail[0])
		h *= m
	}
	h ^= h >> 13
	h *= m
	h ^= h >> 15
	return int32(h)
}

// PartitionForKey is Kafka's default partition for a keyed record:
// toPositive(murmur2(key)) % numPartitions, where toPositive clears the sign
// bit (not Math.abs, which fails for MinInt32).
func PartitionForKey(key []byte, numPartitions int32) int32 {
	return (Murmur2(key) & 0x7fffffff) % numPartitions
}
