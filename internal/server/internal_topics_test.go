package server

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/config"
)

// lockedBuffer is a log sink that several goroutines write.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestInternalTopicsOnSingleNode: the zero-config single node (broker and
// controller, the quorum's only voter) can never have the 3 brokers that
// offsets.topic.replication.factor and
// transaction.state.log.replication.factor ask by default: it creates
// __consumer_offsets and __transaction_state with one replica (and
// min.insync.replicas 1), and warns once per topic, naming the key.
func TestInternalTopicsOnSingleNode(t *testing.T) {
	cfg, _, err := config.Load(map[string]string{
		"listeners":                            "PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"controller.quorum.voters":             "1@127.0.0.1:0",
		"log.dirs":                             t.TempDir(),
		"gregor.http.listen":                   "127.0.0.1:0",
		"offsets.topic.num.partitions":         "3",
		"transaction.state.log.num.partitions": "3",
	})
	if err != nil {
		t.Fatal(err)
	}
	logs := &lockedBuffer{}
	srv, err := New(cfg, slog.New(slog.NewTextHandler(logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	ts := &testServer{t: t, srv: srv}
	t.Cleanup(ts.stop)
	ctx := ctxT(t)
	cl := ts.client()

	// Several clients asking at once: one creation, one warning.
	for _, keyType := range []int8{0, 1} {
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				req := kmsg.NewPtrFindCoordinatorRequest()
				req.CoordinatorType, req.CoordinatorKey = keyType, "k"
				for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
					resp, err := req.RequestWith(ctx, cl)
					if err == nil && resp.ErrorCode == 0 {
						return
					}
					if time.Now().After(deadline) {
						t.Errorf("no coordinator for key type %d: %v %v", keyType, err, resp)
						return
					}
				}
			}()
		}
		wg.Wait()
	}
	if t.Failed() {
		t.FailNow()
	}

	adm := kadm.NewClient(cl)
	md, err := adm.Metadata(ctx, "__consumer_offsets", "__transaction_state")
	if err != nil {
		t.Fatal(err)
	}
	for _, topic := range []string{"__consumer_offsets", "__transaction_state"} {
		td := md.Topics[topic]
		if td.Err != nil || len(td.Partitions) != 3 {
			t.Fatalf("%s: %v, %d partitions", topic, td.Err, len(td.Partitions))
		}
		for _, p := range td.Partitions {
			if len(p.Replicas) != 1 {
				t.Errorf("%s-%d: replicas %v, want one", topic, p.Partition, p.Replicas)
			}
		}
	}
	rc, err := adm.DescribeTopicConfigs(ctx, "__transaction_state")
	if err != nil {
		t.Fatal(err)
	}
	v, err := rc.On("__transaction_state", nil)
	if err != nil {
		t.Fatal(err)
	}
	minISR := "unset"
	for _, c := range v.Configs {
		if c.Key == "min.insync.replicas" {
			minISR = c.MaybeValue()
		}
	}
	if minISR != "1" {
		t.Errorf("__transaction_state min.insync.replicas = %s, want 1", minISR)
	}

	out := logs.String()
	for _, want := range []string{
		"__consumer_offsets created with replication factor 1, not offsets.topic.replication.factor=3",
		"__transaction_state created with replication factor 1, not transaction.state.log.replication.factor=3, and min.insync.replicas 1, not transaction.state.log.min.isr=2",
	} {
		if n := strings.Count(out, want); n != 1 {
			t.Errorf("%d warnings %q, want one; log:\n%s", n, want, out)
		}
	}
}
