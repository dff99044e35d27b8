package producer

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/goleak"

	"gregor/client/internal/clienttest"
)

// TestMain checks that no producer leaves a goroutine behind after Close.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
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
func consumeAll(t *testing.T, b *clienttest.Broker, topic string, n int) []consumed {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.ConsumeTopics(topic),
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
