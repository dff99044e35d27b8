package replica

import (
	"slices"
	"sync"
	"testing"

	"gregor/internal/log"
	"gregor/internal/metadata"
)

// fakeQuota is a replication throttle whose state the test sets.
type fakeQuota struct {
	mu        sync.Mutex
	throttled bool
	exceeded  bool
	recorded  int
}

func (q *fakeQuota) IsThrottled(string, int32) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.throttled
}

func (q *fakeQuota) IsQuotaExceeded() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.exceeded
}

func (q *fakeQuota) Record(bytes int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.recorded += bytes
}

func (q *fakeQuota) set(throttled, exceeded bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.throttled, q.exceeded = throttled, exceeded
}

// TestLeaderThrottle is Kafka's shouldLeaderThrottle on the leader: a
// follower outside the ISR of a throttled partition gets no records while
// the leader throttle is over its bound (its fetch offset still counts),
// and records again, recorded against the throttle, once it is not; an
// unthrottled partition is not recorded.
func TestLeaderThrottle(t *testing.T) {
	m := newTestManager(t)
	defer m.Close()
	q := &fakeQuota{}
	ctl := &fakeController{}
	m.StartReplication(ReplicationConfig{AlterPartition: ctl.alterPartition, BrokerEpoch: func() int64 { return 3 }, LeaderQuota: q})
	part := partRecord(topicID(1), 0, testNode, 2)
	part.ISR = []int32{testNode}
	feed(t, metadata.EmptyImage(), []*Manager{m},
		&metadata.RegisterBrokerRecord{RecordVersion: metadata.RegisterBrokerRecordVersion, BrokerID: 2, BrokerEpoch: 7,
			IncarnationID: [16]byte{2}, EndPoints: []metadata.BrokerEndpoint{}, Features: []metadata.BrokerFeature{}},
		&metadata.TopicRecord{Name: "t", TopicID: topicID(1)}, part)
	if res := m.Append("t", 0, 1, plainBatch(t, 3)); res.Err != nil {
		t.Fatal(res.Err)
	}
	fetch := func(offset int64) FetchResult {
		t.Helper()
		r, _ := m.ReadFileRangeAsReplica("t", 0, ReplicaFetch{ReplicaID: 2, BrokerEpoch: 7, CurrentLeaderEpoch: -1,
			FetchOffset: offset, LastFetchedEpoch: -1, MaxBytes: 1 << 20, MinOneBatch: true})
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		return r
	}

	q.set(true, true)
	if r := fetch(0); r.File.Size != 0 {
		t.Fatalf("throttled and over the bound: read %d bytes", r.File.Size)
	}
	p, _ := m.Hosted(log.TopicPartition{Topic: "t", Partition: 0})
	if st, ok := p.Follower(2); !ok || st.LogEndOffset != 0 {
		t.Fatalf("the throttled fetch's offset was not recorded: %+v %v", st, ok)
	}
	if q.recorded != 0 {
		t.Fatalf("recorded %d bytes of an empty answer", q.recorded)
	}

	q.set(true, false)
	r := fetch(0)
	if r.File.Size == 0 || q.recorded != int(r.File.Size) {
		t.Fatalf("under the bound: read %d bytes, recorded %d", r.File.Size, q.recorded)
	}

	q.set(false, true)
	before := q.recorded
	if r := fetch(0); r.File.Size == 0 || q.recorded != before {
		t.Fatalf("unthrottled partition: read %d bytes, recorded %d more", r.File.Size, q.recorded-before)
	}

	// Caught up, the follower joins the ISR: an ISR member is never
	// throttled (it would hold the high watermark back).
	fetch(3)
	waitFor(t, "follower 2 in the ISR", func() bool { return slices.Contains(p.ISR(), 2) })
	if res := m.Append("t", 0, 1, plainBatch(t, 2)); res.Err != nil {
		t.Fatal(res.Err)
	}
	q.set(true, true)
	if r := fetch(3); r.File.Size == 0 {
		t.Fatal("an ISR member was throttled")
	}
}

// TestFollowerThrottle is Kafka's shouldFollowerThrottle: a throttled
// partition is left out of the follower's fetch while the follower
// throttle is over its bound, unless its last answer showed it caught up
// with the leader's high watermark.
func TestFollowerThrottle(t *testing.T) {
	m := newTestManager(t)
	defer m.Close()
	q := &fakeQuota{}
	m.StartReplication(ReplicationConfig{AlterPartition: (&fakeController{}).alterPartition, FollowerQuota: q})
	feed(t, metadata.EmptyImage(), []*Manager{m},
		&metadata.TopicRecord{Name: "t", TopicID: topicID(1)}, partRecord(topicID(1), 0, testNode, testNode))
	p, ok := m.Hosted(log.TopicPartition{Topic: "t", Partition: 0})
	if !ok {
		t.Fatal("partition not hosted")
	}
	f := &fetcher{m: m, lags: map[log.TopicPartition]int64{}}
	for _, tc := range []struct {
		name                string
		throttled, exceeded bool
		lag                 int64 // -1: no answer yet
		want                bool
	}{
		{"not throttled", false, true, -1, false},
		{"under the bound", true, false, -1, false},
		{"over the bound, lag unknown", true, true, -1, true},
		{"over the bound, behind", true, true, 5, true},
		{"over the bound, caught up", true, true, 0, false},
	} {
		q.set(tc.throttled, tc.exceeded)
		f.lags = map[log.TopicPartition]int64{}
		if tc.lag >= 0 {
			f.lags[p.TopicPartition] = tc.lag
		}
		if got := f.followerThrottled(p); got != tc.want {
			t.Errorf("%s: throttled = %v, want %v", tc.name, got, tc.want)
		}
	}
}
