package assignor

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestRangeAndRoundRobinMatchFranzGo: franz-go's balancers implement
// Kafka's range and round-robin too; on the same random groups (static
// members among them) both packages give the same assignment. The groups
// go through the wire both ways: franz-go's JoinGroup metadata is decoded
// here, franz-go's SyncGroup assignments are decoded here.
func TestRangeAndRoundRobinMatchFranzGo(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for iter := range 200 {
		topics, members := randomGroup(r, 5, 8, iter%2 == 0)
		for i := range members {
			members[i].Rack = "" // franz-go learns replica racks from metadata, not from here
			if r.IntN(3) == 0 {
				// Unique, and ordered differently from the member ids.
				members[i].InstanceID = "static-" + string(rune('a'+r.IntN(26))) + "-" + members[i].ID
			}
		}
		for i := range topics {
			t := topics[i]
			t.ReplicaRacks = nil
			topics[i] = t
		}
		counts := map[string]int32{}
		for name, meta := range topics {
			counts[name] = meta.Partitions
		}
		for _, pair := range []struct {
			ours   Assignor
			theirs kgo.GroupBalancer
		}{{Range{}, kgo.RangeBalancer()}, {RoundRobin{}, kgo.RoundRobinBalancer()}} {
			var join []kmsg.JoinGroupResponseMember
			var decoded []Member
			for _, m := range members {
				raw := pair.theirs.JoinGroupMetadata(m.Topics, nil, -1)
				sub, _, err := DecodeSubscription(raw)
				if err != nil {
					t.Fatalf("decode franz-go's subscription: %v", err)
				}
				jm := kmsg.NewJoinGroupResponseMember()
				jm.MemberID = m.ID
				if m.InstanceID != "" {
					id := m.InstanceID
					jm.InstanceID = &id
				}
				jm.ProtocolMetadata = raw
				join = append(join, jm)
				decoded = append(decoded, Member{ID: m.ID, InstanceID: m.InstanceID, Subscription: sub})
			}
			ours, err := pair.ours.Assign(decoded, topics)
			if err != nil {
				t.Fatal(err)
			}
			// franz-go's leader sorts the JoinGroup members (static first,
			// Kafka's order) before it balances; do the same.
			slices.SortFunc(join, func(a, b kmsg.JoinGroupResponseMember) int {
				return compareMembers(&Member{ID: a.MemberID, InstanceID: deref(a.InstanceID)}, &Member{ID: b.MemberID, InstanceID: deref(b.InstanceID)})
			})
			mb, _, err := pair.theirs.MemberBalancer(join)
			if err != nil {
				t.Fatal(err)
			}
			into, err := mb.(kgo.GroupMemberBalancerOrError).BalanceOrError(counts)
			if err != nil {
				t.Fatal(err)
			}
			for _, a := range into.IntoSyncAssignment() {
				tps, _, _, err := DecodeAssignment(a.MemberAssignment)
				if err != nil {
					t.Fatalf("decode franz-go's assignment: %v", err)
				}
				if got, want := formatPartitions(ours[a.MemberID]), formatPartitions(tps); got != want {
					t.Fatalf("iter %d %s: %s gets [%s] here, [%s] from franz-go", iter, pair.ours.Name(), a.MemberID, got, want)
				}
			}
		}
	}
}

// TestReadsFranzGoStickyMetadata: a franz-go member's sticky JoinGroup
// metadata (owned partitions in StickyMemberMetadata user data, the
// generation in the subscription) reads here as the same partitions and
// generation, for both sticky assignors.
func TestReadsFranzGoStickyMetadata(t *testing.T) {
	current := map[string][]int32{"orders": {0, 2}, "payments": {1}}
	want := "orders-0, orders-2, payments-1"
	for _, tc := range []struct {
		theirs kgo.GroupBalancer
		ours   interface {
			memberData(*Member) ([]TopicPartition, int32)
		}
	}{{kgo.StickyBalancer(), Sticky{}}, {kgo.CooperativeStickyBalancer(), CooperativeSticky{}}} {
		raw := tc.theirs.JoinGroupMetadata([]string{"orders", "payments"}, current, 12)
		sub, _, err := DecodeSubscription(raw)
		if err != nil {
			t.Fatal(err)
		}
		m := Member{ID: "franz", Subscription: sub}
		owned, gen := tc.ours.memberData(&m)
		if gen != 12 || formatPartitions(owned) != want {
			t.Errorf("%s: read [%s] generation %d, want [%s] 12", tc.theirs.ProtocolName(), formatPartitions(owned), gen, want)
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
