package chaos

import (
	"testing"
)

// The share-group checker on hand-made histories: a clean one (a record
// accepted once, one redelivered after its consumer died holding it, one
// whose consumer died while accepting it, one archived at the limit)
// passes, and each anomaly is found.

var shareCfg = ShareConfig{Topic: "s", Group: "sg", DeliveryLimit: 3,
	Ends: map[int32]int64{0: 4}, StartOffsets: map[int32]int64{0: 4}}

func shareOps() []Op {
	send := func(v string, off int64) Op {
		return Op{Process: "p", F: FSend, Outcome: OK, Topic: "s", Value: v, Offset: off, Invoke: ms(1), Complete: ms(2)}
	}
	deliver := func(proc, v string, off int64, n int32, at int) Op {
		return Op{Process: proc, F: FShareDeliver, Outcome: OK, Group: "sg", Topic: "s", Value: v, Offset: off, Delivery: n, Invoke: ms(at), Complete: ms(at)}
	}
	ack := func(proc, v string, kind string, out Outcome, at int) Op {
		return Op{Process: proc, F: FShareAck, Outcome: out, Group: "sg", Topic: "s", Value: v, Ack: kind, Invoke: ms(at), Complete: ms(at + 1)}
	}
	return []Op{
		send("a", 0), send("b", 1), send("c", 2), send("d", 3),
		deliver("c1", "a", 0, 1, 10), ack("c1", "a", "accept", OK, 11),
		// c2 died holding b: delivered again to c3 after the lock expired.
		deliver("c2", "b", 1, 1, 10), deliver("c3", "b", 1, 2, 40), ack("c3", "b", "accept", OK, 41),
		// c2 died while accepting c: it may have landed, it was not redelivered.
		deliver("c2", "c", 2, 1, 12), ack("c2", "c", "accept", Info, 13),
		// d is released every time: archived at the third delivery.
		deliver("c1", "d", 3, 1, 20), ack("c1", "d", "release", OK, 21),
		deliver("c3", "d", 3, 2, 22), ack("c3", "d", "release", OK, 23),
		deliver("c1", "d", 3, 3, 24), ack("c1", "d", "release", OK, 25),
		{Process: "nemesis", F: FFault, Outcome: OK, Value: "kill-consumer"},
	}
}

func TestShareCheckerCleanHistory(t *testing.T) {
	rep, counts := CheckShare(shareCfg, shareOps())
	if len(rep.Anomalies) != 0 {
		t.Fatalf("anomalies in a clean history:\n%s", rep.Summary())
	}
	want := ShareCounts{Records: 4, Accepted: 2, Uncertain: 1, Archived: 1, Redelivered: 2}
	if counts != want {
		t.Fatalf("counts %+v, want %+v", counts, want)
	}
	if rep.Faults["kill-consumer"] != 1 || rep.Ops[FShareDeliver][OK] != 7 || rep.Ops[FShareAck][Info] != 1 {
		t.Fatalf("tallies: faults %v ops %v", rep.Faults, rep.Ops)
	}
}

func TestShareCheckerFindsEachAnomaly(t *testing.T) {
	for _, tc := range []struct {
		name   string
		edit   func([]Op) []Op
		cfg    func(ShareConfig) ShareConfig
		kind   string
		wanted int
	}{
		{name: "never delivered", kind: Lost, wanted: 1, edit: func(ops []Op) []Op {
			return append(ops, Op{Process: "p", F: FSend, Outcome: OK, Topic: "s", Value: "e", Offset: 4})
		}},
		{name: "held by a dead consumer, never redelivered", kind: Lost, wanted: 1, edit: func(ops []Op) []Op {
			return dropOps(ops, func(op Op) bool { return op.Value == "b" && op.Process == "c3" })
		}},
		{name: "released below the limit, never redelivered", kind: Lost, wanted: 1, edit: func(ops []Op) []Op {
			return dropOps(ops, func(op Op) bool { return op.Value == "d" && op.Delivery == 3 })
		}},
		{name: "accepted twice", kind: AcceptedTwice, wanted: 1, edit: func(ops []Op) []Op {
			for i := range ops {
				if ops[i].Value == "b" && ops[i].Process == "c2" {
					// c2 heard back about b after all.
					ops = append(ops, Op{Process: "c2", F: FShareAck, Outcome: OK, Group: "sg", Topic: "s", Value: "b", Ack: "accept", Invoke: ms(50), Complete: ms(51)})
					break
				}
			}
			return ops
		}},
		{name: "redelivered after an acknowledged accept", kind: RedeliveredAfterAccept, wanted: 1, edit: func(ops []Op) []Op {
			return append(ops, Op{Process: "c3", F: FShareDeliver, Outcome: OK, Group: "sg", Topic: "s", Value: "a", Offset: 0, Delivery: 3, Invoke: ms(60)})
		}},
		{name: "delivered past the limit", kind: DeliveredPastLimit, wanted: 1, edit: func(ops []Op) []Op {
			return append(ops, Op{Process: "c3", F: FShareDeliver, Outcome: OK, Group: "sg", Topic: "s", Value: "d", Offset: 3, Delivery: 4, Invoke: ms(70)})
		}},
		{name: "handed a record at another offset", kind: UncommittedRead, wanted: 1, edit: func(ops []Op) []Op {
			for i := range ops {
				if ops[i].F == FShareDeliver && ops[i].Value == "a" {
					ops[i].Offset = 7
				}
			}
			return ops
		}},
		{name: "start offset behind the log end", kind: ShareStartBehind, wanted: 1, cfg: func(c ShareConfig) ShareConfig {
			c.StartOffsets = map[int32]int64{0: 3}
			return c
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ops, c := shareOps(), shareCfg
			if tc.edit != nil {
				ops = tc.edit(ops)
			}
			if tc.cfg != nil {
				c = tc.cfg(c)
			}
			rep, _ := CheckShare(c, ops)
			counts := rep.Counts()
			if counts[tc.kind] != tc.wanted || len(rep.Anomalies) != tc.wanted {
				t.Fatalf("want %d %s and nothing else, got:\n%s", tc.wanted, tc.kind, rep.Summary())
			}
		})
	}
}

func dropOps(ops []Op, drop func(Op) bool) []Op {
	var out []Op
	for _, op := range ops {
		if !drop(op) {
			out = append(out, op)
		}
	}
	return out
}
