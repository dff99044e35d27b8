package handlers

// Metadata (key 3), v0-12. Brokers (with their endpoint for the listener the
// request came in on), the cluster id, the controller id, and topics with
// ids (v10+), partitions, leaders, leader epochs (v7+), replicas, ISR and
// offline replicas (v5+). A null topic list (v1+; an empty one at v0) means
// every topic. A missing topic is created with the broker defaults when
// auto.create.topics.enable is true and the request allows it (v4+ field),
// else UNKNOWN_TOPIC_OR_PARTITION; an illegal name gets
// INVALID_TOPIC_EXCEPTION. Topics can be named by id (v10+): unknown ids get
// UNKNOWN_TOPIC_ID. Creation is synchronous here (the controller answers
// after the records are applied), so a created topic is described at once.
//
// Authorization (Kafka's): every topic listed needs DESCRIBE: all topics
// lists only those, a topic asked for by name or id without it gets
// TOPIC_AUTHORIZATION_FAILED (a missing one too, which hides whether it
// exists). Auto-creation needs CREATE on the cluster or on the topic, else
// TOPIC_AUTHORIZATION_FAILED. Authorized operations (KIP-430, v8+), when
// asked for: each topic's the principal may describe (also one answered
// UNKNOWN_TOPIC_OR_PARTITION), and the cluster's at v8-10 (0 without
// DESCRIBE on the cluster); Kafka's omitted value otherwise.

import (
	"context"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/controller"
	"gregor/internal/metadata"
	"gregor/internal/network"
)

var metadataAPI = api{key: 3, min: 0, max: 12, handle: (*Handlers).metadata}

func (h *Handlers) metadata(ctx context.Context, req *network.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.MetadataRequest)
	resp := r.ResponseKind().(*kmsg.MetadataResponse)
	img := h.image()

	var requested []string
	for _, t := range r.Topics {
		if t.Topic != nil && *t.Topic != "" {
			requested = append(requested, *t.Topic)
		} else if it := img.Topics.TopicByID(t.TopicID); it != nil {
			requested = append(requested, it.Name)
		}
	}
	describable := h.authorizedTopics(ctx, req, kmsg.ACLOperationDescribe, requested)
	allowCreate := h.d.Broker.AutoCreateTopicsEnable && (r.Version < 4 || r.AllowAutoTopicCreation)
	var created, createDenied map[string]bool
	if allowCreate {
		var create []string
		for _, t := range r.Topics {
			if t.Topic == nil || *t.Topic == "" || !describable[*t.Topic] {
				continue
			}
			if img.Topics.Topic(*t.Topic) == nil && controller.ValidateTopicName(*t.Topic) == nil && !isInternalTopic(*t.Topic) {
				create = append(create, *t.Topic)
			}
		}
		if len(create) > 0 && !h.authorizedCluster(ctx, req, kmsg.ACLOperationCreate) {
			createDenied = map[string]bool{}
			creatable := h.authorizedTopics(ctx, req, kmsg.ACLOperationCreate, create)
			create = create[:0]
			for n, ok := range creatable {
				if ok {
					create = append(create, n)
				} else {
					createDenied[n] = true
				}
			}
			sort.Strings(create)
		}
		if len(create) > 0 {
			created = h.autoCreate(ctx, create)
			img = h.image()
		}
	}

	resp.ClusterID = &h.d.ClusterID
	resp.ControllerID = h.d.NodeID
	ids := make([]int32, 0, len(img.Brokers))
	for id := range img.Brokers {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, id := range ids {
		b := img.Brokers[id]
		if b.Fenced {
			continue
		}
		for _, ep := range b.Listeners {
			if ep.Name == req.Listener {
				rb := kmsg.NewMetadataResponseBroker()
				rb.NodeID, rb.Host, rb.Port, rb.Rack = id, ep.Host, int32(ep.Port), b.Rack
				resp.Brokers = append(resp.Brokers, rb)
			}
		}
	}

	all := r.Topics == nil || (r.Version == 0 && len(r.Topics) == 0)
	if all {
		names := make([]string, 0, img.Topics.Len())
		for name := range img.Topics.Names() {
			names = append(names, name)
		}
		sort.Strings(names)
		listable := h.authorizedTopics(ctx, req, kmsg.ACLOperationDescribe, names)
		for _, name := range names {
			if !listable[name] {
				continue
			}
			resp.Topics = append(resp.Topics, h.describeTopic(img, img.Topics.Topic(name)))
		}
		h.metadataAuthorizedOperations(ctx, req, r, resp)
		return resp, nil
	}
	for _, t := range r.Topics {
		if t.Topic == nil || *t.Topic == "" {
			// Named by id.
			it := img.Topics.TopicByID(t.TopicID)
			if it == nil {
				rt := kmsg.NewMetadataResponseTopic()
				rt.TopicID = t.TopicID
				rt.ErrorCode = kerr.UnknownTopicID.Code
				resp.Topics = append(resp.Topics, rt)
				continue
			}
			if !describable[it.Name] {
				rt := kmsg.NewMetadataResponseTopic()
				rt.TopicID = t.TopicID
				rt.ErrorCode = kerr.TopicAuthorizationFailed.Code
				resp.Topics = append(resp.Topics, rt)
				continue
			}
			resp.Topics = append(resp.Topics, h.describeTopic(img, it))
			continue
		}
		if !describable[*t.Topic] || createDenied[*t.Topic] {
			rt := kmsg.NewMetadataResponseTopic()
			rt.Topic = t.Topic
			rt.ErrorCode = kerr.TopicAuthorizationFailed.Code
			resp.Topics = append(resp.Topics, rt)
			continue
		}
		it := img.Topics.Topic(*t.Topic)
		if it != nil {
			resp.Topics = append(resp.Topics, h.describeTopic(img, it))
			continue
		}
		rt := kmsg.NewMetadataResponseTopic()
		rt.Topic = t.Topic
		rt.ErrorCode = kerr.UnknownTopicOrPartition.Code
		if created[*t.Topic] {
			// Created at the controller, not yet in this broker's image:
			// Kafka's answer for a topic being auto-created.
			rt.ErrorCode = kerr.LeaderNotAvailable.Code
		}
		if allowCreate && controller.ValidateTopicName(*t.Topic) != nil {
			rt.ErrorCode = kerr.InvalidTopicException.Code
		}
		resp.Topics = append(resp.Topics, rt)
	}
	h.metadataAuthorizedOperations(ctx, req, r, resp)
	return resp, nil
}

// metadataAuthorizedOperations fills the authorized operations r asks for
// (v8+), as Kafka's KafkaApis: the cluster's (v8-10 only), and those of
// each topic answered for a name the principal may describe. Topics it may
// not describe, and unknown ids, keep the omitted value.
func (h *Handlers) metadataAuthorizedOperations(ctx context.Context, req *network.Request, r *kmsg.MetadataRequest, resp *kmsg.MetadataResponse) {
	if r.Version < 8 {
		return
	}
	if r.Version <= 10 && r.IncludeClusterAuthorizedOperations {
		resp.AuthorizedOperations = h.clusterAuthorizedOperations(ctx, req)
	}
	if !r.IncludeTopicAuthorizedOperations {
		return
	}
	for i := range resp.Topics {
		t := &resp.Topics[i]
		if t.Topic == nil || t.ErrorCode == kerr.TopicAuthorizationFailed.Code || t.ErrorCode == kerr.UnknownTopicID.Code {
			continue
		}
		t.AuthorizedOperations = h.authorizedOperations(ctx, req, kmsg.ACLResourceTypeTopic, *t.Topic)
	}
}

// autoCreate creates topics and returns those that now exist (created or
// already there), which this broker's image may not show yet.
func (h *Handlers) autoCreate(ctx context.Context, names []string) map[string]bool {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version = createTopicsAPI.max
	req.TimeoutMillis = 30000
	for _, name := range names {
		t := kmsg.NewCreateTopicsRequestTopic()
		t.Topic, t.NumPartitions, t.ReplicationFactor = name, -1, -1
		req.Topics = append(req.Topics, t)
	}
	resp := h.d.Controller.CreateTopics(ctx, req)
	exist := map[string]bool{}
	for _, t := range resp.Topics {
		if t.ErrorCode != 0 && t.ErrorCode != kerr.TopicAlreadyExists.Code {
			h.d.Logger.Warn("auto-create topic failed", "topic", t.Topic, "err", kerr.ErrorForCode(t.ErrorCode))
			continue
		}
		exist[t.Topic] = true
	}
	return exist
}

func (h *Handlers) describeTopic(img *metadata.Image, t *metadata.Topic) kmsg.MetadataResponseTopic {
	rt := kmsg.NewMetadataResponseTopic()
	name := t.Name
	rt.Topic, rt.TopicID, rt.IsInternal = &name, t.ID, isInternalTopic(t.Name)
	ids := make([]int32, 0, t.NumPartitions())
	for id := range t.Partitions() {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, id := range ids {
		p := t.Partition(id)
		rp := kmsg.NewMetadataResponseTopicPartition()
		rp.Partition, rp.Leader, rp.LeaderEpoch = id, p.Leader, p.LeaderEpoch
		rp.Replicas, rp.ISR = p.Replicas, p.ISR
		rp.OfflineReplicas = []int32{}
		for _, rid := range p.Replicas {
			if b, ok := img.Brokers[rid]; !ok || b.Fenced {
				rp.OfflineReplicas = append(rp.OfflineReplicas, rid)
			}
		}
		if p.Leader < 0 {
			rp.ErrorCode = kerr.LeaderNotAvailable.Code
		}
		rt.Partitions = append(rt.Partitions, rp)
	}
	return rt
}

// isInternalTopic names the topics Kafka marks internal in metadata.
func isInternalTopic(name string) bool {
	return name == "__consumer_offsets" || name == "__transaction_state"
}
