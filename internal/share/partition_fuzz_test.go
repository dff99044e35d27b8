package share

import (
	"errors"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"gregor/internal/sharestate"
)

// checkInvariants returns the first invariant of Partition that p breaks.
func checkInvariants(p *Partition) error {
	if p.start > p.end {
		return fmt.Errorf("start %d after end %d", p.start, p.end)
	}
	next := p.start
	for i, r := range p.runs {
		if r.first != next || r.last < r.first {
			return fmt.Errorf("run %d is %d-%d, expected to start at %d", i, r.first, r.last, next)
		}
		if i == 0 && (r.state == Acknowledged || r.state == Archived) {
			return fmt.Errorf("first run %d-%d is %s: SPSO did not advance", r.first, r.last, r.state)
		}
		if r.state == Available && r.deliveryCount >= p.cfg.DeliveryCountLimit {
			return fmt.Errorf("run %d-%d available after %d deliveries (limit %d)", r.first, r.last, r.deliveryCount, p.cfg.DeliveryCountLimit)
		}
		if (r.state == Acquired) != (r.member != "") {
			return fmt.Errorf("run %d-%d %s with member %q", r.first, r.last, r.state, r.member)
		}
		next = r.last + 1
	}
	if next != p.end {
		return fmt.Errorf("runs end at %d, end is %d", next, p.end)
	}
	// The persisted view, read back, is the same view.
	u := p.Persisted(0)
	back := NewPartition(p.cfg, sharestate.State{StateEpoch: u.StateEpoch, StartOffset: u.StartOffset, Batches: u.Batches})
	if again := back.Persisted(0); !samePersisted(u, again) && !onlyLimitArchived(u, again, p.cfg.DeliveryCountLimit) {
		return fmt.Errorf("persisted view %+v read back as %+v", u, again)
	}
	return nil
}

// onlyLimitArchived: reading a state back archives nothing but what
// reached the delivery limit, and advances SPSO past it.
func onlyLimitArchived(u, again sharestate.Update, limit int16) bool {
	for _, b := range u.Batches {
		if b.DeliveryState == sharestate.Available && b.DeliveryCount >= limit {
			return true
		}
	}
	return false
}

// FuzzPartition drives a share-partition with arbitrary operations (each
// byte triple one operation) and checks its invariants after each, and
// that no acknowledgement that fails changes anything.
func FuzzPartition(f *testing.F) {
	f.Add([]byte{0, 5, 3, 1, 0, 2, 2, 1, 9, 3, 0, 0, 0, 4, 1})
	f.Add([]byte{0, 9, 9, 3, 0, 1, 4, 200, 0, 0, 2, 2, 5, 3, 7, 2, 0, 3, 1, 6, 0})
	f.Add([]byte{6, 3, 0, 0, 20, 30, 4, 0, 0, 0, 1, 1, 1, 2, 0, 5, 0, 0})
	f.Fuzz(func(t *testing.T, ops []byte) {
		if err := runOps(ops); err != nil {
			t.Fatal(err)
		}
	})
}

// runOps runs FuzzPartition's operations, each byte triple one operation,
// and returns the first broken invariant.
func runOps(ops []byte) error {
	p := NewPartition(PartitionConfig{RecordLockDurationMs: 10, DeliveryCountLimit: 3, MaxRecordLocks: 40}, sharestate.State{StartOffset: 0})
	members := []string{"a", "b"}
	now := int64(0)
	logEnd := int64(0)
	for len(ops) >= 3 {
		op, x, y := ops[0]%7, int64(ops[1]), int64(ops[2])
		ops = ops[3:]
		now += y % 7
		member := members[x%2]
		switch op {
		case 0: // records appended to the log, in batches of x%5+1
			logEnd += x%20 + 1
		case 1: // a fetch reads the log from the next fetch offset
			from := p.NextFetchOffset(p.StartOffset())
			if from < 0 || from >= logEnd {
				continue
			}
			var bs []LogBatch
			size := x%5 + 1
			for o := from - from%size; o < logEnd; o += size {
				bs = append(bs, LogBatch{FirstOffset: o, LastOffset: min(o+size-1, logEnd-1), Skip: (o/size)%7 == 3})
			}
			p.Acquire(member, now, from, bs, y%10+1, 0, y%2 == 0)
		case 2, 3: // acknowledgements
			first := p.StartOffset() + x%8 - 2
			b := AckBatch{FirstOffset: first, LastOffset: first + y%4, Types: []AckType{AckType(y % 5)}}
			if y%3 == 0 {
				b.Types = nil
				for i := int64(0); i <= y%4; i++ {
					b.Types = append(b.Types, AckType((x+i)%4))
				}
			}
			before := p.Clone()
			err := ValidateAckBatches([]AckBatch{b}, true)
			if err == nil {
				err = p.Acknowledge(member, now, []AckBatch{b})
			}
			if err != nil {
				if !errors.Is(err, kerr.InvalidRequest) && !errors.Is(err, kerr.InvalidRecordState) {
					return fmt.Errorf("acknowledge error %w", err)
				}
				if !samePersisted(before.Persisted(0), p.Persisted(0)) || before.NextLockDeadline() != p.NextLockDeadline() {
					return fmt.Errorf("a failed acknowledgement changed the state")
				}
			}
		case 4:
			p.ExpireLocks(now)
		case 5:
			p.ReleaseMember(member)
		case 6:
			p.ArchiveBefore(min(x%10, logEnd))
		}
		if err := checkInvariants(p); err != nil {
			return fmt.Errorf("after op %d(%d,%d): %w", op, x, y, err)
		}
	}
	return nil
}
