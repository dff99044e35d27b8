package partition

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"gregor/internal/config"
	"gregor/internal/log"
	"gregor/internal/record"
)

// TestPartitionEffectsScripts runs the golden scripts in
// testdata/partition_effects: a Partition led by broker 1 over a real log,
// driven through the calls the replica manager makes, printing the Effects
// each returns and the log's high watermark (the only one kept). Rewrite the
// expected output with: go test ./internal/partition -run
// TestPartitionEffectsScripts -rewrite
//
// Commands:
//
//	update leader=L epoch=E partition-epoch=P replicas=(..) isr=(..) now=T [broker-epoch=B]
//	config [min-isr=N] [lag=MS]        topic and broker settings
//	append records=K now=T [acks=A]   a produce of K records as leader
//	fetch replica=ID offset=O now=T [broker-epoch=B]
//	                                  a follower's fetch at O (its LEO)
//	shrink now=T                      the periodic ISR shrink check
//	alter-response isr=(..) partition-epoch=P now=T [epoch=E]
//	alter-response error=KAFKA_ERROR_NAME|timeout now=T
//	                                  the controller answers the last
//	                                  AlterPartition an Effects carried
//	reached required=O                an acks=all produce waiting for O-1
//
// Every step checks that HighWatermarkIncreased is set exactly when the
// log's high watermark rose, so a rewrite cannot bless a disagreement.
func TestPartitionEffectsScripts(t *testing.T) {
	datadriven.Walk(t, "testdata/partition_effects", func(t *testing.T, path string) {
		h := newEffectsHarness(t)
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			return h.run(t, d)
		})
	})
}

type effectsHarness struct {
	p     *Partition
	topic map[string]string
	lag   int64
	last  *AlterPartitionProposal
}

func newEffectsHarness(t *testing.T) *effectsHarness {
	logs, err := log.NewManager(log.ManagerConfig{Dirs: []string{t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logs.Close() })
	h := &effectsHarness{topic: map[string]string{}}
	cfg := h.topicConfig(t)
	tp := log.TopicPartition{Topic: "effects", Partition: 0}
	l, err := logs.GetOrCreate(tp, [16]byte{1}, LogConfig(cfg))
	if err != nil {
		t.Fatal(err)
	}
	h.p = New(tp, [16]byte{1}, 1, l, cfg)
	h.p.SetReplicationConfig(ReplicationConfig{LocalBrokerEpoch: -1})
	return h
}

func (h *effectsHarness) topicConfig(t *testing.T) config.Topic {
	cfg, err := config.ResolveTopic(config.Layers{Topic: h.topic})
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func (h *effectsHarness) run(t *testing.T, d *datadriven.TestData) string {
	var out strings.Builder
	hwBefore := h.p.HighWatermark()
	now := intArg(t, d, "now", 0)
	var eff *Effects
	switch d.Cmd {
	case "update":
		h.p.Update(LeaderAndISR{
			Leader:         int32(intArg(t, d, "leader", 1)),
			LeaderEpoch:    int32(intArg(t, d, "epoch", 0)),
			PartitionEpoch: int32(intArg(t, d, "partition-epoch", 0)),
			Replicas:       listArg(t, d, "replicas"),
			ISR:            listArg(t, d, "isr"),
		}, intArg(t, d, "broker-epoch", -1), now)
	case "config":
		if d.HasArg("min-isr") {
			h.topic["min.insync.replicas"] = strconv.FormatInt(intArg(t, d, "min-isr", 1), 10)
			h.p.UpdateConfig(h.topicConfig(t))
		}
		h.lag = intArg(t, d, "lag", h.lag)
		h.p.SetReplicationConfig(ReplicationConfig{ReplicaLagTimeMaxMs: h.lag, LocalBrokerEpoch: -1})
	case "append":
		info, err := h.p.AppendAsLeader(effectsBatch(t, int(intArg(t, d, "records", 1)), now), int16(intArg(t, d, "acks", -1)), now)
		if err != nil {
			fmt.Fprintf(&out, "error: %s\n", errName(err))
		} else {
			fmt.Fprintf(&out, "offsets=%d..%d\n", info.FirstOffset, info.LastOffset)
		}
	case "fetch":
		e, err := h.p.FollowerFetch(FollowerFetch{
			ReplicaID:          int32(intArg(t, d, "replica", -1)),
			FetchOffset:        intArg(t, d, "offset", 0),
			BrokerEpoch:        intArg(t, d, "broker-epoch", -1),
			LeaderLogEndOffset: h.p.Log().LogEndOffset(),
			NowMs:              now,
		})
		if err != nil {
			fmt.Fprintf(&out, "error: %s\n", errName(err))
		}
		eff = &e
	case "shrink":
		e := h.p.MaybeShrinkISR(now)
		eff = &e
	case "alter-response":
		var result LeaderAndISR
		var err error
		if d.HasArg("error") {
			err = kafkaError(t, d)
		} else {
			result = LeaderAndISR{
				Leader:         1,
				LeaderEpoch:    int32(intArg(t, d, "epoch", int64(h.p.LeaderEpoch()))),
				PartitionEpoch: int32(intArg(t, d, "partition-epoch", 0)),
				ISR:            listArg(t, d, "isr"),
			}
		}
		e := h.p.OnAlterPartitionResponse(h.last, result, err, now)
		eff = &e
	case "reached":
		done, err := h.p.ReachedOffset(intArg(t, d, "required", 0))
		fmt.Fprintf(&out, "done=%t error=%s\n", done, errName(err))
	default:
		t.Fatalf("%s: unknown command %q", d.Pos, d.Cmd)
	}
	hwAfter := h.p.HighWatermark()
	if eff != nil {
		if eff.HighWatermarkIncreased != (hwAfter > hwBefore) {
			t.Fatalf("%s: HighWatermarkIncreased=%t but the log's high watermark went %d -> %d", d.Pos, eff.HighWatermarkIncreased, hwBefore, hwAfter)
		}
		if eff.AlterPartition != nil {
			h.last = eff.AlterPartition
		}
		out.WriteString(formatEffects(*eff))
	}
	if hwAfter < hwBefore {
		t.Fatalf("%s: the log's high watermark went back %d -> %d", d.Pos, hwBefore, hwAfter)
	}
	pending := "none"
	if h.p.state != nil && h.p.state.Pending() != nil {
		pending = formatProposal(h.p.state.Pending())
	}
	fmt.Fprintf(&out, "leader=%t epoch=%d leo=%d hw=%d isr=%v pending=%s\n",
		h.p.IsLeader(), h.p.LeaderEpoch(), h.p.Log().LogEndOffset(), hwAfter, h.p.ISR(), pending)
	return out.String()
}

func formatEffects(e Effects) string {
	alter, committed := "none", "none"
	if e.AlterPartition != nil {
		alter = formatProposal(e.AlterPartition)
	}
	if e.ISRCommitted != 0 {
		committed = e.ISRCommitted.String()
	}
	return fmt.Sprintf("effects: hw-increased=%t alter-partition=%s isr-committed=%s\n", e.HighWatermarkIncreased, alter, committed)
}

// effectsBatch is a produce batch of n records without a producer id,
// stamped nowMs (the script's clock, which validation checks them against).
func effectsBatch(t *testing.T, n int, nowMs int64) []byte {
	t.Helper()
	b := record.NewBuilder(record.BuilderOptions{ProducerID: record.NoProducerID, ProducerEpoch: record.NoProducerEpoch, BaseSequence: record.NoSequence})
	for range n {
		b.Append(nowMs, nil, []byte("v"), nil)
	}
	batch, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return batch
}
