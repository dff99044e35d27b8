package assignor

import (
	"slices"
)

// Range is Kafka's RangeAssignor: per topic, the members subscribed to it,
// in order (static members by group.instance.id, then member id), each take
// a contiguous range; the first partitions%members members take one extra.
// With racks (KIP-881) partitions are first matched to members on a rack
// holding a replica, within the same per-member quota; co-partitioned
// topics (same subscribers, same partition count) keep the same partition
// numbers on the same member, so joins across them stay local.
type Range struct{}

func (Range) Name() string                            { return RangeName }
func (Range) Protocols() []RebalanceProtocol          { return []RebalanceProtocol{Eager} }
func (Range) UserData([]TopicPartition, int32) []byte { return nil }

// rangeTopic is the per-topic state of a range assignment.
type rangeTopic struct {
	topic      string
	members    []string          // subscribers in Kafka's member order
	memberRack map[string]string // subscriber -> rack, only those with one
	racks      map[int32]map[string]bool
	rackAware  bool
	unassigned []int32 // ascending
	assigned   map[string]int
	quota      int // partitions per member
	extra      int // members that may still take quota+1
}

func (t *rangeTopic) maxAssignable(member string) int {
	n := t.quota - t.assigned[member]
	if t.extra > 0 {
		n++
	}
	return max(0, n)
}

// racksMatch: a member without a rack matches anything.
func (t *rangeTopic) racksMatch(member string, p int32) bool {
	rack, ok := t.memberRack[member]
	return !ok || t.racks[p][rack]
}

func (t *rangeTopic) take(out Assignment, member string, parts []int32) {
	for _, p := range parts {
		out[member] = append(out[member], TopicPartition{t.topic, p})
	}
	t.assigned[member] += len(parts)
	if t.assigned[member] > t.quota {
		t.extra--
	}
	t.unassigned = slices.DeleteFunc(t.unassigned, func(p int32) bool { return slices.Contains(parts, p) })
}

// assignRanges gives each member, in order, the first unassigned partitions
// that mayAssign allows, up to its quota.
func (t *rangeTopic) assignRanges(out Assignment, mayAssign func(string, int32) bool) {
	for _, m := range t.members {
		if len(t.unassigned) == 0 {
			return
		}
		limit := t.maxAssignable(m)
		var parts []int32
		for _, p := range t.unassigned {
			if len(parts) == limit {
				break
			}
			if mayAssign(m, p) {
				parts = append(parts, p)
			}
		}
		if len(parts) > 0 {
			t.take(out, m, parts)
		}
	}
}

func (Range) Assign(members []Member, topics map[string]Topic) (Assignment, error) {
	if err := checkMembers(members, topics); err != nil {
		return nil, err
	}
	ordered := make([]*Member, len(members))
	for i := range members {
		ordered[i] = &members[i]
	}
	slices.SortFunc(ordered, compareMembers)
	subscribers := map[string][]string{}
	memberRack := map[string]string{}
	for _, m := range ordered {
		if m.Rack != "" {
			memberRack[m.ID] = m.Rack
		}
		for topic := range topicSet(m.Topics) {
			subscribers[topic] = append(subscribers[topic], m.ID)
		}
	}

	var states []*rangeTopic
	for _, name := range sortedKeys(topics) {
		meta := topics[name]
		subs := subscribers[name]
		if meta.Partitions == 0 || len(subs) == 0 {
			continue
		}
		t := &rangeTopic{topic: name, members: subs, memberRack: map[string]string{}, assigned: map[string]int{},
			quota: int(meta.Partitions) / len(subs), extra: int(meta.Partitions) % len(subs)}
		for p := int32(0); p < meta.Partitions; p++ {
			t.unassigned = append(t.unassigned, p)
		}
		consumerRacks := map[string]bool{}
		for _, m := range subs {
			if r, ok := memberRack[m]; ok {
				t.memberRack[m] = r
				consumerRacks[r] = true
			}
		}
		if len(consumerRacks) > 0 {
			t.racks = map[int32]map[string]bool{}
			byTP := map[TopicPartition]map[string]bool{}
			for p := int32(0); p < meta.Partitions; p++ {
				t.racks[p] = replicaRacks(meta, p)
				byTP[TopicPartition{name, p}] = t.racks[p]
			}
			t.rackAware = useRackAware(consumerRacks, byTP)
		}
		states = append(states, t)
	}

	out := newAssignment(members)
	if slices.ContainsFunc(states, func(t *rangeTopic) bool { return t.rackAware }) {
		assignRangeRackMatching(states, out)
	}
	for _, t := range states {
		t.assignRanges(out, func(string, int32) bool { return true })
	}
	out.sortAll()
	return out, nil
}

// assignRangeRackMatching is the rack pass: topics are grouped by their
// subscribers (with racks) and partition count; a group of several topics is
// co-partitioned and partition p of all of them goes to the first member
// matching p's racks in every topic; a lone topic is ranged over matching
// members only. What stays unassigned is ranged without racks afterwards.
func assignRangeRackMatching(states []*rangeTopic, out Assignment) {
	type groupKey struct {
		members    string
		partitions int
	}
	groups := map[groupKey][]*rangeTopic{}
	var order []groupKey
	for _, t := range states {
		key := groupKey{membersKey(t), len(t.racks)}
		if _, ok := groups[key]; !ok {
			order = append(order, key)
		}
		groups[key] = append(groups[key], t)
	}
	for _, key := range order {
		ts := groups[key]
		if len(ts) == 1 {
			if t := ts[0]; t.rackAware {
				t.assignRanges(out, t.racksMatch)
			}
			continue
		}
		remaining := slices.Clone(ts[0].members)
		for p := int32(0); p < int32(key.partitions) && len(remaining) > 0; p++ {
			idx := slices.IndexFunc(remaining, func(m string) bool {
				for _, t := range ts {
					if !t.racksMatch(m, p) || t.maxAssignable(m) == 0 {
						return false
					}
				}
				return true
			})
			if idx < 0 {
				continue
			}
			m := remaining[idx]
			for _, t := range ts {
				t.take(out, m, []int32{p})
			}
			if !slices.ContainsFunc(ts, func(t *rangeTopic) bool { return t.maxAssignable(m) > 0 }) {
				remaining = slices.Delete(remaining, idx, idx+1)
			}
		}
	}
}

// membersKey identifies a topic's subscribers and their racks, the way
// Kafka groups topics by the ordered member -> rack map.
func membersKey(t *rangeTopic) string {
	var b []byte
	for _, m := range t.members {
		b = append(b, m...)
		b = append(b, 0)
		if r, ok := t.memberRack[m]; ok {
			b = append(b, 1)
			b = append(b, r...)
		}
		b = append(b, 0)
	}
	return string(b)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
