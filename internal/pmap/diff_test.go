package pmap

import (
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
)

func intsEqual(a, b int) bool { return a == b }

// wantDiff is the diff of two Go maps, in key order.
func wantDiff(old, next map[int]int) []Change[int, int] {
	var out []Change[int, int]
	keys := slices.Sorted(maps.Keys(old))
	for k := range next {
		if _, ok := old[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		o, inOld := old[k]
		n, inNew := next[k]
		if inOld && inNew && o == n {
			continue
		}
		out = append(out, Change[int, int]{Key: k, Old: o, New: n, InOld: inOld, InNew: inNew})
	}
	return out
}

// TestDiffAgainstBuiltinMaps diffs random pairs of versions, related by a
// few updates or by many, or built apart, against the diff of Go maps.
func TestDiffAgainstBuiltinMaps(t *testing.T) {
	for seed := range uint64(6) {
		rng := rand.New(rand.NewPCG(seed, 7))
		keySpace := []int{16, 300, 5000}[seed%3]
		versions := []version{{m: intMap{}, want: map[int]int{}}}
		for step := range 600 {
			from := versions[len(versions)-1]
			if rng.IntN(5) == 0 {
				from = versions[rng.IntN(len(versions))]
			}
			m, want := from.m, maps.Clone(from.want)
			for range 1 + rng.IntN(4) {
				k := rng.IntN(keySpace)
				switch op := rng.IntN(10); {
				case op < 5:
					// Half the sets keep the value: a copied node, no change.
					v := step
					if old, ok := want[k]; ok && rng.IntN(2) == 0 {
						v = old
					}
					m = m.Set(k, v)
					want[k] = v
				case op < 9:
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
			}
			versions = append(versions, version{m: m, want: want})
		}
		for range 400 {
			x, y := versions[rng.IntN(len(versions))], versions[rng.IntN(len(versions))]
			if rng.IntN(8) == 0 {
				// A map equal to x but sharing no node with it.
				var fresh intMap
				for k, v := range x.m.All() {
					fresh = fresh.Set(k, v)
				}
				x = version{m: fresh, want: x.want}
			}
			got := slices.Collect(y.m.Diff(x.m, intsEqual))
			if want := wantDiff(x.want, y.want); !slices.Equal(got, want) {
				t.Fatalf("seed %d: diff\n%v\nwant\n%v", seed, got, want)
			}
		}
	}
}

// TestDiffSkipsSharedSubtrees checks the point of Diff: after one update
// of a big map it reads a path or two, not the map.
func TestDiffSkipsSharedSubtrees(t *testing.T) {
	m := intMap{}
	for k := range 1 << 16 {
		m = m.Set(k, k)
	}
	for _, tc := range []struct {
		name string
		next intMap
		want []Change[int, int]
	}{
		{"set", m.Set(4242, -1), []Change[int, int]{{Key: 4242, Old: 4242, New: -1, InOld: true, InNew: true}}},
		{"add", m.Set(1<<20, 1), []Change[int, int]{{Key: 1 << 20, New: 1, InNew: true}}},
		{"delete", m.Delete(31337), []Change[int, int]{{Key: 31337, Old: 31337, InOld: true}}},
		{"same value", m.Set(100, 100), nil},
	} {
		calls := 0
		got := slices.Collect(tc.next.Diff(m, func(a, b int) bool { calls++; return a == b }))
		if !slices.Equal(got, tc.want) {
			t.Fatalf("%s: diff %v, want %v", tc.name, got, tc.want)
		}
		// The entries compared are those of copied nodes: about one path
		// (an AVL tree of 2^16 entries is at most ~23 levels deep), a few
		// more where a rotation moved subtrees.
		if calls > 3*23 {
			t.Fatalf("%s: compared %d entries of a map of %d", tc.name, calls, m.Len())
		}
	}
	if got := slices.Collect(m.Diff(m, nil)); len(got) != 0 {
		t.Fatalf("a map differs from itself: %v", got)
	}
	// Without equal, the entries of copied nodes count as changed.
	if got := slices.Collect(m.Set(100, 100).Diff(m, nil)); len(got) == 0 || !slices.ContainsFunc(got, func(c Change[int, int]) bool { return c.Key == 100 }) {
		t.Fatalf("diff without equal misses the copied node: %v", got)
	}
}

func TestDiffEmptyAndEarlyStop(t *testing.T) {
	m := intMap{}.Set(1, 1).Set(2, 2).Set(3, 3)
	if got := slices.Collect(intMap{}.Diff(intMap{}, nil)); len(got) != 0 {
		t.Fatalf("empty maps differ: %v", got)
	}
	removed := slices.Collect(intMap{}.Diff(m, nil))
	if len(removed) != 3 || removed[0].Key != 1 || !removed[0].InOld || removed[0].InNew {
		t.Fatalf("diff to empty: %v", removed)
	}
	var seen []int
	for c := range m.Diff(intMap{}, nil) {
		seen = append(seen, c.Key)
		if c.Key == 2 {
			break
		}
	}
	if !slices.Equal(seen, []int{1, 2}) {
		t.Fatalf("early stop saw %v", seen)
	}
}
