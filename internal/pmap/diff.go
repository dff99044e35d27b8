package pmap

import "iter"

// Change is one key whose entry differs between two versions of a map. In
// the old version it held Old if InOld; in the new one it holds New if
// InNew. At least one of InOld and InNew is true.
type Change[K, V any] struct {
	Key          K
	Old, New     V
	InOld, InNew bool
}

// Diff returns the keys whose entries differ between old and m, in key
// order: keys added, removed, and present in both with values that equal
// does not call equal. Two versions derived from one another share every
// subtree an update did not touch, and Diff skips a subtree the two hold
// at the same position by pointer, without reading it: the diff of a
// version and the one k updates later costs O(k · log n), not O(n). Maps
// that share nothing (each built from scratch) are compared entry by
// entry in one ordered walk, O(n).
//
// equal is called only for keys both versions hold in distinct nodes
// (a node copied by an update, or on a path an update copied); nil means
// that only the same node counts as unchanged.
func (m Map[K, V, O]) Diff(old Map[K, V, O], equal func(a, b V) bool) iter.Seq[Change[K, V]] {
	return func(yield func(Change[K, V]) bool) {
		var a, b cursor[K, V]
		a.push(old.root)
		b.push(m.root)
		for {
			x, y := a.top(), b.top()
			switch {
			case x == nil && y == nil:
				return
			case x == nil:
				// Only the new version has entries left: all added.
				if !b.expand() {
					if e := b.pop(); !yield(Change[K, V]{Key: e.key, New: e.value, InNew: true}) {
						return
					}
				}
				continue
			case y == nil:
				// Only the old version has entries left: all removed.
				if !a.expand() {
					if e := a.pop(); !yield(Change[K, V]{Key: e.key, Old: e.value, InOld: true}) {
						return
					}
				}
				continue
			case x.subtree && y.subtree && x.n == y.n:
				// The same subtree at the front of both: the same entries.
				a.pop()
				b.pop()
				continue
			case x.subtree || y.subtree:
				// Open the taller subtree (both if equally tall), so that
				// a subtree shared lower down comes to the front of both.
				switch {
				case !y.subtree || (x.subtree && x.n.height > y.n.height):
					a.expand()
				case !x.subtree || y.n.height > x.n.height:
					b.expand()
				default:
					a.expand()
					b.expand()
				}
				continue
			}
			switch c := m.compare(x.n.key, y.n.key); {
			case c < 0:
				e := a.pop()
				if !yield(Change[K, V]{Key: e.key, Old: e.value, InOld: true}) {
					return
				}
			case c > 0:
				e := b.pop()
				if !yield(Change[K, V]{Key: e.key, New: e.value, InNew: true}) {
					return
				}
			default:
				oe, ne := a.pop(), b.pop()
				if oe == ne || (equal != nil && equal(oe.value, ne.value)) {
					continue
				}
				if !yield(Change[K, V]{Key: ne.key, Old: oe.value, New: ne.value, InOld: true, InNew: true}) {
					return
				}
			}
		}
	}
}

// cursor walks a tree in key order as a stack of what is left: a subtree
// not yet opened, or a single entry (a node without its children). The
// front of the walk is the top of the stack.
type cursor[K, V any] struct {
	stack []item[K, V]
}

type item[K, V any] struct {
	n       *node[K, V]
	subtree bool // n and both its subtrees, else n's entry alone
}

func (c *cursor[K, V]) push(n *node[K, V]) {
	if n != nil {
		c.stack = append(c.stack, item[K, V]{n: n, subtree: true})
	}
}

// top returns the front of the walk, nil at its end.
func (c *cursor[K, V]) top() *item[K, V] {
	if len(c.stack) == 0 {
		return nil
	}
	return &c.stack[len(c.stack)-1]
}

// pop removes the front of the walk and returns its node.
func (c *cursor[K, V]) pop() *node[K, V] {
	n := c.stack[len(c.stack)-1].n
	c.stack = c.stack[:len(c.stack)-1]
	return n
}

// expand opens the subtree at the front into its left subtree, its root's
// entry and its right subtree; it reports false if the front is already a
// single entry.
func (c *cursor[K, V]) expand() bool {
	it := c.top()
	if !it.subtree {
		return false
	}
	n := it.n
	c.stack = c.stack[:len(c.stack)-1]
	c.push(n.right)
	c.stack = append(c.stack, item[K, V]{n: n})
	c.push(n.left)
	return true
}
