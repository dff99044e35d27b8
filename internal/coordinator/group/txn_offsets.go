package group

// Transactional offset commits (KIP-98's consume-transform-produce): a
// transactional producer commits a group's offsets with TxnOffsetCommit as
// part of its transaction. The offsets are written as a transactional batch
// of the producer and wait as the producer's open transaction until the
// transaction coordinator's marker reaches the partition: COMMIT moves them
// to the committed offsets, ABORT drops them. Until then an OffsetFetch with
// require_stable answers UNSTABLE_OFFSET_COMMIT for their partitions. This
// is Kafka's OffsetMetadataManager (commitTransactionalOffset,
// replayEndTransactionMarker).

import (
	"encoding/binary"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// stamp gives an offset commit its place in the partition's order.
func (s *Shard) stamp(c committed) committed {
	s.commitSeq++
	c.seq = s.commitSeq
	return c
}

// addTxnOffset records an offset of producerID's open transaction.
func (s *Shard) addTxnOffset(g *group, producerID int64, topic string, partition int32, c committed) {
	if g.txnOffsets == nil {
		g.txnOffsets = map[int64]map[string]map[int32]committed{}
	}
	byTopic := g.txnOffsets[producerID]
	if byTopic == nil {
		byTopic = map[string]map[int32]committed{}
		g.txnOffsets[producerID] = byTopic
	}
	ps := byTopic[topic]
	if ps == nil {
		ps = map[int32]committed{}
		byTopic[topic] = ps
	}
	ps[partition] = c
	groups := s.txnGroups[producerID]
	if groups == nil {
		groups = map[string]bool{}
		s.txnGroups[producerID] = groups
	}
	groups[g.id] = true
}

// hasTxnOffset reports whether an open transaction holds an offset of the
// partition (Kafka's hasPendingTransactionalOffsets).
func (g *group) hasTxnOffset(topic string, partition int32) bool {
	for _, byTopic := range g.txnOffsets {
		if _, ok := byTopic[topic][partition]; ok {
			return true
		}
	}
	return false
}

// hasTxnOffsets reports whether an open transaction holds any offset of the group.
func (g *group) hasTxnOffsets() bool {
	for _, byTopic := range g.txnOffsets {
		if len(byTopic) > 0 {
			return true
		}
	}
	return false
}

// dropTxnOffset deletes the partition's offset from every open transaction
// (an offset tombstone); the transactions stay open.
func (g *group) dropTxnOffset(topic string, partition int32) {
	for _, byTopic := range g.txnOffsets {
		if ps := byTopic[topic]; ps != nil {
			delete(ps, partition)
			if len(ps) == 0 {
				delete(byTopic, topic)
			}
		}
	}
}

type topicPartition struct {
	topic     string
	partition int32
}

// txnOnlyPartitions are the partitions with an open transaction's offset
// and no committed one, in order.
func (g *group) txnOnlyPartitions() []topicPartition {
	seen := map[topicPartition]bool{}
	var out []topicPartition
	for _, byTopic := range g.txnOffsets {
		for topic, ps := range byTopic {
			for p := range ps {
				tp := topicPartition{topic, p}
				if _, ok := g.offsets[topic][p]; ok || seen[tp] {
					continue
				}
				seen[tp] = true
				out = append(out, tp)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].topic != out[j].topic {
			return out[i].topic < out[j].topic
		}
		return out[i].partition < out[j].partition
	})
	return out
}

func txnCommitResponse(req *kmsg.TxnOffsetCommitRequest, code func(topic string, p kmsg.TxnOffsetCommitRequestTopicPartition) int16) *kmsg.TxnOffsetCommitResponse {
	resp := kmsg.NewPtrTxnOffsetCommitResponse()
	resp.Version = req.Version
	for _, t := range req.Topics {
		rt := kmsg.NewTxnOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, code(t.Topic, p)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// TxnCommitError is a TxnOffsetCommit answer with one error for every
// partition.
func TxnCommitError(req *kmsg.TxnOffsetCommitRequest, code int16) *kmsg.TxnOffsetCommitResponse {
	return txnCommitResponse(req, func(string, kmsg.TxnOffsetCommitRequestTopicPartition) int16 { return code })
}

// validateTxnCommit is Kafka's validateOffsetCommit for a transactional
// commit: v0-2 requests carry no member, so only a commit that names a
// member (or a generation) is checked against the group, and the group's
// state is not (no REBALANCE_IN_PROGRESS).
func (g *group) validateTxnCommit(req *kmsg.TxnOffsetCommitRequest) int16 {
	if g.state == Dead {
		return kerr.CoordinatorNotAvailable.Code
	}
	if c := g.consumer; c != nil && len(c.members) > 0 {
		var topics []kmsg.OffsetCommitRequestTopic
		for _, t := range req.Topics {
			rt := kmsg.NewOffsetCommitRequestTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetCommitRequestTopicPartition()
				rp.Partition = p.Partition
				rt.Partitions = append(rt.Partitions, rp)
			}
			topics = append(topics, rt)
		}
		code := c.validateCommit(req.MemberID, req.Generation, topics)
		if code == kerr.StaleMemberEpoch.Code {
			// A transactional producer knows ILLEGAL_GENERATION only.
			code = kerr.IllegalGeneration.Code
		}
		return code
	}
	if req.Generation < 0 && g.state == Empty {
		return 0
	}
	if req.Generation >= 0 || req.MemberID != "" || req.InstanceID != nil {
		if code := g.validateMember(req.MemberID, req.InstanceID); code != 0 {
			return code
		}
		if req.Generation != g.generation {
			return kerr.IllegalGeneration.Code
		}
	}
	return 0
}

// TxnOffsetCommit handles a TxnOffsetCommit request: its offsets are
// written as a transactional batch of the request's producer and become an
// open transaction's offsets once written (Result.Apply); the log checks the
// producer's epoch. Partitions of unknown topics are the handler's to
// refuse before.
func (s *Shard) TxnOffsetCommit(now int64, req *kmsg.TxnOffsetCommitRequest, respond Responder) Result {
	var r Result
	all := func(code int16) Result {
		r.reply(respond, TxnCommitError(req, code))
		return r
	}
	if req.Group == "" {
		return all(kerr.InvalidGroupID.Code)
	}
	if s.shares[req.Group] != nil {
		return all(kerr.GroupIDNotFound.Code)
	}
	g := s.groups[req.Group]
	created := false
	if g == nil {
		if req.Generation >= 0 {
			return all(kerr.IllegalGeneration.Code)
		}
		// A producer committing outside group management makes a simple
		// group, as a simple consumer's OffsetCommit does.
		g = newGroup(req.Group, now)
		created = true
	}
	if code := g.validateTxnCommit(req); code != 0 {
		return all(code)
	}
	type update struct {
		topic     string
		partition int32
		c         committed
	}
	var updates []update
	resp := txnCommitResponse(req, func(topic string, p kmsg.TxnOffsetCommitRequestTopicPartition) int16 {
		meta := ""
		if p.Metadata != nil {
			meta = *p.Metadata
		}
		if javaLength(meta) > s.cfg.OffsetMetadataMaxBytes {
			return kerr.OffsetMetadataTooLarge.Code
		}
		c := committed{offset: p.Offset, leaderEpoch: p.LeaderEpoch, metadata: meta, commitTs: now, expireTs: -1}
		if req.Version < 2 {
			c.leaderEpoch = -1
		}
		updates = append(updates, update{topic, p.Partition, c})
		r.Records = append(r.Records, offsetRecord(g.id, topic, p.Partition, c))
		s.cfg.Meters.OffsetsCommitted(1)
		return 0
	})
	r.Transaction = &Transaction{ProducerID: req.ProducerID, ProducerEpoch: req.ProducerEpoch}
	r.Apply = func() {
		if created && s.groups[g.id] == nil {
			s.groups[g.id] = g
		}
		for _, u := range updates {
			s.addTxnOffset(g, req.ProducerID, u.topic, u.partition, s.stamp(u.c))
		}
	}
	r.reply(respond, resp)
	r.Failed = func(code int16) []Reply {
		return []Reply{{To: respond, Resp: TxnCommitError(req, code)}}
	}
	return r
}

// ReplayTransactional applies a record of a transactional batch of
// producerID while the shard loads: an offset commit joins the producer's
// open transaction; other records apply as they do outside transactions.
func (s *Shard) ReplayTransactional(now int64, producerID int64, key, value []byte) error {
	if len(key) >= 2 {
		if v := int16(binary.BigEndian.Uint16(key)); v == 0 || v == 1 {
			return s.replayOffsetCommit(now, producerID, key, value)
		}
	}
	return s.Replay(now, key, value)
}

// ReplayEndTxn applies a transaction marker of producerID, loaded or just
// written (Kafka's replayEndTransactionMarker). COMMIT makes the
// transaction's offsets committed, except where a commit written after the
// transaction's offset already replaced it: the later record wins, as
// compaction of the partition would have it. ABORT drops them.
func (s *Shard) ReplayEndTxn(producerID int64, commit bool) {
	groups := s.txnGroups[producerID]
	delete(s.txnGroups, producerID)
	ids := make([]string, 0, len(groups))
	for id := range groups {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		g := s.groups[id]
		if g == nil {
			continue
		}
		byTopic, ok := g.txnOffsets[producerID]
		if !ok {
			continue
		}
		delete(g.txnOffsets, producerID)
		if !commit {
			continue
		}
		for topic, ps := range byTopic {
			for p, c := range ps {
				if old, ok := g.offsets[topic][p]; ok && old.seq > c.seq {
					continue
				}
				g.setOffset(topic, p, c)
			}
		}
	}
}
