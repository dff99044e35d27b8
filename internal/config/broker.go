package config

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Broker is the typed static configuration of one Gregor node, read from
// server.properties. Every field comes from the Kafka key named in its
// comment, with Kafka 4.0's default unless the comment says Gregor's.
type Broker struct {
	NodeID       int32    // node.id (Gregor default 1; broker.id is accepted as a synonym)
	ProcessRoles []string // process.roles (Gregor default broker,controller)

	Listeners []Listener // listeners (Gregor default PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093)
	// AdvertisedListeners are the broker listeners published in metadata:
	// advertised.listeners (or listeners) minus the controller listeners.
	// An empty Host means "all interfaces" and is for the server to resolve.
	AdvertisedListeners []Listener
	// AdvertisedControllerListeners are the controller endpoints this node
	// publishes to the quorum: the controller entries of
	// advertised.listeners, else of listeners.
	AdvertisedControllerListeners []Listener
	// ListenerSecurityProtocolMap is listener.security.protocol.map; as in
	// Kafka, when it is not set and no listener is SSL or SASL, every
	// controller listener name is mapped to PLAINTEXT.
	ListenerSecurityProtocolMap      map[string]string
	ControllerListenerNames          []string // controller.listener.names (Gregor default CONTROLLER)
	ControllerQuorumVoters           []Voter  // controller.quorum.voters (Gregor default: this node at its controller listener); empty for a broker-only node given only bootstrap servers
	ControllerQuorumBootstrapServers []string // controller.quorum.bootstrap.servers
	InterBrokerListenerName          string   // inter.broker.listener.name, else security.inter.broker.protocol

	LogDirs        []string // log.dirs, else log.dir (Gregor default ./gregor-data)
	MetadataLogDir string   // metadata.log.dir, default the first log dir

	NumPartitions            int32 // num.partitions
	DefaultReplicationFactor int16 // default.replication.factor
	AutoCreateTopicsEnable   bool  // auto.create.topics.enable
	DeleteTopicEnable        bool  // delete.topic.enable

	MessageMaxBytes          int32 // message.max.bytes (1048588)
	SocketRequestMaxBytes    int32 // socket.request.max.bytes
	ConnectionsMaxIdleMs     int64 // connections.max.idle.ms
	QueuedMaxRequests        int   // queued.max.requests
	QueuedMaxRequestBytes    int64 // queued.max.request.bytes; -1 = unbounded
	NumNetworkThreads        int   // num.network.threads
	NumIOThreads             int   // num.io.threads
	SocketSendBufferBytes    int   // socket.send.buffer.bytes
	SocketReceiveBufferBytes int   // socket.receive.buffer.bytes
	FetchMaxBytes            int32 // fetch.max.bytes
	// max.incremental.fetch.session.cache.slots
	MaxIncrementalFetchSessionCacheSlots int
	// group.share.max.share.sessions
	GroupShareMaxShareSessions int

	// Client quota windows.
	QuotaWindowNum                   int // quota.window.num
	QuotaWindowSizeSeconds           int // quota.window.size.seconds
	ControllerQuotaWindowNum         int // controller.quota.window.num
	ControllerQuotaWindowSizeSeconds int // controller.quota.window.size.seconds
	// Replication throttles (KIP-73); the rates are the static layer under
	// the dynamic broker configs.
	LeaderReplicationThrottledRate    int64 // leader.replication.throttled.rate
	FollowerReplicationThrottledRate  int64 // follower.replication.throttled.rate
	ReplicationQuotaWindowNum         int   // replication.quota.window.num
	ReplicationQuotaWindowSizeSeconds int   // replication.quota.window.size.seconds

	// Log defaults: the server defaults of topic configurations.
	LogSegmentBytes                         int32    // log.segment.bytes
	LogRollMs                               int64    // log.roll.ms, else log.roll.hours
	LogRollJitterMs                         int64    // log.roll.jitter.ms, else log.roll.jitter.hours
	LogRetentionMs                          int64    // log.retention.ms, else .minutes, else .hours; -1 = forever
	LogRetentionBytes                       int64    // log.retention.bytes
	LogIndexSizeMaxBytes                    int32    // log.index.size.max.bytes
	LogIndexIntervalBytes                   int32    // log.index.interval.bytes
	LogFlushIntervalMessages                int64    // log.flush.interval.messages
	LogFlushIntervalMs                      int64    // log.flush.interval.ms, else log.flush.scheduler.interval.ms
	LogFlushSchedulerIntervalMs             int64    // log.flush.scheduler.interval.ms
	LogFlushOffsetCheckpointIntervalMs      int64    // log.flush.offset.checkpoint.interval.ms
	LogFlushStartOffsetCheckpointIntervalMs int64    // log.flush.start.offset.checkpoint.interval.ms
	LogDeleteDelayMs                        int64    // log.segment.delete.delay.ms (topic: file.delete.delay.ms)
	LogCleanupPolicy                        []string // log.cleanup.policy
	CompressionType                         string   // compression.type
	LogMessageTimestampType                 string   // log.message.timestamp.type
	LogMessageTimestampBeforeMaxMs          int64    // log.message.timestamp.before.max.ms
	LogMessageTimestampAfterMaxMs           int64    // log.message.timestamp.after.max.ms
	LogPreallocate                          bool     // log.preallocate
	MinInsyncReplicas                       int32    // min.insync.replicas
	UncleanLeaderElectionEnable             bool     // unclean.leader.election.enable
	UncleanLeaderElectionIntervalMs         int64    // unclean.leader.election.interval.ms
	AutoLeaderRebalanceEnable               bool     // auto.leader.rebalance.enable
	LeaderImbalancePerBrokerPercentage      int      // leader.imbalance.per.broker.percentage
	LeaderImbalanceCheckIntervalSeconds     int64    // leader.imbalance.check.interval.seconds
	LogRetentionCheckIntervalMs             int64    // log.retention.check.interval.ms
	LogMaxOpenFiles                         int      // gregor.log.max.open.files
	DecompressionMemoryBytes                int64    // gregor.decompression.memory.bytes
	NumRecoveryThreadsPerDataDir            int      // num.recovery.threads.per.data.dir
	LogCleanerEnable                        bool     // log.cleaner.enable
	LogCleanerThreads                       int      // log.cleaner.threads
	LogCleanerDedupeBufferSize              int64    // log.cleaner.dedupe.buffer.size
	LogCleanerIOBufferSize                  int32    // log.cleaner.io.buffer.size
	LogCleanerIOBufferLoadFactor            float64  // log.cleaner.io.buffer.load.factor
	LogCleanerBackoffMs                     int64    // log.cleaner.backoff.ms
	LogCleanerMinCleanableRatio             float64  // log.cleaner.min.cleanable.ratio
	LogCleanerDeleteRetentionMs             int64    // log.cleaner.delete.retention.ms
	LogCleanerMinCompactionLagMs            int64    // log.cleaner.min.compaction.lag.ms
	LogCleanerMaxCompactionLagMs            int64    // log.cleaner.max.compaction.lag.ms

	// Replication.
	ReplicaLagTimeMaxMs                      int64 // replica.lag.time.max.ms
	ReplicaFetchMaxBytes                     int32 // replica.fetch.max.bytes
	ReplicaFetchResponseMaxBytes             int32 // replica.fetch.response.max.bytes
	ReplicaFetchWaitMaxMs                    int64 // replica.fetch.wait.max.ms
	ReplicaFetchMinBytes                     int32 // replica.fetch.min.bytes
	ReplicaFetchBackoffMs                    int64 // replica.fetch.backoff.ms
	ReplicaSocketTimeoutMs                   int64 // replica.socket.timeout.ms
	NumReplicaFetchers                       int   // num.replica.fetchers
	ReplicaHighWatermarkCheckpointIntervalMs int64 // replica.high.watermark.checkpoint.interval.ms

	// KRaft.
	BrokerHeartbeatIntervalMs          int64 // broker.heartbeat.interval.ms
	BrokerSessionTimeoutMs             int64 // broker.session.timeout.ms
	FenceOnConnectionClose             bool  // gregor.broker.fence.on.connection.close
	ElectionOnLeaderExit               bool  // gregor.controller.quorum.election.on.leader.exit
	InitialBrokerRegistrationTimeoutMs int64 // initial.broker.registration.timeout.ms
	QuorumElectionTimeoutMs            int64 // controller.quorum.election.timeout.ms
	QuorumFetchTimeoutMs               int64 // controller.quorum.fetch.timeout.ms
	QuorumElectionBackoffMaxMs         int64 // controller.quorum.election.backoff.max.ms
	QuorumRequestTimeoutMs             int64 // controller.quorum.request.timeout.ms
	QuorumRetryBackoffMs               int64 // controller.quorum.retry.backoff.ms
	QuorumAppendLingerMs               int64 // controller.quorum.append.linger.ms
	MetadataLogSegmentBytes            int32 // metadata.log.segment.bytes
	MetadataLogSegmentMs               int64 // metadata.log.segment.ms
	MetadataMaxRetentionBytes          int64 // metadata.max.retention.bytes
	MetadataMaxRetentionMs             int64 // metadata.max.retention.ms
	MetadataMaxIdleIntervalMs          int64 // metadata.max.idle.interval.ms
	MetadataSnapshotMaxNewRecordBytes  int64 // metadata.log.max.record.bytes.between.snapshots
	MetadataSnapshotMaxIntervalMs      int64 // metadata.log.max.snapshot.interval.ms

	// Groups and transactions (defaults used by the coordinators).
	OffsetsTopicNumPartitions            int32    // offsets.topic.num.partitions
	OffsetsTopicReplicationFactor        int16    // offsets.topic.replication.factor
	OffsetsTopicSegmentBytes             int32    // offsets.topic.segment.bytes
	OffsetsRetentionMinutes              int32    // offsets.retention.minutes
	OffsetsRetentionCheckIntervalMs      int64    // offsets.retention.check.interval.ms
	OffsetsCommitTimeoutMs               int64    // offsets.commit.timeout.ms
	OffsetMetadataMaxBytes               int32    // offset.metadata.max.bytes
	GroupInitialRebalanceDelayMs         int64    // group.initial.rebalance.delay.ms
	GroupMinSessionTimeoutMs             int64    // group.min.session.timeout.ms
	GroupMaxSessionTimeoutMs             int64    // group.max.session.timeout.ms
	GroupMaxSize                         int32    // group.max.size
	GroupCoordinatorRebalanceProtocols   []string // group.coordinator.rebalance.protocols
	GroupConsumerSessionTimeoutMs        int64    // group.consumer.session.timeout.ms
	GroupConsumerMinSessionTimeoutMs     int64    // group.consumer.min.session.timeout.ms
	GroupConsumerMaxSessionTimeoutMs     int64    // group.consumer.max.session.timeout.ms
	GroupConsumerHeartbeatIntervalMs     int64    // group.consumer.heartbeat.interval.ms
	GroupConsumerMinHeartbeatIntervalMs  int64    // group.consumer.min.heartbeat.interval.ms
	GroupConsumerMaxHeartbeatIntervalMs  int64    // group.consumer.max.heartbeat.interval.ms
	GroupConsumerMaxSize                 int32    // group.consumer.max.size
	GroupShare                           GroupShare
	TransactionStateLogNumPartitions     int32 // transaction.state.log.num.partitions
	TransactionStateLogReplicationFactor int16 // transaction.state.log.replication.factor
	TransactionStateLogMinISR            int32 // transaction.state.log.min.isr
	TransactionStateLogSegmentBytes      int32 // transaction.state.log.segment.bytes
	ShareStateTopicNumPartitions         int32 // share.coordinator.state.topic.num.partitions
	ShareStateTopicReplicationFactor     int16 // share.coordinator.state.topic.replication.factor
	ShareStateTopicMinISR                int32 // share.coordinator.state.topic.min.isr
	ShareStateTopicSegmentBytes          int32 // share.coordinator.state.topic.segment.bytes
	ShareSnapshotUpdateRecords           int   // share.coordinator.snapshot.update.records.per.snapshot
	ShareCoordinatorWriteTimeoutMs       int64 // share.coordinator.write.timeout.ms
	ShareStateTopicPruneIntervalMs       int64 // share.coordinator.state.topic.prune.interval.ms
	ShareColdSnapshotIntervalMs          int64 // share.coordinator.cold.partition.snapshot.interval.ms
	TransactionMaxTimeoutMs              int64 // transaction.max.timeout.ms
	TransactionalIDExpirationMs          int64 // transactional.id.expiration.ms
	TransactionAbortTimedOutIntervalMs   int64 // transaction.abort.timed.out.transaction.cleanup.interval.ms
	TransactionRemoveExpiredIntervalMs   int64 // transaction.remove.expired.transaction.cleanup.interval.ms
	TransactionPartitionVerification     bool  // transaction.partition.verification.enable
	ProducerIDExpirationMs               int64 // producer.id.expiration.ms
	ProducerIDExpirationCheckIntervalMs  int64 // producer.id.expiration.check.interval.ms

	BrokerRack                string   // broker.rack
	ReplicaSelectorClass      string   // replica.selector.class (KIP-392); "" = the leader serves every fetch
	AuthorizerClassName       string   // authorizer.class.name
	SuperUsers                []string // super.users (semicolon separated)
	AllowEveryoneIfNoACLFound bool     // allow.everyone.if.no.acl.found
	SASLEnabledMechanisms     []string // sasl.enabled.mechanisms
	SASLServerMaxReceiveSize  int32    // sasl.server.max.receive.size
	GregorHTTPListen          string   // gregor.http.listen (default 127.0.0.1:9080)

	Props map[string]string // the raw static properties as given
}

// HasRole reports whether process.roles contains role ("broker" or "controller").
func (b *Broker) HasRole(role string) bool { return slices.Contains(b.ProcessRoles, role) }

// IsControllerListener reports whether name is one of controller.listener.names.
func (b *Broker) IsControllerListener(name string) bool {
	return slices.Contains(b.ControllerListenerNames, strings.ToUpper(name))
}

// Warning is a problem in the configuration that does not stop the server,
// such as an unknown key.
type Warning string

// values reads effective configuration values: the static property if
// given, else the definition's default (Gregor's zero-config defaults are
// the definitions' defaults).
type values map[string]string

func (v values) set(name string) bool { _, ok := v[name]; return ok }

// str returns the normalized effective value, "" for null.
func (v values) str(name string) string {
	d, ok := BrokerDef(name)
	if !ok {
		panic("config: unknown broker config " + name)
	}
	if raw, ok := v[name]; ok {
		return normalize(d.Type, raw)
	}
	if d.Default == nil {
		return ""
	}
	return *d.Default
}

func (v values) i64(name string) int64 {
	n, _ := strconv.ParseInt(v.str(name), 10, 64)
	return n
}
func (v values) i32(name string) int32 { return int32(v.i64(name)) }
func (v values) i16(name string) int16 { return int16(v.i64(name)) }
func (v values) int(name string) int   { return int(v.i64(name)) }
func (v values) boolean(name string) bool {
	return strings.EqualFold(v.str(name), "true")
}
func (v values) f64(name string) float64 {
	f, _ := strconv.ParseFloat(v.str(name), 64)
	return f
}
func (v values) list(name string) []string { return splitList(v.str(name)) }

// listenerPrefixedBase returns the base key of a listener override
// "listener.name.<listener>.<key>" (or ".<mechanism>.<key>" for SASL
// settings), if that base is a known broker key.
func listenerPrefixedBase(name string) (string, bool) {
	rest, ok := strings.CutPrefix(name, "listener.name.")
	if !ok {
		return "", false
	}
	_, base, ok := strings.Cut(rest, ".")
	if !ok {
		return "", false
	}
	if _, known := BrokerDef(base); known {
		return base, true
	}
	if _, afterMechanism, ok := strings.Cut(base, "."); ok {
		if _, known := BrokerDef(afterMechanism); known {
			return afterMechanism, true
		}
	}
	return "", false
}

// Load validates static properties and builds the typed broker
// configuration. Unknown keys are returned as warnings; a bad value of a
// known key or an inconsistent combination (Kafka's KafkaConfig checks for
// KRaft) is an error that names the key and what is allowed.
func Load(props map[string]string) (*Broker, []Warning, error) {
	var warnings []Warning
	raw := make(map[string]string, len(props))
	keys := make([]string, 0, len(props))
	for k, v := range props {
		raw[k] = v
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if err := checkUnsupportedSecurity(props); err != nil {
		return nil, nil, err
	}
	for _, k := range keys {
		name := k
		if base, ok := listenerPrefixedBase(k); ok {
			name = base
		}
		d, ok := BrokerDef(name)
		if !ok {
			warnings = append(warnings, Warning(fmt.Sprintf("unknown configuration %q is ignored%s", k, didYouMean(SuggestBrokerConfig(k)))))
			continue
		}
		if err := d.Check(props[k]); err != nil {
			if name != k {
				return nil, warnings, fmt.Errorf("%s: %w", k, err)
			}
			return nil, warnings, err
		}
	}

	v := values(raw)
	b := &Broker{Props: raw}
	if err := loadIdentity(b, v); err != nil {
		return nil, warnings, err
	}
	v = implicitControllerListener(b, v)
	w, err := loadListeners(b, v)
	warnings = append(warnings, w...)
	if err != nil {
		return nil, warnings, err
	}
	if err := loadLogs(b, v); err != nil {
		return nil, warnings, err
	}
	loadTunables(b, v)
	if err := crossCheckTunables(b, v); err != nil {
		return nil, warnings, err
	}
	return b, warnings, nil
}

// implicitControllerListener keeps Gregor's zero-config single node working
// when only listeners is overridden (e.g. --override
// listeners=PLAINTEXT://127.0.0.1:29092): a combined node that names no
// controller listener and no quorum gets a CONTROLLER listener on an
// ephemeral loopback port, voting for itself alone. Kafka would refuse such
// a file; Gregor's defaults already supply the controller side, so an
// override of the client listeners alone should not take it away. Anything
// the user set about the controller disables this.
func implicitControllerListener(b *Broker, v values) values {
	if !v.set("listeners") || v.set("controller.listener.names") || v.set("controller.quorum.voters") ||
		v.set("controller.quorum.bootstrap.servers") || !b.HasRole("controller") {
		return v
	}
	listeners, err := ParseListeners(v.str("listeners"))
	if err != nil {
		return v // loadListeners reports it
	}
	for _, l := range listeners {
		if strings.EqualFold(l.Name, "CONTROLLER") {
			return v
		}
	}
	out := make(values, len(v)+2)
	for k, val := range v {
		out[k] = val
	}
	out["listeners"] = v.str("listeners") + ",CONTROLLER://127.0.0.1:0"
	out["controller.quorum.voters"] = fmt.Sprintf("%d@127.0.0.1:0", b.NodeID)
	return out
}

func loadIdentity(b *Broker, v values) error {
	b.NodeID = v.i32("node.id")
	if v.set("broker.id") {
		brokerID := v.i32("broker.id")
		switch {
		case !v.set("node.id"):
			if brokerID < 0 {
				return fmt.Errorf("invalid value %q for configuration broker.id: must be an integer >= 0 (it names this node)", v["broker.id"])
			}
			b.NodeID = brokerID
		case brokerID != b.NodeID:
			return fmt.Errorf("node.id (%d) and broker.id (%d) must be the same value", b.NodeID, brokerID)
		}
	}
	b.ProcessRoles = v.list("process.roles")
	seen := map[string]bool{}
	for _, r := range b.ProcessRoles {
		if seen[r] {
			return fmt.Errorf("invalid value %q for configuration process.roles: role %s is listed twice", v.str("process.roles"), r)
		}
		seen[r] = true
	}
	return nil
}

func loadLogs(b *Broker, v values) error {
	if v.set("log.dirs") {
		b.LogDirs = v.list("log.dirs")
	} else {
		b.LogDirs = v.list("log.dir")
	}
	if len(b.LogDirs) == 0 {
		return fmt.Errorf("at least one log directory must be defined via log.dirs or log.dir")
	}
	for i, d := range b.LogDirs {
		if slices.Contains(b.LogDirs[:i], d) {
			return fmt.Errorf("invalid value %q for configuration log.dirs: directory %s is listed twice", v.str("log.dirs"), d)
		}
	}
	b.MetadataLogDir = v.str("metadata.log.dir")
	if b.MetadataLogDir == "" {
		b.MetadataLogDir = b.LogDirs[0]
	}

	// Kafka's precedence: the most specific unit that is set wins.
	b.LogRollMs = v.i64("log.roll.hours") * 3600000
	if v.set("log.roll.ms") {
		b.LogRollMs = v.i64("log.roll.ms")
	}
	if b.LogRollMs < 1 {
		return fmt.Errorf("invalid value %q for configuration log.roll.ms: must be an integer >= 1", strconv.FormatInt(b.LogRollMs, 10))
	}
	b.LogRollJitterMs = v.i64("log.roll.jitter.hours") * 3600000
	if v.set("log.roll.jitter.ms") {
		b.LogRollJitterMs = v.i64("log.roll.jitter.ms")
	}
	if b.LogRollJitterMs < 0 {
		return fmt.Errorf("invalid value %q for configuration log.roll.jitter.ms: must be an integer >= 0", strconv.FormatInt(b.LogRollJitterMs, 10))
	}
	retention, source := v.i64("log.retention.hours")*3600000, "log.retention.hours"
	if v.set("log.retention.ms") {
		retention, source = v.i64("log.retention.ms"), "log.retention.ms"
	} else if v.set("log.retention.minutes") {
		retention, source = v.i64("log.retention.minutes")*60000, "log.retention.minutes"
	}
	if retention < 0 {
		retention = -1 // any negative value means keep forever
	}
	if retention == 0 {
		return fmt.Errorf("invalid value %q for configuration %s: retention must be -1 (unlimited) or at least 1 ms", v.str(source), source)
	}
	b.LogRetentionMs = retention
	b.LogFlushSchedulerIntervalMs = v.i64("log.flush.scheduler.interval.ms")
	b.LogFlushIntervalMs = b.LogFlushSchedulerIntervalMs
	if v.set("log.flush.interval.ms") {
		b.LogFlushIntervalMs = v.i64("log.flush.interval.ms")
	}

	b.LogSegmentBytes = v.i32("log.segment.bytes")
	b.LogRetentionBytes = v.i64("log.retention.bytes")
	b.LogIndexSizeMaxBytes = v.i32("log.index.size.max.bytes")
	b.LogIndexIntervalBytes = v.i32("log.index.interval.bytes")
	b.LogFlushIntervalMessages = v.i64("log.flush.interval.messages")
	b.LogFlushOffsetCheckpointIntervalMs = v.i64("log.flush.offset.checkpoint.interval.ms")
	b.LogFlushStartOffsetCheckpointIntervalMs = v.i64("log.flush.start.offset.checkpoint.interval.ms")
	b.LogDeleteDelayMs = v.i64("log.segment.delete.delay.ms")
	b.LogCleanupPolicy = v.list("log.cleanup.policy")
	b.CompressionType = v.str("compression.type")
	b.LogMessageTimestampType = v.str("log.message.timestamp.type")
	b.LogMessageTimestampBeforeMaxMs = v.i64("log.message.timestamp.before.max.ms")
	b.LogMessageTimestampAfterMaxMs = v.i64("log.message.timestamp.after.max.ms")
	b.LogPreallocate = v.boolean("log.preallocate")
	b.MinInsyncReplicas = v.i32("min.insync.replicas")
	b.UncleanLeaderElectionEnable = v.boolean("unclean.leader.election.enable")
	b.UncleanLeaderElectionIntervalMs = v.i64("unclean.leader.election.interval.ms")
	b.AutoLeaderRebalanceEnable = v.boolean("auto.leader.rebalance.enable")
	b.LeaderImbalancePerBrokerPercentage = int(v.i64("leader.imbalance.per.broker.percentage"))
	b.LeaderImbalanceCheckIntervalSeconds = v.i64("leader.imbalance.check.interval.seconds")
	b.LogRetentionCheckIntervalMs = v.i64("log.retention.check.interval.ms")
	b.LogMaxOpenFiles = v.int("gregor.log.max.open.files")
	b.DecompressionMemoryBytes = v.i64("gregor.decompression.memory.bytes")
	b.NumRecoveryThreadsPerDataDir = v.int("num.recovery.threads.per.data.dir")
	b.LogCleanerEnable = v.boolean("log.cleaner.enable")
	b.LogCleanerThreads = v.int("log.cleaner.threads")
	b.LogCleanerDedupeBufferSize = v.i64("log.cleaner.dedupe.buffer.size")
	b.LogCleanerIOBufferSize = v.i32("log.cleaner.io.buffer.size")
	b.LogCleanerIOBufferLoadFactor = v.f64("log.cleaner.io.buffer.load.factor")
	b.LogCleanerBackoffMs = v.i64("log.cleaner.backoff.ms")
	b.LogCleanerMinCleanableRatio = v.f64("log.cleaner.min.cleanable.ratio")
	b.LogCleanerDeleteRetentionMs = v.i64("log.cleaner.delete.retention.ms")
	b.LogCleanerMinCompactionLagMs = v.i64("log.cleaner.min.compaction.lag.ms")
	b.LogCleanerMaxCompactionLagMs = v.i64("log.cleaner.max.compaction.lag.ms")
	return nil
}

func loadTunables(b *Broker, v values) {
	b.NumPartitions = v.i32("num.partitions")
	b.DefaultReplicationFactor = v.i16("default.replication.factor")
	b.AutoCreateTopicsEnable = v.boolean("auto.create.topics.enable")
	b.DeleteTopicEnable = v.boolean("delete.topic.enable")
	b.MessageMaxBytes = v.i32("message.max.bytes")
	b.SocketRequestMaxBytes = v.i32("socket.request.max.bytes")
	b.ConnectionsMaxIdleMs = v.i64("connections.max.idle.ms")
	b.QueuedMaxRequests = v.int("queued.max.requests")
	b.QueuedMaxRequestBytes = v.i64("queued.max.request.bytes")
	b.NumNetworkThreads = v.int("num.network.threads")
	b.NumIOThreads = v.int("num.io.threads")
	b.SocketSendBufferBytes = v.int("socket.send.buffer.bytes")
	b.SocketReceiveBufferBytes = v.int("socket.receive.buffer.bytes")
	b.FetchMaxBytes = v.i32("fetch.max.bytes")
	b.MaxIncrementalFetchSessionCacheSlots = v.int("max.incremental.fetch.session.cache.slots")
	b.GroupShareMaxShareSessions = v.int("group.share.max.share.sessions")
	b.QuotaWindowNum = v.int("quota.window.num")
	b.QuotaWindowSizeSeconds = v.int("quota.window.size.seconds")
	b.ControllerQuotaWindowNum = v.int("controller.quota.window.num")
	b.ControllerQuotaWindowSizeSeconds = v.int("controller.quota.window.size.seconds")
	b.LeaderReplicationThrottledRate = v.i64("leader.replication.throttled.rate")
	b.FollowerReplicationThrottledRate = v.i64("follower.replication.throttled.rate")
	b.ReplicationQuotaWindowNum = v.int("replication.quota.window.num")
	b.ReplicationQuotaWindowSizeSeconds = v.int("replication.quota.window.size.seconds")

	b.ReplicaLagTimeMaxMs = v.i64("replica.lag.time.max.ms")
	b.ReplicaFetchMaxBytes = v.i32("replica.fetch.max.bytes")
	b.ReplicaFetchResponseMaxBytes = v.i32("replica.fetch.response.max.bytes")
	b.ReplicaFetchWaitMaxMs = v.i64("replica.fetch.wait.max.ms")
	b.ReplicaFetchMinBytes = v.i32("replica.fetch.min.bytes")
	b.ReplicaFetchBackoffMs = v.i64("replica.fetch.backoff.ms")
	b.ReplicaSocketTimeoutMs = v.i64("replica.socket.timeout.ms")
	b.NumReplicaFetchers = v.int("num.replica.fetchers")
	b.ReplicaHighWatermarkCheckpointIntervalMs = v.i64("replica.high.watermark.checkpoint.interval.ms")

	b.BrokerHeartbeatIntervalMs = v.i64("broker.heartbeat.interval.ms")
	b.BrokerSessionTimeoutMs = v.i64("broker.session.timeout.ms")
	b.FenceOnConnectionClose = v.boolean("gregor.broker.fence.on.connection.close")
	b.ElectionOnLeaderExit = v.boolean("gregor.controller.quorum.election.on.leader.exit")
	b.InitialBrokerRegistrationTimeoutMs = v.i64("initial.broker.registration.timeout.ms")
	b.QuorumElectionTimeoutMs = v.i64("controller.quorum.election.timeout.ms")
	b.QuorumFetchTimeoutMs = v.i64("controller.quorum.fetch.timeout.ms")
	b.QuorumElectionBackoffMaxMs = v.i64("controller.quorum.election.backoff.max.ms")
	b.QuorumRequestTimeoutMs = v.i64("controller.quorum.request.timeout.ms")
	b.QuorumRetryBackoffMs = v.i64("controller.quorum.retry.backoff.ms")
	b.QuorumAppendLingerMs = v.i64("controller.quorum.append.linger.ms")
	b.MetadataLogSegmentBytes = v.i32("metadata.log.segment.bytes")
	b.MetadataLogSegmentMs = v.i64("metadata.log.segment.ms")
	b.MetadataMaxRetentionBytes = v.i64("metadata.max.retention.bytes")
	b.MetadataMaxRetentionMs = v.i64("metadata.max.retention.ms")
	b.MetadataMaxIdleIntervalMs = v.i64("metadata.max.idle.interval.ms")
	b.MetadataSnapshotMaxNewRecordBytes = v.i64("metadata.log.max.record.bytes.between.snapshots")
	b.MetadataSnapshotMaxIntervalMs = v.i64("metadata.log.max.snapshot.interval.ms")

	b.OffsetsTopicNumPartitions = v.i32("offsets.topic.num.partitions")
	b.OffsetsTopicReplicationFactor = v.i16("offsets.topic.replication.factor")
	b.OffsetsTopicSegmentBytes = v.i32("offsets.topic.segment.bytes")
	b.OffsetsRetentionMinutes = v.i32("offsets.retention.minutes")
	b.OffsetsRetentionCheckIntervalMs = v.i64("offsets.retention.check.interval.ms")
	b.OffsetsCommitTimeoutMs = v.i64("offsets.commit.timeout.ms")
	b.OffsetMetadataMaxBytes = v.i32("offset.metadata.max.bytes")
	b.GroupInitialRebalanceDelayMs = v.i64("group.initial.rebalance.delay.ms")
	b.GroupMinSessionTimeoutMs = v.i64("group.min.session.timeout.ms")
	b.GroupMaxSessionTimeoutMs = v.i64("group.max.session.timeout.ms")
	b.GroupMaxSize = v.i32("group.max.size")
	b.GroupCoordinatorRebalanceProtocols = v.list("group.coordinator.rebalance.protocols")
	b.GroupConsumerSessionTimeoutMs = v.i64("group.consumer.session.timeout.ms")
	b.GroupConsumerMinSessionTimeoutMs = v.i64("group.consumer.min.session.timeout.ms")
	b.GroupConsumerMaxSessionTimeoutMs = v.i64("group.consumer.max.session.timeout.ms")
	b.GroupConsumerHeartbeatIntervalMs = v.i64("group.consumer.heartbeat.interval.ms")
	b.GroupConsumerMinHeartbeatIntervalMs = v.i64("group.consumer.min.heartbeat.interval.ms")
	b.GroupConsumerMaxHeartbeatIntervalMs = v.i64("group.consumer.max.heartbeat.interval.ms")
	b.GroupConsumerMaxSize = v.i32("group.consumer.max.size")
	b.GroupShare = GroupShare{
		SessionTimeoutMs:        v.i64("group.share.session.timeout.ms"),
		MinSessionTimeoutMs:     v.i64("group.share.min.session.timeout.ms"),
		MaxSessionTimeoutMs:     v.i64("group.share.max.session.timeout.ms"),
		HeartbeatIntervalMs:     v.i64("group.share.heartbeat.interval.ms"),
		MinHeartbeatIntervalMs:  v.i64("group.share.min.heartbeat.interval.ms"),
		MaxHeartbeatIntervalMs:  v.i64("group.share.max.heartbeat.interval.ms"),
		MaxSize:                 v.i32("group.share.max.size"),
		RecordLockDurationMs:    v.i64("group.share.record.lock.duration.ms"),
		MinRecordLockDurationMs: v.i64("group.share.min.record.lock.duration.ms"),
		MaxRecordLockDurationMs: v.i64("group.share.max.record.lock.duration.ms"),
		DeliveryCountLimit:      v.i32("group.share.delivery.count.limit"),
		PartitionMaxRecordLocks: v.i32("group.share.partition.max.record.locks"),
	}
	b.TransactionStateLogNumPartitions = v.i32("transaction.state.log.num.partitions")
	b.TransactionStateLogReplicationFactor = v.i16("transaction.state.log.replication.factor")
	b.TransactionStateLogMinISR = v.i32("transaction.state.log.min.isr")
	b.TransactionStateLogSegmentBytes = v.i32("transaction.state.log.segment.bytes")
	b.ShareStateTopicNumPartitions = v.i32("share.coordinator.state.topic.num.partitions")
	b.ShareStateTopicReplicationFactor = v.i16("share.coordinator.state.topic.replication.factor")
	b.ShareStateTopicMinISR = v.i32("share.coordinator.state.topic.min.isr")
	b.ShareStateTopicSegmentBytes = v.i32("share.coordinator.state.topic.segment.bytes")
	b.ShareSnapshotUpdateRecords = int(v.i32("share.coordinator.snapshot.update.records.per.snapshot"))
	b.ShareCoordinatorWriteTimeoutMs = v.i64("share.coordinator.write.timeout.ms")
	b.ShareStateTopicPruneIntervalMs = v.i64("share.coordinator.state.topic.prune.interval.ms")
	b.ShareColdSnapshotIntervalMs = v.i64("share.coordinator.cold.partition.snapshot.interval.ms")
	b.TransactionMaxTimeoutMs = v.i64("transaction.max.timeout.ms")
	b.TransactionalIDExpirationMs = v.i64("transactional.id.expiration.ms")
	b.TransactionAbortTimedOutIntervalMs = v.i64("transaction.abort.timed.out.transaction.cleanup.interval.ms")
	b.TransactionRemoveExpiredIntervalMs = v.i64("transaction.remove.expired.transaction.cleanup.interval.ms")
	b.TransactionPartitionVerification = v.boolean("transaction.partition.verification.enable")
	b.ProducerIDExpirationMs = v.i64("producer.id.expiration.ms")
	b.ProducerIDExpirationCheckIntervalMs = v.i64("producer.id.expiration.check.interval.ms")

	b.BrokerRack = v.str("broker.rack")
	b.ReplicaSelectorClass = v.str("replica.selector.class")
	b.AuthorizerClassName = v.str("authorizer.class.name")
	for _, u := range strings.Split(v.str("super.users"), ";") {
		if u = strings.TrimSpace(u); u != "" {
			b.SuperUsers = append(b.SuperUsers, u)
		}
	}
	b.AllowEveryoneIfNoACLFound = v.boolean("allow.everyone.if.no.acl.found")
	b.SASLEnabledMechanisms = v.list("sasl.enabled.mechanisms")
	b.SASLServerMaxReceiveSize = v.i32("sasl.server.max.receive.size")
	b.GregorHTTPListen = v.str("gregor.http.listen")
}

// crossCheckTunables applies Kafka's KafkaConfig.validateValues checks that
// relate two keys.
func crossCheckTunables(b *Broker, v values) error {
	if b.ReplicaFetchWaitMaxMs > b.ReplicaSocketTimeoutMs {
		return fmt.Errorf("replica.socket.timeout.ms (%d) must be at least replica.fetch.wait.max.ms (%d) to prevent unnecessary socket timeouts",
			b.ReplicaSocketTimeoutMs, b.ReplicaFetchWaitMaxMs)
	}
	if b.ReplicaFetchWaitMaxMs > b.ReplicaLagTimeMaxMs {
		return fmt.Errorf("replica.fetch.wait.max.ms (%d) must be at most replica.lag.time.max.ms (%d) to prevent frequent changes in the ISR",
			b.ReplicaFetchWaitMaxMs, b.ReplicaLagTimeMaxMs)
	}
	if b.LogCleanerThreads > 0 && b.LogCleanerDedupeBufferSize/int64(b.LogCleanerThreads) <= 1024*1024 {
		return fmt.Errorf("log.cleaner.dedupe.buffer.size (%d) must be more than 1 MiB per cleaner thread (log.cleaner.threads=%d)",
			b.LogCleanerDedupeBufferSize, b.LogCleanerThreads)
	}
	if q := v.i64("queued.max.request.bytes"); q > 0 && q < int64(b.SocketRequestMaxBytes) {
		return fmt.Errorf("queued.max.request.bytes (%d) must be -1 (unlimited) or at least socket.request.max.bytes (%d)", q, b.SocketRequestMaxBytes)
	}
	if v.int("max.connections.per.ip") == 0 && strings.TrimSpace(v.str("max.connections.per.ip.overrides")) == "" {
		return errors.New("max.connections.per.ip can be 0 only if max.connections.per.ip.overrides is set")
	}
	if b.GroupConsumerMinSessionTimeoutMs > b.GroupConsumerMaxSessionTimeoutMs {
		return fmt.Errorf("group.consumer.min.session.timeout.ms (%d) must be at most group.consumer.max.session.timeout.ms (%d)",
			b.GroupConsumerMinSessionTimeoutMs, b.GroupConsumerMaxSessionTimeoutMs)
	}
	if b.GroupConsumerMinHeartbeatIntervalMs > b.GroupConsumerMaxHeartbeatIntervalMs {
		return fmt.Errorf("group.consumer.min.heartbeat.interval.ms (%d) must be at most group.consumer.max.heartbeat.interval.ms (%d)",
			b.GroupConsumerMinHeartbeatIntervalMs, b.GroupConsumerMaxHeartbeatIntervalMs)
	}
	return b.GroupShare.validate()
}

// Kafka's replica selectors (replica.selector.class), by their Java names.
const (
	RackAwareReplicaSelector = "org.apache.kafka.common.replica.RackAwareReplicaSelector"
	LeaderSelector           = "org.apache.kafka.common.replica.LeaderSelector"
)
