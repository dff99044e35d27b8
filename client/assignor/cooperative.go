package assignor

import (
	"fmt"
	"slices"
)

// Diff compares what a member owns with what it is assigned: added are
// the partitions to start consuming, revoked the ones to give up. Under the
// cooperative protocol a member that revoked anything rejoins at once, so
// the partitions it released can be assigned in the next generation.
func Diff(owned, assigned []TopicPartition) (added, revoked []TopicPartition) {
	ownedSet := make(map[TopicPartition]bool, len(owned))
	for _, tp := range owned {
		ownedSet[tp] = true
	}
	assignedSet := make(map[TopicPartition]bool, len(assigned))
	for _, tp := range assigned {
		assignedSet[tp] = true
		if !ownedSet[tp] {
			added = append(added, tp)
		}
	}
	for _, tp := range owned {
		if !assignedSet[tp] {
			revoked = append(revoked, tp)
		}
	}
	SortTopicPartitions(added)
	SortTopicPartitions(revoked)
	return added, revoked
}

// ValidateCooperative checks the cooperative protocol's rule on a leader's
// assignment, as Kafka's consumer does after running the assignor: no
// partition that one member owned and loses may be given to another member
// in the same generation. It returns an error naming the first such
// partition.
func ValidateCooperative(members []Member, assignment Assignment) error {
	revokedBy := map[TopicPartition]string{}
	ids := make([]string, 0, len(members))
	for i := range members {
		_, revoked := Diff(members[i].OwnedPartitions, assignment[members[i].ID])
		for _, tp := range revoked {
			revokedBy[tp] = members[i].ID
		}
		ids = append(ids, members[i].ID)
	}
	slices.Sort(ids)
	byID := map[string]*Member{}
	for i := range members {
		byID[members[i].ID] = &members[i]
	}
	for _, id := range ids {
		added, _ := Diff(byID[id].OwnedPartitions, assignment[id])
		for _, tp := range added {
			if from, ok := revokedBy[tp]; ok {
				return fmt.Errorf("cooperative assignment gives %s to %s in the same generation %s revokes it", tp, id, from)
			}
		}
	}
	return nil
}
