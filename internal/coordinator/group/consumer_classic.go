package group

// Classic members inside a consumer group (Kafka 4.0's mixed groups): a
// member speaking JoinGroup/SyncGroup/Heartbeat/LeaveGroup with the
// "consumer" protocol type joins a consumer group as any member does. Its
// subscription comes from its protocol metadata, the server-side assignor
// gives it partitions, and its JoinGroup is answered at once with its member
// epoch as the generation (it is never the leader, so it assigns nothing);
// its SyncGroup returns its current assignment in the consumer protocol's
// format. When its assignment must change, its heartbeats answer
// REBALANCE_IN_PROGRESS and its next join moves it on: a join reports what
// it owns (as the subscription's owned partitions), which is how it revokes.

import (
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// classicMemberFor finds the classic member a SyncGroup, Heartbeat or
// LeaveGroup names (Kafka's validateConsumerGroupMember and
// throwIfMemberDoesNotUseClassicProtocol).
func (c *consumerGroup) classicMemberFor(memberID string, instanceID *string) (*cmember, int16) {
	var m *cmember
	if instanceID == nil {
		m = c.members[memberID]
	} else if id, ok := c.static[*instanceID]; ok {
		m = c.members[id]
		if m != nil && m.id != memberID {
			return nil, kerr.FencedInstanceID.Code
		}
	}
	if m == nil || m.classic == nil {
		return nil, kerr.UnknownMemberID.Code
	}
	return m, 0
}

// waitingOnUnreleased is whether a partition of the member's target is
// still held by another member (Kafka's waitingOnUnreleasedPartition).
func (c *consumerGroup) waitingOnUnreleased(m *cmember) bool {
	if m.state != memberUnreleasedPartition {
		return false
	}
	for p := range c.target[m.id] {
		if !m.assigned[p] && c.heldByOther(p, m.id) {
			return true
		}
	}
	return false
}

// startJoinTimer starts a classic member's join timer unless it runs.
func startJoinTimer(m *cmember, now int64) {
	if m.joinDue == 0 {
		m.joinDue = now + int64(m.rebalanceTimeoutMs)
	}
}

// classicJoinConsumerGroup handles a JoinGroup to a consumer group with
// members (Kafka's classicGroupJoinToConsumerGroup).
func (s *Shard) classicJoinConsumerGroup(now int64, g *group, req *kmsg.JoinGroupRequest, protocols []protocol,
	clientID, clientHost string, respond Responder) Result {
	var r Result
	fail := func(code int16) Result {
		r.reply(respond, joinError(req.Version, "", code))
		return r
	}
	c := g.consumer
	memberID := req.MemberID
	unknown := memberID == ""
	if unknown {
		memberID = s.cfg.NewMemberID(clientID)
	}
	if c.members[memberID] == nil && s.cfg.ConsumerMaxSize > 0 && len(c.members) >= int(s.cfg.ConsumerMaxSize) {
		return fail(kerr.GroupMaxSizeReached.Code)
	}
	if !c.supportsClassicProtocols(req.ProtocolType, protocols) {
		return fail(kerr.InconsistentGroupProtocol.Code)
	}
	if unknown && req.InstanceID == nil && req.Version >= 4 {
		// As in a classic group the client must come back with the id, but
		// the consumer group remembers nothing of it until then.
		r.reply(respond, joinError(req.Version, memberID, kerr.MemberIDRequired.Code))
		return r
	}
	// Every protocol carries the same subscription; Kafka reads the first.
	meta, err := readConsumerSubscription(protocols[0].metadata)
	if err != nil {
		return fail(kerr.UnknownServerError.Code)
	}

	ch := s.startChange(g.id)
	bump, replacedConsumer := false, false
	var m *cmember
	if req.InstanceID == nil {
		m = c.members[memberID]
	} else {
		var old *cmember
		if id, ok := c.static[*req.InstanceID]; ok {
			old = c.members[id]
		}
		switch {
		case !unknown && old == nil:
			return fail(kerr.UnknownMemberID.Code)
		case !unknown && old.id != memberID:
			return fail(kerr.FencedInstanceID.Code)
		case unknown && old != nil:
			// A restarted static member takes its predecessor's place and
			// partitions, whichever protocol that one used.
			replacedConsumer = old.classic == nil
			s.replaceStaticConsumerMember(c, old, memberID)
		}
		m = c.members[memberID]
	}
	if m == nil {
		m = &cmember{id: memberID, state: memberStable, assigned: assignment{}, revoking: assignment{}}
		c.members[memberID] = m
		if req.InstanceID != nil {
			c.static[*req.InstanceID] = memberID
		}
		bump = true
	}

	rebalanceTimeout := req.RebalanceTimeoutMillis
	if rebalanceTimeout <= 0 {
		rebalanceTimeout = req.SessionTimeoutMillis
	}
	m.classic = &classicMember{sessionTimeoutMs: req.SessionTimeoutMillis, protocols: protocols}
	m.clientID, m.clientHost, m.rebalanceTimeoutMs = clientID, clientHost, rebalanceTimeout
	if req.InstanceID != nil {
		m.instanceID = req.InstanceID
	}
	if meta.Rack != nil {
		m.rackID = meta.Rack
	}
	topicNames := append([]string{}, meta.Topics...)
	sort.Strings(topicNames)
	if !sameStrings(topicNames, m.topicNames) {
		m.topicNames = topicNames
		bump = true
	}
	topics := s.topics()
	s.updateTarget(c, topics, bump)
	c.reconcile(m, ownedFromSubscription(meta, topics), now)
	m.sessionDue = now + int64(req.SessionTimeoutMillis)
	m.joinDue, m.syncDue = 0, now+int64(rebalanceTimeout)

	if replacedConsumer && s.canDowngradeReplaced(c) {
		// The member replaced the last one using the consumer protocol:
		// the group turns classic, the member keeping the partitions it
		// took over, without a rebalance.
		s.toClassic(now, g, "", ch)
	}

	resp := kmsg.NewPtrJoinGroupResponse()
	resp.Version = req.Version
	resp.MemberID, resp.Generation = memberID, m.epoch
	pt, pn := "consumer", protocols[0].name
	resp.ProtocolType, resp.Protocol = &pt, &pn
	s.finish(ch, &r)
	r.reply(respond, resp)
	r.Failed = func(code int16) []Reply {
		return append(ch.replies, Reply{To: respond, Resp: joinError(req.Version, "", code)})
	}
	return r
}

// classicSyncConsumerGroup handles a SyncGroup to a consumer group (Kafka's
// classicGroupSyncToConsumerGroup): the member gets its current
// assignment, unless the group moved on and it must rejoin first.
func (s *Shard) classicSyncConsumerGroup(now int64, g *group, req *kmsg.SyncGroupRequest, respond Responder) Result {
	var r Result
	fail := func(code int16) Result {
		resp := syncError(code)
		resp.Version = req.Version
		r.reply(respond, resp)
		return r
	}
	c := g.consumer
	m, code := c.classicMemberFor(req.MemberID, req.InstanceID)
	switch {
	case code != 0:
		return fail(code)
	case req.Generation != m.epoch:
		return fail(kerr.IllegalGeneration.Code)
	case req.ProtocolType != nil && *req.ProtocolType != "consumer",
		req.Protocol != nil && *req.Protocol != m.classic.protocols[0].name:
		return fail(kerr.InconsistentGroupProtocol.Code)
	case c.epoch > m.epoch && m.state != memberUnrevokedPartitions:
		// A new rebalance started; a member still revoking has rejoined
		// already and gets what it keeps.
		startJoinTimer(m, now)
		return fail(kerr.RebalanceInProgress.Code)
	}
	m.syncDue = 0
	m.sessionDue = now + int64(m.classic.sessionTimeoutMs)
	resp := kmsg.NewPtrSyncGroupResponse()
	resp.Version = req.Version
	resp.ProtocolType, resp.Protocol = req.ProtocolType, req.Protocol
	resp.MemberAssignment = assignmentBytes(m.assigned, s.topicNames(c), m.classic.protocols[0].metadata)
	r.reply(respond, resp)
	return r
}

// classicHeartbeatConsumerGroup handles a Heartbeat to a consumer group
// (Kafka's classicGroupHeartbeatToConsumerGroup): the member must rejoin
// when the group epoch moved past its own, when it has partitions to
// revoke, or when partitions it waits for were released.
func (s *Shard) classicHeartbeatConsumerGroup(now int64, g *group, req *kmsg.HeartbeatRequest, resp *kmsg.HeartbeatResponse) {
	c := g.consumer
	m, code := c.classicMemberFor(req.MemberID, req.InstanceID)
	if code == 0 && req.Generation != m.epoch {
		code = kerr.IllegalGeneration.Code
	}
	if code != 0 {
		resp.ErrorCode = code
		return
	}
	m.sessionDue = now + int64(m.classic.sessionTimeoutMs)
	if m.epoch < c.epoch || m.state == memberUnrevokedPartitions ||
		(m.state == memberUnreleasedPartition && !c.waitingOnUnreleased(m)) {
		startJoinTimer(m, now)
		resp.ErrorCode = kerr.RebalanceInProgress.Code
	}
}

// classicLeaveConsumerGroup handles a LeaveGroup to a consumer group
// (Kafka's classicGroupLeaveToConsumerGroup): each named classic member is
// removed, and the group epoch is bumped once for all of them.
func (s *Shard) classicLeaveConsumerGroup(g *group, leaving []kmsg.LeaveGroupRequestMember, r *Result) []kmsg.LeaveGroupResponseMember {
	c := g.consumer
	ch := s.startChange(g.id)
	var out []kmsg.LeaveGroupResponseMember
	var removed []*cmember
	for _, lm := range leaving {
		rm := kmsg.NewLeaveGroupResponseMember()
		rm.MemberID, rm.InstanceID = lm.MemberID, lm.InstanceID
		var m *cmember
		if lm.InstanceID == nil {
			m = c.members[lm.MemberID]
		} else if id, ok := c.static[*lm.InstanceID]; ok {
			m = c.members[id]
		}
		switch {
		case m == nil:
			rm.ErrorCode = kerr.UnknownMemberID.Code
		case lm.InstanceID != nil && lm.MemberID != "" && m.id != lm.MemberID:
			// An admin removing a static member names only its instance id.
			rm.ErrorCode = kerr.FencedInstanceID.Code
		case m.classic == nil:
			rm.ErrorCode = kerr.UnknownMemberID.Code
		default:
			rm.MemberID = m.id
			removed = append(removed, m)
		}
		out = append(out, rm)
	}
	if len(removed) > 0 {
		s.removeConsumerMembers(g, removed...)
	}
	s.finish(ch, r)
	return out
}
