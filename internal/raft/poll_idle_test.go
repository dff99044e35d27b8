package raft

import (
	"math"
	"testing"
	"time"
)

func TestPollIdleRatio(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	p := newPollIdle(t0)
	near := func(what string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-9 {
			t.Errorf("%s: ratio %v, want %v", what, got, want)
		}
	}
	near("nothing done yet", p.ratio(at(10)), 1)
	p.busy(at(10), at(12)) // 2 s busy of the first 20 s
	near("2 s busy in 20 s", p.ratio(at(20)), 0.9)
	p.busy(at(35), at(41)) // in the second sample: 8 s busy of 45 s
	near("8 s busy in 45 s", p.ratio(at(45)), 1-8.0/45)
	// At 65 s the first sample (0-30 s) is out: the window is 30-65 s, 6 s busy.
	near("the first sample dropped", p.ratio(at(65)), 1-6.0/35)
	near("a long idle stretch", p.ratio(at(500)), 1)
	p.busy(at(500), at(600)) // longer than the window: clamped
	near("busy throughout", p.ratio(at(600)), 0)
}
