package server

import (
	"strconv"

	"gregor/internal/metadata"
	"gregor/internal/replica"
)

// replicaFetchersUpdater is a metadata publisher that applies dynamic
// changes of num.replica.fetchers (this broker's value, else the cluster
// default, else server.properties) to the replica fetchers, as Kafka's
// DynamicThreadPool resizes the replica fetcher manager.
type replicaFetchersUpdater struct {
	s       *Server
	replica *replica.Manager
	applied int
}

func newReplicaFetchersUpdater(s *Server, m *replica.Manager) *replicaFetchersUpdater {
	return &replicaFetchersUpdater{s: s, replica: m, applied: s.cfg.NumReplicaFetchers}
}

func (u *replicaFetchersUpdater) Publish(_ *metadata.Delta, img *metadata.Image) {
	n := u.s.cfg.NumReplicaFetchers
	for _, props := range []map[string]string{img.ClusterConfigs(), img.BrokerConfigs(u.s.cfg.NodeID)} {
		if v, ok := props["num.replica.fetchers"]; ok {
			if x, err := strconv.Atoi(v); err == nil {
				n = x
			}
		}
	}
	if n == u.applied {
		return
	}
	u.applied = n
	u.replica.SetNumReplicaFetchers(n)
}
