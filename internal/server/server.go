// Package server wires one Gregor process: configuration, storage, the
// metadata quorum, the controller, the replica manager and the listeners,
// started and stopped in dependency order.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"slices"
	"time"

	"gregor/internal/config"
	"gregor/internal/controller"
	"gregor/internal/coordinator"
	"gregor/internal/coordinator/producerid"
	"gregor/internal/handlers"
	"gregor/internal/log"
	"gregor/internal/metadata"
	"gregor/internal/network"
	"gregor/internal/raft"
	"gregor/internal/replica"
)

// MetadataTopicDir is the directory of the metadata log inside metadata.log.dir.
const MetadataTopicDir = "__cluster_metadata-0"

// Server is one running Gregor node.
type Server struct {
	cfg    *config.Broker
	logger *slog.Logger

	clusterID   string
	logs        *log.Manager
	quorum      *raft.SingleVoter
	controller  *controller.Controller
	replica     *replica.Manager
	producerIDs *producerid.Manager
	groups      *coordinator.Runtime
	brokerNet   *network.Server
	ctrlNet     *network.Server

	cancel context.CancelFunc
}

// New checks the configuration against what this process can run.
func New(cfg *config.Broker, logger *slog.Logger) (*Server, error) {
	if !slices.Contains(cfg.ProcessRoles, "broker") || !slices.Contains(cfg.ProcessRoles, "controller") {
		return nil, fmt.Errorf("process.roles=%v: this version runs only combined nodes (broker,controller); separate roles arrive with the multi-node KRaft work", cfg.ProcessRoles)
	}
	if len(cfg.ControllerQuorumVoters) != 1 || cfg.ControllerQuorumVoters[0].ID != cfg.NodeID {
		return nil, fmt.Errorf("controller.quorum.voters: this version runs a one-voter quorum naming this node (%d@host:port)", cfg.NodeID)
	}
	return &Server{cfg: cfg, logger: logger}, nil
}

// Start opens storage, replays the metadata log, and starts serving.
// ctx bounds start-up only; Shutdown stops the server.
func (s *Server) Start(ctx context.Context) error {
	runCtx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	if err := s.start(ctx, runCtx); err != nil {
		s.Shutdown(context.Background())
		return err
	}
	return nil
}

func (s *Server) start(ctx, runCtx context.Context) error {
	metaDir := s.cfg.MetadataLogDir
	dirs := s.cfg.LogDirs
	clusterID, err := ensureFormatted(append(slices.Clone(dirs), metaDir), s.cfg.NodeID, s.logger)
	if err != nil {
		return err
	}
	s.clusterID = clusterID
	s.logger.Info("starting gregor", "node.id", s.cfg.NodeID, "cluster.id", clusterID, "log.dirs", dirs)

	logs, err := log.NewManager(log.ManagerConfig{
		Dirs:                                 dirs,
		Default:                              log.DefaultConfig(),
		FlushSchedulerIntervalMs:             s.cfg.LogFlushSchedulerIntervalMs,
		FlushOffsetCheckpointIntervalMs:      s.cfg.LogFlushOffsetCheckpointIntervalMs,
		FlushStartOffsetCheckpointIntervalMs: s.cfg.LogFlushStartOffsetCheckpointIntervalMs,
		FileDeleteDelayMs:                    s.cfg.LogDeleteDelayMs,
		RetentionCheckIntervalMs:             s.cfg.LogRetentionCheckIntervalMs,
		ProducerIDExpirationMs:               s.cfg.ProducerIDExpirationMs,
		ProducerIDExpirationCheckIntervalMs:  s.cfg.ProducerIDExpirationCheckIntervalMs,
		Logger:                               s.logger.With("component", "log"),
		Cleaner: log.CleanerConfig{
			Enable:             s.cfg.LogCleanerEnable,
			Threads:            s.cfg.LogCleanerThreads,
			DedupeBufferSize:   s.cfg.LogCleanerDedupeBufferSize,
			IOBufferSize:       int64(s.cfg.LogCleanerIOBufferSize),
			IOBufferLoadFactor: s.cfg.LogCleanerIOBufferLoadFactor,
			BackoffMs:          s.cfg.LogCleanerBackoffMs,
		},
	})
	if err != nil {
		return fmt.Errorf("open log dirs: %w", err)
	}
	s.logs = logs
	logs.Start(runCtx)

	s.replica = replica.New(replica.Config{NodeID: s.cfg.NodeID, Static: s.cfg.Props, Logger: s.logger.With("component", "replica")}, logs)

	quorum, err := raft.NewSingleVoter(raft.SingleVoterConfig{
		Dir:    filepath.Join(metaDir, MetadataTopicDir),
		NodeID: s.cfg.NodeID,
		Logger: s.logger,
	})
	if err != nil {
		return fmt.Errorf("open metadata log: %w", err)
	}
	s.quorum = quorum
	loader := metadata.NewLoader(clusterID, s.logger.With("component", "metadata"))
	loader.AddPublisher(s.replica)
	s.groups = s.newGroupCoordinator()
	loader.AddPublisher(s.groups)
	quorum.Register(loader)

	s.controller = controller.New(controller.Config{
		NodeID:                   s.cfg.NodeID,
		ClusterID:                clusterID,
		DefaultNumPartitions:     s.cfg.NumPartitions,
		DefaultReplicationFactor: s.cfg.DefaultReplicationFactor,
		DeleteTopicEnable:        s.cfg.DeleteTopicEnable,
		ValidateTopicConfig:      config.ValidateTopicConfig,
		ValidateBrokerConfig:     config.ValidateBrokerDynamic,
		Logger:                   s.logger,
	}, quorum)
	if err := quorum.Start(runCtx); err != nil {
		return fmt.Errorf("start metadata quorum: %w", err)
	}
	s.replica.RemoveStrayLogs()
	if err := s.controller.Start(runCtx); err != nil {
		return fmt.Errorf("start controller: %w", err)
	}
	s.producerIDs = producerid.New(producerid.Config{
		Allocate: s.allocateProducerIDs,
		Logger:   s.logger.With("component", "producerid"),
	})

	netCfg := func(ls []config.Listener) network.Config {
		c := network.Config{
			SocketRequestMaxBytes:    s.cfg.SocketRequestMaxBytes,
			ConnectionsMaxIdle:       time.Duration(s.cfg.ConnectionsMaxIdleMs) * time.Millisecond,
			QueuedMaxRequests:        s.cfg.QueuedMaxRequests,
			SocketSendBufferBytes:    s.cfg.SocketSendBufferBytes,
			SocketReceiveBufferBytes: s.cfg.SocketReceiveBufferBytes,
			Logger:                   s.logger,
		}
		for _, l := range ls {
			c.Listeners = append(c.Listeners, network.ListenerConfig{
				Name: l.Name, Host: l.Host, Port: l.Port,
				SecurityProtocol: s.cfg.ListenerSecurityProtocolMap[l.Name],
			})
		}
		return c
	}
	deps := handlers.Deps{
		NodeID:      s.cfg.NodeID,
		ClusterID:   clusterID,
		Broker:      s.cfg,
		Replica:     s.replica,
		Controller:  s.controller,
		Logs:        logs,
		ProducerIDs: s.producerIDs,
		Logger:      s.logger.With("component", "handlers"),
		Groups:      s.groups,
	}
	var brokerListeners, controllerListeners []config.Listener
	for _, l := range s.cfg.Listeners {
		if slices.Contains(s.cfg.ControllerListenerNames, l.Name) {
			controllerListeners = append(controllerListeners, l)
		} else {
			brokerListeners = append(brokerListeners, l)
		}
	}
	s.ctrlNet = network.NewServer(netCfg(controllerListeners), handlers.NewController(deps))
	if err := s.ctrlNet.Start(); err != nil {
		return fmt.Errorf("start controller listener: %w", err)
	}
	// A voter entry for this node on port 0 (the implicit controller
	// listener) names the port the controller listener got.
	for i, v := range s.cfg.ControllerQuorumVoters {
		if v.ID == s.cfg.NodeID && v.Port == 0 && len(controllerListeners) > 0 {
			if a, ok := s.ctrlNet.Addr(controllerListeners[0].Name).(*net.TCPAddr); ok {
				s.cfg.ControllerQuorumVoters[i].Port = a.Port
			}
		}
	}
	s.brokerNet = network.NewServer(netCfg(brokerListeners), handlers.NewBroker(deps))
	if err := s.brokerNet.Start(); err != nil {
		return fmt.Errorf("start broker listeners: %w", err)
	}
	// Registration follows binding so that a listener on port 0 is
	// advertised with the port it got, as Kafka does.
	if err := s.controller.Bootstrap(ctx, s.registration()); err != nil {
		return fmt.Errorf("register broker: %w", err)
	}
	// The first producer id block, once the broker is registered (the
	// controller checks its epoch). Failing that, InitProducerId asks again.
	if err := s.producerIDs.Start(ctx); err != nil {
		s.logger.Warn("no producer id block yet", "err", err)
	}
	return nil
}

// allocateProducerIDs asks the controller for this broker's next block of
// producer ids, with the broker epoch of its current registration.
func (s *Server) allocateProducerIDs(ctx context.Context) (producerid.Block, error) {
	epoch := int64(-1)
	if reg, ok := s.replica.Image().Brokers[s.cfg.NodeID]; ok {
		epoch = reg.Epoch
	}
	b, err := s.controller.AllocateProducerIDs(ctx, s.cfg.NodeID, epoch)
	if err != nil {
		return producerid.Block{}, err
	}
	return producerid.Block{FirstID: b.FirstProducerID, Size: b.Size}, nil
}

// registration describes this broker's advertised endpoints for its
// RegisterBrokerRecord.
func (s *Server) registration() controller.BrokerRegistration {
	reg := controller.BrokerRegistration{NodeID: s.cfg.NodeID, Rack: s.cfg.BrokerRack}
	for _, l := range s.cfg.AdvertisedListeners {
		port := l.Port
		if a, ok := s.brokerNet.Addr(l.Name).(*net.TCPAddr); ok && port == 0 {
			port = a.Port
		}
		reg.Listeners = append(reg.Listeners, controller.Endpoint{
			Name: l.Name, Host: l.Host, Port: port,
			SecurityProtocol: s.cfg.ListenerSecurityProtocolMap[l.Name],
		})
	}
	return reg
}

// Addr is the bound address of a listener (useful with port 0).
func (s *Server) Addr(listener string) net.Addr {
	if a := s.brokerNet.Addr(listener); a != nil {
		return a
	}
	return s.ctrlNet.Addr(listener)
}

// ClusterID is the cluster id from meta.properties.
func (s *Server) ClusterID() string { return s.clusterID }

// Shutdown stops accepting connections, lets in-flight requests finish,
// stops the controller and quorum, then flushes the logs and writes their
// checkpoints and the clean-shutdown marker.
func (s *Server) Shutdown(ctx context.Context) error {
	var errs []error
	if s.brokerNet != nil {
		errs = append(errs, s.brokerNet.Shutdown(ctx))
	}
	if s.ctrlNet != nil {
		errs = append(errs, s.ctrlNet.Shutdown(ctx))
	}
	if s.producerIDs != nil {
		s.producerIDs.Close()
	}
	if s.groups != nil {
		s.groups.Close()
	}
	if s.controller != nil {
		errs = append(errs, s.controller.Close())
	}
	if s.quorum != nil {
		errs = append(errs, s.quorum.Close())
	}
	if s.cancel != nil {
		s.cancel()
	}
	if s.logs != nil {
		errs = append(errs, s.logs.Close())
	}
	return errors.Join(errs...)
}
