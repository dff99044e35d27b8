//go:build e2e

package test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// seqLoad writes values "p-n" to every partition of a topic, n rising per
// partition, with an idempotent acks=all producer at about 2000 records a
// second, and remembers which were acknowledged: the load of the tests that
// check nothing acknowledged is lost, duplicated or reordered.
type seqLoad struct {
	topic      string
	partitions int
	prod       *kgo.Client

	mu     sync.Mutex
	acked  [][]int
	failed int

	stop chan struct{}
	done chan struct{}
}

func startSeqLoad(ctx context.Context, c *cluster, topic string, partitions int) *seqLoad {
	l := &seqLoad{topic: topic, partitions: partitions, acked: make([][]int, partitions),
		stop: make(chan struct{}), done: make(chan struct{})}
	l.prod = c.client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RecordDeliveryTimeout(90*time.Second), kgo.MaxBufferedRecords(2000))
	go func() {
		defer close(l.done)
		for seq := 0; ; seq++ {
			select {
			case <-l.stop:
				return
			default:
			}
			p := int32(seq % partitions)
			n := seq / partitions
			if seq%20 == 19 {
				time.Sleep(10 * time.Millisecond)
			}
			r := &kgo.Record{Topic: topic, Partition: p, Value: []byte(fmt.Sprintf("%d-%d", p, n))}
			l.prod.Produce(ctx, r, func(_ *kgo.Record, err error) {
				l.mu.Lock()
				defer l.mu.Unlock()
				if err != nil {
					l.failed++
					return
				}
				l.acked[p] = append(l.acked[p], n)
			})
		}
	}()
	return l
}

// count is how many records of partition p (-1: all) were acknowledged.
func (l *seqLoad) count(p int) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if p >= 0 {
		return len(l.acked[p])
	}
	n := 0
	for _, a := range l.acked {
		n += len(a)
	}
	return n
}

// finish stops producing and waits for every record in flight.
func (l *seqLoad) finish(t *testing.T, ctx context.Context) {
	t.Helper()
	close(l.stop)
	<-l.done
	fctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := l.prod.Flush(fctx); err != nil {
		t.Fatalf("flush: %v", err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	t.Logf("%d records acknowledged, %d failed", func() int {
		n := 0
		for _, a := range l.acked {
			n += len(a)
		}
		return n
	}(), l.failed)
}

// verify reads every partition back with read_committed: each acknowledged
// record is there, once, in order per partition.
func (l *seqLoad) verify(t *testing.T, ctx context.Context, c *cluster) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	cons := c.client(kgo.ConsumeTopics(l.topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	got := make([][]int, l.partitions)
	seen := make([]map[int]bool, l.partitions)
	want := map[int]int{}
	for p := range seen {
		seen[p] = map[int]bool{}
		if a := l.acked[p]; len(a) > 0 {
			want[p] = a[len(a)-1]
		}
	}
	rctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for reached := 0; reached < len(want); {
		fs := cons.PollFetches(rctx)
		if rctx.Err() != nil {
			t.Fatalf("reading back: %v (read per partition: %v)", rctx.Err(), lens(got))
		}
		fs.EachRecord(func(r *kgo.Record) {
			ps, ns, _ := strings.Cut(string(r.Value), "-")
			p, _ := strconv.Atoi(ps)
			n, _ := strconv.Atoi(ns)
			if int32(p) != r.Partition {
				t.Fatalf("record %q in partition %d", r.Value, r.Partition)
			}
			if seen[p][n] {
				t.Fatalf("partition %d: %d read twice (offset %d)", p, n, r.Offset)
			}
			if k := len(got[p]); k > 0 && got[p][k-1] > n {
				t.Fatalf("partition %d: %d after %d: out of order", p, n, got[p][k-1])
			}
			seen[p][n] = true
			got[p] = append(got[p], n)
			if w, ok := want[p]; ok && n == w {
				reached++
			}
		})
	}
	for p, a := range l.acked {
		for _, n := range a {
			if !seen[p][n] {
				t.Fatalf("partition %d: acknowledged record %d lost", p, n)
			}
		}
	}
}

func lens(s [][]int) []int {
	out := make([]int, len(s))
	for i, x := range s {
		out[i] = len(x)
	}
	return out
}
