package assignor

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// randomGroup builds a random group: up to maxTopics topics of 1..20
// partitions and 1..maxMembers members; with equal set, every member
// subscribes to all topics (the constrained algorithm), else each to a
// random non-empty subset (the general one). Half the groups have racks:
// replicas on one or two of three racks, most members on a rack.
func randomGroup(r *rand.Rand, maxTopics, maxMembers int, equal bool) (map[string]Topic, []Member) {
	racks := []string{"a", "b", "c"}
	withRacks := r.IntN(2) == 0
	topics := map[string]Topic{}
	var names []string
	for i := range 1 + r.IntN(maxTopics) {
		name := fmt.Sprintf("t%d", i)
		names = append(names, name)
		t := Topic{Partitions: int32(1 + r.IntN(20))}
		if withRacks {
			for range t.Partitions {
				replicas := []string{racks[r.IntN(3)]}
				if r.IntN(2) == 0 {
					replicas = append(replicas, racks[r.IntN(3)])
				}
				t.ReplicaRacks = append(t.ReplicaRacks, replicas)
			}
		}
		topics[name] = t
	}
	var members []Member
	for i := range 1 + r.IntN(maxMembers) {
		m := Member{ID: fmt.Sprintf("m%02d", i), Subscription: Subscription{Topics: randomTopics(r, names, equal), Generation: -1}}
		if withRacks && r.IntN(4) != 0 {
			m.Rack = racks[r.IntN(3)]
		}
		members = append(members, m)
	}
	return topics, members
}

func randomTopics(r *rand.Rand, names []string, all bool) []string {
	if all {
		return slices.Clone(names)
	}
	var out []string
	for _, n := range names {
		if r.IntN(2) == 0 {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		out = append(out, names[r.IntN(len(names))])
	}
	return out
}

// nextGeneration turns an assignment into the members' subscriptions of
// the next rebalance: each owns what it was given, in generation gen.
func nextGeneration(a Assignor, members []Member, got Assignment, gen int32) []Member {
	out := make([]Member, len(members))
	for i, m := range members {
		m.OwnedPartitions = slices.Clone(got[m.ID])
		m.Generation = gen
		m.UserData = a.UserData(m.OwnedPartitions, gen)
		out[i] = m
	}
	return out
}

// churn changes a group: a member may leave, one may join, and (unless
// equal) some members change subscriptions.
func churn(r *rand.Rand, topics map[string]Topic, members []Member, equal bool) []Member {
	names := sortedKeys(topics)
	out := slices.Clone(members)
	if len(out) > 1 && r.IntN(2) == 0 {
		i := r.IntN(len(out))
		out = slices.Delete(out, i, i+1)
	}
	if r.IntN(2) == 0 {
		out = append(out, Member{ID: fmt.Sprintf("n%02d", r.IntN(100)), Subscription: Subscription{Topics: randomTopics(r, names, equal), Generation: -1}})
		if slices.IndexFunc(out[:len(out)-1], func(m Member) bool { return m.ID == out[len(out)-1].ID }) >= 0 {
			out = out[:len(out)-1]
		}
	}
	if !equal {
		for i := range out {
			if r.IntN(4) == 0 {
				out[i].Topics = randomTopics(r, names, false)
			}
		}
	}
	return out
}

// TestStickyProperties checks Kafka's sticky guarantees on random groups
// through two rebalances: every assignment is valid and balanced; and in
// groups without racks, with nothing changed nothing moves, no two members
// trade partitions of one topic (Kafka's isSticky), and with equal
// subscriptions a member keeps its owned partitions up to its fair share
// (minimal movement). With racks those do not hold in Kafka either: its
// assignor takes a partition off a member whose rack holds no replica at
// every rebalance and deals it again (two members on different racks may
// trade such partitions), which can move others.
func TestStickyProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for iter := range 400 {
		equal := iter%2 == 0
		topics, members := randomGroup(r, 6, 9, equal)
		a := Sticky{}
		first, err := a.Assign(members, topics)
		if err != nil {
			t.Fatalf("iter %d: %v", iter, err)
		}
		if err := checkValidAndBalanced(members, topics, first, true); err != nil {
			t.Fatalf("iter %d (equal=%v) first: %v", iter, equal, err)
		}
		// Stable: the same group again keeps every partition in place.
		same := nextGeneration(a, members, first, 1)
		again, err := a.Assign(same, topics)
		if err != nil {
			t.Fatal(err)
		}
		for id := range first {
			if !hasRacks(topics) && formatPartitions(first[id]) != formatPartitions(again[id]) {
				t.Fatalf("iter %d: nothing changed but %s moved from [%s] to [%s]", iter, id, formatPartitions(first[id]), formatPartitions(again[id]))
			}
		}
		changed := churn(r, topics, nextGeneration(a, members, first, 1), equal)
		second, err := a.Assign(changed, topics)
		if err != nil {
			t.Fatal(err)
		}
		if err := checkValidAndBalanced(changed, topics, second, true); err != nil {
			t.Fatalf("iter %d (equal=%v) second: %v", iter, equal, err)
		}
		if err := swaps(first, second); err != nil && !hasRacks(topics) {
			t.Fatalf("iter %d: not sticky: %v", iter, err)
		}
		if equal && !hasRacks(topics) {
			checkKeepsFairShare(t, iter, changed, topics, second)
		}
	}
}

// checkKeepsFairShare: with equal subscriptions, each member keeps at
// least min(owned, floor(partitions/members)) of what it owned.
func checkKeepsFairShare(t *testing.T, iter int, members []Member, topics map[string]Topic, got Assignment) {
	t.Helper()
	total := 0
	for _, name := range members[0].Topics {
		total += int(topics[name].Partitions)
	}
	minQuota := total / len(members)
	for _, m := range members {
		owned := m.OwnedPartitions
		kept := 0
		for _, tp := range owned {
			if slices.Contains(got[m.ID], tp) {
				kept++
			}
		}
		if want := min(len(owned), minQuota); kept < want {
			t.Fatalf("iter %d: %s kept %d of its %d partitions, fair share %d", iter, m.ID, kept, len(owned), minQuota)
		}
	}
}

func hasRacks(topics map[string]Topic) bool {
	for _, t := range topics {
		if t.ReplicaRacks != nil {
			return true
		}
	}
	return false
}

// TestCooperativeConverges runs cooperative rebalances on random groups:
// no generation gives a member a partition another member is giving up in
// it, and without racks, within two follow-up rebalances the group reaches
// a complete, balanced assignment. (With racks Kafka's assignor offers an
// off-rack partition to rack-matching members at every rebalance, so a
// group may keep moving one; there only the rule is checked, for four
// rounds.)
func TestCooperativeConverges(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	a := CooperativeSticky{}
	for iter := range 300 {
		equal := iter%2 == 0
		topics, members := randomGroup(r, 5, 8, equal)
		got, err := a.Assign(members, topics)
		if err != nil {
			t.Fatal(err)
		}
		gen := int32(1)
		members = churn(r, topics, nextGeneration(a, members, got, gen), equal)
		for round := 0; ; round++ {
			got, err = a.Assign(members, topics)
			if err != nil {
				t.Fatal(err)
			}
			if err := ValidateCooperative(members, got); err != nil {
				t.Fatalf("iter %d round %d: %v", iter, round, err)
			}
			revoked := 0
			for _, m := range members {
				_, r := Diff(m.OwnedPartitions, got[m.ID])
				revoked += len(r)
			}
			if revoked == 0 || (hasRacks(topics) && round == 4) {
				break
			}
			if round == 2 && !hasRacks(topics) {
				t.Fatalf("iter %d: still revoking after %d follow-up rebalances", iter, round)
			}
			gen++
			members = nextGeneration(a, members, got, gen)
		}
		if err := checkValidAndBalanced(members, topics, got, !hasRacks(topics)); err != nil {
			t.Fatalf("iter %d (equal=%v) final: %v", iter, equal, err)
		}
	}
}

// TestRangeAndRoundRobinProperties: every partition of a subscribed topic
// is assigned once, to a subscriber, and each topic is split evenly among
// its subscribers by range.
func TestRangeAndRoundRobinProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for iter := range 300 {
		topics, members := randomGroup(r, 5, 8, iter%2 == 0)
		for _, a := range []Assignor{Range{}, RoundRobin{}} {
			got, err := a.Assign(members, topics)
			if err != nil {
				t.Fatal(err)
			}
			owner := map[TopicPartition]string{}
			for _, m := range members {
				for _, tp := range got[m.ID] {
					if !slices.Contains(m.Topics, tp.Topic) {
						t.Fatalf("%s: %s got %s without subscribing", a.Name(), m.ID, tp)
					}
					if _, dup := owner[tp]; dup {
						t.Fatalf("%s: %s assigned twice", a.Name(), tp)
					}
					owner[tp] = m.ID
				}
			}
			for _, m := range members {
				for _, name := range m.Topics {
					for p := range topics[name].Partitions {
						if _, ok := owner[TopicPartition{name, p}]; !ok {
							t.Fatalf("%s: %s-%d unassigned", a.Name(), name, p)
						}
					}
				}
			}
			if a.Name() != RangeName {
				continue
			}
			for name, meta := range topics {
				var counts []int
				for _, m := range members {
					if slices.Contains(m.Topics, name) {
						n := 0
						for _, tp := range got[m.ID] {
							if tp.Topic == name {
								n++
							}
						}
						counts = append(counts, n)
					}
				}
				if len(counts) > 0 && slices.Max(counts)-slices.Min(counts) > 1 {
					t.Fatalf("range: %s (%d partitions) split %v", name, meta.Partitions, counts)
				}
			}
		}
	}
}
