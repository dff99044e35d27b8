package producer

import (
	"testing"
	"time"
)

// TestSampledWindows checks Kafka's sampling: a rate over the live windows
// (at least one full window of time), averages and maxima forgetting
// windows older than two.
func TestSampledWindows(t *testing.T) {
	var s sampled
	t0 := time.Unix(1000, 0)
	s.record(30, t0)
	s.record(90, t0.Add(10*time.Second))
	if r := s.rate(t0.Add(10 * time.Second)); r != 120.0/30 {
		t.Fatalf("rate %v, want 4/s (120 over the 30 s minimum)", r)
	}
	if a, m := s.avg(t0), s.maxOf(t0); a != 60 || m != 90 {
		t.Fatalf("avg %v max %v", a, m)
	}
	s.record(10, t0.Add(40*time.Second)) // a second window
	if r := s.rate(t0.Add(50 * time.Second)); r != 130.0/50 {
		t.Fatalf("rate %v, want 130/50", r)
	}
	// Past both windows of the first sample: only the second counts.
	late := t0.Add(65 * time.Second)
	if a, m := s.avg(late), s.maxOf(late); a != 10 || m != 10 {
		t.Fatalf("after the first window aged out: avg %v max %v", a, m)
	}
	if s.total != 130 {
		t.Fatalf("total %v", s.total)
	}
}
