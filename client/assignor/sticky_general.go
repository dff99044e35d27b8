package assignor

import (
	"cmp"
	"slices"
	"strings"
)

// generalBuilder is Kafka's sticky algorithm for members with different
// subscriptions. Owned partitions the member still subscribes to are kept;
// unassigned partitions go, one by one, to the least-loaded member that
// can take them (topics with the fewest subscribers first); then partitions
// move from a member that has two more than another eligible member, the
// moves preferring to return a partition to its owner of an older generation
// and to undo earlier moves (the stickiness), until no move improves balance.
// If moving did not improve the balance score, the pre-move assignment wins.
type generalBuilder struct {
	s                  *stickyState
	topicMembers       map[string][]string        // topic -> subscribed members (id order)
	memberTopics       map[string]map[string]bool // member -> subscribed known topics
	current            map[string][]TopicPartition
	partitionMember    map[TopicPartition]string
	sortedPartitions   []TopicPartition
	sorted             sortedMembers
	revocationRequired bool
	movements          partitionMovements
	total              int
}

func newGeneralBuilder(s *stickyState) *generalBuilder {
	b := &generalBuilder{s: s, topicMembers: map[string][]string{}, memberTopics: map[string]map[string]bool{},
		current: map[string][]TopicPartition{}, partitionMember: map[TopicPartition]string{}, total: s.totalPartitions(),
		movements: newPartitionMovements()}
	for t := range s.topics {
		b.topicMembers[t] = nil
	}
	for _, id := range s.ids {
		known := map[string]bool{}
		for t := range topicSet(s.byID[id].Topics) {
			if _, ok := s.topics[t]; ok {
				known[t] = true
			}
		}
		b.memberTopics[id] = known
		b.current[id] = slices.Clone(s.owned[id])
	}
	for _, t := range sortedKeys(s.topics) {
		for _, id := range s.ids {
			if b.memberTopics[id][t] {
				b.topicMembers[t] = append(b.topicMembers[t], id)
			}
		}
	}
	for _, id := range s.ids {
		for _, tp := range b.current[id] {
			b.partitionMember[tp] = id
		}
	}
	topics := sortedKeys(s.topics)
	slices.SortStableFunc(topics, func(x, y string) int {
		return cmp.Compare(len(b.topicMembers[x]), len(b.topicMembers[y]))
	})
	b.sortedPartitions = s.allPartitions(topics)
	b.sorted = sortedMembers{size: func(id string) int { return len(b.current[id]) }}
	return b
}

func (b *generalBuilder) build() {
	if len(b.s.ids) == 0 {
		return
	}
	prev := b.previousOwners()
	assigned := b.keepOwned()
	var unassigned []TopicPartition
	for _, tp := range b.sortedPartitions {
		if !assigned[tp] {
			unassigned = append(unassigned, tp)
		}
	}
	for _, id := range b.s.ids {
		b.sorted.add(id)
	}
	b.balance(prev, unassigned)
}

// ownerGeneration is a previous owner of a partition and its generation.
type ownerGeneration struct {
	member     string
	generation int32
}

// previousOwners maps partitions to their owner in an older generation (the
// newest older one): a partition taken from it may be given back.
func (b *generalBuilder) previousOwners() map[TopicPartition]ownerGeneration {
	prev := map[TopicPartition]ownerGeneration{}
	update := func(tps []TopicPartition, member string, gen int32) {
		for _, tp := range tps {
			if p, ok := prev[tp]; !ok || gen > p.generation {
				prev[tp] = ownerGeneration{member, gen}
			}
		}
	}
	for _, id := range b.s.walk {
		claimed, gen := b.s.memberData(b.s.byID[id])
		switch {
		case gen >= 0 && gen < b.s.maxGen:
			update(claimed, id, gen)
		case gen < 0 && b.s.maxGen > defaultGeneration:
			update(claimed, id, defaultGeneration)
		}
	}
	return prev
}

// keepOwned drops owned partitions the member no longer subscribes to or
// whose replicas are off its rack (those need a revocation first) and
// returns the set kept.
func (b *generalBuilder) keepOwned() map[TopicPartition]bool {
	kept := map[TopicPartition]bool{}
	for _, id := range b.s.ids {
		b.current[id] = slices.DeleteFunc(b.current[id], func(tp TopicPartition) bool {
			if !b.memberTopics[id][tp.Topic] || b.s.rack.racksMismatch(id, tp) {
				b.revocationRequired = true
				return true
			}
			kept[tp] = true
			return false
		})
	}
	return kept
}

func (b *generalBuilder) maxAssignmentSize(id string) int {
	if len(b.memberTopics[id]) == len(b.s.topics) {
		return b.total
	}
	n := 0
	for t := range b.memberTopics[id] {
		n += int(b.s.topics[t].Partitions)
	}
	return n
}

// isBalanced: sizes differ by at most one, or no member could take a
// partition from a member holding two more than it.
func (b *generalBuilder) isBalanced() bool {
	if b.sorted.len() == 0 {
		return true
	}
	if len(b.current[b.sorted.first()]) >= len(b.current[b.sorted.last()])-1 {
		return true
	}
	for _, id := range b.sorted.ids {
		n := len(b.current[id])
		if n == b.maxAssignmentSize(id) {
			continue
		}
		mine := map[TopicPartition]bool{}
		for _, tp := range b.current[id] {
			mine[tp] = true
		}
		for t := range b.memberTopics[id] {
			for p := int32(0); p < b.s.topics[t].Partitions; p++ {
				tp := TopicPartition{t, p}
				if mine[tp] {
					continue
				}
				other, ok := b.partitionMember[tp]
				if _, participating := b.current[other]; ok && participating && n+1 < len(b.current[other]) {
					return false
				}
			}
		}
	}
	return true
}

// balanceScore is the sum over member pairs of their size difference.
func balanceScore(a map[string][]TopicPartition) int {
	sizes := make([]int, 0, len(a))
	for _, tps := range a {
		sizes = append(sizes, len(tps))
	}
	slices.Sort(sizes)
	// With sizes sorted, sum_{i<j} (s_j - s_i) = sum_j s_j*(2j-n+1).
	score := 0
	for j, s := range sizes {
		score += s * (2*j - len(sizes) + 1)
	}
	return score
}

// assignToLeastLoaded gives tp to the least-loaded member subscribed to
// its topic (and on a matching rack when rackAware).
func (b *generalBuilder) assignToLeastLoaded(tp TopicPartition, rackAware bool) bool {
	for _, id := range b.sorted.ids {
		if b.memberTopics[id][tp.Topic] && (!rackAware || !b.s.rack.racksMismatch(id, tp)) {
			b.sorted.remove(id)
			b.current[id] = append(b.current[id], tp)
			b.partitionMember[tp] = id
			b.sorted.add(id)
			return true
		}
	}
	return false
}

func (b *generalBuilder) canTopicMove(topic string) bool { return len(b.topicMembers[topic]) >= 2 }

func (b *generalBuilder) canMemberMove(id string) bool {
	if len(b.current[id]) < b.maxAssignmentSize(id) {
		return true
	}
	for _, tp := range b.current[id] {
		if b.canTopicMove(tp.Topic) {
			return true
		}
	}
	return false
}

func (b *generalBuilder) balance(prev map[TopicPartition]ownerGeneration, unassigned []TopicPartition) {
	initializing := len(b.current[b.sorted.last()]) == 0

	toAssign := unassigned
	if len(b.s.rack.memberRack) > 0 {
		toAssign = nil
		for _, tp := range unassigned {
			if len(b.topicMembers[tp.Topic]) == 0 || !b.assignToLeastLoaded(tp, true) {
				toAssign = append(toAssign, tp)
			}
		}
	}
	for _, tp := range toAssign {
		if len(b.topicMembers[tp.Topic]) > 0 {
			b.assignToLeastLoaded(tp, false)
		}
	}

	// Partitions of topics with one subscriber, and members that can
	// neither gain nor lose, sit out the moves.
	movable := func(tp TopicPartition) bool { return b.canTopicMove(tp.Topic) }
	b.sortedPartitions = slices.DeleteFunc(b.sortedPartitions, func(tp TopicPartition) bool { return !movable(tp) })
	unassigned = slices.DeleteFunc(unassigned, func(tp TopicPartition) bool { return !movable(tp) })
	fixed := map[string][]TopicPartition{}
	for _, id := range b.s.ids {
		if !b.canMemberMove(id) {
			b.sorted.remove(id)
			fixed[id] = b.current[id]
			delete(b.current, id)
		}
	}

	before := cloneAssignment(b.current)
	beforeOwners := make(map[TopicPartition]string, len(b.partitionMember))
	for tp, m := range b.partitionMember {
		beforeOwners[tp] = m
	}
	if !b.revocationRequired {
		b.performReassignments(unassigned, prev)
	}
	moved := b.performReassignments(b.sortedPartitions, prev)
	if !initializing && moved && balanceScore(b.current) >= balanceScore(before) {
		b.current = before
		b.partitionMember = beforeOwners
	}
	for id, tps := range fixed {
		b.current[id] = tps
	}
}

func cloneAssignment(a map[string][]TopicPartition) map[string][]TopicPartition {
	out := make(map[string][]TopicPartition, len(a))
	for k, v := range a {
		out[k] = slices.Clone(v)
	}
	return out
}

// performReassignments moves partitions from overloaded members until
// balanced or no move helps; it reports whether anything moved.
func (b *generalBuilder) performReassignments(partitions []TopicPartition, prev map[TopicPartition]ownerGeneration) bool {
	performed := false
	for modified := true; modified; {
		modified = false
		for _, tp := range partitions {
			if b.isBalanced() {
				break
			}
			owner, ok := b.partitionMember[tp]
			if _, participating := b.current[owner]; !ok || !participating {
				continue
			}
			size := len(b.current[owner])
			// Give it back to its owner of an older generation if that
			// member is two behind. (Kafka does not check the older owner
			// still subscribes to the topic; a partition must never go to a
			// member that does not, so that is checked here.)
			if p, ok := prev[tp]; ok {
				if tps, participating := b.current[p.member]; participating && b.memberTopics[p.member][tp.Topic] && size > len(tps)+1 {
					b.reassign(tp, p.member)
					performed, modified = true, true
					continue
				}
			}
			moved := false
			if rack, ok := b.s.rack.memberRack[owner]; ok && b.s.rack.partitionRacks[tp][rack] {
				for _, other := range b.topicMembers[tp.Topic] {
					otherRack, ok := b.s.rack.memberRack[other]
					tps, participating := b.current[other]
					if !ok || !b.s.rack.partitionRacks[tp][otherRack] || !participating {
						continue
					}
					if size > len(tps)+1 {
						b.reassignToLeastLoaded(tp)
						moved = true
						break
					}
				}
			}
			if !moved {
				for _, other := range b.topicMembers[tp.Topic] {
					if tps, participating := b.current[other]; participating && size > len(tps)+1 {
						b.reassignToLeastLoaded(tp)
						moved = true
						break
					}
				}
			}
			if moved {
				performed, modified = true, true
			}
		}
	}
	return performed
}

func (b *generalBuilder) reassignToLeastLoaded(tp TopicPartition) {
	for _, id := range b.sorted.ids {
		if b.memberTopics[id][tp.Topic] {
			b.reassign(tp, id)
			return
		}
	}
}

// reassign moves tp (or, to keep stickiness, the partition that undoes an
// earlier move between the same members) to newOwner.
func (b *generalBuilder) reassign(tp TopicPartition, newOwner string) {
	owner := b.partitionMember[tp]
	actual := b.movements.partitionToMove(tp, owner, newOwner)
	old := b.partitionMember[actual]
	b.sorted.remove(old)
	b.sorted.remove(newOwner)
	b.movements.move(actual, old, newOwner)
	b.current[old] = slices.DeleteFunc(b.current[old], func(x TopicPartition) bool { return x == actual })
	b.current[newOwner] = append(b.current[newOwner], actual)
	b.partitionMember[actual] = newOwner
	b.sorted.add(newOwner)
	b.sorted.add(old)
}

// sortedMembers keeps member ids ordered by (assignment size, id), Kafka's
// sortedCurrentSubscriptions. A member must be removed before its size
// changes and added back after.
type sortedMembers struct {
	ids  []string
	size func(string) int
}

func (s *sortedMembers) cmp(a, b string) int {
	if c := cmp.Compare(s.size(a), s.size(b)); c != 0 {
		return c
	}
	return strings.Compare(a, b)
}

func (s *sortedMembers) add(id string) {
	i, found := slices.BinarySearchFunc(s.ids, id, s.cmp)
	if !found {
		s.ids = slices.Insert(s.ids, i, id)
	}
}

func (s *sortedMembers) remove(id string) {
	if i, found := slices.BinarySearchFunc(s.ids, id, s.cmp); found {
		s.ids = slices.Delete(s.ids, i, i+1)
	}
}

func (s *sortedMembers) len() int      { return len(s.ids) }
func (s *sortedMembers) first() string { return s.ids[0] }
func (s *sortedMembers) last() string  { return s.ids[len(s.ids)-1] }

// memberPair is a movement of partitions from src to dst.
type memberPair struct{ src, dst string }

// partitionMovements records, per topic, which partitions moved between
// which members in this assignment, so that a move in the reverse direction
// takes back a moved partition instead of moving a second one.
type partitionMovements struct {
	byTopic     map[string]map[memberPair]*movedSet
	byPartition map[TopicPartition]memberPair
	seq         *int64 // insertion counter for movedSet order
}

// movedSet is a set of partitions that remembers what Kafka's HashSet
// iteration order needs: when each entry went in, and the most entries it
// ever held (its table never shrinks).
type movedSet struct {
	added   map[TopicPartition]int64
	maxSize int
}

func newPartitionMovements() partitionMovements {
	return partitionMovements{byTopic: map[string]map[memberPair]*movedSet{}, byPartition: map[TopicPartition]memberPair{}, seq: new(int64)}
}

func (pm partitionMovements) removeRecord(tp TopicPartition) memberPair {
	pair := pm.byPartition[tp]
	delete(pm.byPartition, tp)
	forTopic := pm.byTopic[tp.Topic]
	delete(forTopic[pair].added, tp)
	if len(forTopic[pair].added) == 0 {
		delete(forTopic, pair)
	}
	if len(forTopic) == 0 {
		delete(pm.byTopic, tp.Topic)
	}
	return pair
}

func (pm partitionMovements) addRecord(tp TopicPartition, pair memberPair) {
	pm.byPartition[tp] = pair
	forTopic := pm.byTopic[tp.Topic]
	if forTopic == nil {
		forTopic = map[memberPair]*movedSet{}
		pm.byTopic[tp.Topic] = forTopic
	}
	set := forTopic[pair]
	if set == nil {
		set = &movedSet{added: map[TopicPartition]int64{}}
		forTopic[pair] = set
	}
	*pm.seq++
	set.added[tp] = *pm.seq
	set.maxSize = max(set.maxSize, len(set.added))
}

// move records tp moving old -> newOwner; a partition moved back to where
// it started has no record.
func (pm partitionMovements) move(tp TopicPartition, old, newOwner string) {
	if _, ok := pm.byPartition[tp]; ok {
		existing := pm.removeRecord(tp)
		if existing.src != newOwner {
			pm.addRecord(tp, memberPair{existing.src, newOwner})
		}
		return
	}
	pm.addRecord(tp, memberPair{old, newOwner})
}

// partitionToMove returns the partition to move from old to newOwner in
// place of tp: one that earlier moved newOwner -> (tp's original owner), if
// any, so that move is undone. Kafka takes the first of them in its
// HashSet's order, and so does this.
func (pm partitionMovements) partitionToMove(tp TopicPartition, old, newOwner string) TopicPartition {
	forTopic, ok := pm.byTopic[tp.Topic]
	if !ok {
		return tp
	}
	if pair, ok := pm.byPartition[tp]; ok {
		old = pair.src
	}
	reverse := forTopic[memberPair{newOwner, old}]
	if reverse == nil || len(reverse.added) == 0 {
		return tp
	}
	return reverse.first()
}

// first is the entry Java's HashSet<TopicPartition> iterates first: the
// lowest bucket of the spread TopicPartition.hashCode in a table sized for
// the most entries the set held, the earliest added within a bucket.
func (s *movedSet) first() TopicPartition {
	capacity := 16
	for s.maxSize > capacity*3/4 {
		capacity *= 2
	}
	var best TopicPartition
	bestBucket, bestSeq := -1, int64(0)
	for tp, seq := range s.added {
		h := 31*(31+uint32(tp.Partition)) + javaStringHash(tp.Topic)
		bucket := int((h ^ (h >> 16)) & uint32(capacity-1))
		if bestBucket < 0 || bucket < bestBucket || (bucket == bestBucket && seq < bestSeq) {
			best, bestBucket, bestSeq = tp, bucket, seq
		}
	}
	return best
}
