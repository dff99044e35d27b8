package metrics

import (
	"math"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// State is what the server reports at each scrape: this node's replica
// and controller state as of now.
type State struct {
	// Broker role (zero values on a controller-only node).
	Broker     bool
	Partitions []PartitionState // every partition hosted here
	// Controller role.
	Controller             bool
	ActiveController       bool
	GlobalTopicCount       int
	GlobalPartitionCount   int
	OfflinePartitionsCount int
	FencedBrokerCount      int
	ActiveBrokerCount      int
	MetadataOffset         int64 // last applied metadata offset
	// Purgatories are the requests waiting now in each purgatory, by
	// delayedOperation (Produce, Fetch, CoordinatorWrite, RaftFetch).
	Purgatories map[string]int
	// ClientQuotas are the client quota sensors (broker role).
	ClientQuotas []ClientQuotaSensor
	// ReplicationThrottles are the replication throttles' rates (broker
	// role).
	ReplicationThrottles []ReplicationThrottle
	// FetchSessions is the broker's fetch session cache (broker role).
	FetchSessions FetchSessionCache
	// Groups is what the group coordinator's shards on this broker hold
	// (broker role).
	Groups GroupCoordinator
	// FollowerLags is, per partition this broker follows, how many
	// records it was behind the leader's high watermark at the leader's
	// last fetch answer (broker role).
	FollowerLags []FollowerLag
	// ReplicationBytesIn is the record bytes appended as a follower.
	ReplicationBytesIn int64
	// Raft is the metadata quorum as this node sees it.
	Raft RaftState
	// SharePartitions are the share-partitions this broker leads (broker
	// role).
	SharePartitions []SharePartition
}

// RaftState is the metadata quorum as one node sees it
// (kafka.server:type=raft-metrics).
type RaftState struct {
	Known         bool  // this node takes part in (or observes) the quorum
	Leader        int32 // current-leader, -1 unknown
	Epoch         int32 // current-epoch
	HighWatermark int64 // high-watermark
	// State is current-state: leader, follower, unattached (a voter that
	// knows no leader) or observer (a broker following the log).
	State string
	// PollIdleRatio is poll-idle-ratio-avg, the share of the last 30 to
	// 60 s the quorum's work loop waited for work, in [0, 1]; NaN when the
	// quorum does not measure it.
	PollIdleRatio float64
}

// FollowerLag is one followed partition's lag (FetcherLagMetrics).
type FollowerLag struct {
	Topic     string
	Partition int32
	Lag       int64
}

// GroupCoordinator counts the groups and offsets of the group coordinator
// shards this broker runs (kafka.coordinator.group:type=GroupMetadataManager
// and kafka.server:type=group-coordinator-metrics).
type GroupCoordinator struct {
	// Classic counts the classic groups by state: Empty,
	// PreparingRebalance, CompletingRebalance, Stable, Dead.
	Classic map[string]int
	// Consumer counts the consumer groups (KIP-848) by state: Empty,
	// Assigning, Reconciling, Stable.
	Consumer map[string]int
	Offsets  int // committed offsets (NumOffsets)
	// Share counts the share groups (KIP-932) by state: Empty, Stable,
	// Dead.
	Share map[string]int
}

// SharePartition is one share-partition this broker leads
// (kafka.server:type=SharePartitionMetrics).
type SharePartition struct {
	Group     string
	Topic     string
	Partition int32
	// InFlightRecords counts the records from the share-partition start
	// offset to its end (InFlightMessageCount); InFlightBatches the
	// batches holding them (InFlightBatchCount).
	InFlightRecords int64
	InFlightBatches int
}

// FetchSessionCache is the broker's cache of incremental fetch sessions
// (kafka.server:type=FetchSessionCache).
type FetchSessionCache struct {
	Sessions   int   // NumIncrementalFetchSessions
	Partitions int   // NumIncrementalFetchPartitionsCached
	Evictions  int64 // sessions evicted so far (IncrementalFetchSessionEvictionsPerSec)
}

// ClientQuotaSensor is one client quota sensor: the clients of one quota
// entity (kafka.server:type={Produce,Fetch,Request,ControllerMutation},
// user=*,client-id=*). Sensors exist once a quota of the type is set.
type ClientQuotaSensor struct {
	// Type is Kafka's quota type: Produce, Fetch, Request or
	// ControllerMutation.
	Type string
	// User (sanitized, as Kafka tags it) and ClientID are the entity's
	// tags; "" for a part its quota level lacks.
	User, ClientID string
	// Rate is byte-rate (Produce, Fetch; bytes/s), request-time (Request;
	// % of one request handler) or mutation-rate (ControllerMutation;
	// partitions/s).
	Rate float64
	// ThrottleTime is the mean throttle time given lately, in ms (NaN
	// when none was).
	ThrottleTime float64
}

// ReplicationThrottle is one side's replication throttle (KIP-73).
type ReplicationThrottle struct {
	// Type is LeaderReplication or FollowerReplication.
	Type string
	// ByteRate is the throttled replication bytes moved a second, as the
	// throttle measures them (byte-rate).
	ByteRate float64
}

// PartitionState is one hosted partition.
type PartitionState struct {
	Topic           string
	Partition       int32
	Leader          bool
	UnderReplicated bool
	UnderMinISR     bool
	AtMinISR        bool
	LogSize         int64
	LogStartOffset  int64
	LogEndOffset    int64
}

type stateCollector struct{ state func() State }

var (
	descPartitionCount   = desc("kafka_server_replicamanager_partitioncount", "Partitions hosted on this broker (PartitionCount).")
	descLeaderCount      = desc("kafka_server_replicamanager_leadercount", "Partitions this broker leads (LeaderCount).")
	descUnderReplicated  = desc("kafka_server_replicamanager_underreplicatedpartitions", "Led partitions whose ISR is smaller than their replica set (UnderReplicatedPartitions).")
	descUnderMinISR      = desc("kafka_server_replicamanager_underminisrpartitioncount", "Led partitions whose ISR is below min.insync.replicas (UnderMinIsrPartitionCount).")
	descAtMinISR         = desc("kafka_server_replicamanager_atminisrpartitioncount", "Led partitions whose ISR is exactly min.insync.replicas (AtMinIsrPartitionCount).")
	descActiveController = desc("kafka_controller_kafkacontroller_activecontrollercount", "1 on the active controller, else 0 (ActiveControllerCount).")
	descOffline          = desc("kafka_controller_kafkacontroller_offlinepartitionscount", "Partitions without a leader (OfflinePartitionsCount); reported by the active controller.")
	descGlobalTopics     = desc("kafka_controller_kafkacontroller_globaltopiccount", "Topics in the cluster (GlobalTopicCount); reported by the active controller.")
	descGlobalPartitions = desc("kafka_controller_kafkacontroller_globalpartitioncount", "Partitions in the cluster (GlobalPartitionCount); reported by the active controller.")
	descFencedBrokers    = desc("kafka_controller_kafkacontroller_fencedbrokercount", "Registered brokers that are fenced (FencedBrokerCount).")
	descActiveBrokers    = desc("kafka_controller_kafkacontroller_activebrokercount", "Registered brokers that are unfenced (ActiveBrokerCount).")
	descMetadataOffset   = desc("kafka_server_metadataloader_lastappliedrecordoffset", "Offset of the last metadata record applied (last-applied-record-offset).")
	descLogSize          = prometheus.NewDesc("kafka_log_log_size", "Bytes of the partition's log (kafka.log:type=Log,name=Size).", []string{"topic", "partition"}, nil)
	descLogStart         = prometheus.NewDesc("kafka_log_log_logstartoffset", "The partition's log start offset (LogStartOffset).", []string{"topic", "partition"}, nil)
	descLogEnd           = prometheus.NewDesc("kafka_log_log_logendoffset", "The partition's log end offset (LogEndOffset).", []string{"topic", "partition"}, nil)
	descPurgatorySize    = prometheus.NewDesc("kafka_server_delayedoperationpurgatory_purgatorysize",
		"Requests waiting in a purgatory (kafka.server:type=DelayedOperationPurgatory,name=PurgatorySize).", []string{"delayedOperation"}, nil)
)

// The group coordinator's gauges: Kafka's GroupMetadataManager ones, and
// group-coordinator-metrics' group counts.
var (
	descNumGroups      = desc("kafka_coordinator_group_groupmetadatamanager_numgroups", "Groups of every kind the group coordinator shards on this broker hold (kafka.coordinator.group:type=GroupMetadataManager,name=NumGroups).")
	descNumOffsets     = desc("kafka_coordinator_group_groupmetadatamanager_numoffsets", "Committed offsets those shards hold (NumOffsets).")
	descClassicByState = classicStateDescs()
	descGroupCount     = prometheus.NewDesc("kafka_server_group_coordinator_metrics_group_count",
		"Groups by protocol: classic or consumer (kafka.server:type=group-coordinator-metrics,protocol=* group-count).", []string{"protocol"}, nil)
	descConsumerGroups = prometheus.NewDesc("kafka_server_group_coordinator_metrics_consumer_group_count",
		"Consumer groups (KIP-848) by state (kafka.server:type=group-coordinator-metrics,state=* consumer-group-count).", []string{"state"}, nil)
	descShareGroups = prometheus.NewDesc("kafka_server_group_coordinator_metrics_share_group_count",
		"Share groups (KIP-932) by state: Empty, Stable or Dead (kafka.server:type=group-coordinator-metrics,protocol=share,state=* group-count).", []string{"state"}, nil)
)

// The share-partitions this broker leads (kafka.server:type=SharePartitionMetrics).
var (
	sharePartitionLabels     = []string{"group", "topic", "partition"}
	descShareInFlightRecords = prometheus.NewDesc("kafka_server_sharepartitionmetrics_inflightmessagecount",
		"Records of the share-partition from its start offset to its end: acquired, available for delivery, or done but not yet passed by the start offset (kafka.server:type=SharePartitionMetrics,name=InFlightMessageCount,group=*,topic=*,partition=*).", sharePartitionLabels, nil)
	descShareInFlightBatches = prometheus.NewDesc("kafka_server_sharepartitionmetrics_inflightbatchcount",
		"In-flight batches of the share-partition: runs of its in-flight records in one state and delivery count (InFlightBatchCount).", sharePartitionLabels, nil)
)

// shareStates are Kafka's share group states, each reported (0 when none).
var shareStates = []string{"Empty", "Stable", "Dead"}

// classicStates are the classic group states, each with its
// GroupMetadataManager gauge (NumGroupsPreparingRebalance, ...).
var classicStates = []string{"Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead"}

func classicStateDescs() map[string]*prometheus.Desc {
	ds := map[string]*prometheus.Desc{}
	for _, st := range classicStates {
		ds[st] = desc("kafka_coordinator_group_groupmetadatamanager_numgroups"+strings.ToLower(st),
			"Classic groups in state "+st+" (NumGroups"+st+").")
	}
	return ds
}

// The replica fetchers (the follower side of replication).
var (
	descMaxLag = prometheus.NewDesc("kafka_server_replicafetchermanager_maxlag",
		"Largest lag, in records, of the partitions this broker follows (kafka.server:type=ReplicaFetcherManager,name=MaxLag,clientId=Replica).", []string{"clientId"}, nil)
	descConsumerLag = prometheus.NewDesc("kafka_server_fetcherlagmetrics_consumerlag",
		"Records the partition's log end was behind the leader's high watermark at the leader's last answer (kafka.server:type=FetcherLagMetrics,name=ConsumerLag).", []string{"topic", "partition"}, nil)
	descReplicationBytesIn = desc("kafka_server_brokertopicmetrics_replicationbytesin_total", "Record bytes appended as a follower (ReplicationBytesInPerSec).")
)

// The replication throttles (kafka.server:type=LeaderReplication and
// FollowerReplication).
var replicationThrottleDescs = map[string]*prometheus.Desc{
	"LeaderReplication": desc("kafka_server_leaderreplication_byte_rate",
		"Bytes a second this leader sent throttled follower replicas (kafka.server:type=LeaderReplication byte-rate)."),
	"FollowerReplication": desc("kafka_server_followerreplication_byte_rate",
		"Bytes a second this broker's replica fetchers took for throttled replicas (kafka.server:type=FollowerReplication byte-rate)."),
}

// The metadata quorum (kafka.server:type=raft-metrics).
var (
	descRaftLeader = desc("kafka_server_raft_metrics_current_leader", "The metadata quorum's leader as this node knows it, -1 unknown (raft-metrics current-leader).")
	descRaftEpoch  = desc("kafka_server_raft_metrics_current_epoch", "The metadata quorum's epoch; it grows by one per election (raft-metrics current-epoch).")
	descRaftHW     = desc("kafka_server_raft_metrics_high_watermark", "The metadata log's high watermark as this node knows it (raft-metrics high-watermark).")
	descRaftIdle   = desc("kafka_server_raft_metrics_poll_idle_ratio_avg", "Share of the last 30 to 60 s the metadata quorum's work loop waited for work rather than handled it, 0 to 1 (raft-metrics poll-idle-ratio-avg).")
	descRaftState  = prometheus.NewDesc("kafka_server_raft_metrics_current_state",
		"1 for this node's role in the metadata quorum: leader, follower, unattached or observer (raft-metrics current-state).", []string{"state"}, nil)
)

// The fetch session cache (kafka.server:type=FetchSessionCache).
var (
	descFetchSessions         = desc("kafka_server_fetchsessioncache_numincrementalfetchsessions", "Incremental fetch sessions cached (kafka.server:type=FetchSessionCache,name=NumIncrementalFetchSessions).")
	descFetchSessionParts     = desc("kafka_server_fetchsessioncache_numincrementalfetchpartitionscached", "Partitions in the cached incremental fetch sessions (NumIncrementalFetchPartitionsCached).")
	descFetchSessionEvictions = desc("kafka_server_fetchsessioncache_incrementalfetchsessionevictions_total", "Incremental fetch sessions evicted to make room for others (IncrementalFetchSessionEvictionsPerSec).")
)

// quotaDescs are the client quota metrics by quota type: the rate and the
// throttle time.
var quotaDescs = map[string][2]*prometheus.Desc{
	"Produce":            quotaDesc("produce", "byte_rate", "Produce", "byte-rate", "Bytes produced a second"),
	"Fetch":              quotaDesc("fetch", "byte_rate", "Fetch", "byte-rate", "Bytes fetched by consumers a second"),
	"Request":            quotaDesc("request", "request_time", "Request", "request-time", "Request handling time, in % of one request handler"),
	"ControllerMutation": quotaDesc("controllermutation", "mutation_rate", "ControllerMutation", "mutation-rate", "Partitions created or deleted a second"),
}

func quotaDesc(typ, rate, kafkaType, kafkaRate, help string) [2]*prometheus.Desc {
	labels := []string{"user", "client_id"}
	return [2]*prometheus.Desc{
		prometheus.NewDesc("kafka_server_"+typ+"_"+rate,
			help+", per quota entity (kafka.server:type="+kafkaType+",user=*,client-id=* "+kafkaRate+").", labels, nil),
		prometheus.NewDesc("kafka_server_"+typ+"_throttle_time",
			"Mean throttle time given lately for the "+kafkaType+" quota, in ms; NaN when none (kafka.server:type="+kafkaType+",user=*,client-id=* throttle-time).", labels, nil),
	}
}

func desc(name, help string) *prometheus.Desc { return prometheus.NewDesc(name, help, nil, nil) }

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descPartitionCount, descLeaderCount, descUnderReplicated, descUnderMinISR, descAtMinISR,
		descActiveController, descOffline, descGlobalTopics, descGlobalPartitions, descFencedBrokers, descActiveBrokers,
		descMetadataOffset, descLogSize, descLogStart, descLogEnd, descPurgatorySize,
		descFetchSessions, descFetchSessionParts, descFetchSessionEvictions,
		descNumGroups, descNumOffsets, descGroupCount, descConsumerGroups, descShareGroups,
		descShareInFlightRecords, descShareInFlightBatches,
		descMaxLag, descConsumerLag, descReplicationBytesIn,
		descRaftLeader, descRaftEpoch, descRaftHW, descRaftState, descRaftIdle} {
		ch <- d
	}
	for _, d := range descClassicByState {
		ch <- d
	}
	for _, d := range quotaDescs {
		ch <- d[0]
		ch <- d[1]
	}
	for _, d := range replicationThrottleDescs {
		ch <- d
	}
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.state()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	gauge(descMetadataOffset, float64(s.MetadataOffset))
	if r := s.Raft; r.Known {
		gauge(descRaftLeader, float64(r.Leader))
		gauge(descRaftEpoch, float64(r.Epoch))
		gauge(descRaftHW, float64(r.HighWatermark))
		gauge(descRaftState, 1, r.State)
		if !math.IsNaN(r.PollIdleRatio) {
			gauge(descRaftIdle, r.PollIdleRatio)
		}
	}
	for name, n := range s.Purgatories {
		gauge(descPurgatorySize, float64(n), name)
	}
	for _, q := range s.ClientQuotas {
		if d, ok := quotaDescs[q.Type]; ok {
			gauge(d[0], q.Rate, q.User, q.ClientID)
			gauge(d[1], q.ThrottleTime, q.User, q.ClientID)
		}
	}
	for _, r := range s.ReplicationThrottles {
		if d, ok := replicationThrottleDescs[r.Type]; ok {
			gauge(d, r.ByteRate)
		}
	}
	if s.Broker {
		var leaders, under, underMin, atMin int
		for _, p := range s.Partitions {
			if p.Leader {
				leaders++
				under += b2i(p.UnderReplicated)
				underMin += b2i(p.UnderMinISR)
				atMin += b2i(p.AtMinISR)
			}
			part := strconv.Itoa(int(p.Partition))
			gauge(descLogSize, float64(p.LogSize), p.Topic, part)
			gauge(descLogStart, float64(p.LogStartOffset), p.Topic, part)
			gauge(descLogEnd, float64(p.LogEndOffset), p.Topic, part)
		}
		gauge(descPartitionCount, float64(len(s.Partitions)))
		gauge(descFetchSessions, float64(s.FetchSessions.Sessions))
		gauge(descFetchSessionParts, float64(s.FetchSessions.Partitions))
		ch <- prometheus.MustNewConstMetric(descFetchSessionEvictions, prometheus.CounterValue, float64(s.FetchSessions.Evictions))
		gauge(descLeaderCount, float64(leaders))
		gauge(descUnderReplicated, float64(under))
		gauge(descUnderMinISR, float64(underMin))
		gauge(descAtMinISR, float64(atMin))
		g := s.Groups
		classic, consumer := 0, 0
		for _, st := range classicStates {
			gauge(descClassicByState[st], float64(g.Classic[st]))
			classic += g.Classic[st]
		}
		for st, n := range g.Consumer {
			gauge(descConsumerGroups, float64(n), st)
			consumer += n
		}
		shares := 0
		for _, st := range shareStates {
			gauge(descShareGroups, float64(g.Share[st]), st)
			shares += g.Share[st]
		}
		gauge(descNumGroups, float64(classic+consumer+shares))
		gauge(descGroupCount, float64(classic), "classic")
		gauge(descGroupCount, float64(consumer), "consumer")
		gauge(descGroupCount, float64(shares), "share")
		for _, sp := range s.SharePartitions {
			part := strconv.Itoa(int(sp.Partition))
			gauge(descShareInFlightRecords, float64(sp.InFlightRecords), sp.Group, sp.Topic, part)
			gauge(descShareInFlightBatches, float64(sp.InFlightBatches), sp.Group, sp.Topic, part)
		}
		gauge(descNumOffsets, float64(g.Offsets))
		var maxLag int64
		for _, l := range s.FollowerLags {
			maxLag = max(maxLag, l.Lag)
			gauge(descConsumerLag, float64(l.Lag), l.Topic, strconv.Itoa(int(l.Partition)))
		}
		gauge(descMaxLag, float64(maxLag), "Replica")
		ch <- prometheus.MustNewConstMetric(descReplicationBytesIn, prometheus.CounterValue, float64(s.ReplicationBytesIn))
	}
	if s.Controller {
		gauge(descActiveController, float64(b2i(s.ActiveController)))
		if s.ActiveController {
			gauge(descOffline, float64(s.OfflinePartitionsCount))
			gauge(descGlobalTopics, float64(s.GlobalTopicCount))
			gauge(descGlobalPartitions, float64(s.GlobalPartitionCount))
			gauge(descFencedBrokers, float64(s.FencedBrokerCount))
			gauge(descActiveBrokers, float64(s.ActiveBrokerCount))
		}
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
