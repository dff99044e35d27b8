// Package console is Gregor's web console: a read-only view of the cluster
// served on the gregor.http.listen listener next to /metrics. It shows the
// brokers and the controller quorum, topics and their partitions and
// configs, consumer groups with their members and lag, a live throughput
// chart, and a few records of a partition.
//
// The console reads the cluster the way any operator tool does: through a
// Kafka client (franz-go kadm) connected to this node's own broker
// listener, so what it shows is exactly what clients see, and it works the
// same on every node of a cluster. The page itself is static HTML, CSS and
// JavaScript embedded in the binary (no build step, no CDN), so it works
// offline; it reads the JSON endpoints under /api/.
package console

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

//go:embed static
var staticFiles embed.FS

// Config is what the console needs from the server.
type Config struct {
	// Metrics is the process's registry; the throughput chart reads its
	// kafka_server_brokertopicmetrics_bytesin/bytesout counters. May be nil.
	Metrics prometheus.Gatherer
	// SampleInterval is the throughput chart's resolution; 0 means 1s.
	SampleInterval time.Duration
	// Samples is how many samples the chart keeps; 0 means 300.
	Samples int
	Logger  *slog.Logger
}

// errNoBroker is the answer until SetBootstrap names the broker listener
// (the HTTP listener starts before the broker's).
var errNoBroker = errors.New("the broker listener is not up yet")

// Console serves the web console. Its sampler goroutine runs from New
// until Close.
type Console struct {
	cfg    Config
	logger *slog.Logger

	mu        sync.Mutex
	bootstrap string      // this node's broker listener, "" until known
	client    *kgo.Client // connected to bootstrap, created on first use
	closed    bool

	throughput *throughput

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// New returns a console and starts its throughput sampler.
func New(cfg Config) *Console {
	if cfg.SampleInterval <= 0 {
		cfg.SampleInterval = time.Second
	}
	if cfg.Samples <= 0 {
		cfg.Samples = 300
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &Console{cfg: cfg, logger: cfg.Logger, cancel: cancel, throughput: newThroughput(cfg.Samples)}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		c.sample(ctx)
	}()
	return c
}

// SetBootstrap names the broker listener (host:port) the console's client
// connects to: this node's own, once it is bound.
func (c *Console) SetBootstrap(addr string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.bootstrap = addr
}

// Mount registers the console's page and API on mux (the argument
// metrics.ListenHTTP's extra hook takes).
func (c *Console) Mount(mux *http.ServeMux) {
	static, err := fs.Sub(staticFiles, "static")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		http.ServeFileFS(w, r, static, "index.html")
	})
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	mux.HandleFunc("GET /api/cluster", c.api(c.cluster))
	mux.HandleFunc("GET /api/topics", c.api(c.topics))
	mux.HandleFunc("GET /api/topics/{topic}", c.api(c.topic))
	mux.HandleFunc("GET /api/topics/{topic}/records", c.api(c.records))
	mux.HandleFunc("GET /api/groups", c.api(c.groups))
	mux.HandleFunc("GET /api/groups/{group}", c.api(c.group))
	mux.HandleFunc("GET /api/throughput", c.api(c.throughputSeries))
}

// Close stops the sampler and closes the client.
func (c *Console) Close() {
	c.cancel()
	c.wg.Wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	if c.client != nil {
		c.client.Close()
		c.client = nil
	}
}

// admin returns the shared client, creating it once the broker listener is
// known. kgo connects lazily, so creating it never blocks.
func (c *Console) admin() (*kadm.Client, error) {
	cl, err := c.kgoClient()
	if err != nil {
		return nil, err
	}
	return kadm.NewClient(cl), nil
}

func (c *Console) kgoClient() (*kgo.Client, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, errors.New("the console is closed")
	}
	if c.client != nil {
		return c.client, nil
	}
	if c.bootstrap == "" {
		return nil, errNoBroker
	}
	cl, err := kgo.NewClient(c.clientOpts()...)
	if err != nil {
		return nil, fmt.Errorf("client for %s: %w", c.bootstrap, err)
	}
	c.client = cl
	return cl, nil
}

// clientOpts are the options of every client the console makes; callers
// hold mu or own a copy of bootstrap.
func (c *Console) clientOpts(extra ...kgo.Opt) []kgo.Opt {
	return append([]kgo.Opt{
		kgo.SeedBrokers(c.bootstrap),
		kgo.ClientID("gregor-console"),
		// A console page waits for its answer: fail fast rather than
		// retry for the default 30s when a broker is away.
		kgo.RetryTimeout(5 * time.Second),
		kgo.DialTimeout(3 * time.Second),
	}, extra...)
}
