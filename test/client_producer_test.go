//go:build e2e

package test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"gregor/client/producer"
)

// TestClientProducerLeaderKills produces with Gregor's own Go producer
// (client/producer, idempotent, 5 in flight) while the partition's leader
// is killed with SIGKILL three times: every record is acknowledged, and the
// log holds each exactly once, in send order.
func TestClientProducerLeaderKills(t *testing.T) {
	const topic = "client-producer-kills"
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	k := startLeaderKill(t, ctx, topic)
	c, adm := k.c, k.adm
	k.waitLeader(ctx, 60*time.Second)

	cfg := producer.DefaultConfig(c.bootstrap()...)
	cfg.Linger = time.Millisecond
	cfg.BatchSize = 2048 // many batches, so 5 are in flight when the leader dies
	cfg.DeliveryTimeout = 5 * time.Minute
	p, err := producer.New[string, string](cfg, producer.StringSerializer{}, producer.StringSerializer{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(time.Minute)

	var mu sync.Mutex
	var acked, failed int
	var firstErr error
	stop := make(chan struct{})
	sent := make(chan int, 1)
	go func() { // the load: numbered records until stopped
		i := 0
		defer func() { sent <- i }()
		for {
			select {
			case <-stop:
				return
			default:
			}
			err := p.Send(ctx, producer.Record[string, string]{Topic: topic, Value: strconv.Itoa(i)}, func(_ producer.RecordMetadata, err error) {
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					failed++
					if firstErr == nil {
						firstErr = err
					}
					return
				}
				acked++
			})
			if err != nil {
				mu.Lock()
				failed++
				if firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
				return
			}
			i++
		}
	}()
	ackedNow := func() int { mu.Lock(); defer mu.Unlock(); return acked }
	for kill := range 3 {
		l := k.waitLeader(ctx, 90*time.Second)
		before := ackedNow()
		victim := c.broker(l)
		victim.kill9()
		k.waitNewLeader(ctx, l)
		c.eventually("acknowledgements after the kill", 60*time.Second, func() error {
			if n := ackedNow(); n <= before+1000 {
				return fmt.Errorf("%d acknowledged, %d before the kill", n, before)
			}
			return nil
		})
		victim.start()
		t.Logf("kill %d: leader %d; %d records acknowledged", kill+1, l, ackedNow())
	}
	close(stop)
	n := <-sent
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if failed > 0 || acked != n {
		t.Fatalf("%d sent, %d acknowledged, %d failed (first: %v)", n, acked, failed, firstErr)
	}
	mu.Unlock()

	cl := c.client(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	next := 0
	for next < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d records", next, n)
		}
		var bad error
		fs.EachRecord(func(r *kgo.Record) {
			if bad == nil && string(r.Value) != strconv.Itoa(next) {
				bad = fmt.Errorf("offset %d holds %s, want %d: duplicated, lost or reordered", r.Offset, r.Value, next)
			}
			next++
		})
		if bad != nil {
			t.Fatal(bad)
		}
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	if end, _ := ends.Lookup(topic, 0); end.Offset != int64(n) {
		t.Fatalf("log end offset %d, %d records sent: duplicates past the last one", end.Offset, n)
	}
	t.Logf("%d records, each once and in order, across 3 leader kills", n)
}
