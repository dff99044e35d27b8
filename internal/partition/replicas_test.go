package partition

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func TestReplicaStateUpdateFetchState(t *testing.T) {
	// Every case starts from a follower whose previous fetch came at time
	// 1000 when the leader's LEO was 100, last caught up at 500.
	prev := ReplicaState{BrokerID: 2, LogEndOffset: 90, LastFetchLeaderLogEndOffset: 100, LastFetchTimeMs: 1000, LastCaughtUpTimeMs: 500, BrokerEpoch: -1}
	tests := []struct {
		name         string
		fetchOffset  int64
		leaderLEO    int64
		now          int64
		wantCaughtUp int64
		wantLastLEO  int64
	}{
		{"at the leader's LEO: caught up now", 120, 120, 2000, 2000, 120},
		{"reached the LEO of the previous fetch: caught up then", 100, 120, 2000, 1000, 120},
		{"below both: unchanged", 99, 120, 2000, 500, 120},
		{"leader LEO went down (truncation): last leader LEO kept", 80, 80, 2000, 2000, 100},
		{"caught-up time never goes back", 120, 120, 400, 500, 120},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := prev
			r.updateFetchState(tc.fetchOffset, 7, tc.now, tc.leaderLEO, 3)
			if r.LastCaughtUpTimeMs != tc.wantCaughtUp {
				t.Errorf("LastCaughtUpTimeMs = %d, want %d", r.LastCaughtUpTimeMs, tc.wantCaughtUp)
			}
			if r.LastFetchLeaderLogEndOffset != tc.wantLastLEO {
				t.Errorf("LastFetchLeaderLogEndOffset = %d, want %d", r.LastFetchLeaderLogEndOffset, tc.wantLastLEO)
			}
			if r.LogEndOffset != tc.fetchOffset || r.LogStartOffset != 7 || r.LastFetchTimeMs != tc.now || r.BrokerEpoch != 3 {
				t.Errorf("fetch not recorded: %+v", r)
			}
		})
	}
}

func TestReplicaStateIsCaughtUp(t *testing.T) {
	r := ReplicaState{LogEndOffset: 100, LastCaughtUpTimeMs: 1000}
	tests := []struct {
		leaderLEO, now, maxLag int64
		want                   bool
	}{
		{100, 1_000_000, 10, true}, // at the LEO: never out of sync
		{110, 11000, 10000, true},  // exactly maxLag behind
		{110, 11001, 10000, false}, // one millisecond more
		{110, 5000, 10000, true},
	}
	for _, tc := range tests {
		if got := r.IsCaughtUp(tc.leaderLEO, tc.now, tc.maxLag); got != tc.want {
			t.Errorf("IsCaughtUp(%d, %d, %d) = %t, want %t", tc.leaderLEO, tc.now, tc.maxLag, got, tc.want)
		}
	}
}

func TestReplicaStateReset(t *testing.T) {
	fetched := ReplicaState{BrokerID: 2, LogStartOffset: 5, LogEndOffset: 90, LastFetchLeaderLogEndOffset: 100,
		LastFetchTimeMs: 1000, LastCaughtUpTimeMs: 900, BrokerEpoch: 4}
	tests := []struct {
		name              string
		newLeader, inSync bool
		want              ReplicaState
	}{
		{"new leader, in sync", true, true, ReplicaState{BrokerID: 2, LogStartOffset: -1, LogEndOffset: -1,
			LastFetchLeaderLogEndOffset: -1, LastCaughtUpTimeMs: 5000, BrokerEpoch: NoBrokerEpoch}},
		{"new leader, out of sync", true, false, ReplicaState{BrokerID: 2, LogStartOffset: -1, LogEndOffset: -1,
			LastFetchLeaderLogEndOffset: -1, BrokerEpoch: NoBrokerEpoch}},
		{"new epoch, in sync", false, true, ReplicaState{BrokerID: 2, LogStartOffset: 5, LogEndOffset: 90,
			LastFetchLeaderLogEndOffset: 150, LastFetchTimeMs: 5000, LastCaughtUpTimeMs: 5000, BrokerEpoch: 4}},
		{"new epoch, out of sync", false, false, ReplicaState{BrokerID: 2, LogStartOffset: 5, LogEndOffset: 90,
			LastFetchLeaderLogEndOffset: 150, BrokerEpoch: 4}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := fetched
			r.reset(5000, 150, tc.newLeader, tc.inSync)
			if r != tc.want {
				t.Errorf("reset = %+v, want %+v", r, tc.want)
			}
		})
	}
}

func TestNewLeaderStateRejectsOtherLeader(t *testing.T) {
	_, _, err := NewLeaderState(1, LeaderAndISR{Leader: 2, Replicas: []int32{1, 2}, ISR: []int32{1, 2}}, 0, 0, 0, LeaderConfig{})
	if err == nil {
		t.Fatal("NewLeaderState with another broker as leader succeeded")
	}
	s := newTestLeader(t, []int32{1, 2}, []int32{1, 2})
	if _, err := s.ApplyLeaderAndISR(LeaderAndISR{Leader: 2, LeaderEpoch: 2, Replicas: []int32{1, 2}, ISR: []int32{2}}, 0, 0, 0); err == nil {
		t.Fatal("ApplyLeaderAndISR naming another leader succeeded")
	}
}

func TestLowWatermark(t *testing.T) {
	s := newTestLeader(t, []int32{1, 2, 3}, []int32{1, 2, 3})
	if got := s.LowWatermark(50); got != UnknownOffset {
		t.Fatalf("LowWatermark before any fetch = %d, want %d", got, UnknownOffset)
	}
	mustFetch(t, s, FollowerFetch{ReplicaID: 2, FetchOffset: 100, LogStartOffset: 40, BrokerEpoch: -1, LeaderLogEndOffset: 100, NowMs: 1})
	mustFetch(t, s, FollowerFetch{ReplicaID: 3, FetchOffset: 100, LogStartOffset: 60, BrokerEpoch: -1, LeaderLogEndOffset: 100, NowMs: 1})
	if got := s.LowWatermark(50); got != 40 {
		t.Fatalf("LowWatermark = %d, want 40", got)
	}
	// A follower on an unregistered broker does not hold it back.
	s.SetConfig(LeaderConfig{MinInsyncReplicas: 1, ReplicaLagTimeMaxMs: 30000,
		Brokers: &fakeRegistry{brokers: map[int32]fakeBroker{3: {epoch: 1}}}})
	if got := s.LowWatermark(50); got != 50 {
		t.Fatalf("LowWatermark without broker 2 = %d, want 50", got)
	}
}

func TestAlterPartitionResponseErrors(t *testing.T) {
	tests := []struct {
		err                     error
		reverted, retry, remain bool
	}{
		{kerr.OperationNotAttempted, true, false, false},
		{kerr.IneligibleReplica, true, false, false},
		{kerr.UnknownTopicOrPartition, false, false, true},
		{kerr.UnknownTopicID, false, false, true},
		{kerr.FencedLeaderEpoch, false, false, true},
		{kerr.InvalidUpdateVersion, false, false, true},
		{kerr.InvalidRequest, false, false, true},
		{kerr.NewLeaderElected, false, false, true},
		{kerr.RequestTimedOut, false, true, true},
		{kerr.NotController, false, true, true},
		{errors.New("connection reset"), false, true, true},
	}
	for _, tc := range tests {
		t.Run(tc.err.Error(), func(t *testing.T) {
			s := newTestLeader(t, []int32{1, 2}, []int32{1})
			u := mustFetch(t, s, FollowerFetch{ReplicaID: 2, FetchOffset: 100, BrokerEpoch: -1, LeaderLogEndOffset: 100, NowMs: 1})
			if u.ExpandISR == nil {
				t.Fatal("caught-up follower not proposed for the ISR")
			}
			o := s.OnAlterPartitionResponse(u.ExpandISR, LeaderAndISR{}, tc.err, 100, 100, 2)
			if o.Reverted != tc.reverted || o.Retry != tc.retry || !o.Failed || o.Committed {
				t.Errorf("outcome = %+v", o)
			}
			if got := s.Pending() != nil; got != tc.remain {
				t.Errorf("still pending = %t, want %t", got, tc.remain)
			}
			if !slices.Equal(s.ISR(), []int32{1}) {
				t.Errorf("ISR changed to %v", s.ISR())
			}
		})
	}
	s := newTestLeader(t, []int32{1, 2}, []int32{1})
	if o := s.OnAlterPartitionResponse(nil, LeaderAndISR{}, nil, 0, 0, 0); !o.Ignored {
		t.Errorf("answer without a proposal not ignored: %+v", o)
	}
}

// TestLeaderStateInvariants drives random fetches, appends, shrinks,
// AlterPartition answers and metadata updates, and checks after each step
// that the high watermark returned never decreases, never passes the
// leader's LEO, is reported increased exactly when it rose, and, whenever it
// rises, no member of the maximal ISR is below it. Like Partition, the walk
// keeps the high watermark itself (the log's) and stores what each call
// returns.
func TestLeaderStateInvariants(t *testing.T) {
	var rises, expands, shrinks, commits int
	for seed := uint64(1); seed <= 50; seed++ {
		rng := rand.New(rand.NewPCG(seed, 0))
		replicas := []int32{1, 2, 3}
		s, res, err := NewLeaderState(1, LeaderAndISR{Leader: 1, LeaderEpoch: 1, Replicas: replicas, ISR: replicas}, 100, 100, 1_000_000,
			LeaderConfig{MinInsyncReplicas: int32(1 + rng.IntN(3)), ReplicaLagTimeMaxMs: 1000})
		if err != nil {
			t.Fatal(err)
		}
		if res.HighWatermarkIncreased || res.HighWatermark != 100 {
			t.Fatalf("new leader at its log end moved the high watermark: %+v", res)
		}
		leo, now, epoch, partitionEpoch := int64(100), int64(1_000_000), int32(1), int32(0)
		hw := int64(100)
		followerLEO := map[int32]int64{2: 100, 3: 100}
		for step := 0; step < 500; step++ {
			before := hw
			// after is what the step's call returned; increased says it rose.
			after, increased := hw, false
			now += int64(rng.IntN(400))
			switch op := rng.IntN(10); {
			case op < 4:
				id := int32(2 + rng.IntN(2))
				// Followers mostly advance, sometimes truncate.
				next := followerLEO[id] + int64(rng.IntN(20))
				if rng.IntN(10) == 0 {
					next = max(0, followerLEO[id]-int64(rng.IntN(20)))
				}
				followerLEO[id] = min(next, leo)
				u, err := s.UpdateFollowerFetch(FollowerFetch{ReplicaID: id, FetchOffset: followerLEO[id], BrokerEpoch: -1, LeaderLogEndOffset: leo, NowMs: now}, hw)
				if err != nil {
					t.Fatalf("seed %d step %d: %v", seed, step, err)
				}
				after, increased = u.HighWatermark, u.HighWatermarkIncreased
				if u.ExpandISR != nil {
					expands++
					if s.Pending() != u.ExpandISR {
						t.Fatalf("seed %d step %d: expansion not marked in flight", seed, step)
					}
				}
			case op < 6:
				leo += int64(rng.IntN(30))
				after, increased = s.MaybeIncrementHighWatermark(leo, hw, now)
			case op < 7:
				if p := s.MaybeShrinkISR(leo, now); p != nil {
					shrinks++
					if len(p.NewISR) >= len(s.ISR()) {
						t.Fatalf("seed %d step %d: shrink %v does not shrink %v", seed, step, p.NewISRIDs(), s.ISR())
					}
				}
			case op < 9:
				if p := s.Pending(); p != nil {
					var o AlterPartitionOutcome
					if rng.IntN(3) == 0 {
						o = s.OnAlterPartitionResponse(p, LeaderAndISR{}, kerr.OperationNotAttempted, leo, hw, now)
					} else {
						partitionEpoch++
						o = s.OnAlterPartitionResponse(p, LeaderAndISR{Leader: 1, LeaderEpoch: epoch, PartitionEpoch: partitionEpoch, ISR: p.NewISRIDs()}, nil, leo, hw, now)
						if o.Committed {
							commits++
						}
					}
					after, increased = o.HighWatermark, o.HighWatermarkIncreased
				}
			default:
				epoch++
				partitionEpoch++
				res, err := s.ApplyLeaderAndISR(LeaderAndISR{Leader: 1, LeaderEpoch: epoch, PartitionEpoch: partitionEpoch, Replicas: replicas, ISR: s.ISR()}, leo, hw, now)
				if err != nil {
					t.Fatal(err)
				}
				after, increased = res.HighWatermark, res.HighWatermarkIncreased
			}
			if increased != (after > before) {
				t.Fatalf("seed %d step %d: high watermark %d from %d reported increased=%t", seed, step, after, before, increased)
			}
			hw = after
			if hw < before {
				t.Fatalf("seed %d step %d: high watermark went back from %d to %d", seed, step, before, hw)
			}
			if hw > leo {
				t.Fatalf("seed %d step %d: high watermark %d past leader LEO %d", seed, step, hw, leo)
			}
			if hw > before {
				rises++
				if s.IsUnderMinISR() {
					t.Fatalf("seed %d step %d: high watermark rose under min ISR", seed, step)
				}
				for _, id := range s.MaximalISR() {
					if id != 1 && followerLEO[id] < hw {
						t.Fatalf("seed %d step %d: high watermark %d passed ISR member %d at %d", seed, step, hw, id, followerLEO[id])
					}
				}
			}
		}
	}
	// The random walk must have exercised every path it checks.
	if rises == 0 || expands == 0 || shrinks == 0 || commits == 0 {
		t.Fatalf("walk too narrow: %d rises, %d expansions, %d shrinks, %d commits", rises, expands, shrinks, commits)
	}
	t.Logf("%d high watermark rises, %d expansions, %d shrinks, %d commits", rises, expands, shrinks, commits)
}

func newTestLeader(t *testing.T, replicas, isr []int32) *LeaderState {
	t.Helper()
	s, _, err := NewLeaderState(1, LeaderAndISR{Leader: 1, LeaderEpoch: 1, Replicas: replicas, ISR: isr}, 100, 100, 1_000_000,
		LeaderConfig{MinInsyncReplicas: 1, ReplicaLagTimeMaxMs: 30000})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// mustFetch records a fetch on a leader from newTestLeader, whose log's
// high watermark is 100.
func mustFetch(t *testing.T, s *LeaderState, f FollowerFetch) FetchUpdate {
	t.Helper()
	u, err := s.UpdateFollowerFetch(f, 100)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
