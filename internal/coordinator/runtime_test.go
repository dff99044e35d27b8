package coordinator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.uber.org/goleak"

	"gregor/internal/log"
	"gregor/internal/metadata"
	"gregor/internal/record"
	"gregor/internal/replica"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const testTopic = "__consumer_offsets"

// recorder is a shard that notes what it is fed. plain hides its
// TransactionalShard methods (a shard without transactional state).
type recorder struct {
	mu     sync.Mutex
	events []string
}

func (r *recorder) note(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, fmt.Sprintf(format, args...))
}

func (r *recorder) got() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.events...)
}

func (r *recorder) Replay(_ time.Time, key, value []byte) error {
	r.note("replay %s=%s", key, value)
	return nil
}
func (r *recorder) ReplayTransactional(_ time.Time, producerID int64, producerEpoch int16, key, value []byte) error {
	r.note("txn %d/%d %s=%s", producerID, producerEpoch, key, value)
	return nil
}
func (r *recorder) ReplayEndTxn(producerID int64, commit bool) error {
	r.note("marker %d commit=%t", producerID, commit)
	return nil
}
func (r *recorder) Tick(time.Time, *Writer) {}
func (r *recorder) NextDeadline() time.Time { return time.Time{} }
func (r *recorder) Unload()                 {}

type plain struct{ r *recorder }

func (p plain) Replay(now time.Time, key, value []byte) error { return p.r.Replay(now, key, value) }
func (p plain) Tick(time.Time, *Writer)                       {}
func (p plain) NextDeadline() time.Time                       { return time.Time{} }
func (p plain) Unload()                                       {}

// testLeader is a replica manager leading one partition of testTopic.
func testLeader(t *testing.T) (*replica.Manager, *metadata.Image) {
	t.Helper()
	logs, err := log.NewManager(log.ManagerConfig{Dirs: []string{t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logs.Close() })
	m := replica.New(replica.Config{NodeID: 1, Logger: slog.New(slog.DiscardHandler)}, logs)
	id := [16]byte{1}
	d := metadata.NewDelta(metadata.EmptyImage())
	recs := []metadata.Record{
		&metadata.TopicRecord{Name: testTopic, TopicID: id},
		&metadata.PartitionRecord{RecordVersion: metadata.PartitionRecordVersion, PartitionID: 0, TopicID: id,
			Replicas: []int32{1}, ISR: []int32{1}, RemovingReplicas: []int32{}, AddingReplicas: []int32{},
			Leader: 1, Directories: make([][16]byte, 1)},
	}
	if err := d.ReplayBatch(metadata.Batch{BaseOffset: 0, LastOffset: int64(len(recs) - 1), Epoch: 1, Records: recs}); err != nil {
		t.Fatal(err)
	}
	img := d.Apply()
	m.Publish(d, img)
	return m, img
}

// loaded starts a runtime with one shard and waits until it has loaded.
func loaded(t *testing.T, m *replica.Manager, img *metadata.Image, shard Shard) *Runtime {
	t.Helper()
	r := New(Config{Topic: testTopic, NodeID: 1, Replica: m, Logger: slog.New(slog.DiscardHandler),
		NewShard: func(int32) Shard { return shard }})
	r.Publish(nil, img)
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := r.Do(context.Background(), 0, func(Shard, *Writer) {})
		if err == nil {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("shard not loaded: %v", err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestLoadReplaysTransactions writes plain and transactional batches and
// markers through a shard, then checks that a reload feeds a
// TransactionalShard the transactions and markers in the log's order, and a
// plain Shard every record with no marker.
func TestLoadReplaysTransactions(t *testing.T) {
	m, img := testLeader(t)
	live := &recorder{}
	r := loaded(t, m, img, live)
	ctx := context.Background()
	if err := r.Do(ctx, 0, func(_ Shard, w *Writer) {
		if err := w.Write([]Record{{Key: []byte("a"), Value: []byte("1")}}); err != nil {
			t.Errorf("write: %v", err)
		}
		if err := w.WriteTransactional(5, 0, []Record{{Key: []byte("b"), Value: []byte("2")}, {Key: []byte("c"), Value: []byte("3")}}); err != nil {
			t.Errorf("write transactional: %v", err)
		}
		if err := w.WriteTransactional(6, 2, []Record{{Key: []byte("d"), Value: []byte("4")}}); err != nil {
			t.Errorf("write transactional: %v", err)
		}
	}); err != nil {
		t.Fatal(err)
	}
	if err := r.CompleteTransaction(ctx, 0, replica.TxnMarker{ProducerID: 5, Commit: true}); err != nil {
		t.Fatalf("complete 5: %v", err)
	}
	if err := r.CompleteTransaction(ctx, 0, replica.TxnMarker{ProducerID: 6, ProducerEpoch: 2}); err != nil {
		t.Fatalf("complete 6: %v", err)
	}
	// A stale epoch is refused by the log and not applied.
	if err := r.CompleteTransaction(ctx, 0, replica.TxnMarker{ProducerID: 6, ProducerEpoch: 1}); err == nil {
		t.Fatal("marker of an older producer epoch was written")
	}
	if err := r.Do(ctx, 0, func(_ Shard, w *Writer) {
		if err := w.Write([]Record{{Key: []byte("e"), Value: []byte("5")}}); err != nil {
			t.Errorf("write: %v", err)
		}
	}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"marker 5 commit=true", "marker 6 commit=false"}; !reflect.DeepEqual(live.got(), want) {
		t.Errorf("live shard got %q, want %q", live.got(), want)
	}
	r.Close()

	reloaded := &recorder{}
	r = loaded(t, m, img, reloaded)
	r.Close()
	want := []string{"replay a=1", "txn 5/0 b=2", "txn 5/0 c=3", "txn 6/2 d=4", "marker 5 commit=true", "marker 6 commit=false", "replay e=5"}
	if got := reloaded.got(); !reflect.DeepEqual(got, want) {
		t.Errorf("reload fed\n%q\nwant\n%q", got, want)
	}

	p := &recorder{}
	r = loaded(t, m, img, plain{p})
	defer r.Close()
	want = []string{"replay a=1", "replay b=2", "replay c=3", "replay d=4", "replay e=5"}
	if got := p.got(); !reflect.DeepEqual(got, want) {
		t.Errorf("plain shard fed\n%q\nwant\n%q", got, want)
	}
	if err := r.CompleteTransaction(ctx, 0, replica.TxnMarker{ProducerID: 7, Commit: true}); err == nil {
		t.Error("a shard without transactional state completed a transaction")
	}
}

// TestCompleteTransactionNotLeader: no shard here, NOT_COORDINATOR (the
// handler answers NOT_LEADER_OR_FOLLOWER).
func TestCompleteTransactionNotLeader(t *testing.T) {
	m, img := testLeader(t)
	r := loaded(t, m, img, &recorder{})
	defer r.Close()
	err := r.CompleteTransaction(context.Background(), 3, replica.TxnMarker{ProducerID: 1, Commit: true})
	if !errors.Is(err, kerr.NotCoordinator) {
		t.Errorf("partition without a shard: %v", err)
	}
}

// TestLoadReadsToLogEnd: a shard loads what its partition's log holds up to
// the log end, also past a high watermark that lags it (a new leader's
// high watermark trails what the old leader committed until its followers
// fetch again).
func TestLoadReadsToLogEnd(t *testing.T) {
	logs, err := log.NewManager(log.ManagerConfig{Dirs: []string{t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logs.Close() })
	m := replica.New(replica.Config{NodeID: 1, Logger: slog.New(slog.DiscardHandler)}, logs)
	id := [16]byte{2}
	d := metadata.NewDelta(metadata.EmptyImage())
	recs := []metadata.Record{
		&metadata.TopicRecord{Name: testTopic, TopicID: id},
		&metadata.PartitionRecord{RecordVersion: metadata.PartitionRecordVersion, PartitionID: 0, TopicID: id,
			Replicas: []int32{1, 2}, ISR: []int32{1, 2}, RemovingReplicas: []int32{}, AddingReplicas: []int32{},
			Leader: 1, Directories: make([][16]byte, 2)},
	}
	if err := d.ReplayBatch(metadata.Batch{BaseOffset: 0, LastOffset: int64(len(recs) - 1), Epoch: 1, Records: recs}); err != nil {
		t.Fatal(err)
	}
	img := d.Apply()
	m.Publish(d, img)
	// Follower 2 never fetches: acks=1 appends stay above the high watermark.
	for _, kv := range []string{"a", "b"} {
		b := record.NewBuilder(record.BuilderOptions{ProducerID: record.NoProducerID, ProducerEpoch: record.NoProducerEpoch, BaseSequence: record.NoSequence})
		b.Append(time.Now().UnixMilli(), []byte(kv), []byte(kv), nil)
		batch, err := b.Build()
		if err != nil {
			t.Fatal(err)
		}
		if res := m.Append(testTopic, 0, 1, batch); res.Err != nil {
			t.Fatal(res.Err)
		}
	}
	part, err := m.Leader(testTopic, 0)
	if err != nil {
		t.Fatal(err)
	}
	if hw := part.HighWatermark(); hw != 0 {
		t.Fatalf("high watermark %d, want 0 (the follower has fetched nothing)", hw)
	}
	shard := &recorder{}
	r := loaded(t, m, img, shard)
	defer r.Close()
	if got, want := shard.got(), []string{"replay a=a", "replay b=b"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("loaded %q, want %q", got, want)
	}
}
