package fetchsession

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

var t0 = time.Unix(1_700_000_000, 0)

func part(topic string, p int32, offset int64) Partition {
	return Partition{Key: Key{Topic: topic, Partition: p}, Params: Params{FetchOffset: offset, MaxBytes: 1 << 20, CurrentLeaderEpoch: 0, LastFetchedEpoch: -1, LogStartOffset: -1}}
}

func idle(hw int64) Result {
	return Result{HighWatermark: hw, LastStableOffset: hw, LogStartOffset: 0, PreferredReadReplica: -1}
}

// open makes a session of the given partitions with a full fetch, each
// partition answered idle at high watermark 10.
func open(t *testing.T, c *Cache, follower bool, now time.Time, parts ...Partition) int32 {
	t.Helper()
	x := c.NewContext(Request{Epoch: InitialEpoch, Follower: follower, Partitions: parts}, now)
	if x.Kind != Full {
		t.Fatalf("kind %v, want Full", x.Kind)
	}
	res := make([]Result, len(parts))
	for i := range res {
		res[i] = idle(10)
	}
	a := x.Respond(res, now)
	if a.ErrorCode != 0 || len(a.Include) != len(parts) {
		t.Fatalf("full answer %+v", a)
	}
	return a.SessionID
}

func keys(ps []Partition) []Key {
	var ks []Key
	for _, p := range ps {
		ks = append(ks, p.Key)
	}
	return ks
}

func TestFullThenIncremental(t *testing.T) {
	c := New(10, DefaultEvictionAfter)
	a, b := part("a", 0, 5), part("b", 1, 7)
	id := open(t, c, false, t0, a, b)
	if id <= 0 {
		t.Fatalf("session id %d, want positive", id)
	}
	if s := c.Stats(); s.Sessions != 1 || s.Partitions != 2 {
		t.Fatalf("stats %+v", s)
	}

	// An incremental fetch that names nothing reads both partitions with
	// their cached parameters.
	x := c.NewContext(Request{SessionID: id, Epoch: 1}, t0.Add(time.Second))
	if x.Kind != Incremental || !slices.Equal(keys(x.Partitions), []Key{a.Key, b.Key}) || x.Partitions[1].FetchOffset != 7 {
		t.Fatalf("incremental context %+v", x)
	}
	// Nothing changed on a; b has records.
	bres := idle(10)
	bres.RecordBytes = 100
	ans := x.Respond([]Result{idle(10), bres}, t0.Add(time.Second))
	if ans.SessionID != id || ans.ErrorCode != 0 || !slices.Equal(ans.Include, []bool{false, true}) {
		t.Fatalf("answer %+v", ans)
	}

	// b returned records: it moves behind a. The next fetch moves b's
	// offset and a's high watermark changes.
	b2 := part("b", 1, 8)
	x = c.NewContext(Request{SessionID: id, Epoch: 2, Partitions: []Partition{b2}}, t0.Add(2*time.Second))
	if !slices.Equal(keys(x.Partitions), []Key{a.Key, b.Key}) || x.Partitions[1].FetchOffset != 8 {
		t.Fatalf("partitions %+v", x.Partitions)
	}
	ans = x.Respond([]Result{idle(11), idle(10)}, t0.Add(2*time.Second))
	if !slices.Equal(ans.Include, []bool{true, false}) {
		t.Fatalf("include %v, want a only", ans.Include)
	}
	// Same state again: nothing to send.
	x = c.NewContext(Request{SessionID: id, Epoch: 3}, t0.Add(3*time.Second))
	ans = x.Respond([]Result{idle(11), idle(10)}, t0.Add(3*time.Second))
	if !slices.Equal(ans.Include, []bool{false, false}) {
		t.Fatalf("include %v, want none", ans.Include)
	}
}

func TestChangedPartitionFields(t *testing.T) {
	base := idle(10)
	cases := []struct {
		name   string
		change func(*Result)
	}{
		{"high watermark", func(r *Result) { r.HighWatermark = 11 }},
		{"last stable offset", func(r *Result) { r.LastStableOffset = 9 }},
		{"log start offset", func(r *Result) { r.LogStartOffset = 3 }},
		{"records", func(r *Result) { r.RecordBytes = 1 }},
		{"error", func(r *Result) { r.ErrorCode = kerr.NotLeaderForPartition.Code }},
		{"preferred replica", func(r *Result) { r.PreferredReadReplica = 2 }},
		{"diverging epoch", func(r *Result) { r.DivergingEpoch = true }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := New(10, DefaultEvictionAfter)
			id := open(t, c, false, t0, part("a", 0, 0))
			x := c.NewContext(Request{SessionID: id, Epoch: 1}, t0)
			if a := x.Respond([]Result{base}, t0); a.Include[0] {
				t.Fatal("unchanged partition included")
			}
			r := base
			tc.change(&r)
			x = c.NewContext(Request{SessionID: id, Epoch: 2}, t0)
			if a := x.Respond([]Result{r}, t0); !a.Include[0] {
				t.Fatal("changed partition left out")
			}
		})
	}
}

func TestErrorIsSentAgainWhenItClears(t *testing.T) {
	c := New(10, DefaultEvictionAfter)
	id := open(t, c, false, t0, part("a", 0, 0))
	failed := idle(-1)
	failed.ErrorCode = kerr.NotLeaderForPartition.Code
	x := c.NewContext(Request{SessionID: id, Epoch: 1}, t0)
	x.Respond([]Result{failed}, t0)
	// Back to the state the session had before the error: sent, so the
	// client learns the error is gone.
	x = c.NewContext(Request{SessionID: id, Epoch: 2}, t0)
	if a := x.Respond([]Result{idle(10)}, t0); !a.Include[0] {
		t.Fatal("partition recovered from an error left out")
	}
}

func TestPreviewAndThrottledChangeNothing(t *testing.T) {
	c := New(10, DefaultEvictionAfter)
	id := open(t, c, false, t0, part("a", 0, 0))
	x := c.NewContext(Request{SessionID: id, Epoch: 1}, t0)
	if a := x.Preview([]Result{idle(12)}); !a.Include[0] {
		t.Fatal("preview left out a changed partition")
	}
	if a := x.Throttled(); a.SessionID != id || a.ErrorCode != 0 || a.Include != nil {
		t.Fatalf("throttled answer %+v", a)
	}
	// The throttled answer sent nothing: the next one sends the change.
	x = c.NewContext(Request{SessionID: id, Epoch: 2}, t0)
	if a := x.Respond([]Result{idle(12)}, t0); !a.Include[0] {
		t.Fatal("change hidden by a throttled answer")
	}
	// A throttled full fetch opens no session.
	x = c.NewContext(Request{Epoch: InitialEpoch, Partitions: []Partition{part("b", 0, 0)}}, t0)
	if a := x.Throttled(); a.SessionID != 0 {
		t.Fatalf("throttled full fetch got session %d", a.SessionID)
	}
	if n := c.Stats().Sessions; n != 1 {
		t.Fatalf("%d sessions, want 1", n)
	}
}

func TestSessionErrors(t *testing.T) {
	c := New(10, DefaultEvictionAfter)
	id := open(t, c, false, t0, part("a", 0, 0))
	for _, tc := range []struct {
		name string
		req  Request
		code int16
	}{
		{"unknown id", Request{SessionID: id + 1, Epoch: 1}, kerr.FetchSessionIDNotFound.Code},
		{"no id", Request{SessionID: 0, Epoch: 1}, kerr.FetchSessionIDNotFound.Code},
		{"epoch ahead", Request{SessionID: id, Epoch: 2}, kerr.InvalidFetchSessionEpoch.Code},
		{"topic ids", Request{SessionID: id, Epoch: 1, UsesTopicIDs: true}, kerr.FetchSessionTopicIDError.Code},
	} {
		x := c.NewContext(tc.req, t0)
		if x.Kind != SessionError || x.ErrorCode != tc.code {
			t.Errorf("%s: kind %v code %d, want error %d", tc.name, x.Kind, x.ErrorCode, tc.code)
		}
		if a := x.Respond(nil, t0); a.SessionID != 0 || a.ErrorCode != tc.code || a.Include != nil {
			t.Errorf("%s: answer %+v", tc.name, a)
		}
	}
	// The errors left the session as it was.
	x := c.NewContext(Request{SessionID: id, Epoch: 1}, t0)
	if x.Kind != Incremental {
		t.Fatalf("kind %v after errors", x.Kind)
	}
	// A duplicate of that request, after it moved the epoch on.
	dup := c.NewContext(Request{SessionID: id, Epoch: 1}, t0)
	if dup.ErrorCode != kerr.InvalidFetchSessionEpoch.Code {
		t.Fatalf("duplicate: code %d", dup.ErrorCode)
	}
	// A request whose successor was accepted before it answered: its
	// answer finds the epoch moved on and is refused; the successor's is
	// not.
	y := c.NewContext(Request{SessionID: id, Epoch: 2}, t0)
	z := c.NewContext(Request{SessionID: id, Epoch: 3}, t0)
	if a := y.Respond([]Result{idle(10)}, t0); a.ErrorCode != kerr.InvalidFetchSessionEpoch.Code || a.SessionID != id {
		t.Fatalf("stale context answer %+v", a)
	}
	if a := z.Respond([]Result{idle(10)}, t0); a.ErrorCode != 0 {
		t.Fatalf("current context answer %+v", a)
	}
}

func TestForgetAndClose(t *testing.T) {
	c := New(10, DefaultEvictionAfter)
	a, b := part("a", 0, 0), part("b", 0, 0)
	id := open(t, c, false, t0, a, b)
	x := c.NewContext(Request{SessionID: id, Epoch: 1, Forgotten: []Key{a.Key}}, t0)
	if !slices.Equal(keys(x.Partitions), []Key{b.Key}) {
		t.Fatalf("after forgetting a: %v", keys(x.Partitions))
	}
	x.Respond([]Result{idle(10)}, t0)
	if n := c.Stats().Partitions; n != 1 {
		t.Fatalf("%d partitions cached, want 1", n)
	}
	// Forgetting the last partition ends the session: sessionless.
	x = c.NewContext(Request{SessionID: id, Epoch: 2, Forgotten: []Key{b.Key}}, t0)
	if x.Kind != Sessionless || len(x.Partitions) != 0 {
		t.Fatalf("kind %v partitions %v", x.Kind, x.Partitions)
	}
	if s := c.Stats(); s.Sessions != 0 || s.Partitions != 0 {
		t.Fatalf("stats %+v", s)
	}

	// A full fetch naming a session closes it; epoch -1 opens none.
	id = open(t, c, false, t0, a)
	x = c.NewContext(Request{SessionID: id, Epoch: FinalEpoch, Partitions: []Partition{a}}, t0)
	if x.Kind != Sessionless || c.Stats().Sessions != 0 {
		t.Fatalf("kind %v, %d sessions", x.Kind, c.Stats().Sessions)
	}
	if ans := x.Respond([]Result{idle(10)}, t0); ans.SessionID != 0 || !ans.Include[0] {
		t.Fatalf("sessionless answer %+v", ans)
	}
	// A new full fetch with the old id replaces the session.
	id = open(t, c, false, t0, a)
	open(t, c, false, t0, a)
	x = c.NewContext(Request{SessionID: id, Epoch: InitialEpoch, Partitions: []Partition{a}}, t0)
	if _, ok := c.sessions[id]; ok {
		t.Fatal("full fetch did not close its old session")
	}
	x.Respond([]Result{idle(10)}, t0)
	if n := c.Stats().Sessions; n != 2 {
		t.Fatalf("%d sessions, want 2", n)
	}
}

func TestTopicIDSessions(t *testing.T) {
	c := New(10, DefaultEvictionAfter)
	k := Key{TopicID: [16]byte{1}, Partition: 3}
	x := c.NewContext(Request{Epoch: InitialEpoch, UsesTopicIDs: true, Partitions: []Partition{{Key: k}}}, t0)
	id := x.Respond([]Result{idle(1)}, t0).SessionID
	if x := c.NewContext(Request{SessionID: id, Epoch: 1}, t0); x.ErrorCode != kerr.FetchSessionTopicIDError.Code {
		t.Fatalf("name request in an id session: code %d", x.ErrorCode)
	}
	x = c.NewContext(Request{SessionID: id, Epoch: 1, UsesTopicIDs: true, Forgotten: []Key{{TopicID: [16]byte{2}, Partition: 3}}}, t0)
	if x.Kind != Incremental || !slices.Equal(keys(x.Partitions), []Key{k}) {
		t.Fatalf("kind %v partitions %v", x.Kind, keys(x.Partitions))
	}
}

func TestNoSlots(t *testing.T) {
	c := New(0, DefaultEvictionAfter)
	x := c.NewContext(Request{Epoch: InitialEpoch, Partitions: []Partition{part("a", 0, 0)}}, t0)
	if a := x.Respond([]Result{idle(1)}, t0); a.SessionID != 0 || !a.Include[0] {
		t.Fatalf("answer %+v", a)
	}
}

func TestEviction(t *testing.T) {
	evict := DefaultEvictionAfter
	p := func(n int) []Partition {
		var ps []Partition
		for i := range n {
			ps = append(ps, part("t", int32(i), 0))
		}
		return ps
	}
	tryOpen := func(c *Cache, follower bool, now time.Time, n int) int32 {
		x := c.NewContext(Request{Epoch: InitialEpoch, Follower: follower, Partitions: p(n)}, now)
		res := make([]Result, n)
		return x.Respond(res, now).SessionID
	}

	t.Run("young consumer sessions are kept", func(t *testing.T) {
		c := New(1, evict)
		first := tryOpen(c, false, t0, 1)
		// Bigger, but the first is neither idle nor old.
		if id := tryOpen(c, false, t0.Add(time.Minute), 5); id != 0 {
			t.Fatalf("got session %d, want none", id)
		}
		if _, ok := c.sessions[first]; !ok || c.Stats().Evictions != 0 {
			t.Fatal("first session evicted")
		}
	})
	t.Run("idle session evicted", func(t *testing.T) {
		c := New(1, evict)
		first := tryOpen(c, true, t0, 100)
		id := tryOpen(c, false, t0.Add(evict+time.Millisecond), 1)
		if id == 0 {
			t.Fatal("no session for the newcomer")
		}
		if _, ok := c.sessions[first]; ok || c.Stats().Evictions != 1 {
			t.Fatal("idle session not evicted")
		}
		// Its client learns it with FETCH_SESSION_ID_NOT_FOUND.
		if x := c.NewContext(Request{SessionID: first, Epoch: 1}, t0); x.ErrorCode != kerr.FetchSessionIDNotFound.Code {
			t.Fatalf("code %d", x.ErrorCode)
		}
	})
	t.Run("follower evicts a young consumer session", func(t *testing.T) {
		c := New(1, evict)
		tryOpen(c, false, t0, 100)
		if id := tryOpen(c, true, t0.Add(time.Second), 1); id == 0 {
			t.Fatal("follower got no session")
		}
		// But not a young follower session.
		if id := tryOpen(c, true, t0.Add(2*time.Second), 1000); id != 0 {
			t.Fatal("young follower session evicted")
		}
	})
	t.Run("old busy session evicted by a bigger one only", func(t *testing.T) {
		c := New(1, evict)
		first := tryOpen(c, false, t0, 10)
		// Used often (never idle) past the eviction age.
		for i := 1; i <= 3; i++ {
			now := t0.Add(time.Duration(i) * time.Minute)
			x := c.NewContext(Request{SessionID: first, Epoch: int32(i)}, now)
			x.Respond(make([]Result, 10), now)
		}
		now := t0.Add(3*time.Minute + time.Second)
		if id := tryOpen(c, false, now, 10); id != 0 {
			t.Fatal("equal size evicted")
		}
		if id := tryOpen(c, false, now, 11); id == 0 {
			t.Fatal("bigger session did not evict an old one")
		}
	})
	t.Run("consumer never evicts an unexpired follower session", func(t *testing.T) {
		c := New(1, evict)
		first := tryOpen(c, true, t0, 1)
		for i := 1; i <= 3; i++ {
			now := t0.Add(time.Duration(i) * time.Minute)
			x := c.NewContext(Request{SessionID: first, Epoch: int32(i)}, now)
			x.Respond(make([]Result, 1), now)
		}
		// Old enough to be evictable by all, but a consumer's session is
		// worth less than any follower's.
		if id := tryOpen(c, false, t0.Add(3*time.Minute+time.Second), 1000); id != 0 {
			t.Fatal("consumer evicted a follower session")
		}
	})
}

func TestNextEpoch(t *testing.T) {
	for _, tc := range [][2]int32{{0, 1}, {1, 2}, {-1, -1}, {1<<31 - 1, 1}} {
		if got := NextEpoch(tc[0]); got != tc[1] {
			t.Errorf("NextEpoch(%d) = %d, want %d", tc[0], got, tc[1])
		}
	}
}

// TestConcurrentUse runs many clients' sessions at once, with evictions
// (run with -race); the cached partition count stays the sum of the
// sessions' partitions.
func TestConcurrentUse(t *testing.T) {
	c := New(4, time.Millisecond)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			now := t0
			var id, epoch int32
			for i := range 200 {
				now = now.Add(time.Millisecond)
				var x *Context
				if id == 0 {
					x = c.NewContext(Request{Epoch: InitialEpoch, Follower: g%2 == 0, Partitions: []Partition{part("t", int32(g), 0), part("u", int32(i%3), 0)}}, now)
				} else {
					x = c.NewContext(Request{SessionID: id, Epoch: epoch, Partitions: []Partition{part("u", int32(i%3), int64(i))}}, now)
				}
				res := make([]Result, len(x.Partitions))
				a := x.Respond(res, now)
				switch {
				case a.ErrorCode != 0 || x.Kind == SessionError:
					id = 0
				case x.Kind == Full:
					id, epoch = a.SessionID, 1
				default:
					epoch = NextEpoch(epoch)
				}
			}
		}()
	}
	wg.Wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	sum := 0
	for _, s := range c.sessions {
		sum += len(s.parts)
	}
	if len(c.sessions) > 4 || sum != c.partitions {
		t.Fatalf("%d sessions with %d partitions, cache counts %d", len(c.sessions), sum, c.partitions)
	}
}
