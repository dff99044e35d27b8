package group

import (
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (g *group) setOffset(topic string, partition int32, c committed) {
	ps := g.offsets[topic]
	if ps == nil {
		ps = map[int32]committed{}
		g.offsets[topic] = ps
	}
	ps[partition] = c
}

func (g *group) deleteOffset(topic string, partition int32) {
	if ps := g.offsets[topic]; ps != nil {
		delete(ps, partition)
		if len(ps) == 0 {
			delete(g.offsets, topic)
		}
	}
}

func commitResponse(req *kmsg.OffsetCommitRequest, code func(topic string, p kmsg.OffsetCommitRequestTopicPartition) int16) *kmsg.OffsetCommitResponse {
	resp := kmsg.NewPtrOffsetCommitResponse()
	resp.Version = req.Version
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, code(t.Topic, p)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// validateCommit is Kafka's ClassicGroup.validateOffsetCommit: commits from
// outside the group (generation -1, no member id) are accepted while the
// group is empty; a member's commit must match its generation.
func (g *group) validateCommit(memberID string, instanceID *string, generation int32, topics []kmsg.OffsetCommitRequestTopic) int16 {
	if g.state == Dead {
		return kerr.CoordinatorNotAvailable.Code
	}
	if c := g.consumer; c != nil && len(c.members) > 0 {
		return c.validateCommit(memberID, generation, topics)
	}
	if generation < 0 && g.state == Empty {
		return 0
	}
	if code := g.validateMember(memberID, instanceID); code != 0 {
		return code
	}
	if generation != g.generation {
		return kerr.IllegalGeneration.Code
	}
	if g.state == CompletingRebalance {
		// The member knows the new generation from its join answer but has
		// no assignment yet.
		return kerr.RebalanceInProgress.Code
	}
	return 0
}

// javaLength is a string's length as Java's String.length counts it (UTF-16
// code units): offset.metadata.max.bytes is checked against that.
func javaLength(s string) int {
	n := 0
	for _, r := range s {
		n++
		if r >= 0x10000 {
			n++
		}
	}
	return n
}

// OffsetCommit handles an OffsetCommit request. The offsets change only
// once their records are written (Result.Apply).
func (s *Shard) OffsetCommit(now int64, req *kmsg.OffsetCommitRequest, respond Responder) Result {
	var r Result
	all := func(code int16) Result {
		r.reply(respond, commitResponse(req, func(string, kmsg.OffsetCommitRequestTopicPartition) int16 { return code }))
		return r
	}
	// The empty group id is a valid group for commits (Kafka keeps it for
	// old clients; only JoinGroup and the other membership APIs refuse it).
	if s.shares[req.Group] != nil {
		// A share group keeps its offsets in its share-partitions.
		return all(kerr.GroupIDNotFound.Code)
	}
	g := s.groups[req.Group]
	created := false
	if g == nil {
		if req.Generation >= 0 {
			if req.Version >= 9 {
				return all(kerr.GroupIDNotFound.Code)
			}
			return all(kerr.IllegalGeneration.Code)
		}
		// A simple consumer's commit creates an empty group holding offsets.
		g = newGroup(req.Group, now)
		created = true
	}
	if code := g.validateCommit(req.MemberID, req.InstanceID, req.Generation, req.Topics); code != 0 {
		return all(code)
	}
	if m := g.members[req.MemberID]; m != nil && (g.state == Stable || g.state == PreparingRebalance) {
		m.heartbeatDue = now + int64(m.sessionTimeoutMs)
	}
	expire := int64(-1)
	if req.Version >= 2 && req.Version <= 4 && req.RetentionTimeMillis >= 0 {
		expire = now + req.RetentionTimeMillis
	}
	type update struct {
		topic     string
		partition int32
		c         committed
	}
	var updates []update
	resp := commitResponse(req, func(topic string, p kmsg.OffsetCommitRequestTopicPartition) int16 {
		meta := ""
		if p.Metadata != nil {
			meta = *p.Metadata
		}
		if javaLength(meta) > s.cfg.OffsetMetadataMaxBytes {
			return kerr.OffsetMetadataTooLarge.Code
		}
		c := committed{offset: p.Offset, leaderEpoch: p.LeaderEpoch, metadata: meta, commitTs: now, expireTs: expire}
		if req.Version < 6 {
			c.leaderEpoch = -1
		}
		updates = append(updates, update{topic, p.Partition, c})
		r.Records = append(r.Records, offsetRecord(g.id, topic, p.Partition, c))
		s.cfg.Meters.OffsetsCommitted(1)
		return 0
	})
	r.Apply = func() {
		if created && s.groups[g.id] == nil {
			s.groups[g.id] = g
		}
		for _, u := range updates {
			g.setOffset(u.topic, u.partition, s.stamp(u.c))
		}
	}
	r.reply(respond, resp)
	r.Failed = func(code int16) []Reply {
		return []Reply{{To: respond, Resp: commitResponse(req, func(string, kmsg.OffsetCommitRequestTopicPartition) int16 { return code })}}
	}
	return r
}

// FetchOffsets answers one group of an OffsetFetch: topics nil means every
// committed offset. Partitions without a commit answer offset -1.
//
// requireStable is the request's require_stable (v7+): a partition with an
// offset in an open transaction (TxnOffsetCommit written, marker not yet)
// answers UNSTABLE_OFFSET_COMMIT, offset -1, and the group no error, as
// Kafka's OffsetMetadataManager does; a consumer retries until the
// transaction ends. Without require_stable the committed offset is
// answered. Kafka answers require_stable with a write operation, so it sees
// the shard's writes not yet committed; here a write becomes visible only
// once committed and the shard runs one operation at a time, so every fetch
// already sees all of them.
func (s *Shard) FetchOffsets(groupID string, topics []kmsg.OffsetFetchRequestGroupTopic, requireStable bool) (code int16, out []kmsg.OffsetFetchResponseGroupTopic) {
	if s.shares[groupID] != nil {
		return kerr.GroupIDNotFound.Code, nil
	}
	g := s.groups[groupID]
	if g != nil && g.state == Dead {
		g = nil
	}
	partition := func(topic string, p int32) kmsg.OffsetFetchResponseGroupTopicPartition {
		rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch = p, -1, -1
		empty := ""
		rp.Metadata = &empty
		if g != nil && requireStable && g.hasTxnOffset(topic, p) {
			rp.ErrorCode = kerr.UnstableOffsetCommit.Code
		} else if g != nil {
			if c, ok := g.offsets[topic][p]; ok {
				meta := c.metadata
				rp.Offset, rp.LeaderEpoch, rp.Metadata = c.offset, c.leaderEpoch, &meta
			}
		}
		return rp
	}
	if topics == nil {
		if g == nil {
			return 0, []kmsg.OffsetFetchResponseGroupTopic{}
		}
		names := make([]string, 0, len(g.offsets))
		for t := range g.offsets {
			names = append(names, t)
		}
		sort.Strings(names)
		for _, t := range names {
			rt := kmsg.NewOffsetFetchResponseGroupTopic()
			rt.Topic = t
			ps := make([]int32, 0, len(g.offsets[t]))
			for p := range g.offsets[t] {
				ps = append(ps, p)
			}
			sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
			for _, p := range ps {
				rt.Partitions = append(rt.Partitions, partition(t, p))
			}
			out = append(out, rt)
		}
		return 0, out
	}
	for _, t := range topics {
		rt := kmsg.NewOffsetFetchResponseGroupTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rt.Partitions = append(rt.Partitions, partition(t.Topic, p))
		}
		out = append(out, rt)
	}
	return 0, out
}

// OffsetDelete handles an OffsetDelete request: offsets of topics the group
// still consumes cannot be deleted.
func (s *Shard) OffsetDelete(req *kmsg.OffsetDeleteRequest) (*kmsg.OffsetDeleteResponse, Result) {
	var r Result
	resp := kmsg.NewPtrOffsetDeleteResponse()
	resp.Version = req.Version
	if req.Group == "" {
		resp.ErrorCode = kerr.InvalidGroupID.Code
		return resp, r
	}
	if s.shares[req.Group] != nil {
		resp.ErrorCode = kerr.GroupIDNotFound.Code
		return resp, r
	}
	g := s.groups[req.Group]
	if g == nil || g.state == Dead {
		resp.ErrorCode = kerr.GroupIDNotFound.Code
		return resp, r
	}
	subscribed := map[string]bool{}
	if g.state != Empty {
		topics, ok := g.subscribedTopics()
		if !ok {
			resp.ErrorCode = kerr.NonEmptyGroup.Code
			return resp, r
		}
		subscribed = topics
	}
	type tp struct {
		topic     string
		partition int32
	}
	var deletes []tp
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetDeleteResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetDeleteResponseTopicPartition()
			rp.Partition = p.Partition
			if subscribed[t.Topic] {
				rp.ErrorCode = kerr.GroupSubscribedToTopic.Code
			} else if _, ok := g.offsets[t.Topic][p.Partition]; ok || g.hasTxnOffset(t.Topic, p.Partition) {
				// The tombstone deletes an open transaction's offset too.
				deletes = append(deletes, tp{t.Topic, p.Partition})
				r.Records = append(r.Records, Record{Key: offsetKey(g.id, t.Topic, p.Partition)})
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	r.Apply = func() {
		for _, d := range deletes {
			g.deleteOffset(d.topic, d.partition)
			g.dropTxnOffset(d.topic, d.partition)
		}
	}
	return resp, r
}

// expireOffsets drops offsets older than offsets.retention.minutes (Kafka's
// KIP-211 rules): for an empty group, counted from when it became empty (or
// the commit, if later); for a consumer group, only offsets of topics it no
// longer subscribes to, counted from the commit. An explicit expiry
// (OffsetCommit v2-v4 retention) wins. An empty group left with no offsets
// is deleted. An offset with an open transaction's offset for its partition
// does not expire, and a group with an open transaction is not deleted.
func (s *Shard) expireOffsets(now int64, r *Result) {
	for _, id := range s.sortedGroupIDs() {
		g := s.groups[id]
		if g.consumer != nil && len(g.members) == 0 {
			s.expireConsumerOffsets(now, g, r)
			continue
		}
		var subscribed map[string]bool
		if g.state != Empty {
			topics, ok := g.subscribedTopics()
			if !ok || g.state != Stable {
				continue
			}
			subscribed = topics
		}
		for topic, ps := range g.offsets {
			if subscribed[topic] {
				continue
			}
			for p, c := range ps {
				base := c.commitTs
				if g.state == Empty {
					base = max(base, g.stateTimestamp)
				}
				expired := now-base >= s.cfg.OffsetsRetentionMs
				if c.expireTs >= 0 {
					expired = now >= c.expireTs
				}
				if expired && !g.hasTxnOffset(topic, p) {
					r.Records = append(r.Records, Record{Key: offsetKey(g.id, topic, p)})
					g.deleteOffset(topic, p)
				}
			}
		}
		if g.state == Empty && len(g.offsets) == 0 && len(g.pending) == 0 && len(g.txnOffsets) == 0 {
			r.Records = append(r.Records, Record{Key: groupKey(g.id)})
			g.transition(Dead, now)
			delete(s.groups, g.id)
		}
	}
}
