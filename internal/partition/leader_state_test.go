package partition

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/twmb/franz-go/pkg/kerr"
)

// TestLeaderStateScripts runs the golden scripts in testdata/leader_state.
// Rewrite the expected output with: go test ./internal/partition -run
// TestLeaderStateScripts -rewrite
//
// Commands (times and offsets are plain integers):
//
//	leader local=1 epoch=E partition-epoch=P replicas=(..) isr=(..) leo=L hw=H now=T [min-isr=N] [lag=MS] [adding=(..)]
//	metadata epoch=E partition-epoch=P replicas=(..) isr=(..) leo=L now=T [leader=ID] [adding=(..)]
//	fetch replica=ID offset=O leo=L now=T [log-start=S] [broker-epoch=B]
//	append leo=L now=T                  the leader's LEO moved: recompute the high watermark
//	shrink leo=L now=T                  the periodic ISR shrink check
//	alter-response isr=(..) partition-epoch=P [epoch=E] leo=L now=T
//	alter-response error=KAFKA_ERROR_NAME|timeout leo=L now=T
//	                                    answers the last proposal returned by fetch or shrink
//	check-append acks=A
//	check-produce required=O            a delayed produce waiting for offset O-1
//	config [min-isr=N] [lag=MS]
//	broker id=ID epoch=B [fenced] [shutting-down] | broker id=ID gone
//	state
func TestLeaderStateScripts(t *testing.T) {
	datadriven.Walk(t, "testdata/leader_state", func(t *testing.T, path string) {
		h := &harness{}
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			return h.run(t, d)
		})
	})
}

type harness struct {
	s   *LeaderState
	cfg LeaderConfig
	// hw is the log's high watermark: the bookkeeping keeps none, it is
	// given this one and returns the next.
	hw   int64
	reg  *fakeRegistry
	last *AlterPartitionProposal
}

// raise stores a high watermark the bookkeeping returned, as Partition
// stores it in the log, and checks it never went back.
func (h *harness) raise(t *testing.T, d *datadriven.TestData, increased bool, hw int64) {
	t.Helper()
	if increased != (hw > h.hw) || hw < h.hw {
		t.Fatalf("%s: high watermark %d (increased=%t) from %d", d.Pos, hw, increased, h.hw)
	}
	h.hw = hw
}

func (h *harness) run(t *testing.T, d *datadriven.TestData) string {
	var out strings.Builder
	switch d.Cmd {
	case "leader":
		local := intArg(t, d, "local", 1)
		h.cfg.MinInsyncReplicas = int32(intArg(t, d, "min-isr", 1))
		h.cfg.ReplicaLagTimeMaxMs = intArg(t, d, "lag", 30000)
		h.cfg.LocalBrokerEpoch = intArg(t, d, "local-broker-epoch", -1)
		h.hw = intArg(t, d, "hw", 0)
		s, res, err := NewLeaderState(int32(local), leaderAndISR(t, d, int32(local)),
			intArg(t, d, "leo", 0), h.hw, intArg(t, d, "now", 0), h.cfg)
		if err != nil {
			return "error: " + err.Error() + "\n"
		}
		h.s = s
		h.raise(t, d, res.HighWatermarkIncreased, res.HighWatermark)
	case "metadata":
		res, err := h.s.ApplyLeaderAndISR(leaderAndISR(t, d, h.s.localID), intArg(t, d, "leo", 0), h.hw, intArg(t, d, "now", 0))
		if err != nil {
			return "error: " + err.Error() + "\n"
		}
		h.raise(t, d, res.HighWatermarkIncreased, res.HighWatermark)
		fmt.Fprintf(&out, "skipped=%t new-leader-epoch=%t hw-increased=%t\n", res.Skipped, res.NewLeaderEpoch, res.HighWatermarkIncreased)
	case "fetch":
		u, err := h.s.UpdateFollowerFetch(FollowerFetch{
			ReplicaID:          int32(intArg(t, d, "replica", -1)),
			FetchOffset:        intArg(t, d, "offset", 0),
			LogStartOffset:     intArg(t, d, "log-start", 0),
			BrokerEpoch:        intArg(t, d, "broker-epoch", -1),
			LeaderLogEndOffset: intArg(t, d, "leo", 0),
			NowMs:              intArg(t, d, "now", 0),
		}, h.hw)
		if err != nil {
			return "error: " + err.Error() + "\n"
		}
		h.raise(t, d, u.HighWatermarkIncreased, u.HighWatermark)
		fmt.Fprintf(&out, "hw-increased=%t", u.HighWatermarkIncreased)
		if u.ExpandISR != nil {
			h.last = u.ExpandISR
			fmt.Fprintf(&out, " propose: %s", formatProposal(u.ExpandISR))
		}
		out.WriteString("\n")
	case "append":
		hw, increased := h.s.MaybeIncrementHighWatermark(intArg(t, d, "leo", 0), h.hw, intArg(t, d, "now", 0))
		h.raise(t, d, increased, hw)
		fmt.Fprintf(&out, "hw-increased=%t\n", increased)
	case "shrink":
		leo, now := intArg(t, d, "leo", 0), intArg(t, d, "now", 0)
		fmt.Fprintf(&out, "out-of-sync=%v", h.s.OutOfSyncReplicas(leo, now, h.cfg.ReplicaLagTimeMaxMs))
		if p := h.s.MaybeShrinkISR(leo, now); p != nil {
			h.last = p
			fmt.Fprintf(&out, " propose: %s", formatProposal(p))
		}
		out.WriteString("\n")
	case "alter-response":
		var result LeaderAndISR
		var err error
		if d.HasArg("error") {
			err = kafkaError(t, d)
		} else {
			result = LeaderAndISR{
				Leader:         h.s.localID,
				LeaderEpoch:    int32(intArg(t, d, "epoch", int64(h.s.leaderEpoch))),
				PartitionEpoch: int32(intArg(t, d, "partition-epoch", 0)),
				ISR:            listArg(t, d, "isr"),
			}
		}
		o := h.s.OnAlterPartitionResponse(h.last, result, err, intArg(t, d, "leo", 0), h.hw, intArg(t, d, "now", 0))
		h.raise(t, d, o.HighWatermarkIncreased, o.HighWatermark)
		fmt.Fprintf(&out, "ignored=%t committed=%t reverted=%t retry=%t failed=%t hw-increased=%t\n",
			o.Ignored, o.Committed, o.Reverted, o.Retry, o.Failed, o.HighWatermarkIncreased)
	case "check-append":
		return fmt.Sprintf("%v\n", errName(h.s.CheckEnoughReplicasForAppend(int16(intArg(t, d, "acks", -1)))))
	case "check-produce":
		done, err := h.s.CheckEnoughReplicasReachOffset(h.hw, intArg(t, d, "required", 0))
		return fmt.Sprintf("done=%t error=%v\n", done, errName(err))
	case "config":
		h.cfg.MinInsyncReplicas = int32(intArg(t, d, "min-isr", int64(h.cfg.MinInsyncReplicas)))
		h.cfg.ReplicaLagTimeMaxMs = intArg(t, d, "lag", h.cfg.ReplicaLagTimeMaxMs)
		h.s.SetConfig(h.cfg)
	case "broker":
		if h.reg == nil {
			h.reg = &fakeRegistry{brokers: map[int32]fakeBroker{}}
			h.cfg.Brokers = h.reg
			h.s.SetConfig(h.cfg)
		}
		id := int32(intArg(t, d, "id", -1))
		if d.HasArg("gone") {
			delete(h.reg.brokers, id)
		} else {
			h.reg.brokers[id] = fakeBroker{epoch: intArg(t, d, "epoch", 0), fenced: d.HasArg("fenced"), shuttingDown: d.HasArg("shutting-down")}
		}
		return "ok\n"
	case "state":
	default:
		t.Fatalf("%s: unknown command %q", d.Pos, d.Cmd)
	}
	out.WriteString(formatState(h.s, h.hw))
	return out.String()
}

// formatState prints everything the bookkeeping holds, and the log's high
// watermark, so each golden step shows the whole state after it.
func formatState(s *LeaderState, hw int64) string {
	var b strings.Builder
	pending := "none"
	if s.Pending() != nil {
		pending = formatProposal(s.Pending())
	}
	fmt.Fprintf(&b, "epoch=%d partition-epoch=%d epoch-start=%d hw=%d\n", s.LeaderEpoch(), s.PartitionEpoch(), s.EpochStartOffset(), hw)
	fmt.Fprintf(&b, "isr=%v maximal-isr=%v pending=%s\n", s.ISR(), s.MaximalISR(), pending)
	fmt.Fprintf(&b, "under-replicated=%t under-min-isr=%t at-min-isr=%t\n", s.IsUnderReplicated(), s.IsUnderMinISR(), s.IsAtMinISR())
	for _, id := range s.Replicas() {
		r, ok := s.Follower(id)
		if !ok {
			continue
		}
		fmt.Fprintf(&b, "replica %d: leo=%d log-start=%d last-fetch=%d last-fetch-leader-leo=%d caught-up=%d broker-epoch=%d\n",
			id, r.LogEndOffset, r.LogStartOffset, r.LastFetchTimeMs, r.LastFetchLeaderLogEndOffset, r.LastCaughtUpTimeMs, r.BrokerEpoch)
	}
	return b.String()
}

func formatProposal(p *AlterPartitionProposal) string {
	var members []string
	for _, m := range p.NewISR {
		members = append(members, fmt.Sprintf("%d@%d", m.BrokerID, m.BrokerEpoch))
	}
	return fmt.Sprintf("%s %v new-isr=[%s] leader-epoch=%d partition-epoch=%d",
		p.Change, p.Replicas, strings.Join(members, " "), p.LeaderEpoch, p.PartitionEpoch)
}

func leaderAndISR(t *testing.T, d *datadriven.TestData, local int32) LeaderAndISR {
	return LeaderAndISR{
		Leader:         int32(intArg(t, d, "leader", int64(local))),
		LeaderEpoch:    int32(intArg(t, d, "epoch", 0)),
		PartitionEpoch: int32(intArg(t, d, "partition-epoch", 0)),
		Replicas:       listArg(t, d, "replicas"),
		ISR:            listArg(t, d, "isr"),
		AddingReplicas: listArg(t, d, "adding"),
	}
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

func listArg(t *testing.T, d *datadriven.TestData, key string) []int32 {
	arg, ok := d.Arg(key)
	if !ok {
		return nil
	}
	var ids []int32
	for _, v := range arg.Vals {
		if v == "" {
			continue
		}
		id, err := strconv.ParseInt(v, 10, 32)
		if err != nil {
			t.Fatalf("%s: %s: %v", d.Pos, key, err)
		}
		ids = append(ids, int32(id))
	}
	return ids
}

// kafkaError maps error=NAME to kerr's error of that name; "timeout" stands
// for a transport failure that is not a Kafka error code.
func kafkaError(t *testing.T, d *datadriven.TestData) error {
	arg, _ := d.Arg("error")
	name := arg.SingleVal(t)
	if name == "timeout" {
		return errors.New("alter partition: request timed out")
	}
	for code := int16(1); code < 200; code++ {
		if e := kerr.TypedErrorForCode(code); e != nil && e.Message == name {
			return fmt.Errorf("alter partition: %w", e)
		}
	}
	t.Fatalf("%s: unknown Kafka error %q", d.Pos, name)
	return nil
}

func errName(err error) string {
	if err == nil {
		return "none"
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Message
	}
	return err.Error()
}

type fakeBroker struct {
	epoch        int64
	fenced       bool
	shuttingDown bool
}

// fakeRegistry is the metadata image's broker view for tests.
type fakeRegistry struct{ brokers map[int32]fakeBroker }

func (r *fakeRegistry) AliveBrokerEpoch(id int32) (int64, bool) {
	b, ok := r.brokers[id]
	return b.epoch, ok
}
func (r *fakeRegistry) IsBrokerFenced(id int32) bool       { return r.brokers[id].fenced }
func (r *fakeRegistry) IsBrokerShuttingDown(id int32) bool { return r.brokers[id].shuttingDown }
