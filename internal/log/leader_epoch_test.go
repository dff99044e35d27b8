package log

import (
	"slices"
	"testing"
)

// epochCache builds a cache holding entries, assigned in order.
func epochCache(t *testing.T, entries ...EpochEntry) *leaderEpochCache {
	t.Helper()
	c := newLeaderEpochCache(t.TempDir(), testLogger())
	for _, e := range entries {
		if _, err := c.assign(e.Epoch, e.StartOffset); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

func wantEntries(t *testing.T, c *leaderEpochCache, want ...EpochEntry) {
	t.Helper()
	if got := c.epochEntries(); !slices.Equal(got, want) {
		t.Fatalf("entries %v, want %v", got, want)
	}
}

func TestEpochCacheAssign(t *testing.T) {
	tests := []struct {
		name    string
		assigns []EpochEntry
		want    []EpochEntry
	}{
		{"first entry", []EpochEntry{{2, 10}}, []EpochEntry{{2, 10}}},
		{"epoch zero at offset zero", []EpochEntry{{0, 0}}, []EpochEntry{{0, 0}}},
		{"same epoch later offset keeps the first start",
			[]EpochEntry{{1, 11}, {1, 12}, {2, 13}, {2, 14}, {3, 15}, {3, 16}},
			[]EpochEntry{{1, 11}, {2, 13}, {3, 15}}},
		{"same epoch same offset is no change", []EpochEntry{{2, 6}, {2, 6}}, []EpochEntry{{2, 6}}},
		{"same epoch earlier offset moves its start", []EpochEntry{{2, 6}, {2, 5}}, []EpochEntry{{2, 5}}},
		{"epochs need not be contiguous", []EpochEntry{{0, 10}, {2, 13}, {4, 17}}, []EpochEntry{{0, 10}, {2, 13}, {4, 17}}},
		{"newer epoch at a lower offset drops the conflicting one",
			[]EpochEntry{{2, 6}, {3, 5}}, []EpochEntry{{3, 5}}},
		{"newer epoch at the same offset replaces an empty epoch",
			[]EpochEntry{{2, 6}, {3, 8}, {4, 8}}, []EpochEntry{{2, 6}, {4, 8}}},
		{"older epoch after newer ones truncates them",
			[]EpochEntry{{2, 6}, {3, 8}, {4, 11}, {3, 9}}, []EpochEntry{{2, 6}, {3, 9}}},
		{"matching latest epoch at an earlier offset drops everything at or after it",
			[]EpochEntry{{2, 6}, {3, 8}, {4, 11}, {4, 7}}, []EpochEntry{{2, 6}, {4, 7}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantEntries(t, epochCache(t, tt.assigns...), tt.want...)
		})
	}
}

func TestEpochCacheAssignReportsChange(t *testing.T) {
	c := epochCache(t)
	for _, step := range []struct {
		e       EpochEntry
		changed bool
	}{{EpochEntry{1, 0}, true}, {EpochEntry{1, 5}, false}, {EpochEntry{2, 5}, true}, {EpochEntry{2, 5}, false}, {EpochEntry{2, 4}, true}} {
		changed, err := c.assign(step.e.Epoch, step.e.StartOffset)
		if err != nil || changed != step.changed {
			t.Fatalf("assign %v: changed %v (%v), want %v", step.e, changed, err, step.changed)
		}
	}
	for _, bad := range []EpochEntry{{-1, 0}, {0, -1}} {
		if _, err := c.assign(bad.Epoch, bad.StartOffset); err == nil {
			t.Fatalf("assign %v accepted", bad)
		}
	}
	wantEntries(t, c, EpochEntry{1, 0}, EpochEntry{2, 4})
}

func TestEpochCacheEndOffsetFor(t *testing.T) {
	type answer struct {
		epoch  int32
		offset int64
	}
	undefined := answer{UndefinedEpoch, UndefinedEpochOffset}
	tests := []struct {
		name      string
		entries   []EpochEntry
		requested int32
		leo       int64
		want      answer
	}{
		{"empty cache", nil, 0, 0, undefined},
		{"empty cache, some epoch", nil, 7, 20, undefined},
		{"empty cache, undefined epoch", nil, UndefinedEpoch, 0, undefined},
		{"undefined epoch with entries", []EpochEntry{{2, 6}}, UndefinedEpoch, 10, undefined},
		{"latest epoch ends at the log end", []EpochEntry{{2, 5}, {3, 6}, {4, 7}}, 4, 30, answer{4, 30}},
		{"single epoch not from zero", []EpochEntry{{2, 6}}, 2, 7, answer{2, 7}},
		{"previous epoch ends where the next starts", []EpochEntry{{1, 11}, {2, 13}, {3, 15}}, 2, 17, answer{2, 15}},
		{"first epoch", []EpochEntry{{1, 11}, {2, 13}, {3, 15}}, 1, 17, answer{1, 13}},
		{"gap: the epoch below answers, ending at the next start", []EpochEntry{{0, 10}, {2, 13}, {4, 17}}, 1, 0, answer{0, 13}},
		{"gap before the latest", []EpochEntry{{0, 10}, {2, 13}, {4, 17}}, 3, 40, answer{2, 17}},
		{"older than the first epoch: requested epoch, first start", []EpochEntry{{5, 11}, {6, 12}, {7, 13}}, 4, 0, answer{4, 11}},
		{"epoch zero below the first", []EpochEntry{{5, 11}}, 0, 20, answer{0, 11}},
		{"negative epoch other than -1 is below the first", []EpochEntry{{5, 11}}, -2, 20, answer{-2, 11}},
		{"newer than every epoch", []EpochEntry{{2, 100}}, 3, 100, undefined},
		{"max epoch", []EpochEntry{{2, 100}}, 1<<31 - 1, 100, undefined},
		{"latest epoch with an empty log end", []EpochEntry{{0, 0}}, 0, 0, answer{0, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := epochCache(t, tt.entries...)
			e, off := c.endOffsetFor(tt.requested, tt.leo)
			if (answer{e, off}) != tt.want {
				t.Fatalf("endOffsetFor(%d, %d) = (%d, %d), want %v", tt.requested, tt.leo, e, off, tt.want)
			}
		})
	}
}

func TestEpochCacheTruncateFromEnd(t *testing.T) {
	base := []EpochEntry{{2, 6}, {3, 8}, {4, 11}}
	tests := []struct {
		name    string
		end     int64
		want    []EpochEntry
		changed bool
	}{
		{"past the latest start", 12, base, false},
		{"at the latest start", 11, base[:2], true},
		{"inside an epoch", 9, base[:2], true},
		{"on an epoch boundary", 8, base[:1], true},
		{"at the first start", 6, nil, true},
		{"below everything", 0, nil, true},
		{"undefined offset changes nothing", -1, base, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := epochCache(t, base...)
			if changed := c.truncateFromEnd(tt.end); changed != tt.changed {
				t.Fatalf("changed %v, want %v", changed, tt.changed)
			}
			wantEntries(t, c, tt.want...)
		})
	}
	if epochCache(t).truncateFromEnd(5) {
		t.Fatal("truncating an empty cache changed it")
	}
}

func TestEpochCacheTruncateFromStart(t *testing.T) {
	base := []EpochEntry{{2, 6}, {3, 8}, {4, 11}}
	tests := []struct {
		name    string
		start   int64
		want    []EpochEntry
		changed bool
	}{
		{"before the first start", 5, base, false},
		{"at the first start", 6, base, false},
		{"inside the first epoch moves its start", 7, []EpochEntry{{2, 7}, {3, 8}, {4, 11}}, true},
		{"at the second start", 8, []EpochEntry{{3, 8}, {4, 11}}, true},
		{"between epochs", 9, []EpochEntry{{3, 9}, {4, 11}}, true},
		{"at the latest start", 11, []EpochEntry{{4, 11}}, true},
		{"past the latest start keeps the latest epoch", 15, []EpochEntry{{4, 15}}, true},
		{"undefined offset changes nothing", -1, base, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := epochCache(t, base...)
			if changed := c.truncateFromStart(tt.start); changed != tt.changed {
				t.Fatalf("changed %v, want %v", changed, tt.changed)
			}
			wantEntries(t, c, tt.want...)
		})
	}
	if epochCache(t).truncateFromStart(5) {
		t.Fatal("truncating an empty cache changed it")
	}
}

func TestEpochCacheClearAndLatest(t *testing.T) {
	c := epochCache(t)
	if _, ok := c.latest(); ok {
		t.Fatal("empty cache has a latest entry")
	}
	if c.clear() {
		t.Fatal("clearing an empty cache changed it")
	}
	c = epochCache(t, EpochEntry{2, 6}, EpochEntry{3, 8})
	if e, ok := c.latest(); !ok || e != (EpochEntry{3, 8}) {
		t.Fatalf("latest %v %v, want (3, 8)", e, ok)
	}
	if !c.clear() {
		t.Fatal("clear reported no change")
	}
	wantEntries(t, c)
	// A cleared cache takes any epoch again.
	if changed, err := c.assign(1, 0); err != nil || !changed {
		t.Fatalf("assign after clear: %v %v", changed, err)
	}
}
