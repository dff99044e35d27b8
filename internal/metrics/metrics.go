// Package metrics is Gregor's Prometheus instrumentation: Kafka's JMX
// metrics under Prometheus names (docs/metrics.md lists them), one registry
// per process, and the HTTP listener (gregor.http.listen) that serves
// /metrics, /healthz and /readyz.
//
// Counters and histograms are updated where things happen (requests, bytes
// in and out, ISR changes); gauges of state (partition counts, log sizes,
// the active controller) are computed when Prometheus scrapes, from a
// State the server provides, so they can never drift from the truth.
package metrics

import (
	"reflect"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/errorcode"
)

// Registry holds one process's metrics.
type Registry struct {
	reg *prometheus.Registry

	requests      *prometheus.CounterVec
	requestErrors *prometheus.CounterVec
	totalTime     *prometheus.HistogramVec
	queueTime     *prometheus.HistogramVec
	localTime     *prometheus.HistogramVec
	remoteTime    *prometheus.HistogramVec
	respQueueTime *prometheus.HistogramVec
	respSendTime  *prometheus.HistogramVec
	requestBytes  *prometheus.HistogramVec

	messagesIn     *prometheus.CounterVec
	bytesIn        *prometheus.CounterVec
	bytesOut       *prometheus.CounterVec
	replicationOut prometheus.Counter

	isrShrinks prometheus.Counter
	isrExpands prometheus.Counter

	authOK, authFailed     *prometheus.CounterVec
	reauthOK, reauthFailed *prometheus.CounterVec

	connections        *prometheus.GaugeVec
	connectionsCreated *prometheus.CounterVec
	acceptThrottle     *prometheus.CounterVec
	acceptorBlocked    *prometheus.CounterVec

	lag *groupLagCollector

	raftCommit        prometheus.Histogram
	raftElection      prometheus.Histogram
	raftFetchRecords  prometheus.Counter
	raftAppendRecords prometheus.Counter

	offsetCommits      prometheus.Counter
	classicRebalances  prometheus.Counter
	consumerRebalances prometheus.Counter
	shareRebalances    prometheus.Counter

	shareFetches, shareFetchesFailed *prometheus.CounterVec
	shareAckReqs, shareAckReqsFailed *prometheus.CounterVec
	shareAcks                        *prometheus.CounterVec
	shareLockTimeout                 *prometheus.CounterVec
	sharePartitionLoad               prometheus.Histogram
	shareFetchLockTime               *prometheus.HistogramVec
	shareFetchLockRatio              *prometheus.HistogramVec
}

// requestBuckets are latency buckets in milliseconds, as Kafka reports
// request times in ms.
var requestBuckets = []float64{0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000}

// New returns a registry with Go runtime and process metrics and every
// Gregor metric registered; state (may be nil) feeds the scrape-time gauges.
func New(state func() State) *Registry {
	r := &Registry{reg: prometheus.NewRegistry()}
	r.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kafka_network_requestmetrics_requests_total",
		Help: "Requests handled, by API (kafka.network:type=RequestMetrics,name=RequestsPerSec).",
	}, []string{"request"})
	r.requestErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kafka_network_requestmetrics_errors_total",
		Help: "Error codes in responses, by API and error (kafka.network:type=RequestMetrics,name=ErrorsPerSec).",
	}, []string{"request", "error"})
	timeMs := func(name, help string) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "kafka_network_requestmetrics_" + name, Help: help, Buckets: requestBuckets,
		}, []string{"request"})
	}
	r.totalTime = timeMs("totaltimems", "Time from receiving a request to its response handed to the kernel (or its handling done, with no response), in ms (TotalTimeMs).")
	r.queueTime = timeMs("requestqueuetimems", "Time a request waited before its handling started, in ms (RequestQueueTimeMs).")
	r.localTime = timeMs("localtimems", "Time the handler worked on a request, before any wait, in ms (LocalTimeMs).")
	r.remoteTime = timeMs("remotetimems", "Time a request waited for something outside its handler (replication of an acks=all produce, data for a fetch, a rebalance, a forwarded request), in ms (RemoteTimeMs).")
	r.respQueueTime = timeMs("responsequeuetimems", "Time a response waited for the connection's writer (behind earlier responses, or held for a throttle), in ms (ResponseQueueTimeMs).")
	r.respSendTime = timeMs("responsesendtimems", "Time to hand a response's bytes to the kernel, in ms (ResponseSendTimeMs).")
	r.requestBytes = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "kafka_network_requestmetrics_requestbytes",
		Help:    "Size of each request, in bytes, by API (kafka.network:type=RequestMetrics,name=RequestBytes).",
		Buckets: prometheus.ExponentialBuckets(64, 4, 10), // 64 B to 16 MiB
	}, []string{"request"})
	r.messagesIn = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kafka_server_brokertopicmetrics_messagesin_total",
		Help: "Records appended by produce requests, by topic; topic=\"\" counts all topics (MessagesInPerSec).",
	}, []string{"topic"})
	r.bytesIn = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kafka_server_brokertopicmetrics_bytesin_total",
		Help: "Bytes appended by produce requests, by topic; topic=\"\" counts all topics (BytesInPerSec).",
	}, []string{"topic"})
	r.bytesOut = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kafka_server_brokertopicmetrics_bytesout_total",
		Help: "Record bytes sent to consumers, by topic; topic=\"\" counts all topics (BytesOutPerSec).",
	}, []string{"topic"})
	r.replicationOut = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "kafka_server_brokertopicmetrics_replicationbytesout_total",
		Help: "Record bytes sent to followers (ReplicationBytesOutPerSec).",
	})
	r.isrShrinks = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "kafka_server_replicamanager_isrshrinks_total",
		Help: "ISR shrinks committed by the controller for partitions this broker leads (IsrShrinksPerSec).",
	})
	r.isrExpands = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "kafka_server_replicamanager_isrexpands_total",
		Help: "ISR expansions committed for partitions this broker leads (IsrExpandsPerSec).",
	})
	authLabels := []string{"listener", "mechanism"}
	r.authOK = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kafka_server_socket_server_metrics_successful_authentication_total",
		Help: "Connections that authenticated, by listener and mechanism (SSL for a TLS handshake on an SSL listener) (successful-authentication-total).",
	}, authLabels)
	r.authFailed = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kafka_server_socket_server_metrics_failed_authentication_total",
		Help: "Connections whose authentication failed, by listener and mechanism (failed-authentication-total).",
	}, authLabels)
	r.reauthOK = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kafka_server_socket_server_metrics_successful_reauthentication_total",
		Help: "SASL re-authentications that succeeded (KIP-368) (successful-reauthentication-total).",
	}, authLabels)
	r.reauthFailed = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kafka_server_socket_server_metrics_failed_reauthentication_total",
		Help: "SASL re-authentications that failed (failed-reauthentication-total).",
	}, authLabels)
	listener := []string{"listener"}
	r.connections = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "kafka_server_socket_server_metrics_connection_count",
		Help: "Open connections, by listener (connection-count).",
	}, listener)
	r.connectionsCreated = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kafka_server_socket_server_metrics_connection_creation_total",
		Help: "Connections accepted, by listener (connection-creation-total).",
	}, listener)
	r.acceptThrottle = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kafka_server_socket_server_metrics_connection_accept_throttle_time_ms_total",
		Help: "Milliseconds the listener waited for max.connection.creation.rate before accepting (connection-accept-throttle-time, KIP-612).",
	}, listener)
	r.acceptorBlocked = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kafka_network_acceptor_blocked_time_ms_total",
		Help: "Milliseconds the listener's acceptor was blocked at max.connections (kafka.network:type=Acceptor,name=AcceptorBlockedPercent, as a total).",
	}, listener)
	r.offsetCommits = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "kafka_server_group_coordinator_metrics_offset_commit_total",
		Help: "Offset commit records the group coordinator wrote, transactional ones included (group-coordinator-metrics offset-commit-count).",
	})
	r.classicRebalances = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "kafka_server_group_coordinator_metrics_group_completed_rebalance_total",
		Help: "Classic group rebalances completed: the group Stable with its leader's assignment (group-completed-rebalance-count).",
	})
	r.consumerRebalances = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "kafka_server_group_coordinator_metrics_consumer_group_rebalance_total",
		Help: "Consumer group (KIP-848) rebalances: group epoch bumps (consumer-group-rebalance-count).",
	})
	r.shareRebalances = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "kafka_server_group_coordinator_metrics_share_group_rebalance_total",
		Help: "Share group (KIP-932) rebalances: group epoch bumps (group-coordinator-metrics,protocol=share rebalance-count).",
	})
	topicCounter := func(name, help string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kafka_server_brokertopicmetrics_" + name, Help: help}, []string{"topic"})
	}
	r.shareFetches = topicCounter("totalsharefetchrequests_total", "Share fetches, counted once per topic they fetch; topic=\"\" counts every topic's (TotalShareFetchRequestsPerSec).")
	r.shareFetchesFailed = topicCounter("failedsharefetchrequests_total", "Share fetches with a partition of the topic answered with an error; topic=\"\" counts every topic's (FailedShareFetchRequestsPerSec).")
	r.shareAckReqs = topicCounter("totalshareacknowledgementrequests_total", "Share acknowledgements (ShareAcknowledge, or piggy-backed on ShareFetch), counted once per topic they acknowledge; topic=\"\" counts every topic's (TotalShareAcknowledgementRequestsPerSec).")
	r.shareAckReqsFailed = topicCounter("failedshareacknowledgementrequests_total", "Share acknowledgements with a partition of the topic that failed; topic=\"\" counts every topic's (FailedShareAcknowledgementRequestsPerSec).")
	r.shareAcks = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kafka_server_sharegroupmetrics_recordacknowledgements_total",
		Help: "Records acknowledged by share consumers, by acknowledgement type: Accept, Release, Reject or Renew (kafka.server:type=ShareGroupMetrics,name=RecordAcknowledgementsPerSec,ackType=*).",
	}, []string{"ackType"})
	r.shareLockTimeout = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kafka_server_sharepartitionmetrics_acquisitionlocktimeout_total",
		Help: "Records whose acquisition lock timed out, by share-partition (kafka.server:type=SharePartitionMetrics,name=AcquisitionLockTimeoutPerSec,group=*,topic=*,partition=*).",
	}, []string{"group", "topic", "partition"})
	r.sharePartitionLoad = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "kafka_server_sharegroupmetrics_partitionloadtimems",
		Help:    "Time to load a share-partition on its leader: its state read from the share coordinator (and, never consumed, its start offset decided and written), in ms (kafka.server:type=ShareGroupMetrics,name=PartitionLoadTimeMs).",
		Buckets: requestBuckets,
	})
	r.shareFetchLockTime = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "kafka_server_sharepartitionmetrics_fetchlocktimems",
		Help:    "Time a share fetch held a share-partition's fetch lock (reading the log and acquiring records), in ms, by share-partition (kafka.server:type=SharePartitionMetrics,name=FetchLockTimeMs,group=*,topic=*,partition=*).",
		Buckets: requestBuckets,
	}, []string{"group", "topic", "partition"})
	r.shareFetchLockRatio = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "kafka_server_sharepartitionmetrics_fetchlockratio",
		Help:    "A share fetch's hold of a share-partition's fetch lock in percent of the time since the previous fetch let go of it, by share-partition (kafka.server:type=SharePartitionMetrics,name=FetchLockRatio,group=*,topic=*,partition=*).",
		Buckets: prometheus.LinearBuckets(10, 10, 10), // 10% to 100%
	}, []string{"group", "topic", "partition"})
	r.raftCommit = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "kafka_server_raft_metrics_commit_latency_ms",
		Help:    "Time from the active controller appending a metadata batch to its commit and application, in ms (raft-metrics commit-latency-avg/max).",
		Buckets: requestBuckets,
	})
	r.raftElection = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "kafka_server_raft_metrics_election_latency_ms",
		Help:    "Time a metadata quorum voter knew no leader, from its start or the leader's loss until it knew the new one, in ms (raft-metrics election-latency-avg/max).",
		Buckets: requestBuckets,
	})
	r.raftFetchRecords = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "kafka_server_raft_metrics_fetch_records_total",
		Help: "Metadata records this node received from the quorum's leader, as a follower or observer (raft-metrics fetch-records-rate).",
	})
	r.raftAppendRecords = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "kafka_server_raft_metrics_append_records_total",
		Help: "Metadata records the active controller appended and saw committed (raft-metrics append-records-rate).",
	})
	r.reg.MustRegister(r.shareRebalances, r.shareAcks, r.shareLockTimeout,
		r.shareFetches, r.shareFetchesFailed, r.shareAckReqs, r.shareAckReqsFailed,
		r.sharePartitionLoad, r.shareFetchLockTime, r.shareFetchLockRatio)
	r.reg.MustRegister(r.offsetCommits, r.classicRebalances, r.consumerRebalances, r.raftCommit,
		r.raftElection, r.raftFetchRecords, r.raftAppendRecords)
	r.reg.MustRegister(r.requests, r.requestErrors, r.totalTime, r.queueTime,
		r.localTime, r.remoteTime, r.respQueueTime, r.respSendTime, r.requestBytes,
		r.messagesIn, r.bytesIn, r.bytesOut, r.replicationOut, r.isrShrinks, r.isrExpands,
		r.authOK, r.authFailed, r.reauthOK, r.reauthFailed,
		r.connections, r.connectionsCreated, r.acceptThrottle, r.acceptorBlocked,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if state != nil {
		r.reg.MustRegister(&stateCollector{state: state})
	}
	r.lag = &groupLagCollector{}
	r.reg.MustRegister(r.lag)
	return r
}

// Gatherer exposes the registry (for tests and the HTTP handler).
func (r *Registry) Gatherer() prometheus.Gatherer { return r.reg }

// Authenticated records an authentication attempt on a listener.
func (r *Registry) Authenticated(listener, mechanism string, reauth bool, err error) {
	if r == nil {
		return
	}
	c := r.authOK
	switch {
	case reauth && err == nil:
		c = r.reauthOK
	case reauth:
		c = r.reauthFailed
	case err != nil:
		c = r.authFailed
	}
	c.WithLabelValues(listener, mechanism).Inc()
}

// ConnectionOpened counts a connection accepted on a listener.
func (r *Registry) ConnectionOpened(listener string) {
	if r == nil {
		return
	}
	r.connections.WithLabelValues(listener).Inc()
	r.connectionsCreated.WithLabelValues(listener).Inc()
}

// ConnectionClosed counts a listener's connection closed.
func (r *Registry) ConnectionClosed(listener string) {
	if r == nil {
		return
	}
	r.connections.WithLabelValues(listener).Dec()
}

// AcceptThrottled records a listener waiting d for the connection
// creation rate.
func (r *Registry) AcceptThrottled(listener string, d time.Duration) {
	if r == nil {
		return
	}
	r.acceptThrottle.WithLabelValues(listener).Add(float64(d.Microseconds()) / 1000)
}

// AcceptorBlocked records a listener waiting d for max.connections.
func (r *Registry) AcceptorBlocked(listener string, d time.Duration) {
	if r == nil {
		return
	}
	r.acceptorBlocked.WithLabelValues(listener).Add(float64(d.Microseconds()) / 1000)
}

// ConnectionCount returns the open-connection gauge of a listener (tests).
func (r *Registry) ConnectionCount(listener string) prometheus.Gauge {
	return r.connections.WithLabelValues(listener)
}

// AuthCounter returns the authentication counter of a listener and
// mechanism (tests).
func (r *Registry) AuthCounter(ok bool, listener, mechanism string) prometheus.Counter {
	if ok {
		return r.authOK.WithLabelValues(listener, mechanism)
	}
	return r.authFailed.WithLabelValues(listener, mechanism)
}

// ReauthCounter returns the successful re-authentication counter of a
// listener and mechanism (tests).
func (r *Registry) ReauthCounter(listener, mechanism string) prometheus.Counter {
	return r.reauthOK.WithLabelValues(listener, mechanism)
}

// ObserveRequest records one handled request: its count, its size in
// bytes, its response's error codes, its queue time, and its handling
// (started to done) split at waitingSince (zero: no wait) into local and
// remote time.
func (r *Registry) ObserveRequest(apiKey int16, size int, resp kmsg.Response, received, started, waitingSince, done time.Time) {
	if r == nil {
		return
	}
	name := kmsg.NameForKey(apiKey)
	r.requests.WithLabelValues(name).Inc()
	r.requestBytes.WithLabelValues(name).Observe(float64(size))
	r.queueTime.WithLabelValues(name).Observe(ms(started.Sub(received)))
	local, remote := done.Sub(started), time.Duration(0)
	if !waitingSince.IsZero() {
		local, remote = waitingSince.Sub(started), done.Sub(waitingSince)
	}
	r.localTime.WithLabelValues(name).Observe(ms(local))
	r.remoteTime.WithLabelValues(name).Observe(ms(remote))
	if resp != nil {
		// Every non-zero code at any depth counts once, as Kafka
		// counts one error per occurrence.
		errorcode.Walk(resp, func(f reflect.Value) {
			if code := int16(f.Int()); code != 0 {
				r.requestErrors.WithLabelValues(name, errorName(code)).Inc()
			}
		})
	}
}

// ObserveSent records a response handed to the kernel: the time it waited
// for the writer, the time writing it took, and the request's total time.
func (r *Registry) ObserveSent(apiKey int16, received, done, dequeued, sent time.Time) {
	if r == nil {
		return
	}
	name := kmsg.NameForKey(apiKey)
	r.respQueueTime.WithLabelValues(name).Observe(ms(dequeued.Sub(done)))
	r.respSendTime.WithLabelValues(name).Observe(ms(sent.Sub(dequeued)))
	r.totalTime.WithLabelValues(name).Observe(ms(sent.Sub(received)))
}

// ms is d in milliseconds, with microsecond resolution, never negative.
func ms(d time.Duration) float64 { return float64(max(d, 0).Microseconds()) / 1000 }

// errorName is Kafka's error name for a code (NONE is never counted).
func errorName(code int16) string {
	if err := kerr.ErrorForCode(code); err != nil {
		if ke, ok := err.(*kerr.Error); ok {
			return ke.Message
		}
	}
	return "UNKNOWN_" + strconv.Itoa(int(code))
}

// Produced records a produce request's appended records and bytes.
func (r *Registry) Produced(topic string, records, bytes int) {
	if r == nil {
		return
	}
	for _, t := range [2]string{topic, AllTopics} {
		r.messagesIn.WithLabelValues(t).Add(float64(records))
		r.bytesIn.WithLabelValues(t).Add(float64(bytes))
	}
}

// AllTopics is the topic label of the BrokerTopicMetrics series that count
// every topic: Kafka's meters without a topic tag (a missing label is "" in
// PromQL, so {topic=""} selects them and {topic!=""} the per-topic ones).
const AllTopics = ""

// Fetched records bytes sent to a consumer in a fetch answer.
func (r *Registry) Fetched(topic string, bytes int) {
	if r == nil || bytes == 0 {
		return
	}
	r.bytesOut.WithLabelValues(topic).Add(float64(bytes))
	r.bytesOut.WithLabelValues(AllTopics).Add(float64(bytes))
}

// Replicated records bytes sent to followers in a fetch answer.
func (r *Registry) Replicated(bytes int) {
	if r == nil {
		return
	}
	r.replicationOut.Add(float64(bytes))
}

// ISRChanged records a committed ISR change: "expand" or "shrink".
func (r *Registry) ISRChanged(change string) {
	if r == nil {
		return
	}
	switch change {
	case "expand":
		r.isrExpands.Inc()
	case "shrink":
		r.isrShrinks.Inc()
	}
}

// OffsetsCommitted counts offset commit records written (group.Meters).
func (r *Registry) OffsetsCommitted(n int) {
	if r != nil {
		r.offsetCommits.Add(float64(n))
	}
}

// ClassicRebalanceCompleted counts a classic group rebalance completed
// (group.Meters).
func (r *Registry) ClassicRebalanceCompleted() {
	if r != nil {
		r.classicRebalances.Inc()
	}
}

// ConsumerGroupRebalanced counts a consumer group epoch bump (group.Meters).
func (r *Registry) ConsumerGroupRebalanced() {
	if r != nil {
		r.consumerRebalances.Inc()
	}
}

// ShareGroupRebalanced counts a share group epoch bump (group.Meters).
func (r *Registry) ShareGroupRebalanced() {
	if r != nil {
		r.shareRebalances.Inc()
	}
}

// ShareFetched counts a share fetch's topics: topic name -> whether a
// partition of it failed.
func (r *Registry) ShareFetched(topics map[string]bool) {
	if r != nil {
		countTopics(r.shareFetches, r.shareFetchesFailed, topics)
	}
}

// ShareAcknowledged counts a share acknowledgement's topics (a
// ShareAcknowledge, or acknowledgements piggy-backed on a ShareFetch): topic
// name -> whether a partition of it failed.
func (r *Registry) ShareAcknowledged(topics map[string]bool) {
	if r != nil {
		countTopics(r.shareAckReqs, r.shareAckReqsFailed, topics)
	}
}

// countTopics marks a request's topics, each once on its series and once
// on the all-topics one, as Kafka marks its BrokerTopicStats.
func countTopics(total, failed *prometheus.CounterVec, topics map[string]bool) {
	for t, bad := range topics {
		total.WithLabelValues(t).Inc()
		total.WithLabelValues(AllTopics).Inc()
		if bad {
			failed.WithLabelValues(t).Inc()
			failed.WithLabelValues(AllTopics).Inc()
		}
	}
}

// RecordsAcknowledged counts records acknowledged by share consumers with
// one acknowledgement type (share.Meters).
func (r *Registry) RecordsAcknowledged(ackType string, records int64) {
	if r != nil {
		r.shareAcks.WithLabelValues(ackType).Add(float64(records))
	}
}

// LocksTimedOut counts records of a share-partition whose acquisition lock
// timed out (share.Meters).
func (r *Registry) LocksTimedOut(group, topic string, partition int32, records int64) {
	if r != nil {
		r.shareLockTimeout.WithLabelValues(group, topic, strconv.Itoa(int(partition))).Add(float64(records))
	}
}

// PartitionLoaded records a share-partition's load time (share.Meters).
func (r *Registry) PartitionLoaded(d time.Duration) {
	if r != nil {
		r.sharePartitionLoad.Observe(ms(d))
	}
}

// FetchLockReleased records a share fetch's hold of a share-partition's
// fetch lock: its time, and that in percent of the time since the previous
// fetch let go (share.Meters).
func (r *Registry) FetchLockReleased(group, topic string, partition int32, held time.Duration, percent float64) {
	if r != nil {
		p := strconv.Itoa(int(partition))
		r.shareFetchLockTime.WithLabelValues(group, topic, p).Observe(ms(held))
		r.shareFetchLockRatio.WithLabelValues(group, topic, p).Observe(percent)
	}
}

// ShareGroupDeleted drops a deleted share group's share-partition series
// (share.Meters).
func (r *Registry) ShareGroupDeleted(group string) {
	if r != nil {
		for _, v := range []interface {
			DeletePartialMatch(prometheus.Labels) int
		}{r.shareLockTimeout, r.shareFetchLockTime, r.shareFetchLockRatio} {
			v.DeletePartialMatch(prometheus.Labels{"group": group})
		}
	}
}

// RaftCommitted records a metadata append of records that committed after d.
func (r *Registry) RaftCommitted(records int, d time.Duration) {
	if r != nil {
		r.raftCommit.Observe(ms(d))
		r.raftAppendRecords.Add(float64(records))
	}
}

// RaftElected records how long this voter knew no quorum leader.
func (r *Registry) RaftElected(d time.Duration) {
	if r != nil {
		r.raftElection.Observe(ms(d))
	}
}

// RaftFetched records metadata records received from the quorum's leader.
func (r *Registry) RaftFetched(records int) {
	if r != nil {
		r.raftFetchRecords.Add(float64(records))
	}
}
