package group

import (
	"sort"
	"strings"
)

// The server-side assignors of group.consumer.assignors, by the names
// clients ask for (Kafka's UniformAssignor "uniform", RangeAssignor "range").
const (
	AssignorUniform = "uniform"
	AssignorRange   = "range"
)

// AssignorName maps an entry of group.consumer.assignors (a name or a
// Kafka class name) to the assignor's name; "" if unknown.
func AssignorName(entry string) string {
	e := strings.TrimSpace(entry)
	switch {
	case strings.EqualFold(e, AssignorUniform) || strings.HasSuffix(e, ".UniformAssignor"):
		return AssignorUniform
	case strings.EqualFold(e, AssignorRange) || strings.HasSuffix(e, ".RangeAssignor"):
		return AssignorRange
	}
	return ""
}

func (s *Shard) assignors() []string {
	if len(s.cfg.ConsumerAssignors) == 0 {
		return []string{AssignorUniform, AssignorRange}
	}
	return s.cfg.ConsumerAssignors
}

func (s *Shard) supportsAssignor(name string) bool {
	for _, a := range s.assignors() {
		if a == name {
			return true
		}
	}
	return false
}

// groupAssignor is the assignor the group uses: the one most members ask
// for, else the first configured (Kafka's default is the first).
func (s *Shard) groupAssignor(c *consumerGroup) string {
	votes := map[string]int{}
	best := ""
	for _, id := range c.sortedMembers() {
		if a := c.members[id].serverAssignor; a != "" {
			votes[a]++
			if best == "" || votes[a] > votes[best] {
				best = a
			}
		}
	}
	if best == "" {
		best = s.assignors()[0]
	}
	return best
}

// updateTarget bumps the group epoch when a member changed (bump) or the
// subscribed topics' metadata did, and recomputes the target assignment once
// the epoch has moved past it: the same steps for a heartbeat of the consumer
// protocol and a JoinGroup of a classic member of a consumer group.
func (s *Shard) updateTarget(c *consumerGroup, topics Topics, bump bool) {
	subs, meta := c.subscribed(topics)
	if !c.sameSubscription(meta) {
		c.subscription = meta
		bump = true
	}
	if bump {
		c.epoch++
		s.cfg.Meters.ConsumerGroupRebalanced()
	}
	if c.epoch > c.assignmentEpoch {
		c.target = s.assign(c, subs, topics)
		c.assignmentEpoch = c.epoch
	}
}

// assign computes the target assignment of every member.
func (s *Shard) assign(c *consumerGroup, subs map[string][]string, topics Topics) map[string]assignment {
	if s.groupAssignor(c) == AssignorRange {
		return rangeAssign(c.sortedMembers(), subs, topics)
	}
	return uniformAssign(c.sortedMembers(), subs, topics, c.target)
}

// rangeAssign gives each member, topic by topic, a contiguous range of
// partitions among the members subscribed to the topic (sorted by id), the
// first ones getting one extra when it does not divide evenly.
func rangeAssign(members []string, subs map[string][]string, topics Topics) map[string]assignment {
	out := map[string]assignment{}
	byTopic := map[string][]string{}
	for _, id := range members {
		out[id] = assignment{}
		for _, t := range subs[id] {
			byTopic[t] = append(byTopic[t], id)
		}
	}
	for t, ms := range byTopic {
		info := topics[t]
		n := int32(len(ms))
		per, extra := info.Partitions/n, info.Partitions%n
		p := int32(0)
		for i, id := range ms {
			k := per
			if int32(i) < extra {
				k++
			}
			for j := int32(0); j < k; j++ {
				out[id][tp{info.ID, p}] = true
				p++
			}
		}
	}
	return out
}

// uniformAssign spreads partitions evenly over the members subscribed to
// them, keeping each partition with its previous target owner while that
// owner stays within its share (sticky, like Kafka's UniformAssignor).
func uniformAssign(members []string, subs map[string][]string, topics Topics, prev map[string]assignment) map[string]assignment {
	out := map[string]assignment{}
	subscribed := map[[16]byte]map[string]bool{}
	names := map[[16]byte]string{}
	for _, id := range members {
		out[id] = assignment{}
		for _, t := range subs[id] {
			info := topics[t]
			names[info.ID] = t
			if subscribed[info.ID] == nil {
				subscribed[info.ID] = map[string]bool{}
			}
			subscribed[info.ID][id] = true
		}
	}
	var all []tp
	for id := range subscribed {
		for p := int32(0); p < topics[names[id]].Partitions; p++ {
			all = append(all, tp{id, p})
		}
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].topic != all[j].topic {
			return string(all[i].topic[:]) < string(all[j].topic[:])
		}
		return all[i].partition < all[j].partition
	})
	// Quota: each member's fair share of the partitions it could take.
	n := len(members)
	if n == 0 {
		return out
	}
	floor, extra := len(all)/n, len(all)%n
	owner := map[tp]string{}
	for _, id := range members {
		for p := range prev[id] {
			owner[p] = id
		}
	}
	var free []tp
	for _, p := range all {
		o, ok := owner[p]
		if ok && subscribed[p.topic][o] && len(out[o]) < floor {
			out[o][p] = true
			continue
		}
		free = append(free, p)
	}
	// Previous owners above the floor keep one more while extras remain.
	var rest []tp
	for _, p := range free {
		o, ok := owner[p]
		if ok && subscribed[p.topic][o] && len(out[o]) == floor && extra > 0 {
			out[o][p] = true
			extra--
			continue
		}
		rest = append(rest, p)
	}
	// Partitions with the fewest candidates first, so that members with
	// narrower subscriptions are filled before the others take everything.
	sort.SliceStable(rest, func(i, j int) bool { return len(subscribed[rest[i].topic]) < len(subscribed[rest[j].topic]) })
	for _, p := range rest {
		best := ""
		for _, id := range members {
			if !subscribed[p.topic][id] {
				continue
			}
			if best == "" || len(out[id]) < len(out[best]) {
				best = id
			}
		}
		if best != "" {
			out[best][p] = true
		}
	}
	return out
}
