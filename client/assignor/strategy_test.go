package assignor

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestParseStrategy(t *testing.T) {
	as, err := ParseStrategy("org.apache.kafka.clients.consumer.CooperativeStickyAssignor, range")
	if err != nil {
		t.Fatal(err)
	}
	if got := names(as); !slices.Equal(got, []string{"cooperative-sticky", "range"}) {
		t.Errorf("got %v", got)
	}
	for _, name := range []string{"range", "roundrobin", "sticky", "cooperative-sticky",
		"org.apache.kafka.clients.consumer.RangeAssignor", "org.apache.kafka.clients.consumer.RoundRobinAssignor",
		"org.apache.kafka.clients.consumer.StickyAssignor"} {
		if _, err := ByName(name); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	for _, bad := range []string{"", " , ", "uniform", "range,range", "range, org.apache.kafka.clients.consumer.RangeAssignor"} {
		if _, err := ParseStrategy(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

func TestProtocolFor(t *testing.T) {
	for _, tc := range []struct {
		strategy string
		want     RebalanceProtocol
	}{
		{"range", Eager},
		{"cooperative-sticky", Cooperative},
		{"cooperative-sticky,range", Eager}, // the first step of the upgrade
		{"range,cooperative-sticky", Eager},
		{"sticky", Eager},
	} {
		as, err := ParseStrategy(tc.strategy)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := ProtocolFor(as); err != nil || got != tc.want {
			t.Errorf("%s: got %v %v, want %v", tc.strategy, got, err, tc.want)
		}
	}
}

func TestSelectProtocol(t *testing.T) {
	for _, tc := range []struct {
		lists [][]string
		want  string
	}{
		{[][]string{{"range"}, {"range"}}, "range"},
		// Only range is common until every member lists cooperative-sticky.
		{[][]string{{"cooperative-sticky", "range"}, {"range"}}, "range"},
		{[][]string{{"cooperative-sticky", "range"}, {"cooperative-sticky", "range"}}, "cooperative-sticky"},
		// Each member votes for its first common choice; most votes win.
		{[][]string{{"roundrobin", "range"}, {"range", "roundrobin"}, {"range", "roundrobin"}}, "range"},
		// A tie goes to the smaller name (Kafka leaves it to hash order).
		{[][]string{{"roundrobin", "range"}, {"range", "roundrobin"}}, "range"},
	} {
		if got, err := SelectProtocol(tc.lists); err != nil || got != tc.want {
			t.Errorf("%v: got %q %v, want %q", tc.lists, got, err, tc.want)
		}
	}
	if _, err := SelectProtocol([][]string{{"range"}, {"sticky"}}); err == nil || !strings.Contains(err.Error(), "INCONSISTENT_GROUP_PROTOCOL") {
		t.Errorf("no common protocol: %v", err)
	}
	if _, err := SelectProtocol(nil); err == nil {
		t.Error("empty group selected a protocol")
	}
}

// simMember is a consumer in the upgrade simulation: its configured
// strategy and the partitions it is consuming.
type simMember struct {
	id       string
	strategy []Assignor
	holds    []TopicPartition
}

// rebalance runs one generation of a classic group the way Kafka's
// consumers and coordinator do: an eager member gives up everything before
// joining; a cooperative one reports what it holds; the coordinator picks
// the assignor; the leader assigns; each member applies its assignment
// (a cooperative member drops only what it lost). It returns whether a
// cooperative member revoked something (and so rejoins at once).
func rebalance(t *testing.T, group []*simMember, topics map[string]Topic, gen int32) (string, bool) {
	t.Helper()
	var lists [][]string
	var members []Member
	for _, m := range group {
		protocol, err := ProtocolFor(m.strategy)
		if err != nil {
			t.Fatal(err)
		}
		if protocol == Eager {
			m.holds = nil // onJoinPrepare revokes everything
		}
		lists = append(lists, names(m.strategy))
		members = append(members, Member{ID: m.id, Subscription: Subscription{
			Topics: sortedKeys(topics), OwnedPartitions: slices.Clone(m.holds), Generation: gen - 1,
		}})
	}
	selected, err := SelectProtocol(lists)
	if err != nil {
		t.Fatal(err)
	}
	leader, err := ByName(selected)
	if err != nil {
		t.Fatal(err)
	}
	for i := range members {
		members[i].UserData = leader.UserData(members[i].OwnedPartitions, gen-1)
	}
	got, err := leader.Assign(members, topics)
	if err != nil {
		t.Fatal(err)
	}
	if protocol, _ := ProtocolFor(group[0].strategy); protocol == Cooperative {
		// The leader checks its own assignment under the cooperative protocol.
		if err := ValidateCooperative(members, got); err != nil {
			t.Fatalf("generation %d: %v", gen, err)
		}
	}
	rejoin := false
	for _, m := range group {
		_, revoked := Diff(m.holds, got[m.id])
		if len(revoked) > 0 {
			rejoin = true
		}
		m.holds = slices.Clone(got[m.id])
	}
	// Safety: no partition is consumed by two members at once.
	seen := map[TopicPartition]string{}
	for _, m := range group {
		for _, tp := range m.holds {
			if other, dup := seen[tp]; dup {
				t.Fatalf("generation %d (%s): %s held by %s and %s", gen, selected, tp, other, m.id)
			}
			seen[tp] = m.id
		}
	}
	return selected, rejoin
}

// TestEagerToCooperativeUpgrade walks Kafka's documented two-bounce
// upgrade from range to cooperative-sticky: first each member restarts
// with "cooperative-sticky,range" (still eager; the group switches assignor
// once every member lists it), then each restarts with
// "cooperative-sticky" alone. At no generation is a partition held by two
// members, and the group ends fully assigned and balanced.
func TestEagerToCooperativeUpgrade(t *testing.T) {
	topics := map[string]Topic{"orders": {Partitions: 7}, "payments": {Partitions: 5}}
	mustParse := func(s string) []Assignor {
		as, err := ParseStrategy(s)
		if err != nil {
			t.Fatal(err)
		}
		return as
	}
	var group []*simMember
	for i := range 3 {
		group = append(group, &simMember{id: fmt.Sprintf("consumer-%d", i), strategy: mustParse("range")})
	}
	gen := int32(1)
	run := func() string {
		for {
			selected, rejoin := rebalance(t, group, topics, gen)
			gen++
			if !rejoin || gen > 50 {
				return selected
			}
		}
	}
	if got := run(); got != RangeName {
		t.Fatalf("initial assignor %s", got)
	}
	var trail []string
	for _, m := range group {
		m.strategy = mustParse("cooperative-sticky,range")
		trail = append(trail, run())
	}
	if !slices.Equal(trail, []string{"range", "range", "cooperative-sticky"}) {
		t.Errorf("first bounce assignors %v", trail)
	}
	trail = nil
	for _, m := range group {
		m.strategy = mustParse("cooperative-sticky")
		trail = append(trail, run())
	}
	if !slices.Equal(trail, []string{"cooperative-sticky", "cooperative-sticky", "cooperative-sticky"}) {
		t.Errorf("second bounce assignors %v", trail)
	}
	// Now fully cooperative: a member joining takes partitions only after
	// their owners have revoked them.
	group = append(group, &simMember{id: "consumer-3", strategy: mustParse("cooperative-sticky")})
	before := gen
	run()
	if gen-before < 2 {
		t.Errorf("a cooperative join finished in %d generation(s); moving partitions needs a revocation round", gen-before)
	}
	final := Assignment{}
	var members []Member
	for _, m := range group {
		final[m.id] = m.holds
		members = append(members, Member{ID: m.id, Subscription: Subscription{Topics: sortedKeys(topics)}})
	}
	if err := checkValidAndBalanced(members, topics, final, true); err != nil {
		t.Fatal(err)
	}
}

// TestCooperativeRevokesOnlyWhatMoves: when a member joins a cooperative
// group, the first assignment leaves every member everything it keeps,
// gives the newcomer nothing that is still owned, and the members that lose
// partitions lose only those.
func TestCooperativeRevokesOnlyWhatMoves(t *testing.T) {
	topics := map[string]Topic{"t": {Partitions: 6}}
	c := CooperativeSticky{}
	owned := map[string][]TopicPartition{
		"a": {{"t", 0}, {"t", 1}, {"t", 2}},
		"b": {{"t", 3}, {"t", 4}, {"t", 5}},
	}
	members := []Member{
		{ID: "a", Subscription: Subscription{Topics: []string{"t"}, OwnedPartitions: owned["a"], Generation: 4}},
		{ID: "b", Subscription: Subscription{Topics: []string{"t"}, OwnedPartitions: owned["b"], Generation: 4}},
		{ID: "c", Subscription: Subscription{Topics: []string{"t"}, Generation: -1}},
	}
	got, err := c.Assign(members, topics)
	if err != nil {
		t.Fatal(err)
	}
	if err := ValidateCooperative(members, got); err != nil {
		t.Fatal(err)
	}
	if len(got["c"]) != 0 {
		t.Errorf("newcomer got %v while their owners still hold them", got["c"])
	}
	revokedTotal := 0
	for _, id := range []string{"a", "b"} {
		_, revoked := Diff(owned[id], got[id])
		revokedTotal += len(revoked)
		if len(got[id]) != 2 {
			t.Errorf("%s keeps %v, want 2 of its 3", id, got[id])
		}
	}
	if revokedTotal != 2 {
		t.Errorf("revoked %d partitions, want exactly the 2 that move", revokedTotal)
	}
	// Next generation: the revoked partitions are free and go to c.
	members[0].OwnedPartitions, members[1].OwnedPartitions = got["a"], got["b"]
	members[0].Generation, members[1].Generation = 5, 5
	next, err := c.Assign(members, topics)
	if err != nil {
		t.Fatal(err)
	}
	if len(next["c"]) != 2 || formatPartitions(next["a"]) != formatPartitions(got["a"]) || formatPartitions(next["b"]) != formatPartitions(got["b"]) {
		t.Errorf("second round: %v", next)
	}
}

func TestValidateCooperativeRejects(t *testing.T) {
	members := []Member{
		{ID: "a", Subscription: Subscription{Topics: []string{"t"}, OwnedPartitions: []TopicPartition{{"t", 0}}}},
		{ID: "b", Subscription: Subscription{Topics: []string{"t"}}},
	}
	err := ValidateCooperative(members, Assignment{"a": {}, "b": {{"t", 0}}})
	if err == nil || !strings.Contains(err.Error(), "t-0") {
		t.Errorf("moving t-0 in one generation accepted: %v", err)
	}
	// Eager assignors break the rule, which is why they are eager-only.
	got, _ := Range{}.Assign([]Member{
		{ID: "a", Subscription: Subscription{Topics: []string{"t"}, OwnedPartitions: []TopicPartition{{"t", 0}, {"t", 1}}}},
		{ID: "0", Subscription: Subscription{Topics: []string{"t"}}},
	}, map[string]Topic{"t": {Partitions: 2}})
	if ValidateCooperative([]Member{
		{ID: "a", Subscription: Subscription{OwnedPartitions: []TopicPartition{{"t", 0}, {"t", 1}}}}, {ID: "0"},
	}, got) == nil {
		t.Errorf("range's reassignment %v passed the cooperative check", got)
	}
}

func TestAssignRejectsBadInput(t *testing.T) {
	for _, name := range []string{RangeName, RoundRobinName, StickyName, CooperativeStickyName} {
		a, _ := ByName(name)
		if _, err := a.Assign([]Member{{ID: "a"}, {ID: "a"}}, nil); err == nil {
			t.Errorf("%s: duplicate member accepted", name)
		}
		if _, err := a.Assign([]Member{{ID: ""}}, nil); err == nil {
			t.Errorf("%s: empty member id accepted", name)
		}
		if _, err := a.Assign([]Member{{ID: "a", Subscription: Subscription{Topics: []string{"t"}}}},
			map[string]Topic{"t": {Partitions: 2, ReplicaRacks: [][]string{{"r"}}}}); err == nil {
			t.Errorf("%s: racks for 1 of 2 partitions accepted", name)
		}
		// Owned partitions that do not exist are ignored, not a crash.
		got, err := a.Assign([]Member{{ID: "a", Subscription: Subscription{Topics: []string{"t"},
			OwnedPartitions: []TopicPartition{{"t", 9}, {"t", -1}, {"t", 0}, {"t", 0}}, Generation: 1}}},
			map[string]Topic{"t": {Partitions: 2}})
		if err != nil || formatPartitions(got["a"]) != "t-0, t-1" {
			t.Errorf("%s: %v %v", name, got, err)
		}
		// No members: an empty assignment.
		if got, err := a.Assign(nil, map[string]Topic{"t": {Partitions: 2}}); err != nil || len(got) != 0 {
			t.Errorf("%s: empty group: %v %v", name, got, err)
		}
	}
}

func TestJavaHashes(t *testing.T) {
	// Values Java's String.hashCode returns ("\U0001F600" is two UTF-16 units).
	for s, want := range map[string]int32{"": 0, "hello": 99162322, "\U0001F600": 1772899} {
		if got := int32(javaStringHash(s)); got != want {
			t.Errorf("hash(%q) = %d, want %d", s, got, want)
		}
	}
	// Order is by bucket, not by name, and stable within a bucket.
	ids := []string{"consumer1", "consumer2", "consumer3"}
	order := javaHashMapOrder(ids)
	if slices.Equal(order, ids) || len(order) != 3 {
		t.Errorf("order %v", order)
	}
}
