//go:build e2e

package test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"gregor/client/consumer"
)

// TestClientConsumerLeaderKill reads with Gregor's own Go consumer
// (client/consumer) from a 3-node cluster while the partition's leader is
// killed with SIGKILL: the consumer follows the new leader and reads every
// record once, in order, including those written after the kill; its
// commit lands on whichever broker coordinates the group then.
func TestClientConsumerLeaderKill(t *testing.T) {
	const topic, half = "client-consumer-kill", 3000
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	k := startLeaderKill(t, ctx, topic)
	c, adm := k.c, k.adm
	l := k.waitLeader(ctx, 60*time.Second)
	produce := func(from int) {
		cl := c.client(kgo.RequiredAcks(kgo.AllISRAcks()))
		defer cl.Close()
		for i := from; i < from+half; i++ {
			cl.Produce(ctx, &kgo.Record{Topic: topic, Value: []byte(strconv.Itoa(i))}, nil)
		}
		if err := cl.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	produce(0)

	cfg := consumer.DefaultConfig(c.bootstrap()...)
	cfg.GroupID = "client-consumer-kill"
	cfg.EnableAutoCommit = false
	cfg.AutoOffsetReset = "earliest"
	cfg.MaxPollRecords = 100
	cfg.MaxPartitionFetchBytes = 4096 // many fetches, so some go to the dead leader
	cns, err := consumer.New[string, string](cfg, consumer.StringDeserializer{}, consumer.StringDeserializer{})
	if err != nil {
		t.Fatal(err)
	}
	defer cns.Close(ctx)
	tp := consumer.TopicPartition{Topic: topic, Partition: 0}
	if err := cns.Assign([]consumer.TopicPartition{tp}); err != nil {
		t.Fatal(err)
	}
	next := 0
	read := func(upTo int) {
		for next < upTo {
			recs, err := cns.Poll(ctx)
			if err != nil {
				t.Fatalf("poll at record %d: %v", next, err)
			}
			for _, r := range recs {
				if r.Value != strconv.Itoa(next) || r.Offset != int64(next) {
					t.Fatalf("offset %d holds %s, want %d: lost, repeated or reordered", r.Offset, r.Value, next)
				}
				next++
			}
		}
	}
	read(half / 2)
	// The consumer's first OffsetFetch made __consumer_offsets; the kill
	// may take its coordinator too, so wait for a full ISR there as well.
	c.eventually("__consumer_offsets with full ISRs", 60*time.Second, func() error {
		md, err := adm.Metadata(ctx, "__consumer_offsets")
		if err != nil {
			return err
		}
		td := md.Topics["__consumer_offsets"]
		if td.Err != nil || len(td.Partitions) == 0 {
			return fmt.Errorf("__consumer_offsets: %v", td.Err)
		}
		for _, pd := range td.Partitions {
			if pd.Leader < 0 || len(pd.ISR) != 3 {
				return fmt.Errorf("__consumer_offsets-%d: leader %d isr %v", pd.Partition, pd.Leader, pd.ISR)
			}
		}
		return nil
	})
	victim := c.broker(l)
	victim.kill9()
	defer victim.start()
	k.waitNewLeader(ctx, l)
	produce(half)
	read(2 * half)
	if err := cns.CommitSync(ctx, nil); err != nil {
		md, _ := adm.Metadata(ctx, "__consumer_offsets")
		for _, pd := range md.Topics["__consumer_offsets"].Partitions {
			if pd.Leader < 0 || pd.Err != nil {
				t.Logf("__consumer_offsets-%d: leader %d isr %v err %v", pd.Partition, pd.Leader, pd.ISR, pd.Err)
			}
		}
		t.Fatal(err)
	}
	got, err := cns.Committed(ctx, []consumer.TopicPartition{tp})
	if err != nil || got[tp].Offset != 2*half {
		t.Fatalf("committed %v (%v), want %d", got, err, 2*half)
	}
	t.Logf("%d records read once and in order across a leader kill (leader was %d)", next, l)
}
