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

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/network"
)

var deleteTopicsAPI = api{key: 20, min: 1, max: 6, handle: (*Handlers).deleteTopics}

func (h *Handlers) deleteTopics(ctx context.Context, req *network.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.DeleteTopicsRequest)
	if h.trustedAdmin(ctx, req) || h.authorizedCluster(ctx, req, kmsg.ACLOperationDelete) {
		return h.d.Controller.DeleteTopics(ctx, r), nil
	}
	allowed, denied := h.deletableTopics(ctx, req, r)
	resp := r.ResponseKind().(*kmsg.DeleteTopicsResponse)
	if len(allowed.TopicNames) > 0 || len(allowed.Topics) > 0 || len(denied) == 0 {
		resp = h.d.Controller.DeleteTopics(ctx, allowed)
	}
	resp.Topics = append(resp.Topics, denied...)
	return resp, nil
}

// deletableTopics splits r into what the controller is asked to delete
// (topics req's principal may delete, and those it may know to be
// missing) and the answers for the rest.
func (h *Handlers) deletableTopics(ctx context.Context, req *network.Request, r *kmsg.DeleteTopicsRequest) (*kmsg.DeleteTopicsRequest, []kmsg.DeleteTopicsResponseTopic) {
	img := h.image()
	topics := r.Topics
	if r.Version < 6 {
		topics = nil
		for _, n := range r.TopicNames {
			t := kmsg.NewDeleteTopicsRequestTopic()
			t.Topic = kmsg.StringPtr(n)
			topics = append(topics, t)
		}
	}
	var names, givenNames []string
	ids := map[[16]byte]int{}
	for _, t := range topics {
		switch {
		case t.Topic != nil && *t.Topic != "":
			names = append(names, *t.Topic)
			givenNames = append(givenNames, *t.Topic)
		case t.TopicID != [16]byte{}:
			ids[t.TopicID]++
			if it, ok := img.Topics.ByID[t.TopicID]; ok {
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
			_, known := img.Topics.ByName[name]
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
			if it, ok := img.Topics.ByID[t.TopicID]; ok && !deletable[it.Name] {
				var name *string
				if describable[it.Name] {
					name = kmsg.StringPtr(it.Name)
				}
				deny(name, t.TopicID)
				continue
			}
		}
		if r.Version < 6 {
			allowed.TopicNames = append(allowed.TopicNames, *t.Topic)
		} else {
			allowed.Topics = append(allowed.Topics, t)
		}
	}
	return &allowed, denied
}
