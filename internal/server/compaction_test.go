package server

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestCompactionThroughKafkaAPIs turns compaction on for a topic the way an
// operator does (IncrementalAlterConfigs through kadm), produces three
// generations of values for ten keys with franz-go, and waits until a
// consumer reading from the beginning sees only the newest value of each key,
// at the offset it was produced at.
func TestCompactionThroughKafkaAPIs(t *testing.T) {
	ts := startServer(t, t.TempDir(), map[string]string{
		"log.cleaner.backoff.ms":         "20",
		"log.cleaner.dedupe.buffer.size": "4194304",
	})
	adm := ts.admin()
	ctx := ctxT(t)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "users"); err != nil {
		t.Fatal(err)
	}
	resps, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{
		{Name: "cleanup.policy", Value: kadm.StringPtr("compact")},
		{Name: "min.cleanable.dirty.ratio", Value: kadm.StringPtr("0.01")},
		{Name: "segment.ms", Value: kadm.StringPtr("100")},
	}, "users")
	if err == nil {
		err = resps[0].Err
	}
	if err != nil {
		t.Fatalf("alter configs: %v", err)
	}

	cl := ts.client(kgo.DefaultProduceTopic("users"))
	// Timestamps a second apart: each generation rolls a new segment
	// (segment.ms), so all but the last become cleanable.
	base := time.Now().Add(-10 * time.Minute)
	offsets := map[string]int64{}
	for gen := 0; gen < 3; gen++ {
		var recs []*kgo.Record
		for k := 0; k < 10; k++ {
			recs = append(recs, &kgo.Record{Key: []byte(fmt.Sprint("user-", k)), Value: []byte(fmt.Sprint("v", gen)),
				Timestamp: base.Add(time.Duration(gen) * time.Second)})
		}
		results := cl.ProduceSync(ctx, recs...)
		if err := results.FirstErr(); err != nil {
			t.Fatalf("produce generation %d: %v", gen, err)
		}
		for _, r := range results {
			offsets[string(r.Record.Key)] = r.Record.Offset
		}
	}
	end := &kgo.Record{Key: []byte("end"), Value: []byte("x"), Timestamp: base.Add(3 * time.Second)}
	if err := cl.ProduceSync(ctx, end).FirstErr(); err != nil {
		t.Fatal(err)
	}

	deadline := time.Now().Add(20 * time.Second)
	for {
		recs := consumeAll(t, ts, "users", end.Offset)
		latestOnly := len(recs) == 11
		for _, r := range recs[:len(recs)-1] {
			if string(r.Value) != "v2" || r.Offset != offsets[string(r.Key)] {
				latestOnly = false
			}
		}
		if latestOnly {
			return
		}
		if time.Now().After(deadline) {
			var got []string
			for _, r := range recs {
				got = append(got, fmt.Sprintf("%d:%s=%s", r.Offset, r.Key, r.Value))
			}
			t.Fatalf("not compacted within 20s; a consumer from the beginning sees %v", got)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// consumeAll reads topic partition 0 from the beginning through lastOffset.
func consumeAll(t *testing.T, ts *testServer, topic string, lastOffset int64) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(ts.addr()), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out []*kgo.Record
	for {
		fetches := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consume %s: %v after %d records", topic, err, len(out))
		}
		fetches.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch: %v", err) })
		for _, r := range fetches.Records() {
			out = append(out, r)
			if r.Offset >= lastOffset {
				return out
			}
		}
	}
}
