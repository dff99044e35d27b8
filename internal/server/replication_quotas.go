package server

import (
	"strconv"
	"time"

	"gregor/internal/metadata"
	"gregor/internal/metrics"
	"gregor/internal/quota"
)

// replicationQuotas are the broker's replication throttles (KIP-73), kept
// in step with the metadata image by Publish (Kafka's
// DynamicReplicationQuota and the topic config handler): the rates from
// this broker's dynamic config, else the cluster default, else
// server.properties; the throttled partitions from every topic's
// leader/follower.replication.throttled.replicas entries for this broker.
type replicationQuotas struct {
	nodeID           int32
	staticLeader     int64
	staticFollower   int64
	leader, follower *quota.Replication
}

func (s *Server) newReplicationQuotas() (*replicationQuotas, error) {
	cfg := quota.Config{Samples: s.cfg.ReplicationQuotaWindowNum,
		Window: time.Duration(s.cfg.ReplicationQuotaWindowSizeSeconds) * time.Second}
	leader, err := quota.NewReplication(quota.LeaderReplication, cfg)
	if err != nil {
		return nil, err
	}
	follower, err := quota.NewReplication(quota.FollowerReplication, cfg)
	if err != nil {
		return nil, err
	}
	q := &replicationQuotas{nodeID: s.cfg.NodeID, staticLeader: s.cfg.LeaderReplicationThrottledRate,
		staticFollower: s.cfg.FollowerReplicationThrottledRate, leader: leader, follower: follower}
	leader.SetBound(q.staticLeader)
	follower.SetBound(q.staticFollower)
	return q, nil
}

// Publish applies the image's throttles when a delta changed any config
// (the first image's included): the rates are a few lookups, the throttled
// sets one pass over the topic configs.
func (q *replicationQuotas) Publish(d *metadata.Delta, img *metadata.Image) {
	if len(d.ChangedConfigs()) == 0 {
		return
	}
	q.leader.SetBound(q.rate(img, "leader.replication.throttled.rate", q.staticLeader))
	q.follower.SetBound(q.rate(img, "follower.replication.throttled.rate", q.staticFollower))
	leader, follower := map[string]quota.ThrottledPartitions{}, map[string]quota.ThrottledPartitions{}
	for _, t := range img.Topics.All() {
		configs := img.TopicConfigs(t.Name)
		for key, dst := range map[string]map[string]quota.ThrottledPartitions{
			"leader.replication.throttled.replicas":   leader,
			"follower.replication.throttled.replicas": follower,
		} {
			// The controller validated the value (ThrottledReplicaListValidator).
			if tp, err := quota.ParseThrottledReplicas(configs[key], q.nodeID); err == nil && (tp.All || len(tp.Partitions) > 0) {
				dst[t.Name] = tp
			}
		}
	}
	q.leader.SetThrottled(leader)
	q.follower.SetThrottled(follower)
}

// rate resolves a throttle rate: this broker's dynamic value, the cluster
// default, then the static one.
func (q *replicationQuotas) rate(img *metadata.Image, key string, static int64) int64 {
	for _, configs := range []map[string]string{img.BrokerConfigs(q.nodeID), img.ClusterConfigs()} {
		if v, ok := configs[key]; ok {
			if n, err := strconv.ParseInt(v, 10, 64); err == nil && n >= 0 {
				return n
			}
		}
	}
	return static
}

// sensors reports the throttles' byte rates for a scrape
// (kafka.server:type=LeaderReplication / FollowerReplication, byte-rate).
func (q *replicationQuotas) sensors() []metrics.ReplicationThrottle {
	return []metrics.ReplicationThrottle{
		{Type: q.leader.Type().String(), ByteRate: q.leader.Rate()},
		{Type: q.follower.Type().String(), ByteRate: q.follower.Rate()},
	}
}
