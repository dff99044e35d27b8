package server

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

var groupProps = map[string]string{
	"group.initial.rebalance.delay.ms": "0",
	"offsets.topic.num.partitions":     "5",
}

func groupOpts(group string, extra ...kgo.Opt) []kgo.Opt {
	return append([]kgo.Opt{
		kgo.ConsumerGroup(group),
		kgo.HeartbeatInterval(100 * time.Millisecond),
		kgo.SessionTimeout(6 * time.Second),
		kgo.RebalanceTimeout(10 * time.Second),
		kgo.FetchMaxWait(100 * time.Millisecond),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
	}, extra...)
}

func produceN(t *testing.T, cl *kgo.Client, topic string, from, n int) {
	t.Helper()
	var recs []*kgo.Record
	for i := from; i < from+n; i++ {
		recs = append(recs, &kgo.Record{Topic: topic, Key: []byte(fmt.Sprint(i)), Value: []byte(fmt.Sprint(i))})
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// groupConsumer consumes with a block-on-poll group member and commits each
// poll before allowing a rebalance, so each record is processed once.
type groupConsumer struct {
	cl     *kgo.Client
	cancel context.CancelFunc
	done   chan struct{}
}

type seenSet struct {
	mu   sync.Mutex
	seen map[string]int
	dups []string
}

func (s *seenSet) add(v string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen[v]++
	if s.seen[v] > 1 {
		s.dups = append(s.dups, v)
	}
}

// checkNoDuplicates fails the test if any record was processed twice.
func (s *seenSet) checkNoDuplicates(t *testing.T) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.dups) > 0 {
		t.Errorf("records processed twice: %v", s.dups)
	}
}

func (s *seenSet) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.seen)
}

func startConsumer(t *testing.T, ts *testServer, group, topic string, seen *seenSet, opts ...kgo.Opt) *groupConsumer {
	t.Helper()
	cl := ts.client(groupOpts(group, append([]kgo.Opt{
		kgo.ConsumeTopics(topic), kgo.DisableAutoCommit(), kgo.BlockRebalanceOnPoll(),
	}, opts...)...)...)
	ctx, cancel := context.WithCancel(context.Background())
	gc := &groupConsumer{cl: cl, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(gc.done)
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			fs.EachRecord(func(r *kgo.Record) {
				seen.add(fmt.Sprintf("%d/%d", r.Partition, r.Offset))
			})
			if err := cl.CommitUncommittedOffsets(context.Background()); err != nil && ctx.Err() == nil {
				t.Logf("commit: %v", err)
			}
			cl.AllowRebalance()
		}
	}()
	return gc
}

func (gc *groupConsumer) stop() {
	gc.cancel()
	<-gc.done
	gc.cl.Close() // leaves the group
}

func waitFor(t *testing.T, what string, d time.Duration, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestGroupBalancers(t *testing.T) {
	balancers := map[string]kgo.GroupBalancer{
		"range":              kgo.RangeBalancer(),
		"roundrobin":         kgo.RoundRobinBalancer(),
		"sticky":             kgo.StickyBalancer(),
		"cooperative-sticky": kgo.CooperativeStickyBalancer(),
	}
	ts := startServer(t, t.TempDir(), groupProps)
	adm := ts.admin()
	for name, bal := range balancers {
		t.Run(name, func(t *testing.T) {
			topic, group := "t-"+name, "g-"+name
			if _, err := adm.CreateTopic(context.Background(), 6, 1, nil, topic); err != nil {
				t.Fatal(err)
			}
			prod := ts.client()
			defer prod.Close()
			seen := &seenSet{seen: map[string]int{}}
			total := 0
			produceN(t, prod, topic, total, 300)
			total += 300
			var cs []*groupConsumer
			for i := 0; i < 3; i++ {
				cs = append(cs, startConsumer(t, ts, group, topic, seen, kgo.Balancers(bal)))
				produceN(t, prod, topic, total, 300)
				total += 300
			}
			waitFor(t, "all records", 30*time.Second, func() bool { return seen.count() == total })
			// Balanced: each of the 3 members owns 2 partitions.
			waitFor(t, "balanced assignment", 20*time.Second, func() bool {
				dg, err := adm.DescribeGroups(context.Background(), group)
				if err != nil || dg[group].State != "Stable" || len(dg[group].Members) != 3 {
					return false
				}
				for _, m := range dg[group].Members {
					ca, ok := m.Assigned.AsConsumer()
					if !ok || len(ca.Topics) != 1 || len(ca.Topics[0].Partitions) != 2 {
						return false
					}
				}
				return true
			})
			// A member leaves under load.
			cs[0].stop()
			produceN(t, prod, topic, total, 300)
			total += 300
			waitFor(t, "records after a leave", 30*time.Second, func() bool { return seen.count() == total })
			cs = append(cs[1:], startConsumer(t, ts, group, topic, seen, kgo.Balancers(bal)))
			produceN(t, prod, topic, total, 300)
			total += 300
			waitFor(t, "records after a join", 30*time.Second, func() bool { return seen.count() == total })
			for _, c := range cs {
				c.stop()
			}
			seen.checkNoDuplicates(t)
			// Committed offsets cover everything.
			offs, err := adm.FetchOffsets(context.Background(), group)
			if err != nil {
				t.Fatal(err)
			}
			var sum int64
			offs.Each(func(o kadm.OffsetResponse) { sum += o.At })
			if sum != int64(total) {
				t.Errorf("committed offsets sum to %d, want %d", sum, total)
			}
		})
	}
}

func TestGroupOffsetsSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	ts := startServer(t, dir, groupProps)
	adm := ts.admin()
	if _, err := adm.CreateTopic(context.Background(), 3, 1, nil, "rs"); err != nil {
		t.Fatal(err)
	}
	prod := ts.client()
	produceN(t, prod, "rs", 0, 90)
	prod.Close()
	seen := &seenSet{seen: map[string]int{}}
	c := startConsumer(t, ts, "rsg", "rs", seen)
	waitFor(t, "first records", 20*time.Second, func() bool { return seen.count() == 90 })
	c.stop()
	ts.stop()

	ts = startServer(t, dir, groupProps)
	adm = ts.admin()
	var offs kadm.OffsetResponses
	waitFor(t, "offsets after restart", 20*time.Second, func() bool {
		var err error
		offs, err = adm.FetchOffsets(context.Background(), "rsg")
		return err == nil && len(offs) > 0
	})
	var sum int64
	offs.Each(func(o kadm.OffsetResponse) { sum += o.At })
	if sum != 90 {
		t.Fatalf("committed offsets after restart sum to %d, want 90", sum)
	}
	prod = ts.client()
	produceN(t, prod, "rs", 90, 30)
	prod.Close()
	c = startConsumer(t, ts, "rsg", "rs", seen)
	waitFor(t, "resumed records", 20*time.Second, func() bool { return seen.count() == 120 })
	c.stop()
	if len(seen.dups) > 0 {
		t.Fatalf("records processed again after restart: %v", seen.dups)
	}
}

func TestGroupStaticMemberRestart(t *testing.T) {
	ts := startServer(t, t.TempDir(), groupProps)
	adm := ts.admin()
	if _, err := adm.CreateTopic(context.Background(), 4, 1, nil, "st"); err != nil {
		t.Fatal(err)
	}
	seen := &seenSet{seen: map[string]int{}}
	var mu sync.Mutex
	assignedA := 0
	// An eager balancer: a cooperative member that closes while it owes a
	// rejoin leaves even when static (franz-go), which is not the case here.
	bal := kgo.Balancers(kgo.RangeBalancer())
	a := startConsumer(t, ts, "stg", "st", seen, kgo.InstanceID("a"), bal,
		kgo.OnPartitionsAssigned(func(context.Context, *kgo.Client, map[string][]int32) { mu.Lock(); assignedA++; mu.Unlock() }))
	b := startConsumer(t, ts, "stg", "st", seen, kgo.InstanceID("b"), bal)
	stable := func() bool {
		dg, err := adm.DescribeGroups(context.Background(), "stg")
		return err == nil && dg["stg"].State == "Stable" && len(dg["stg"].Members) == 2
	}
	waitFor(t, "stable group of two", 20*time.Second, stable)
	time.Sleep(500 * time.Millisecond) // let member a settle on its final assignment
	mu.Lock()
	before := assignedA
	mu.Unlock()
	// A static member's Close does not leave the group (franz-go, like
	// Kafka's clients, sends no LeaveGroup for static members): restart it
	// within the session timeout.
	b.stop()
	b = startConsumer(t, ts, "stg", "st", seen, kgo.InstanceID("b"), bal)
	prod := ts.client()
	produceN(t, prod, "st", 0, 40)
	prod.Close()
	waitFor(t, "records", 20*time.Second, func() bool { return seen.count() == 40 })
	waitFor(t, "stable group of two", 20*time.Second, stable)
	mu.Lock()
	after := assignedA
	mu.Unlock()
	if after != before {
		t.Fatalf("static member restart rebalanced the other member: %d assignments, then %d", before, after)
	}
	a.stop()
	b.stop()
}

func TestGroupAdmin(t *testing.T) {
	ts := startServer(t, t.TempDir(), groupProps)
	adm := ts.admin()
	ctx := context.Background()
	if _, err := adm.CreateTopics(ctx, 2, 1, nil, "ad", "ad2"); err != nil {
		t.Fatal(err)
	}
	// A simple consumer's commits (outside any group membership).
	os := kadm.Offsets{}
	os.Add(kadm.Offset{Topic: "ad", Partition: 0, At: 5, LeaderEpoch: -1, Metadata: "m"})
	os.Add(kadm.Offset{Topic: "ad2", Partition: 1, At: 7, LeaderEpoch: -1})
	var err error
	waitFor(t, "coordinator", 20*time.Second, func() bool {
		var r kadm.OffsetResponses
		r, err = adm.CommitOffsets(ctx, "simple", os)
		return err == nil && r.Error() == nil
	})
	fo, err := adm.FetchOffsets(ctx, "simple")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := fo.Lookup("ad", 0); o.At != 5 || o.Metadata != "m" {
		t.Fatalf("fetched %+v", o)
	}
	seen := &seenSet{seen: map[string]int{}}
	c := startConsumer(t, ts, "live", "ad", seen)
	waitFor(t, "live group stable", 20*time.Second, func() bool {
		dg, err := adm.DescribeGroups(ctx, "live")
		return err == nil && dg["live"].State == "Stable"
	})
	lg, err := adm.ListGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := lg["live"]; !ok || lg["simple"].State != "Empty" {
		t.Fatalf("ListGroups = %+v", lg)
	}
	lg, _ = adm.ListGroups(ctx, "Stable")
	if len(lg) != 1 {
		t.Fatalf("ListGroups(Stable) = %+v", lg)
	}
	dr, _ := adm.DeleteGroups(ctx, "live")
	if dr["live"].Err == nil {
		t.Fatal("deleting a live group succeeded")
	}
	// The live group subscribes to "ad": its offsets cannot be deleted.
	del := kadm.TopicsSet{}
	del.Add("ad", 0)
	odr, err := adm.DeleteOffsets(ctx, "live", del)
	if err != nil {
		t.Fatal(err)
	}
	if e := odr["ad"][0]; e == nil {
		t.Fatal("deleted offsets of a subscribed topic")
	}
	c.stop()
	del = kadm.TopicsSet{}
	del.Add("ad2", 1)
	if odr, err = adm.DeleteOffsets(ctx, "simple", del); err != nil || odr.Error() != nil {
		t.Fatalf("delete offsets: %v %v", err, odr.Error())
	}
	fo, _ = adm.FetchOffsets(ctx, "simple")
	if _, ok := fo.Lookup("ad2", 1); ok {
		t.Fatal("offset still there after OffsetDelete")
	}
	dr, err = adm.DeleteGroups(ctx, "simple", "nope")
	if err != nil || dr["simple"].Err != nil || dr["nope"].Err == nil {
		t.Fatalf("DeleteGroups = %+v, %v", dr, err)
	}
	lg, _ = adm.ListGroups(ctx)
	if _, ok := lg["simple"]; ok {
		t.Fatal("deleted group still listed")
	}
}
