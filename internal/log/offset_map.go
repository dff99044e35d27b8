package log

import (
	"fmt"
	"hash/maphash"
)

// offsetMap is the cleaner's bounded key -> latest offset table (Kafka's
// SkimpyOffsetMap): a fixed-size open-addressing hash table that stores a
// 128-bit hash of each key instead of the key, so its memory is fixed by
// log.cleaner.dedupe.buffer.size whatever the keys' sizes. Two keys whose
// 128-bit hashes collide would be taken for one key, a risk Kafka accepts
// with MD5 and we accept with two independently seeded maphashes. There is no
// delete; clear empties the table for the next log.
//
// Each slot is three words: the two hash halves and the offset. The first
// half always has its low bit set, so an all-zero slot is empty.
type offsetMap struct {
	slots   int
	table   []uint64 // allocated on first use: a thread that never cleans costs nothing
	entries int
	// latestOffset is the last offset put or declared mapped
	// (updateLatestOffset), -1 after clear.
	latestOffset int64
	lookups      int64
	probes       int64

	seedHi, seedLo maphash.Seed
}

// offsetMapBytesPerEntry is Kafka's bytesPerEntry for MD5: 16 + 8.
const offsetMapBytesPerEntry = 24

// newOffsetMap sizes a map to memory bytes. The slot count is the largest
// prime that fits, so that double hashing visits every slot.
func newOffsetMap(memory int64) (*offsetMap, error) {
	n := memory / offsetMapBytesPerEntry
	if n < 3 {
		return nil, fmt.Errorf("offset map of %d bytes holds fewer than 3 entries", memory)
	}
	return &offsetMap{
		slots:        int(largestPrimeAtMost(n)),
		latestOffset: -1,
		seedHi:       maphash.MakeSeed(),
		seedLo:       maphash.MakeSeed(),
	}, nil
}

func largestPrimeAtMost(n int64) int64 {
	for ; n > 2; n-- {
		if isPrime(n) {
			return n
		}
	}
	return 2
}

func isPrime(n int64) bool {
	if n < 2 || n%2 == 0 {
		return n == 2
	}
	for d := int64(3); d*d <= n; d += 2 {
		if n%d == 0 {
			return false
		}
	}
	return true
}

// clear empties the map (Kafka zeroes its buffer too).
func (m *offsetMap) clear() {
	if m.table == nil {
		m.table = make([]uint64, 3*m.slots)
	} else {
		clear(m.table)
	}
	m.entries, m.lookups, m.probes = 0, 0, 0
	m.latestOffset = -1
}

func (m *offsetMap) hash(key []byte) (hi, lo uint64) {
	return maphash.Bytes(m.seedHi, key) | 1, maphash.Bytes(m.seedLo, key)
}

// find returns the table index of key's slot, or of the empty slot where it
// would go.
func (m *offsetMap) find(hi, lo uint64) int {
	n := uint64(m.slots)
	pos := hi % n
	step := 1 + lo%(n-1) // never 0 and, n being prime, coprime with n
	m.lookups++
	for {
		m.probes++
		i := int(pos) * 3
		if m.table[i] == 0 || (m.table[i] == hi && m.table[i+1] == lo) {
			return i
		}
		pos += step
		if pos >= n {
			pos -= n
		}
	}
}

// put records offset as key's latest offset. The caller keeps the map below
// its load factor (see cleaner.buildOffsetMap), so there is always an empty
// slot to end a probe.
func (m *offsetMap) put(key []byte, offset int64) error {
	if m.entries >= m.slots-1 {
		return fmt.Errorf("offset map full: %d entries in %d slots", m.entries, m.slots)
	}
	hi, lo := m.hash(key)
	i := m.find(hi, lo)
	if m.table[i] == 0 {
		m.table[i], m.table[i+1] = hi, lo
		m.entries++
	}
	m.table[i+2] = uint64(offset)
	m.latestOffset = offset
	return nil
}

// get returns key's latest offset, or -1 if the key is not in the map.
func (m *offsetMap) get(key []byte) int64 {
	if m.entries == 0 {
		return -1
	}
	hi, lo := m.hash(key)
	i := m.find(hi, lo)
	if m.table[i] == 0 {
		return -1
	}
	return int64(m.table[i+2])
}

// size is the number of distinct keys put.
func (m *offsetMap) size() int { return m.entries }

// updateLatestOffset declares every offset up to offset mapped (offsets
// without keyed records, gaps at the end of a segment).
func (m *offsetMap) updateLatestOffset(offset int64) { m.latestOffset = offset }

// utilization is the fraction of slots in use.
func (m *offsetMap) utilization() float64 { return float64(m.entries) / float64(m.slots) }
