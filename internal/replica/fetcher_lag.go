package replica

import "gregor/internal/log"

// FollowerStats is what this broker's replica fetchers report (Kafka's
// FetcherLagMetrics, ReplicaFetcherManager MaxLag and
// ReplicationBytesInPerSec).
type FollowerStats struct {
	// Lags is, for each partition followed, how many records its log end
	// was behind the leader's high watermark at the leader's last answer.
	Lags map[log.TopicPartition]int64
	// BytesIn is the record bytes appended as a follower so far.
	BytesIn int64
}

// FollowerStats reports the replica fetchers' lags and bytes.
func (m *Manager) FollowerStats() FollowerStats {
	st := FollowerStats{Lags: map[log.TopicPartition]int64{}, BytesIn: m.replicationBytesIn.Load()}
	m.fetchMu.Lock()
	fs := make([]*fetcher, 0, len(m.fetchers))
	for _, f := range m.fetchers {
		fs = append(fs, f)
	}
	m.fetchMu.Unlock()
	for _, f := range fs {
		f.mu.Lock()
		for tp, lag := range f.lags {
			st.Lags[tp] = lag
		}
		f.mu.Unlock()
	}
	return st
}
