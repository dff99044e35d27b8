package assignor

import (
	"cmp"
	"slices"
	"strings"
)

// constrainedBuilder is Kafka's sticky algorithm for the common case where
// every member subscribes to the same topics. With N partitions and M
// members each member ends with minQuota = N/M or maxQuota = ceil(N/M)
// partitions, exactly N%M of them with maxQuota. Members first keep owned
// partitions up to their quota; the rest are dealt round-robin to members
// under quota, preferring (with racks) a member on a rack holding a replica.
type constrainedBuilder struct {
	s                  *stickyState
	minQuota, maxQuota int
	expectedOverMin    int // members that end with maxQuota
	currentOverMin     int
	underMin           []string // members still below minQuota
	exactlyMin         []string // members at minQuota that may take one more
	maybeRevoked       map[TopicPartition]string
	assigned           []TopicPartition
	assignment         Assignment
	transferring       map[TopicPartition]string
}

func newConstrainedBuilder(s *stickyState) *constrainedBuilder {
	total, n := s.totalPartitions(), len(s.ids)
	b := &constrainedBuilder{s: s, maybeRevoked: map[TopicPartition]string{}, assignment: Assignment{}, transferring: map[TopicPartition]string{}}
	if n > 0 {
		b.minQuota = total / n
		b.maxQuota = (total + n - 1) / n
		b.expectedOverMin = total % n
	}
	for _, id := range s.ids {
		b.assignment[id] = make([]TopicPartition, 0, b.maxQuota)
	}
	return b
}

func (b *constrainedBuilder) build() error {
	b.assignOwned()
	unassigned := b.unassignedPartitions()
	slices.Sort(b.underMin)
	slices.Sort(b.exactlyMin)
	b.s.rack.sortByRackMembers(unassigned)
	unassigned = b.assignRackAwareRoundRobin(unassigned)
	if err := b.assignRoundRobin(unassigned); err != nil {
		return err
	}
	return b.verifyUnfilled()
}

// assignOwned keeps each member's owned partitions (rack-matching ones
// only) up to its quota; the excess may be revoked.
func (b *constrainedBuilder) assignOwned() {
	for _, id := range b.s.walk {
		var owned []TopicPartition
		for _, tp := range b.s.owned[id] {
			if b.s.rack.racksMismatch(id, tp) {
				b.maybeRevoked[tp] = id
				continue
			}
			if b.s.multiOwned[tp] {
				continue
			}
			owned = append(owned, tp)
		}
		// Kafka keeps the lowest partition numbers first, across topics.
		slices.SortFunc(owned, func(x, y TopicPartition) int {
			if c := cmp.Compare(x.Partition, y.Partition); c != 0 {
				return c
			}
			return strings.Compare(x.Topic, y.Topic)
		})
		switch {
		case len(owned) < b.minQuota:
			b.keep(id, owned)
			b.underMin = append(b.underMin, id)
		case len(owned) >= b.maxQuota && b.currentOverMin < b.expectedOverMin:
			b.currentOverMin++
			if b.currentOverMin == b.expectedOverMin {
				b.exactlyMin = b.exactlyMin[:0]
			}
			b.keep(id, owned[:b.maxQuota])
			for _, tp := range owned[b.maxQuota:] {
				b.maybeRevoked[tp] = id
			}
		default:
			b.keep(id, owned[:b.minQuota])
			for _, tp := range owned[b.minQuota:] {
				b.maybeRevoked[tp] = id
			}
			if b.currentOverMin < b.expectedOverMin {
				b.exactlyMin = append(b.exactlyMin, id)
			}
		}
	}
}

func (b *constrainedBuilder) keep(id string, tps []TopicPartition) {
	b.assignment[id] = append(b.assignment[id], tps...)
	b.assigned = append(b.assigned, tps...)
}

// unassignedPartitions lists, by topic then partition, what assignOwned
// did not keep.
func (b *constrainedBuilder) unassignedPartitions() []TopicPartition {
	kept := make(map[TopicPartition]bool, len(b.assigned))
	for _, tp := range b.assigned {
		kept[tp] = true
	}
	all := b.s.allPartitions(sortedKeys(b.s.topics))
	out := all[:0]
	for _, tp := range all {
		if !kept[tp] {
			out = append(out, tp)
		}
	}
	return out
}

// assignRackAwareRoundRobin deals partitions to rack-matching members: first
// round-robin over members under minQuota, else the first rack-matching
// member that may still take its one extra. It returns what is left.
func (b *constrainedBuilder) assignRackAwareRoundRobin(unassigned []TopicPartition) []TopicPartition {
	if len(b.s.rack.memberRack) == 0 {
		return unassigned
	}
	next := 0
	left := unassigned[:0:0]
	for _, tp := range unassigned {
		member := ""
		if idx := b.s.rack.nextRackMember(tp, b.underMin, next); idx >= 0 {
			member = b.underMin[idx]
			count := len(b.assignment[member]) + 1
			if count >= b.minQuota {
				b.underMin = slices.Delete(b.underMin, idx, idx+1)
				if count < b.maxQuota && b.currentOverMin < b.expectedOverMin {
					b.exactlyMin = append(b.exactlyMin, member)
				}
			} else {
				idx++
			}
			next = 0
			if len(b.underMin) > 0 {
				next = idx % len(b.underMin)
			}
		} else if len(b.exactlyMin) > 0 {
			if idx := b.s.rack.nextRackMember(tp, b.exactlyMin, 0); idx >= 0 {
				member = b.exactlyMin[idx]
				if len(b.assignment[member])+1 == b.maxQuota {
					b.exactlyMin = slices.Delete(b.exactlyMin, idx, idx+1)
					b.currentOverMin++
					if b.currentOverMin == b.expectedOverMin {
						b.exactlyMin = b.exactlyMin[:0]
					}
				}
			}
		}
		if member == "" {
			left = append(left, tp)
			continue
		}
		b.assignNew(tp, member)
	}
	return left
}

// assignRoundRobin deals the rest: round-robin over members under
// minQuota, then one each to members at minQuota, in order.
func (b *constrainedBuilder) assignRoundRobin(unassigned []TopicPartition) error {
	pos := 0 // next index into underMin, as Kafka's iterator
	for _, tp := range unassigned {
		var member string
		fromUnderMin := false
		switch {
		case pos < len(b.underMin):
			member = b.underMin[pos]
			pos++
			fromUnderMin = true
		case len(b.underMin) == 0 && len(b.exactlyMin) == 0:
			return errf("no member left to take %s", tp)
		case len(b.underMin) == 0:
			member = b.exactlyMin[0]
			b.exactlyMin = b.exactlyMin[1:]
		default:
			member = b.underMin[0]
			pos = 1
			fromUnderMin = true
		}
		count := b.assignNew(tp, member)
		if count == b.minQuota {
			if fromUnderMin {
				b.underMin = slices.Delete(b.underMin, pos-1, pos)
				pos--
			}
			b.exactlyMin = append(b.exactlyMin, member)
		} else if count == b.maxQuota {
			b.currentOverMin++
		}
	}
	return nil
}

// assignNew gives tp to member and records it as transferring when another
// member owned it. It returns the member's new partition count.
func (b *constrainedBuilder) assignNew(tp TopicPartition, member string) int {
	b.assignment[member] = append(b.assignment[member], tp)
	if owner, ok := b.maybeRevoked[tp]; (ok && owner != member) || b.s.multiOwned[tp] {
		b.transferring[tp] = member
	}
	return len(b.assignment[member])
}

// verifyUnfilled checks the invariant that every member reached minQuota.
func (b *constrainedBuilder) verifyUnfilled() error {
	if len(b.underMin) == 0 {
		return nil
	}
	if b.currentOverMin != b.expectedOverMin {
		return errf("%d members have maxQuota partitions, want %d, and members %v are still under minQuota", b.currentOverMin, b.expectedOverMin, b.underMin)
	}
	for _, id := range b.underMin {
		if n := len(b.assignment[id]); n != b.minQuota {
			return errf("member %s has %d partitions, under minQuota %d", id, n, b.minQuota)
		}
	}
	return nil
}
