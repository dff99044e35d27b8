package chaos

import (
	"fmt"
	"sort"
	"strings"
)

// Anomaly kinds the checker reports.
const (
	// Lost: an acknowledged write is missing from the final log (or sits
	// at another offset than the one acknowledged), or an input record of
	// the transactional workload never reached its committed output.
	Lost = "lost"
	// Duplicated: a value is in a log more than once (an idempotent
	// producer's record, or an input record in the committed output).
	Duplicated = "duplicated"
	// Reordered: one producer's records of a partition are in the log in
	// another order than it sent them.
	Reordered = "reordered"
	// AbortedRead: a read_committed consumer returned a record of an
	// aborted transaction.
	AbortedRead = "aborted-read"
	// UncommittedRead: a consumer returned a record that is not in the
	// final log at that offset (it was above the high watermark and then
	// truncated), or a read_committed consumer returned a record of a
	// transaction that never ended.
	UncommittedRead = "uncommitted-read"
	// OffsetBackwards: a consumer outside a group returned a partition's
	// records at an offset not past the last one it returned.
	OffsetBackwards = "offset-backwards"
	// CommittedOffsetBackwards: an OffsetFetch answered less than an
	// offset whose commit was acknowledged before the fetch began.
	CommittedOffsetBackwards = "committed-offset-backwards"
	// RereadCommitted: a group member returned a record below an offset
	// whose commit was acknowledged before the poll began.
	RereadCommitted = "reread-committed"
)

// TP names a partition.
type TP struct {
	Topic     string
	Partition int32
}

func (tp TP) String() string { return fmt.Sprintf("%s/%d", tp.Topic, tp.Partition) }

// Rec is one record of a partition's final log, control records included.
type Rec struct {
	Offset        int64
	Value         string
	ProducerID    int64
	Transactional bool
	Control       bool
	Commit        bool // a control record: COMMIT (else ABORT)
}

// State is the cluster read back after every fault healed: each checked
// partition from offset 0 to its high watermark, read_uncommitted.
type State struct {
	Logs map[TP][]Rec
}

// Config says which topics each workload wrote.
type Config struct {
	// Queues are written by idempotent acks=all producers, each value once.
	Queues []string
	// TxnInput is copied to TxnOutput by transactions; every input record
	// below TxnProcessed (per partition; nil: all) must be in the committed
	// output exactly once.
	TxnInput, TxnOutput string
	TxnProcessed        map[int32]int64
}

// Anomaly is one violation found.
type Anomaly struct {
	Kind   string
	Detail string
}

// Report is what Check found.
type Report struct {
	Anomalies []Anomaly
	Faults    map[string]int             // fault kind -> injected
	Ops       map[string]map[Outcome]int // operation kind -> outcome -> count
}

// recStatus is what a data record's transaction came to.
type recStatus int

const (
	plain     recStatus = iota // not transactional
	committed                  // its transaction's COMMIT marker follows it
	aborted                    // an ABORT marker follows it
	open                       // no marker follows it
)

// partitionLog indexes one final log.
type partitionLog struct {
	byOffset map[int64]int // offset -> index in recs
	recs     []Rec
	status   []recStatus
}

func indexLog(recs []Rec) *partitionLog {
	sorted := append([]Rec(nil), recs...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Offset < sorted[j].Offset })
	l := &partitionLog{byOffset: map[int64]int{}, recs: sorted, status: make([]recStatus, len(sorted))}
	pending := map[int64][]int{} // producer id -> its transactional data records awaiting a marker
	for i, r := range sorted {
		l.byOffset[r.Offset] = i
		switch {
		case r.Control:
			s := aborted
			if r.Commit {
				s = committed
			}
			for _, j := range pending[r.ProducerID] {
				l.status[j] = s
			}
			delete(pending, r.ProducerID)
		case r.Transactional:
			l.status[i] = open
			pending[r.ProducerID] = append(pending[r.ProducerID], i)
		}
	}
	return l
}

// commitIndex answers "the highest offset acknowledged as committed for
// a group's partition by the time t".
type commitIndex map[string]*commitLine

// commitLine is one group partition's ok commits by completion time, and
// for each prefix the index of its highest offset.
type commitLine struct {
	ops  []Op
	best []int
}

func commitKey(group string, tp TP) string { return group + "\x00" + tp.String() }

func newCommitIndex(ops []Op) commitIndex {
	ci := commitIndex{}
	for _, op := range ops {
		if op.F == FCommit && op.Outcome == OK {
			k := commitKey(op.Group, TP{op.Topic, op.Partition})
			if ci[k] == nil {
				ci[k] = &commitLine{}
			}
			ci[k].ops = append(ci[k].ops, op)
		}
	}
	for _, l := range ci {
		sort.SliceStable(l.ops, func(i, j int) bool { return l.ops[i].Complete < l.ops[j].Complete })
		l.best = make([]int, len(l.ops))
		for i := range l.ops {
			l.best[i] = i
			if i > 0 && l.ops[l.best[i-1]].Offset >= l.ops[i].Offset {
				l.best[i] = l.best[i-1]
			}
		}
	}
	return ci
}

// before is the highest ok commit completed before t (ok false: none).
func (ci commitIndex) before(group string, tp TP, t int64) (Op, bool) {
	l := ci[commitKey(group, tp)]
	if l == nil {
		return Op{}, false
	}
	n := sort.Search(len(l.ops), func(i int) bool { return int64(l.ops[i].Complete) >= t })
	if n == 0 {
		return Op{}, false
	}
	return l.ops[l.best[n-1]], true
}

// Check reads a history and the final state and reports every anomaly.
func Check(cfg Config, ops []Op, st State) Report {
	rep := Report{Faults: map[string]int{}, Ops: map[string]map[Outcome]int{}}
	for _, op := range ops {
		if op.F == FFault {
			rep.Faults[op.Value]++
			continue
		}
		if rep.Ops[op.F] == nil {
			rep.Ops[op.F] = map[Outcome]int{}
		}
		rep.Ops[op.F][op.Outcome]++
	}
	logs := map[TP]*partitionLog{}
	for tp, recs := range st.Logs {
		logs[tp] = indexLog(recs)
	}
	add := func(kind, format string, args ...any) {
		rep.Anomalies = append(rep.Anomalies, Anomaly{kind, fmt.Sprintf(format, args...)})
	}
	commits := newCommitIndex(ops)

	checkQueues(cfg, ops, logs, add)
	checkReads(ops, logs, commits, add)
	for _, op := range ops {
		if op.F != FFetchOffsets || op.Outcome != OK {
			continue
		}
		tp := TP{op.Topic, op.Partition}
		if c, ok := commits.before(op.Group, tp, int64(op.Invoke)); ok && op.Offset < c.Offset {
			add(CommittedOffsetBackwards, "group %s %s: OffsetFetch by %s at %v answered %d; the commit of %d by %s was acknowledged at %v",
				op.Group, tp, op.Process, op.Invoke, op.Offset, c.Offset, c.Process, c.Complete)
		}
	}
	if cfg.TxnInput != "" {
		checkTxn(cfg, ops, logs, add)
	}
	return rep
}

// checkQueues: every acknowledged send is in the log at the offset
// acknowledged, no value twice, each producer's values in send order.
func checkQueues(cfg Config, ops []Op, logs map[TP]*partitionLog, add func(string, string, ...any)) {
	queue := map[string]bool{}
	for _, q := range cfg.Queues {
		queue[q] = true
	}
	where := map[TP]map[string][]int64{}
	for tp, l := range logs {
		if !queue[tp.Topic] {
			continue
		}
		where[tp] = map[string][]int64{}
		for _, r := range l.recs {
			if !r.Control {
				where[tp][r.Value] = append(where[tp][r.Value], r.Offset)
			}
		}
		for v, offs := range where[tp] {
			if len(offs) > 1 {
				add(Duplicated, "%s: value %q at offsets %v", tp, v, offs)
			}
		}
	}
	type stream struct {
		process string
		tp      TP
	}
	sent := map[stream][]Op{}
	for _, op := range ops {
		if op.F != FSend || !queue[op.Topic] {
			continue
		}
		tp := TP{op.Topic, op.Partition}
		offs := where[tp][op.Value]
		if op.Outcome == OK {
			switch {
			case len(offs) == 0:
				add(Lost, "%s: %q acknowledged at offset %d to %s, not in the final log", tp, op.Value, op.Offset, op.Process)
			case !contains(offs, op.Offset):
				add(Lost, "%s: %q acknowledged at offset %d to %s, found at %v", tp, op.Value, op.Offset, op.Process, offs)
			}
		}
		if op.Outcome != Fail {
			s := stream{op.Process, tp}
			sent[s] = append(sent[s], op)
		}
	}
	for s, sends := range sent {
		sort.Slice(sends, func(i, j int) bool { return sends[i].Invoke < sends[j].Invoke })
		var prev *Op
		var prevOffset int64
		for i := range sends {
			offs := where[s.tp][sends[i].Value]
			if len(offs) == 0 {
				continue
			}
			if prev != nil && offs[0] < prevOffset {
				add(Reordered, "%s: %s sent %q before %q, the log has them at %d and %d", s.tp, s.process, prev.Value, sends[i].Value, prevOffset, offs[0])
			}
			prev, prevOffset = &sends[i], offs[0]
		}
	}
}

// checkReads: every record a consumer returned is the final log's record
// at that offset (committed, for read_committed); a consumer outside a
// group moves only forward; a group member never returns a record below
// a commit acknowledged before its poll.
func checkReads(ops []Op, logs map[TP]*partitionLog, commits commitIndex, add func(string, string, ...any)) {
	type position struct {
		process string
		tp      TP
	}
	last := map[position]int64{}
	for _, op := range ops {
		if op.F != FRead || op.Outcome != OK {
			continue
		}
		tp := TP{op.Topic, op.Partition}
		l := logs[tp]
		if l == nil {
			continue // a partition the final read did not cover
		}
		i, ok := l.byOffset[op.Offset]
		switch {
		case !ok:
			add(UncommittedRead, "%s: %s read %q at offset %d, the final log has no record there", tp, op.Process, op.Value, op.Offset)
		case l.recs[i].Control || l.recs[i].Value != op.Value:
			add(UncommittedRead, "%s: %s read %q at offset %d, the final log has %q there", tp, op.Process, op.Value, op.Offset, l.recs[i].Value)
		case op.Committed && l.status[i] == aborted:
			add(AbortedRead, "%s: %s (read_committed) read %q at offset %d, of an aborted transaction", tp, op.Process, op.Value, op.Offset)
		case op.Committed && l.status[i] == open:
			add(UncommittedRead, "%s: %s (read_committed) read %q at offset %d, of a transaction that never ended", tp, op.Process, op.Value, op.Offset)
		}
		pos := position{op.Process, tp}
		if op.Group == "" {
			if prev, seen := last[pos]; seen && op.Offset <= prev {
				add(OffsetBackwards, "%s: %s read offset %d after offset %d", tp, op.Process, op.Offset, prev)
			}
		} else if c, ok := commits.before(op.Group, tp, int64(op.Invoke)); ok && op.Offset < c.Offset {
			add(RereadCommitted, "group %s %s: %s read offset %d at %v; the commit of %d by %s was acknowledged at %v",
				op.Group, tp, op.Process, op.Offset, op.Invoke, c.Offset, c.Process, c.Complete)
		}
		last[pos] = op.Offset
	}
}

// checkTxn: each input record processed is in the committed output
// exactly once, and every transaction acknowledged as committed is there.
func checkTxn(cfg Config, ops []Op, logs map[TP]*partitionLog, add func(string, string, ...any)) {
	out := map[string][]string{} // value -> where in the committed output
	for tp, l := range logs {
		if tp.Topic != cfg.TxnOutput {
			continue
		}
		for i, r := range l.recs {
			if !r.Control && l.status[i] == committed {
				out[r.Value] = append(out[r.Value], fmt.Sprintf("%s@%d", tp, r.Offset))
			}
		}
	}
	for v, at := range out {
		if len(at) > 1 {
			add(Duplicated, "%s: input value %q committed %d times: %v", cfg.TxnOutput, v, len(at), at)
		}
	}
	for tp, l := range logs {
		if tp.Topic != cfg.TxnInput {
			continue
		}
		for _, r := range l.recs {
			if r.Control {
				continue
			}
			if bound, ok := cfg.TxnProcessed[tp.Partition]; cfg.TxnProcessed != nil && (!ok || r.Offset >= bound) {
				continue
			}
			if len(out[r.Value]) == 0 {
				add(Lost, "%s@%d: input %q processed (below the committed offset) but not in the committed output of %s", tp, r.Offset, r.Value, cfg.TxnOutput)
			}
		}
	}
	for _, op := range ops {
		if op.F != FTxn || op.Outcome != OK {
			continue
		}
		for _, v := range op.Values {
			if len(out[v]) == 0 {
				add(Lost, "%s: transaction by %s committed at %v with %q, not in the committed output", cfg.TxnOutput, op.Process, op.Complete, v)
			}
		}
	}
}

func contains(offs []int64, o int64) bool {
	for _, x := range offs {
		if x == o {
			return true
		}
	}
	return false
}

// Counts is the number of anomalies of each kind.
func (r Report) Counts() map[string]int {
	c := map[string]int{}
	for _, a := range r.Anomalies {
		c[a.Kind]++
	}
	return c
}

// Summary prints faults by kind, operations by outcome and anomalies by
// kind, with the first few anomalies of each kind spelled out.
func (r Report) Summary() string {
	var b strings.Builder
	total := 0
	var faults []string
	for k, n := range r.Faults {
		faults = append(faults, fmt.Sprintf("%s=%d", k, n))
		total += n
	}
	sort.Strings(faults)
	fmt.Fprintf(&b, "faults injected: %d (%s)\n", total, strings.Join(faults, " "))
	var kinds []string
	for f := range r.Ops {
		kinds = append(kinds, f)
	}
	sort.Strings(kinds)
	b.WriteString("operations:")
	for _, f := range kinds {
		m := r.Ops[f]
		fmt.Fprintf(&b, " %s(ok=%d fail=%d info=%d)", f, m[OK], m[Fail], m[Info])
	}
	b.WriteString("\n")
	counts := r.Counts()
	if len(counts) == 0 {
		b.WriteString("anomalies: 0\n")
		return b.String()
	}
	var ks []string
	for k, n := range counts {
		ks = append(ks, fmt.Sprintf("%s=%d", k, n))
	}
	sort.Strings(ks)
	fmt.Fprintf(&b, "anomalies: %d (%s)\n", len(r.Anomalies), strings.Join(ks, " "))
	shown := map[string]int{}
	for _, a := range r.Anomalies {
		if shown[a.Kind] < 5 {
			shown[a.Kind]++
			fmt.Fprintf(&b, "  %s: %s\n", a.Kind, a.Detail)
		}
	}
	return b.String()
}
