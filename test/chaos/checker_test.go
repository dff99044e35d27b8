package chaos

import (
	"strings"
	"testing"
	"time"
)

// The checker on hand-made histories: a clean one passes, and each kind of
// anomaly is found (and nothing else).

var cfg = Config{Queues: []string{"q"}, TxnInput: "in", TxnOutput: "out"}

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

// cleanState: q/0 holds a, b, c (offsets 0..2); in/0 holds x, y; out/0
// holds x and y committed by producer 7, then z aborted by producer 8.
func cleanState() State {
	return State{Logs: map[TP][]Rec{
		{"q", 0}:  {{Offset: 0, Value: "a"}, {Offset: 1, Value: "b"}, {Offset: 2, Value: "c"}},
		{"in", 0}: {{Offset: 0, Value: "x"}, {Offset: 1, Value: "y"}},
		{"out", 0}: {
			{Offset: 0, Value: "x", ProducerID: 7, Transactional: true},
			{Offset: 1, Value: "z", ProducerID: 8, Transactional: true},
			{Offset: 2, Value: "y", ProducerID: 7, Transactional: true},
			{Offset: 3, ProducerID: 7, Control: true, Commit: true},
			{Offset: 4, ProducerID: 8, Control: true},
		},
	}}
}

func cleanOps() []Op {
	return []Op{
		{Process: "p0", F: FSend, Outcome: OK, Invoke: ms(1), Complete: ms(2), Topic: "q", Value: "a", Offset: 0},
		{Process: "p0", F: FSend, Outcome: Info, Invoke: ms(3), Complete: ms(9), Topic: "q", Value: "b"},
		{Process: "p0", F: FSend, Outcome: OK, Invoke: ms(4), Complete: ms(10), Topic: "q", Value: "c", Offset: 2},
		{Process: "p0", F: FSend, Outcome: Info, Invoke: ms(5), Complete: ms(11), Topic: "q", Value: "never-landed"},
		{Process: "r0", F: FRead, Outcome: OK, Invoke: ms(11), Topic: "q", Offset: 0, Value: "a"},
		{Process: "r0", F: FRead, Outcome: OK, Invoke: ms(12), Topic: "q", Offset: 2, Value: "c"},
		{Process: "g/s1", F: FRead, Outcome: OK, Invoke: ms(12), Group: "g", Topic: "q", Offset: 0, Value: "a"},
		{Process: "g/s1", F: FCommit, Outcome: OK, Invoke: ms(13), Complete: ms(14), Group: "g", Topic: "q", Offset: 1},
		{Process: "g/s1", F: FCommit, Outcome: Info, Invoke: ms(15), Complete: ms(16), Group: "g", Topic: "q", Offset: 3},
		{Process: "adm", F: FFetchOffsets, Outcome: OK, Invoke: ms(17), Group: "g", Topic: "q", Offset: 1},
		// A new session starts where the acknowledged commit left off.
		{Process: "g/s2", F: FRead, Outcome: OK, Invoke: ms(20), Group: "g", Topic: "q", Offset: 1, Value: "b"},
		// A read_committed reader sees committed x and y.
		{Process: "w", F: FRead, Outcome: OK, Invoke: ms(20), Committed: true, Topic: "out", Offset: 0, Value: "x"},
		{Process: "w", F: FRead, Outcome: OK, Invoke: ms(21), Committed: true, Topic: "out", Offset: 2, Value: "y"},
		{Process: "etl", F: FTxn, Outcome: OK, Invoke: ms(5), Complete: ms(6), Values: []string{"x", "y"}},
		{Process: "etl", F: FTxn, Outcome: Fail, Invoke: ms(7), Complete: ms(8), Values: []string{"z"}},
		{Process: "nemesis", F: FFault, Outcome: OK, Value: "kill"},
	}
}

func TestCheckerCleanHistory(t *testing.T) {
	rep := Check(cfg, cleanOps(), cleanState())
	if len(rep.Anomalies) != 0 {
		t.Fatalf("anomalies in a clean history:\n%s", rep.Summary())
	}
	if rep.Faults["kill"] != 1 || rep.Ops[FSend][OK] != 2 || rep.Ops[FSend][Info] != 2 {
		t.Fatalf("counts wrong:\n%s", rep.Summary())
	}
	if s := rep.Summary(); !strings.Contains(s, "anomalies: 0") || !strings.Contains(s, "faults injected: 1 (kill=1)") {
		t.Fatalf("summary:\n%s", s)
	}
}

func TestCheckerFindsEachAnomaly(t *testing.T) {
	for _, tc := range []struct {
		name string
		kind string
		edit func(ops []Op, st State) ([]Op, State)
	}{
		{"acknowledged record missing", Lost, func(ops []Op, st State) ([]Op, State) {
			st.Logs[TP{"q", 0}] = st.Logs[TP{"q", 0}][:2] // c (acknowledged) gone
			return append(ops[:5], ops[6:]...), st        // and nobody read it
		}},
		{"acknowledged at another offset", Lost, func(ops []Op, st State) ([]Op, State) {
			ops[0].Offset = 5
			return ops, st
		}},
		{"idempotent record twice", Duplicated, func(ops []Op, st State) ([]Op, State) {
			st.Logs[TP{"q", 0}] = append(st.Logs[TP{"q", 0}], Rec{Offset: 3, Value: "b"})
			return ops, st
		}},
		{"one producer's records swapped", Reordered, func(ops []Op, st State) ([]Op, State) {
			ops[1].Invoke, ops[2].Invoke = ops[2].Invoke, ops[1].Invoke // c sent before b, logged after
			return ops, st
		}},
		{"read_committed read of an aborted record", AbortedRead, func(ops []Op, st State) ([]Op, State) {
			return append(ops, Op{Process: "w2", F: FRead, Outcome: OK, Invoke: ms(22), Committed: true, Topic: "out", Offset: 1, Value: "z"}), st
		}},
		{"read of a record the log lost", UncommittedRead, func(ops []Op, st State) ([]Op, State) {
			return append(ops, Op{Process: "r0", F: FRead, Outcome: OK, Invoke: ms(23), Topic: "q", Offset: 3, Value: "d"}), st
		}},
		{"read_committed read of an open transaction", UncommittedRead, func(ops []Op, st State) ([]Op, State) {
			out := st.Logs[TP{"out", 0}]
			st.Logs[TP{"out", 0}] = append(out, Rec{Offset: 5, Value: "o", ProducerID: 9, Transactional: true})
			return append(ops, Op{Process: "w", F: FRead, Outcome: OK, Invoke: ms(22), Committed: true, Topic: "out", Offset: 5, Value: "o"}), st
		}},
		{"consumer position back", OffsetBackwards, func(ops []Op, st State) ([]Op, State) {
			return append(ops, Op{Process: "r0", F: FRead, Outcome: OK, Invoke: ms(24), Topic: "q", Offset: 1, Value: "b"}), st
		}},
		{"OffsetFetch below an acknowledged commit", CommittedOffsetBackwards, func(ops []Op, st State) ([]Op, State) {
			return append(ops, Op{Process: "adm", F: FFetchOffsets, Outcome: OK, Invoke: ms(30), Group: "g", Topic: "q", Offset: -1}), st
		}},
		{"group member re-reads a committed record", RereadCommitted, func(ops []Op, st State) ([]Op, State) {
			return append(ops, Op{Process: "g/s3", F: FRead, Outcome: OK, Invoke: ms(31), Group: "g", Topic: "q", Offset: 0, Value: "a"}), st
		}},
		{"input never copied", Lost, func(ops []Op, st State) ([]Op, State) {
			st.Logs[TP{"in", 0}] = append(st.Logs[TP{"in", 0}], Rec{Offset: 2, Value: "w"})
			return ops, st
		}},
		{"input copied twice", Duplicated, func(ops []Op, st State) ([]Op, State) {
			out := st.Logs[TP{"out", 0}]
			st.Logs[TP{"out", 0}] = append(out,
				Rec{Offset: 5, Value: "x", ProducerID: 9, Transactional: true},
				Rec{Offset: 6, ProducerID: 9, Control: true, Commit: true})
			return ops, st
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ops, st := tc.edit(cleanOps(), cleanState())
			rep := Check(cfg, ops, st)
			counts := rep.Counts()
			if counts[tc.kind] == 0 || len(counts) != 1 {
				t.Fatalf("want only %s, got:\n%s", tc.kind, rep.Summary())
			}
		})
	}
}

// Input beyond the group's committed offsets is not required in the output.
func TestCheckerTxnProcessedBound(t *testing.T) {
	st := cleanState()
	st.Logs[TP{"in", 0}] = append(st.Logs[TP{"in", 0}], Rec{Offset: 2, Value: "w"})
	bounded := cfg
	bounded.TxnProcessed = map[int32]int64{0: 2}
	if rep := Check(bounded, cleanOps(), st); len(rep.Anomalies) != 0 {
		t.Fatalf("unprocessed input reported:\n%s", rep.Summary())
	}
}
