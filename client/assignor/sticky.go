package assignor

import (
	"encoding/binary"
	"fmt"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// defaultGeneration is Kafka's DEFAULT_GENERATION: a member whose owned
// partitions carry no generation.
const defaultGeneration = -1

// Sticky is Kafka's StickyAssignor (eager): balanced like round-robin, but
// each member keeps as many of its previous partitions as balance allows.
// The previous assignment travels in the subscription's user data
// (StickyMemberMetadata), as with Kafka's StickyAssignor, which reads it
// from there rather than from the subscription's owned partitions; so it
// interoperates with Java (and franz-go) members of the same group.
type Sticky struct{}

func (Sticky) Name() string                   { return StickyName }
func (Sticky) Protocols() []RebalanceProtocol { return []RebalanceProtocol{Eager} }

// UserData encodes what the member was last assigned and in which
// generation (StickyMemberMetadata v1; v0 when generation is negative).
func (Sticky) UserData(owned []TopicPartition, generation int32) []byte {
	md := kmsg.NewStickyMemberMetadata()
	md.Generation = max(generation, defaultGeneration)
	for _, g := range groupByTopic(owned) {
		md.CurrentAssignment = append(md.CurrentAssignment, kmsg.StickyMemberMetadataCurrentAssignment{Topic: g.Topic, Partitions: g.Partitions})
	}
	return md.AppendTo(nil)
}

// memberData reads the previous assignment from the user data; the
// subscription's owned partitions are not used by the eager assignor.
// Undecodable user data counts as owning nothing.
func (Sticky) memberData(m *Member) ([]TopicPartition, int32) {
	if len(m.UserData) == 0 {
		return nil, defaultGeneration
	}
	var md kmsg.StickyMemberMetadata
	if err := md.ReadFrom(m.UserData); err != nil {
		return nil, defaultGeneration
	}
	var owned []TopicPartition
	for _, a := range md.CurrentAssignment {
		for _, p := range a.Partitions {
			owned = append(owned, TopicPartition{a.Topic, p})
		}
	}
	return owned, md.Generation
}

func (s Sticky) Assign(members []Member, topics map[string]Topic) (Assignment, error) {
	res, err := assignSticky(members, topics, s.memberData)
	if err != nil {
		return nil, err
	}
	return res.assignment, nil
}

// CooperativeSticky is Kafka's CooperativeStickyAssignor: the sticky
// algorithm under the cooperative protocol. A partition that moves from one
// member to another is left out of the new owner's assignment in this
// generation; its old owner sees it missing, revokes it and rejoins, and the
// next rebalance assigns it, now unowned.
type CooperativeSticky struct{}

func (CooperativeSticky) Name() string { return CooperativeStickyName }
func (CooperativeSticky) Protocols() []RebalanceProtocol {
	return []RebalanceProtocol{Cooperative, Eager}
}

// UserData encodes the generation as one int32, for leaders that read
// subscriptions older than version 2 (which carry no generation field).
func (CooperativeSticky) UserData(_ []TopicPartition, generation int32) []byte {
	return binary.BigEndian.AppendUint32(nil, uint32(max(generation, defaultGeneration)))
}

func (CooperativeSticky) memberData(m *Member) ([]TopicPartition, int32) {
	if m.Generation >= 0 {
		return m.OwnedPartitions, m.Generation
	}
	if len(m.UserData) < 4 { // none, or unreadable: no generation
		return m.OwnedPartitions, defaultGeneration
	}
	return m.OwnedPartitions, int32(binary.BigEndian.Uint32(m.UserData))
}

func (c CooperativeSticky) Assign(members []Member, topics map[string]Topic) (Assignment, error) {
	res, err := assignSticky(members, topics, c.memberData)
	if err != nil {
		return nil, err
	}
	transferring := res.transferring
	if transferring == nil {
		transferring = partitionsTransferringOwnership(members, res.assignment)
	}
	for tp, newOwner := range transferring {
		res.assignment[newOwner] = slices.DeleteFunc(res.assignment[newOwner], func(x TopicPartition) bool { return x == tp })
	}
	return res.assignment, nil
}

// partitionsTransferringOwnership: partitions some member owned and lost
// that another member gained, mapped to the gainer.
func partitionsTransferringOwnership(members []Member, assignment Assignment) map[TopicPartition]string {
	added := map[TopicPartition]string{}
	revoked := map[TopicPartition]bool{}
	for i := range members {
		m := &members[i]
		owned := map[TopicPartition]bool{}
		for _, tp := range m.OwnedPartitions {
			owned[tp] = true
		}
		assigned := map[TopicPartition]bool{}
		for _, tp := range assignment[m.ID] {
			assigned[tp] = true
			if !owned[tp] {
				added[tp] = m.ID
			}
		}
		for tp := range owned {
			if !assigned[tp] {
				revoked[tp] = true
			}
		}
	}
	for tp := range added {
		if !revoked[tp] {
			delete(added, tp)
		}
	}
	return added
}

type topicPartitions struct {
	Topic      string
	Partitions []int32
}

func groupByTopic(tps []TopicPartition) []topicPartitions {
	sorted := slices.Clone(tps)
	SortTopicPartitions(sorted)
	var out []topicPartitions
	for _, tp := range sorted {
		if n := len(out); n > 0 && out[n-1].Topic == tp.Topic {
			out[n-1].Partitions = append(out[n-1].Partitions, tp.Partition)
			continue
		}
		out = append(out, topicPartitions{tp.Topic, []int32{tp.Partition}})
	}
	return out
}

// stickyResult is the outcome of the shared sticky algorithm.
type stickyResult struct {
	assignment Assignment
	// transferring is set by the constrained algorithm: partitions given to
	// a member other than the one that owned them. Nil after the general
	// algorithm, whose caller derives it from owned vs. assigned.
	transferring map[TopicPartition]string
}

// assignSticky is Kafka's AbstractStickyAssignor: the owned partitions are
// reconciled (a partition claimed by two members goes to the higher
// generation; claimed twice in the same generation, to neither), then the
// constrained algorithm runs when every member subscribes to the same
// topics and the general one otherwise. Where Kafka walks its HashMap of
// members, members are walked in that same order (javaHashMapOrder), since
// the walk breaks ties; where the order cannot change the result, members
// are taken by id.
func assignSticky(members []Member, topics map[string]Topic, memberData func(*Member) ([]TopicPartition, int32)) (stickyResult, error) {
	if err := checkMembers(members, topics); err != nil {
		return stickyResult{}, err
	}
	byID := make(map[string]*Member, len(members))
	ids := make([]string, 0, len(members))
	for i := range members {
		byID[members[i].ID] = &members[i]
		ids = append(ids, members[i].ID)
	}
	walk := javaHashMapOrder(ids)
	slices.Sort(ids)

	// The topics to assign: subscribed, known and non-empty.
	partitionsPerTopic := map[string]Topic{}
	for _, m := range members {
		for _, t := range m.Topics {
			if meta, ok := topics[t]; ok && meta.Partitions > 0 {
				partitionsPerTopic[t] = meta
			}
		}
	}

	s := &stickyState{
		topics:     partitionsPerTopic,
		byID:       byID,
		ids:        ids,
		walk:       walk,
		memberData: memberData,
		owned:      map[string][]TopicPartition{},
		multiOwned: map[TopicPartition]bool{},
		maxGen:     defaultGeneration,
	}
	allEqual := s.reconcileOwned()
	s.rack = newStickyRackInfo(s)
	if allEqual {
		b := newConstrainedBuilder(s)
		if err := b.build(); err != nil {
			return stickyResult{}, err
		}
		b.assignment.sortAll()
		return stickyResult{assignment: b.assignment, transferring: b.transferring}, nil
	}
	b := newGeneralBuilder(s)
	b.build()
	out := make(Assignment, len(ids))
	for _, id := range ids {
		out[id] = slices.Clone(b.current[id])
		if out[id] == nil {
			out[id] = []TopicPartition{}
		}
	}
	out.sortAll()
	return stickyResult{assignment: out}, nil
}

// stickyState is the input of both sticky algorithms.
type stickyState struct {
	topics     map[string]Topic // partitionsPerTopic
	byID       map[string]*Member
	ids        []string // sorted member ids
	walk       []string // member ids in Kafka's HashMap iteration order
	memberData func(*Member) ([]TopicPartition, int32)
	owned      map[string][]TopicPartition // reconciled owned partitions
	multiOwned map[TopicPartition]bool     // claimed twice in one generation
	maxGen     int32
	rack       *stickyRackInfo
}

func (s *stickyState) totalPartitions() int {
	n := 0
	for _, t := range s.topics {
		n += int(t.Partitions)
	}
	return n
}

// reconcileOwned fills s.owned and s.multiOwned and reports whether all
// members subscribe to the same topic set.
func (s *stickyState) reconcileOwned() bool {
	allEqual := true
	var first map[string]bool
	prevOwner := map[TopicPartition]string{}
	for _, id := range s.walk {
		m := s.byID[id]
		subs := topicSet(m.Topics)
		if first == nil {
			first = subs
		} else if allEqual && !maps.Equal(first, subs) {
			allEqual = false
		}
		claimed, gen := s.memberData(m)
		s.maxGen = max(s.maxGen, gen)
		owned := []TopicPartition{}
		seen := map[TopicPartition]bool{}
		for _, tp := range claimed {
			meta, ok := s.topics[tp.Topic]
			if !ok || tp.Partition < 0 || tp.Partition >= meta.Partitions || seen[tp] {
				continue
			}
			seen[tp] = true
			other, claimedBefore := prevOwner[tp]
			if !claimedBefore {
				owned = append(owned, tp)
				prevOwner[tp] = id
				continue
			}
			// Kafka compares against the other member's subscription
			// generation (not its user-data generation).
			otherGen := max(s.byID[other].Generation, defaultGeneration)
			switch {
			case gen == otherGen:
				s.multiOwned[tp] = true
				s.owned[other] = slices.DeleteFunc(s.owned[other], func(x TopicPartition) bool { return x == tp })
				prevOwner[tp] = id
			case gen > otherGen:
				owned = append(owned, tp)
				s.owned[other] = slices.DeleteFunc(s.owned[other], func(x TopicPartition) bool { return x == tp })
				prevOwner[tp] = id
			}
		}
		s.owned[id] = owned
	}
	return allEqual
}

// stickyRackInfo is the KIP-881 rack state of the sticky assignors.
type stickyRackInfo struct {
	memberRack      map[string]string // empty unless rack-aware
	partitionRacks  map[TopicPartition]map[string]bool
	membersByRackTP map[TopicPartition]int // members on racks holding a replica
}

func newStickyRackInfo(s *stickyState) *stickyRackInfo {
	ri := &stickyRackInfo{memberRack: map[string]string{}, partitionRacks: map[TopicPartition]map[string]bool{}, membersByRackTP: map[TopicPartition]int{}}
	membersByRack := map[string]int{}
	racks := map[string]bool{}
	for _, id := range s.ids {
		if r := s.byID[id].Rack; r != "" {
			membersByRack[r]++
			racks[r] = true
		}
	}
	if len(racks) == 0 {
		return ri
	}
	partitionRacks := map[TopicPartition]map[string]bool{}
	for name, t := range s.topics {
		for p := int32(0); p < t.Partitions; p++ {
			partitionRacks[TopicPartition{name, p}] = replicaRacks(t, p)
		}
	}
	if !useRackAware(racks, partitionRacks) {
		return ri
	}
	for _, id := range s.ids {
		if r := s.byID[id].Rack; r != "" {
			ri.memberRack[id] = r
		}
	}
	ri.partitionRacks = partitionRacks
	for tp, rs := range partitionRacks {
		n := 0
		for r := range rs {
			n += membersByRack[r]
		}
		ri.membersByRackTP[tp] = n
	}
	return ri
}

// racksMismatch: the member has a rack and no replica of tp is on it.
func (ri *stickyRackInfo) racksMismatch(member string, tp TopicPartition) bool {
	rack, ok := ri.memberRack[member]
	return ok && !ri.partitionRacks[tp][rack]
}

// sortByRackMembers orders partitions with the fewest rack-matching members
// first (stable), so scarce matches are used before common ones.
func (ri *stickyRackInfo) sortByRackMembers(tps []TopicPartition) {
	if len(ri.membersByRackTP) == 0 {
		return
	}
	slices.SortStableFunc(tps, func(a, b TopicPartition) int {
		return ri.membersByRackTP[a] - ri.membersByRackTP[b]
	})
}

// nextRackMember returns the index of the first member of list, starting
// at first and wrapping, whose rack holds a replica of tp; -1 if none.
func (ri *stickyRackInfo) nextRackMember(tp TopicPartition, list []string, first int) int {
	racks := ri.partitionRacks[tp]
	if len(racks) == 0 {
		return -1
	}
	for i := range list {
		idx := (first + i) % len(list)
		if rack, ok := ri.memberRack[list[idx]]; ok && racks[rack] {
			return idx
		}
	}
	return -1
}

// allPartitions lists the partitions of the given topics in order.
func (s *stickyState) allPartitions(sortedTopics []string) []TopicPartition {
	out := make([]TopicPartition, 0, s.totalPartitions())
	for _, t := range sortedTopics {
		for p := int32(0); p < s.topics[t].Partitions; p++ {
			out = append(out, TopicPartition{t, p})
		}
	}
	return out
}

func errf(format string, args ...any) error {
	return fmt.Errorf("sticky assignor: "+format, args...)
}
