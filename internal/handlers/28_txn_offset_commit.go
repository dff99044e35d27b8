package handlers

// TxnOffsetCommit (key 28), versions 0-4 (v5, KIP-890's implicit
// verification, is not advertised): a transactional producer commits a
// group's offsets inside its transaction (consume-transform-produce). The
// request goes to the group's coordinator, which writes the offsets as a
// transactional batch of the producer; they are committed by the
// transaction's COMMIT marker and dropped by ABORT (group.Shard
// TxnOffsetCommit, completeGroupTransaction). Partitions of unknown topics
// or beyond a topic's partitions answer UNKNOWN_TOPIC_OR_PARTITION and are
// not written, as in Kafka's handler. v0-1 clients predate
// COORDINATOR_LOAD_IN_PROGRESS and get COORDINATOR_NOT_AVAILABLE instead.
//
// Authorization (Kafka's): WRITE on the transactional id
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED) and READ on the group
// (GROUP_AUTHORIZATION_FAILED) for every partition, then READ on each topic
// (TOPIC_AUTHORIZATION_FAILED on its partitions, the others committed).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/coordinator/group"
	"gregor/internal/network"
)

var txnOffsetCommitAPI = api{key: 28, min: 0, max: 4, handle: (*Handlers).txnOffsetCommit}

func (h *Handlers) txnOffsetCommit(ctx context.Context, req *network.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.TxnOffsetCommitRequest)
	type tp struct {
		topic     string
		partition int32
	}
	codes := map[tp]int16{}
	known := *r
	known.Topics = nil
	img := h.image()
	var refused func(topic string) int16
	switch {
	case !h.authorized(ctx, req, kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTransactionalId, r.TransactionalID):
		refused = func(string) int16 { return kerr.TransactionalIDAuthorizationFailed.Code }
	case !h.authorized(ctx, req, kmsg.ACLOperationRead, kmsg.ACLResourceTypeGroup, r.Group):
		refused = func(string) int16 { return kerr.GroupAuthorizationFailed.Code }
	default:
		var names []string
		for _, t := range r.Topics {
			names = append(names, t.Topic)
		}
		readable := h.authorizedTopics(ctx, req, kmsg.ACLOperationRead, names)
		refused = func(topic string) int16 {
			if readable[topic] {
				return 0
			}
			return kerr.TopicAuthorizationFailed.Code
		}
	}
	for _, t := range r.Topics {
		if code := refused(t.Topic); code != 0 {
			for _, p := range t.Partitions {
				codes[tp{t.Topic, p.Partition}] = code
			}
			continue
		}
		kt := t
		kt.Partitions = nil
		meta := img.Topics.Topic(t.Topic)
		for _, p := range t.Partitions {
			if meta == nil || meta.Partition(p.Partition) == nil {
				codes[tp{t.Topic, p.Partition}] = kerr.UnknownTopicOrPartition.Code
				continue
			}
			kt.Partitions = append(kt.Partitions, p)
		}
		if len(kt.Partitions) > 0 {
			known.Topics = append(known.Topics, kt)
		}
	}
	if len(known.Topics) > 0 {
		respond, wait := awaitReply()
		var got *kmsg.TxnOffsetCommitResponse
		if code := h.onGroupShard(ctx, r.Group, func(s *group.Shard, w group.Writer) {
			_ = finish(w, s.TxnOffsetCommit(nowMs(), &known, respond))
		}); code != 0 {
			got = group.TxnCommitError(&known, code)
		} else {
			resp, err := wait(ctx)
			if err != nil {
				return nil, err
			}
			got = resp.(*kmsg.TxnOffsetCommitResponse)
		}
		for _, t := range got.Topics {
			for _, p := range t.Partitions {
				codes[tp{t.Topic, p.Partition}] = p.ErrorCode
			}
		}
	}
	resp := kmsg.NewPtrTxnOffsetCommitResponse()
	resp.Version = r.Version
	for _, t := range r.Topics {
		rt := kmsg.NewTxnOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, codes[tp{t.Topic, p.Partition}]
			if r.Version < 2 && rp.ErrorCode == kerr.CoordinatorLoadInProgress.Code {
				rp.ErrorCode = kerr.CoordinatorNotAvailable.Code
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}
