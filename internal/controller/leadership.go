package controller

import (
	"slices"
	"strings"

	"gregor/internal/metadata"
)

// topicPartition names one partition of the image.
type topicPartition struct {
	topic     *metadata.Topic
	partition int32
}

// partitionsWhere returns the partitions matching keep, by topic name then
// partition id, so the records written are deterministic.
func partitionsWhere(img *metadata.Image, keep func(*metadata.Partition) bool) []topicPartition {
	var out []topicPartition
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for n := range img.Topics.ByName {
			if !yield(n) {
				return
			}
		}
	}) {
		t := img.Topics.ByName[name]
		for _, id := range slices.Sorted(func(yield func(int32) bool) {
			for id := range t.Partitions {
				if !yield(id) {
					return
				}
			}
		}) {
			if keep(t.Partitions[id]) {
				out = append(out, topicPartition{topic: t, partition: id})
			}
		}
	}
	return out
}

// leaderAndIsrUpdates is Kafka's generateLeaderAndIsrUpdates with its
// PartitionChangeBuilder (ELR off): for each partition, brokerToRemove
// leaves the ISR (unless it is the last member: the ISR never becomes empty)
// and may not lead; brokerToAdd may lead although the image still shows it
// fenced. A leader that is no longer acceptable is replaced by the first
// replica, in replica order, that is in the new ISR and acceptable; if there
// is none, by the first acceptable replica when unclean leader election is
// enabled (the ISR becomes that replica alone, and it must recover), else the
// partition goes offline (leader -1). Changing the leader bumps the leader
// epoch on replay; an ISR shrink alone does not (metadata.version >= 3.6).
// brokerToRemove / brokerToAdd are NoLeader when unused.
func leaderAndIsrUpdates(img *metadata.Image, brokerToRemove, brokerToAdd int32, parts []topicPartition) []metadata.Record {
	acceptable := func(r int32) bool {
		return r != brokerToRemove && (r == brokerToAdd || isActive(img, r))
	}
	var records []metadata.Record
	for _, tp := range parts {
		p := tp.topic.Partitions[tp.partition]
		targetISR := slices.DeleteFunc(slices.Clone(p.ISR), func(r int32) bool { return r == brokerToRemove })
		valid := func(r int32) bool { return slices.Contains(targetISR, r) && acceptable(r) }

		rec := metadata.NewPartitionChangeRecord(tp.topic.ID, tp.partition)
		leader, unclean := p.Leader, false
		if !valid(p.Leader) {
			leader = metadata.NoLeader
			if i := slices.IndexFunc(p.Replicas, valid); i >= 0 {
				leader = p.Replicas[i]
			} else if uncleanLeaderElectionEnabled(img, tp.topic.Name) {
				if i := slices.IndexFunc(p.Replicas, acceptable); i >= 0 {
					leader, unclean = p.Replicas[i], true
				}
			}
		}
		if leader != p.Leader {
			rec.Leader = leader
			if unclean {
				rec.ISR = []int32{leader}
				if p.LeaderRecoveryState != metadata.LeaderRecovering {
					rec.LeaderRecoveryState = metadata.LeaderRecovering
				}
			}
		}
		if rec.ISR == nil && len(targetISR) > 0 && !slices.Equal(targetISR, p.ISR) {
			rec.ISR = targetISR
		}
		if rec.Leader == metadata.NoLeaderChange && rec.ISR == nil && rec.LeaderRecoveryState == metadata.NoLeaderRecoveryStateChange {
			continue
		}
		records = append(records, rec)
	}
	return records
}

// uncleanLeaderElectionEnabled resolves unclean.leader.election.enable for a
// topic from the dynamic configs: the topic's, then the cluster default;
// Kafka's static default is false.
func uncleanLeaderElectionEnabled(img *metadata.Image, topic string) bool {
	const name = "unclean.leader.election.enable"
	for _, configs := range []map[string]string{img.TopicConfigs(topic), img.ClusterConfigs()} {
		if v, ok := configs[name]; ok {
			return strings.EqualFold(strings.TrimSpace(v), "true")
		}
	}
	return false
}
