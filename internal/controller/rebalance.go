package controller

import (
	"context"
	"slices"
	"time"

	"gregor/internal/metadata"
)

// maxElectionsPerImbalance is Kafka's MAX_ELECTIONS_PER_IMBALANCE: one
// rebalance or unclean-election pass writes at most this many changes, and
// the next pass follows at once (after retryImmediately).
const maxElectionsPerImbalance = 1000

// retryImmediately is how soon a pass that hit maxElectionsPerImbalance runs
// again (Kafka's 10 ms for deferred events rescheduled immediately).
const retryImmediately = 10 * time.Millisecond

// nextWake is how long the event loop may sleep before it has timed work:
// retrying a failed activation, the earliest session expiry, the next leader
// rebalance or unclean election pass.
func (c *Controller) nextWake() time.Duration {
	const activationRetry = 100 * time.Millisecond
	if c.needsActivation() {
		return activationRetry
	}
	if !c.active.Load() {
		return time.Hour
	}
	wake := c.untilSessionExpiry()
	now := c.cfg.Now()
	if c.cfg.AutoLeaderRebalanceEnable {
		wake = min(wake, max(c.nextLeaderBalance.Sub(now), time.Millisecond))
	}
	return min(wake, max(c.nextUncleanCheck.Sub(now), time.Millisecond))
}

// runTimers does the active controller's timed work that is due: fencing
// brokers whose session expired, then the leader rebalance and the unclean
// elections when their interval has passed.
func (c *Controller) runTimers(ctx context.Context) {
	if !c.active.Load() {
		return
	}
	c.fenceStaleBrokers(ctx)
	now := c.cfg.Now()
	if c.cfg.AutoLeaderRebalanceEnable && !now.Before(c.nextLeaderBalance) {
		c.nextLeaderBalance = now.Add(c.cfg.LeaderImbalanceCheckInterval)
		if c.commitElections(ctx, "preferred leader rebalance", c.leaderRebalanceRecords(c.image.Image())) {
			c.nextLeaderBalance = now.Add(retryImmediately)
		}
	}
	if !now.Before(c.nextUncleanCheck) {
		c.nextUncleanCheck = now.Add(c.cfg.UncleanLeaderElectionCheckInterval)
		if c.commitElections(ctx, "unclean leader election", c.uncleanElectionRecords(c.image.Image())) {
			c.nextUncleanCheck = now.Add(retryImmediately)
		}
	}
}

// commitElections writes one pass's records and reports whether the pass
// was cut short at maxElectionsPerImbalance (so more may be waiting).
func (c *Controller) commitElections(ctx context.Context, what string, records []metadata.Record) bool {
	if len(records) == 0 {
		return false
	}
	if _, err := c.q.Append(ctx, records); err != nil {
		c.logger.Warn(what+" failed", "records", len(records), "err", err)
		return false
	}
	c.logger.Info(what, "elections", len(records))
	return len(records) >= maxElectionsPerImbalance
}

// leaderRebalanceRecords is the automatic preferred leader election. As
// Kafka's controller (checkAndTriggerAutoLeaderRebalance) does, the
// partitions are grouped by preferred replica (the first replica); when
// more than leader.imbalance.per.broker.percentage of a broker's group is
// led by another broker or by none, every partition of the group whose
// preferred replica is in the ISR and may lead gets it back as leader. The
// KRaft controller balances with the same PREFERRED election.
func (c *Controller) leaderRebalanceRecords(img *metadata.Image) []metadata.Record {
	groups := map[int32][]topicPartition{}
	for _, tp := range partitionsWhere(img, func(p *metadata.Partition) bool { return len(p.Replicas) > 0 }) {
		preferred := tp.topic.Partition(tp.partition).Replicas[0]
		groups[preferred] = append(groups[preferred], tp)
	}
	var records []metadata.Record
	for _, broker := range slices.Sorted(func(yield func(int32) bool) {
		for id := range groups {
			if !yield(id) {
				return
			}
		}
	}) {
		group := groups[broker]
		var imbalanced []topicPartition
		for _, tp := range group {
			if tp.topic.Partition(tp.partition).Leader != broker {
				imbalanced = append(imbalanced, tp)
			}
		}
		ratio := float64(len(imbalanced)) / float64(len(group))
		if len(imbalanced) == 0 || ratio <= float64(c.cfg.LeaderImbalancePerBrokerPercentage)/100 {
			continue
		}
		for _, tp := range imbalanced {
			if len(records) >= maxElectionsPerImbalance {
				return records
			}
			b := c.newPartitionChange(img, tp.topic, tp.partition, nil)
			b.election = electionPreferred
			if !b.validLeader(broker) {
				continue // the preferred replica cannot lead now
			}
			if rec := b.build(); rec != nil {
				records = append(records, rec)
			}
		}
	}
	return records
}

// uncleanElectionRecords is Kafka's maybeElectUncleanLeaders: each
// leaderless partition whose topic allows unclean leader election gets one.
func (c *Controller) uncleanElectionRecords(img *metadata.Image) []metadata.Record {
	if !hasLeaderships(img, metadata.NoLeader) {
		return nil // no leaderless partition: nothing to walk
	}
	var records []metadata.Record
	for _, tp := range partitionsWhere(img, func(p *metadata.Partition) bool { return p.Leader == metadata.NoLeader }) {
		if len(records) >= maxElectionsPerImbalance {
			break
		}
		if !c.uncleanLeaderElectionEnabled(img, tp.topic.Name) {
			continue
		}
		b := c.newPartitionChange(img, tp.topic, tp.partition, nil)
		b.election = electionUnclean
		if rec := b.build(); rec != nil {
			c.logger.Warn("unclean leader election for an offline partition", "topic", tp.topic.Name, "partition", tp.partition, "leader", rec.Leader)
			records = append(records, rec)
		}
	}
	return records
}
