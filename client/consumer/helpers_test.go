package consumer

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/goleak"

	"gregor/client/internal/clienttest"
)

// TestMain checks that no consumer leaves a goroutine behind after Close.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// broker is a cluster a test consumes from (clienttest's, for the
// differential against Gregor and kfake).
type broker struct{ *clienttest.Broker }

func startGregor(t testing.TB) *broker { return &broker{clienttest.StartGregor(t)} }

func startKfake(t testing.TB, opts ...kfake.Opt) *broker {
	return &broker{clienttest.StartKfake(t, opts...)}
}

// bothBrokers runs fn against Gregor and against kfake.
func bothBrokers(t *testing.T, fn func(t *testing.T, b *broker)) {
	clienttest.Both(t, func(t *testing.T, b *clienttest.Broker) { fn(t, &broker{b}) })
}

func (b *broker) createTopic(t testing.TB, topic string, partitions int32) {
	b.CreateTopic(t, topic, partitions)
}

// produce writes n records "k<i>"="<prefix><i>" to partition p of topic
// with franz-go, an independent writer, using codec.
func (b *broker) produce(t testing.TB, topic string, p int32, prefix string, n int, codec kgo.CompressionCodec) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(codec), kgo.ProducerLinger(time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: topic, Partition: p, Key: []byte(fmt.Sprintf("k%d", i)),
			Value: []byte(fmt.Sprintf("%s%d", prefix, i))}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce to %s on %s: %v", topic, b.Name, err)
	}
}

func testConfig(addr string) Config {
	cfg := DefaultConfig(addr)
	cfg.AutoOffsetReset = "earliest"
	cfg.RetryBackoff = 20 * time.Millisecond
	cfg.FetchMaxWait = 100 * time.Millisecond
	return cfg
}

func newStringConsumer(t testing.TB, cfg Config, ics ...Interceptor[string, string]) *Consumer[string, string] {
	t.Helper()
	c, err := New[string, string](cfg, StringDeserializer{}, StringDeserializer{}, ics...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		_ = c.Close(ctx)
	})
	return c
}

// pollN polls until n records arrived (failing after a generous deadline)
// and returns them.
func pollN(t testing.TB, c *Consumer[string, string], n int) []Record[string, string] {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	var out []Record[string, string]
	for len(out) < n {
		recs, err := c.Poll(ctx)
		if err != nil {
			t.Fatalf("poll after %d of %d records: %v", len(out), n, err)
		}
		out = append(out, recs...)
	}
	if len(out) != n {
		t.Fatalf("polled %d records, want %d", len(out), n)
	}
	return out
}

// pollNone checks that nothing more arrives while the fetcher makes a few
// round trips (fetch.max.wait.ms each).
func pollNone(t testing.TB, c *Consumer[string, string]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	recs, err := c.Poll(ctx)
	if len(recs) > 0 || err != context.DeadlineExceeded {
		t.Fatalf("poll: got %d records, error %v; want none and a deadline", len(recs), err)
	}
}
