package producer

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/goleak"

	"gregor/internal/config"
	"gregor/internal/server"
)

// TestMain checks that no producer leaves a goroutine behind after Close.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// broker is a cluster a test produces to: an in-process Gregor node or
// franz-go's kfake, so one scenario runs against both (the differential).
type broker struct {
	name  string
	addr  string
	fake  *kfake.Cluster // nil for Gregor
	admin *kadm.Client
}

func startGregor(t *testing.T) *broker { return startGregorB(t) }

// startGregorB is startGregor for tests and benchmarks.
func startGregorB(t testing.TB) *broker {
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

func startKfake(t *testing.T, opts ...kfake.Opt) *broker {
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

func (b *broker) createTopic(t *testing.T, topic string, partitions int32) {
	b.createTopicB(t, topic, partitions)
}

func (b *broker) createTopicB(t testing.TB, topic string, partitions int32) {
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

// consumed is one record read back.
type consumed struct {
	partition int32
	offset    int64
	key       string
	value     string
}

// consumeAll reads n records of topic from the start, with franz-go as an
// independent reader.
func (b *broker) consumeAll(t *testing.T, topic string, n int) []consumed {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.addr), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	var out []consumed
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d records of %s: %v", len(out), n, topic, err)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Logf("fetch: %v", err) })
		fs.EachRecord(func(r *kgo.Record) {
			out = append(out, consumed{r.Partition, r.Offset, string(r.Key), string(r.Value)})
		})
	}
	return out
}

// testConfig is a config for tests: generous timeouts for a loaded machine.
func testConfig(addr string) Config {
	cfg := DefaultConfig(addr)
	cfg.MaxBlock = 60 * time.Second
	return cfg
}

func newStringProducer(t *testing.T, cfg Config) *Producer[string, string] {
	t.Helper()
	p, err := New[string, string](cfg, StringSerializer{}, StringSerializer{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close(30 * time.Second) })
	return p
}

// waitFor polls cond until it holds or a generous deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// flakyDialer wraps connections so a test can cut all of them at once, as
// a network failure would.
type flakyDialer struct {
	mu    sync.Mutex
	conns []net.Conn
	cuts  int
}

func (d *flakyDialer) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var nd net.Dialer
	c, err := nd.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	d.conns = append(d.conns, c)
	d.mu.Unlock()
	return c, nil
}

func (d *flakyDialer) cutCount() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.cuts
}

// cut closes every connection dialed so far.
func (d *flakyDialer) cut() {
	d.mu.Lock()
	conns := d.conns
	d.conns = nil
	d.cuts++
	d.mu.Unlock()
	for _, c := range conns {
		_ = c.Close()
	}
}

var errTest = errors.New("test error")
