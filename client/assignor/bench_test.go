package assignor

import (
	"fmt"
	"testing"
)

// benchGroup: members subscribed to topics x partitionsPerTopic; with
// uneven set, every fourth member subscribes to half of the topics only
// (the general algorithm).
func benchGroup(members, topics, partitionsPerTopic int, uneven bool) (map[string]Topic, []Member) {
	meta := map[string]Topic{}
	var all, half []string
	for i := range topics {
		name := fmt.Sprintf("topic-%03d", i)
		meta[name] = Topic{Partitions: int32(partitionsPerTopic)}
		all = append(all, name)
		if i < topics/2 {
			half = append(half, name)
		}
	}
	ms := make([]Member, members)
	for i := range ms {
		subs := all
		if uneven && i%4 == 0 {
			subs = half
		}
		ms[i] = Member{ID: fmt.Sprintf("consumer-%04d", i), Subscription: Subscription{Topics: subs, Generation: -1}}
	}
	return meta, ms
}

// BenchmarkSticky: 1,000 members x 10,000 partitions (10 topics x 1,000).
// "initial" assigns a new group; "rebalance" reassigns after one member of
// a settled group (generation 1) leaves and another joins.
func BenchmarkSticky(b *testing.B) {
	for _, uneven := range []bool{false, true} {
		topics, members := benchGroup(1000, 10, 1000, uneven)
		kind := "equal"
		if uneven {
			kind = "unequal"
		}
		for _, a := range []Assignor{Sticky{}, CooperativeSticky{}} {
			b.Run(fmt.Sprintf("%s/%s/initial", a.Name(), kind), func(b *testing.B) {
				for b.Loop() {
					if _, err := a.Assign(members, topics); err != nil {
						b.Fatal(err)
					}
				}
			})
			first, err := a.Assign(members, topics)
			if err != nil {
				b.Fatal(err)
			}
			settled := nextGeneration(a, members, first, 1)
			changed := append(settled[1:], Member{ID: "consumer-new", Subscription: Subscription{Topics: settled[1].Topics, Generation: -1}})
			b.Run(fmt.Sprintf("%s/%s/rebalance", a.Name(), kind), func(b *testing.B) {
				for b.Loop() {
					if _, err := a.Assign(changed, topics); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
