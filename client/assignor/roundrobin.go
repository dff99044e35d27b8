package assignor

import "slices"

// RoundRobin is Kafka's RoundRobinAssignor: all partitions of all
// subscribed topics, sorted by topic then partition, are dealt one at a
// time to the members in order (static members by group.instance.id, then
// member id), skipping a member not subscribed to the partition's topic.
type RoundRobin struct{}

func (RoundRobin) Name() string                            { return RoundRobinName }
func (RoundRobin) Protocols() []RebalanceProtocol          { return []RebalanceProtocol{Eager} }
func (RoundRobin) UserData([]TopicPartition, int32) []byte { return nil }

func (RoundRobin) Assign(members []Member, topics map[string]Topic) (Assignment, error) {
	if err := checkMembers(members, topics); err != nil {
		return nil, err
	}
	out := newAssignment(members)
	if len(members) == 0 {
		return out, nil
	}
	ordered := make([]*Member, len(members))
	subscribed := make([]map[string]bool, len(members))
	all := map[string]bool{}
	for i := range members {
		ordered[i] = &members[i]
	}
	slices.SortFunc(ordered, compareMembers)
	for i, m := range ordered {
		subscribed[i] = topicSet(m.Topics)
		for t := range subscribed[i] {
			all[t] = true
		}
	}
	next := 0 // the circular iterator's position
	for _, topic := range sortedKeys(all) {
		meta, ok := topics[topic]
		if !ok {
			continue
		}
		for p := int32(0); p < meta.Partitions; p++ {
			for !subscribed[next][topic] {
				next = (next + 1) % len(ordered)
			}
			out[ordered[next].ID] = append(out[ordered[next].ID], TopicPartition{topic, p})
			next = (next + 1) % len(ordered)
		}
	}
	return out, nil
}
