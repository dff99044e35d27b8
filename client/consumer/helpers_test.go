package consumer

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/goleak"

	"gregor/internal/config"
	"gregor/internal/server"
)

// TestMain checks that no consumer leaves a goroutine behind after Close.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// broker is a cluster a test consumes from: an in-process Gregor node or
// franz-go's kfake, so one scenario runs against both (the differential).
type broker struct {
	name  string
	addr  string
	fake  *kfake.Cluster // nil for Gregor
	admin *kadm.Client
}

func startGregor(t testing.TB) *broker {
	t.Helper()
	props := map[string]string{
		"listeners":                "PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"controller.quorum.voters": "1@127.0.0.1:0",
		"log.dirs":                 t.TempDir(),
		"gregor.http.listen":       "127.0.0.1:0",
	}
	cfg, _, err := config.Load(props)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	return newBroker(t, "gregor", srv.Addr("PLAINTEXT").String(), nil)
}

func startKfake(t testing.TB, opts ...kfake.Opt) *broker {
	t.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return newBroker(t, "kfake", c.ListenAddrs()[0], c)
}

func newBroker(t testing.TB, name, addr string, fake *kfake.Cluster) *broker {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return &broker{name: name, addr: addr, fake: fake, admin: kadm.NewClient(cl)}
}

// bothBrokers runs fn against Gregor and against kfake.
func bothBrokers(t *testing.T, fn func(t *testing.T, b *broker)) {
	t.Run("gregor", func(t *testing.T) { fn(t, startGregor(t)) })
	t.Run("kfake", func(t *testing.T) { fn(t, startKfake(t)) })
}

func (b *broker) createTopic(t testing.TB, topic string, partitions int32) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	resp, err := b.admin.CreateTopic(ctx, partitions, 1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create %s on %s: %v", topic, b.name, err)
	}
}

// produce writes n records "k<i>"="<prefix><i>" to partition p of topic
// with franz-go, an independent writer, using codec.
func (b *broker) produce(t testing.TB, topic string, p int32, prefix string, n int, codec kgo.CompressionCodec) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.addr), kgo.RecordPartitioner(kgo.ManualPartitioner()),
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
		t.Fatalf("produce to %s on %s: %v", topic, b.name, err)
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
