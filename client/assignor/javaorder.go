package assignor

import (
	"slices"
	"unicode/utf16"
)

// javaHashMapOrder returns ids in the order Java's HashMap<String, ...>
// iterates them after they are inserted in the given order: by bucket of
// the spread String.hashCode in a table sized for len(ids), then by
// insertion. Kafka's sticky assignor walks its members in this order, and
// the walk decides ties (which of several members that own more than their
// share keeps the extra partition), so following it makes the results
// match Kafka's for the same input.
func javaHashMapOrder(ids []string) []string {
	capacity := 16
	for len(ids) > capacity*3/4 {
		capacity *= 2
	}
	bucket := make(map[string]int, len(ids))
	for _, id := range ids {
		h := javaStringHash(id)
		bucket[id] = int((h ^ (h >> 16)) & uint32(capacity-1))
	}
	out := slices.Clone(ids)
	slices.SortStableFunc(out, func(a, b string) int { return bucket[a] - bucket[b] })
	return out
}

// javaStringHash is Java's String.hashCode over UTF-16 code units.
func javaStringHash(s string) uint32 {
	var h uint32
	for _, u := range utf16.Encode([]rune(s)) {
		h = 31*h + uint32(u)
	}
	return h
}
