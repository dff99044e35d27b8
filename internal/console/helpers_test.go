package console_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"gregor/internal/config"
	"gregor/internal/server"
)

// node is an in-process Gregor node (broker + controller) on free ports
// with the console on its HTTP listener.
type node struct {
	t   *testing.T
	srv *server.Server
}

func startNode(t *testing.T) *node {
	t.Helper()
	cfg, _, err := config.Load(map[string]string{
		"listeners":                        "PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"controller.quorum.voters":         "1@127.0.0.1:0",
		"log.dirs":                         t.TempDir(),
		"group.initial.rebalance.delay.ms": "0",
		"offsets.topic.num.partitions":     "3",
		"gregor.http.listen":               "127.0.0.1:0",
	})
	if err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.DiscardHandler)
	if testing.Verbose() {
		logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	srv, err := server.New(cfg, logger)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	return &node{t: t, srv: srv}
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
