package record

import (
	"math"
	"testing"
)

func TestSequenceArithmeticWraps(t *testing.T) {
	cases := []struct{ seq, delta, inc, dec int32 }{
		{0, 4, 4, math.MaxInt32 - 3},
		{10, 5, 15, 5},
		{math.MaxInt32, 1, 0, math.MaxInt32 - 1},
		{math.MaxInt32 - 1, 3, 1, math.MaxInt32 - 4},
		{2, 3, 5, math.MaxInt32},
	}
	for _, c := range cases {
		if got := IncrementSequence(c.seq, c.delta); got != c.inc {
			t.Errorf("IncrementSequence(%d, %d) = %d, want %d", c.seq, c.delta, got, c.inc)
		}
		if got := DecrementSequence(c.seq, c.delta); got != c.dec {
			t.Errorf("DecrementSequence(%d, %d) = %d, want %d", c.seq, c.delta, got, c.dec)
		}
		if got := DecrementSequence(IncrementSequence(c.seq, c.delta), c.delta); got != c.seq {
			t.Errorf("round trip of %d by %d = %d", c.seq, c.delta, got)
		}
	}
	h := BatchHeader{BaseSequence: NoSequence, LastOffsetDelta: 3}
	if h.LastSequence() != NoSequence {
		t.Errorf("last sequence without a base sequence: %d", h.LastSequence())
	}
}
