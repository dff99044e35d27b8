package share

import (
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestSessions: epochs as KIP-932 numbers them, partitions added and
// forgotten, Kafka's errors, and the cache bound with its evictions.
func TestSessions(t *testing.T) {
	now := time.Unix(1000, 0)
	s := NewSessions(2, time.Minute)
	a := SessionKey{Group: "g", Member: "a"}
	p0, p1 := SessionPartition{Partition: 0}, SessionPartition{Partition: 1}
	if err := s.Open(a, []SessionPartition{p0, p0}, now, nil); err != nil {
		t.Fatal(err)
	}
	parts, added, err := s.Next(a, 1, []SessionPartition{p1}, nil, now)
	if err != nil || len(parts) != 2 || !added[p1] || added[p0] {
		t.Fatalf("epoch 1 adding p1: %v %v %v", parts, added, err)
	}
	if err := s.Acknowledged(a, 2, now); err != nil {
		t.Fatal(err)
	}
	if parts, _, err := s.Next(a, 3, nil, []SessionPartition{p0}, now); err != nil || len(parts) != 1 || parts[0] != p1 {
		t.Fatalf("epoch 3 forgetting p0: %v %v", parts, err)
	}
	for _, c := range []struct {
		name string
		err  error
		want error
	}{
		{"a past epoch", s.Acknowledged(a, 3, now), kerr.InvalidShareSessionEpoch},
		{"ack opening", s.Acknowledged(a, 0, now), kerr.InvalidShareSessionEpoch},
		{"unknown member", s.Acknowledged(SessionKey{Group: "g", Member: "x"}, 1, now), kerr.ShareSessionNotFound},
	} {
		if !errors.Is(c.err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, c.err, c.want)
		}
	}
	// After the largest epoch comes 1.
	s.m[a].epoch = 1<<31 - 1
	if err := s.Acknowledged(a, 1<<31-1, now); err != nil || s.m[a].epoch != 1 {
		t.Fatalf("epoch wrap: %v, next %d", err, s.m[a].epoch)
	}

	// Full: refused, until a client closes its connection or a session
	// idles long enough.
	closed := make(chan struct{})
	b := SessionKey{Group: "g", Member: "b"}
	if err := s.Open(b, nil, now, closed); err != nil {
		t.Fatal(err)
	}
	c := SessionKey{Group: "g", Member: "c"}
	if err := s.Open(c, nil, now, nil); !errors.Is(err, kerr.ShareSessionLimitReached) {
		t.Fatalf("third session in a cache of 2: %v", err)
	}
	close(closed)
	if err := s.Open(c, nil, now, nil); err != nil {
		t.Fatalf("after b's connection closed: %v", err)
	}
	if _, err := s.Close(b); !errors.Is(err, kerr.ShareSessionNotFound) {
		t.Fatalf("b evicted: %v", err)
	}
	d := SessionKey{Group: "g", Member: "d"}
	if err := s.Open(d, nil, now.Add(59*time.Second), nil); !errors.Is(err, kerr.ShareSessionLimitReached) {
		t.Fatalf("no session idle a minute: %v", err)
	}
	if err := s.Open(d, nil, now.Add(time.Minute), nil); err != nil || s.Len() != 2 {
		t.Fatalf("a session idle a minute gives way: %v, %d sessions", err, s.Len())
	}
	if parts, err := s.Close(d); err != nil || len(parts) != 0 || s.Len() != 1 {
		t.Fatalf("close: %v %v, %d left", parts, err, s.Len())
	}
}
