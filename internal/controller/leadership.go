package controller

import (
	"slices"
	"strconv"
	"strings"

	"gregor/internal/metadata"
)

// topicPartition names one partition of the image.
type topicPartition struct {
	topic     *metadata.Topic
	partition int32
}

// partitionsWhere returns the partitions matching keep, by topic name then
// partition id (the image's order), so the records written are
// deterministic. It walks every partition: callers use it once per broker
// state change or admin request, never per heartbeat.
func partitionsWhere(img *metadata.Image, keep func(*metadata.Partition) bool) []topicPartition {
	var out []topicPartition
	for _, t := range img.Topics.All() {
		for id, p := range t.Partitions() {
			if keep(p) {
				out = append(out, topicPartition{topic: t, partition: id})
			}
		}
	}
	return out
}

// election is Kafka's PartitionChangeBuilder.Election.
type election int

const (
	// electionOnline keeps a valid leader, else elects the first ISR member
	// (in replica order) that may lead.
	electionOnline election = iota
	// electionPreferred elects the first replica if it is in the ISR and may
	// lead, else behaves like electionOnline.
	electionPreferred
	// electionUnclean is electionOnline that, when no ISR member may lead,
	// elects the first replica that may, outside the ISR: data may be lost.
	electionUnclean
)

// partitionChange is Kafka's PartitionChangeBuilder: from a partition, a target ISR, target replicas (with the
// replicas a reassignment adds and removes), a target leader recovery state
// and an election type it builds the PartitionChangeRecord that gets there,
// or nil when nothing changes. Every build first completes a reassignment
// whose target replicas are all in the target ISR (see reassign.go), so an
// ISR expansion, a fencing or the reassignment request itself can finish
// one.
//
// At metadata.version 3.6 and later an ISR change alone bumps only the
// partition epoch; a new leader (set in the record) bumps the leader epoch
// too, and so does a replica set that loses a member.
//
// With eligible leader replicas (KIP-966, eligible.leader.replicas.version
// 1) the ISR may become empty. While the target ISR is smaller than the
// topic's min.insync.replicas, the replicas that leave it join the ELR
// (they hold every record up to the high watermark, which does not advance
// below min ISR), unless they shut down uncleanly; an ISR back at min ISR
// clears the ELR. With an empty ISR an acceptable ELR member is elected
// cleanly (the ISR becomes it alone). LastKnownELR keeps the last leader
// once the partition loses its leader with an empty ISR (Kafka's balanced
// recovery): with ISR and ELR both empty, that replica is elected when it
// comes back, as an unclean election (it may lack records).
type partitionChange struct {
	topicID        [16]byte
	partition      int32
	current        *metadata.Partition
	acceptable     func(replica int32) bool // may lead (Kafka's LeaderAcceptor)
	defaultDir     func(replica int32) [16]byte
	election       election
	targetISR      []int32
	targetReplicas []int32
	targetRemoving []int32
	targetAdding   []int32
	targetRecovery int8
	// elrEnabled is eligible.leader.replicas.version >= 1; minISR the
	// topic's effective min.insync.replicas (at most its replication
	// factor); uncleanShutdown the replicas that may not join the ELR.
	elrEnabled         bool
	minISR             int
	uncleanShutdown    []int32
	targetELR          []int32
	targetLastKnownELR []int32
}

func (c *Controller) newPartitionChange(img *metadata.Image, topic *metadata.Topic, partition int32, acceptable func(int32) bool) *partitionChange {
	p := topic.Partition(partition)
	if acceptable == nil {
		acceptable = func(r int32) bool { return isActive(img, r) }
	}
	return &partitionChange{
		topicID:            topic.ID,
		partition:          partition,
		current:            p,
		acceptable:         func(r int32) bool { return acceptable(r) && hasOnlineDir(img, p, r) },
		defaultDir:         func(r int32) [16]byte { return defaultDir(img, r) },
		targetISR:          slices.Clone(p.ISR),
		targetReplicas:     slices.Clone(p.Replicas),
		targetRemoving:     nonNil(p.RemovingReplicas),
		targetAdding:       nonNil(p.AddingReplicas),
		targetRecovery:     p.LeaderRecoveryState,
		elrEnabled:         img.Features[metadata.EligibleLeaderReplicasVersionFeature] >= 1,
		minISR:             c.effectiveMinISR(img, topic),
		targetELR:          nonNil(p.EligibleLeaderReplicas),
		targetLastKnownELR: nonNil(p.LastKnownELR),
	}
}

// effectiveMinISR is Kafka's getTopicEffectiveMinIsr: the topic's
// min.insync.replicas (its config, this controller's dynamic broker
// config, the cluster default, the static config), at most the topic's
// replication factor.
func (c *Controller) effectiveMinISR(img *metadata.Image, topic *metadata.Topic) int {
	minISR := int(c.cfg.MinInsyncReplicas)
	for _, configs := range []map[string]string{img.TopicConfigs(topic.Name), img.BrokerConfigs(c.cfg.NodeID), img.ClusterConfigs()} {
		if v, ok := configs[minInsyncReplicas]; ok {
			if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
				minISR = n
			}
			break
		}
	}
	if p := topic.Partition(0); p != nil && len(p.Replicas) < minISR {
		minISR = len(p.Replicas)
	}
	return max(minISR, 1)
}

// minInsyncReplicas is the config's name.
const minInsyncReplicas = "min.insync.replicas"

// nonNil copies s; an empty s gives an empty, non-nil slice (in a change
// record nil means "unchanged", empty means "none").
func nonNil(s []int32) []int32 {
	return append([]int32{}, s...)
}

// validLeader: in the target ISR, or in the ELR when the ISR is empty,
// and acceptable.
func (b *partitionChange) validLeader(r int32) bool {
	return (slices.Contains(b.targetISR, r) || (len(b.targetISR) == 0 && slices.Contains(b.targetELR, r))) && b.acceptable(r)
}

// lastKnownLeader is Kafka's canElectLastKnownLeader: with ELR on and the
// ISR and ELR empty, the last leader (LastKnownELR's one member), if it
// may lead.
func (b *partitionChange) lastKnownLeader() (int32, bool) {
	lke := b.current.LastKnownELR
	if !b.elrEnabled || len(b.targetELR) > 0 || len(b.targetISR) > 0 || len(lke) != 1 || !b.acceptable(lke[0]) {
		return metadata.NoLeader, false
	}
	return lke[0], true
}

// elect returns the leader after the election and whether it was unclean.
func (b *partitionChange) elect() (int32, bool) {
	p, replicas := b.current, b.targetReplicas
	if b.election == electionPreferred && len(replicas) > 0 && b.validLeader(replicas[0]) {
		return replicas[0], false
	}
	if b.validLeader(p.Leader) {
		return p.Leader, false
	}
	if i := slices.IndexFunc(replicas, b.validLeader); i >= 0 {
		return replicas[i], false
	}
	if r, ok := b.lastKnownLeader(); ok {
		return r, true
	}
	if b.election == electionUnclean {
		if i := slices.IndexFunc(replicas, b.acceptable); i >= 0 {
			return replicas[i], true
		}
	}
	return metadata.NoLeader, false
}

// build returns the change record, nil if it would change nothing.
func (b *partitionChange) build() *metadata.PartitionChangeRecord {
	p := b.current
	b.completeReassignment()
	b.populateTargetELR()
	rec := metadata.NewPartitionChangeRecord(b.topicID, b.partition)
	if leader, unclean := b.elect(); leader != p.Leader {
		if slices.Contains(b.targetELR, leader) {
			// Elected from the ELR: it holds every record up to the high
			// watermark, so it is the ISR, and leaves the ELR.
			b.targetISR = []int32{leader}
			b.targetELR = slices.DeleteFunc(b.targetELR, func(r int32) bool { return r == leader })
		}
		rec.Leader = leader
		if unclean {
			// The new leader's log becomes the truth: the ISR is it alone,
			// and it must recover before anyone joins.
			rec.ISR = []int32{leader}
			if p.LeaderRecoveryState != metadata.LeaderRecovering {
				rec.LeaderRecoveryState = metadata.LeaderRecovering
			}
		}
	}
	if rec.Leader == metadata.NoLeaderChange && !containsAll(b.targetReplicas, p.Replicas) {
		// A replica leaves the replica set: the leader epoch moves (the
		// leader is set to itself), so the removed replica's fetches at the
		// old epoch are fenced.
		rec.Leader = p.Leader
	}
	b.setELR(rec)
	// Without ELR the ISR never becomes empty: the last member stays.
	if rec.ISR == nil && (len(b.targetISR) > 0 || b.elrEnabled) && !slices.Equal(b.targetISR, p.ISR) {
		rec.ISR = nonNil(b.targetISR)
	}
	b.setLastKnownLeader(rec)
	b.setAssignmentChanges(rec)
	if b.targetRecovery != p.LeaderRecoveryState {
		rec.LeaderRecoveryState = b.targetRecovery
	}
	if rec.Leader == metadata.NoLeaderChange && rec.ISR == nil && rec.LeaderRecoveryState == metadata.NoLeaderRecoveryStateChange &&
		rec.Replicas == nil && rec.RemovingReplicas == nil && rec.AddingReplicas == nil && rec.Directories == nil &&
		rec.EligibleLeaderReplicas == nil && rec.LastKnownELR == nil {
		return nil
	}
	if rec.EligibleLeaderReplicas != nil || rec.LastKnownELR != nil {
		rec.RecordVersion = 2 // the ELR fields are v2's
	}
	return rec
}

// populateTargetELR is Kafka's maybePopulateTargetElr: below min ISR the
// ELR gains the current ISR members that leave it (not those that shut
// down uncleanly); at min ISR or above the ELR is empty.
func (b *partitionChange) populateTargetELR() {
	if !b.elrEnabled {
		return
	}
	if len(b.targetISR) >= b.minISR {
		b.targetELR, b.targetLastKnownELR = []int32{}, []int32{}
		return
	}
	candidates := append(slices.Clone(b.targetELR), b.current.ISR...)
	elr := []int32{}
	for _, r := range candidates {
		if !slices.Contains(b.targetISR, r) && !slices.Contains(b.uncleanShutdown, r) && !slices.Contains(elr, r) {
			elr = append(elr, r)
		}
	}
	slices.Sort(elr)
	b.targetELR = elr
}

// setELR is Kafka's maybeUpdateRecordElr with the last known leader kept
// in LastKnownELR: an unclean election or ELR off empties the ELR; the
// record carries the ELR where it changes.
func (b *partitionChange) setELR(rec *metadata.PartitionChangeRecord) {
	if rec.ISR != nil || !b.elrEnabled {
		b.targetELR = []int32{}
	}
	if !slices.Equal(b.targetELR, b.current.EligibleLeaderReplicas) {
		rec.EligibleLeaderReplicas = nonNil(b.targetELR)
	}
}

// setLastKnownLeader is Kafka's maybeUpdateLastKnownLeader: the first time
// the ISR becomes empty LastKnownELR records the leader it had; once the
// partition has a leader again it is cleared.
func (b *partitionChange) setLastKnownLeader(rec *metadata.PartitionChangeRecord) {
	if !b.elrEnabled {
		return
	}
	p := b.current
	lke := p.LastKnownELR
	switch {
	case rec.ISR != nil && len(rec.ISR) == 0 && (len(lke) != 1 || lke[0] != p.Leader):
		rec.LastKnownELR = []int32{p.Leader}
	case (rec.Leader >= 0 || (p.Leader != metadata.NoLeader && rec.Leader != metadata.NoLeader)) && len(lke) > 0:
		rec.LastKnownELR = []int32{}
	}
}

// setAssignmentChanges puts the replica set, its log directories and the
// reassignment's adding and removing replicas into rec where they change.
// A replica keeps its directory; a new one gets its broker's default.
func (b *partitionChange) setAssignmentChanges(rec *metadata.PartitionChangeRecord) {
	p := b.current
	if len(b.targetReplicas) > 0 && !slices.Equal(b.targetReplicas, p.Replicas) {
		rec.Replicas = slices.Clone(b.targetReplicas)
		dirs := make([][16]byte, 0, len(b.targetReplicas))
		for _, r := range b.targetReplicas {
			if i := slices.Index(p.Replicas, r); i >= 0 && i < len(p.Directories) {
				dirs = append(dirs, p.Directories[i])
			} else {
				dirs = append(dirs, b.defaultDir(r))
			}
		}
		if !slices.Equal(dirs, p.Directories) {
			rec.Directories = dirs
		}
	}
	if !slices.Equal(b.targetRemoving, p.RemovingReplicas) {
		rec.RemovingReplicas = nonNil(b.targetRemoving)
	}
	if !slices.Equal(b.targetAdding, p.AddingReplicas) {
		rec.AddingReplicas = nonNil(b.targetAdding)
	}
}

// containsAll reports whether every member of sub is in set.
func containsAll(set, sub []int32) bool {
	for _, r := range sub {
		if !slices.Contains(set, r) {
			return false
		}
	}
	return true
}

// applyChange returns the partition after rec, as the replay computes it
// (metadata's PartitionRegistration.merge), for answers that carry the new
// state before it is replayed.
func applyChange(p *metadata.Partition, rec *metadata.PartitionChangeRecord) metadata.Partition {
	n := *p
	if rec == nil {
		return n
	}
	if rec.ISR != nil {
		n.ISR = slices.Clone(rec.ISR)
	}
	if rec.Leader != metadata.NoLeaderChange {
		n.Leader = rec.Leader
		n.LeaderEpoch++
	}
	if rec.Replicas != nil {
		n.Replicas = slices.Clone(rec.Replicas)
	}
	if rec.RemovingReplicas != nil {
		n.RemovingReplicas = slices.Clone(rec.RemovingReplicas)
	}
	if rec.AddingReplicas != nil {
		n.AddingReplicas = slices.Clone(rec.AddingReplicas)
	}
	if rec.Directories != nil {
		n.Directories = slices.Clone(rec.Directories)
	}
	if rec.LeaderRecoveryState != metadata.NoLeaderRecoveryStateChange {
		n.LeaderRecoveryState = rec.LeaderRecoveryState
	}
	if rec.EligibleLeaderReplicas != nil {
		n.EligibleLeaderReplicas = slices.Clone(rec.EligibleLeaderReplicas)
	}
	if rec.LastKnownELR != nil {
		n.LastKnownELR = slices.Clone(rec.LastKnownELR)
	}
	n.PartitionEpoch++
	return n
}

// hasOnlineDir is Kafka's ClusterControlManager.hasOnlineDir for a replica:
// its log directory is unassigned, migrating, or one the broker registered
// as online.
func hasOnlineDir(img *metadata.Image, p *metadata.Partition, replica int32) bool {
	i := slices.Index(p.Replicas, replica)
	if i < 0 || i >= len(p.Directories) {
		return true
	}
	dir := p.Directories[i]
	if dir == directoryUnassigned || dir == directoryMigrating {
		return true
	}
	b := img.Brokers[replica]
	return b != nil && slices.Contains(b.LogDirs, dir)
}

// leaderAndIsrUpdates is Kafka's generateLeaderAndIsrUpdates: for each
// partition, brokerToRemove leaves the ISR (unless it is the last member: the
// ISR never becomes empty) and may not lead; brokerToAdd may lead although
// the image still shows it fenced. A leader that is no longer acceptable is
// replaced by the first replica, in replica order, that is in the new ISR
// and acceptable; if there is none, by the first acceptable replica when
// unclean.leader.election.enable is on for the topic (the ISR becomes that
// replica alone, and it must recover), else the partition goes offline
// (leader -1). brokerToRemove / brokerToAdd are NoLeader when unused.
func (c *Controller) leaderAndIsrUpdates(img *metadata.Image, brokerToRemove, brokerToAdd int32, parts []topicPartition) []metadata.Record {
	acceptable := func(r int32) bool {
		return r != brokerToRemove && (r == brokerToAdd || isActive(img, r))
	}
	var records []metadata.Record
	for _, tp := range parts {
		b := c.newPartitionChange(img, tp.topic, tp.partition, acceptable)
		if c.uncleanLeaderElectionEnabled(img, tp.topic.Name) {
			b.election = electionUnclean
		}
		b.targetISR = slices.DeleteFunc(b.targetISR, func(r int32) bool { return r == brokerToRemove })
		if rec := b.build(); rec != nil {
			records = append(records, rec)
		}
	}
	return records
}

// uncleanLeaderElectionEnable is the config's name.
const uncleanLeaderElectionEnable = "unclean.leader.election.enable"

// uncleanLeaderElectionEnabled resolves unclean.leader.election.enable for a
// topic as Kafka's ConfigurationControlManager does: the topic's dynamic
// config, then this controller's dynamic broker config, then the cluster
// default, then the static config (Config.UncleanLeaderElectionEnable,
// Kafka's default false).
func (c *Controller) uncleanLeaderElectionEnabled(img *metadata.Image, topic string) bool {
	for _, configs := range []map[string]string{img.TopicConfigs(topic), img.BrokerConfigs(c.cfg.NodeID), img.ClusterConfigs()} {
		if v, ok := configs[uncleanLeaderElectionEnable]; ok {
			// Java's Boolean.parseBoolean: "true" in any case, else false.
			return strings.EqualFold(strings.TrimSpace(v), "true")
		}
	}
	return c.cfg.UncleanLeaderElectionEnable
}
