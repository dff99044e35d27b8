package assignor

// useRackAware is Kafka's rule (KIP-881) for when rack matching is worth
// doing: some member has a rack that holds replicas, and the partitions do
// not all have replicas on every rack (if they did, any member would match
// any partition and rack matching could only cost balance).
func useRackAware(memberRacks map[string]bool, partitionRacks map[TopicPartition]map[string]bool) bool {
	if len(memberRacks) == 0 {
		return false
	}
	all := map[string]bool{}
	for _, racks := range partitionRacks {
		for r := range racks {
			all[r] = true
		}
	}
	overlap := false
	for r := range memberRacks {
		if all[r] {
			overlap = true
			break
		}
	}
	if !overlap {
		return false
	}
	for _, racks := range partitionRacks {
		if len(racks) != len(all) {
			return true
		}
	}
	return false
}

// replicaRacks returns the set of racks holding replicas of partition p.
func replicaRacks(t Topic, p int32) map[string]bool {
	set := map[string]bool{}
	if t.ReplicaRacks == nil {
		return set
	}
	for _, r := range t.ReplicaRacks[p] {
		if r != "" {
			set[r] = true
		}
	}
	return set
}
