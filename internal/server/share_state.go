package server

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"gregor/internal/coordinator"
	"gregor/internal/coordinator/sharecoord"
	"gregor/internal/handlers"
	"gregor/internal/metadata"
	"gregor/internal/share"
)

// newShareCoordinator makes the share coordinator (KIP-932): a shard per
// __share_group_state partition this broker leads, and the service that
// answers APIs 83-87 from them. Unknown topics and partitions are checked
// against the broker's metadata image; each shard prunes its partition
// (share.coordinator.state.topic.prune.interval.ms).
func (s *Server) newShareCoordinator() (*coordinator.Runtime, *sharecoord.Service) {
	b := s.cfg
	rt := coordinator.New(coordinator.Config{
		Topic:  handlers.ShareStateTopic,
		NodeID: b.NodeID,
		NewShard: func(int32) coordinator.Shard {
			return sharecoord.NewCoordinated(sharecoord.New(sharecoord.Config{
				SnapshotUpdateRecordsPerSnapshot: b.ShareSnapshotUpdateRecords,
				TopicPartitions: func(id [16]byte) (int32, bool) {
					t := s.replica.Image().Topics.TopicByID(id)
					if t == nil {
						return 0, false
					}
					return int32(t.NumPartitions()), true
				},
			}), time.Now(),
				time.Duration(b.ShareStateTopicPruneIntervalMs)*time.Millisecond,
				time.Duration(b.ShareColdSnapshotIntervalMs)*time.Millisecond)
		},
		Replica:      s.replica,
		WriteTimeout: time.Duration(b.ShareCoordinatorWriteTimeoutMs) * time.Millisecond,
		Logger:       s.logger.With("component", "share-coordinator"),
	})
	svc := sharecoord.NewService(rt, func() int32 {
		if t := s.replica.Image().Topics.Topic(handlers.ShareStateTopic); t != nil && t.NumPartitions() > 0 {
			return int32(t.NumPartitions())
		}
		return b.ShareStateTopicNumPartitions
	}, nil)
	return rt, svc
}

// newSharePersister is the share-group state persister of this broker's
// share group coordinator and share-partition leaders: in-process for the
// share-partitions this broker coordinates, over the inter-broker listener
// for the others. It finds coordinators as FindCoordinator does, through
// the broker's handlers (which create __share_group_state when missing):
// until they exist there is no coordinator yet, a retriable answer.
func (s *Server) newSharePersister() *sharecoord.Persister {
	return sharecoord.NewPersister(sharecoord.PersisterConfig{
		NodeID: s.cfg.NodeID,
		Local:  s.shareStateService,
		Coordinator: func(ctx context.Context, key string) (int32, error) {
			if s.brokerHandlers == nil {
				return -1, fmt.Errorf("%w: the broker is not serving yet", kerr.CoordinatorNotAvailable)
			}
			return s.brokerHandlers.ShareCoordinator(ctx, key)
		},
		Peers: s.peers,
	})
}

// newShareManager makes the share-partition leader of share groups: state
// through the share coordinator's persister, each group's share.* configs
// as this broker's metadata has them over the broker's group.share.*.
func (s *Server) newShareManager() *share.Manager {
	b := s.cfg
	return share.New(share.Options{
		Replica:   s.replica,
		Persister: s.sharePersister,
		GroupConfig: func(groupID string) share.Config {
			var configs map[string]string
			if img := s.replica.Image(); img != nil {
				configs = img.Configs(metadata.ConfigResource{Type: metadata.ConfigResourceGroup, Name: groupID})
			}
			return share.ConfigOf(b.ShareGroup(configs))
		},
		Defaults:    share.ConfigOf(b.ShareGroup(nil)),
		MaxSessions: b.GroupShareMaxShareSessions,
		Logger:      s.logger.With("component", "share"),
		Meters:      s.metrics,
	})
}

// startShares runs the share-partition leader's lock timeouts and member
// releases until Shutdown stops it (stopShares) or runCtx ends.
func (s *Server) startShares(runCtx context.Context) {
	ctx, cancel := context.WithCancel(runCtx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.shares.Run(ctx)
	}()
	s.stopShares = func() {
		cancel()
		<-done
	}
}
