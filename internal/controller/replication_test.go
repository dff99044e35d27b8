package controller

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestReplication runs the golden scripts in testdata/replication (ISR
// changes, elections, preferred leader rebalance) on the TestLifecycle
// harness. Rewrite with `go test ./internal/controller -run TestReplication -rewrite`.
//
// Commands, besides TestLifecycle's:
//
//	config [auto-rebalance=BOOL] [imbalance-pct=N] [imbalance-interval-ms=N]
//	       [unclean=BOOL] [unclean-interval-ms=N] [session-timeout-ms=N]
//	                          set Config fields; the timers restart from now
//	alter-partition id=N topic=S partition=N isr=(N,...) [version=N]
//	       [leader-epoch=N] [partition-epoch=N] [broker-epoch=N] [recovery=N]
//	       [isr-epochs=(N,...)]
//	                          AlterPartition from broker id; epochs default
//	                          to the current ones, version to 3
//	elect type=preferred|unclean [partitions=(T-P,...)|partitions=none] [version=N]
//	                          ElectLeaders; no partitions = all (null)
//	reassign [version=N] [allow-rf-change=BOOL]
//	<topic>-<partition> <replica,...>|cancel|empty   (one per line)
//	                          AlterPartitionReassignments
//	list-reassignments [partitions=(T-P,...)|partitions=none]
//	                          ListPartitionReassignments; none given = all
func TestReplication(t *testing.T) {
	datadriven.Walk(t, "testdata/replication", func(t *testing.T, path string) {
		h := newHarness(t)
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			out := h.run(t, d)
			return out + h.rec.drain(h.c.Image())
		})
	})
}

// runReplication runs the replication commands; ok is false for others.
func (h *harness) runReplication(t *testing.T, d *datadriven.TestData) (string, bool) {
	switch d.Cmd {
	case "config":
		h.config(t, d)
		return "", true
	case "alter-partition":
		return h.alterPartition(t, d), true
	case "elect":
		return h.elect(t, d), true
	case "reassign":
		return h.reassign(t, d), true
	case "list-reassignments":
		return h.listReassignments(t, d), true
	}
	return "", false
}

func (h *harness) config(t *testing.T, d *datadriven.TestData) {
	err := h.c.submit(context.Background(), func() {
		cfg := &h.c.cfg
		for _, arg := range d.CmdArgs {
			v := arg.Vals[0]
			n, _ := strconv.Atoi(v)
			switch arg.Key {
			case "auto-rebalance":
				cfg.AutoLeaderRebalanceEnable = v == "true"
			case "imbalance-pct":
				cfg.LeaderImbalancePerBrokerPercentage = n
			case "imbalance-interval-ms":
				cfg.LeaderImbalanceCheckInterval = time.Duration(n) * time.Millisecond
			case "unclean":
				cfg.UncleanLeaderElectionEnable = v == "true"
			case "unclean-interval-ms":
				cfg.UncleanLeaderElectionCheckInterval = time.Duration(n) * time.Millisecond
			case "session-timeout-ms":
				cfg.BrokerSessionTimeout = time.Duration(n) * time.Millisecond
			default:
				t.Errorf("config: unknown key %q", arg.Key)
			}
		}
		now := cfg.Now()
		h.c.nextLeaderBalance = now.Add(cfg.LeaderImbalanceCheckInterval)
		h.c.nextUncleanCheck = now.Add(cfg.UncleanLeaderElectionCheckInterval)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func scanInts(t *testing.T, d *datadriven.TestData, key string) []int32 {
	arg, ok := d.Arg(key)
	if !ok {
		return nil
	}
	out := []int32{}
	for _, v := range arg.Vals {
		if v == "" || v == "none" {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		out = append(out, int32(n))
	}
	return out
}

func (h *harness) alterPartition(t *testing.T, d *datadriven.TestData) string {
	var id, partition int
	var topic string
	d.ScanArgs(t, "id", &id)
	d.ScanArgs(t, "topic", &topic)
	d.ScanArgs(t, "partition", &partition)
	img := h.c.Image()
	req := kmsg.NewPtrAlterPartitionRequest()
	req.Version = 3
	d.MaybeScanArgs(t, "version", &req.Version)
	req.BrokerID = int32(id)
	if b := img.Brokers[int32(id)]; b != nil {
		req.BrokerEpoch = b.Epoch
	}
	d.MaybeScanArgs(t, "broker-epoch", &req.BrokerEpoch)
	rt := kmsg.NewAlterPartitionRequestTopic()
	rt.Topic = topic
	if tp := img.Topics.Topic(topic); tp != nil {
		rt.TopicID = tp.ID
	} else {
		rt.TopicID = testID(topic)
	}
	rp := kmsg.NewAlterPartitionRequestTopicPartition()
	rp.Partition = int32(partition)
	if tp := img.Topics.Topic(topic); tp != nil && tp.Partition(int32(partition)) != nil {
		p := tp.Partition(int32(partition))
		rp.LeaderEpoch, rp.PartitionEpoch = p.LeaderEpoch, p.PartitionEpoch
	}
	d.MaybeScanArgs(t, "leader-epoch", &rp.LeaderEpoch)
	d.MaybeScanArgs(t, "partition-epoch", &rp.PartitionEpoch)
	d.MaybeScanArgs(t, "recovery", &rp.LeaderRecoveryState)
	isr := scanInts(t, d, "isr")
	epochs := scanInts(t, d, "isr-epochs")
	if req.Version >= 3 {
		for i, r := range isr {
			s := kmsg.NewAlterPartitionRequestTopicPartitionNewEpochISR()
			s.BrokerID = r
			if b := img.Brokers[r]; b != nil {
				s.BrokerEpoch = b.Epoch
			}
			if i < len(epochs) {
				s.BrokerEpoch = int64(epochs[i])
			}
			rp.NewEpochISR = append(rp.NewEpochISR, s)
		}
	} else {
		rp.NewISR = isr
	}
	rt.Partitions = []kmsg.AlterPartitionRequestTopicPartition{rp}
	req.Topics = []kmsg.AlterPartitionRequestTopic{rt}
	resp := h.c.AlterPartition(context.Background(), req)
	if resp.ErrorCode != 0 {
		return errName(resp.ErrorCode) + "\n"
	}
	out := resp.Topics[0].Partitions[0]
	if out.ErrorCode != 0 {
		return errName(out.ErrorCode) + "\n"
	}
	return fmt.Sprintf("NONE leader=%d leader-epoch=%d isr=%s partition-epoch=%d recovery=%d\n",
		out.LeaderID, out.LeaderEpoch, ints(out.ISR), out.PartitionEpoch, out.LeaderRecoveryState)
}

func (h *harness) elect(t *testing.T, d *datadriven.TestData) string {
	var typ string
	d.ScanArgs(t, "type", &typ)
	req := kmsg.NewPtrElectLeadersRequest()
	req.Version = 2
	d.MaybeScanArgs(t, "version", &req.Version)
	switch typ {
	case "preferred":
		req.ElectionType = 0
	case "unclean":
		req.ElectionType = 1
	default:
		n, _ := strconv.Atoi(typ)
		req.ElectionType = int8(n)
	}
	if arg, ok := d.Arg("partitions"); ok {
		req.Topics = []kmsg.ElectLeadersRequestTopic{}
		for _, v := range arg.Vals {
			if v == "none" {
				continue
			}
			i := strings.LastIndexByte(v, '-')
			topic := v[:i]
			p, _ := strconv.Atoi(v[i+1:])
			if n := len(req.Topics); n > 0 && req.Topics[n-1].Topic == topic {
				req.Topics[n-1].Partitions = append(req.Topics[n-1].Partitions, int32(p))
				continue
			}
			rt := kmsg.NewElectLeadersRequestTopic()
			rt.Topic, rt.Partitions = topic, []int32{int32(p)}
			req.Topics = append(req.Topics, rt)
		}
	}
	resp := h.c.ElectLeaders(context.Background(), req)
	var b strings.Builder
	if resp.ErrorCode != 0 {
		fmt.Fprintf(&b, "error %s\n", errName(resp.ErrorCode))
	}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			fmt.Fprintf(&b, "%s-%d %s %s\n", rt.Topic, rp.Partition, errName(rp.ErrorCode), deref(rp.ErrorMessage))
		}
		if len(rt.Partitions) == 0 {
			fmt.Fprintf(&b, "%s (none)\n", rt.Topic)
		}
	}
	return b.String()
}
