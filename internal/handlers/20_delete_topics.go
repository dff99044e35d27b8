package handlers

// DeleteTopics (key 20), v1-6 (v1 is Kafka 4.0's floor; v6 names topics by
// name or id). The controller commits RemoveTopicRecords; each broker then
// renames the partition directories to *-delete and removes them in the
// background (replica.Manager.Publish, log.Manager.Delete).
//
// Deleting needs DELETE on the cluster, else DELETE on each topic, checked
// as Kafka's ControllerApis does so as not to reveal which topics exist: a
// topic named without DESCRIBE is TOPIC_AUTHORIZATION_FAILED whether it
// exists or not; with DESCRIBE, an unknown one is
// UNKNOWN_TOPIC_OR_PARTITION and a known one without DELETE
// TOPIC_AUTHORIZATION_FAILED. A topic id that resolves to a topic without
// DELETE is TOPIC_AUTHORIZATION_FAILED, its name answered only with
// DESCRIBE; an unknown id stays UNKNOWN_TOPIC_ID. Names and ids given
// twice are left for the controller to reject.
//
// The client's controller_mutation_rate quota counts the partitions of
// each topic; from v5 on a topic over it gets THROTTLING_QUOTA_EXCEEDED
// (quotas.go).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/metadata"
	"gregor/internal/network"
)

var deleteTopicsAPI = api{key: 20, min: 1, max: 6, handle: (*Handlers).deleteTopics}

func (h *Handlers) deleteTopics(ctx context.Context, req *network.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.DeleteTopicsRequest)
	allowed := r
	var denied []kmsg.DeleteTopicsResponseTopic
	if !h.trustedAdmin(ctx, req) && !h.authorizedCluster(ctx, req, kmsg.ACLOperationDelete) {
		allowed, denied = h.deletableTopics(ctx, req, r)
	}
	mq := h.mutationQuota(ctx, req, 5)
	allowed, throttled, charged := h.admitDeleteTopics(mq, allowed)
	resp := r.ResponseKind().(*kmsg.DeleteTopicsResponse)
	if len(allowed.TopicNames) > 0 || len(allowed.Topics) > 0 || (len(denied) == 0 && len(throttled) == 0) {
		resp = h.d.Controller.DeleteTopics(ctx, allowed)
	}
	for _, t := range resp.Topics {
		name, ok := charged.byID[t.TopicID]
		if t.Topic != nil {
			name, ok = *t.Topic, true
		}
		if n, counted := charged.partitions[name]; ok && counted {
			mq.settle(n, t.ErrorCode == 0)
		}
	}
	mq.finish()
	resp.Topics = append(resp.Topics, denied...)
	resp.Topics = append(resp.Topics, throttled...)
	return resp, nil
}

// deleteCharges are the partitions the controller mutation quota counted
// per topic to delete, and the names of the topics named by id.
type deleteCharges struct {
	partitions map[string]int
	byID       map[[16]byte]string
}

// admitDeleteTopics asks the controller mutation quota about each topic
// of r (by the partitions the image knows it to have; unknown topics are
// the controller's to answer): it returns the topics to delete, the
// answers of those it refuses, and what it counted.
func (h *Handlers) admitDeleteTopics(mq *mutations, r *kmsg.DeleteTopicsRequest) (*kmsg.DeleteTopicsRequest, []kmsg.DeleteTopicsResponseTopic, deleteCharges) {
	charged := deleteCharges{partitions: map[string]int{}, byID: map[[16]byte]string{}}
	if mq == nil {
		return r, nil, charged
	}
	img := h.image()
	topics := deleteTopicsOf(r)
	var names []string
	for _, t := range topics {
		if t.Topic != nil {
			names = append(names, *t.Topic)
		} else if it := img.Topics.TopicByID(t.TopicID); it != nil {
			names = append(names, it.Name)
		}
	}
	dup := duplicates(names) // refused by the controller: not counted
	admitted := *r
	admitted.TopicNames, admitted.Topics = nil, nil
	var throttled []kmsg.DeleteTopicsResponseTopic
	for _, t := range topics {
		var it *metadata.Topic
		if t.Topic != nil {
			it = img.Topics.Topic(*t.Topic)
		} else {
			it = img.Topics.TopicByID(t.TopicID)
		}
		n := 0
		if it != nil && !dup[it.Name] {
			n = it.NumPartitions()
		}
		if !mq.admit(n) {
			rt := kmsg.NewDeleteTopicsResponseTopic()
			rt.Topic, rt.TopicID, rt.ErrorCode = t.Topic, t.TopicID, kerr.ThrottlingQuotaExceeded.Code
			rt.ErrorMessage = kmsg.StringPtr(throttledTopicMessage)
			throttled = append(throttled, rt)
			continue
		}
		if n > 0 {
			charged.partitions[it.Name] = n
			charged.byID[it.ID] = it.Name
		}
		addDeleteTopic(&admitted, t)
	}
	return &admitted, throttled, charged
}

// deletableTopics splits r into what the controller is asked to delete
// (topics req's principal may delete, and those it may know to be
// missing) and the answers for the rest.
func (h *Handlers) deletableTopics(ctx context.Context, req *network.Request, r *kmsg.DeleteTopicsRequest) (*kmsg.DeleteTopicsRequest, []kmsg.DeleteTopicsResponseTopic) {
	img := h.image()
	topics := deleteTopicsOf(r)
	var names, givenNames []string
	ids := map[[16]byte]int{}
	for _, t := range topics {
		switch {
		case t.Topic != nil && *t.Topic != "":
			names = append(names, *t.Topic)
			givenNames = append(givenNames, *t.Topic)
		case t.TopicID != [16]byte{}:
			ids[t.TopicID]++
			if it := img.Topics.TopicByID(t.TopicID); it != nil {
				names = append(names, it.Name)
			}
		}
	}
	describable := h.authorizedTopics(ctx, req, kmsg.ACLOperationDescribe, names)
	deletable := h.authorizedTopics(ctx, req, kmsg.ACLOperationDelete, names)
	dupNames := duplicates(givenNames)

	allowed := *r
	allowed.TopicNames, allowed.Topics = nil, nil
	var denied []kmsg.DeleteTopicsResponseTopic
	deny := func(name *string, id [16]byte) {
		rt := kmsg.NewDeleteTopicsResponseTopic()
		rt.Topic, rt.TopicID, rt.ErrorCode = name, id, kerr.TopicAuthorizationFailed.Code
		rt.ErrorMessage = kmsg.StringPtr("Topic authorization failed.")
		denied = append(denied, rt)
	}
	for _, t := range topics {
		switch {
		case t.Topic != nil && *t.Topic != "":
			name := *t.Topic
			known := img.Topics.Topic(name) != nil
			switch {
			case dupNames[name]:
			case !describable[name]:
				deny(t.Topic, [16]byte{})
				continue
			case known && !deletable[name]:
				deny(t.Topic, [16]byte{})
				continue
			}
		case t.TopicID != [16]byte{} && ids[t.TopicID] == 1:
			if it := img.Topics.TopicByID(t.TopicID); it != nil && !deletable[it.Name] {
				var name *string
				if describable[it.Name] {
					name = kmsg.StringPtr(it.Name)
				}
				deny(name, t.TopicID)
				continue
			}
		}
		addDeleteTopic(&allowed, t)
	}
	return &allowed, denied
}

// deleteTopicsOf is the topics a DeleteTopics request names, in the v6+
// form (before v6 the request has names only).
func deleteTopicsOf(r *kmsg.DeleteTopicsRequest) []kmsg.DeleteTopicsRequestTopic {
	if r.Version >= 6 {
		return r.Topics
	}
	topics := make([]kmsg.DeleteTopicsRequestTopic, 0, len(r.TopicNames))
	for _, n := range r.TopicNames {
		t := kmsg.NewDeleteTopicsRequestTopic()
		t.Topic = kmsg.StringPtr(n)
		topics = append(topics, t)
	}
	return topics
}

// addDeleteTopic adds a topic to a DeleteTopics request in the form of the
// request's version.
func addDeleteTopic(r *kmsg.DeleteTopicsRequest, t kmsg.DeleteTopicsRequestTopic) {
	if r.Version < 6 {
		r.TopicNames = append(r.TopicNames, *t.Topic)
	} else {
		r.Topics = append(r.Topics, t)
	}
}
