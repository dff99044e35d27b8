package txnmarker

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/goleak"

	"gregor/internal/coordinator/txn"
	"gregor/internal/metadata"
	"gregor/internal/network"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeLeader answers WriteTxnMarkers with scripted error codes: each
// partition fails with its codes in turn, then succeeds.
type fakeLeader struct {
	mu       sync.Mutex
	script   map[string][]int16 // "topic/partition" -> codes to answer first
	requests int
	markers  int // markers (producer entries) received
}

func (f *fakeLeader) VersionRange(key int16) (int16, int16, bool) {
	return 0, 2, key == 27
}

func (f *fakeLeader) Handle(_ context.Context, req *network.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.WriteTxnMarkersRequest)
	resp := r.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests++
	for _, m := range r.Markers {
		f.markers++
		rm := kmsg.NewWriteTxnMarkersResponseMarker()
		rm.ProducerID = m.ProducerID
		for _, t := range m.Topics {
			rt := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
				rp.Partition = p
				key := t.Topic + "/" + string(rune('0'+p))
				if codes := f.script[key]; len(codes) > 0 {
					rp.ErrorCode = codes[0]
					f.script[key] = codes[1:]
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			rm.Topics = append(rm.Topics, rt)
		}
		resp.Markers = append(resp.Markers, rm)
	}
	return resp, nil
}

func startLeader(t *testing.T, f *fakeLeader) *metadata.Image {
	t.Helper()
	srv := network.NewServer(network.Config{Listeners: []network.ListenerConfig{{Name: "PLAINTEXT", Host: "127.0.0.1"}}}, f)
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Shutdown(context.Background()) })
	addr := srv.Addr("PLAINTEXT").(*net.TCPAddr)
	img := metadata.EmptyImage()
	img.Brokers[2] = &metadata.BrokerRegistration{ID: 2, Listeners: []metadata.Endpoint{{Name: "PLAINTEXT", Host: "127.0.0.1", Port: addr.Port}}}
	img.Topics = metadata.NewTopicsImage(metadata.NewTopic("out", [16]byte{1}, map[int32]*metadata.Partition{
		0: {Leader: 2, Replicas: []int32{2}}, 1: {Leader: 2, Replicas: []int32{2}},
	}))
	return img
}

type report struct {
	txnPartition int32
	id           string
	tp           txn.TopicPartition
}

func newSender(img *metadata.Image, done func(report) bool) *Sender {
	return New(Config{
		NodeID: 1, Listener: "PLAINTEXT", Image: func() *metadata.Image { return img }, Backoff: 10 * time.Millisecond,
		Done: func(_ context.Context, p int32, m txn.Markers, tp txn.TopicPartition) bool {
			return done(report{p, m.TransactionalID, tp})
		},
	})
}

func waitReports(t *testing.T, ch <-chan report, n int) []report {
	t.Helper()
	var got []report
	deadline := time.After(10 * time.Second)
	for len(got) < n {
		select {
		case r := <-ch:
			got = append(got, r)
		case <-deadline:
			t.Fatalf("got %d of %d reports: %v", len(got), n, got)
		}
	}
	return got
}

// TestSenderRetriesAndBatches: retriable errors are retried until the
// marker is written, a deleted topic counts as done, and markers of several
// transactions for one leader share requests.
func TestSenderRetriesAndBatches(t *testing.T) {
	f := &fakeLeader{script: map[string][]int16{
		"out/0": {kerr.NotLeaderForPartition.Code, kerr.NotEnoughReplicas.Code},
	}}
	img := startLeader(t, f)
	reports := make(chan report, 16)
	s := newSender(img, func(r report) bool { reports <- r; return true })
	s.Start()
	defer s.Close()

	s.Send(7, []txn.Markers{{TransactionalID: "a", ProducerID: 1, ProducerEpoch: 0, Commit: true, CoordinatorEpoch: 3,
		Partitions: []txn.TopicPartition{{Topic: "out", Partition: 0}, {Topic: "out", Partition: 1}, {Topic: "gone", Partition: 0}}}})
	s.Send(8, []txn.Markers{{TransactionalID: "b", ProducerID: 2, ProducerEpoch: 5, Commit: false, CoordinatorEpoch: 3,
		Partitions: []txn.TopicPartition{{Topic: "out", Partition: 1}}}})
	got := waitReports(t, reports, 4)
	seen := map[report]bool{}
	for _, r := range got {
		seen[r] = true
	}
	for _, want := range []report{
		{7, "a", txn.TopicPartition{Topic: "out", Partition: 0}},
		{7, "a", txn.TopicPartition{Topic: "out", Partition: 1}},
		{7, "a", txn.TopicPartition{Topic: "gone", Partition: 0}},
		{8, "b", txn.TopicPartition{Topic: "out", Partition: 1}},
	} {
		if !seen[want] {
			t.Errorf("missing report %v in %v", want, got)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	// out/0 failed twice: three requests carry it; the rest rode along.
	if f.requests > 4 || f.requests < 3 {
		t.Errorf("%d requests, want 3-4", f.requests)
	}
}

// TestSenderStopsOnFencing: a coordinator epoch or producer epoch refused by
// the leader stops that transaction's markers (a newer coordinator owns it).
func TestSenderStopsOnFencing(t *testing.T) {
	f := &fakeLeader{script: map[string][]int16{
		"out/0": {kerr.TransactionCoordinatorFenced.Code},
	}}
	img := startLeader(t, f)
	reports := make(chan report, 16)
	s := newSender(img, func(r report) bool { reports <- r; return true })
	s.Start()
	defer s.Close()
	s.Send(1, []txn.Markers{{TransactionalID: "fenced", ProducerID: 1, Partitions: []txn.TopicPartition{{Topic: "out", Partition: 0}}}})
	s.Send(1, []txn.Markers{{TransactionalID: "ok", ProducerID: 2, Partitions: []txn.TopicPartition{{Topic: "out", Partition: 1}}}})
	got := waitReports(t, reports, 1)
	if got[0].id != "ok" {
		t.Fatalf("report %v, want only the unfenced transaction", got[0])
	}
	// The fenced marker is never retried.
	deadline := time.Now().Add(200 * time.Millisecond)
	for time.Now().Before(deadline) {
		select {
		case r := <-reports:
			t.Fatalf("unexpected report %v", r)
		default:
		}
		s.mu.Lock()
		n := len(s.pending)
		s.mu.Unlock()
		if n != 0 {
			t.Fatalf("%d markers still queued", n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestSenderWaitsForLeader: a partition without a leader is retried once
// one is elected.
func TestSenderWaitsForLeader(t *testing.T) {
	f := &fakeLeader{script: map[string][]int16{}}
	base := startLeader(t, f)
	var mu sync.Mutex
	img := base
	offline := *base
	offline.Topics = metadata.NewTopicsImage(metadata.NewTopic("out", [16]byte{1}, map[int32]*metadata.Partition{0: {Leader: -1}}))
	img = &offline
	reports := make(chan report, 4)
	s := New(Config{
		NodeID: 1, Listener: "PLAINTEXT", Backoff: 10 * time.Millisecond,
		Image: func() *metadata.Image { mu.Lock(); defer mu.Unlock(); return img },
		Done: func(_ context.Context, p int32, m txn.Markers, tp txn.TopicPartition) bool {
			reports <- report{p, m.TransactionalID, tp}
			return true
		},
	})
	s.Start()
	defer s.Close()
	s.Send(1, []txn.Markers{{TransactionalID: "x", ProducerID: 1, Partitions: []txn.TopicPartition{{Topic: "out", Partition: 0}}}})
	select {
	case r := <-reports:
		t.Fatalf("marked %v without a leader", r)
	case <-time.After(100 * time.Millisecond):
	}
	mu.Lock()
	img = base
	mu.Unlock()
	waitReports(t, reports, 1)
}

// TestSenderDropsMovedCoordinator: markers of a __transaction_state
// partition this broker no longer leads are dropped, not retried forever
// (the new coordinator sends them when it loads the partition).
func TestSenderDropsMovedCoordinator(t *testing.T) {
	f := &fakeLeader{script: map[string][]int16{}}
	base := startLeader(t, f)
	img := *base
	img.Topics = metadata.NewTopicsImage(
		base.Topics.Topic("out"),
		metadata.NewTopic("state", [16]byte{2}, map[int32]*metadata.Partition{0: {Leader: 1}, 1: {Leader: 3}}),
	)
	reports := make(chan report, 4)
	s := New(Config{
		NodeID: 1, Listener: "PLAINTEXT", StateTopic: "state", Backoff: 10 * time.Millisecond,
		Image: func() *metadata.Image { return &img },
		Done: func(_ context.Context, p int32, m txn.Markers, tp txn.TopicPartition) bool {
			reports <- report{p, m.TransactionalID, tp}
			return true
		},
	})
	s.Start()
	defer s.Close()
	s.Send(1, []txn.Markers{{TransactionalID: "moved", ProducerID: 1, Partitions: []txn.TopicPartition{{Topic: "out", Partition: 0}}}})
	s.Send(0, []txn.Markers{{TransactionalID: "mine", ProducerID: 2, Partitions: []txn.TopicPartition{{Topic: "out", Partition: 1}}}})
	if got := waitReports(t, reports, 1); got[0].id != "mine" {
		t.Fatalf("report %v", got[0])
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.markers != 1 {
		t.Fatalf("%d markers sent, want only the owned transaction's", f.markers)
	}
}
