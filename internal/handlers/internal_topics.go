package handlers

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/metadata"
)

// internalTopic is an internal topic that the first FindCoordinator
// creates: __consumer_offsets or __transaction_state.
type internalTopic struct {
	name              string
	partitions        int32
	replicationFactor int16
	factorKey         string // the config key replicationFactor comes from
	minISR            int32  // min.insync.replicas; 0 leaves the broker default
	minISRKey         string // the config key minISR comes from
	configs           map[string]string
}

// internalReplicationFactor is the replication factor an internal topic is
// created with, and false while it cannot be created yet.
//
// As in Kafka, the configured factor holds: with fewer brokers registered
// (fenced ones count, as in the controller's placement and Kafka's
// StripedReplicaPlacer: a stopped broker is still a replica, and catches up
// when back) the topic waits and FindCoordinator answers
// COORDINATOR_NOT_AVAILABLE, which clients retry. The topic is never
// created with fewer replicas because a broker was late at start-up: a
// factor is not raised afterwards.
//
// The one exception is a node that is alone (see Handlers.alone): a
// cluster that can never have that many brokers uses the one it has.
func internalReplicationFactor(configured int16, registered int, alone bool) (int16, bool) {
	switch {
	case int(configured) <= registered:
		return configured, true
	case alone:
		return 1, true
	}
	return 0, false
}

// alone reports whether this node is a cluster that can never have more
// than one broker without being reconfigured: it is broker and controller
// (process.roles=broker,controller), controller.quorum.voters is this node
// only (the zero-config `gregor server`, or a single node configured so),
// and no other broker has ever registered with it. Gregor's quorum is
// static, so this node is the only controller there will be; the only way
// to have another broker is a broker-only node pointed at this one, and
// once such a broker has registered the node is no longer alone and
// internal topics wait for their factor like any cluster's. Every other
// configuration (a combined node in a quorum of three, a broker-only node,
// a node whose voter list names others) can grow by starting nodes it
// already knows, so it waits.
func (h *Handlers) alone(img *metadata.Image) bool {
	b := h.d.Broker
	if !b.HasRole("broker") || !b.HasRole("controller") {
		return false
	}
	if len(b.ControllerQuorumVoters) != 1 || b.ControllerQuorumVoters[0].ID != h.d.NodeID {
		return false
	}
	for id := range img.Brokers {
		if id != h.d.NodeID {
			return false
		}
	}
	return true
}

// ensureInternalTopic creates an internal topic through the controller
// unless it exists, as Kafka's AutoTopicCreationManager does for
// FindCoordinator. It returns why the coordinator is not available yet,
// for the FindCoordinator answer's error message ("" for Kafka's own).
func (h *Handlers) ensureInternalTopic(ctx context.Context, it internalTopic) string {
	img := h.image()
	if img.Topics.Topic(it.name) != nil {
		return ""
	}
	alone := h.alone(img)
	rf, ok := internalReplicationFactor(it.replicationFactor, len(img.Brokers), alone)
	if !ok {
		why := fmt.Sprintf("%s needs %d brokers (%s) and %d are registered",
			it.name, it.replicationFactor, it.factorKey, len(img.Brokers))
		h.noteInternalTopicWait(it.name, why)
		return why
	}
	minISR := it.minISR
	if alone && minISR > int32(rf) {
		minISR = int32(rf)
	}

	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version = createTopicsAPI.max
	req.TimeoutMillis = 30000
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = it.name, it.partitions, rf
	configs := it.configs
	if minISR > 0 {
		configs = make(map[string]string, len(it.configs)+1)
		for k, v := range it.configs {
			configs[k] = v
		}
		configs["min.insync.replicas"] = strconv.Itoa(int(minISR))
	}
	for k, v := range configs {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = k, kmsg.StringPtr(v)
		t.Configs = append(t.Configs, c)
	}
	req.Topics = append(req.Topics, t)
	resp := h.d.Controller.CreateTopics(ctx, req)
	for _, rt := range resp.Topics {
		switch rt.ErrorCode {
		case 0:
			// Only the request that created the topic gets here: the
			// warning is logged once per creation, not per request.
			if rf < it.replicationFactor || minISR < it.minISR {
				h.warnInternalTopicShrunk(it, rf, minISR)
			}
		case kerr.TopicAlreadyExists.Code:
		case kerr.InvalidReplicationFactor.Code:
			// The controller's count differs from this image's (a broker
			// in controlled shutdown, all brokers fenced): wait as above.
			why := fmt.Sprintf("%s cannot be created yet", it.name)
			if rt.ErrorMessage != nil {
				why += ": " + *rt.ErrorMessage
			}
			h.noteInternalTopicWait(it.name, why)
			return why
		default:
			h.d.Logger.Warn("create internal topic failed", "topic", it.name, "err", kerr.ErrorForCode(rt.ErrorCode))
		}
	}
	return ""
}

// warnInternalTopicShrunk says that a node alone created an internal topic
// with fewer replicas (and a lower min.insync.replicas) than configured,
// naming the keys to set to silence it.
func (h *Handlers) warnInternalTopicShrunk(it internalTopic, rf int16, minISR int32) {
	var parts []string
	args := []any{"topic", it.name}
	if rf < it.replicationFactor {
		parts = append(parts, fmt.Sprintf("replication factor %d, not %s=%d", rf, it.factorKey, it.replicationFactor))
		args = append(args, "key", it.factorKey, "configured", it.replicationFactor, "used", rf)
	}
	if minISR < it.minISR {
		parts = append(parts, fmt.Sprintf("min.insync.replicas %d, not %s=%d", minISR, it.minISRKey, it.minISR))
		args = append(args, "min_isr_key", it.minISRKey, "min_isr_configured", it.minISR, "min_isr_used", minISR)
	}
	h.d.Logger.Warn(fmt.Sprintf("%s created with %s: this node is the cluster's only broker and only controller; set the keys named to the values used to silence this warning",
		it.name, strings.Join(parts, ", and ")), args...)
}

// internalTopicWaitLogEvery is how often a node says that an internal
// topic still waits for brokers (FindCoordinator retries arrive every few
// hundred milliseconds from every client).
const internalTopicWaitLogEvery = time.Minute

// internalTopicWaits remembers when each internal topic's wait was last
// logged.
type internalTopicWaits struct {
	mu     sync.Mutex
	logged map[string]time.Time
}

// noteInternalTopicWait logs why an internal topic is not created yet, at
// most once a minute per topic.
func (h *Handlers) noteInternalTopicWait(topic, why string) {
	w := &h.internalTopicWaits
	now := time.Now()
	w.mu.Lock()
	last, seen := w.logged[topic]
	if seen && now.Sub(last) < internalTopicWaitLogEvery {
		w.mu.Unlock()
		return
	}
	if w.logged == nil {
		w.logged = map[string]time.Time{}
	}
	w.logged[topic] = now
	w.mu.Unlock()
	h.d.Logger.Info("internal topic waits for brokers; FindCoordinator answers COORDINATOR_NOT_AVAILABLE meanwhile", "topic", topic, "reason", why)
}
