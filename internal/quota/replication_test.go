package quota

import (
	"math"
	"slices"
	"testing"
	"time"
)

// TestReplicationThrottleAveragesTheBound drives a mover that sends 100 KB
// chunks whenever the throttle allows, for 60 s of fake time: the moved
// bytes average the bound, as Kafka's replication quota makes them.
func TestReplicationThrottleAveragesTheBound(t *testing.T) {
	clock := newClock()
	r, err := NewReplication(LeaderReplication, Config{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	if r.IsQuotaExceeded() {
		t.Fatal("exceeded with no bound")
	}
	const bound = 1 << 20 // 1 MiB/s
	r.SetBound(bound)
	moved := 0
	for step := 0; step < 6000; step++ { // 10 ms steps
		if !r.IsQuotaExceeded() {
			r.Record(100_000)
			moved += 100_000
		}
		clock.advance(10 * time.Millisecond)
	}
	perSecond := float64(moved) / 60
	if perSecond < 0.9*bound || perSecond > 1.2*bound {
		t.Fatalf("moved %.0f B/s, bound %d B/s", perSecond, bound)
	}
	if rate := r.Rate(); rate < 0.8*bound || rate > 1.2*bound {
		t.Fatalf("measured rate %.0f B/s, bound %d", rate, bound)
	}
	r.SetBound(math.MaxInt64)
	if r.IsQuotaExceeded() {
		t.Fatal("exceeded after the bound was removed")
	}
}

func TestThrottledPartitions(t *testing.T) {
	r, err := NewReplication(FollowerReplication, Config{})
	if err != nil {
		t.Fatal(err)
	}
	a, err := ParseThrottledReplicas("0:1, 1:2,2:1,0:1", 1)
	if err != nil || a.All || !slices.Equal(a.Partitions, []int32{0, 2}) {
		t.Fatalf("parsed %+v, %v", a, err)
	}
	all, err := ParseThrottledReplicas(" * ", 1)
	if err != nil || !all.All {
		t.Fatalf("parsed * as %+v, %v", all, err)
	}
	if none, err := ParseThrottledReplicas("", 1); err != nil || none.All || none.Partitions != nil {
		t.Fatalf("parsed empty as %+v, %v", none, err)
	}
	if _, err := ParseThrottledReplicas("0-1", 1); err == nil {
		t.Fatal("bad entry accepted")
	}
	r.SetThrottled(map[string]ThrottledPartitions{"a": a, "b": all})
	for _, tc := range []struct {
		topic     string
		partition int32
		want      bool
	}{{"a", 0, true}, {"a", 1, false}, {"a", 2, true}, {"b", 7, true}, {"c", 0, false}} {
		if got := r.IsThrottled(tc.topic, tc.partition); got != tc.want {
			t.Errorf("%s-%d throttled = %v, want %v", tc.topic, tc.partition, got, tc.want)
		}
	}
	if r.Type().String() != "FollowerReplication" || LeaderReplication.String() != "LeaderReplication" {
		t.Error("type names")
	}
}
