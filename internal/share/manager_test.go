package share

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.uber.org/goleak"

	"gregor/internal/config"
	"gregor/internal/metadata"
	"gregor/internal/replica"
	"gregor/internal/share/sharetest"
	"gregor/internal/sharestate"
)

var testTopicID = sharetest.TopicID

var testTP = TopicPartition{Topic: "t", TopicID: testTopicID, Partition: 0}
var testKey = sharestate.Key{GroupID: "g", TopicID: testTopicID, Partition: 0}

// clock is a settable clock for the Manager.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func newTestManager(c *sharetest.Cluster, p sharestate.Persister, cfg Config, clk *clock) *Manager {
	return New(Options{Replica: c.Replica, Persister: p, Defaults: cfg, Now: clk.Now, Logger: slog.New(slog.DiscardHandler)})
}

func batchesIn(t *testing.T, records []byte) [][2]int64 {
	t.Helper()
	bs, _, err := logBatches(records, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	var out [][2]int64
	for _, b := range bs {
		out = append(out, [2]int64{b.FirstOffset, b.LastOffset})
	}
	return out
}

// TestManagerFetchAcknowledgePersists: the start offset of a share-partition
// never consumed comes from share.auto.offset.reset and is persisted;
// records are acquired by whole batches from the real log; an
// acknowledgement is persisted before it is answered, and a failed write
// leaves the state as persisted.
func TestManagerFetchAcknowledgePersists(t *testing.T) {
	c := sharetest.NewCluster(t)
	c.Produce(t, 3, -1, 0) // 0-2
	c.Produce(t, 2, -1, 0) // 3-4
	c.Produce(t, 5, -1, 0) // 5-9
	p := sharetest.NewPersister()
	if err := p.Initialize(context.Background(), testKey, 1, -1); err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.AutoOffsetReset = "earliest"
	clk := &clock{now: time.UnixMilli(1_000_000)}
	m := newTestManager(c, p, cfg, clk)
	ctx := context.Background()

	f, err := m.Fetch(ctx, "g", "a", testTP, 4, 1<<20, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Acquired) != 1 || f.Acquired[0] != (AcquiredRange{0, 4, 1}) {
		t.Fatalf("acquired %+v, want 0-4 (whole batches)", f.Acquired)
	}
	if got := batchesIn(t, f.Records); len(got) != 2 || got[0] != [2]int64{0, 2} || got[1] != [2]int64{3, 4} {
		t.Fatalf("records hold batches %v", got)
	}
	if st, _ := p.State(testKey); st.StartOffset != 0 || st.LeaderEpoch != 0 {
		t.Fatalf("persisted %+v, want start offset 0 from earliest", st)
	}

	if err := m.Acknowledge(ctx, "g", "a", testTP, []AckBatch{{0, 2, []AckType{AckAccept}}}); err != nil {
		t.Fatal(err)
	}
	if st, _ := p.State(testKey); st.StartOffset != 3 {
		t.Fatalf("persisted %+v after accepting 0-2, want start offset 3", st)
	}

	// A failed write: the client gets the error as Kafka maps it, and
	// nothing changed.
	for _, c := range []struct{ fail, want error }{
		{kerr.NotCoordinator, kerr.CoordinatorNotAvailable},
		{kerr.InvalidRequest, kerr.UnknownServerError},
	} {
		p.Fail(c.fail)
		if err := m.Acknowledge(ctx, "g", "a", testTP, []AckBatch{{3, 4, []AckType{AckAccept}}}); !errors.Is(err, c.want) {
			t.Fatalf("acknowledge with a persister failing with %v: %v, want %v", c.fail, err, c.want)
		}
	}
	p.Fail(nil)
	if f, err := m.Fetch(ctx, "g", "b", testTP, 10, 1<<20, false); err != nil || len(f.Acquired) != 1 || f.Acquired[0] != (AcquiredRange{5, 9, 1}) {
		t.Fatalf("b's fetch: %+v, %v; want only 5-9 (3-4 still a's)", f.Acquired, err)
	}
	if err := m.Acknowledge(ctx, "g", "a", testTP, []AckBatch{{3, 4, []AckType{AckAccept}}}); err != nil {
		t.Fatalf("acknowledge again once the persister works: %v", err)
	}
	if err := m.Acknowledge(ctx, "g", "a", testTP, []AckBatch{{5, 5, []AckType{AckAccept}}}); !errors.Is(err, kerr.InvalidRecordState) {
		t.Fatalf("acknowledging b's record as a: %v", err)
	}

	// b leaves: its records are released, persisted with their delivery
	// count, and redelivered.
	if err := m.ReleaseMember(ctx, "g", "b"); err != nil {
		t.Fatal(err)
	}
	st, _ := p.State(testKey)
	if st.StartOffset != 5 || len(st.Batches) != 1 || st.Batches[0] != (sharestate.Batch{FirstOffset: 5, LastOffset: 9, DeliveryState: sharestate.Available, DeliveryCount: 1}) {
		t.Fatalf("persisted %+v after b left", st)
	}
	if f, err := m.Fetch(ctx, "g", "a", testTP, 10, 1<<20, false); err != nil || len(f.Acquired) != 1 || f.Acquired[0] != (AcquiredRange{5, 9, 2}) {
		t.Fatalf("redelivery: %+v, %v", f.Acquired, err)
	}

	// A fenced write (the state was reset, or another leader wrote):
	// NOT_LEADER_OR_FOLLOWER, and the state is read again when next used;
	// as after a write to state that is gone.
	p.Fail(kerr.FencedStateEpoch)
	if err := m.Acknowledge(ctx, "g", "a", testTP, []AckBatch{{5, 9, []AckType{AckAccept}}}); !errors.Is(err, kerr.NotLeaderForPartition) {
		t.Fatalf("fenced write: %v", err)
	}
	p.Fail(nil)
	if f, err := m.Fetch(ctx, "g", "b", testTP, 10, 1<<20, false); err != nil || len(f.Acquired) != 1 || f.Acquired[0] != (AcquiredRange{5, 9, 2}) {
		t.Fatalf("after the fenced write, reloaded: %+v, %v", f.Acquired, err)
	}

	// A share-partition never initialized is refused with the persister's
	// error, and latest (the default) starts at the log end.
	other := TopicPartition{Topic: "t", TopicID: testTopicID, Partition: 0}
	if _, err := m.Fetch(ctx, "h", "a", other, 10, 1<<20, false); !errors.Is(err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("uninitialized share-partition: %v", err)
	}
	hKey := sharestate.Key{GroupID: "h", TopicID: testTopicID, Partition: 0}
	if err := p.Initialize(ctx, hKey, 1, -1); err != nil {
		t.Fatal(err)
	}
	m2 := newTestManager(c, p, DefaultConfig(), clk)
	if f, err := m2.Fetch(ctx, "h", "a", other, 10, 1<<20, false); err != nil || len(f.Acquired) != 0 {
		t.Fatalf("fetch at latest: %+v, %v", f, err)
	}
	if st, _ := p.State(hKey); st.StartOffset != 10 {
		t.Fatalf("latest start offset %d, want 10", st.StartOffset)
	}
}

// TestManagerLockTimeout: Run releases timed-out locks, persisted, and
// wakes the group's waiting fetches; the next delivery counts 2; at the
// delivery limit the records are archived.
func TestManagerLockTimeout(t *testing.T) {
	defer goleak.VerifyNone(t)
	c := sharetest.NewCluster(t)
	c.Produce(t, 3, -1, 0)
	p := sharetest.NewPersister()
	if err := p.Initialize(context.Background(), testKey, 1, 0); err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.RecordLockDuration = 100 * time.Millisecond
	cfg.DeliveryCountLimit = 2
	clk := &clock{now: time.UnixMilli(1_000_000)}
	m := newTestManager(c, p, cfg, clk)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		m.Run(ctx)
	}()
	defer func() {
		cancel()
		wg.Wait()
	}()

	for delivery := int16(1); delivery <= 2; delivery++ {
		changed := m.Changed("g")
		f, err := m.Fetch(ctx, "g", "a", testTP, 10, 1<<20, false)
		if err != nil || len(f.Acquired) != 1 || f.Acquired[0] != (AcquiredRange{0, 2, delivery}) {
			t.Fatalf("delivery %d: %+v, %v", delivery, f.Acquired, err)
		}
		clk.Add(100 * time.Millisecond)
		select {
		case <-changed:
		case <-time.After(30 * time.Second):
			t.Fatalf("delivery %d: no wake-up after the lock timed out", delivery)
		}
	}
	st, _ := p.State(testKey)
	if st.StartOffset != 3 || len(st.Batches) != 0 {
		t.Fatalf("persisted %+v after two timeouts at limit 2, want start offset 3", st)
	}
	if f, err := m.Fetch(ctx, "g", "a", testTP, 10, 1<<20, false); err != nil || len(f.Acquired) != 0 {
		t.Fatalf("fetch after archiving: %+v, %v", f.Acquired, err)
	}
}

// TestManagerReadCommitted: under read_committed, an aborted transaction's
// records and the markers are archived, never delivered, and reads stop at
// the last stable offset.
func TestManagerReadCommitted(t *testing.T) {
	c := sharetest.NewCluster(t)
	c.Produce(t, 3, 5, 0) // 0-2, aborted below
	ctx := context.Background()
	if err := c.Replica.WriteTxnMarker(ctx, "t", 0, replica.TxnMarker{ProducerID: 5, Commit: false}); err != nil { // 3
		t.Fatal(err)
	}
	c.Produce(t, 2, -1, 0) // 4-5
	c.Produce(t, 2, 6, 0)  // 6-7, open: above the LSO
	p := sharetest.NewPersister()
	if err := p.Initialize(ctx, testKey, 1, 0); err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.ReadCommitted = true
	m := newTestManager(c, p, cfg, &clock{now: time.UnixMilli(1_000_000)})
	f, err := m.Fetch(ctx, "g", "a", testTP, 100, 1<<20, false)
	if err != nil || len(f.Acquired) != 1 || f.Acquired[0] != (AcquiredRange{4, 5, 1}) {
		t.Fatalf("read_committed acquired %+v, %v; want 4-5", f.Acquired, err)
	}
	if got := batchesIn(t, f.Records); len(got) != 1 || got[0] != [2]int64{4, 5} {
		t.Fatalf("records hold batches %v, want only 4-5", got)
	}
	// read_uncommitted delivers the aborted records but never the marker.
	if err := p.Initialize(ctx, sharestate.Key{GroupID: "u", TopicID: testTopicID}, 1, 0); err != nil {
		t.Fatal(err)
	}
	m2 := newTestManager(c, p, DefaultConfig(), &clock{now: time.UnixMilli(1_000_000)})
	f, err = m2.Fetch(ctx, "u", "a", testTP, 100, 1<<20, false)
	if err != nil || len(f.Acquired) != 2 || f.Acquired[0] != (AcquiredRange{0, 2, 1}) || f.Acquired[1] != (AcquiredRange{4, 7, 1}) {
		t.Fatalf("read_uncommitted acquired %+v, %v; want 0-2 and 4-7", f.Acquired, err)
	}
}

// TestManagerLeadershipMoved: a share-partition whose partition another
// broker now leads answers NOT_LEADER_OR_FOLLOWER and is dropped; records
// it had handed out are the new leader's to redeliver (the state persisted
// before holds no lock).
func TestManagerLeadershipMoved(t *testing.T) {
	c := sharetest.NewCluster(t)
	c.Produce(t, 3, -1, 0)
	p := sharetest.NewPersister()
	ctx := context.Background()
	if err := p.Initialize(ctx, testKey, 1, 0); err != nil {
		t.Fatal(err)
	}
	m := newTestManager(c, p, DefaultConfig(), &clock{now: time.UnixMilli(1_000_000)})
	if f, err := m.Fetch(ctx, "g", "a", testTP, 10, 1<<20, false); err != nil || len(f.Acquired) != 1 {
		t.Fatalf("fetch: %+v, %v", f, err)
	}
	ch := metadata.NewPartitionChangeRecord(testTopicID, 0)
	ch.Leader, ch.ISR = 2, []int32{2}
	c.Feed(t, &metadata.RegisterBrokerRecord{BrokerID: 2}, ch)
	if _, err := m.Fetch(ctx, "g", "a", testTP, 10, 1<<20, false); !errors.Is(err, kerr.NotLeaderForPartition) {
		t.Fatalf("fetch after leadership moved: %v", err)
	}
	if err := m.Acknowledge(ctx, "g", "a", testTP, []AckBatch{{0, 2, []AckType{AckAccept}}}); !errors.Is(err, kerr.NotLeaderForPartition) {
		t.Fatalf("acknowledge after leadership moved: %v", err)
	}
	m.mu.Lock()
	n := len(m.entries)
	m.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d share-partitions kept after leadership moved", n)
	}
}

// TestManagerGroupDeleted: a deleted group's share-partitions and sessions
// go; the group made again reads its new state.
func TestManagerGroupDeleted(t *testing.T) {
	c := sharetest.NewCluster(t)
	c.Produce(t, 3, -1, 0)
	p := sharetest.NewPersister()
	ctx := context.Background()
	if err := p.Initialize(ctx, testKey, 1, 0); err != nil {
		t.Fatal(err)
	}
	m := newTestManager(c, p, DefaultConfig(), &clock{now: time.UnixMilli(1_000_000)})
	if err := m.Sessions().Open(SessionKey{Group: "g", Member: "a"}, nil, time.Now(), nil); err != nil {
		t.Fatal(err)
	}
	if f, err := m.Fetch(ctx, "g", "a", testTP, 10, 1<<20, false); err != nil || len(f.Acquired) != 1 {
		t.Fatalf("fetch: %+v, %v", f.Acquired, err)
	}
	if err := p.Delete(ctx, testKey); err != nil {
		t.Fatal(err)
	}
	m.GroupDeleted("g")
	if m.Sessions().Len() != 0 {
		t.Fatal("the deleted group's session is kept")
	}
	if _, err := m.Fetch(ctx, "g", "a", testTP, 10, 1<<20, false); !errors.Is(err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("fetch of the deleted group: %v", err)
	}
	if err := p.Initialize(ctx, testKey, 2, 2); err != nil {
		t.Fatal(err)
	}
	if f, err := m.Fetch(ctx, "g", "a", testTP, 10, 1<<20, false); err != nil || len(f.Acquired) != 1 || f.Acquired[0] != (AcquiredRange{2, 2, 1}) {
		t.Fatalf("fetch of the group made again from offset 2: %+v, %v", f.Acquired, err)
	}
}

// TestManagerResetByDuration: share.auto.offset.reset=by_duration starts at
// the first record no older than the duration, or at the end when none is.
func TestManagerResetByDuration(t *testing.T) {
	c := sharetest.NewCluster(t)
	c.Produce(t, 3, -1, 0) // stamped now
	p := sharetest.NewPersister()
	ctx := context.Background()
	cfg := DefaultConfig()
	cfg.AutoOffsetReset, cfg.AutoOffsetResetDuration = "by_duration:pt1h", time.Hour
	for i, c2 := range []struct {
		now  time.Time
		want int64
	}{
		{time.Now(), 0},                    // the records are younger than an hour
		{time.Now().Add(2 * time.Hour), 3}, // none is: the end
	} {
		group := fmt.Sprintf("d%d", i)
		key := sharestate.Key{GroupID: group, TopicID: testTopicID}
		if err := p.Initialize(ctx, key, 1, -1); err != nil {
			t.Fatal(err)
		}
		m := newTestManager(c, p, cfg, &clock{now: c2.now})
		if _, err := m.Fetch(ctx, group, "a", testTP, 10, 1<<20, false); err != nil {
			t.Fatal(err)
		}
		if st, _ := p.State(key); st.StartOffset != c2.want {
			t.Fatalf("clock at %v: start offset %d, want %d", c2.now, st.StartOffset, c2.want)
		}
	}
}

// TestConfigOf: a share group's effective settings, as the group's
// configs over the broker's group.share.* defaults give them.
func TestConfigOf(t *testing.T) {
	b, _, err := config.Load(map[string]string{"group.share.delivery.count.limit": "3"})
	if err != nil {
		t.Fatal(err)
	}
	got := ConfigOf(b.ShareGroup(map[string]string{"share.record.lock.duration.ms": "20000", "share.auto.offset.reset": "by_duration:PT1H", "share.isolation.level": "read_committed"}))
	want := Config{RecordLockDuration: 20 * time.Second, DeliveryCountLimit: 3, PartitionMaxRecordLocks: 2000,
		AutoOffsetReset: "by_duration:pt1h", AutoOffsetResetDuration: time.Hour, ReadCommitted: true}
	if got != want {
		t.Fatalf("ConfigOf = %+v, want %+v", got, want)
	}
}

// TestManagerMemberLeft: the coordinator's hook drops the member's share
// session and, in Run, releases its records (persisted), waking fetches;
// so does a client closing its share session's connection.
func TestManagerMemberLeft(t *testing.T) {
	defer goleak.VerifyNone(t)
	c := sharetest.NewCluster(t)
	c.Produce(t, 4, -1, 0)
	p := sharetest.NewPersister()
	if err := p.Initialize(context.Background(), testKey, 1, 0); err != nil {
		t.Fatal(err)
	}
	m := newTestManager(c, p, DefaultConfig(), &clock{now: time.UnixMilli(1_000_000)})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		m.Run(ctx)
	}()
	defer func() {
		cancel()
		wg.Wait()
	}()
	if err := m.Sessions().Open(SessionKey{Group: "g", Member: "a"}, nil, time.Now(), nil); err != nil {
		t.Fatal(err)
	}
	if f, err := m.Fetch(ctx, "g", "a", testTP, 10, 1<<20, false); err != nil || len(f.Acquired) != 1 {
		t.Fatalf("fetch: %+v, %v", f.Acquired, err)
	}
	changed := m.Changed("g")
	m.MemberLeft("g", "a")
	if m.Sessions().Len() != 0 {
		t.Fatal("the session of a member that left is kept")
	}
	select {
	case <-changed:
	case <-time.After(30 * time.Second):
		t.Fatal("no wake-up after the member left")
	}
	st, _ := p.State(testKey)
	if len(st.Batches) != 1 || st.Batches[0] != (sharestate.Batch{FirstOffset: 0, LastOffset: 3, DeliveryState: sharestate.Available, DeliveryCount: 1}) {
		t.Fatalf("persisted %+v after the member left", st)
	}
	if f, err := m.Fetch(ctx, "g", "b", testTP, 10, 1<<20, false); err != nil || len(f.Acquired) != 1 || f.Acquired[0] != (AcquiredRange{0, 3, 2}) {
		t.Fatalf("b: %+v, %v", f.Acquired, err)
	}

	// b's client closes its connection: its session goes, and its records.
	peerClosed := make(chan struct{})
	if err := m.Sessions().Open(SessionKey{Group: "g", Member: "b"}, []SessionPartition{{TopicID: testTopicID}}, time.Now(), peerClosed); err != nil {
		t.Fatal(err)
	}
	changed = m.Changed("g")
	close(peerClosed)
	select {
	case <-changed:
	case <-time.After(30 * time.Second):
		t.Fatal("no wake-up after b's connection closed")
	}
	if m.Sessions().Len() != 0 {
		t.Fatal("the session of a closed connection is kept")
	}
	if f, err := m.Fetch(ctx, "g", "c", testTP, 10, 1<<20, false); err != nil || len(f.Acquired) != 1 || f.Acquired[0] != (AcquiredRange{0, 3, 3}) {
		t.Fatalf("c after b's connection closed: %+v, %v", f.Acquired, err)
	}
}

// TestManagerConcurrentMembers: members fetching and accepting at once
// each get records no other member holds, and every record is accepted
// exactly once.
func TestManagerConcurrentMembers(t *testing.T) {
	c := sharetest.NewCluster(t)
	for i := 0; i < 40; i++ {
		c.Produce(t, 5, -1, 0) // 0-199
	}
	p := sharetest.NewPersister()
	ctx := context.Background()
	if err := p.Initialize(ctx, testKey, 1, 0); err != nil {
		t.Fatal(err)
	}
	m := New(Options{Replica: c.Replica, Persister: p, Logger: slog.New(slog.DiscardHandler)})
	var mu sync.Mutex
	accepted := map[int64]string{}
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	deadline := time.Now().Add(60 * time.Second)
	for _, member := range []string{"a", "b", "c", "d"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				changed := m.Changed("g")
				f, err := m.Fetch(ctx, "g", member, testTP, 7, 1<<20, false)
				if err != nil {
					errs <- err
					return
				}
				if len(f.Acquired) == 0 {
					mu.Lock()
					done := len(accepted) == 200
					mu.Unlock()
					if done {
						return
					}
					// The others hold the rest: wait for an acknowledgement.
					select {
					case <-changed:
					case <-time.After(time.Second):
					}
					continue
				}
				var acks []AckBatch
				mu.Lock()
				for _, a := range f.Acquired {
					for o := a.FirstOffset; o <= a.LastOffset; o++ {
						if other, ok := accepted[o]; ok {
							mu.Unlock()
							errs <- fmt.Errorf("offset %d acquired by %s, accepted by %s before", o, member, other)
							return
						}
						accepted[o] = member
					}
					acks = append(acks, AckBatch{a.FirstOffset, a.LastOffset, []AckType{AckAccept}})
				}
				mu.Unlock()
				if err := m.Acknowledge(ctx, "g", member, testTP, acks); err != nil {
					errs <- err
					return
				}
			}
			errs <- fmt.Errorf("%s: not all records accepted in time", member)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if st, _ := p.State(testKey); st.StartOffset != 200 || len(accepted) != 200 {
		t.Fatalf("persisted start offset %d, %d records accepted; want 200", st.StartOffset, len(accepted))
	}
}

// fakeMeters records what the Manager meters.
type fakeMeters struct {
	mu       sync.Mutex
	acks     map[string]int64
	timeouts map[string]int64 // "group/topic/partition"
	loads    []time.Duration
	locks    []string // "group/topic/partition held percent"
}

func (f *fakeMeters) PartitionLoaded(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.loads = append(f.loads, d)
}

func (f *fakeMeters) FetchLockReleased(group, topic string, partition int32, held time.Duration, percent float64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.locks = append(f.locks, fmt.Sprintf("%s/%s/%d %v %.0f%%", group, topic, partition, held, percent))
}

func (f *fakeMeters) RecordsAcknowledged(ackType string, n int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.acks[ackType] += n
}

func (f *fakeMeters) ShareGroupDeleted(group string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for k := range f.timeouts {
		if strings.HasPrefix(k, group+"/") {
			delete(f.timeouts, k)
		}
	}
}

func (f *fakeMeters) LocksTimedOut(group, topic string, partition int32, n int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.timeouts[fmt.Sprintf("%s/%s/%d", group, topic, partition)] += n
}

// TestManagerMeters: acknowledgements are metered by type and record
// count, lock timeouts by share-partition, and Stats reports SPSO and the
// in-flight records and batches.
func TestManagerMeters(t *testing.T) {
	c := sharetest.NewCluster(t)
	c.Produce(t, 6, -1, 0)
	p := sharetest.NewPersister()
	if err := p.Initialize(context.Background(), testKey, 1, 0); err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.RecordLockDuration = 100 * time.Millisecond
	clk := &clock{now: time.UnixMilli(1_000_000)}
	meters := &fakeMeters{acks: map[string]int64{}, timeouts: map[string]int64{}}
	m := New(Options{Replica: c.Replica, Persister: p, Defaults: cfg, Now: clk.Now, Logger: slog.New(slog.DiscardHandler), Meters: meters})
	ctx := context.Background()

	if f, err := m.Fetch(ctx, "g", "a", testTP, 10, 1<<20, false); err != nil || len(f.Acquired) != 1 || f.Acquired[0] != (AcquiredRange{0, 5, 1}) {
		t.Fatalf("fetch: %+v, %v", f.Acquired, err)
	}
	want := PartitionStats{Group: "g", Topic: "t", Partition: 0, StartOffset: 0, InFlightRecords: 6, InFlightBatches: 1}
	if st := m.Stats(); len(st) != 1 || st[0] != want {
		t.Fatalf("stats after acquiring = %+v, want %+v", st, want)
	}
	acks := []AckBatch{{0, 1, []AckType{AckAccept}}, {2, 3, []AckType{AckReject, AckRelease}}}
	if err := m.Acknowledge(ctx, "g", "a", testTP, acks); err != nil {
		t.Fatal(err)
	}
	if want := map[string]int64{"Accept": 2, "Reject": 1, "Release": 1}; fmt.Sprint(meters.acks) != fmt.Sprint(want) {
		t.Errorf("acknowledged = %v, want %v", meters.acks, want)
	}
	// SPSO moved past 0..2; 3 is available again, 4..5 still acquired.
	want = PartitionStats{Group: "g", Topic: "t", Partition: 0, StartOffset: 3, InFlightRecords: 3, InFlightBatches: 2}
	if st := m.Stats(); len(st) != 1 || st[0] != want {
		t.Fatalf("stats after acknowledging = %+v, want %+v", st, want)
	}
	// A failed acknowledgement (records a does not hold) meters nothing.
	if err := m.Acknowledge(ctx, "g", "b", testTP, []AckBatch{{4, 4, []AckType{AckAccept}}}); !errors.Is(err, kerr.InvalidRecordState) {
		t.Fatalf("acknowledge by another member: %v", err)
	}
	if meters.acks["Accept"] != 2 {
		t.Errorf("a failed acknowledgement was metered: %v", meters.acks)
	}

	// The locks of 4..5 end; the next fetch times them out and takes all three.
	clk.Add(100 * time.Millisecond)
	if f, err := m.Fetch(ctx, "g", "b", testTP, 10, 1<<20, false); err != nil || len(f.Acquired) == 0 {
		t.Fatalf("fetch after the timeout: %+v, %v", f.Acquired, err)
	}
	if got := meters.timeouts["g/t/0"]; got != 2 {
		t.Errorf("lock timeouts = %v, want 2 records of g/t/0", meters.timeouts)
	}
	m.GroupDeleted("g")
	if len(meters.timeouts) != 0 || len(m.Stats()) != 0 {
		t.Errorf("after the group's deletion: lock timeouts %v, stats %+v", meters.timeouts, m.Stats())
	}
}

// slowReads is a persister whose reads take 50 ms of the test's clock.
type slowReads struct {
	sharestate.Persister
	clk *clock
}

func (s slowReads) Read(ctx context.Context, k sharestate.Key, leaderEpoch int32) (sharestate.State, error) {
	s.clk.Add(50 * time.Millisecond)
	return s.Persister.Read(ctx, k, leaderEpoch)
}

// TestManagerLoadAndFetchLockMeters: a share-partition's load is metered
// with the time its state read took (PartitionLoadTimeMs), and each fetch's
// hold of the share-partition with its time and its share of the time
// since the previous fetch let go (FetchLockTimeMs, FetchLockRatio).
func TestManagerLoadAndFetchLockMeters(t *testing.T) {
	c := sharetest.NewCluster(t)
	c.Produce(t, 6, -1, 0)
	p := sharetest.NewPersister()
	if err := p.Initialize(context.Background(), testKey, 1, 0); err != nil {
		t.Fatal(err)
	}
	clk := &clock{now: time.UnixMilli(1_000_000)}
	meters := &fakeMeters{acks: map[string]int64{}, timeouts: map[string]int64{}}
	m := New(Options{Replica: c.Replica, Persister: slowReads{p, clk}, Defaults: DefaultConfig(), Now: clk.Now,
		Logger: slog.New(slog.DiscardHandler), Meters: meters})
	ctx := context.Background()
	// The first fetch loads the share-partition: 50 ms, all of it under
	// the lock, which was free since the entry was made.
	if _, err := m.Fetch(ctx, "g", "a", testTP, 2, 1<<20, true); err != nil {
		t.Fatal(err)
	}
	// 150 ms later a fetch holds it for no time: 0% of those 150 ms.
	clk.Add(150 * time.Millisecond)
	if _, err := m.Fetch(ctx, "g", "a", testTP, 2, 1<<20, true); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(meters.loads) != "[50ms]" {
		t.Errorf("loads %v, want [50ms]", meters.loads)
	}
	if want := "[g/t/0 50ms 100% g/t/0 0s 0%]"; fmt.Sprint(meters.locks) != want {
		t.Errorf("fetch lock holds %v, want %s", meters.locks, want)
	}
}
