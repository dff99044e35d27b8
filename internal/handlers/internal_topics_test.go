package handlers

import "testing"

func TestInternalReplicationFactor(t *testing.T) {
	for _, c := range []struct {
		configured int16
		registered int
		alone      bool
		want       int16
		wantOK     bool
	}{
		{3, 3, false, 3, true},
		{3, 4, false, 3, true},
		{3, 2, false, 0, false}, // a broker is late: wait, never RF 2
		{3, 0, false, 0, false},
		{1, 1, false, 1, true},
		{3, 1, true, 1, true}, // the single node uses what it has
		{3, 0, true, 1, true}, // not registered yet: the controller refuses, and it waits
		{1, 1, true, 1, true},
	} {
		got, ok := internalReplicationFactor(c.configured, c.registered, c.alone)
		if got != c.want || ok != c.wantOK {
			t.Errorf("internalReplicationFactor(%d, %d, %v) = %d, %v; want %d, %v",
				c.configured, c.registered, c.alone, got, ok, c.want, c.wantOK)
		}
	}
}
