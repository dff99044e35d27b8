package server

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"gregor/internal/coordinator"
	"gregor/internal/coordinator/group"
	"gregor/internal/metadata"
	"gregor/internal/metrics"
	"gregor/internal/raft"
)

// metricsState is what Prometheus sees at a scrape: this node's partitions
// and, on the active controller, the cluster's.
func (s *Server) metricsState() metrics.State {
	var st metrics.State
	var img *metadata.Image
	st.Purgatories = map[string]int{}
	if s.quotas != nil {
		st.ClientQuotas = quotaSensors(s.quotas)
	}
	if s.replicationQuotas != nil {
		st.ReplicationThrottles = s.replicationQuotas.sensors()
	}
	if s.replica != nil {
		st.Broker = true
		fs := s.fetchSessions.Stats()
		st.FetchSessions = metrics.FetchSessionCache{Sessions: fs.Sessions, Partitions: fs.Partitions, Evictions: fs.Evictions}
		for name, n := range s.replica.PurgatorySizes() {
			st.Purgatories[name] = n
		}
		fst := s.replica.FollowerStats()
		st.ReplicationBytesIn = fst.BytesIn
		for tp, lag := range fst.Lags {
			st.FollowerLags = append(st.FollowerLags, metrics.FollowerLag{Topic: tp.Topic, Partition: tp.Partition, Lag: lag})
		}
		img = s.replica.Image()
		for tp, p := range s.replica.HostedPartitions() {
			l := p.Log()
			st.Partitions = append(st.Partitions, metrics.PartitionState{
				Topic: tp.Topic, Partition: tp.Partition, Leader: p.IsLeader(),
				UnderReplicated: p.IsUnderReplicated(), UnderMinISR: p.IsUnderMinISR(), AtMinISR: p.IsAtMinISR(),
				LogSize: l.Size(), LogStartOffset: l.LogStartOffset(), LogEndOffset: l.LogEndOffset(),
			})
		}
	}
	if s.groups != nil {
		st.Groups = s.groupStats()
	}
	if s.shares != nil {
		for _, sp := range s.shares.Stats() {
			st.SharePartitions = append(st.SharePartitions, metrics.SharePartition{Group: sp.Group, Topic: sp.Topic,
				Partition: sp.Partition, InFlightRecords: sp.InFlightRecords, InFlightBatches: sp.InFlightBatches})
		}
	}
	if s.quorum != nil {
		st.Raft = s.raftState()
	}
	if q, ok := s.quorum.(interface{ PurgatorySize() int }); ok {
		st.Purgatories[raft.PurgatoryRaftFetch] = q.PurgatorySize()
	}
	if s.controller != nil {
		st.Controller = true
		st.ActiveController = s.controller.Active()
		img = s.controller.Image()
		st.GlobalTopicCount = img.Topics.Len()
		for _, t := range img.Topics.All() {
			for _, p := range t.Partitions() {
				st.GlobalPartitionCount++
				if p.Leader < 0 {
					st.OfflinePartitionsCount++
				}
			}
		}
		for _, b := range img.Brokers {
			if b.Fenced {
				st.FencedBrokerCount++
			} else {
				st.ActiveBrokerCount++
			}
		}
	}
	if img != nil {
		st.MetadataOffset = img.Offset
	}
	return st
}

// groupStats counts the groups and offsets of the group coordinator shards
// loaded on this broker; a shard busy past a second is left out of this
// scrape.
func (s *Server) groupStats() metrics.GroupCoordinator {
	out := metrics.GroupCoordinator{Classic: map[string]int{}, Consumer: map[string]int{}, Share: map[string]int{}}
	partitions, _ := s.groups.Partitions()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	for _, p := range partitions {
		_ = s.groups.Read(ctx, p, func(sh coordinator.Shard) {
			gs, ok := sh.(group.Coordinated)
			if !ok {
				return
			}
			st := gs.Stats()
			for state, n := range st.Classic {
				out.Classic[state.String()] += n
			}
			for state, n := range st.Consumer {
				out.Consumer[state] += n
			}
			for state, n := range st.Share {
				out.Share[state] += n
			}
			out.Offsets += st.Offsets
		})
	}
	return out
}

// raftState is the metadata quorum as this node sees it (Kafka's
// raft-metrics).
func (s *Server) raftState() metrics.RaftState {
	leader, epoch := s.quorum.Leader()
	st := metrics.RaftState{Known: true, Leader: leader, Epoch: epoch, HighWatermark: s.quorum.HighWatermark(), PollIdleRatio: math.NaN()}
	if q, ok := s.quorum.(interface{ PollIdleRatio() float64 }); ok {
		st.PollIdleRatio = q.PollIdleRatio()
	}
	_, voter := s.voterAddrs[s.cfg.NodeID]
	switch {
	case leader == s.cfg.NodeID:
		st.State = "leader"
	case !voter:
		st.State = "observer"
	case leader < 0:
		st.State = "unattached"
	default:
		st.State = "follower"
	}
	return st
}

// timedQuorum is the quorum as the controller uses it: each append's time
// until it is committed and applied goes to raft-metrics' commit latency.
type timedQuorum struct {
	raft.Quorum
	metrics *metrics.Registry
}

func (q timedQuorum) Append(ctx context.Context, records []metadata.Record) (int64, error) {
	start := time.Now()
	off, err := q.Quorum.Append(ctx, records)
	if err == nil {
		q.metrics.RaftCommitted(len(records), time.Since(start))
	}
	return off, err
}

// ready is /readyz: a broker is ready once unfenced (caught up with the
// metadata log and registered), a controller once it knows the leader. A
// broker is not ready again while the controller has fenced it (or no
// heartbeat was answered within broker.session.timeout.ms, after which the
// controller fences it), while a log dir is offline, or while its
// listeners cannot accept connections (out of descriptors, at
// max.connections).
func (s *Server) ready() error {
	if s.lifecycle != nil {
		if s.lifecycle.fenced.Load() {
			return errors.New("broker fenced: not unfenced by the controller yet, or fenced since")
		}
		session := time.Duration(s.cfg.BrokerSessionTimeoutMs) * time.Millisecond
		if since := s.lifecycle.sinceAnswered(); since > session {
			return fmt.Errorf("no heartbeat answered by the controller for %s (broker.session.timeout.ms is %d): the controller fences this broker",
				since.Round(time.Millisecond), s.cfg.BrokerSessionTimeoutMs)
		}
		if s.logs != nil {
			if err := s.logs.OfflineError(); err != nil {
				return err
			}
		}
		if bn := s.accepting.Load(); bn != nil {
			if err := bn.AcceptError(); err != nil {
				return fmt.Errorf("broker listeners cannot accept connections: %w", err)
			}
		}
		return nil
	}
	if s.cfg.HasRole("broker") {
		return errors.New("broker starting")
	}
	if s.quorum == nil {
		return errors.New("metadata quorum starting")
	}
	if leader, _ := s.quorum.Leader(); leader < 0 {
		return errors.New("no metadata quorum leader known")
	}
	return nil
}
