package assignor

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// TopicPartition names one partition of a topic.
type TopicPartition struct {
	Topic     string
	Partition int32
}

func (tp TopicPartition) String() string { return fmt.Sprintf("%s-%d", tp.Topic, tp.Partition) }

// compareTopicPartition orders by topic, then partition (Kafka's
// TopicPartitionComparator).
func compareTopicPartition(a, b TopicPartition) int {
	if c := strings.Compare(a.Topic, b.Topic); c != 0 {
		return c
	}
	return cmp.Compare(a.Partition, b.Partition)
}

// SortTopicPartitions sorts tps by topic, then partition.
func SortTopicPartitions(tps []TopicPartition) { slices.SortFunc(tps, compareTopicPartition) }

// Subscription is what a member sends in JoinGroup under the "consumer"
// protocol type (Kafka's ConsumerPartitionAssignor.Subscription).
type Subscription struct {
	Topics []string
	// UserData is the assignor's own bytes (the eager sticky assignor's
	// previous assignment, the cooperative sticky assignor's generation).
	UserData []byte
	// OwnedPartitions are the partitions the member holds (version 1+).
	OwnedPartitions []TopicPartition
	// Generation is the generation the owned partitions were assigned in
	// (version 2+); negative means unknown, as Kafka's Optional.empty.
	Generation int32
	// Rack is the member's client.rack (version 3+); "" means none.
	Rack string
}

// Member is one group member as the leader sees it in the JoinGroup response.
type Member struct {
	ID string
	// InstanceID is group.instance.id for a static member, "" otherwise.
	// Range and round-robin order static members by it, so a restarted
	// static member keeps its partitions.
	InstanceID string
	Subscription
}

// Topic is what the assignors need of one topic's metadata.
type Topic struct {
	Partitions int32
	// ReplicaRacks, when set, holds per partition the racks of its replicas
	// (len == Partitions). Rack-aware assignment (KIP-881) prefers a member
	// whose rack holds a replica; nil means racks are unknown.
	ReplicaRacks [][]string
}

// Assignment maps a member id to the partitions it is assigned, each list
// sorted by topic and partition. Every member of the input has an entry.
type Assignment map[string][]TopicPartition

// RebalanceProtocol is how a member gives up partitions (Kafka's
// ConsumerPartitionAssignor.RebalanceProtocol).
type RebalanceProtocol int8

const (
	// Eager: every member revokes everything before rejoining.
	Eager RebalanceProtocol = iota
	// Cooperative (KIP-429): a member keeps what it owns; a partition that
	// moves is first revoked by its owner and assigned in a later rebalance.
	Cooperative
)

func (p RebalanceProtocol) String() string {
	if p == Cooperative {
		return "COOPERATIVE"
	}
	return "EAGER"
}

// Assignor is a client-side partition assignor run by the group leader
// (Kafka's ConsumerPartitionAssignor). Implementations are pure: no I/O, no
// goroutines; state the Java assignors keep between rebalances (the sticky
// assignors' last assignment and generation) is passed in by the caller.
type Assignor interface {
	// Name is the protocol name sent in JoinGroup ("range", "roundrobin",
	// "sticky", "cooperative-sticky").
	Name() string
	// Protocols lists the rebalance protocols supported, preferred first.
	Protocols() []RebalanceProtocol
	// UserData is the Subscription.UserData a member sends given what it
	// owns and the generation it got it in (nil for range and round-robin).
	UserData(owned []TopicPartition, generation int32) []byte
	// Assign computes the group's assignment. Topics a member subscribes to
	// that are missing from topics are skipped, as Kafka skips topics without
	// metadata.
	Assign(members []Member, topics map[string]Topic) (Assignment, error)
}

// The protocol names and the Java class names Kafka's
// partition.assignment.strategy accepts for them.
const (
	RangeName             = "range"
	RoundRobinName        = "roundrobin"
	StickyName            = "sticky"
	CooperativeStickyName = "cooperative-sticky"
)

var javaClassNames = map[string]string{
	"org.apache.kafka.clients.consumer.RangeAssignor":             RangeName,
	"org.apache.kafka.clients.consumer.RoundRobinAssignor":        RoundRobinName,
	"org.apache.kafka.clients.consumer.StickyAssignor":            StickyName,
	"org.apache.kafka.clients.consumer.CooperativeStickyAssignor": CooperativeStickyName,
}

// ByName returns the assignor for a protocol name or a Kafka class name.
func ByName(name string) (Assignor, error) {
	n := strings.TrimSpace(name)
	if short, ok := javaClassNames[n]; ok {
		n = short
	}
	switch n {
	case RangeName:
		return Range{}, nil
	case RoundRobinName:
		return RoundRobin{}, nil
	case StickyName:
		return Sticky{}, nil
	case CooperativeStickyName:
		return CooperativeSticky{}, nil
	}
	return nil, fmt.Errorf("partition.assignment.strategy: unknown assignor %q", name)
}

// ParseStrategy parses partition.assignment.strategy (a comma-separated list,
// preferred first) into assignors. Duplicates are an error, as in Kafka.
func ParseStrategy(value string) ([]Assignor, error) {
	var out []Assignor
	seen := map[string]bool{}
	for _, part := range strings.Split(value, ",") {
		if strings.TrimSpace(part) == "" {
			continue
		}
		a, err := ByName(part)
		if err != nil {
			return nil, err
		}
		if seen[a.Name()] {
			return nil, fmt.Errorf("partition.assignment.strategy: assignor %q listed twice", a.Name())
		}
		seen[a.Name()] = true
		out = append(out, a)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("partition.assignment.strategy: no assignor in %q", value)
	}
	return out, nil
}

// ProtocolFor is the rebalance protocol a consumer configured with
// assignors uses: the highest protocol every one of them supports
// (Cooperative only when all do, so a list mixing "cooperative-sticky" with
// "range" stays Eager; that is the first step of the eager -> cooperative
// upgrade).
func ProtocolFor(assignors []Assignor) (RebalanceProtocol, error) {
	if len(assignors) == 0 {
		return Eager, fmt.Errorf("no assignors")
	}
	common := map[RebalanceProtocol]int{}
	for _, a := range assignors {
		for _, p := range a.Protocols() {
			common[p]++
		}
	}
	best, found := Eager, false
	for p, n := range common {
		if n == len(assignors) && (!found || p > best) {
			best, found = p, true
		}
	}
	if !found {
		return Eager, fmt.Errorf("assignors %v support no common rebalance protocol", names(assignors))
	}
	return best, nil
}

func names(as []Assignor) []string {
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = a.Name()
	}
	return out
}

// SelectProtocol is how a classic group's coordinator picks the assignor
// from the members' JoinGroup protocol lists (each preferred first): the
// candidates are the names every member lists; each member votes for its
// first candidate; the most votes wins. Kafka breaks a tie by hash order;
// here the lexically smallest name wins, so the choice is reproducible.
// The leader then runs the assignor with that name.
func SelectProtocol(memberProtocols [][]string) (string, error) {
	if len(memberProtocols) == 0 {
		return "", fmt.Errorf("select protocol: empty group")
	}
	count := map[string]int{}
	for _, list := range memberProtocols {
		seen := map[string]bool{}
		for _, name := range list {
			if !seen[name] {
				seen[name] = true
				count[name]++
			}
		}
	}
	votes := map[string]int{}
	for _, list := range memberProtocols {
		for _, name := range list {
			if count[name] == len(memberProtocols) {
				votes[name]++
				break
			}
		}
	}
	if len(votes) == 0 {
		return "", fmt.Errorf("select protocol: no assignor is supported by every member (Kafka's INCONSISTENT_GROUP_PROTOCOL)")
	}
	best := ""
	for name, n := range votes {
		if best == "" || n > votes[best] || (n == votes[best] && name < best) {
			best = name
		}
	}
	return best, nil
}

// subscribedTopics returns the set of a member's topics.
func topicSet(topics []string) map[string]bool {
	s := make(map[string]bool, len(topics))
	for _, t := range topics {
		s[t] = true
	}
	return s
}

// compareMembers orders members as Kafka's MemberInfo: static members first
// by group.instance.id, then dynamic members by member id.
func compareMembers(a, b *Member) int {
	switch {
	case a.InstanceID != "" && b.InstanceID != "":
		return strings.Compare(a.InstanceID, b.InstanceID)
	case a.InstanceID != "":
		return -1
	case b.InstanceID != "":
		return 1
	}
	return strings.Compare(a.ID, b.ID)
}

// checkMembers rejects inputs no group can produce.
func checkMembers(members []Member, topics map[string]Topic) error {
	seen := make(map[string]bool, len(members))
	for _, m := range members {
		if m.ID == "" {
			return fmt.Errorf("assign: member with empty id")
		}
		if seen[m.ID] {
			return fmt.Errorf("assign: member %q listed twice", m.ID)
		}
		seen[m.ID] = true
	}
	for name, t := range topics {
		if t.Partitions < 0 {
			return fmt.Errorf("assign: topic %q has %d partitions", name, t.Partitions)
		}
		if t.ReplicaRacks != nil && len(t.ReplicaRacks) != int(t.Partitions) {
			return fmt.Errorf("assign: topic %q has %d partitions but racks for %d", name, t.Partitions, len(t.ReplicaRacks))
		}
	}
	return nil
}

func newAssignment(members []Member) Assignment {
	out := make(Assignment, len(members))
	for _, m := range members {
		out[m.ID] = []TopicPartition{}
	}
	return out
}

func (a Assignment) sortAll() {
	for _, tps := range a {
		SortTopicPartitions(tps)
	}
}
