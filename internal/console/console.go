// Package console is Gregor's web console, served on the gregor.http.listen
// listener next to /metrics. It shows the brokers and the controller
// quorum, a page per broker (brokers.go), topics and their partitions and
// configs, consumer groups with their members and lag, a live throughput
// chart, a few records of a partition and a search of a topic's records
// on a scan budget (search.go), its lists paged, sorted and filtered on
// the server (lists.go); and it acts: creates and deletes topics, produces test
// records, sets and deletes topic configs (actions.go, which says who may
// act and how cross-site requests are refused), adds partitions, elects
// leaders, resets a group's offsets and deletes a group (actions_admin.go).
//
// The console reads the cluster the way any operator tool does: through a
// Kafka client (franz-go kadm) connected to this node's own first broker
// listener, so what it shows is exactly what clients see, and it works the
// same on every node of a cluster. When that listener requires SASL the
// console asks the visitor to log in and reads and acts as them, each
// visitor through a client of their own (sessions.go, login.go), so the
// broker's ACLs decide; it never uses credentials of its own there. The page itself is static HTML,
// CSS and JavaScript embedded in the binary (no build step, no CDN), so it
// works offline; it reads the JSON endpoints under /api/.
package console

import (
	"context"
	"crypto/tls"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
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
	// IdleSampleInterval is how often the cluster's end offsets are
	// listed for the records/s chart while nobody watches it (so a first
	// visit sees the last minutes, coarsely); 0 means 15s.
	IdleSampleInterval time.Duration
	// Samples is how many samples the chart keeps; 0 means 300.
	Samples int
	// SessionIdle is how long a logged-in visitor's session lasts without
	// a request; 0 means 30 minutes.
	SessionIdle time.Duration
	// HTTPListen is gregor.http.listen, the address the console is served
	// on: when the broker listener has no login, the console's actions are
	// allowed only if it binds to loopback (actions.go).
	HTTPListen string
	Logger     *slog.Logger
}

// dialTimeout bounds connecting to a broker.
const dialTimeout = 3 * time.Second

// maxSessions bounds the logged-in visitors, each holding a client with
// its connections.
const maxSessions = 64

// Broker is how the console reaches the cluster: this node's first broker
// listener.
type Broker struct {
	Addr     string      // host:port to dial
	Listener string      // the listener's name, for messages
	TLS      *tls.Config // for SSL and SASL_SSL listeners, else nil
	// ServerName is the name Addr's certificate is checked against (the
	// listener's advertised host: Addr may be a loopback address). The
	// other brokers' certificates are checked against the hosts dialled.
	ServerName string
	// SASL is set when the listener requires SASL: visitors log in with
	// one of Mechanisms (those the listener enables that the console
	// supports: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512).
	SASL       bool
	Mechanisms []string
	// Err, when set, is why the console cannot read through the listener;
	// every API call answers it.
	Err error
}

// errNoBroker is the answer until SetBroker names the broker listener
// (the HTTP listener starts before the broker's).
var errNoBroker = errors.New("the broker listener is not up yet")

// errLoginRequired answers a visitor without a session when the listener
// requires SASL; the console itself has no credentials to read with.
var errLoginRequired = &statusError{http.StatusUnauthorized, errors.New("log in: the broker listener requires authentication")}

// Console serves the web console. Its sampler and session-expiry
// goroutines run from New until Close.
type Console struct {
	cfg    Config
	logger *slog.Logger

	mu     sync.Mutex
	broker Broker      // this node's broker listener, Addr "" until known
	client *kgo.Client // the console's own, when the listener needs no login; created on first use
	closed bool

	sessions *sessions
	// authenticate logs a visitor in: a client authenticated as them, or
	// a *loginError. Tests replace it.
	authenticate func(ctx context.Context, b Broker, user, password, mechanism string) (*kgo.Client, error)

	throughput *throughput

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// New returns a console and starts its throughput sampler.
func New(cfg Config) *Console {
	if cfg.SampleInterval <= 0 {
		cfg.SampleInterval = time.Second
	}
	if cfg.IdleSampleInterval <= 0 {
		cfg.IdleSampleInterval = 15 * time.Second
	}
	if cfg.Samples <= 0 {
		cfg.Samples = 300
	}
	if cfg.SessionIdle <= 0 {
		cfg.SessionIdle = 30 * time.Minute
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &Console{
		cfg: cfg, logger: cfg.Logger, cancel: cancel,
		throughput:   newThroughput(cfg.Samples),
		sessions:     newSessions(cfg.SessionIdle, maxSessions),
		authenticate: authenticateSASL,
	}
	c.wg.Add(2)
	go func() {
		defer c.wg.Done()
		c.sample(ctx)
	}()
	go func() {
		defer c.wg.Done()
		c.expireSessions(ctx)
	}()
	return c
}

// SetBroker names the broker listener the console reads the cluster
// through: this node's own, once it is bound.
func (c *Console) SetBroker(b Broker) {
	c.mu.Lock()
	old := c.client
	c.broker, c.client = b, nil
	c.mu.Unlock()
	if old != nil {
		old.Close()
	}
}

// expireSessions ends idle sessions until ctx ends.
func (c *Console) expireSessions(ctx context.Context) {
	ticker := time.NewTicker(max(c.cfg.SessionIdle/4, time.Second))
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-ticker.C:
			if n := c.sessions.expire(now); n > 0 {
				c.logger.Info("console sessions expired", "count", n)
			}
		}
	}
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
	mux.HandleFunc("GET /api/session", c.session)
	mux.HandleFunc("POST /api/login", c.login)
	mux.HandleFunc("POST /api/logout", c.logout)
	mux.HandleFunc("GET /api/cluster", c.api(c.cluster))
	mux.HandleFunc("GET /api/topics", c.api(c.topics))
	mux.HandleFunc("GET /api/topics/{topic}", c.api(c.topic))
	mux.HandleFunc("GET /api/topics/{topic}/records", c.recordsHTTP)
	mux.HandleFunc("GET /api/brokers/{id}", c.api(c.brokerDetail))
	mux.HandleFunc("GET /api/groups", c.api(c.groups))
	mux.HandleFunc("GET /api/groups/{group}", c.api(c.group))
	mux.HandleFunc("GET /api/throughput", c.api(c.throughputSeries))
	mux.HandleFunc("GET /api/security", c.api(c.security))
	mux.HandleFunc("POST /api/topics", c.action(c.createTopic))
	mux.HandleFunc("POST /api/topics/{topic}/delete", c.action(c.deleteTopic))
	mux.HandleFunc("POST /api/topics/{topic}/produce", c.action(c.produce))
	mux.HandleFunc("POST /api/topics/{topic}/configs", c.action(c.alterConfig))
	mux.HandleFunc("POST /api/topics/{topic}/partitions", c.action(c.addPartitions))
	mux.HandleFunc("POST /api/topics/{topic}/elect", c.action(c.electLeaders))
	mux.HandleFunc("POST /api/groups/{group}/reset-offsets", c.action(c.resetGroupOffsets))
	mux.HandleFunc("POST /api/groups/{group}/delete", c.action(c.deleteGroup))
}

// Close stops the sampler, ends the sessions and closes the clients.
func (c *Console) Close() {
	c.cancel()
	c.wg.Wait()
	c.sessions.close()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	if c.client != nil {
		c.client.Close()
		c.client = nil
	}
}

// clientFor returns the client an API call runs through: the visitor's
// session's when the listener requires SASL, else the console's own.
func (c *Console) clientFor(r *http.Request) (*kgo.Client, error) {
	c.mu.Lock()
	b := c.broker
	c.mu.Unlock()
	if !b.SASL || b.Err != nil {
		return c.kgoClient()
	}
	ss, ok := c.sessions.lookup(time.Now(), sessionID(r))
	if !ok {
		return nil, errLoginRequired
	}
	return ss.client, nil
}

// admin returns a client of the console's own, for work no visitor asked
// for (the throughput sampler, the lag metrics). There is none when the
// listener requires SASL: the console does not read behind a visitor's
// back, and has no credentials of its own.
func (c *Console) admin() (*kadm.Client, error) {
	cl, err := c.kgoClient()
	if err != nil {
		return nil, err
	}
	return kadm.NewClient(cl), nil
}

// kgoClient is the console's own client, created once the broker listener
// is known. kgo connects lazily, so creating it never blocks.
func (c *Console) kgoClient() (*kgo.Client, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.closed:
		return nil, errors.New("the console is closed")
	case c.broker.Err != nil:
		return nil, &statusError{http.StatusServiceUnavailable, c.broker.Err}
	case c.broker.Addr == "":
		return nil, errNoBroker
	case c.broker.SASL:
		return nil, errLoginRequired
	case c.client != nil:
		return c.client, nil
	}
	cl, err := kgo.NewClient(clientOpts(c.broker)...)
	if err != nil {
		return nil, fmt.Errorf("client for %s: %w", c.broker.Addr, err)
	}
	c.client = cl
	return cl, nil
}

// clientOpts are the options of every client the console makes.
func clientOpts(b Broker, extra ...kgo.Opt) []kgo.Opt {
	opts := []kgo.Opt{
		kgo.SeedBrokers(b.Addr),
		kgo.ClientID("gregor-console"),
		// A console page waits for its answer: fail fast rather than
		// retry for the default 30s when a broker is away.
		kgo.RetryTimeout(5 * time.Second),
		kgo.DialTimeout(dialTimeout),
		// kadm answers from metadata up to this old: a page must show a
		// topic created a moment ago, even right after the throughput
		// sampler listed every partition (the default is 5s).
		kgo.MetadataMinAge(100 * time.Millisecond),
		// The console produces one test record at a time, to the
		// partition it chose (actions.go): no producer id to ask for (nor
		// the IDEMPOTENT_WRITE a visitor may lack), no batching.
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.DisableIdempotentWrite(),
		// A record as large as an action's body may carry: the topic's
		// max.message.bytes is the broker's to enforce, not franz-go's
		// 1 MB default.
		kgo.ProducerBatchMaxBytes(maxActionBody),
	}
	if b.TLS != nil {
		opts = append(opts, kgo.Dialer(tlsDialer(b)))
	}
	return append(opts, extra...)
}

// tlsDialer dials brokers with TLS as kgo.DialTLSConfig does, except that
// the seed's certificate is checked against b.ServerName.
func tlsDialer(b Broker) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		cfg := b.TLS.Clone()
		if cfg.ServerName == "" {
			host, _, err := net.SplitHostPort(addr)
			if err != nil {
				return nil, err
			}
			cfg.ServerName = host
			if addr == b.Addr && b.ServerName != "" {
				cfg.ServerName = b.ServerName
			}
		}
		d := &tls.Dialer{NetDialer: &net.Dialer{Timeout: dialTimeout}, Config: cfg}
		return d.DialContext(ctx, network, addr)
	}
}
