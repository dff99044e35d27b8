package handlers

// CreateTopics (key 19), v2-7 (v2 is Kafka 4.0's floor). The controller
// validates and commits the topics (see controller.CreateTopics for the
// error codes); this handler adds what v5+ answers carry for each created
// (or validated) topic: its partition count, replication factor and the
// resulting configs with their sources.
//
// Creating needs CREATE on the cluster, else CREATE on each topic
// (TOPIC_AUTHORIZATION_FAILED, the topic not created). A created topic's
// configs, partition count and replication factor are answered only with
// DESCRIBE_CONFIGS on it, else its ConfigErrorCode (TopicConfigErrorCode) is
// TOPIC_AUTHORIZATION_FAILED (as Kafka's ReplicationControlManager).
//
// The client's controller_mutation_rate quota counts the partitions of
// each topic; from v6 on a topic over it gets THROTTLING_QUOTA_EXCEEDED
// (quotas.go).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/config"
	"gregor/internal/network"
)

var createTopicsAPI = api{key: 19, min: 2, max: 7, handle: (*Handlers).createTopics}

func (h *Handlers) createTopics(ctx context.Context, req *network.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.CreateTopicsRequest)
	var denied []string
	var describable map[string]bool // nil: every topic
	if !h.trustedAdmin(ctx, req) {
		r, denied = h.creatableTopics(ctx, req, r)
		if r.Version >= 5 {
			names := make([]string, 0, len(r.Topics))
			for _, t := range r.Topics {
				names = append(names, t.Topic)
			}
			describable = h.authorizedTopics(ctx, req, kmsg.ACLOperationDescribeConfigs, names)
		}
	}
	mq := h.mutationQuota(ctx, req, 6)
	r, throttled, charged := h.admitCreateTopics(mq, r)
	resp := r.ResponseKind().(*kmsg.CreateTopicsResponse)
	if len(r.Topics) > 0 || (len(denied) == 0 && len(throttled) == 0) {
		resp = h.d.Controller.CreateTopics(ctx, r)
	}
	for _, t := range resp.Topics {
		if n, ok := charged[t.Topic]; ok {
			mq.settle(n, t.ErrorCode == 0)
		}
	}
	mq.finish()
	resp.Topics = append(resp.Topics, throttled...)
	for _, n := range denied {
		rt := kmsg.NewCreateTopicsResponseTopic()
		rt.Topic, rt.ErrorCode, rt.ErrorMessage = n, kerr.TopicAuthorizationFailed.Code, kmsg.StringPtr("Authorization failed.")
		resp.Topics = append(resp.Topics, rt)
	}
	if r.Version < 5 {
		return resp, nil
	}
	requested := make(map[string]map[string]string, len(r.Topics))
	for _, t := range r.Topics {
		cfg := make(map[string]string, len(t.Configs))
		for _, c := range t.Configs {
			if c.Value != nil {
				cfg[c.Name] = *c.Value
			}
		}
		requested[t.Topic] = cfg
	}
	img := h.image()
	for i := range resp.Topics {
		t := &resp.Topics[i]
		if t.ErrorCode == 0 && describable != nil && !describable[t.Topic] {
			t.Configs, t.NumPartitions, t.ReplicationFactor = nil, -1, -1
			t.ConfigErrorCode = kerr.TopicAuthorizationFailed.Code
			continue
		}
		// A forwarded request comes back with configs already; a
		// controller-only node has no broker configs to describe.
		if t.ErrorCode != 0 || len(t.Configs) > 0 || h.d.Replica == nil {
			continue
		}
		layers := h.d.Replica.Layers(img, t.Topic)
		layers.Topic = requested[t.Topic]
		for _, e := range config.DescribeTopic(layers, nil, false, false) {
			c := kmsg.NewCreateTopicsResponseTopicConfig()
			c.Name, c.Value, c.ReadOnly, c.Source, c.IsSensitive = e.Name, e.Value, e.ReadOnly, int8(e.Source), e.Sensitive
			t.Configs = append(t.Configs, c)
		}
	}
	return resp, nil
}

// admitCreateTopics asks the controller mutation quota about each topic of
// r: it returns the topics to create, the answers of those it refuses, and
// the partitions it counted per topic to create (for mq.settle).
func (h *Handlers) admitCreateTopics(mq *mutations, r *kmsg.CreateTopicsRequest) (*kmsg.CreateTopicsRequest, []kmsg.CreateTopicsResponseTopic, map[string]int) {
	if mq == nil {
		return r, nil, nil
	}
	names := make([]string, 0, len(r.Topics))
	for _, t := range r.Topics {
		names = append(names, t.Topic)
	}
	dup := duplicates(names) // refused by the controller: not counted
	admitted := *r
	admitted.Topics = nil
	var throttled []kmsg.CreateTopicsResponseTopic
	charged := map[string]int{}
	for _, t := range r.Topics {
		n := 0
		switch {
		case dup[t.Topic]:
		case len(t.ReplicaAssignment) > 0:
			n = len(t.ReplicaAssignment)
		case t.NumPartitions == -1:
			n = int(h.d.Broker.NumPartitions)
		default:
			n = int(t.NumPartitions)
		}
		if !mq.admit(n) {
			rt := kmsg.NewCreateTopicsResponseTopic()
			rt.Topic, rt.ErrorCode, rt.ErrorMessage = t.Topic, kerr.ThrottlingQuotaExceeded.Code, kmsg.StringPtr(throttledTopicMessage)
			rt.NumPartitions, rt.ReplicationFactor = -1, -1
			throttled = append(throttled, rt)
			continue
		}
		charged[t.Topic] = n
		admitted.Topics = append(admitted.Topics, t)
	}
	return &admitted, throttled, charged
}

// creatableTopics splits r into the topics req's principal may create
// (CREATE on the cluster or on the topic; a name given twice stays for
// the controller to reject) and the names it may not.
func (h *Handlers) creatableTopics(ctx context.Context, req *network.Request, r *kmsg.CreateTopicsRequest) (*kmsg.CreateTopicsRequest, []string) {
	if h.authorizedCluster(ctx, req, kmsg.ACLOperationCreate) {
		return r, nil
	}
	names := make([]string, 0, len(r.Topics))
	for _, t := range r.Topics {
		names = append(names, t.Topic)
	}
	creatable := h.authorizedTopics(ctx, req, kmsg.ACLOperationCreate, names)
	dup := duplicates(names)
	allowed := *r
	allowed.Topics = nil
	var denied []string
	for _, t := range r.Topics {
		if creatable[t.Topic] || dup[t.Topic] {
			allowed.Topics = append(allowed.Topics, t)
		} else {
			denied = append(denied, t.Topic)
		}
	}
	return &allowed, denied
}
