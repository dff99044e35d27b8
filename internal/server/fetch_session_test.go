package server

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/fetchsession"
)

// sentFetch is what a client's fetch request said of its session.
type sentFetch struct {
	sessionID  int32
	epoch      int32
	partitions int
	forgotten  int
}

// fetchRecorder records the fetch requests a franz-go client writes, read
// off its connections (a kgo.Dialer).
type fetchRecorder struct {
	mu      sync.Mutex
	fetches []sentFetch
}

func (fr *fetchRecorder) dial(ctx context.Context, network, host string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, network, host)
	if err != nil {
		return nil, err
	}
	return &recordingConn{Conn: c, fr: fr}, nil
}

func (fr *fetchRecorder) snapshot() []sentFetch {
	fr.mu.Lock()
	defer fr.mu.Unlock()
	return append([]sentFetch(nil), fr.fetches...)
}

type recordingConn struct {
	net.Conn
	fr  *fetchRecorder
	buf []byte
}

func (c *recordingConn) Write(p []byte) (int, error) {
	c.buf = append(c.buf, p...)
	for len(c.buf) >= 4 {
		size := int(binary.BigEndian.Uint32(c.buf))
		if len(c.buf) < 4+size {
			break
		}
		c.fr.parse(c.buf[4 : 4+size])
		c.buf = c.buf[4+size:]
	}
	return c.Conn.Write(p)
}

// parse records a request frame if it is a Fetch.
func (fr *fetchRecorder) parse(frame []byte) {
	r := kbin.Reader{Src: frame}
	key, version := r.Int16(), r.Int16()
	r.Int32() // correlation id
	r.NullableString()
	if key != 1 {
		return
	}
	req := kmsg.NewPtrFetchRequest()
	req.Version = version
	if req.IsFlexible() {
		for n := r.Uvarint(); n > 0; n-- { // header tags
			r.Uvarint()
			r.Span(int(r.Uvarint()))
		}
	}
	if err := req.ReadFrom(r.Src); err != nil {
		return
	}
	f := sentFetch{sessionID: req.SessionID, epoch: req.SessionEpoch}
	for _, t := range req.Topics {
		f.partitions += len(t.Partitions)
	}
	for _, t := range req.ForgottenTopics {
		f.forgotten += len(t.Partitions)
	}
	fr.mu.Lock()
	fr.fetches = append(fr.fetches, f)
	fr.mu.Unlock()
}

// produceTo writes one record to each of the given partitions of topic.
func produceTo(t *testing.T, ctx context.Context, cl *kgo.Client, topic string, value string, partitions ...int32) {
	t.Helper()
	for _, p := range partitions {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: p, Value: []byte(value)}).FirstErr(); err != nil {
			t.Fatalf("produce to %s-%d: %v", topic, p, err)
		}
	}
}

// consumeN polls until n records arrived.
func consumeN(t *testing.T, ctx context.Context, cl *kgo.Client, n int) []*kgo.Record {
	t.Helper()
	var got []*kgo.Record
	for len(got) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records: %v", len(got), n, ctx.Err())
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s-%d: %v", topic, p, err) })
		got = append(got, fs.Records()...)
	}
	return got
}

// TestFetchSessionsFranzGo: franz-go opens a session and then names only
// the partitions whose position moved; the broker keeps the session with
// every partition, and answers records of any of them.
func TestFetchSessionsFranzGo(t *testing.T) {
	ts := startServer(t, t.TempDir(), nil)
	ctx := ctxT(t)
	const topic, partitions = "sessions", 16
	if _, err := ts.admin().CreateTopic(ctx, partitions, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	prod := ts.client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	all := make([]int32, partitions)
	for i := range all {
		all[i] = int32(i)
	}
	produceTo(t, ctx, prod, topic, "first", all...)

	var rec fetchRecorder
	cons := ts.client(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.Dialer(rec.dial), kgo.FetchMaxWait(200*time.Millisecond))
	consumeN(t, ctx, cons, partitions)
	for round := range 5 {
		produceTo(t, ctx, prod, topic, fmt.Sprintf("round-%d", round), int32(round))
		consumeN(t, ctx, cons, 1)
	}

	// One full fetch names all partitions; the incremental ones name those
	// whose position moved: all after the first records, then at most the
	// one partition of each round.
	fetches := rec.snapshot()
	var full, small int
	for _, f := range fetches {
		switch {
		case f.epoch == fetchsession.InitialEpoch:
			full++
		case f.sessionID > 0 && f.epoch > 0:
			if f.partitions <= 1 {
				small++
			}
		default:
			t.Errorf("fetch outside a session: %+v", f)
		}
	}
	if full != 1 || small < 3 {
		t.Fatalf("%d full fetches and %d incremental ones naming at most one partition, want 1 and at least 3: %+v", full, small, fetches)
	}
	if st := ts.srv.fetchSessions.Stats(); st.Sessions != 1 || st.Partitions != partitions {
		t.Fatalf("cache %+v, want one session of %d partitions", st, partitions)
	}
	_, text := scrape(t, ts, "/metrics")
	for series, want := range map[string]float64{
		"kafka_server_fetchsessioncache_numincrementalfetchsessions":            1,
		"kafka_server_fetchsessioncache_numincrementalfetchpartitionscached":    partitions,
		"kafka_server_fetchsessioncache_incrementalfetchsessionevictions_total": 0,
	} {
		if got := sample(text, series); got != want {
			t.Errorf("%s = %v, want %v", series, got, want)
		}
	}
}

// TestFetchSessionsWire drives a session with raw requests: only changed
// partitions come back, forgotten ones leave the session, and wrong ids or
// epochs get Kafka's top-level errors.
func TestFetchSessionsWire(t *testing.T) {
	ts := startServer(t, t.TempDir(), nil)
	ctx := ctxT(t)
	const topic = "wire"
	created, err := ts.admin().CreateTopic(ctx, 3, 1, nil, topic)
	if err != nil {
		t.Fatal(err)
	}
	cl := ts.client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	broker := cl.Broker(int(ts.srv.cfg.NodeID))

	fetch := func(id, epoch int32, parts map[int32]int64, forget []int32) *kmsg.FetchResponse {
		t.Helper()
		req := kmsg.NewPtrFetchRequest()
		// franz-go sends the highest version both sides know: topics by
		// id.
		req.SessionID, req.SessionEpoch = id, epoch
		req.MaxWaitMillis, req.MinBytes = 0, 0
		if len(parts) > 0 {
			rt := kmsg.NewFetchRequestTopic()
			rt.TopicID = created.ID
			for p, off := range parts {
				rp := kmsg.NewFetchRequestTopicPartition()
				rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = p, off, 1<<20
				rt.Partitions = append(rt.Partitions, rp)
			}
			req.Topics = append(req.Topics, rt)
		}
		if len(forget) > 0 {
			ft := kmsg.NewFetchRequestForgottenTopic()
			ft.TopicID, ft.Partitions = created.ID, forget
			req.ForgottenTopics = append(req.ForgottenTopics, ft)
		}
		resp, err := req.RequestWith(ctx, broker)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	answered := func(resp *kmsg.FetchResponse) map[int32]int {
		got := map[int32]int{}
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				got[rp.Partition] = len(rp.RecordBatches)
			}
		}
		return got
	}

	resp := fetch(0, fetchsession.InitialEpoch, map[int32]int64{0: 0, 1: 0, 2: 0}, nil)
	id := resp.SessionID
	if resp.ErrorCode != 0 || id <= 0 || len(answered(resp)) != 3 {
		t.Fatalf("full fetch: error %d session %d partitions %v", resp.ErrorCode, id, answered(resp))
	}
	// Nothing changed.
	if resp = fetch(id, 1, nil, nil); resp.ErrorCode != 0 || resp.SessionID != id || len(resp.Topics) != 0 {
		t.Fatalf("idle incremental fetch: error %d session %d topics %+v", resp.ErrorCode, resp.SessionID, resp.Topics)
	}
	// A record on partition 1: only it comes back, with it.
	produceTo(t, ctx, cl, topic, "x", 1)
	got := answered(fetch(id, 2, nil, nil))
	if len(got) != 1 || got[1] == 0 {
		t.Fatalf("after a produce to partition 1: %v", got)
	}
	// Moving partition 1's position past it: nothing to say.
	if got := answered(fetch(id, 3, map[int32]int64{1: 1}, nil)); len(got) != 0 {
		t.Fatalf("after moving partition 1: %v", got)
	}
	// Forgetting partition 0 and 2: a record on partition 0 is not sent.
	produceTo(t, ctx, cl, topic, "y", 0)
	if got := answered(fetch(id, 4, nil, []int32{0, 2})); len(got) != 0 {
		t.Fatalf("after forgetting 0 and 2: %v", got)
	}
	if st := ts.srv.fetchSessions.Stats(); st.Partitions != 1 {
		t.Fatalf("cache %+v, want 1 partition", st)
	}

	// Wrong epoch, unknown session: top-level errors, no partitions.
	resp = fetch(id, 9, nil, nil)
	if resp.ErrorCode != kerr.InvalidFetchSessionEpoch.Code || resp.SessionID != 0 || len(resp.Topics) != 0 {
		t.Fatalf("wrong epoch: error %d session %d", resp.ErrorCode, resp.SessionID)
	}
	resp = fetch(id+1, 1, nil, nil)
	if resp.ErrorCode != kerr.FetchSessionIDNotFound.Code || resp.SessionID != 0 {
		t.Fatalf("unknown session: error %d session %d", resp.ErrorCode, resp.SessionID)
	}
	// Closing the session with a sessionless full fetch.
	resp = fetch(id, fetchsession.FinalEpoch, map[int32]int64{0: 0}, nil)
	if resp.ErrorCode != 0 || resp.SessionID != 0 || answered(resp)[0] == 0 {
		t.Fatalf("sessionless fetch: error %d session %d %v", resp.ErrorCode, resp.SessionID, answered(resp))
	}
	if st := ts.srv.fetchSessions.Stats(); st.Sessions != 0 {
		t.Fatalf("cache %+v after closing", st)
	}
}

// TestFetchSessionEviction: with one slot and sessions evictable after a
// millisecond, two consumers take the slot from each other; one told its
// session is gone (FETCH_SESSION_ID_NOT_FOUND) starts over with a full
// fetch, and neither misses a record.
func TestFetchSessionEviction(t *testing.T) {
	ts := startServerWith(t, t.TempDir(), nil, func(s *Server) {
		s.fetchSessions = fetchsession.New(1, time.Millisecond)
	})
	ctx := ctxT(t)
	adm := ts.admin()
	for _, topic := range []string{"evict-a", "evict-b"} {
		if _, err := adm.CreateTopic(ctx, 4, 1, nil, topic); err != nil {
			t.Fatal(err)
		}
	}
	prod := ts.client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	var recA, recB fetchRecorder
	consumer := func(topic string, rec *fetchRecorder) *kgo.Client {
		return ts.client(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.Dialer(rec.dial), kgo.FetchMaxWait(50*time.Millisecond))
	}
	a, b := consumer("evict-a", &recA), consumer("evict-b", &recB)

	// Rounds until a consumer was evicted and started over, each round
	// read whole by both.
	deadline := time.Now().Add(20 * time.Second)
	for round := 0; ; round++ {
		for _, topic := range []string{"evict-a", "evict-b"} {
			produceTo(t, ctx, prod, topic, fmt.Sprintf("%d", round), 0, 1, 2, 3)
		}
		for _, c := range []*kgo.Client{a, b} {
			for _, r := range consumeN(t, ctx, c, 4) {
				if string(r.Value) != fmt.Sprintf("%d", round) {
					t.Fatalf("round %d: got %s-%d@%d = %q", round, r.Topic, r.Partition, r.Offset, r.Value)
				}
			}
		}
		// A consumer whose full fetch finds no room (the other's session
		// was used within the millisecond) goes on without sessions, as
		// franz-go does: one restart of either is what must be seen.
		if round >= 2 && (restartedAfterEviction(recA.snapshot()) || restartedAfterEviction(recB.snapshot())) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %d rounds: cache %+v; a sent %+v; b sent %+v", round, ts.srv.fetchSessions.Stats(), recA.snapshot(), recB.snapshot())
		}
	}
	_, text := scrape(t, ts, "/metrics")
	if got := sample(text, "kafka_server_fetchsessioncache_incrementalfetchsessionevictions_total"); got < 1 {
		t.Fatalf("evictions metric %v, want at least 1", got)
	}
}

// restartedAfterEviction reports a client that fetched in a session and
// then opened a new one with a full fetch.
func restartedAfterEviction(fs []sentFetch) bool {
	inSession := false
	for _, f := range fs {
		if f.epoch > 0 {
			inSession = true
		} else if inSession && f.epoch == fetchsession.InitialEpoch {
			return true
		}
	}
	return false
}
