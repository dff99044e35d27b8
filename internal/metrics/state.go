package metrics

import (
	"strconv"

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

func desc(name, help string) *prometheus.Desc { return prometheus.NewDesc(name, help, nil, nil) }

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descPartitionCount, descLeaderCount, descUnderReplicated, descUnderMinISR, descAtMinISR,
		descActiveController, descOffline, descGlobalTopics, descGlobalPartitions, descFencedBrokers, descActiveBrokers,
		descMetadataOffset, descLogSize, descLogStart, descLogEnd, descPurgatorySize} {
		ch <- d
	}
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.state()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	gauge(descMetadataOffset, float64(s.MetadataOffset))
	for name, n := range s.Purgatories {
		gauge(descPurgatorySize, float64(n), name)
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
		gauge(descLeaderCount, float64(leaders))
		gauge(descUnderReplicated, float64(under))
		gauge(descUnderMinISR, float64(underMin))
		gauge(descAtMinISR, float64(atMin))
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
