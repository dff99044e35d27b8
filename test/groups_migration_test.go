//go:build e2e

package test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestGroupMigration runs Kafka 4.0's online migration between the classic
// and the KIP-848 consumer group protocol against a gregor process, with
// franz-go members under a steady stream of records: two classic members
// consume a 6-partition topic, then a KIP-848 member joins (the group
// becomes a consumer group with two classic members), then the members
// stop one by one. "classic-first" stops the classic members first (the
// group stays a consumer group and ends empty); "848-first" stops the
// KIP-848 member first (the group turns classic again). Every record is
// consumed, the committed offsets reach the end of the topic, no member
// rejoins without end, and DescribeGroups / ConsumerGroupDescribe /
// ListGroups show the group's type at each step.
func TestGroupMigration(t *testing.T) {
	t.Parallel()
	b := startBroker(t, "group.initial.rebalance.delay.ms=0",
		"group.consumer.heartbeat.interval.ms=500", "group.consumer.min.heartbeat.interval.ms=500")
	for _, tc := range []struct {
		name       string
		balancer   func() kgo.GroupBalancer
		classicOut bool // the classic members stop before the KIP-848 member
	}{
		{"classic-first", func() kgo.GroupBalancer { return kgo.CooperativeStickyBalancer() }, true},
		{"848-first", func() kgo.GroupBalancer { return kgo.RoundRobinBalancer() }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			migrationRun(t, b, "mig-"+tc.name, tc.balancer, tc.classicOut)
		})
	}
}

// migMember is one franz-go group member processing records and
// committing after every poll, before it lets a rebalance proceed.
type migMember struct {
	cl     *kgo.Client
	cancel context.CancelFunc
	done   chan struct{}
	joins  atomic.Int64 // JoinGroup requests sent
	errs   atomic.Int64 // commit and fetch errors
}

func (m *migMember) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, _ error) {
	if key == 11 {
		m.joins.Add(1)
	}
}

func startMigMember(t *testing.T, b *broker, group, topic string, seen *migSeen, opts ...kgo.Opt) *migMember {
	t.Helper()
	m := &migMember{done: make(chan struct{})}
	cl, err := kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(b.addr()),
		kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DisableAutoCommit(), kgo.BlockRebalanceOnPoll(),
		kgo.HeartbeatInterval(200 * time.Millisecond),
		kgo.SessionTimeout(10 * time.Second),
		kgo.FetchMaxWait(200 * time.Millisecond),
		kgo.WithHooks(m),
	}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	m.cl = cl
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	go func() {
		defer close(m.done)
		for ctx.Err() == nil {
			fs := cl.PollRecords(ctx, 500)
			fs.EachError(func(_ string, _ int32, err error) {
				if !errors.Is(err, context.Canceled) {
					m.errs.Add(1)
				}
			})
			fs.EachRecord(seen.add)
			if err := cl.CommitUncommittedOffsets(context.Background()); err != nil {
				m.errs.Add(1)
			}
			cl.AllowRebalance()
		}
		if err := cl.CommitUncommittedOffsets(context.Background()); err != nil {
			m.errs.Add(1)
		}
	}()
	return m
}

// stop ends the member's loop and closes its client (which leaves the group).
func (m *migMember) stop() {
	m.cancel()
	<-m.done
	m.cl.Close()
}

// migSeen counts how often each record (partition, offset) was processed.
type migSeen struct {
	mu    sync.Mutex
	seen  map[[2]int64]int
	twice int
}

func (s *migSeen) add(r *kgo.Record) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := [2]int64{int64(r.Partition), r.Offset}
	s.seen[k]++
	if s.seen[k] == 2 {
		s.twice++
	}
}

func (s *migSeen) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.seen)
}

func migWait(t *testing.T, what string, d time.Duration, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// migListedType is the group's type per ListGroups v5.
func migListedType(cl *kgo.Client, group string) string {
	resp, err := kmsg.NewPtrListGroupsRequest().RequestWith(context.Background(), cl)
	if err != nil {
		return ""
	}
	for _, g := range resp.Groups {
		if g.Group == group {
			return g.GroupType
		}
	}
	return ""
}

// migClassicSpread is the partition count of each member of a Stable
// classic group, per DescribeGroups (nil otherwise).
func migClassicSpread(adm *kadm.Client, group string) []int {
	dg, err := adm.DescribeGroups(context.Background(), group)
	if err != nil || dg[group].Err != nil || dg[group].State != "Stable" {
		return nil
	}
	var out []int
	for _, m := range dg[group].Members {
		ca, ok := m.Assigned.AsConsumer()
		if !ok {
			return nil
		}
		n := 0
		for _, tp := range ca.Topics {
			n += len(tp.Partitions)
		}
		out = append(out, n)
	}
	return out
}

// migDescribe848 is ConsumerGroupDescribe of one group.
func migDescribe848(cl *kgo.Client, group string) kmsg.ConsumerGroupDescribeResponseGroup {
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Groups = []string{group}
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil || len(resp.Groups) != 1 {
		g := kmsg.NewConsumerGroupDescribeResponseGroup()
		g.ErrorCode = -1
		return g
	}
	return resp.Groups[0]
}

// migMixed is whether the group is a Stable consumer group of n members,
// classic of them using the classic protocol, all at the group epoch and
// holding `each` partitions.
func migMixed(cl *kgo.Client, group string, n, classic, each int) bool {
	g := migDescribe848(cl, group)
	if g.ErrorCode != 0 || g.State != "Stable" || len(g.Members) != n {
		return false
	}
	c := 0
	for _, m := range g.Members {
		k := 0
		for _, tp := range m.Assignment.TopicPartitions {
			k += len(tp.Partitions)
		}
		if k != each || m.MemberEpoch != g.Epoch {
			return false
		}
		if m.MemberType == 0 {
			c++
		}
	}
	return c == classic && migListedType(cl, group) == "consumer"
}

func equalInts(ns []int, n, want int) bool {
	if len(ns) != n {
		return false
	}
	for _, x := range ns {
		if x != want {
			return false
		}
	}
	return true
}

func migrationRun(t *testing.T, b *broker, name string, balancer func() kgo.GroupBalancer, classicOut bool) {
	topic, group := name, name+"-group"
	admCl := newKgo(t, b)
	adm := kadm.NewClient(admCl)
	createTopic(t, admCl, topic, 6, nil)

	// A steady stream of records for the whole run.
	prod := newKgo(t, b, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	var produced atomic.Int64
	ctx, stopProducing := context.WithCancel(context.Background())
	defer stopProducing()
	var producing sync.WaitGroup
	producing.Add(1)
	go func() {
		defer producing.Done()
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			recs := make([]*kgo.Record, 10)
			for j := range recs {
				recs[j] = &kgo.Record{Value: []byte(strconv.Itoa(i*10 + j))}
			}
			if err := prod.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
				t.Errorf("produce: %v", err)
				return
			}
			produced.Add(int64(len(recs)))
		}
	}()

	seen := &migSeen{seen: map[[2]int64]int{}}
	classic := []kgo.Opt{kgo.Balancers(balancer())}
	c1 := startMigMember(t, b, group, topic, seen, classic...)
	c2 := startMigMember(t, b, group, topic, seen, classic...)
	migWait(t, "a classic group of 2", 30*time.Second, func() bool {
		return equalInts(migClassicSpread(adm, group), 2, 3) && migListedType(admCl, group) == "classic"
	})

	k := startMigMember(t, b, group, topic, seen, kgo.ServerSideBalancer(), kgo.Balancers(kgo.RangeBalancer()))
	migWait(t, "the upgraded group: 2 classic and 1 KIP-848 member", 60*time.Second, func() bool {
		return migMixed(admCl, group, 3, 2, 2)
	})
	if dg, err := adm.DescribeGroups(context.Background(), group); err != nil || dg[group].ProtocolType != "consumer" {
		t.Errorf("DescribeGroups of the consumer group: %+v, %v", dg[group], err)
	}

	members := []*migMember{c1, c2, k}
	if classicOut {
		c1.stop()
		migWait(t, "a consumer group of 1 classic and 1 KIP-848 member", 60*time.Second, func() bool {
			return migMixed(admCl, group, 2, 1, 3)
		})
		c2.stop()
		migWait(t, "a consumer group of the KIP-848 member", 60*time.Second, func() bool {
			return migMixed(admCl, group, 1, 0, 6)
		})
	} else {
		k.stop()
		migWait(t, "the downgraded classic group of 2", 60*time.Second, func() bool {
			return migListedType(admCl, group) == "classic" && equalInts(migClassicSpread(adm, group), 2, 3)
		})
		if g := migDescribe848(admCl, group); g.ErrorCode != kerr.GroupIDNotFound.Code {
			t.Errorf("ConsumerGroupDescribe of the classic group: error %d, want GROUP_ID_NOT_FOUND", g.ErrorCode)
		}
		c1.stop()
		migWait(t, "a classic group of 1", 60*time.Second, func() bool {
			return equalInts(migClassicSpread(adm, group), 1, 6)
		})
	}
	stopProducing()
	producing.Wait()
	total := int(produced.Load())
	last := c2
	if classicOut {
		last = k
	}
	migWait(t, fmt.Sprintf("all %d records consumed", total), 60*time.Second, func() bool { return seen.count() == total })
	last.stop()

	// Committed offsets reach the end of every partition.
	end := endOffsets(t, admCl, topic)
	offs, err := adm.FetchOffsets(context.Background(), group)
	if err != nil {
		t.Fatal(err)
	}
	var sum, endSum int64
	for p, e := range end {
		endSum += e
		if e == 0 {
			t.Errorf("partition %d got no records", p)
			continue
		}
		if o, ok := offs.Lookup(topic, p); !ok || o.At != e {
			t.Errorf("partition %d: committed %v, end %d", p, o.At, e)
		}
	}
	offs.Each(func(o kadm.OffsetResponse) { sum += o.At })
	if endSum != int64(total) || sum != endSum {
		t.Errorf("records produced %d, end offsets sum %d, committed sum %d", total, endSum, sum)
	}
	// The group ends empty, of the type it ended as.
	wantType := "classic"
	if classicOut {
		wantType = "consumer"
	}
	migWait(t, "an empty group", 30*time.Second, func() bool {
		lg, err := adm.ListGroups(context.Background())
		return err == nil && lg[group].State == "Empty" && migListedType(admCl, group) == wantType
	})
	for i, m := range members {
		if n := m.joins.Load(); n > 40 {
			t.Errorf("member %d sent %d JoinGroup requests: a rejoin loop", i, n)
		}
		if n := m.errs.Load(); n > 20 {
			t.Errorf("member %d saw %d commit or fetch errors", i, n)
		}
	}
	seen.mu.Lock()
	t.Logf("%s: %d records, %d processed twice; joins %d/%d/%d; errors %d/%d/%d", name, total, seen.twice,
		c1.joins.Load(), c2.joins.Load(), k.joins.Load(), c1.errs.Load(), c2.errs.Load(), k.errs.Load())
	seen.mu.Unlock()
}
