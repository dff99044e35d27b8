package assignor_test

import (
	"fmt"

	"gregor/client/assignor"
)

// A group leader's work in a classic consumer group: pick the assignor
// every member supports, decode the subscriptions, assign, and encode each
// member's assignment for SyncGroup.
func Example() {
	// What each member sent in JoinGroup: its assignors, preferred first,
	// and the subscription bytes (here encoded on the spot).
	joins := map[string]struct {
		strategy string
		sub      assignor.Subscription
	}{
		"consumer-a": {"cooperative-sticky,range", assignor.Subscription{Topics: []string{"orders"}, Generation: -1}},
		"consumer-b": {"range", assignor.Subscription{Topics: []string{"orders", "payments"}, Generation: -1}},
	}
	var lists [][]string
	var members []assignor.Member
	for _, id := range []string{"consumer-a", "consumer-b"} {
		j := joins[id]
		as, err := assignor.ParseStrategy(j.strategy)
		if err != nil {
			panic(err)
		}
		var list []string
		for _, a := range as {
			list = append(list, a.Name())
		}
		lists = append(lists, list)

		raw, err := assignor.EncodeSubscription(j.sub, assignor.MaxSubscriptionVersion)
		if err != nil {
			panic(err)
		}
		sub, _, err := assignor.DecodeSubscription(raw)
		if err != nil {
			panic(err)
		}
		members = append(members, assignor.Member{ID: id, Subscription: sub})
	}

	name, err := assignor.SelectProtocol(lists)
	if err != nil {
		panic(err)
	}
	a, err := assignor.ByName(name)
	if err != nil {
		panic(err)
	}
	topics := map[string]assignor.Topic{"orders": {Partitions: 3}, "payments": {Partitions: 2}}
	assignment, err := a.Assign(members, topics)
	if err != nil {
		panic(err)
	}
	fmt.Println("assignor:", name)
	for _, m := range members {
		syncBytes, err := assignor.EncodeAssignment(assignment[m.ID], nil, assignor.MaxAssignmentVersion)
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s: %v (%d bytes)\n", m.ID, assignment[m.ID], len(syncBytes))
	}
	// Output:
	// assignor: range
	// consumer-a: [orders-0 orders-1] (30 bytes)
	// consumer-b: [orders-2 payments-0 payments-1] (48 bytes)
}

// The cooperative protocol moves a partition in two rebalances: first its
// owner gives it up, then it is assigned.
func ExampleCooperativeSticky() {
	topics := map[string]assignor.Topic{"orders": {Partitions: 4}}
	owner := assignor.Member{ID: "a", Subscription: assignor.Subscription{
		Topics:          []string{"orders"},
		OwnedPartitions: []assignor.TopicPartition{{"orders", 0}, {"orders", 1}, {"orders", 2}, {"orders", 3}},
		Generation:      7,
	}}
	joiner := assignor.Member{ID: "b", Subscription: assignor.Subscription{Topics: []string{"orders"}, Generation: -1}}

	c := assignor.CooperativeSticky{}
	first, _ := c.Assign([]assignor.Member{owner, joiner}, topics)
	_, revoked := assignor.Diff(owner.OwnedPartitions, first["a"])
	fmt.Println("first:  a", first["a"], "b", first["b"], "a revokes", revoked)

	owner.OwnedPartitions, owner.Generation = first["a"], 8
	second, _ := c.Assign([]assignor.Member{owner, joiner}, topics)
	fmt.Println("second: a", second["a"], "b", second["b"])
	// Output:
	// first:  a [orders-0 orders-1] b [] a revokes [orders-2 orders-3]
	// second: a [orders-0 orders-1] b [orders-2 orders-3]
}
