package assignor

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// goldenCase is one assignment from testdata/*.json: inputs ported from a
// Kafka test case (named in From) and what Kafka's test asserts about the
// output. Partition lists are written as Kafka's tests print them:
// "t1-0, t1-3".
type goldenCase struct {
	Name string `json:"name"`
	From string `json:"from"`
	// Assignors the case runs against (it holds for each).
	Assignors []string      `json:"assignors"`
	Topics    []goldenTopic `json:"topics"`
	// BrokerRacks and ReplicationFactor place replicas as Kafka's
	// AbstractPartitionAssignorTest does: partition p of the k-th listed
	// topic has replicas on brokers (p+j+offset_k) % len(BrokerRacks) for
	// j < ReplicationFactor, offset_k the partitions of earlier topics.
	BrokerRacks       []*string      `json:"brokerRacks"`
	ReplicationFactor int            `json:"replicationFactor"`
	Members           []goldenMember `json:"members"`
	// Expect is the exact assignment per member (sorted). For the
	// cooperative assignor with Balanced set it is the assignment after the
	// follow-up rebalances that Kafka's cooperative test runs until nothing
	// is revoked (each member then owns what it was given, generation 1).
	Expect map[string]string `json:"expect"`
	// ExpectFirst is the cooperative assignor's first assignment, before
	// any follow-up rebalance (moving partitions are left out of it).
	ExpectFirst map[string]string `json:"expectFirst"`
	// Keeps: partitions each listed member must still have.
	Keeps map[string]string `json:"keeps"`
	// Within: each listed member's assignment is a subset of these.
	Within map[string]string `json:"within"`
	// Sizes: the number of partitions each listed member gets.
	Sizes map[string]int `json:"sizes"`
	// RackMismatches, when set, is how many assigned partitions have no
	// replica on their member's rack.
	RackMismatches *int `json:"rackMismatches"`
	// Balanced asks that every partition be assigned once and the
	// assignment be balanced (Kafka's verifyValidityAndBalance).
	Balanced bool `json:"balanced"`
}

type goldenTopic struct {
	Name       string `json:"name"`
	Partitions int32  `json:"partitions"`
	// Racks, when set, are the replica racks per partition (overrides the
	// broker-rack placement).
	Racks [][]string `json:"racks"`
}

type goldenMember struct {
	ID       string   `json:"id"`
	Instance string   `json:"instance"`
	Rack     string   `json:"rack"`
	Topics   []string `json:"topics"`
	Owned    string   `json:"owned"`
	// Generation of the owned partitions; -1 (or absent) for none.
	Generation *int32 `json:"generation"`
	// Version is the subscription version the member sent (default 3): the
	// owned partitions are in the subscription from v1, the generation from
	// v2. The eager sticky assignor reads both from its user data.
	Version *int `json:"version"`
}

func parsePartitions(t *testing.T, s string) []TopicPartition {
	t.Helper()
	out := []TopicPartition{}
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		i := strings.LastIndexByte(f, '-')
		p, err := strconv.Atoi(f[i+1:])
		if i < 0 || err != nil {
			t.Fatalf("bad partition %q", f)
		}
		out = append(out, TopicPartition{f[:i], int32(p)})
	}
	return out
}

func formatPartitions(tps []TopicPartition) string {
	s := make([]string, len(tps))
	for i, tp := range tps {
		s[i] = tp.String()
	}
	slices.Sort(s) // Kafka's tests sort the printed names
	return strings.Join(s, ", ")
}

func (c *goldenCase) topicMap() map[string]Topic {
	out := map[string]Topic{}
	offset := 0
	for _, gt := range c.Topics {
		t := Topic{Partitions: gt.Partitions, ReplicaRacks: gt.Racks}
		if gt.Racks == nil && len(c.BrokerRacks) > 0 {
			t.ReplicaRacks = make([][]string, gt.Partitions)
			for p := 0; p < int(gt.Partitions); p++ {
				for j := 0; j < c.ReplicationFactor; j++ {
					if r := c.BrokerRacks[(p+j+offset)%len(c.BrokerRacks)]; r != nil {
						t.ReplicaRacks[p] = append(t.ReplicaRacks[p], *r)
					}
				}
			}
		}
		offset += int(gt.Partitions)
		out[gt.Name] = t
	}
	return out
}

// members builds the JoinGroup view for assignor a, encoding the owned
// partitions where that assignor's members send them.
func (c *goldenCase) members(t *testing.T, a Assignor) []Member {
	var out []Member
	for _, gm := range c.Members {
		owned := parsePartitions(t, gm.Owned)
		gen := int32(-1)
		if gm.Generation != nil {
			gen = *gm.Generation
		}
		version := 3
		if gm.Version != nil {
			version = *gm.Version
		}
		m := Member{ID: gm.ID, InstanceID: gm.Instance, Subscription: Subscription{Topics: gm.Topics, Rack: gm.Rack, Generation: -1}}
		if version >= 1 {
			m.OwnedPartitions = owned
		}
		if version >= 2 {
			m.Generation = gen
		}
		if gm.Generation != nil {
			// As Kafka's tests build subscriptions with user data only
			// when they give a generation.
			m.UserData = a.UserData(owned, gen)
		}
		out = append(out, m)
	}
	return out
}

func TestGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden files: %v", err)
	}
	total := 0
	for _, file := range files {
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var cases []goldenCase
		dec := json.NewDecoder(strings.NewReader(string(raw)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&cases); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		for _, c := range cases {
			for _, name := range c.Assignors {
				total++
				t.Run(filepath.Base(file)+"/"+c.Name+"/"+name, func(t *testing.T) {
					runGolden(t, &c, name)
				})
			}
		}
	}
	t.Logf("%d golden cases", total)
}

func runGolden(t *testing.T, c *goldenCase, name string) {
	a, err := ByName(name)
	if err != nil {
		t.Fatal(err)
	}
	topics := c.topicMap()
	members := c.members(t, a)
	got, err := a.Assign(members, topics)
	if err != nil {
		t.Fatalf("assign: %v", err)
	}
	if len(got) != len(members) {
		t.Errorf("assignment has %d members, want %d", len(got), len(members))
	}
	c.check(t, "first assignment", c.ExpectFirst, got)
	if a.Name() == CooperativeStickyName && c.Balanced {
		got, members = followUpRebalances(t, a, members, topics, got)
	}
	c.check(t, "assignment", c.Expect, got)
	for id, keep := range c.Keeps {
		for _, tp := range parsePartitions(t, keep) {
			if !slices.Contains(got[id], tp) {
				t.Errorf("%s lost %s: got [%s]", id, tp, formatPartitions(got[id]))
			}
		}
	}
	for id, within := range c.Within {
		allowed := parsePartitions(t, within)
		for _, tp := range got[id] {
			if !slices.Contains(allowed, tp) {
				t.Errorf("%s got %s, outside [%s]", id, tp, within)
			}
		}
	}
	for id, n := range c.Sizes {
		if len(got[id]) != n {
			t.Errorf("%s has %d partitions, want %d: [%s]", id, len(got[id]), n, formatPartitions(got[id]))
		}
	}
	if c.RackMismatches != nil {
		if n := rackMismatches(members, topics, got); n != *c.RackMismatches {
			t.Errorf("%d partitions off their member's rack, want %d", n, *c.RackMismatches)
		}
	}
	if c.Balanced {
		if err := checkValidAndBalanced(members, topics, got, name != CooperativeStickyName); err != nil {
			t.Error(err)
		}
	}
	if a.Name() == CooperativeStickyName {
		if err := ValidateCooperative(members, got); err != nil {
			t.Error(err)
		}
	}
}

func (c *goldenCase) check(t *testing.T, what string, expect map[string]string, got Assignment) {
	t.Helper()
	for id, want := range expect {
		if g := formatPartitions(got[id]); g != formatPartitions(parsePartitions(t, want)) {
			t.Errorf("%s of %s: got [%s], want [%s] (from %s)", what, id, g, want, c.From)
		}
	}
}

// followUpRebalances runs the rebalances a cooperative group goes through
// after an assignment that revokes partitions: each member now owns what it
// was assigned (generation 1) and the leader assigns again, until nothing is
// revoked. Every round must obey the cooperative rule.
func followUpRebalances(t *testing.T, a Assignor, members []Member, topics map[string]Topic, got Assignment) (Assignment, []Member) {
	t.Helper()
	for round := 0; ; round++ {
		if err := ValidateCooperative(members, got); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		revoking := false
		for _, m := range members {
			if _, revoked := Diff(m.OwnedPartitions, got[m.ID]); len(revoked) > 0 {
				revoking = true
			}
		}
		if !revoking {
			return got, members
		}
		if round == 4 {
			t.Fatalf("still revoking after %d follow-up rebalances", round)
		}
		next := make([]Member, len(members))
		for i, m := range members {
			m.OwnedPartitions = slices.Clone(got[m.ID])
			m.Generation = 1
			m.UserData = a.UserData(m.OwnedPartitions, 1)
			next[i] = m
		}
		members = next
		var err error
		if got, err = a.Assign(members, topics); err != nil {
			t.Fatalf("follow-up assign: %v", err)
		}
	}
}

func rackMismatches(members []Member, topics map[string]Topic, got Assignment) int {
	n := 0
	for _, m := range members {
		if m.Rack == "" {
			continue
		}
		for _, tp := range got[m.ID] {
			if !replicaRacks(topics[tp.Topic], tp.Partition)[m.Rack] {
				n++
			}
		}
	}
	return n
}
