package handlers

// TxnOffsetCommit (key 28), versions 0-5: a transactional producer commits a
// group's offsets inside its transaction (consume-transform-produce). The
// request goes to the group's coordinator, which writes the offsets as a
// transactional batch of the producer; they are committed by the
// transaction's COMMIT marker and dropped by ABORT (group.Shard
// TxnOffsetCommit, completeGroupTransaction). Partitions of unknown topics
// or beyond a topic's partitions answer UNKNOWN_TOPIC_OR_PARTITION and are
// not written, as in Kafka's handler. v0-1 clients predate
// COORDINATOR_LOAD_IN_PROGRESS and get COORDINATOR_NOT_AVAILABLE instead.
// v5 while transaction.version is 2 is a transactions v2 producer (KIP-890
// part 2), which sends no AddOffsetsToTxn: the group's __consumer_offsets
// partition is added to its transaction here first (AddPartitionsToTxn v5 to
// the transaction coordinator), and the offsets are written only once it is.
// A coordinator that cannot tell yet (CONCURRENT_TRANSACTIONS, moving)
// answers COORDINATOR_NOT_AVAILABLE, which the producer retries, as Kafka's
// group coordinator normalizes it; PRODUCER_FENCED is INVALID_PRODUCER_EPOCH.
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
	"gregor/internal/coordinator/txn"
	"gregor/internal/network"
)

var txnOffsetCommitAPI = api{key: 28, min: 0, max: 5, handle: (*Handlers).txnOffsetCommit}

// txnOffsetCommitTV2Version is the first TxnOffsetCommit version of
// transactions v2 producers (KIP-890 part 2).
const txnOffsetCommitTV2Version = 5

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
	if len(known.Topics) > 0 && r.Version >= txnOffsetCommitTV2Version && h.transactionsV2() {
		if code := h.addOffsetsPartition(ctx, r); code != 0 {
			for _, t := range known.Topics {
				for _, p := range t.Partitions {
					codes[tp{t.Topic, p.Partition}] = code
				}
			}
			known.Topics = nil
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

// addOffsetsPartition adds the group's __consumer_offsets partition to the
// producer's transaction for a transactions v2 TxnOffsetCommit and returns
// the error code its partitions get (0: added).
func (h *Handlers) addOffsetsPartition(ctx context.Context, r *kmsg.TxnOffsetCommitRequest) int16 {
	gp := h.groupPartition(r.Group)
	topics := []kmsg.AddPartitionsToTxnRequestTransactionTopic{{Topic: OffsetsTopic, Partitions: []int32{gp}}}
	add := func() map[txn.TopicPartition]int16 {
		return h.verifyAtCoordinator(ctx, r.TransactionalID, r.ProducerID, r.ProducerEpoch, topics, true)
	}
	code := h.retryConcurrentAdd(ctx, add(), add)[txn.TopicPartition{Topic: OffsetsTopic, Partition: gp}]
	switch kerr.ErrorForCode(code) {
	case kerr.ProducerFenced:
		return kerr.InvalidProducerEpoch.Code
	case kerr.ConcurrentTransactions, kerr.CoordinatorLoadInProgress, kerr.NotCoordinator, kerr.NetworkException, kerr.UnknownTopicOrPartition:
		return kerr.CoordinatorNotAvailable.Code
	}
	return code
}
