package handlers

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"gregor/internal/coordinator/txn"
)

// TestRetryConcurrentAdd: a transactions v2 add answered
// CONCURRENT_TRANSACTIONS is asked again until the coordinator answers
// otherwise, within add.partitions.to.txn.retry.backoff.max.ms; one that
// stays concurrent gives up with that answer after a few tries.
func TestRetryConcurrentAdd(t *testing.T) {
	h := &Handlers{}
	tp := txn.TopicPartition{Topic: "t", Partition: 0}
	answers := func(codes ...int16) (func() map[txn.TopicPartition]int16, *int) {
		n := 0
		return func() map[txn.TopicPartition]int16 {
			c := codes[min(n, len(codes)-1)]
			n++
			return map[txn.TopicPartition]int16{tp: c}
		}, &n
	}
	concurrent := kerr.ConcurrentTransactions.Code

	again, asked := answers(concurrent, 0)
	if got := h.retryConcurrentAdd(context.Background(), map[txn.TopicPartition]int16{tp: concurrent}, again)[tp]; got != 0 || *asked != 2 {
		t.Fatalf("concurrent then added: %v after %d more asks, want NONE after 2", kerr.ErrorForCode(got), *asked)
	}
	again, asked = answers(concurrent)
	got := h.retryConcurrentAdd(context.Background(), map[txn.TopicPartition]int16{tp: concurrent}, again)[tp]
	if got != concurrent || *asked == 0 || *asked > int(addPartitionsRetryBackoffMax/addPartitionsRetryBackoff) {
		t.Fatalf("always concurrent: %v after %d more asks, want CONCURRENT_TRANSACTIONS after 1 to %d", kerr.ErrorForCode(got), *asked, addPartitionsRetryBackoffMax/addPartitionsRetryBackoff)
	}
	again, asked = answers(0)
	if got := h.retryConcurrentAdd(context.Background(), map[txn.TopicPartition]int16{tp: kerr.ProducerFenced.Code}, again)[tp]; got != kerr.ProducerFenced.Code || *asked != 0 {
		t.Fatalf("fenced: %v after %d more asks, want PRODUCER_FENCED and no retry", kerr.ErrorForCode(got), *asked)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	again, asked = answers(0)
	if got := h.retryConcurrentAdd(ctx, map[txn.TopicPartition]int16{tp: concurrent}, again)[tp]; got != concurrent || *asked != 0 {
		t.Fatalf("canceled request: %v after %d more asks", kerr.ErrorForCode(got), *asked)
	}
}
