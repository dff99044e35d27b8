package partition

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"gregor/internal/log"
)

// TestFollowerStateScripts runs the golden scripts in
// testdata/follower_state: the follower's decision on each fetch answer
// and, after an append, the offsets it adopts. Rewrite the expected output
// with: go test ./internal/partition -run TestFollowerStateScripts -rewrite
//
// Commands:
//
//	log start=S leo=L hw=H [ends=(E:e@O,...)]
//	    the follower's log; ends lists the epoch cache's answers (asked
//	    for E: epoch e ends at O); an epoch not listed is unknown (-1@-1)
//	answer [error=KAFKA_ERROR_NAME] hw=H log-start=S [diverging=E@O] [appended=N]
//	    the decision; on append, N offsets are appended (default 0) and
//	    the offsets adopted are printed
func TestFollowerStateScripts(t *testing.T) {
	datadriven.Walk(t, "testdata/follower_state", func(t *testing.T, path string) {
		l := &fakeFollowerLog{ends: map[int32][2]int64{}}
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			switch d.Cmd {
			case "log":
				*l = fakeFollowerLog{start: intArg(t, d, "start", 0), leo: intArg(t, d, "leo", 0), hw: intArg(t, d, "hw", 0), ends: map[int32][2]int64{}}
				if arg, ok := d.Arg("ends"); ok {
					for _, v := range arg.Vals {
						asked, ans, ok := strings.Cut(v, ":")
						if !ok {
							t.Fatalf("%s: ends: %q is not E:e@O", d.Pos, v)
						}
						e, end := epochAt(t, d, ans)
						l.ends[int32(atoi(t, d, asked))] = [2]int64{int64(e), end}
					}
				}
				return "ok\n"
			case "answer":
				a := FetchAnswer{HighWatermark: intArg(t, d, "hw", -1), LogStartOffset: intArg(t, d, "log-start", -1),
					DivergingEpoch: -1, DivergingEndOffset: -1}
				if _, ok := d.Arg("error"); ok {
					a.Err = kafkaError(t, d)
				}
				if arg, ok := d.Arg("diverging"); ok {
					a.DivergingEpoch, a.DivergingEndOffset = epochAt(t, d, arg.SingleVal(t))
				}
				dec := DecideFetchAnswer(l, a)
				var out strings.Builder
				fmt.Fprintf(&out, "%s", dec.Step)
				switch dec.Step {
				case FollowerTruncate, FollowerStartOver:
					fmt.Fprintf(&out, " offset=%d", dec.Offset)
				case FollowerFail:
					fmt.Fprintf(&out, " error=%s", errName(dec.Err))
				case FollowerAppend:
					l.leo += intArg(t, d, "appended", 0)
					adopt := AdoptLeaderOffsets(l, a)
					fmt.Fprintf(&out, " leo=%d; adopt hw=%d delete-before=%d", l.leo, adopt.HighWatermark, adopt.DeleteBefore)
					if adopt.HighWatermark >= 0 {
						l.hw = adopt.HighWatermark
					}
					if adopt.DeleteBefore > l.start {
						l.start = adopt.DeleteBefore
					}
				}
				return out.String() + "\n"
			}
			t.Fatalf("%s: unknown command %q", d.Pos, d.Cmd)
			return ""
		})
	})
}

// fakeFollowerLog is a follower's log whose epoch cache answers from a
// table.
type fakeFollowerLog struct {
	start, leo, hw int64
	ends           map[int32][2]int64
}

func (l *fakeFollowerLog) LogStartOffset() int64 { return l.start }
func (l *fakeFollowerLog) LogEndOffset() int64   { return l.leo }
func (l *fakeFollowerLog) HighWatermark() int64  { return l.hw }
func (l *fakeFollowerLog) EndOffsetForEpoch(epoch int32) (int32, int64) {
	if e, ok := l.ends[epoch]; ok {
		return int32(e[0]), e[1]
	}
	return log.UndefinedEpoch, log.UndefinedEpochOffset
}

// epochAt parses "E@O".
func epochAt(t *testing.T, d *datadriven.TestData, v string) (int32, int64) {
	e, o, ok := strings.Cut(v, "@")
	if !ok {
		t.Fatalf("%s: %q is not EPOCH@OFFSET", d.Pos, v)
	}
	return int32(atoi(t, d, e)), atoi(t, d, o)
}

func atoi(t *testing.T, d *datadriven.TestData, v string) int64 {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		t.Fatalf("%s: %v", d.Pos, err)
	}
	return n
}
