package server

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// describe848 asks ConsumerGroupDescribe about a group.
func describe848(t *testing.T, cl *kgo.Client, group string) kmsg.ConsumerGroupDescribeResponseGroup {
	t.Helper()
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Groups = []string{group}
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil || len(resp.Groups) != 1 {
		return kmsg.NewConsumerGroupDescribeResponseGroup()
	}
	return resp.Groups[0]
}

// TestGroup848 runs franz-go members with the KIP-848 protocol (the
// broker assigns): three members under load, one leaving and one joining,
// each record processed once between commits, partitions balanced.
func TestGroup848(t *testing.T) {
	dir := t.TempDir()
	ts := startServer(t, dir, groupProps)
	adm := ts.admin()
	ctx := context.Background()
	const topic, group = "t848", "g848"
	if _, err := adm.CreateTopic(ctx, 6, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	prod := ts.client()
	defer prod.Close()
	raw := ts.client()
	defer raw.Close()
	opts := []kgo.Opt{kgo.ServerSideBalancer(), kgo.Balancers(kgo.RangeBalancer())}
	seen := &seenSet{seen: map[string]int{}}
	total := 0
	produceN(t, prod, topic, total, 300)
	total += 300
	var cs []*groupConsumer
	for i := 0; i < 3; i++ {
		cs = append(cs, startConsumer(t, ts, group, topic, seen, opts...))
		produceN(t, prod, topic, total, 300)
		total += 300
	}
	waitFor(t, "all records", 30*time.Second, func() bool { return seen.count() == total })
	balanced := func(n int) func() bool {
		return func() bool {
			g := describe848(t, raw, group)
			if g.ErrorCode != 0 || g.State != "Stable" || len(g.Members) != n {
				return false
			}
			for _, m := range g.Members {
				got := 0
				for _, tp := range m.Assignment.TopicPartitions {
					got += len(tp.Partitions)
				}
				if got != 6/n || m.MemberEpoch != g.Epoch {
					return false
				}
			}
			return true
		}
	}
	waitFor(t, "balanced assignment of 3", 20*time.Second, balanced(3))
	cs[0].stop()
	produceN(t, prod, topic, total, 300)
	total += 300
	waitFor(t, "records after a leave", 30*time.Second, func() bool { return seen.count() == total })
	waitFor(t, "balanced assignment of 2", 20*time.Second, balanced(2))
	cs = append(cs[1:], startConsumer(t, ts, group, topic, seen, opts...))
	produceN(t, prod, topic, total, 300)
	total += 300
	waitFor(t, "records after a join", 30*time.Second, func() bool { return seen.count() == total })
	waitFor(t, "balanced assignment of 3 again", 20*time.Second, balanced(3))

	// The classic APIs see a consumer group.
	lg, err := adm.ListGroups(ctx)
	if err != nil || lg[group].ProtocolType != "consumer" {
		t.Fatalf("ListGroups = %+v, %v", lg, err)
	}
	lgReq := kmsg.NewPtrListGroupsRequest()
	lgReq.TypesFilter = []string{"consumer"}
	lgResp, err := lgReq.RequestWith(ctx, raw)
	if err != nil || len(lgResp.Groups) != 1 || lgResp.Groups[0].GroupType != "consumer" {
		t.Fatalf("ListGroups(consumer) = %+v, %v", lgResp, err)
	}
	// A classic join of the live consumer group whose protocol carries no
	// subscription metadata is refused (a well-formed one joins as a
	// classic member, groups_migration_test.go).
	jr := kmsg.NewPtrJoinGroupRequest()
	jr.Group, jr.ProtocolType, jr.SessionTimeoutMillis, jr.RebalanceTimeoutMillis = group, "consumer", 10000, 10000
	jp := kmsg.NewJoinGroupRequestProtocol()
	jp.Name = "range"
	jr.Protocols = append(jr.Protocols, jp)
	jr.MemberID = "x"
	if jresp, err := jr.RequestWith(ctx, raw); err != nil || jresp.ErrorCode == 0 {
		t.Fatalf("classic join of a consumer group: %+v, %v", jresp, err)
	}

	for _, c := range cs {
		c.stop()
	}
	seen.checkNoDuplicates(t)
	offs, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	offs.Each(func(o kadm.OffsetResponse) { sum += o.At })
	if sum != int64(total) {
		t.Errorf("committed offsets sum to %d, want %d", sum, total)
	}
	var before kmsg.ConsumerGroupDescribeResponseGroup
	waitFor(t, "empty group", 10*time.Second, func() bool {
		before = describe848(t, raw, group)
		return before.State == "Empty"
	})
	raw.Close()
	prod.Close()

	// The group's records in __consumer_offsets rebuild it after a restart.
	ts.stop()
	ts = startServer(t, dir, groupProps)
	raw = ts.client()
	defer raw.Close()
	waitFor(t, "group after restart", 20*time.Second, func() bool {
		g := describe848(t, raw, group)
		return g.ErrorCode == 0 && g.State == "Empty" && g.Epoch == before.Epoch && g.AssignmentEpoch == before.AssignmentEpoch
	})
}
