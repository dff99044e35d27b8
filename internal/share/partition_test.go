package share

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"gregor/internal/sharestate"
)

// TestPartitionScripts runs the golden scripts in testdata/partition.
// Rewrite the expected output with: go test ./internal/share -run
// TestPartitionScripts -rewrite
//
// Commands (times and offsets are plain integers):
//
//	new start=S [lock=MS] [limit=N] [max-locks=N] [batches=(F-L:state:count,...)]
//	                              a share-partition loaded from persisted state
//	acquire member=M now=T from=F batches=(F-L[:skip],...) [max=N] [taken=N] [strict]
//	                              records read from the log at F handed to M (taken:
//	                              acquired already by the same request)
//	next-fetch from=F             where acquisition reads the log from
//	ack member=M now=T batches=(F-L:type[/type...],...) [renew]
//	                              types: gap accept release reject renew
//	expire now=T                  acquisition locks ending at T
//	release member=M              a member left: its records released
//	archive-before offset=O       the log start offset moved to O
//	failover                      a new leader loads the state as Persisted writes it
//	state                         the runs, then what would be persisted
//
// Every command but next-fetch prints the state after it.
func TestPartitionScripts(t *testing.T) {
	datadriven.Walk(t, "testdata/partition", func(t *testing.T, path string) {
		var p *Partition
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			var out strings.Builder
			switch d.Cmd {
			case "new":
				cfg := PartitionConfig{
					RecordLockDurationMs: intArg(t, d, "lock", 1000),
					DeliveryCountLimit:   int16(intArg(t, d, "limit", 5)),
					MaxRecordLocks:       intArg(t, d, "max-locks", 2000),
				}
				st := sharestate.State{StateEpoch: 1, StartOffset: intArg(t, d, "start", 0)}
				for _, v := range listArg(d, "batches") {
					f := strings.Split(v, ":")
					first, last := rangeArg(t, f[0])
					st.Batches = append(st.Batches, sharestate.Batch{FirstOffset: first, LastOffset: last,
						DeliveryState: sharestate.DeliveryState(stateArg(t, f[1])), DeliveryCount: int16(atoi(t, f[2]))})
				}
				p = NewPartition(cfg, st)
			case "acquire":
				var bs []LogBatch
				for _, v := range listArg(d, "batches") {
					f := strings.Split(v, ":")
					first, last := rangeArg(t, f[0])
					bs = append(bs, LogBatch{FirstOffset: first, LastOffset: last, Skip: len(f) > 1 && f[1] == "skip"})
				}
				got, scanned, stop := p.Acquire(strArg(d, "member"), intArg(t, d, "now", 0), intArg(t, d, "from", 0), bs,
					intArg(t, d, "max", 500), intArg(t, d, "taken", 0), d.HasArg("strict"))
				fmt.Fprintf(&out, "acquired:")
				for _, a := range got {
					fmt.Fprintf(&out, " %d-%d(count %d)", a.FirstOffset, a.LastOffset, a.DeliveryCount)
				}
				fmt.Fprintf(&out, "\nscanned to %d", scanned)
				if stop {
					out.WriteString(", throttled: no more for this request")
				}
				out.WriteString("\n")
			case "next-fetch":
				return fmt.Sprintf("%d\n", p.NextFetchOffset(intArg(t, d, "from", 0)))
			case "ack":
				var bs []AckBatch
				for _, v := range listArg(d, "batches") {
					f := strings.Split(v, ":")
					first, last := rangeArg(t, f[0])
					b := AckBatch{FirstOffset: first, LastOffset: last}
					for _, ty := range strings.Split(f[1], "/") {
						b.Types = append(b.Types, ackTypeArg(t, ty))
					}
					bs = append(bs, b)
				}
				err := ValidateAckBatches(bs, d.HasArg("renew"))
				if err == nil {
					err = p.Acknowledge(strArg(d, "member"), intArg(t, d, "now", 0), bs)
				}
				if err != nil {
					fmt.Fprintf(&out, "error: %v\n", err)
				}
			case "expire":
				fmt.Fprintf(&out, "released: %t\n", p.ExpireLocks(intArg(t, d, "now", 0)))
			case "release":
				fmt.Fprintf(&out, "released: %t\n", p.ReleaseMember(strArg(d, "member")))
			case "archive-before":
				p.ArchiveBefore(intArg(t, d, "offset", 0))
			case "failover":
				// A new leader loads what this one persisted.
				u := p.Persisted(0)
				p = NewPartition(p.cfg, sharestate.State{StateEpoch: u.StateEpoch, StartOffset: u.StartOffset, Batches: u.Batches})
			case "state":
			default:
				t.Fatalf("%s: unknown command %s", d.Pos, d.Cmd)
			}
			printState(&out, p)
			return out.String()
		})
	})
}

func printState(out *strings.Builder, p *Partition) {
	fmt.Fprintf(out, "spso=%d speo=%d\n", p.StartOffset(), p.EndOffset()-1)
	for _, r := range p.runs {
		fmt.Fprintf(out, "  %d-%d %s count=%d", r.first, r.last, r.state, r.deliveryCount)
		if r.state == Acquired {
			fmt.Fprintf(out, " member=%s lock-until=%d", r.member, r.lockDeadline)
		}
		out.WriteString("\n")
	}
	u := p.Persisted(0)
	fmt.Fprintf(out, "persisted start=%d complete=%d:", u.StartOffset, u.DeliveryCompleteCount)
	for _, b := range u.Batches {
		fmt.Fprintf(out, " %d-%d:%s:%d", b.FirstOffset, b.LastOffset, RecordState(b.DeliveryState), b.DeliveryCount)
	}
	out.WriteString("\n")
}

func intArg(t *testing.T, d *datadriven.TestData, key string, def int64) int64 {
	arg, ok := d.Arg(key)
	if !ok {
		return def
	}
	v, err := strconv.ParseInt(arg.SingleVal(t), 10, 64)
	if err != nil {
		t.Fatalf("%s: %s: %v", d.Pos, key, err)
	}
	return v
}

func strArg(d *datadriven.TestData, key string) string {
	arg, ok := d.Arg(key)
	if !ok || len(arg.Vals) == 0 {
		return ""
	}
	return arg.Vals[0]
}

func listArg(d *datadriven.TestData, key string) []string {
	arg, ok := d.Arg(key)
	if !ok {
		return nil
	}
	return arg.Vals
}

func atoi(t *testing.T, s string) int64 {
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func rangeArg(t *testing.T, s string) (int64, int64) {
	a, b, ok := strings.Cut(s, "-")
	if !ok {
		b = a
	}
	return atoi(t, a), atoi(t, b)
}

func stateArg(t *testing.T, s string) RecordState {
	for _, st := range []RecordState{Available, Acquired, Acknowledged, Archived} {
		if st.String() == s {
			return st
		}
	}
	t.Fatalf("unknown state %q", s)
	return 0
}

func ackTypeArg(t *testing.T, s string) AckType {
	switch s {
	case "gap":
		return AckGap
	case "accept":
		return AckAccept
	case "release":
		return AckRelease
	case "reject":
		return AckReject
	case "renew":
		return AckRenew
	case "bad":
		return 9
	}
	t.Fatalf("unknown acknowledge type %q", s)
	return 0
}
