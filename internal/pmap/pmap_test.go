package pmap

import (
	"bytes"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
)

type intMap = Map[int, int, Ordered[int]]

// checkTree fails unless m is a valid AVL tree in key order with m.Len()
// entries.
func checkTree[K, V any, O Order[K]](t *testing.T, m Map[K, V, O]) {
	t.Helper()
	var count int
	var check func(n *node[K, V]) int8
	check = func(n *node[K, V]) int8 {
		if n == nil {
			return 0
		}
		count++
		if n.left != nil && m.compare(n.left.key, n.key) >= 0 {
			t.Fatalf("left child %v not below %v", n.left.key, n.key)
		}
		if n.right != nil && m.compare(n.right.key, n.key) <= 0 {
			t.Fatalf("right child %v not above %v", n.right.key, n.key)
		}
		hl, hr := check(n.left), check(n.right)
		if hl-hr > 1 || hr-hl > 1 {
			t.Fatalf("node %v unbalanced: left height %d, right %d", n.key, hl, hr)
		}
		if h := 1 + max(hl, hr); n.height != h {
			t.Fatalf("node %v has height %d, want %d", n.key, n.height, h)
		}
		return n.height
	}
	check(m.root)
	if count != m.Len() {
		t.Fatalf("tree has %d nodes, Len says %d", count, m.Len())
	}
	keys := slices.Collect(m.Keys())
	if !slices.IsSortedFunc(keys, m.compare) {
		t.Fatalf("keys out of order: %v", keys)
	}
}

// checkEqual fails unless m holds exactly the entries of want.
func checkEqual(t *testing.T, m intMap, want map[int]int) {
	t.Helper()
	checkTree(t, m)
	if m.Len() != len(want) {
		t.Fatalf("Len %d, want %d", m.Len(), len(want))
	}
	got := map[int]int{}
	for k, v := range m.All() {
		got[k] = v
	}
	if !maps.Equal(got, want) {
		t.Fatalf("entries %v, want %v", got, want)
	}
	if keys, wantKeys := slices.Collect(m.Keys()), slices.Sorted(maps.Keys(want)); !slices.Equal(keys, wantKeys) {
		t.Fatalf("keys %v, want %v", keys, wantKeys)
	}
	for k, v := range want {
		if got, ok := m.Get(k); !ok || got != v {
			t.Fatalf("Get(%d) = %d, %t; want %d", k, got, ok, v)
		}
	}
}

// version is a map at one point of a random walk and what it held then.
type version struct {
	m    intMap
	want map[int]int
}

// TestRandomAgainstBuiltinMap applies random sets, deletes and batches to a
// Map and to a Go map, deriving each new version from a random earlier one,
// and checks every version still holds what it held when made: no update
// shows through in another version.
func TestRandomAgainstBuiltinMap(t *testing.T) {
	for seed := range uint64(8) {
		rng := rand.New(rand.NewPCG(seed, 42))
		keySpace := []int{8, 64, 1000}[seed%3]
		versions := []version{{m: intMap{}, want: map[int]int{}}}
		for step := range 3000 {
			from := versions[len(versions)-1]
			if rng.IntN(4) == 0 {
				from = versions[rng.IntN(len(versions))]
			}
			m, want := from.m, maps.Clone(from.want)
			switch op := rng.IntN(10); {
			case op < 5:
				k, v := rng.IntN(keySpace), step
				m = m.Set(k, v)
				want[k] = v
			case op < 9:
				k := rng.IntN(keySpace)
				m = m.Delete(k)
				delete(want, k)
			default:
				entries := make([]Entry[int, int], rng.IntN(keySpace/2+1))
				for i := range entries {
					entries[i] = Entry[int, int]{Key: rng.IntN(keySpace), Value: step*1000 + i}
					want[entries[i].Key] = entries[i].Value
				}
				m = m.SetMany(entries)
			}
			checkEqual(t, m, want)
			versions = append(versions, version{m: m, want: want})
		}
		for i, v := range versions {
			if i%50 == 0 {
				checkEqual(t, v.m, v.want)
			}
		}
	}
}

func TestSetManyLastWinsAndBothPaths(t *testing.T) {
	base := intMap{}
	want := map[int]int{}
	for k := range 1000 {
		base = base.Set(k*2, k)
		want[k*2] = k
	}
	// Few entries next to the map: one path copy each.
	few := []Entry[int, int]{{5, 1}, {4, 2}, {5, 3}}
	fewWant := maps.Clone(want)
	fewWant[5], fewWant[4] = 3, 2
	checkEqual(t, base.SetMany(few), fewWant)
	// Many: one merge. Duplicates keep the last, new keys fall between,
	// before and after the existing ones.
	var many []Entry[int, int]
	manyWant := maps.Clone(want)
	for k := -50; k < 2100; k += 3 {
		many = append(many, Entry[int, int]{k, -1}, Entry[int, int]{k, k})
		manyWant[k] = k
	}
	checkEqual(t, base.SetMany(many), manyWant)
	checkEqual(t, base, want)
	checkEqual(t, intMap{}.SetMany(nil), map[int]int{})
}

func TestDeleteMissingKeepsMap(t *testing.T) {
	m := Map[string, int, Ordered[string]]{}.Set("a", 1).Set("c", 3)
	if d := m.Delete("b"); d.root != m.root || d.Len() != 2 {
		t.Fatal("deleting a missing key changed the map")
	}
	if _, ok := m.Delete("a").Get("a"); ok {
		t.Fatal("a still there after Delete")
	}
	if v, ok := m.Get("a"); !ok || v != 1 {
		t.Fatal("Delete changed the version it was called on")
	}
}

func TestIterationStopsEarly(t *testing.T) {
	m := Map[int, string, Ordered[int]]{}
	for k := range 100 {
		m = m.Set(k, "v")
	}
	var seen []int
	for k := range m.All() {
		seen = append(seen, k)
		if k == 9 {
			break
		}
	}
	if !slices.Equal(seen, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}) {
		t.Fatalf("saw %v", seen)
	}
	for v := range m.Values() {
		if v != "v" {
			t.Fatalf("value %q", v)
		}
		break
	}
}

type bytesOrder struct{}

func (bytesOrder) Compare(a, b [4]byte) int { return bytes.Compare(a[:], b[:]) }

func TestCustomOrder(t *testing.T) {
	var m Map[[4]byte, int, bytesOrder]
	for _, k := range [][4]byte{{3}, {1, 9}, {2}, {1}} {
		m = m.Set(k, int(k[0]))
	}
	checkTree(t, m)
	if got, want := slices.Collect(m.Keys()), [][4]byte{{1}, {1, 9}, {2}, {3}}; !slices.Equal(got, want) {
		t.Fatalf("keys %v, want %v", got, want)
	}
}

// TestUpdateSharesUnchangedNodes checks the point of the package: a Set on
// a big map allocates a path, not a copy.
func TestUpdateSharesUnchangedNodes(t *testing.T) {
	m := intMap{}
	for k := range 1 << 14 {
		m = m.Set(k, k)
	}
	old := map[*node[int, int]]bool{}
	var collect func(n *node[int, int])
	collect = func(n *node[int, int]) {
		if n != nil {
			old[n] = true
			collect(n.left)
			collect(n.right)
		}
	}
	collect(m.root)
	next := m.Set(777, -1)
	fresh := 0
	var count func(n *node[int, int])
	count = func(n *node[int, int]) {
		if n == nil || old[n] {
			return
		}
		fresh++
		count(n.left)
		count(n.right)
	}
	count(next.root)
	// An AVL tree of 2^14 entries is at most ~1.44·14 levels deep.
	if fresh == 0 || fresh > 21 {
		t.Fatalf("Set allocated %d new nodes in a tree of %d", fresh, m.Len())
	}
}
