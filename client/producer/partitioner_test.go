package producer

import "testing"

// TestStickySwitchesAfterBatchSize checks KIP-794: keyless records stay on
// one partition until batch.size bytes went there.
func TestStickySwitchesAfterBatchSize(t *testing.T) {
	s := newStickyPartitioner(1000, false)
	avail := []int32{0, 1, 2, 3, 4, 5, 6, 7}
	first := s.partition("t", 100, 8, avail, nil)
	for i := 1; i < 10; i++ { // 10 records of 100 bytes: 1000 bytes
		if p := s.partition("t", 100, 8, avail, nil); p != first {
			t.Fatalf("record %d went to %d, the sticky partition is %d", i, p, first)
		}
	}
	// The next record starts a new choice; over many switches every
	// available partition is chosen.
	seen := map[int32]bool{}
	for range 2000 {
		seen[s.partition("t", 1000, 8, avail, nil)] = true
	}
	if len(seen) != 8 {
		t.Fatalf("switching reached %d of 8 partitions", len(seen))
	}
}

type fakeLoad struct {
	sizes []int
	up    []bool
}

func (f fakeLoad) queueSizes(string, []int32) ([]int, []bool) { return f.sizes, f.up }

// TestAdaptiveSkipsUnavailableAndFavoursShortQueues checks the adaptive
// weights: a partition whose leader is unavailable is never chosen, and the
// one with the longest queue (weight 1 of 1+5+...) rarely.
func TestAdaptiveSkipsUnavailableAndFavoursShortQueues(t *testing.T) {
	s := newStickyPartitioner(1, true)
	load := fakeLoad{sizes: []int{0, 4, 0}, up: []bool{true, true, false}}
	counts := map[int32]int{}
	for range 6000 {
		counts[s.partition("t", 10, 3, []int32{0, 1, 2}, load)]++
	}
	if counts[2] != 0 {
		t.Fatalf("unavailable partition chosen %d times", counts[2])
	}
	// Weights 5 and 1: partition 0 about five times as often as 1.
	if counts[0] < 3*counts[1] {
		t.Fatalf("short queue chosen %d times, long queue %d", counts[0], counts[1])
	}
}

func TestRoundRobinCyclesAvailable(t *testing.T) {
	rr := NewRoundRobinPartitioner()
	view := staticView{n: 4, avail: []int32{1, 3}}
	var got []int32
	for range 4 {
		got = append(got, rr.Partition("t", nil, nil, view))
	}
	if got[0] != 1 || got[1] != 3 || got[2] != 1 || got[3] != 3 {
		t.Fatalf("round robin over available {1,3}: %v", got)
	}
}

type staticView struct {
	n     int32
	avail []int32
}

func (v staticView) NumPartitions(string) int32         { return v.n }
func (v staticView) AvailablePartitions(string) []int32 { return v.avail }
