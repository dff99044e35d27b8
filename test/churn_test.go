//go:build e2e

package test

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestGroupChurn: up to 10 franz-go members join and leave a group at random
// while a producer writes, for GREGOR_CHURN_SECONDS (default 60). Members
// commit after every poll and in their revoke callback, and leave cleanly, so
// between commits every record is processed exactly once: nothing skipped,
// nothing twice. No rebalance may get stuck (a last member drains to the end)
// and UNKNOWN_MEMBER_ID must stay rare.
func TestGroupChurn(t *testing.T) {
	t.Parallel()
	seconds := 60
	if s := os.Getenv("GREGOR_CHURN_SECONDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("GREGOR_CHURN_SECONDS=%q: %v", s, err)
		}
		seconds = n
	}
	b := startBroker(t, "group.initial.rebalance.delay.ms=0")
	const topic, group, partitions, maxMembers = "churn", "churners", 12, 10
	admin := newKgo(t, b)
	createTopic(t, admin, topic, partitions, nil)

	var (
		mu             sync.Mutex
		seen           = map[int32]map[int64]int{} // partition -> offset -> times processed
		unknownMembers int
	)
	process := func(r *kgo.Record) {
		mu.Lock()
		defer mu.Unlock()
		if seen[r.Partition] == nil {
			seen[r.Partition] = map[int64]int{}
		}
		seen[r.Partition][r.Offset]++
	}
	noteErr := func(err error) {
		if errors.Is(err, kerr.UnknownMemberID) {
			mu.Lock()
			unknownMembers++
			mu.Unlock()
		}
	}

	// The producer runs for the whole churn.
	ctx, stopProducing := context.WithCancel(context.Background())
	defer stopProducing()
	prod := newKgo(t, b, kgo.DefaultProduceTopic(topic))
	var produced sync.WaitGroup
	produced.Add(1)
	go func() {
		defer produced.Done()
		for i := 0; ctx.Err() == nil; i++ {
			prod.Produce(ctx, &kgo.Record{Value: []byte(strconv.Itoa(i))}, func(_ *kgo.Record, err error) {
				if err != nil && !errors.Is(err, context.Canceled) {
					t.Errorf("produce: %v", err)
				}
			})
			if i%50 == 0 {
				time.Sleep(5 * time.Millisecond) // a steady stream, not a flood
			}
		}
	}()

	type member struct {
		cancel context.CancelFunc
		done   chan struct{}
	}
	start := func() *member {
		mctx, cancel := context.WithCancel(context.Background())
		m := &member{cancel: cancel, done: make(chan struct{})}
		var cl *kgo.Client
		cl = newKgo(t, b,
			kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.DisableAutoCommit(), kgo.BlockRebalanceOnPoll(),
			kgo.Balancers(kgo.CooperativeStickyBalancer()),
			kgo.SessionTimeout(10*time.Second),
			kgo.OnPartitionsRevoked(func(ctx context.Context, c *kgo.Client, _ map[string][]int32) {
				noteErr(c.CommitUncommittedOffsets(ctx))
			}),
		)
		go func() {
			defer close(m.done)
			for mctx.Err() == nil {
				fs := cl.PollRecords(mctx, 500)
				fs.EachError(func(_ string, _ int32, err error) {
					if !errors.Is(err, context.Canceled) {
						noteErr(err)
					}
				})
				fs.EachRecord(process)
				noteErr(cl.CommitUncommittedOffsets(context.Background()))
				cl.AllowRebalance()
			}
			// A clean leave: commit what was processed, then close
			// (LeaveGroup), so the next owner starts after it.
			noteErr(cl.CommitUncommittedOffsets(context.Background()))
			cl.Close()
		}()
		return m
	}

	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	var members []*member
	deadline := time.Now().Add(time.Duration(seconds) * time.Second)
	joins, leaves := 0, 0
	for time.Now().Before(deadline) {
		if len(members) == 0 || len(members) < maxMembers && rng.IntN(2) == 0 {
			members = append(members, start())
			joins++
		} else {
			i := rng.IntN(len(members))
			members[i].cancel()
			<-members[i].done
			members = append(members[:i], members[i+1:]...)
			leaves++
		}
		time.Sleep(time.Duration(200+rng.IntN(1300)) * time.Millisecond)
	}
	stopProducing()
	produced.Wait()
	if err := prod.Flush(context.Background()); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	if len(members) == 0 {
		// The churn may have ended with everyone gone: one member drains.
		members = append(members, start())
	}
	for _, m := range members[1:] {
		m.cancel()
		<-m.done
	}
	members = members[:1]

	// The last member must drain to the end: no stuck rebalance.
	end := endOffsets(t, admin, topic)
	total := int64(0)
	for _, e := range end {
		total += e
	}
	drainBy := time.Now().Add(60 * time.Second)
	for {
		mu.Lock()
		n := int64(0)
		for p, e := range end {
			for off := int64(0); off < e; off++ {
				if seen[p][off] > 0 {
					n++
				}
			}
		}
		mu.Unlock()
		if n == total {
			break
		}
		if time.Now().After(drainBy) {
			t.Fatalf("the last member processed %d of %d records within 60 s of the churn's end (a stuck rebalance or skipped records)", n, total)
		}
		time.Sleep(100 * time.Millisecond)
	}
	members[0].cancel()
	<-members[0].done

	mu.Lock()
	defer mu.Unlock()
	dups := 0
	for p, offs := range seen {
		for off, n := range offs {
			if n > 1 {
				dups++
				if dups <= 5 {
					t.Errorf("partition %d offset %d processed %d times", p, off, n)
				}
			}
		}
	}
	t.Logf("%d s of churn: %d joins, %d leaves, %d records, %d processed twice, %d UNKNOWN_MEMBER_ID",
		seconds, joins, leaves, total, dups, unknownMembers)
	if unknownMembers > joins {
		t.Errorf("UNKNOWN_MEMBER_ID %d times for %d joins: a storm", unknownMembers, joins)
	}
	if dups > 0 {
		t.Fatalf("%d records processed more than once", dups)
	}
}
