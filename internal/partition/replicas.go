package partition

// This file holds the leader's record of one follower, Kafka's ReplicaState:
// what the follower told us in its last Fetch and when, from which the leader
// decides whether the follower is in sync.

// UnknownOffset is an offset the leader has not learned yet, Kafka's
// UnifiedLog.UnknownOffset. A follower's LEO is unknown until its first fetch
// in this leadership, and an unknown LEO in the ISR holds the high watermark.
const UnknownOffset int64 = -1

// NoBrokerEpoch is ReplicaState.BrokerEpoch before the follower's first fetch
// in this leadership (Kafka's None; Kafka prints it as -2). A fetch that
// carries no broker epoch records -1, which Kafka treats as "skip the check".
const NoBrokerEpoch int64 = -2

// ReplicaState is what the leader knows about one follower.
type ReplicaState struct {
	BrokerID int32
	// LogStartOffset is the follower's log start offset from its last fetch.
	LogStartOffset int64
	// LogEndOffset is the follower's LEO: the fetch offset of its last fetch.
	LogEndOffset int64
	// LastFetchLeaderLogEndOffset is the leader's LEO when the previous fetch
	// arrived (never lowered). A fetch that reaches it proves the follower
	// was caught up at LastFetchTimeMs.
	LastFetchLeaderLogEndOffset int64
	// LastFetchTimeMs is when the last fetch arrived.
	LastFetchTimeMs int64
	// LastCaughtUpTimeMs is the largest time t such that the follower's
	// latest fetch offset is >= the leader's LEO at t. The follower is out of
	// sync once now - LastCaughtUpTimeMs > replica.lag.time.max.ms.
	LastCaughtUpTimeMs int64
	// BrokerEpoch is the broker epoch sent with the last fetch (KIP-903).
	BrokerEpoch int64
}

// emptyReplicaState is a follower the leader has never heard from (Kafka's
// ReplicaState.Empty), used when a replica is added to the assignment.
func emptyReplicaState(id int32) ReplicaState {
	return ReplicaState{
		BrokerID:       id,
		LogStartOffset: UnknownOffset,
		LogEndOffset:   UnknownOffset,
		BrokerEpoch:    NoBrokerEpoch,
	}
}

// IsCaughtUp reports whether the follower counts as caught up: it has the
// leader's LEO, or it reached the leader's LEO within the last maxLagMs.
func (r ReplicaState) IsCaughtUp(leaderLogEndOffset, nowMs, maxLagMs int64) bool {
	return r.LogEndOffset == leaderLogEndOffset || nowMs-r.LastCaughtUpTimeMs <= maxLagMs
}

// updateFetchState records a fetch (Kafka's Replica.updateFetchStateOrThrow).
// A follower fetching small batches at a high produce rate may never fetch
// at exactly the leader's current LEO; comparing with the LEO at the previous
// fetch still proves it was caught up then, so it can stay in (or join) the
// ISR as long as it never lags more than replica.lag.time.max.ms.
func (r *ReplicaState) updateFetchState(fetchOffset, logStartOffset, fetchTimeMs, leaderLogEndOffset, brokerEpoch int64) {
	switch {
	case fetchOffset >= leaderLogEndOffset:
		r.LastCaughtUpTimeMs = max(r.LastCaughtUpTimeMs, fetchTimeMs)
	case fetchOffset >= r.LastFetchLeaderLogEndOffset:
		r.LastCaughtUpTimeMs = max(r.LastCaughtUpTimeMs, r.LastFetchTimeMs)
	}
	r.LogStartOffset = logStartOffset
	r.LogEndOffset = fetchOffset
	r.LastFetchLeaderLogEndOffset = max(leaderLogEndOffset, r.LastFetchLeaderLogEndOffset)
	r.LastFetchTimeMs = fetchTimeMs
	r.BrokerEpoch = brokerEpoch
}

// reset reinitialises the follower when this broker becomes leader or starts
// a new leader epoch (Kafka's Replica.resetReplicaState). A follower in the
// ISR is treated as caught up now, so it is not shrunk away before it had a
// chance to fetch; one outside gets 0, so it neither holds the high watermark
// back nor rejoins the ISR before it fetches.
func (r *ReplicaState) reset(nowMs, leaderLogEndOffset int64, newLeader, inSync bool) {
	caughtUp := int64(0)
	if inSync {
		caughtUp = nowMs
	}
	if newLeader {
		// A new leader knows nothing about the followers' logs.
		*r = ReplicaState{
			BrokerID:                    r.BrokerID,
			LogStartOffset:              UnknownOffset,
			LogEndOffset:                UnknownOffset,
			LastFetchLeaderLogEndOffset: UnknownOffset,
			LastCaughtUpTimeMs:          caughtUp,
			BrokerEpoch:                 NoBrokerEpoch,
		}
		return
	}
	// Re-elected in a new epoch: keep what the follower last reported.
	r.LastFetchLeaderLogEndOffset = leaderLogEndOffset
	r.LastFetchTimeMs = caughtUp
	r.LastCaughtUpTimeMs = caughtUp
}
