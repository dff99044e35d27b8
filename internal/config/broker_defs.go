package config

import (
	"fmt"
	"math"
	"sort"
	"strconv"
)

// Defaults that Gregor chooses differently from Kafka so that `gregor server`
// with no configuration runs a complete single-node cluster (DESIGN.md
// principle 6). Every other default is Kafka 4.0's.
const (
	GregorDefaultNodeID          = "1"
	GregorDefaultProcessRoles    = "broker,controller"
	GregorDefaultListeners       = "PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093"
	GregorDefaultControllerNames = "CONTROLLER"
	GregorDefaultVoters          = "1@127.0.0.1:9093"
	GregorDefaultLogDir          = "./gregor-data"
	GregorDefaultHTTPListen      = "127.0.0.1:9080"
)

// kafkaProtocolMapDefault is Kafka's default listener.security.protocol.map:
// every security protocol mapped to a listener of the same name.
const kafkaProtocolMapDefault = "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL"

var (
	maxInt  = strconv.Itoa(math.MaxInt32)
	maxLong = strconv.FormatInt(math.MaxInt64, 10)
)

func bdef(name string, t Type, dflt *string, validate func(string) error, dyn DynamicScope, doc string) Def {
	return Def{Name: name, Type: t, Default: dflt, Validate: validate, Dynamic: dyn, Doc: doc, Sensitive: t == Password}
}

// brokerDefList is the constant table of every broker key Gregor knows, with
// Kafka 4.0's type, default, valid range and dynamic-update scope.
// Dynamic scopes follow Kafka's DynamicBrokerConfig: the broker synonyms of
// topic configs (the first synonym only), the cleaner, thread pools and
// connection limits are cluster-wide; listeners and security settings are
// per-broker; everything else is read-only.
var brokerDefList = []Def{
	// KRaft roles, identity and quorum.
	bdef("process.roles", List, ptr(GregorDefaultProcessRoles), listOf("broker", "controller"), ReadOnly,
		"The roles this node plays: broker, controller, or both (combined mode). Gregor defaults to both."),
	bdef("node.id", Int, ptr(GregorDefaultNodeID), atLeast(0), ReadOnly,
		"The id of this node in the cluster; unique across brokers and controllers."),
	bdef("broker.id", Int, ptr("-1"), atLeast(-1), ReadOnly,
		"Older name for node.id; when both are set they must agree."),
	bdef("controller.listener.names", String, ptr(GregorDefaultControllerNames), nil, ReadOnly,
		"Comma separated names of the listeners used by the controller quorum."),
	bdef("controller.quorum.voters", List, ptr(GregorDefaultVoters), validVoters, ReadOnly,
		"The static controller quorum as id@host:port entries. Gregor defaults to this node alone, at its controller listener."),
	bdef("controller.quorum.bootstrap.servers", List, ptr(""), validBootstrapServers, ReadOnly,
		"host:port entries of controllers used to discover the quorum when controller.quorum.voters is not set."),
	bdef("controller.quorum.election.timeout.ms", Int, ptr("1000"), nil, ReadOnly,
		"Maximum time without a fetch from the leader before a voter starts an election."),
	bdef("controller.quorum.fetch.timeout.ms", Int, ptr("2000"), nil, ReadOnly,
		"Maximum time without a successful fetch from the leader before a follower becomes a candidate."),
	bdef("controller.quorum.election.backoff.max.ms", Int, ptr("1000"), nil, ReadOnly,
		"Upper bound of the randomized backoff before a new election starts."),
	bdef("controller.quorum.append.linger.ms", Int, ptr("25"), nil, ReadOnly,
		"How long the quorum leader waits to batch writes before flushing them to the metadata log."),
	bdef("controller.quorum.request.timeout.ms", Int, ptr("2000"), nil, ReadOnly,
		"How long a quorum request may wait for its response before it is retried."),
	bdef("controller.quorum.retry.backoff.ms", Int, ptr("20"), nil, ReadOnly,
		"Time to wait before retrying a failed quorum request."),
	bdef("metadata.log.dir", String, nil, nil, ReadOnly,
		"Directory of the cluster metadata log; defaults to the first log directory."),
	bdef("metadata.log.segment.bytes", Int, ptr("1073741824"), atLeast(12), ReadOnly,
		"Maximum size of one segment of the metadata log."),
	bdef("metadata.log.segment.ms", Long, ptr("604800000"), nil, ReadOnly,
		"Maximum age of a metadata log segment before a new one is rolled."),
	bdef("metadata.max.retention.bytes", Long, ptr("104857600"), nil, ReadOnly,
		"Metadata log bytes kept before old snapshots and segments are deleted; -1 means no limit."),
	bdef("metadata.max.retention.ms", Long, ptr("604800000"), nil, ReadOnly,
		"How long metadata log segments and snapshots are kept; -1 means no limit."),
	bdef("metadata.log.max.record.bytes.between.snapshots", Long, ptr("20971520"), atLeast(1), ReadOnly,
		"Metadata log bytes appended after the latest snapshot that trigger a new snapshot."),
	bdef("metadata.log.max.snapshot.interval.ms", Long, ptr("3600000"), atLeast(0), ReadOnly,
		"Maximum time between snapshots while new metadata is committed; 0 disables time-based snapshots."),
	bdef("metadata.max.idle.interval.ms", Int, ptr("500"), atLeast(0), ReadOnly,
		"How often the active controller appends a no-op record when idle; 0 disables it."),
	bdef("initial.broker.registration.timeout.ms", Int, ptr("60000"), nil, ReadOnly,
		"How long a starting broker waits for the controller to accept its registration."),
	bdef("broker.heartbeat.interval.ms", Int, ptr("2000"), nil, ReadOnly,
		"Interval between broker heartbeats to the controller."),
	bdef("broker.session.timeout.ms", Int, ptr("9000"), nil, ReadOnly,
		"A broker that has not heartbeated for this long is fenced by the controller."),
	bdef("sasl.mechanism.controller.protocol", String, ptr("GSSAPI"), nil, ReadOnly,
		"SASL mechanism used to talk to controllers."),
	bdef("eligible.leader.replicas.enable", Boolean, ptr("false"), nil, ReadOnly,
		"Enable the eligible leader replicas extension of leader election (KIP-966)."),

	// Listeners and sockets.
	bdef("listeners", String, ptr(GregorDefaultListeners), validListeners, PerBroker,
		"Comma separated NAME://host:port addresses to listen on; an empty host binds all interfaces."),
	bdef("advertised.listeners", String, nil, validAdvertisedListeners, PerBroker,
		"Addresses published to clients and other brokers, if different from listeners."),
	bdef("listener.security.protocol.map", String, ptr(kafkaProtocolMapDefault), validProtocolMap, PerBroker,
		"Maps each listener name to its security protocol, as NAME:PROTOCOL pairs."),
	bdef("inter.broker.listener.name", String, nil, nil, ReadOnly,
		"The listener brokers use to talk to each other; defaults to the one for security.inter.broker.protocol."),
	bdef("security.inter.broker.protocol", String, ptr("PLAINTEXT"), oneOf(securityProtocols...), ReadOnly,
		"Security protocol between brokers when inter.broker.listener.name is not set."),
	bdef("early.start.listeners", String, nil, nil, ReadOnly,
		"Listeners started before the authorizer has finished loading."),
	bdef("socket.send.buffer.bytes", Int, ptr("102400"), nil, ReadOnly,
		"SO_SNDBUF of server sockets; -1 uses the OS default."),
	bdef("socket.receive.buffer.bytes", Int, ptr("102400"), nil, ReadOnly,
		"SO_RCVBUF of server sockets; -1 uses the OS default."),
	bdef("socket.request.max.bytes", Int, ptr("104857600"), atLeast(1), ReadOnly,
		"Largest request the server accepts."),
	bdef("socket.listen.backlog.size", Int, ptr("50"), atLeast(1), ReadOnly,
		"Maximum queue of pending connections on each listener."),
	bdef("max.connections.per.ip", Int, ptr(maxInt), atLeast(0), ClusterWide,
		"Maximum connections from one IP address."),
	bdef("max.connections.per.ip.overrides", String, ptr(""), validPerIPOverrides, ClusterWide,
		"Per-IP or per-host overrides of max.connections.per.ip, as host:count pairs."),
	bdef("max.connections", Int, ptr(maxInt), atLeast(0), ClusterWide,
		"Maximum connections the broker accepts at any time."),
	bdef("max.connection.creation.rate", Int, ptr(maxInt), atLeast(0), ClusterWide,
		"Maximum new connections per second the broker accepts."),
	bdef("connections.max.idle.ms", Long, ptr("600000"), nil, ReadOnly,
		"Idle connections are closed after this long."),
	bdef("connection.failed.authentication.delay.ms", Int, ptr("100"), atLeast(0), ReadOnly,
		"Delay before closing a connection whose authentication failed."),
	bdef("queued.max.requests", Int, ptr("500"), atLeast(1), ReadOnly,
		"Requests queued for the request handlers before the network threads stop reading."),
	bdef("queued.max.request.bytes", Long, ptr("-1"), nil, ReadOnly,
		"Bytes of queued requests before the network threads stop reading; -1 means no limit."),
	// Client quotas (KIP-13, KIP-124, KIP-599): how rates are measured.
	bdef("quota.window.num", Int, ptr("11"), atLeast(1), ReadOnly,
		"How many windows a client's byte and request-time rates are measured over."),
	bdef("quota.window.size.seconds", Int, ptr("1"), atLeast(1), ReadOnly,
		"The span of each window of the client quotas' rates, in seconds."),
	// Replication throttles (KIP-73): the rates the reassignment tool sets,
	// applied to the replicas the topics' *.replication.throttled.replicas
	// name.
	bdef("leader.replication.throttled.rate", Long, ptr(maxLong), atLeast(0), ClusterWide,
		"Bytes per second a leader sends to the throttled follower replicas of its partitions (fetch responses)."),
	bdef("follower.replication.throttled.rate", Long, ptr(maxLong), atLeast(0), ClusterWide,
		"Bytes per second this broker's replica fetchers take for its throttled follower replicas."),
	bdef("replication.quota.window.num", Int, ptr("11"), atLeast(1), ReadOnly,
		"How many windows the replication throttles' rates are measured over."),
	bdef("replication.quota.window.size.seconds", Int, ptr("1"), atLeast(1), ReadOnly,
		"The span of each window of the replication throttles' rates, in seconds."),
	bdef("controller.quota.window.num", Int, ptr("11"), atLeast(1), ReadOnly,
		"How many windows the controller mutation quota's token bucket holds (its burst)."),
	bdef("controller.quota.window.size.seconds", Int, ptr("1"), atLeast(1), ReadOnly,
		"The span of each window of the controller mutation quota, in seconds."),
	bdef("num.network.threads", Int, ptr("3"), atLeast(1), ClusterWide,
		"Threads that read requests from and write responses to the network."),
	bdef("num.io.threads", Int, ptr("8"), atLeast(1), ClusterWide,
		"Threads that process requests."),
	bdef("background.threads", Int, ptr("10"), atLeast(1), ClusterWide,
		"Threads for background tasks."),
	bdef("request.timeout.ms", Int, ptr("30000"), nil, ReadOnly,
		"How long the broker's internal clients wait for a response."),
	bdef("socket.connection.setup.timeout.ms", Long, ptr("10000"), nil, ReadOnly,
		"How long the broker's internal clients wait for a connection to be established."),
	bdef("socket.connection.setup.timeout.max.ms", Long, ptr("30000"), nil, ReadOnly,
		"Upper bound of the exponentially growing connection setup timeout."),

	// Requests, fetch sessions, topics.
	bdef("message.max.bytes", Int, ptr("1048588"), atLeast(0), ClusterWide,
		"Largest record batch the broker accepts (after compression); the default for max.message.bytes."),
	bdef("fetch.max.bytes", Int, ptr("57671680"), atLeast(1024), ReadOnly,
		"Most bytes returned by one fetch request."),
	bdef("max.incremental.fetch.session.cache.slots", Int, ptr("1000"), atLeast(0), ReadOnly,
		"Number of incremental fetch sessions the broker keeps."),
	bdef("group.share.max.share.sessions", Int, ptr("2000"), atLeast(1), ReadOnly,
		"Number of share sessions (KIP-932) the broker keeps."),
	bdef("max.request.partition.size.limit", Int, ptr("2000"), atLeast(1), ReadOnly,
		"Most partitions one request may name."),
	bdef("num.partitions", Int, ptr("1"), atLeast(1), ReadOnly,
		"Default number of partitions of a new topic."),
	bdef("default.replication.factor", Int, ptr("1"), nil, ReadOnly,
		"Default replication factor of a new topic, including auto-created ones."),
	bdef("auto.create.topics.enable", Boolean, ptr("true"), nil, ReadOnly,
		"Create a topic when a client asks for metadata of a topic that does not exist."),
	bdef("delete.topic.enable", Boolean, ptr("true"), nil, ReadOnly,
		"Allow topics to be deleted."),
	bdef("broker.rack", String, nil, nil, ReadOnly,
		"Rack of this broker, used for rack-aware replica placement."),
	bdef("authorizer.class.name", String, ptr(""), nil, ReadOnly,
		"Authorizer implementation; empty disables authorization."),
	bdef("super.users", String, nil, nil, ReadOnly,
		"Semicolon separated principals (User:name) that bypass ACL checks."),
	bdef("allow.everyone.if.no.acl.found", Boolean, ptr("false"), nil, ReadOnly,
		"Allow an operation on a resource that has no ACL at all."),
	bdef("create.topic.policy.class.name", Class, nil, nil, ReadOnly,
		"Policy class that validates topic creation."),
	bdef("alter.config.policy.class.name", Class, nil, nil, ReadOnly,
		"Policy class that validates configuration changes."),

	// Log defaults and the log manager.
	bdef("log.dir", String, ptr(GregorDefaultLogDir), nil, ReadOnly,
		"Directory of the log data, used when log.dirs is not set."),
	bdef("log.dirs", String, nil, nil, ReadOnly,
		"Comma separated directories of the log data; log.dir is used when not set."),
	bdef("log.segment.bytes", Int, ptr("1073741824"), atLeast(1048576), ClusterWide,
		"Maximum size of one log segment file."),
	bdef("log.roll.ms", Long, nil, nil, ClusterWide,
		"Maximum age of the active segment before a new one is rolled; log.roll.hours is used when not set."),
	bdef("log.roll.hours", Int, ptr("168"), atLeast(1), ReadOnly,
		"Maximum age of the active segment in hours; secondary to log.roll.ms."),
	bdef("log.roll.jitter.ms", Long, nil, nil, ClusterWide,
		"Maximum random jitter subtracted from the roll time; log.roll.jitter.hours is used when not set."),
	bdef("log.roll.jitter.hours", Int, ptr("0"), atLeast(0), ReadOnly,
		"Maximum roll jitter in hours; secondary to log.roll.jitter.ms."),
	bdef("log.retention.ms", Long, nil, nil, ClusterWide,
		"How long a log segment is kept before deletion; -1 keeps it forever. log.retention.minutes is used when not set."),
	bdef("log.retention.minutes", Int, nil, nil, ReadOnly,
		"Retention in minutes; secondary to log.retention.ms, log.retention.hours is used when not set."),
	bdef("log.retention.hours", Int, ptr("168"), nil, ReadOnly,
		"Retention in hours; tertiary to log.retention.ms."),
	bdef("log.retention.bytes", Long, ptr("-1"), nil, ClusterWide,
		"Maximum size of a partition's log before old segments are deleted; -1 means no limit."),
	bdef("log.retention.check.interval.ms", Long, ptr("300000"), atLeast(1), ReadOnly,
		"How often the log manager looks for segments to delete."),
	bdef("log.cleanup.policy", List, ptr("delete"), listOf("compact", "delete"), ClusterWide,
		"Default cleanup policy of segments beyond the retention window: delete, compact or both."),
	bdef("log.index.size.max.bytes", Int, ptr("10485760"), atLeast(4), ClusterWide,
		"Maximum size of an offset or time index file."),
	bdef("log.index.interval.bytes", Int, ptr("4096"), atLeast(0), ClusterWide,
		"Bytes appended between two offset index entries."),
	bdef("log.flush.interval.messages", Long, ptr(maxLong), atLeast(1), ClusterWide,
		"Messages appended to a partition before it is fsynced."),
	bdef("log.flush.interval.ms", Long, nil, nil, ClusterWide,
		"Maximum time a message stays unflushed; log.flush.scheduler.interval.ms is used when not set."),
	bdef("log.flush.scheduler.interval.ms", Long, ptr(maxLong), nil, ReadOnly,
		"How often the flusher checks whether a log needs an fsync."),
	bdef("log.flush.offset.checkpoint.interval.ms", Int, ptr("60000"), atLeast(0), ReadOnly,
		"How often the recovery point checkpoint is written."),
	bdef("log.flush.start.offset.checkpoint.interval.ms", Int, ptr("60000"), atLeast(0), ReadOnly,
		"How often the log start offset checkpoint is written."),
	bdef("log.segment.delete.delay.ms", Long, ptr("60000"), atLeast(0), ClusterWide,
		"Time to wait before a deleted segment's files are removed from the filesystem."),
	bdef("log.preallocate", Boolean, ptr("false"), nil, ClusterWide,
		"Preallocate the file of a new segment."),
	bdef("log.message.timestamp.type", String, ptr("CreateTime"), oneOf("CreateTime", "LogAppendTime"), ClusterWide,
		"Whether record timestamps are the producer's CreateTime or the broker's LogAppendTime."),
	bdef("log.message.timestamp.before.max.ms", Long, ptr(maxLong), atLeast(0), ClusterWide,
		"How far a CreateTime timestamp may lie in the past of the broker's clock."),
	bdef("log.message.timestamp.after.max.ms", Long, ptr("3600000"), atLeast(0), ClusterWide,
		"How far a CreateTime timestamp may lie in the future of the broker's clock."),
	bdef("log.message.downconversion.enable", Boolean, ptr("true"), nil, ClusterWide,
		"No effect since Kafka 4.0 (down-conversion is gone); accepted for compatibility."),
	bdef("log.local.retention.ms", Long, ptr("-2"), atLeast(-2), ClusterWide,
		"Tiered storage local retention time; -2 means use log.retention.ms. Gregor has no tiered storage."),
	bdef("log.local.retention.bytes", Long, ptr("-2"), atLeast(-2), ClusterWide,
		"Tiered storage local retention size; -2 means use log.retention.bytes. Gregor has no tiered storage."),
	bdef("log.dir.failure.timeout.ms", Long, ptr("30000"), atLeast(1), ReadOnly,
		"A broker that cannot report a failed log directory to the controller for this long shuts down."),
	bdef("num.recovery.threads.per.data.dir", Int, ptr("2"), atLeast(1), ClusterWide,
		"Threads per log directory for recovery at startup and flushing at shutdown."),
	bdef("min.insync.replicas", Int, ptr("1"), atLeast(1), ClusterWide,
		"Minimum in-sync replicas that must acknowledge an acks=all write."),
	bdef("unclean.leader.election.enable", Boolean, ptr("false"), nil, ClusterWide,
		"Allow a replica outside the ISR to become leader as a last resort, at the risk of data loss."),
	bdef("unclean.leader.election.interval.ms", Long, ptr("300000"), atLeast(1), ReadOnly,
		"How often the controller looks for leaderless partitions whose unclean.leader.election.enable allows an unclean election."),
	bdef("compression.type", String, ptr("producer"), oneOf(brokerCompressionTypes...), ClusterWide,
		"Final compression of stored batches: a codec, uncompressed, or producer to keep the producer's codec."),
	bdef("compression.gzip.level", Int, ptr("-1"), gzipLevel, ClusterWide,
		"gzip level used when compression.type is gzip."),
	bdef("compression.lz4.level", Int, ptr("9"), intBetween(1, 17), ClusterWide,
		"lz4 level used when compression.type is lz4."),
	bdef("compression.zstd.level", Int, ptr("3"), intBetween(-131072, 22), ClusterWide,
		"zstd level used when compression.type is zstd."),

	// Log cleaner (compaction).
	bdef("log.cleaner.enable", Boolean, ptr("true"), nil, ReadOnly,
		"Run the log cleaner, which compacts topics with cleanup.policy=compact."),
	bdef("log.cleaner.threads", Int, ptr("1"), atLeast(0), ClusterWide,
		"Number of log cleaner threads."),
	bdef("log.cleaner.io.max.bytes.per.second", Double, ptr("1.7976931348623157E308"), nil, ClusterWide,
		"Read plus write bytes per second the cleaner may use."),
	bdef("log.cleaner.dedupe.buffer.size", Long, ptr("134217728"), nil, ClusterWide,
		"Memory for the cleaner's offset map, shared by all cleaner threads."),
	bdef("log.cleaner.io.buffer.size", Int, ptr("524288"), atLeast(0), ClusterWide,
		"I/O buffer memory for the cleaner, shared by all cleaner threads."),
	bdef("log.cleaner.io.buffer.load.factor", Double, ptr("0.9"), nil, ClusterWide,
		"How full the cleaner's offset map may become."),
	bdef("log.cleaner.backoff.ms", Long, ptr("15000"), atLeast(0), ClusterWide,
		"Sleep of the cleaner when there is nothing to clean."),
	bdef("log.cleaner.min.cleanable.ratio", Double, ptr("0.5"), floatBetween(0, 1), ClusterWide,
		"Minimum dirty/total ratio of a log before it is cleaned."),
	bdef("log.cleaner.delete.retention.ms", Long, ptr("86400000"), atLeast(0), ClusterWide,
		"How long tombstones are kept in compacted topics."),
	bdef("log.cleaner.min.compaction.lag.ms", Long, ptr("0"), atLeast(0), ClusterWide,
		"Minimum age of a record before it may be compacted."),
	bdef("log.cleaner.max.compaction.lag.ms", Long, ptr(maxLong), atLeast(1), ClusterWide,
		"Maximum time a record stays ineligible for compaction."),

	// Replication.
	bdef("controller.socket.timeout.ms", Int, ptr("30000"), nil, ReadOnly,
		"Socket timeout of broker-to-controller channels."),
	bdef("replica.lag.time.max.ms", Long, ptr("30000"), nil, ReadOnly,
		"A follower that has not caught up for this long is removed from the ISR."),
	bdef("replica.socket.timeout.ms", Int, ptr("30000"), nil, ReadOnly,
		"Socket timeout of follower fetch requests; at least replica.fetch.wait.max.ms."),
	bdef("replica.socket.receive.buffer.bytes", Int, ptr("65536"), nil, ReadOnly,
		"SO_RCVBUF of follower fetch connections."),
	bdef("replica.fetch.max.bytes", Int, ptr("1048576"), atLeast(0), ReadOnly,
		"Bytes a follower asks for per partition."),
	bdef("replica.fetch.wait.max.ms", Int, ptr("500"), nil, ReadOnly,
		"Maximum wait of a follower fetch; at most replica.lag.time.max.ms."),
	bdef("replica.fetch.min.bytes", Int, ptr("1"), nil, ReadOnly,
		"Minimum bytes a follower fetch waits for."),
	bdef("replica.fetch.backoff.ms", Int, ptr("1000"), atLeast(0), ReadOnly,
		"Sleep after a follower fetch error."),
	bdef("replica.fetch.response.max.bytes", Int, ptr("10485760"), atLeast(0), ReadOnly,
		"Bytes a follower asks for in one fetch response."),
	bdef("num.replica.fetchers", Int, ptr("1"), atLeast(1), ClusterWide,
		"Fetcher threads per source broker."),
	bdef("replica.high.watermark.checkpoint.interval.ms", Long, ptr("5000"), nil, ReadOnly,
		"How often high watermarks are checkpointed to disk."),
	bdef("fetch.purgatory.purge.interval.requests", Int, ptr("1000"), nil, ReadOnly,
		"Purge interval (in requests) of the fetch purgatory."),
	bdef("producer.purgatory.purge.interval.requests", Int, ptr("1000"), nil, ReadOnly,
		"Purge interval (in requests) of the produce purgatory."),
	bdef("delete.records.purgatory.purge.interval.requests", Int, ptr("1"), nil, ReadOnly,
		"Purge interval (in requests) of the delete-records purgatory."),
	bdef("auto.leader.rebalance.enable", Boolean, ptr("true"), nil, ReadOnly,
		"Move leadership back to preferred replicas periodically."),
	bdef("leader.imbalance.per.broker.percentage", Int, ptr("10"), nil, ReadOnly,
		"Leader imbalance per broker, in percent, that triggers a rebalance."),
	bdef("leader.imbalance.check.interval.seconds", Long, ptr("300"), atLeast(1), ReadOnly,
		"How often the controller checks leader imbalance."),
	bdef("replica.selector.class", String, nil, func(v string) error {
		switch v {
		case "", RackAwareReplicaSelector, LeaderSelector:
			return nil
		}
		return fmt.Errorf("Gregor has the selectors %s and %s only", RackAwareReplicaSelector, LeaderSelector)
	}, ReadOnly,
		"Selector of the replica a consumer fetches from (KIP-392): RackAwareReplicaSelector sends consumers with client.rack to an in-sync replica in their rack; unset means the leader."),

	// Group coordinator and __consumer_offsets.
	bdef("group.min.session.timeout.ms", Int, ptr("6000"), nil, ReadOnly,
		"Smallest session timeout a classic group member may ask for."),
	bdef("group.max.session.timeout.ms", Int, ptr("1800000"), nil, ReadOnly,
		"Largest session timeout a classic group member may ask for."),
	bdef("group.initial.rebalance.delay.ms", Int, ptr("3000"), nil, ReadOnly,
		"How long the coordinator waits for more members before the first rebalance of an empty classic group."),
	bdef("group.max.size", Int, ptr(maxInt), atLeast(1), ReadOnly,
		"Maximum members of one classic group."),
	bdef("group.coordinator.rebalance.protocols", List, ptr("classic,consumer"), listOf("classic", "consumer", "share"), ReadOnly,
		"Group protocols the coordinator serves."),
	bdef("group.coordinator.threads", Int, ptr("1"), atLeast(1), ReadOnly,
		"Threads of the group coordinator."),
	bdef("group.coordinator.append.linger.ms", Int, ptr("10"), atLeast(0), ReadOnly,
		"How long the coordinator batches writes to __consumer_offsets."),
	bdef("group.consumer.session.timeout.ms", Int, ptr("45000"), atLeast(1), ReadOnly,
		"Session timeout of consumer-protocol group members."),
	bdef("group.consumer.min.session.timeout.ms", Int, ptr("45000"), atLeast(1), ReadOnly,
		"Smallest session timeout of consumer-protocol groups."),
	bdef("group.consumer.max.session.timeout.ms", Int, ptr("60000"), atLeast(1), ReadOnly,
		"Largest session timeout of consumer-protocol groups."),
	bdef("group.consumer.heartbeat.interval.ms", Int, ptr("5000"), atLeast(1), ReadOnly,
		"Heartbeat interval of consumer-protocol group members."),
	bdef("group.consumer.min.heartbeat.interval.ms", Int, ptr("5000"), atLeast(1), ReadOnly,
		"Smallest heartbeat interval of consumer-protocol groups."),
	bdef("group.consumer.max.heartbeat.interval.ms", Int, ptr("15000"), atLeast(1), ReadOnly,
		"Largest heartbeat interval of consumer-protocol groups."),
	bdef("group.consumer.max.size", Int, ptr(maxInt), atLeast(1), ReadOnly,
		"Maximum members of one consumer-protocol group."),
	bdef("group.consumer.migration.policy", String, ptr("bidirectional"), oneOfFold("disabled", "upgrade", "downgrade", "bidirectional"), ReadOnly,
		"Whether a classic group with members may turn into a consumer group (upgrade) and back (downgrade): bidirectional, upgrade, downgrade or disabled. Empty groups convert either way regardless."),
	bdef("group.consumer.assignors", List, ptr("org.apache.kafka.coordinator.group.assignor.UniformAssignor,org.apache.kafka.coordinator.group.assignor.RangeAssignor"), nil, ReadOnly,
		"Server-side assignors of consumer-protocol groups; the first is the default."),
	bdef("group.share.session.timeout.ms", Int, ptr("45000"), atLeast(1), ReadOnly,
		"Session timeout of share group members (KIP-932)."),
	bdef("group.share.min.session.timeout.ms", Int, ptr("45000"), atLeast(1), ReadOnly,
		"Smallest share.session.timeout.ms a share group may set."),
	bdef("group.share.max.session.timeout.ms", Int, ptr("60000"), atLeast(1), ReadOnly,
		"Largest share.session.timeout.ms a share group may set."),
	bdef("group.share.heartbeat.interval.ms", Int, ptr("5000"), atLeast(1), ReadOnly,
		"Heartbeat interval of share group members."),
	bdef("group.share.min.heartbeat.interval.ms", Int, ptr("5000"), atLeast(1), ReadOnly,
		"Smallest share.heartbeat.interval.ms a share group may set."),
	bdef("group.share.max.heartbeat.interval.ms", Int, ptr("15000"), atLeast(1), ReadOnly,
		"Largest share.heartbeat.interval.ms a share group may set."),
	bdef("group.share.max.size", Int, ptr("200"), intBetween(1, 1000), ReadOnly,
		"Maximum members of one share group."),
	bdef("group.share.assignors", List, ptr("org.apache.kafka.coordinator.group.assignor.SimpleAssignor"), nil, ReadOnly,
		"Server-side assignors of share groups; Gregor has the simple assignor only."),
	bdef("group.share.record.lock.duration.ms", Int, ptr("30000"), intBetween(1000, 3600000), ReadOnly,
		"How long a share consumer holds the records it acquired before they are delivered again."),
	bdef("group.share.min.record.lock.duration.ms", Int, ptr("15000"), intBetween(1000, 30000), ReadOnly,
		"Smallest share.record.lock.duration.ms a share group may set."),
	bdef("group.share.max.record.lock.duration.ms", Int, ptr("60000"), intBetween(30000, 3600000), ReadOnly,
		"Largest share.record.lock.duration.ms a share group may set."),
	bdef("group.share.delivery.count.limit", Int, ptr("5"), intBetween(2, 10), ReadOnly,
		"Deliveries of a record to share consumers after which it is archived."),
	bdef("group.share.partition.max.record.locks", Int, ptr("2000"), intBetween(100, 10000), ReadOnly,
		"Most records of one share-partition acquired at once."),
	bdef("offset.metadata.max.bytes", Int, ptr("4096"), nil, ReadOnly,
		"Largest metadata string stored with a committed offset."),
	bdef("offsets.load.buffer.size", Int, ptr("5242880"), atLeast(1), ReadOnly,
		"Batch size when loading __consumer_offsets into the coordinator cache."),
	bdef("offsets.topic.replication.factor", Short, ptr("3"), atLeast(1), ReadOnly,
		"Replication factor of __consumer_offsets; creation waits until that many brokers are registered (a lone broker+controller node uses 1, with a warning)."),
	bdef("offsets.topic.num.partitions", Int, ptr("50"), atLeast(1), ReadOnly,
		"Partitions of __consumer_offsets; do not change after deployment."),
	bdef("offsets.topic.segment.bytes", Int, ptr("104857600"), atLeast(1), ReadOnly,
		"Segment size of __consumer_offsets."),
	bdef("offsets.topic.compression.codec", Int, ptr("0"), nil, ReadOnly,
		"Compression codec id for __consumer_offsets writes."),
	bdef("offsets.retention.minutes", Int, ptr("10080"), atLeast(1), ReadOnly,
		"How long committed offsets of an empty group are kept."),
	bdef("offsets.retention.check.interval.ms", Long, ptr("600000"), atLeast(1), ReadOnly,
		"How often stale offsets are looked for."),
	bdef("offsets.commit.timeout.ms", Int, ptr("5000"), atLeast(1), ReadOnly,
		"How long an offset commit waits for replication of __consumer_offsets."),

	// Transactions and __transaction_state.
	bdef("transaction.state.log.num.partitions", Int, ptr("50"), atLeast(1), ReadOnly,
		"Partitions of __transaction_state; do not change after deployment."),
	bdef("transaction.state.log.replication.factor", Short, ptr("3"), atLeast(1), ReadOnly,
		"Replication factor of __transaction_state; creation waits until that many brokers are registered (a lone broker+controller node uses 1, with a warning)."),
	bdef("transaction.state.log.min.isr", Int, ptr("2"), atLeast(1), ReadOnly,
		"min.insync.replicas of __transaction_state (a lone broker+controller node uses at most 1)."),
	bdef("transaction.state.log.segment.bytes", Int, ptr("104857600"), atLeast(1), ReadOnly,
		"Segment size of __transaction_state."),
	bdef("transaction.state.log.load.buffer.size", Int, ptr("5242880"), atLeast(1), ReadOnly,
		"Batch size when loading __transaction_state into the coordinator cache."),
	bdef("transaction.max.timeout.ms", Int, ptr("900000"), atLeast(1), ReadOnly,
		"Largest transaction timeout a producer may ask for."),
	bdef("transactional.id.expiration.ms", Int, ptr("604800000"), atLeast(1), ReadOnly,
		"A transactional id without activity for this long is expired."),
	bdef("transaction.abort.timed.out.transaction.cleanup.interval.ms", Int, ptr("10000"), atLeast(1), ReadOnly,
		"How often timed-out transactions are rolled back."),
	bdef("transaction.remove.expired.transaction.cleanup.interval.ms", Int, ptr("3600000"), atLeast(1), ReadOnly,
		"How often expired transactional ids are removed."),
	bdef("transaction.partition.verification.enable", Boolean, ptr("true"), nil, ClusterWide,
		"Verify that a partition was added to the transaction before a transactional write."),
	bdef("producer.id.expiration.ms", Int, ptr("86400000"), atLeast(1), ClusterWide,
		"A producer id without writes for this long is forgotten by the partition leader."),
	bdef("producer.id.expiration.check.interval.ms", Int, ptr("600000"), atLeast(1), ReadOnly,
		"How often partition leaders remove producer ids that have expired."),

	// Share groups (KIP-932): the share coordinator and __share_group_state.
	bdef("share.coordinator.state.topic.num.partitions", Int, ptr("50"), atLeast(1), ReadOnly,
		"Partitions of __share_group_state; do not change after deployment."),
	bdef("share.coordinator.state.topic.replication.factor", Short, ptr("3"), atLeast(1), ReadOnly,
		"Replication factor of __share_group_state; creation waits until that many brokers are registered (a lone broker+controller node uses 1, with a warning)."),
	bdef("share.coordinator.state.topic.min.isr", Short, ptr("2"), atLeast(1), ReadOnly,
		"min.insync.replicas of __share_group_state (a lone broker+controller node uses at most 1)."),
	bdef("share.coordinator.state.topic.segment.bytes", Int, ptr("104857600"), atLeast(1), ReadOnly,
		"Segment size of __share_group_state."),
	bdef("share.coordinator.snapshot.update.records.per.snapshot", Int, ptr("500"), atLeast(0), ReadOnly,
		"How many update records of a share-partition are written before the next write is a snapshot of its whole state."),
	bdef("share.coordinator.write.timeout.ms", Int, ptr("5000"), atLeast(1), ReadOnly,
		"How long the share coordinator waits for its write to reach the ISR before answering COORDINATOR_NOT_AVAILABLE."),
	bdef("share.coordinator.state.topic.prune.interval.ms", Int, ptr("300000"), atLeast(0), ReadOnly,
		"How often the share coordinator deletes the __share_group_state records no share-partition's state needs any more (0: never)."),
	bdef("share.coordinator.cold.partition.snapshot.interval.ms", Int, ptr("300000"), atLeast(0), ReadOnly,
		"A share-partition not written for this long gets a fresh snapshot at the next pruning, so that its old records can be deleted."),

	// Security: SASL and TLS. Kafka reconfigures these per listener.
	bdef("principal.builder.class", Class, ptr("org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder"), nil, PerBroker,
		"Builds the principal of a connection."),
	bdef("sasl.enabled.mechanisms", List, ptr("GSSAPI"), nil, PerBroker,
		"SASL mechanisms the server accepts."),
	bdef("sasl.mechanism.inter.broker.protocol", String, ptr("GSSAPI"), nil, PerBroker,
		"SASL mechanism between brokers."),
	bdef("sasl.jaas.config", Password, nil, nil, PerBroker,
		"JAAS login context in the format of a JAAS configuration file entry."),
	bdef("ssl.protocol", String, ptr("TLSv1.3"), nil, PerBroker,
		"TLS protocol used to build the TLS context."),
	bdef("ssl.enabled.protocols", List, ptr("TLSv1.2,TLSv1.3"), nil, PerBroker,
		"TLS protocol versions accepted."),
	bdef("ssl.cipher.suites", List, ptr(""), nil, PerBroker,
		"Cipher suites accepted; empty means the defaults."),
	bdef("ssl.client.auth", String, ptr("none"), oneOf("required", "requested", "none"), PerBroker,
		"Whether clients must present a certificate."),
	bdef("ssl.endpoint.identification.algorithm", String, ptr("https"), nil, PerBroker,
		"Hostname verification of the peer certificate; empty disables it."),
	bdef("ssl.keystore.type", String, ptr("JKS"), nil, PerBroker,
		"Format of the key store file (JKS, PKCS12, PEM)."),
	bdef("ssl.keystore.location", String, nil, nil, PerBroker,
		"Path of the key store file."),
	bdef("ssl.keystore.password", Password, nil, nil, PerBroker,
		"Password of the key store file."),
	bdef("ssl.key.password", Password, nil, nil, PerBroker,
		"Password of the private key."),
	bdef("ssl.keystore.key", Password, nil, nil, PerBroker,
		"Private key in PEM format."),
	bdef("ssl.keystore.certificate.chain", Password, nil, nil, PerBroker,
		"Certificate chain in PEM format."),
	bdef("ssl.truststore.type", String, ptr("JKS"), nil, PerBroker,
		"Format of the trust store file (JKS, PKCS12, PEM)."),
	bdef("ssl.truststore.location", String, nil, nil, PerBroker,
		"Path of the trust store file."),
	bdef("ssl.truststore.password", Password, nil, nil, PerBroker,
		"Password of the trust store file."),
	bdef("ssl.truststore.certificates", Password, nil, nil, PerBroker,
		"Trusted certificates in PEM format."),
	bdef("ssl.principal.mapping.rules", String, ptr("DEFAULT"), nil, ReadOnly,
		"Rules mapping a client certificate's distinguished name to a short principal name (RULE:pattern/replacement/[LU], DEFAULT)."),
	bdef("connections.max.reauth.ms", Long, ptr("0"), atLeast(0), ReadOnly,
		"Longest a SASL session lasts before the client must re-authenticate (KIP-368); 0 means no limit. Takes a listener and mechanism prefix."),
	bdef("sasl.server.max.receive.size", Int, ptr("524288"), atLeast(1), ReadOnly,
		"Largest request read before a SASL connection is authenticated."),
	bdef("sasl.server.callback.handler.class", Class, nil, nil, ReadOnly,
		"Server callback handler of a SASL mechanism; with OAUTHBEARER, org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler validates signed JWTs against sasl.oauthbearer.jwks.endpoint.url, else tokens are Kafka's unsecured JWS. Takes a listener and mechanism prefix."),
	bdef("sasl.oauthbearer.jwks.endpoint.url", String, nil, nil, ReadOnly,
		"URL (https://, http:// or file://) of the JSON Web Key Set that signed OAUTHBEARER tokens are verified with (KIP-768)."),
	bdef("sasl.oauthbearer.jwks.endpoint.refresh.ms", Long, ptr("3600000"), atLeast(1), ReadOnly,
		"How often the JWKS is fetched again."),
	bdef("sasl.oauthbearer.jwks.endpoint.retry.backoff.ms", Long, ptr("100"), atLeast(0), ReadOnly,
		"First wait before retrying a failed JWKS fetch."),
	bdef("sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms", Long, ptr("10000"), atLeast(0), ReadOnly,
		"Longest wait between retries of a failed JWKS fetch."),
	bdef("sasl.oauthbearer.expected.audience", List, nil, nil, ReadOnly,
		"Audiences an OAUTHBEARER token must name one of (aud claim); empty means not checked."),
	bdef("sasl.oauthbearer.expected.issuer", String, nil, nil, ReadOnly,
		"Issuer an OAUTHBEARER token must name (iss claim); empty means not checked."),
	bdef("sasl.oauthbearer.clock.skew.seconds", Int, ptr("30"), atLeast(0), ReadOnly,
		"Clock difference allowed when checking an OAUTHBEARER token's times."),
	bdef("sasl.oauthbearer.scope.claim.name", String, ptr("scope"), nil, ReadOnly,
		"Claim holding an OAUTHBEARER token's scopes."),
	bdef("sasl.oauthbearer.sub.claim.name", String, ptr("sub"), nil, ReadOnly,
		"Claim holding an OAUTHBEARER token's principal name."),

	// Gregor additions.
	bdef("gregor.broker.fence.on.connection.close", Boolean, ptr("true"), nil, ReadOnly,
		"Gregor: the active controller fences a broker at once when the broker closes the connection its heartbeats come on (its process died), or, right after a controller failover, when every listener of the broker refuses connections, instead of after broker.session.timeout.ms; silence still waits for the session timeout."),
	bdef("gregor.controller.quorum.election.on.leader.exit", Boolean, ptr("true"), nil, ReadOnly,
		"Gregor: a controller whose connection from the quorum leader was closed by the leader's side, and whose dials to the leader's controller listener are refused (the leader's process is gone), starts an election at once (the lowest surviving voter first) instead of after controller.quorum.election.timeout.ms."),
	bdef("gregor.http.listen", String, ptr(GregorDefaultHTTPListen), func(v string) error {
		if v == "" {
			return nil
		}
		return validHostPort(v)
	}, ReadOnly,
		"Gregor: host:port of the HTTP listener serving /metrics (Prometheus), /healthz and /readyz; empty turns it off."),
	// With a key store (a location, or an inline key) the HTTP listener
	// serves HTTPS only; the keys mean what Kafka's ssl.* keys of the same
	// names mean for a listener.
	bdef("gregor.http.ssl.keystore.type", String, nil, nil, ReadOnly,
		"Gregor: format of the HTTP listener's key store file (JKS, PKCS12, PEM); JKS when unset."),
	bdef("gregor.http.ssl.keystore.location", String, nil, nil, ReadOnly,
		"Gregor: path of the HTTP listener's key store; when set (or gregor.http.ssl.keystore.key is), the listener serves HTTPS only."),
	bdef("gregor.http.ssl.keystore.password", Password, nil, nil, ReadOnly,
		"Gregor: password of the HTTP listener's key store file."),
	bdef("gregor.http.ssl.key.password", Password, nil, nil, ReadOnly,
		"Gregor: password of the HTTP listener's private key."),
	bdef("gregor.http.ssl.keystore.key", Password, nil, nil, ReadOnly,
		"Gregor: the HTTP listener's private key in PEM format (with gregor.http.ssl.keystore.type=PEM)."),
	bdef("gregor.http.ssl.keystore.certificate.chain", Password, nil, nil, ReadOnly,
		"Gregor: the HTTP listener's certificate chain in PEM format (with gregor.http.ssl.keystore.type=PEM)."),
	bdef("gregor.log.max.open.files", Int, ptr("0"), atLeast(0), ReadOnly,
		"Gregor: how many segment files (.log and .txnindex) may be open at once across the log dirs; past it the least recently used idle ones are closed and reopened when next read or written. 0 means half of the process's open-file limit, at most 10000."),
	bdef("gregor.decompression.memory.bytes", Long, ptr("134217728"), atLeast(1<<20), ReadOnly,
		"Gregor: the memory produce validation may hold for decompressed data at once across the broker; a compressed batch waits for its share, and one that decompresses to more than this is refused with MESSAGE_TOO_LARGE."),
}

var brokerCompressionTypes = []string{"uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"}

// listenerSecurityConfigs are the TLS settings Kafka only lets you change
// dynamically with a listener prefix (SslConfigs.RECONFIGURABLE_CONFIGS).
var listenerSecurityConfigs = map[string]bool{
	"ssl.keystore.type": true, "ssl.keystore.location": true, "ssl.keystore.password": true,
	"ssl.key.password": true, "ssl.truststore.type": true, "ssl.truststore.location": true,
	"ssl.truststore.password": true, "ssl.keystore.certificate.chain": true,
	"ssl.keystore.key": true, "ssl.truststore.certificates": true,
}

// clusterLevelListenerConfigs may be set with a listener prefix at the
// cluster-default level too.
var clusterLevelListenerConfigs = map[string]bool{
	"max.connections": true, "max.connection.creation.rate": true, "num.network.threads": true,
}

var brokerDefIndex = func() map[string]int {
	m := make(map[string]int, len(brokerDefList))
	for i, d := range brokerDefList {
		if _, dup := m[d.Name]; dup {
			panic("config: broker config " + d.Name + " defined twice")
		}
		m[d.Name] = i
	}
	return m
}()

// BrokerDef returns the definition of a broker configuration key.
func BrokerDef(name string) (Def, bool) {
	i, ok := brokerDefIndex[name]
	if !ok {
		return Def{}, false
	}
	return brokerDefList[i], true
}

// BrokerDefs returns every broker key Gregor knows, sorted by name.
func BrokerDefs() []Def {
	out := append([]Def(nil), brokerDefList...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
