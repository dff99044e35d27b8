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
	return loadedWith(t, Config{Topic: testTopic, NodeID: 1, Replica: m, Logger: slog.New(slog.DiscardHandler),
		NewShard: func(int32) Shard { return shard }}, img)
}

func loadedWith(t *testing.T, cfg Config, img *metadata.Image) *Runtime {
	t.Helper()
	r := New(cfg)
	r.Publish(nil, img)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if parts, loading := r.Partitions(); len(parts) > 0 && !loading {
			return r
		}
		if time.Now().After(deadline) {
			r.Close()
			t.Fatal("shard not loaded")
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
	m, img := twoReplicaLeader(t)
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
	r := loadedWith(t, Config{Topic: testTopic, NodeID: 1, Replica: m, Logger: slog.New(slog.DiscardHandler),
		NewShard: func(int32) Shard { return shard }, WriteTimeout: 100 * time.Millisecond}, img)
	defer r.Close()
	if got, want := shard.got(), []string{"replay a=a", "replay b=b"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("loaded %q, want %q", got, want)
	}
	// What was loaded is not committed yet: nothing is answered from it.
	if err := r.Do(context.Background(), 0, func(Shard, *Writer) {}); !errors.Is(err, kerr.CoordinatorNotAvailable) {
		t.Fatalf("Do before the follower fetched: %v, want COORDINATOR_NOT_AVAILABLE", err)
	}
	followerFetch(t, m, 2, 2)
	if err := r.Do(context.Background(), 0, func(Shard, *Writer) {}); err != nil {
		t.Fatalf("Do once the high watermark passed the loaded records: %v", err)
	}
}

// twoReplicaLeader is a replica manager leading partition 0 of testTopic
// with replicas 1 (itself) and 2, both in the ISR; 2 fetches only when a
// test says so (followerFetch).
func twoReplicaLeader(t *testing.T) (*replica.Manager, *metadata.Image) {
	t.Helper()
	logs, err := log.NewManager(log.ManagerConfig{Dirs: []string{t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logs.Close() })
	m := replica.New(replica.Config{NodeID: 1, Logger: slog.New(slog.DiscardHandler)}, logs)
	t.Cleanup(m.Close)
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
	return m, img
}

// moveLeadership publishes a new leader (2) for partition 0: this broker
// becomes a follower.
func moveLeadership(t *testing.T, m *replica.Manager, img *metadata.Image) *metadata.Image {
	t.Helper()
	d := metadata.NewDelta(img)
	t2 := img.Topics.Topic(testTopic)
	rec := &metadata.PartitionChangeRecord{PartitionID: 0, TopicID: t2.ID, Leader: 2, ISR: []int32{2}}
	if err := d.ReplayBatch(metadata.Batch{BaseOffset: 10, LastOffset: 10, Epoch: 1, Records: []metadata.Record{rec}}); err != nil {
		t.Fatal(err)
	}
	next := d.Apply()
	m.Publish(d, next)
	return next
}

// TestWritesAnsweredOnlyOnceCommitted is the coordinator side of "nothing
// acknowledged is lost": Do does not return a write's answer while the
// follower in the ISR lacks it, the shard goroutine serves other operations
// meanwhile, AfterCommit callbacks run only after the commit, and a
// leadership change fails both instead of answering success.
func TestWritesAnsweredOnlyOnceCommitted(t *testing.T) {
	m, img := twoReplicaLeader(t)
	r := loadedWith(t, Config{Topic: testTopic, NodeID: 1, Replica: m, Logger: slog.New(slog.DiscardHandler),
		NewShard: func(int32) Shard { return &recorder{} }, WriteTimeout: time.Minute}, img)
	defer r.Close()
	ctx := context.Background()

	afterCommit := make(chan error, 2)
	answered := make(chan error, 1)
	wrote := make(chan struct{})
	go func() {
		answered <- r.Do(ctx, 0, func(_ Shard, w *Writer) {
			if err := w.Write([]Record{{Key: []byte("k"), Value: []byte("v1")}}); err != nil {
				t.Error(err)
			}
			w.AfterCommit(func(err error) { afterCommit <- err })
			close(wrote)
		})
	}()
	<-wrote
	// The shard goroutine is free while the write waits for the ISR: a
	// second operation runs (its answer waits too: it may read the write).
	ran := make(chan struct{})
	second := make(chan error, 1)
	go func() {
		second <- r.Do(ctx, 0, func(Shard, *Writer) { close(ran) })
	}()
	select {
	case <-ran:
	case <-time.After(10 * time.Second):
		t.Fatal("the shard goroutine did not run a second operation while a write waited")
	}
	select {
	case err := <-answered:
		t.Fatalf("write answered (%v) before the follower had it", err)
	case err := <-afterCommit:
		t.Fatalf("AfterCommit ran (%v) before the follower had the write", err)
	case err := <-second:
		t.Fatalf("an operation after the write answered (%v) before the write was committed", err)
	case <-time.After(300 * time.Millisecond):
	}
	followerFetch(t, m, 2, 1)
	for name, ch := range map[string]chan error{"write": answered, "second": second, "AfterCommit": afterCommit} {
		select {
		case err := <-ch:
			if err != nil {
				t.Fatalf("%s after the commit: %v", name, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s not answered after the commit", name)
		}
	}

	// A second write is appended, then leadership moves before any
	// follower fetches it: its answer and its callback fail.
	go func() {
		answered <- r.Do(ctx, 0, func(_ Shard, w *Writer) {
			if err := w.Write([]Record{{Key: []byte("k"), Value: []byte("v2")}}); err != nil {
				t.Error(err)
			}
			w.AfterCommit(func(err error) { afterCommit <- err })
		})
	}()
	part, err := m.Leader(testTopic, 0)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for part.Log().LogEndOffset() < 2 {
		if time.Now().After(deadline) {
			t.Fatal("second write not appended")
		}
		time.Sleep(time.Millisecond)
	}
	r.Publish(nil, moveLeadership(t, m, img))
	for name, ch := range map[string]chan error{"write": answered, "AfterCommit": afterCommit} {
		select {
		case err := <-ch:
			if !errors.Is(err, kerr.NotCoordinator) {
				t.Fatalf("%s after leadership moved: %v, want NOT_COORDINATOR", name, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s not answered after leadership moved", name)
		}
	}
}

// TestWriteTimesOut: a write the ISR does not take within the write timeout
// is answered COORDINATOR_NOT_AVAILABLE, never success.
func TestWriteTimesOut(t *testing.T) {
	m, img := twoReplicaLeader(t)
	r := loadedWith(t, Config{Topic: testTopic, NodeID: 1, Replica: m, Logger: slog.New(slog.DiscardHandler),
		NewShard: func(int32) Shard { return &recorder{} }, WriteTimeout: 50 * time.Millisecond}, img)
	defer r.Close()
	err := r.Do(context.Background(), 0, func(_ Shard, w *Writer) {
		if err := w.Write([]Record{{Key: []byte("k"), Value: []byte("v")}}); err != nil {
			t.Error(err)
		}
	})
	if !errors.Is(err, kerr.CoordinatorNotAvailable) {
		t.Fatalf("uncommitted write answered %v, want COORDINATOR_NOT_AVAILABLE", err)
	}
}

// followerFetch records a fetch of follower id at offset on the leader,
// which moves the high watermark to it.
func followerFetch(t *testing.T, m *replica.Manager, id int32, offset int64) {
	t.Helper()
	res, _ := m.ReadAsReplica(testTopic, 0, replica.ReplicaFetch{ReplicaID: id, BrokerEpoch: -1, CurrentLeaderEpoch: -1,
		FetchOffset: offset, LastFetchedEpoch: -1, MaxBytes: 1 << 20})
	if res.Err != nil {
		t.Fatalf("follower %d fetch at %d: %v", id, offset, res.Err)
	}
}
