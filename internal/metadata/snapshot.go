package metadata

import (
	"maps"
	"slices"

	"gregor/internal/pmap"
)

// imageDiff returns an applied delta that describes going from old to next
// in one step, for publishers: what a snapshot load (or a late publisher's
// first image, old being empty) changed. Unlike a replayed delta it is
// computed by comparing the two images, so it reports exactly what differs:
//
//   - a topic id of old missing from next is deleted; a topic id of next
//     missing from old is created with all its partitions. A topic deleted
//     and recreated under the same name while this node was behind therefore
//     shows as one delete and one create, and publishers drop the old log.
//   - partitions of a surviving topic are changed when any field differs.
//   - config resources, features and brokers are changed when they differ;
//     a removed feature has level 0, a resource whose configs are all gone
//     maps to an empty set, a broker absent from next maps to nil.
//   - an ACL of old missing from next (or different under its id) is
//     removed, one of next missing from old is created.
//   - an entity's client quotas are changed when they differ; an entity
//     whose quotas are all gone maps to an empty set.
//   - SCRAM credentials are not compared: no publisher acts on their
//     changes (authentication reads the latest image).
//
// Comparisons treat a nil and an empty list as equal, because records that
// went through the wire decode empty lists where the writer may have had nil.
func imageDiff(old, next *Image) *Delta {
	d := NewDelta(old)
	d.offset, d.epoch = next.Offset, next.Epoch
	for name, level := range next.Features {
		if cur, ok := old.Features[name]; !ok || cur != level {
			d.features[name] = level
		}
	}
	for name := range old.Features {
		if _, ok := next.Features[name]; !ok {
			d.features[name] = 0
		}
	}
	for id, b := range next.Brokers {
		if !sameRegistration(old.Brokers[id], b) {
			d.brokers[id] = b
		}
	}
	for id := range old.Brokers {
		if _, ok := next.Brokers[id]; !ok {
			d.brokers[id] = nil
		}
	}
	diffTopics(d, old.Topics, next.Topics)
	for c := range next.configs.Diff(old.configs, maps.Equal) {
		if c.InNew {
			d.configs[c.Key] = c.New
		} else {
			d.configs[c.Key] = map[string]string{}
		}
	}
	if next.NextProducerID != old.NextProducerID {
		nextProducerID := next.NextProducerID
		d.nextProducerID = &nextProducerID
	}
	for id, b := range next.ACLs {
		if cur, ok := old.ACLs[id]; !ok || cur != b {
			d.acls[id] = &b
		}
	}
	for id := range old.ACLs {
		if _, ok := next.ACLs[id]; !ok {
			d.acls[id] = nil
		}
	}
	diffNested(d.clientQuotas, old.ClientQuotas, next.ClientQuotas)
	// The delta describes next; replaying into it would corrupt next.
	d.applied = true
	return d
}

// diffNested puts in changes each key of next whose map differs from old's,
// and an empty map for each key of old that next lacks.
func diffNested[K, K2 comparable, V comparable](changes, old, next map[K]map[K2]V) {
	for key, m := range next {
		if !maps.Equal(old[key], m) {
			changes[key] = m
		}
	}
	for key := range old {
		if _, ok := next[key]; !ok {
			changes[key] = map[K2]V{}
		}
	}
}

// diffTopics walks the two images' topics by id with pmap's Diff, which
// skips what they share: O(changed) for images derived from one another,
// one ordered walk for a snapshot's image built apart.
func diffTopics(d *Delta, old, next *TopicsImage) {
	var oldIDs, nextIDs pmap.Map[[16]byte, *Topic, topicIDOrder]
	if old != nil {
		oldIDs = old.byID
	}
	if next != nil {
		nextIDs = next.byID
	}
	sameTopic := func(a, b *Topic) bool { return a == b }
	for c := range nextIDs.Diff(oldIDs, sameTopic) {
		id, prev, t := c.Key, c.Old, c.New
		renamed := c.InOld && c.InNew && prev.Name != t.Name
		if c.InOld && (!c.InNew || renamed) {
			// Topic ids are never reused, and a topic never changes its
			// name; an id that did anyway is best shown as gone and new.
			d.deleted[id] = prev
		}
		if !c.InNew {
			continue
		}
		if !c.InOld || renamed {
			d.topics[id] = t
			d.created[id] = true
			d.names[t.Name] = id
			parts := make(map[int32]*Partition, t.NumPartitions())
			for p, cur := range t.Partitions() {
				parts[p] = cur
			}
			d.changedParts[id] = parts
			continue
		}
		// Partitions are never removed from a topic (Kafka can only add
		// them), so only new and changed ones need reporting.
		var parts map[int32]*Partition
		for pc := range t.partitions.Diff(prev.partitions, samePartition) {
			if !pc.InNew {
				continue
			}
			if parts == nil {
				parts = map[int32]*Partition{}
			}
			parts[pc.Key] = pc.New
		}
		if parts != nil {
			d.topics[id] = t
			d.changedParts[id] = parts
		}
	}
}

func samePartition(a, b *Partition) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Leader == b.Leader &&
		a.LeaderEpoch == b.LeaderEpoch &&
		a.PartitionEpoch == b.PartitionEpoch &&
		a.LeaderRecoveryState == b.LeaderRecoveryState &&
		slices.Equal(a.Replicas, b.Replicas) &&
		slices.Equal(a.ISR, b.ISR) &&
		slices.Equal(a.RemovingReplicas, b.RemovingReplicas) &&
		slices.Equal(a.AddingReplicas, b.AddingReplicas) &&
		slices.Equal(a.Directories, b.Directories) &&
		slices.Equal(a.EligibleLeaderReplicas, b.EligibleLeaderReplicas) &&
		slices.Equal(a.LastKnownELR, b.LastKnownELR)
}

func sameRegistration(a, b *BrokerRegistration) bool {
	if a == nil || b == nil {
		return a == b
	}
	sameRack := (a.Rack == nil) == (b.Rack == nil) && (a.Rack == nil || *a.Rack == *b.Rack)
	return a.ID == b.ID &&
		a.IncarnationID == b.IncarnationID &&
		a.Epoch == b.Epoch &&
		a.Fenced == b.Fenced &&
		a.InControlledShutdown == b.InControlledShutdown &&
		sameRack &&
		slices.Equal(a.Listeners, b.Listeners) &&
		slices.Equal(a.SupportedFeatures, b.SupportedFeatures) &&
		slices.Equal(a.LogDirs, b.LogDirs)
}
