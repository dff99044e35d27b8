package txn

import (
	"time"

	"gregor/internal/coordinator"
)

// Coordinated adapts a Shard to the coordinator runtime
// (coordinator.Shard): the runtime's goroutine feeds it time and records,
// Results are written with the runtime's Writer, and the markers that
// follow are handed to Send (the marker sender), which must not block,
// once the write that decided them is committed: a marker written before
// its PrepareCommit is committed could commit a transaction that a new
// coordinator, missing that PrepareCommit, then aborts.
type Coordinated struct {
	*Shard
	Send func([]Markers)
}

var _ coordinator.Shard = Coordinated{}

// Replay implements coordinator.Shard.
func (c Coordinated) Replay(_ time.Time, key, value []byte) error {
	return c.Shard.Replay(key, value)
}

// Tick implements coordinator.Shard.
func (c Coordinated) Tick(now time.Time, w *coordinator.Writer) {
	for _, r := range c.Shard.Tick(now.UnixMilli()) {
		c.Run(w, r)
	}
}

// Run writes a Result's records, finishes it and sends its markers.
func (c Coordinated) Run(w *coordinator.Writer, r Result) Outcome {
	var err error
	if len(r.Records) > 0 {
		recs := make([]coordinator.Record, len(r.Records))
		for i, rec := range r.Records {
			recs[i] = coordinator.Record{Key: rec.Key, Value: rec.Value}
		}
		err = w.Write(recs)
	}
	o := r.Finish(err)
	if len(o.Markers) > 0 && c.Send != nil {
		w.AfterCommit(func(err error) {
			if err == nil {
				c.Send(o.Markers)
			}
			// Else the partition moved: its next coordinator sends the
			// markers of the transactions it loads in a Prepare state.
		})
	}
	return o
}

// NextDeadline implements coordinator.Shard.
func (c Coordinated) NextDeadline() time.Time {
	if d := c.Shard.NextDeadline(); d > 0 {
		return time.UnixMilli(d)
	}
	return time.Time{}
}

// Unload implements coordinator.Shard: nothing waits on a transaction
// shard between operations (answers are given as each operation ends).
func (c Coordinated) Unload() {}
