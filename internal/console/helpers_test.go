package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"gregor/internal/config"
	"gregor/internal/console"
	"gregor/internal/server"
)

// node is an in-process Gregor node (broker + controller) on free ports
// with the console on its HTTP listener.
type node struct {
	t        *testing.T
	srv      *server.Server
	shutdown func() error // once
}

// stop shuts the node down before the test ends.
func (n *node) stop() {
	n.t.Helper()
	if err := n.shutdown(); err != nil {
		n.t.Fatalf("shutdown: %v", err)
	}
}

func startNode(t *testing.T) *node {
	t.Helper()
	n, err := tryStartNode(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// tryStartNode starts a node with extra properties, returning the error
// of one that does not start.
func tryStartNode(t *testing.T, extra map[string]string) (*node, error) {
	t.Helper()
	props := map[string]string{
		"listeners":                        "PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"controller.quorum.voters":         "1@127.0.0.1:0",
		"log.dirs":                         t.TempDir(),
		"group.initial.rebalance.delay.ms": "0",
		"offsets.topic.num.partitions":     "3",
		"gregor.http.listen":               "127.0.0.1:0",
	}
	for k, v := range extra {
		props[k] = v
	}
	cfg, _, err := config.Load(props)
	if err != nil {
		return nil, err
	}
	logger := slog.New(slog.DiscardHandler)
	if testing.Verbose() {
		logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	srv, err := server.New(cfg, logger)
	if err != nil {
		return nil, err
	}
	var once sync.Once
	var shutdownErr error
	shutdown := func() error {
		once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			shutdownErr = srv.Shutdown(ctx)
		})
		return shutdownErr
	}
	if err := srv.Start(context.Background()); err != nil {
		_ = shutdown() // stops what did start; its errors repeat err
		return nil, err
	}
	t.Cleanup(func() {
		if err := shutdown(); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	return &node{t: t, srv: srv, shutdown: shutdown}, nil
}

func (n *node) url(path string) string { return "http://" + n.srv.HTTPAddr().String() + path }

func (n *node) client(opts ...kgo.Opt) *kgo.Client {
	n.t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(n.srv.Addr("PLAINTEXT").String())}, opts...)...)
	if err != nil {
		n.t.Fatal(err)
	}
	n.t.Cleanup(cl.Close)
	return cl
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// seed creates topic with 3 partitions, produces records 0..9 to
// partition 0 (keys k0..k9; value of offset 7 is binary), and commits
// offset committed on partition 0 for group.
func seed(t *testing.T, n *node, topic, group string, committed int64) {
	t.Helper()
	ctx := ctxT(t)
	cl := n.client(kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 3, 1, nil, topic); err != nil {
		t.Fatalf("create topic: %v", err)
	}
	var recs []*kgo.Record
	for i := range 10 {
		v := []byte("value-" + string(rune('0'+i)))
		if i == 7 {
			v = []byte{0x00, 0xff, 0x10}
		}
		recs = append(recs, &kgo.Record{Key: []byte("k" + string(rune('0'+i))), Value: v, Partition: 0,
			Headers: []kgo.RecordHeader{{Key: "h", Value: []byte("x")}}})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	offsets := kadm.Offsets{}
	offsets.Add(kadm.Offset{Topic: topic, Partition: 0, At: committed, LeaderEpoch: -1})
	resp, err := adm.CommitOffsets(ctx, group, offsets)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("commit offsets: %v", err)
	}
}

// pageJSON is a page of a list API (?q=&sort=&order=&offset=&limit=).
type pageJSON[T any] struct {
	Total  int    `json:"total"`
	Offset int    `json:"offset"`
	Limit  int    `json:"limit"`
	Sort   string `json:"sort"`
	Order  string `json:"order"`
	Items  []T    `json:"items"`
}

// brokerJSON is /api/brokers/{id}.
type brokerJSON struct {
	ID           int32 `json:"id"`
	Fenced       bool  `json:"fenced"`
	Controller   bool  `json:"controller"`
	ControllerID int32 `json:"controllerId"`
	Partitions   pageJSON[struct {
		Topic     string `json:"topic"`
		Partition int32  `json:"partition"`
		Role      string `json:"role"`
		InSync    bool   `json:"inSync"`
		Size      int64  `json:"size"`
	}] `json:"partitions"`
	LogDirs []struct {
		Path       string `json:"path"`
		Error      string `json:"error"`
		Partitions int    `json:"partitions"`
		Size       int64  `json:"size"`
	} `json:"logDirs"`
	LogDirsError string `json:"logDirsError"`
	Configs      []struct {
		Name, Value, Source string
	} `json:"configs"`
	ConfigsError string `json:"configsError"`
}

// getJSON fetches url, checks the status and decodes the body into v.
func getJSON(t *testing.T, url string, status int, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != status {
		t.Fatalf("GET %s: status %d, want %d: %s", url, resp.StatusCode, status, body)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("GET %s: Content-Type %q", url, ct)
	}
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("GET %s: %v: %s", url, err, body)
	}
}

// The users of saslCluster, and the message Kafka refuses a wrong PLAIN or
// SCRAM password with.
const (
	scramUser, scramPassword = "alice", "alice-s3cret"
	plainUser, plainPassword = "bob", "bob-s3cret"
	kafkaAuthFailure         = "Authentication failed: Invalid username or password"
)

// saslCluster is franz-go's fake cluster requiring SASL, with topic
// "secured" holding records 0..4 in partition 0. A wrong PLAIN password is
// answered as Kafka answers it, SASL_AUTHENTICATION_FAILED with a message
// (kfake itself closes the connection), so that the console's login form
// can be checked against what a broker says.
func saslCluster(t *testing.T) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.EnableSASL(),
		kfake.Superuser("SCRAM-SHA-256", scramUser, scramPassword),
		kfake.Superuser("PLAIN", plainUser, plainPassword),
		kfake.SeedTopics(1, "secured"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	c.ControlKey(int16(kmsg.SASLAuthenticate), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		req := kreq.(*kmsg.SASLAuthenticateRequest)
		parts := strings.Split(string(req.SASLAuthBytes), "\x00")
		if len(parts) != 3 || parts[2] == plainPassword {
			return nil, nil, false
		}
		resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
		resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
		msg := kafkaAuthFailure
		resp.ErrorMessage = &msg
		return resp, nil, true
	})
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...),
		kgo.SASL(scram.Auth{User: scramUser, Pass: scramPassword}.AsSha256Mechanism()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := range 5 {
		r := &kgo.Record{Topic: "secured", Partition: 0, Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte(fmt.Sprintf("secret-value-%d", i))}
		if err := cl.ProduceSync(ctxT(t), r).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
	return c
}

// saslConsole serves a console (over plain HTTP) whose broker listener is
// c's, requiring SASL.
func saslConsole(t *testing.T, c *kfake.Cluster) *httptest.Server {
	t.Helper()
	con := console.New(console.Config{})
	t.Cleanup(con.Close)
	con.SetBroker(console.Broker{Addr: c.ListenAddrs()[0], Listener: "SASL_PLAINTEXT", SASL: true,
		Mechanisms: []string{"PLAIN", "SCRAM-SHA-256"}})
	mux := http.NewServeMux()
	con.Mount(mux)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// waitUntil polls cond until it holds, failing the test after 30 s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
