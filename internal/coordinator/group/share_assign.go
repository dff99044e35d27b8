package group

// The simple share assignor (Kafka's SimpleAssignor, "simple", the one
// share group assignor). Per topic, over the partitions whose
// share-partition state is initialized: with fewer members than
// partitions each partition goes to one member and the partitions are
// spread evenly; with more members than partitions each partition is
// shared by ceil(members / partitions) members, so that every member gets
// at least one. Member i of the topic's sorted subscribers is due
// ceil((i+1) * slots / members) - ceil(i * slots / members) partitions,
// slots being the partitions times their sharing. It is sticky: a member
// keeps what it had in the previous target as far as the balance allows.

import "sort"

// shareAssignorName is the name ShareGroupDescribe reports.
const shareAssignorName = "simple"

func assignShare(members map[string]*shareMember, subscription Topics, initialized map[[16]byte]*shareTopic, prev map[string]assignment) map[string]assignment {
	out := make(map[string]assignment, len(members))
	ids := make([]string, 0, len(members))
	for id := range members {
		ids = append(ids, id)
		out[id] = assignment{}
	}
	sort.Strings(ids)
	names := make([]string, 0, len(subscription))
	for n := range subscription {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		t := subscription[name]
		init := initialized[t.ID]
		if init == nil {
			continue
		}
		var parts []int32
		for p := range init.partitions {
			if p < t.Partitions {
				parts = append(parts, p)
			}
		}
		if len(parts) == 0 {
			continue
		}
		sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
		var subs []string
		for _, id := range ids {
			if _, ok := sort.Find(len(members[id].topicNames), func(i int) int { return compareStrings(name, members[id].topicNames[i]) }); ok {
				subs = append(subs, id)
			}
		}
		if len(subs) == 0 {
			continue
		}
		assignShareTopic(t.ID, parts, subs, prev, out)
	}
	return out
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// assignShareTopic spreads one topic's partitions over its subscribers.
func assignShareTopic(topic [16]byte, parts []int32, subs []string, prev map[string]assignment, out map[string]assignment) {
	nSubs, nParts := len(subs), len(parts)
	sharing := (nSubs + nParts - 1) / nParts
	slots := sharing * nParts
	due := make(map[string]int, nSubs)
	cum := 0
	for i, id := range subs {
		upTo := ((i+1)*slots + nSubs - 1) / nSubs
		due[id] = upTo - cum
		cum = upTo
	}
	valid := make(map[int32]bool, nParts)
	for _, p := range parts {
		valid[p] = true
	}
	holders := make(map[int32]map[string]bool, nParts)
	held := make(map[string][]int32, nSubs)
	hold := func(id string, p int32) {
		if holders[p] == nil {
			holders[p] = map[string]bool{}
		}
		holders[p][id] = true
		held[id] = append(held[id], p)
	}
	// Keep the previous target's partitions, up to what each member is due.
	for _, id := range subs {
		var had []int32
		for k := range prev[id] {
			if k.topic == topic && valid[k.partition] {
				had = append(had, k.partition)
			}
		}
		sort.Slice(had, func(i, j int) bool { return had[i] < had[j] })
		for _, p := range had {
			if len(held[id]) < due[id] {
				hold(id, p)
			}
		}
	}
	// A partition shared by more members than it may be loses the extra
	// ones, those with the most partitions first (then by member id).
	drop := func(id string, p int32) {
		delete(holders[p], id)
		ps := held[id]
		for i, q := range ps {
			if q == p {
				held[id] = append(ps[:i:i], ps[i+1:]...)
				break
			}
		}
	}
	for _, p := range parts {
		for len(holders[p]) > sharing {
			var worst string
			for id := range holders[p] {
				if worst == "" || len(held[id]) > len(held[worst]) || (len(held[id]) == len(held[worst]) && id < worst) {
					worst = id
				}
			}
			drop(worst, p)
		}
	}
	// Fill: each partition up to its sharing, round robin over the members
	// still short, never giving a member the same partition twice.
	var short []string
	for _, id := range subs {
		if len(held[id]) < due[id] {
			short = append(short, id)
		}
	}
	next := 0
	for _, p := range parts {
		for len(holders[p]) < sharing && len(short) > 0 {
			placed := false
			for tries := 0; tries < len(short); tries++ {
				i := (next + tries) % len(short)
				id := short[i]
				if holders[p][id] {
					continue
				}
				hold(id, p)
				if len(held[id]) >= due[id] {
					short = append(short[:i:i], short[i+1:]...)
					if len(short) > 0 {
						next = i % len(short)
					}
				} else {
					next = (i + 1) % len(short)
				}
				placed = true
				break
			}
			if !placed {
				break
			}
		}
	}
	for id, ps := range held {
		for _, p := range ps {
			out[id][tp{topic, p}] = true
		}
	}
}
