package assignor

import (
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// JoinProtocols builds the protocol list of a member's JoinGroup request:
// one entry per configured assignor, preferred first, each carrying sub
// (encoded at MaxSubscriptionVersion) with that assignor's user data.
// lastAssigned and lastGeneration are what the member was given in its last
// completed rebalance: the eager sticky assignor sends them in its user
// data even though, under the eager protocol, sub.OwnedPartitions is empty
// because everything was revoked before joining.
func JoinProtocols(assignors []Assignor, sub Subscription, lastAssigned []TopicPartition, lastGeneration int32) ([]kmsg.JoinGroupRequestProtocol, error) {
	if len(assignors) == 0 {
		return nil, fmt.Errorf("join protocols: no assignors")
	}
	out := make([]kmsg.JoinGroupRequestProtocol, 0, len(assignors))
	for _, a := range assignors {
		s := sub
		s.UserData = a.UserData(lastAssigned, lastGeneration)
		raw, err := EncodeSubscription(s, MaxSubscriptionVersion)
		if err != nil {
			return nil, fmt.Errorf("join protocols: %s: %w", a.Name(), err)
		}
		p := kmsg.NewJoinGroupRequestProtocol()
		p.Name = a.Name()
		p.Metadata = raw
		out = append(out, p)
	}
	return out, nil
}

// Lead is the group leader's part of a rebalance, as Kafka's consumer does
// it on becoming leader: decode the members of the JoinGroup response,
// run the assignor the coordinator chose (protocol), check the result under
// the leader's rebalance protocol (cooperative: no partition moves in one
// generation, see ValidateCooperative), and encode each member's
// assignment for SyncGroup, in member-id order.
func Lead(protocol string, rebalance RebalanceProtocol, members []kmsg.JoinGroupResponseMember, topics map[string]Topic) ([]kmsg.SyncGroupRequestGroupAssignment, error) {
	a, err := ByName(protocol)
	if err != nil {
		return nil, fmt.Errorf("lead: %w", err)
	}
	decoded := make([]Member, 0, len(members))
	for _, jm := range members {
		sub, _, err := DecodeSubscription(jm.ProtocolMetadata)
		if err != nil {
			return nil, fmt.Errorf("lead: member %s: %w", jm.MemberID, err)
		}
		m := Member{ID: jm.MemberID, Subscription: sub}
		if jm.InstanceID != nil {
			m.InstanceID = *jm.InstanceID
		}
		decoded = append(decoded, m)
	}
	assignment, err := a.Assign(decoded, topics)
	if err != nil {
		return nil, fmt.Errorf("lead: %w", err)
	}
	if rebalance == Cooperative {
		if err := ValidateCooperative(decoded, assignment); err != nil {
			return nil, fmt.Errorf("lead: assignor %s: %w", protocol, err)
		}
	}
	ids := make([]string, 0, len(decoded))
	for _, m := range decoded {
		ids = append(ids, m.ID)
	}
	slices.Sort(ids)
	out := make([]kmsg.SyncGroupRequestGroupAssignment, 0, len(ids))
	for _, id := range ids {
		raw, err := EncodeAssignment(assignment[id], nil, MaxAssignmentVersion)
		if err != nil {
			return nil, fmt.Errorf("lead: member %s: %w", id, err)
		}
		sa := kmsg.NewSyncGroupRequestGroupAssignment()
		sa.MemberID = id
		sa.MemberAssignment = raw
		out = append(out, sa)
	}
	return out, nil
}
