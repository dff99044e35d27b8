package assignor

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// joinMember is what the coordinator hands the leader for one member that
// sent JoinProtocols' list and had protocol chosen.
func joinMember(t *testing.T, id string, protocols []kmsg.JoinGroupRequestProtocol, protocol string) kmsg.JoinGroupResponseMember {
	t.Helper()
	jm := kmsg.NewJoinGroupResponseMember()
	jm.MemberID = id
	for _, p := range protocols {
		if p.Name == protocol {
			jm.ProtocolMetadata = p.Metadata
			return jm
		}
	}
	t.Fatalf("%s did not offer %s", id, protocol)
	return jm
}

func TestJoinAndLead(t *testing.T) {
	topics := map[string]Topic{"orders": {Partitions: 4}}
	assignors, err := ParseStrategy("sticky,range")
	if err != nil {
		t.Fatal(err)
	}
	// a was given orders-0..3 in generation 6 and (eager) revoked them all
	// before joining; its sticky user data still says what it had.
	aJoin, err := JoinProtocols(assignors, Subscription{Topics: []string{"orders"}, Generation: 6}, []TopicPartition{{"orders", 0}, {"orders", 1}, {"orders", 2}, {"orders", 3}}, 6)
	if err != nil {
		t.Fatal(err)
	}
	bJoin, err := JoinProtocols(assignors, Subscription{Topics: []string{"orders"}, Generation: -1}, nil, -1)
	if err != nil {
		t.Fatal(err)
	}
	if len(aJoin) != 2 || aJoin[0].Name != "sticky" || aJoin[1].Name != "range" {
		t.Fatalf("protocols %v", aJoin)
	}
	protocol, err := SelectProtocol([][]string{{aJoin[0].Name, aJoin[1].Name}, {bJoin[0].Name, bJoin[1].Name}})
	if err != nil || protocol != StickyName {
		t.Fatalf("selected %q %v", protocol, err)
	}
	sync, err := Lead(protocol, Eager, []kmsg.JoinGroupResponseMember{
		joinMember(t, "b", bJoin, protocol), joinMember(t, "a", aJoin, protocol),
	}, topics)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, s := range sync {
		tps, _, _, err := DecodeAssignment(s.MemberAssignment)
		if err != nil {
			t.Fatal(err)
		}
		got[s.MemberID] = formatPartitions(tps)
	}
	// Sticky: a keeps two of its four (the lowest partition numbers).
	if got["a"] != "orders-0, orders-1" || got["b"] != "orders-2, orders-3" || sync[0].MemberID != "a" {
		t.Errorf("sync assignments %v", got)
	}
}

func TestLeadChecksCooperativeRule(t *testing.T) {
	topics := map[string]Topic{"t": {Partitions: 2}}
	owner, err := JoinProtocols([]Assignor{Range{}}, Subscription{Topics: []string{"t"}, OwnedPartitions: []TopicPartition{{"t", 0}, {"t", 1}}, Generation: 3}, nil, 3)
	if err != nil {
		t.Fatal(err)
	}
	joiner, _ := JoinProtocols([]Assignor{Range{}}, Subscription{Topics: []string{"t"}, Generation: -1}, nil, -1)
	members := []kmsg.JoinGroupResponseMember{joinMember(t, "z", owner, RangeName), joinMember(t, "a", joiner, RangeName)}
	// Range moves t-0 from z to a at once: fine under eager, refused
	// under cooperative.
	if _, err := Lead(RangeName, Eager, members, topics); err != nil {
		t.Errorf("eager: %v", err)
	}
	if _, err := Lead(RangeName, Cooperative, members, topics); err == nil || !strings.Contains(err.Error(), "t-0") {
		t.Errorf("cooperative: %v", err)
	}
	if _, err := Lead("uniform", Eager, members, topics); err == nil {
		t.Error("unknown assignor led")
	}
	bad := members[0]
	bad.ProtocolMetadata = []byte{0, 1, 2}
	if _, err := Lead(RangeName, Eager, []kmsg.JoinGroupResponseMember{bad}, topics); err == nil || !strings.Contains(err.Error(), "member z") {
		t.Errorf("undecodable metadata: %v", err)
	}
	if _, err := JoinProtocols(nil, Subscription{}, nil, -1); err == nil {
		t.Error("no assignors joined")
	}
}
