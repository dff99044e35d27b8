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
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/auth/acl"
	"gregor/internal/auth/sasl"
	"gregor/internal/config"
	"gregor/internal/console"
	"gregor/internal/controller"
	"gregor/internal/coordinator"
	"gregor/internal/coordinator/producerid"
	"gregor/internal/coordinator/sharecoord"
	"gregor/internal/coordinator/txnmarker"
	"gregor/internal/fetchsession"
	"gregor/internal/handlers"
	"gregor/internal/log"
	"gregor/internal/metadata"
	"gregor/internal/metrics"
	"gregor/internal/network"
	"gregor/internal/quota"
	"gregor/internal/raft"
	"gregor/internal/replica"
	"gregor/internal/rpc"
	"gregor/internal/share"
	"gregor/internal/sharestate"
)

// MetadataTopicDir is the directory of the metadata log inside metadata.log.dir.
const MetadataTopicDir = "__cluster_metadata-0"

// Server is one running Gregor node: a broker, a controller, or both
// (process.roles).
type Server struct {
	cfg    *config.Broker
	logger *slog.Logger

	clusterID string
	quorum    raft.Quorum
	node      *raft.Node         // a voter of a multi-voter quorum
	transport *raft.NetTransport // raft messages to the other voters

	// Controller role.
	controller   *controller.Controller
	ctrlNet      *network.Server
	ctrlHandlers *handlers.Handlers
	// authorizer checks every request of both listeners (nil: none, every
	// request allowed): the broker's StandardAuthorizer fed by its metadata
	// image when authorizer.class.name asks for one (the controller
	// listener gets its own, over the controller's image), or a test's.
	authorizer     acl.Authorizer
	ctrlAuthorizer acl.Authorizer
	// voterAddrs are the controllers' listener addresses by node id.
	voterAddrs map[int32]string
	// descriptors bounds the connections of both listeners' socket
	// servers by the file descriptors the process can spare.
	descriptors *network.DescriptorBudget
	// maxParkedRequests is network.Config.MaxParkedRequests of the
	// socket servers; zero is the default (tests lower it).
	maxParkedRequests int
	// accepting is the broker's socket server once started, for /readyz
	// (whose handler may run before it exists).
	accepting atomic.Pointer[network.Server]

	// Broker role.
	logs   *log.Manager
	loader *metadata.Loader
	// loaderQueue feeds loader from the quorum on a goroutine of its own,
	// so publishing a large batch never holds up the quorum or the
	// controller (and with it this broker's heartbeats).
	loaderQueue *raft.QueuedListener
	replica     *replica.Manager
	producerIDs *producerid.Manager
	groups      *coordinator.Runtime
	// sharePersister stores share-partition state (KIP-932); nil: share
	// groups are disabled.
	sharePersister sharestate.Persister
	// shares is the share-partition leader of share groups; stopShares
	// ends its Run (lock timeouts, released members) and waits for it.
	shares     *share.Manager
	stopShares func()
	txns       *coordinator.Runtime
	txnMarkers *txnmarker.Sender
	peers      *peers

	// shareState runs the share coordinator's shards (__share_group_state);
	// shareStatePersister is this broker's sharestate.Persister over them
	// (in-process, or over the wire to another broker's share coordinator).
	shareState          *coordinator.Runtime
	shareStateService   *sharecoord.Service
	shareStatePersister *sharecoord.Persister

	brokerNet *network.Server
	// brokerHandlers answer the broker listeners' requests (brokerNet's
	// handler; in-process fuzz tests call them directly).
	brokerHandlers *handlers.Handlers
	lifecycle      *lifecycle
	// quotas enforce the client quotas on the broker listeners.
	quotas *quota.Managers
	// replicationQuotas are the replication throttles (broker role).
	replicationQuotas *replicationQuotas
	// fetchSessions are the broker's incremental fetch sessions (KIP-227).
	fetchSessions *fetchsession.Cache

	// sec owns the listeners' TLS contexts and SASL mechanisms;
	// brokerClient and controllerClient are how this node dials the
	// inter-broker and controller listeners of its peers.
	sec              *security
	brokerClient     rpc.Security
	controllerClient rpc.Security

	metrics *metrics.Registry
	http    *metrics.HTTPServer
	console *console.Console // the web console on http, brokers only

	cancel context.CancelFunc
	// stopping ends when Shutdown has run the controlled shutdown: requests
	// still waiting for a controller give up then instead of holding up
	// the shutdown.
	stopping   context.Context
	endWaiting context.CancelFunc
}

// New checks the configuration against what this process can run.
func New(cfg *config.Broker, logger *slog.Logger) (*Server, error) {
	if !cfg.HasRole("broker") && !cfg.HasRole("controller") {
		return nil, fmt.Errorf("process.roles=%v: want broker, controller or both", cfg.ProcessRoles)
	}
	if len(cfg.ControllerQuorumVoters) == 0 {
		return nil, errors.New("controller.quorum.voters is empty: Gregor finds the controllers only through it (controller.quorum.bootstrap.servers alone, KIP-853, is not supported yet)")
	}
	stopping, endWaiting := context.WithCancel(context.Background())
	return &Server{cfg: cfg, logger: logger, stopping: stopping, endWaiting: endWaiting,
		fetchSessions: fetchsession.New(cfg.MaxIncrementalFetchSessionCacheSlots, fetchsession.DefaultEvictionAfter)}, nil
}

// singleNode reports a node that is the whole cluster's quorum: combined
// roles and itself as the only voter (the zero-config node).
func (s *Server) singleNode() bool {
	v := s.cfg.ControllerQuorumVoters
	return s.cfg.HasRole("broker") && s.cfg.HasRole("controller") && len(v) == 1 && v[0].ID == s.cfg.NodeID
}

// Start opens storage, joins or follows the metadata quorum, and starts
// serving; a broker returns once it is registered and unfenced.
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
	isBroker, isController := s.cfg.HasRole("broker"), s.cfg.HasRole("controller")
	metaDir := s.cfg.MetadataLogDir
	// The directories this node keeps data in: a broker's log.dirs and
	// metadata.log.dir, which by default is the first of them.
	dirs := []string{metaDir}
	if isBroker {
		dirs = slices.Clone(s.cfg.LogDirs)
		if !slices.Contains(dirs, metaDir) {
			dirs = append(dirs, metaDir)
		}
	}
	var fixed []string // the node's listen addresses with a fixed port
	for _, l := range s.cfg.Listeners {
		if l.Port != 0 {
			fixed = append(fixed, l.Addr())
		}
	}
	if a := s.cfg.GregorHTTPListen; a != "" && !strings.HasSuffix(a, ":0") {
		fixed = append(fixed, a)
	}
	clusterID, err := ensureFormatted(dirs, s.cfg.NodeID, s.singleNode(), func() error { return listenersFree(fixed) }, s.logger)
	if err != nil {
		return err
	}
	s.clusterID = clusterID
	startAttrs := []any{"node.id", s.cfg.NodeID, "process.roles", s.cfg.ProcessRoles, "cluster.id", clusterID}
	if isBroker {
		startAttrs = append(startAttrs, "log.dirs", s.cfg.LogDirs)
	}
	s.logger.Info("starting gregor", append(startAttrs, "metadata.log.dir", metaDir)...)
	s.voterAddrs = map[int32]string{}
	for _, v := range s.cfg.ControllerQuorumVoters {
		s.voterAddrs[v.ID] = net.JoinHostPort(v.Host, strconv.Itoa(v.Port))
	}

	s.metrics = metrics.New(s.metricsState)
	if s.authorizer == nil { // a test may have set one
		std, err := s.newStandardAuthorizer()
		if err != nil {
			return err
		}
		if std != nil {
			s.authorizer = std
			ctrl, err := s.newStandardAuthorizer()
			if err != nil {
				return err
			}
			s.ctrlAuthorizer = &imageAuthorizer{image: func() *metadata.Image { return s.controller.Image() }, std: ctrl}
		}
	} else {
		s.ctrlAuthorizer = s.authorizer
	}
	if s.controllerClient, err = s.controllerSecurity(); err != nil {
		return err
	}
	if isBroker {
		if s.brokerClient, err = s.interBrokerSecurity(); err != nil {
			return err
		}
	}
	if isBroker {
		if err := s.openBrokerStorage(runCtx); err != nil {
			return err
		}
	}
	if err := s.openQuorum(clusterID); err != nil {
		return err
	}
	if isBroker {
		s.loaderQueue = raft.NewQueuedListener(s.loader)
		s.quorum.Register(s.loaderQueue)
	}
	if isController {
		// What `storage format` chose for a new cluster; the controller
		// writes it only to an empty log.
		bootstrap, err := raft.ReadBootstrapCheckpoint(metaDir)
		if err != nil {
			return err
		}
		s.controller = controller.New(controller.Config{
			NodeID:                             s.cfg.NodeID,
			ClusterID:                          clusterID,
			DefaultNumPartitions:               s.cfg.NumPartitions,
			DefaultReplicationFactor:           s.cfg.DefaultReplicationFactor,
			DeleteTopicEnable:                  s.cfg.DeleteTopicEnable,
			LeaderOnlyISR:                      true,
			UncleanLeaderElectionEnable:        s.cfg.UncleanLeaderElectionEnable,
			MinInsyncReplicas:                  s.cfg.MinInsyncReplicas,
			UncleanLeaderElectionCheckInterval: time.Duration(s.cfg.UncleanLeaderElectionIntervalMs) * time.Millisecond,
			AutoLeaderRebalanceEnable:          s.cfg.AutoLeaderRebalanceEnable,
			LeaderImbalancePerBrokerPercentage: s.cfg.LeaderImbalancePerBrokerPercentage,
			LeaderImbalanceCheckInterval:       time.Duration(s.cfg.LeaderImbalanceCheckIntervalSeconds) * time.Second,
			CoResidentBroker:                   isBroker,
			BrokerSessionTimeout:               time.Duration(s.cfg.BrokerSessionTimeoutMs) * time.Millisecond,
			FenceOnConnectionClose:             s.cfg.FenceOnConnectionClose,
			ProbeGone:                          s.probeGone,
			ValidateTopicConfig:                config.ValidateTopicConfig,
			ValidateBrokerConfig:               config.ValidateBrokerDynamic,
			ValidateGroupConfig:                s.cfg.ValidateGroupConfig,
			Bootstrap:                          bootstrap,
			Logger:                             s.logger,
		}, timedQuorum{s.quorum, s.metrics})
		// The controller listener comes up before the quorum starts: the
		// other voters' raft messages arrive there.
		if err := s.startControllerListener(); err != nil {
			return err
		}
	}
	if err := s.quorum.Start(ctx); err != nil {
		return fmt.Errorf("start metadata quorum: %w", err)
	}
	if s.transport != nil {
		s.transport.Start(s.node)
	}
	if isController {
		if err := s.controller.Start(runCtx); err != nil {
			return fmt.Errorf("start controller: %w", err)
		}
	}
	if isBroker {
		return s.startBroker(ctx, runCtx)
	}
	return s.startHTTP()
}

// startHTTP starts the gregor.http.listen listener (HTTPS with a
// gregor.http.ssl key store), once the components its handlers read exist.
func (s *Server) startHTTP() error {
	addr := s.cfg.GregorHTTPListen
	if addr == "" {
		return nil
	}
	tlsCfg, err := httpTLS(s.cfg.Props)
	if err != nil {
		return err
	}
	h, err := metrics.ListenHTTP(addr, tlsCfg, s.metrics, s.ready, s.newConsole(), s.logger)
	if err != nil {
		return err
	}
	s.http = h
	return nil
}

// openBrokerStorage opens the log dirs and the components that publish the
// metadata image into them.
func (s *Server) openBrokerStorage(runCtx context.Context) error {
	logs, err := log.NewManager(log.ManagerConfig{
		Dirs:                                 s.cfg.LogDirs,
		Default:                              log.DefaultConfig(),
		FlushSchedulerIntervalMs:             s.cfg.LogFlushSchedulerIntervalMs,
		FlushOffsetCheckpointIntervalMs:      s.cfg.LogFlushOffsetCheckpointIntervalMs,
		FlushStartOffsetCheckpointIntervalMs: s.cfg.LogFlushStartOffsetCheckpointIntervalMs,
		FileDeleteDelayMs:                    s.cfg.LogDeleteDelayMs,
		RetentionCheckIntervalMs:             s.cfg.LogRetentionCheckIntervalMs,
		MaxOpenFiles:                         s.cfg.LogMaxOpenFiles,
		DecompressionMemory:                  s.cfg.DecompressionMemoryBytes,
		RecoveryThreadsPerDataDir:            s.cfg.NumRecoveryThreadsPerDataDir,
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
	s.loader = metadata.NewLoader(s.clusterID, s.logger.With("component", "metadata"))
	if std, ok := s.authorizer.(*acl.Standard); ok {
		s.loader.AddPublisher(aclPublisher{std: std})
	}
	// Transaction shards may load before the broker has started; ids are
	// handed out once its first block arrives.
	s.producerIDs = producerid.New(producerid.Config{
		Allocate: s.allocateProducerIDs,
		Logger:   s.logger.With("component", "producerid"),
	})
	s.txns, s.txnMarkers = s.newTxnCoordinator()
	s.shareState, s.shareStateService = s.newShareCoordinator()
	s.peers = newPeers(s.cfg.NodeID, s.cfg.InterBrokerListenerName, s.brokerClient, s.replica.Image)
	s.shareStatePersister = s.newSharePersister()
	// Share groups: the share-partition leader, told by the group
	// coordinator of members that leave.
	if s.sharePersister == nil { // tests may give their own
		s.sharePersister = s.shareStatePersister
	}
	s.shares = s.newShareManager()
	s.groups = s.newGroupCoordinator()
	return nil
}

// openQuorum opens this node's side of the metadata quorum: a voter (the
// zero-config single node is the only voter of its quorum), or an observer
// for a broker-only node.
func (s *Server) openQuorum(clusterID string) error {
	dir := filepath.Join(s.cfg.MetadataLogDir, MetadataTopicDir)
	switch {
	case s.cfg.HasRole("controller"):
		peers := map[int32]string{}
		voters := make([]int32, 0, len(s.cfg.ControllerQuorumVoters))
		for _, v := range s.cfg.ControllerQuorumVoters {
			voters = append(voters, v.ID)
			if v.ID != s.cfg.NodeID {
				peers[v.ID] = s.voterAddrs[v.ID]
			}
		}
		s.transport = raft.NewNetTransport(raft.NetTransportConfig{
			ClusterID:      clusterID,
			NodeID:         s.cfg.NodeID,
			Security:       s.controllerClient,
			Peers:          peers,
			RequestTimeout: time.Duration(s.cfg.QuorumRequestTimeoutMs) * time.Millisecond,
			Logger:         s.logger,
		})
		var probe raft.LeaderProbe
		if s.cfg.ElectionOnLeaderExit {
			probe = s.transport.ProbeGone
		}
		node, err := raft.NewNode(raft.NodeConfig{
			Dir:                       dir,
			NodeID:                    s.cfg.NodeID,
			ClusterID:                 clusterID,
			Voters:                    voters,
			Transport:                 s.transport,
			ElectionTimeout:           time.Duration(s.cfg.QuorumElectionTimeoutMs) * time.Millisecond,
			SnapshotMaxNewRecordBytes: s.cfg.MetadataSnapshotMaxNewRecordBytes,
			SegmentBytes:              s.cfg.MetadataLogSegmentBytes,
			SnapshotMaxInterval:       time.Duration(s.cfg.MetadataSnapshotMaxIntervalMs) * time.Millisecond,
			Snapshot:                  func(end int64) ([][]byte, bool) { return s.controller.SnapshotRecords(end) },
			LeaderProbe:               probe,
			OnElection:                s.metrics.RaftElected,
			OnFetchedRecords:          s.metrics.RaftFetched,
			Logger:                    s.logger,
		})
		if err != nil {
			return fmt.Errorf("open metadata log: %w", err)
		}
		s.node, s.quorum = node, node
	default:
		s.quorum = raft.NewObserver(raft.ObserverConfig{
			NodeID:           s.cfg.NodeID,
			ClusterID:        clusterID,
			Security:         s.controllerClient,
			Voters:           s.voterAddrs,
			RequestTimeout:   time.Duration(s.cfg.QuorumRequestTimeoutMs) * time.Millisecond,
			RetryBackoff:     time.Duration(s.cfg.QuorumRetryBackoffMs) * time.Millisecond,
			OnFetchedRecords: s.metrics.RaftFetched,
			Logger:           s.logger,
		})
	}
	return nil
}

// probeGone is rpc.ProbeGone with controller.quorum.request.timeout.ms
// bounding each dial: the controller's probe of a broker's listener.
func (s *Server) probeGone(ctx context.Context, addr string) bool {
	return rpc.ProbeGone(ctx, addr, time.Duration(s.cfg.QuorumRequestTimeoutMs)*time.Millisecond)
}

// netConfig configures the socket server of listeners ls; scram finds the
// SCRAM credentials of the metadata image the listeners' node follows.
func (s *Server) netConfig(ls []config.Listener, scram sasl.ScramLookup) (network.Config, error) {
	c := network.Config{
		Descriptors:              s.connectionDescriptors(),
		MaxParkedRequests:        s.maxParkedRequests,
		SocketRequestMaxBytes:    s.cfg.SocketRequestMaxBytes,
		SASLMaxReceiveSize:       s.cfg.SASLServerMaxReceiveSize,
		ConnectionsMaxIdle:       time.Duration(s.cfg.ConnectionsMaxIdleMs) * time.Millisecond,
		QueuedMaxRequests:        s.cfg.QueuedMaxRequests,
		QueuedMaxRequestBytes:    s.cfg.QueuedMaxRequestBytes,
		InterBrokerListener:      s.cfg.InterBrokerListenerName,
		Connections:              s.metrics,
		SocketSendBufferBytes:    s.cfg.SocketSendBufferBytes,
		SocketReceiveBufferBytes: s.cfg.SocketReceiveBufferBytes,
		Logger:                   s.logger,
		Observe: func(req *network.Request, resp kmsg.Response, started, done time.Time) {
			waiting, _ := req.WaitingSince()
			s.metrics.ObserveRequest(req.Header.APIKey, req.Size, resp, req.ReceivedAt, started, waiting, done)
		},
		ObserveSent:      s.metrics.ObserveSent,
		OnAuthentication: s.metrics.Authenticated,
	}
	for _, l := range ls {
		lc := network.ListenerConfig{
			Name: l.Name, Host: l.Host, Port: l.Port,
			SecurityProtocol: s.cfg.ListenerSecurityProtocolMap[l.Name],
		}
		if err := s.listenerSecurity(&lc, scram); err != nil {
			return c, err
		}
		c.Listeners = append(c.Listeners, lc)
	}
	limits := s.connectionLimits(s.cfg, listenerNames(ls))
	c.Limits = &limits
	return c, nil
}

// connectionDescriptors is the process's descriptor budget for connections
// (network.DescriptorBudget), made on first use: RLIMIT_NOFILE less the
// segment files the log may keep open (a broker's
// gregor.log.max.open.files) and a reserve.
func (s *Server) connectionDescriptors() *network.DescriptorBudget {
	if s.descriptors != nil {
		return s.descriptors
	}
	logFiles := 0
	if s.cfg.HasRole("broker") {
		logFiles = log.MaxOpenFiles(s.cfg.LogMaxOpenFiles)
	}
	n := network.ConnectionDescriptors(logFiles)
	if n > 0 && n < 16 {
		s.logger.Warn("few file descriptors left for connections: raise the open-file limit (ulimit -n) or lower gregor.log.max.open.files",
			"connections", n, "log_files", logFiles)
	}
	s.descriptors = network.NewDescriptorBudget(n)
	return s.descriptors
}

func listenerNames(ls []config.Listener) []string {
	names := make([]string, len(ls))
	for i, l := range ls {
		names[i] = l.Name
	}
	return names
}

func (s *Server) listeners(controller bool) []config.Listener {
	var ls []config.Listener
	for _, l := range s.cfg.Listeners {
		if slices.Contains(s.cfg.ControllerListenerNames, l.Name) == controller {
			ls = append(ls, l)
		}
	}
	return ls
}

func (s *Server) startControllerListener() error {
	deps := handlers.Deps{
		NodeID:      s.cfg.NodeID,
		ClusterID:   s.clusterID,
		Broker:      s.cfg,
		Image:       s.controller.Image,
		Controller:  s.controller,
		Lifecycle:   s.controller,
		Replication: s.controller,
		Logger:      s.logger.With("component", "handlers"),
		Authorizer:  s.ctrlAuthorizer,
	}
	if s.node != nil {
		deps.Quorum, deps.QuorumStatus = s.node, s.node.Status
	}
	s.ctrlHandlers = handlers.NewController(deps)
	ls := s.listeners(true)
	s.warnOpenControllerListeners(ls)
	netCfg, err := s.netConfig(ls, scramLookup(s.controller.Image))
	if err != nil {
		return fmt.Errorf("controller listener: %w", err)
	}
	s.ctrlNet = network.NewServer(netCfg, s.ctrlHandlers)
	if err := s.ctrlNet.Start(); err != nil {
		return fmt.Errorf("start controller listener: %w", err)
	}
	// A voter entry for this node on port 0 (the implicit controller
	// listener) names the port the controller listener got.
	for i, v := range s.cfg.ControllerQuorumVoters {
		if v.ID == s.cfg.NodeID && v.Port == 0 && len(ls) > 0 {
			if a, ok := s.ctrlNet.Addr(ls[0].Name).(*net.TCPAddr); ok {
				s.cfg.ControllerQuorumVoters[i].Port = a.Port
				s.voterAddrs[v.ID] = net.JoinHostPort(v.Host, strconv.Itoa(a.Port))
			}
		}
	}
	return nil
}

// warnOpenControllerListeners warns about a controller listener that
// authenticates nobody (PLAINTEXT) and is reachable beyond this host: any
// client that reaches it can register a broker or fence one, as on Kafka.
// Such a listener belongs on a trusted network; SASL or mutual TLS with an
// authorizer requires CLUSTER_ACTION of every node-to-node request.
func (s *Server) warnOpenControllerListeners(ls []config.Listener) {
	for _, l := range ls {
		if s.cfg.ListenerSecurityProtocolMap[l.Name] != "PLAINTEXT" {
			continue
		}
		if ip := net.ParseIP(l.Host); ip != nil && ip.IsLoopback() || l.Host == "localhost" {
			continue
		}
		s.logger.Warn("the controller listener is PLAINTEXT on a non-loopback address: any client that reaches it can register brokers and send node-to-node requests; keep it on a trusted network, or use SASL or SSL with an authorizer",
			"listener", l.Name, "address", l.Addr())
	}
}

// startBroker starts the broker listeners, registers with the active
// controller and waits to be unfenced (caught up with the metadata log).
func (s *Server) startBroker(ctx, runCtx context.Context) error {
	quotas, err := s.newQuotaManagers()
	if err != nil {
		return err
	}
	s.quotas = quotas
	// Quotas hold from the broker's first request on.
	s.loader.AddPublisher(clientQuotaPublisher{m: quotas})
	if s.replicationQuotas, err = s.newReplicationQuotas(); err != nil {
		return err
	}
	s.loader.AddPublisher(s.replicationQuotas)
	deps := handlers.Deps{
		NodeID:      s.cfg.NodeID,
		ClusterID:   s.clusterID,
		Broker:      s.cfg,
		Replica:     s.replica,
		Image:       s.replica.Image,
		Controller:  handlers.ForwardingController(s.forwardAdmin),
		Forward:     s.forwardAdmin,
		Logs:        s.logs,
		ProducerIDs: s.producerIDs,
		Logger:      s.logger.With("component", "handlers"),
		Groups:      s.groups,
		Txns:        s.txns,
		ShareState:  s.shareStateService,
		Peers:       s.peers,
		Metrics:     s.metrics,
		Authorizer:  s.authorizer,
		Quotas:      quotas,

		FetchSessions:  s.fetchSessions,
		SharePersister: s.sharePersister,
		Shares:         s.shares,
	}
	s.lifecycle = newLifecycle(s)
	s.txnMarkers.Start()
	s.startShares(runCtx)
	s.replica.StartReplication(replica.ReplicationConfig{
		AlterPartition: func(ctx context.Context, req *kmsg.AlterPartitionRequest) (*kmsg.AlterPartitionResponse, error) {
			resp, err := s.controllerRequest(ctx, req)
			if err != nil {
				return nil, err
			}
			return resp.(*kmsg.AlterPartitionResponse), nil
		},
		BrokerEpoch:         s.lifecycle.brokerEpoch,
		ReplicaLagTimeMaxMs: s.cfg.ReplicaLagTimeMaxMs,
		OnISRChange:         s.metrics.ISRChanged,
		LeaderQuota:         s.replicationQuotas.leader,
		FollowerQuota:       s.replicationQuotas.follower,
		Fetcher: replica.FetcherConfig{
			ClusterID:   s.clusterID,
			Listener:    s.cfg.InterBrokerListenerName,
			Security:    s.brokerClient,
			MaxBytes:    s.cfg.ReplicaFetchMaxBytes,
			ResponseMax: s.cfg.ReplicaFetchResponseMaxBytes,
			MaxWait:     time.Duration(s.cfg.ReplicaFetchWaitMaxMs) * time.Millisecond,
			MinBytes:    s.cfg.ReplicaFetchMinBytes,
			Backoff:     time.Duration(s.cfg.ReplicaFetchBackoffMs) * time.Millisecond,
			NumFetchers: s.cfg.NumReplicaFetchers,
		},
	})
	if err := s.startHTTP(); err != nil {
		return err
	}
	// Clients are accepted only once the broker is unfenced: until then
	// its image may still name it fenced, or lack topics it leads.
	serving := make(chan struct{})
	netCfg, err := s.netConfig(s.listeners(false), scramLookup(s.replica.Image))
	if err != nil {
		return fmt.Errorf("broker listeners: %w", err)
	}
	netCfg.Gate = serving
	s.brokerHandlers = handlers.NewBroker(deps)
	s.brokerNet = network.NewServer(netCfg, s.brokerHandlers)
	if err := s.brokerNet.Start(); err != nil {
		return fmt.Errorf("start broker listeners: %w", err)
	}
	s.accepting.Store(s.brokerNet)
	s.loader.AddPublisher(newTLSReloader(s))
	s.loader.AddPublisher(newConnectionLimitsUpdater(s, s.brokerNet, listenerNames(s.listeners(false))))
	s.loader.AddPublisher(newReplicaFetchersUpdater(s, s.replica))
	s.setConsoleBroker()
	// Registration follows binding so that a listener on port 0 is
	// advertised with the port it got, as Kafka does.
	if err := s.lifecycle.start(ctx, runCtx); err != nil {
		return err
	}
	// The partitions and the coordinators follow the image only from here,
	// once it is caught up (Kafka's brokers publish metadata only then,
	// too): while a restarted broker replays its metadata log its image
	// may still name it leader of partitions it no longer leads, in epochs
	// long gone. A partition that took such a leadership would stamp that
	// stale epoch into its leader epoch cache (cutting the later epochs
	// it had followed, so that it later truncates records it holds rightly),
	// and a coordinator loaded from it would act (abort timed-out
	// transactions, resend markers) on stale state. The replica manager
	// publishes first: the coordinators read the logs it opens.
	s.loader.AddPublisher(s.replica)
	s.loader.AddPublisher(s.groups)
	s.loader.AddPublisher(s.txns)
	s.loader.AddPublisher(s.shareState)
	close(serving)
	// Caught up: logs of partitions the image no longer names are strays.
	s.replica.RemoveStrayLogs()
	// The first producer id block, once the broker is registered (the
	// controller checks its epoch). Failing that, InitProducerId asks again.
	if err := s.producerIDs.Start(ctx); err != nil {
		s.logger.Warn("no producer id block yet", "err", err)
	}
	return nil
}

// allocateProducerIDs asks the active controller for this broker's next
// block of producer ids, with the broker epoch of its registration.
func (s *Server) allocateProducerIDs(ctx context.Context) (producerid.Block, error) {
	req := kmsg.NewPtrAllocateProducerIDsRequest()
	req.BrokerID, req.BrokerEpoch = s.cfg.NodeID, s.lifecycle.brokerEpoch()
	kresp, err := s.controllerRequest(ctx, req)
	if err != nil {
		return producerid.Block{}, err
	}
	resp := kresp.(*kmsg.AllocateProducerIDsResponse)
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return producerid.Block{}, fmt.Errorf("allocate producer ids: %w", err)
	}
	return producerid.Block{FirstID: resp.ProducerIDStart, Size: resp.ProducerIDLen}, nil
}

// HTTPAddr is the bound address of the gregor.http.listen listener, nil
// when it is off.
func (s *Server) HTTPAddr() net.Addr {
	if s.http == nil {
		return nil
	}
	return s.http.Addr()
}

// Addr is the bound address of a listener (useful with port 0).
func (s *Server) Addr(listener string) net.Addr {
	if s.brokerNet != nil {
		if a := s.brokerNet.Addr(listener); a != nil {
			return a
		}
	}
	if s.ctrlNet != nil {
		return s.ctrlNet.Addr(listener)
	}
	return nil
}

// ClusterID is the cluster id from meta.properties.
func (s *Server) ClusterID() string { return s.clusterID }

// Shutdown moves the broker's leaderships away (controlled shutdown),
// stops accepting connections, lets in-flight requests finish, stops the
// controller and quorum, then flushes the logs and writes their checkpoints
// and the clean-shutdown marker.
func (s *Server) Shutdown(ctx context.Context) error {
	var errs []error
	// stage runs one part of the stop when it exists; a slow one is
	// logged, so that an operator waiting for a large broker to stop sees
	// where the time goes.
	stage := func(name string, exists bool, stop func() error) {
		if !exists {
			return
		}
		t0 := time.Now()
		errs = append(errs, stop())
		if d := time.Since(t0); d >= time.Second {
			s.logger.Info("shutdown stage took long", "stage", name, "took", d.Round(time.Millisecond))
		}
	}
	nop := func(f func()) func() error { return func() error { f(); return nil } }
	stage("controlled shutdown", s.lifecycle != nil, nop(func() { s.lifecycle.shutdown(ctx) }))
	s.endWaiting()
	// Long-polling fetches answer now instead of holding the drain below
	// until their max wait.
	stage("release fetches", s.replica != nil, nop(func() { s.replica.ReleaseFetches() }))
	stage("broker listeners", s.brokerNet != nil, func() error { return s.brokerNet.Shutdown(ctx) })
	// Before the persister's peers and coordinators close.
	stage("share groups", s.stopShares != nil, nop(func() { s.stopShares() }))
	stage("controller listener", s.ctrlNet != nil, func() error { return s.ctrlNet.Shutdown(ctx) })
	// Before the publishers close: no image reaches them afterwards.
	stage("metadata loader", s.loaderQueue != nil, nop(func() { s.loaderQueue.Close() }))
	stage("transaction markers", s.txnMarkers != nil, nop(func() { s.txnMarkers.Close() }))
	stage("peer clients", s.peers != nil, nop(func() { s.peers.Close() }))
	stage("producer ids", s.producerIDs != nil, nop(func() { s.producerIDs.Close() }))
	stage("replica manager", s.replica != nil, nop(func() { s.replica.Close() }))
	stage("group coordinator", s.groups != nil, nop(func() { s.groups.Close() }))
	stage("transaction coordinator", s.txns != nil, nop(func() { s.txns.Close() }))
	stage("share coordinator", s.shareState != nil, nop(func() { s.shareState.Close() }))
	stage("controller", s.controller != nil, func() error { return s.controller.Close() })
	stage("quorum", s.quorum != nil, func() error { return s.quorum.Close() })
	stage("raft transport", s.transport != nil, nop(func() { s.transport.Close() }))
	if s.cancel != nil {
		s.cancel()
	}
	stage("security", s.sec != nil, nop(func() { s.sec.close() }))
	stage("http", s.http != nil, func() error { return s.http.Shutdown(ctx) })
	stage("console", s.console != nil, nop(func() { s.console.Close() }))
	stage("logs", s.logs != nil, func() error { return s.logs.Close() })
	return errors.Join(errs...)
}
