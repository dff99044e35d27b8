package cli

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func TestReassignmentJSONRoundTrip(t *testing.T) {
	a := assignment{{"b", 1}: {3, 1}, {"a", 10}: {1, 2}, {"a", 2}: {2, 3}}
	got := formatAssignment(a)
	want := `{"version":1,"partitions":[{"topic":"a","partition":2,"replicas":[2,3],"log_dirs":["any","any"]},` +
		`{"topic":"a","partition":10,"replicas":[1,2],"log_dirs":["any","any"]},{"topic":"b","partition":1,"replicas":[3,1],"log_dirs":["any","any"]}]}`
	if got != want {
		t.Fatalf("format:\n got %s\nwant %s", got, want)
	}
	back, order, err := parseReassignment([]byte(got))
	if err != nil {
		t.Fatal(err)
	}
	if len(back) != 3 || !slices.Equal(back[topicPartition{"b", 1}], []int32{3, 1}) || order[0] != (topicPartition{"a", 2}) {
		t.Fatalf("parsed %v %v", back, order)
	}
	if got := formatAssignment(assignment{}); got != `{"version":1,"partitions":[]}` {
		t.Fatalf("empty: %s", got)
	}
}

func TestParseReassignmentRefuses(t *testing.T) {
	for _, tc := range []struct{ json, want string }{
		{`{"version":2,"partitions":[{"topic":"a","partition":0,"replicas":[1]}]}`, "not supported version field value 2"},
		{`{"version":1,"partitions":[]}`, "cannot be empty"},
		{`{"version":1,"partitions":[{"topic":"a","partition":0,"replicas":[]}]}`, "partition replica list cannot be empty"},
		{`{"version":1,"partitions":[{"topic":"a","partition":0,"replicas":[1,1]}]}`, "a-0 contains multiple entries for 1"},
		{`{"version":1,"partitions":[{"topic":"a","partition":0,"replicas":[1]},{"topic":"a","partition":0,"replicas":[2]}]}`, "duplicate topic partitions: a-0"},
		{`{"version":1,"partitions":[{"topic":"a","partition":0,"replicas":[1,2],"log_dirs":["any"]}]}`, "different from size of log dirs"},
		{`{"version":1,"partitions":[{"topic":"a","partition":0,"replicas":[1],"log_dirs":["/data"]}]}`, "not supported"},
		{`{"version":1,"partitions":[{"partition":0,"replicas":[1]}]}`, "needs topic, partition and replicas"},
		{`{"version":1,"partitions":[{"topic":"a","partition":0,"replicas":[1],"extra":1}]}`, "unknown field"},
		{`not json`, "reassignment JSON"},
	} {
		_, _, err := parseReassignment([]byte(tc.json))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.json, err, tc.want)
		}
	}
}

func TestParseTopicsToMove(t *testing.T) {
	topics, err := parseTopicsToMove([]byte(`{"topics":[{"topic":"a"},{"topic":"b"}],"version":1}`))
	if err != nil || !slices.Equal(topics, []string{"a", "b"}) {
		t.Fatalf("topics %v, err %v", topics, err)
	}
	for _, tc := range []struct{ json, want string }{
		{`{"version":1,"topics":[{"topic":"a"},{"topic":"a"}]}`, "duplicate entries: a"},
		{`{"version":1,"topics":[]}`, "no topics"},
		{`{"version":3,"topics":[{"topic":"a"}]}`, "version"},
	} {
		if _, err := parseTopicsToMove([]byte(tc.json)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.json, err, tc.want)
		}
	}
	if _, err := parseBrokerList("1,2,1"); err == nil || !strings.Contains(err.Error(), "duplicate entries: 1") {
		t.Errorf("duplicate broker: %v", err)
	}
	if _, err := parseBrokerList("1,x"); err == nil {
		t.Error("bad broker id accepted")
	}
}

// TestAssignReplicasSpreads checks the placement's properties (the start is
// random, as Kafka's): every partition has rf distinct replicas, leaders and
// replicas spread evenly, and with racks every partition spans min(rf,
// racks) racks.
func TestAssignReplicasSpreads(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	brokers := []placedBroker{{id: 4}, {id: 1}, {id: 2}, {id: 3}}
	for trial := 0; trial < 20; trial++ {
		got, err := assignReplicas(brokers, 8, 3, rnd)
		if err != nil {
			t.Fatal(err)
		}
		leaders, replicas := map[int32]int{}, map[int32]int{}
		for p := int32(0); p < 8; p++ {
			r := got[p]
			if len(r) != 3 || len(slices.Compact(slices.Sorted(slices.Values(r)))) != 3 {
				t.Fatalf("partition %d: replicas %v", p, r)
			}
			leaders[r[0]]++
			for _, b := range r {
				replicas[b]++
			}
		}
		for _, b := range brokers {
			if leaders[b.id] != 2 || replicas[b.id] != 6 {
				t.Fatalf("broker %d leads %d and holds %d of %v", b.id, leaders[b.id], replicas[b.id], got)
			}
		}
	}
	racked := []placedBroker{{1, "a"}, {2, "a"}, {3, "b"}, {4, "b"}, {5, "c"}, {6, "c"}}
	for trial := 0; trial < 20; trial++ {
		got, err := assignReplicas(racked, 6, 3, rnd)
		if err != nil {
			t.Fatal(err)
		}
		for p, r := range got {
			racks := map[string]bool{}
			for _, b := range r {
				racks[racked[b-1].rack] = true
			}
			if len(racks) != 3 {
				t.Fatalf("partition %d: replicas %v span racks %v", p, r, racks)
			}
		}
	}
	if _, err := assignReplicas(brokers[:2], 1, 3, rnd); err == nil || !strings.Contains(err.Error(), "larger than available brokers: 2") {
		t.Fatalf("rf above brokers: %v", err)
	}
	if _, err := assignReplicas([]placedBroker{{1, "a"}, {2, ""}}, 1, 1, rnd); err == nil || !strings.Contains(err.Error(), "rack information") {
		t.Fatalf("some racks: %v", err)
	}
}

func TestThrottledReplicas(t *testing.T) {
	moves := moveMap(
		map[topicPartition]reassignmentState{{"t", 1}: {replicas: []int32{1, 2, 4}, adding: []int32{4}, removing: []int32{2}}},
		assignment{{"t", 0}: {2, 3}, {"u", 0}: {1}},
		assignment{{"t", 0}: {1, 2}, {"u", 0}: {1}},
	)
	leader, follower, brokers := throttledReplicas(moves)
	if leader["t"] != "0:1,0:2,1:1,1:2" || follower["t"] != "0:3,1:4" {
		t.Fatalf("t: leader %q follower %q", leader["t"], follower["t"])
	}
	if leader["u"] != "0:1" || follower["u"] != "" {
		t.Fatalf("u: leader %q follower %q", leader["u"], follower["u"])
	}
	if !slices.Equal(brokers, []int32{1, 2, 3, 4}) {
		t.Fatalf("brokers %v", brokers)
	}
}

func TestPlanDecommission(t *testing.T) {
	brokers := []registeredBroker{{1, "a", false}, {2, "a", false}, {3, "b", false}, {4, "b", false}, {5, "c", true}}
	current := assignment{
		{"t", 0}: {2, 1, 3}, // 2 goes: a rack is taken by 1, b by 3 -> no new rack left, least loaded of 4
		{"t", 1}: {1, 3},    // not on 2
		{"t", 2}: {3, 2},    // 2 goes: rack b is taken -> broker 1 (rack a)
		{"t", 3}: {2},
	}
	plan, err := planDecommission(current, brokers, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(plan) != 3 {
		t.Fatalf("plan %v", plan)
	}
	if got := plan[topicPartition{"t", 0}]; !slices.Equal(got, []int32{4, 1, 3}) {
		t.Errorf("t-0: %v", got)
	}
	if got := plan[topicPartition{"t", 2}]; !slices.Equal(got, []int32{3, 1}) {
		t.Errorf("t-2: %v", got)
	}
	if got := plan[topicPartition{"t", 3}]; len(got) != 1 || got[0] == 2 || got[0] == 5 {
		t.Errorf("t-3: %v (the fenced broker 5 may not take it)", got)
	}
	if _, err := planDecommission(assignment{{"t", 0}: {1, 2, 3, 4}}, brokers, 2); err == nil ||
		!strings.Contains(err.Error(), "no other live broker") {
		t.Errorf("no room: %v", err)
	}
}

func TestElectionArgs(t *testing.T) {
	parts, err := parseElectionFile([]byte(`{"partitions":[{"topic":"a","partition":1},{"topic":"b","partition":0}]}`))
	if err != nil || len(parts) != 2 || parts[1] != (topicPartition{"b", 0}) {
		t.Fatalf("parts %v err %v", parts, err)
	}
	for _, tc := range []struct{ json, want string }{
		{`{"partitions":[{"topic":"a","partition":1},{"topic":"a","partition":1}]}`, "duplicate partitions: a-1"},
		{`{}`, `missing "partitions"`},
		{`{"partitions":[]}`, "empty"},
	} {
		if _, err := parseElectionFile([]byte(tc.json)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.json, err, tc.want)
		}
	}
	if _, name, err := electionHow(false, true, "unclean"); err != nil || name != "UNCLEAN" {
		t.Errorf("unclean twice: %s %v", name, err)
	}
	if _, _, err := electionHow(true, true, ""); err == nil {
		t.Error("both types accepted")
	}
	if _, _, err := electionHow(false, false, ""); err == nil {
		t.Error("no type accepted")
	}
}
