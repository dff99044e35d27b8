// Package pmap is a persistent ordered map: an AVL tree whose updates copy
// only the path from the root to the changed key (path copying), so a new
// version costs O(log n) time and memory and shares every other node with
// the version it came from.
//
// A Map is a small immutable value. Set and Delete return a new Map and
// leave the receiver as it was, so any number of goroutines may read any
// version without locks while another goroutine derives new versions. The
// metadata image (internal/metadata) keeps its topics, each topic's
// partitions and the dynamic configs in Maps, so that a commit costs
// O(changed · log n), not O(topics).
package pmap

import (
	"cmp"
	"iter"
	"slices"
)

// Order is a total order of keys: Compare returns a negative number if
// a < b, zero if they are equal, a positive one if a > b. It is a type
// parameter rather than a func field so that the zero Map is an empty map
// ready for use and a Map is two words.
type Order[K any] interface {
	Compare(a, b K) int
}

// Ordered orders the keys of cmp.Ordered types by cmp.Compare.
type Ordered[K cmp.Ordered] struct{}

// Compare implements Order.
func (Ordered[K]) Compare(a, b K) int { return cmp.Compare(a, b) }

// Map is an immutable map from K to V in the key order O. The zero Map is
// empty and ready for use.
type Map[K, V any, O Order[K]] struct {
	root *node[K, V]
	len  int
}

// node is one entry of the tree. A node is never modified once it is
// reachable from a Map.
type node[K, V any] struct {
	key         K
	value       V
	left, right *node[K, V]
	height      int8 // of the subtree rooted here: 1 for a leaf
}

func (Map[K, V, O]) compare(a, b K) int {
	var order O
	return order.Compare(a, b)
}

// Len returns the number of entries.
func (m Map[K, V, O]) Len() int { return m.len }

// Get returns the value of key and whether the map holds it.
func (m Map[K, V, O]) Get(key K) (V, bool) {
	n := m.root
	for n != nil {
		c := m.compare(key, n.key)
		switch {
		case c < 0:
			n = n.left
		case c > 0:
			n = n.right
		default:
			return n.value, true
		}
	}
	var zero V
	return zero, false
}

// Set returns a map with key set to value.
func (m Map[K, V, O]) Set(key K, value V) Map[K, V, O] {
	root, added := m.set(m.root, key, value)
	m.root = root
	if added {
		m.len++
	}
	return m
}

func (m Map[K, V, O]) set(n *node[K, V], key K, value V) (*node[K, V], bool) {
	if n == nil {
		return &node[K, V]{key: key, value: value, height: 1}, true
	}
	c := m.compare(key, n.key)
	switch {
	case c < 0:
		left, added := m.set(n.left, key, value)
		return balance(n.key, n.value, left, n.right), added
	case c > 0:
		right, added := m.set(n.right, key, value)
		return balance(n.key, n.value, n.left, right), added
	default:
		copied := *n
		copied.value = value
		return &copied, false
	}
}

// Delete returns a map without key (the receiver itself if it lacks key).
func (m Map[K, V, O]) Delete(key K) Map[K, V, O] {
	root, removed := m.delete(m.root, key)
	if removed {
		m.root = root
		m.len--
	}
	return m
}

func (m Map[K, V, O]) delete(n *node[K, V], key K) (*node[K, V], bool) {
	if n == nil {
		return nil, false
	}
	c := m.compare(key, n.key)
	switch {
	case c < 0:
		left, removed := m.delete(n.left, key)
		if !removed {
			return n, false
		}
		return balance(n.key, n.value, left, n.right), true
	case c > 0:
		right, removed := m.delete(n.right, key)
		if !removed {
			return n, false
		}
		return balance(n.key, n.value, n.left, right), true
	}
	switch {
	case n.left == nil:
		return n.right, true
	case n.right == nil:
		return n.left, true
	}
	// Two children: the smallest key of the right subtree takes n's place.
	key, value, right := removeMin(n.right)
	return balance(key, value, n.left, right), true
}

// removeMin returns the smallest entry of the non-empty subtree n and the
// subtree without it.
func removeMin[K, V any](n *node[K, V]) (K, V, *node[K, V]) {
	if n.left == nil {
		return n.key, n.value, n.right
	}
	key, value, left := removeMin(n.left)
	return key, value, balance(n.key, n.value, left, n.right)
}

// All returns the entries in key order. The sequence reads the version it
// was called on, whatever versions are derived meanwhile.
func (m Map[K, V, O]) All() iter.Seq2[K, V] {
	return func(yield func(K, V) bool) {
		walk(m.root, yield)
	}
}

// Keys returns the keys in order.
func (m Map[K, V, O]) Keys() iter.Seq[K] {
	return func(yield func(K) bool) {
		walk(m.root, func(k K, _ V) bool { return yield(k) })
	}
}

// Values returns the values in key order.
func (m Map[K, V, O]) Values() iter.Seq[V] {
	return func(yield func(V) bool) {
		walk(m.root, func(_ K, v V) bool { return yield(v) })
	}
}

func walk[K, V any](n *node[K, V], yield func(K, V) bool) bool {
	for n != nil {
		if !walk(n.left, yield) || !yield(n.key, n.value) {
			return false
		}
		n = n.right
	}
	return true
}

// Entry is one key and value, for SetMany.
type Entry[K, V any] struct {
	Key   K
	Value V
}

// SetMany returns a map with every entry of entries set, a later entry of
// the same key winning over an earlier one. Where the entries are many
// next to the map, it builds the new tree in one ordered merge (O(n + k log
// k), each node allocated once) instead of copying a path per entry, which
// is how a metadata snapshot of a million partitions loads without
// churning the heap. entries may be reordered.
func (m Map[K, V, O]) SetMany(entries []Entry[K, V]) Map[K, V, O] {
	if len(entries) == 0 {
		return m
	}
	if len(entries)*8 < m.len {
		for _, e := range entries {
			m = m.Set(e.Key, e.Value)
		}
		return m
	}
	slices.SortStableFunc(entries, func(a, b Entry[K, V]) int { return m.compare(a.Key, b.Key) })
	// Keep the last entry of each run of equal keys.
	changes := entries[:0]
	for i, e := range entries {
		if i+1 < len(entries) && m.compare(e.Key, entries[i+1].Key) == 0 {
			continue
		}
		changes = append(changes, e)
	}
	merged := make([]Entry[K, V], 0, m.len+len(changes))
	i := 0
	walk(m.root, func(k K, v V) bool {
		for i < len(changes) && m.compare(changes[i].Key, k) < 0 {
			merged = append(merged, changes[i])
			i++
		}
		if i < len(changes) && m.compare(changes[i].Key, k) == 0 {
			merged = append(merged, changes[i])
			i++
		} else {
			merged = append(merged, Entry[K, V]{Key: k, Value: v})
		}
		return true
	})
	merged = append(merged, changes[i:]...)
	return Map[K, V, O]{root: fromSorted(merged), len: len(merged)}
}

// fromSorted builds a balanced tree of entries sorted by key, without
// duplicates.
func fromSorted[K, V any](entries []Entry[K, V]) *node[K, V] {
	if len(entries) == 0 {
		return nil
	}
	mid := len(entries) / 2
	return newNode(entries[mid].Key, entries[mid].Value, fromSorted(entries[:mid]), fromSorted(entries[mid+1:]))
}

func height[K, V any](n *node[K, V]) int8 {
	if n == nil {
		return 0
	}
	return n.height
}

func newNode[K, V any](key K, value V, left, right *node[K, V]) *node[K, V] {
	return &node[K, V]{key: key, value: value, left: left, right: right, height: 1 + max(height(left), height(right))}
}

// balance returns a new node of key and value over left and right, whose
// heights differ by at most 2 (one insertion or deletion below a balanced
// node), rotated so that they differ by at most 1.
func balance[K, V any](key K, value V, left, right *node[K, V]) *node[K, V] {
	hl, hr := height(left), height(right)
	switch {
	case hl > hr+1:
		if height(left.left) >= height(left.right) {
			return newNode(left.key, left.value, left.left, newNode(key, value, left.right, right))
		}
		lr := left.right
		return newNode(lr.key, lr.value, newNode(left.key, left.value, left.left, lr.left), newNode(key, value, lr.right, right))
	case hr > hl+1:
		if height(right.right) >= height(right.left) {
			return newNode(right.key, right.value, newNode(key, value, left, right.left), right.right)
		}
		rl := right.left
		return newNode(rl.key, rl.value, newNode(key, value, left, rl.left), newNode(right.key, right.value, rl.right, right.right))
	}
	return newNode(key, value, left, right)
}
