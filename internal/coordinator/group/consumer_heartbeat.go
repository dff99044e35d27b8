package group

import (
	"crypto/rand"
	"encoding/base64"
	"regexp"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// newConsumerMemberID is a random UUID in Kafka's base64 form, the id a v0
// member joining with an empty id is given.
func newConsumerMemberID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// ConsumerGroupHeartbeat handles a ConsumerGroupHeartbeat (Kafka's
// GroupMetadataManager.consumerGroupHeartbeat). topics are the cluster's
// topics now. The Result's records are the group's changed state; the
// answer goes out once they are written. The in-memory state changes at
// once (a failed write answers with the write's error and leaves memory
// ahead of the log until the shard reloads).
func (s *Shard) ConsumerGroupHeartbeat(now int64, req *kmsg.ConsumerGroupHeartbeatRequest, clientID, clientHost string, topics Topics, respond Responder) Result {
	var r Result
	ch := s.startChange(req.Group)
	resp := s.consumerHeartbeat(now, req, clientID, clientHost, topics, ch)
	s.finish(ch, &r)
	r.reply(respond, resp)
	r.Failed = func(code int16) []Reply {
		return append(ch.replies, Reply{To: respond, Resp: cghError(req, code, "")})
	}
	return r
}

func (s *Shard) consumerHeartbeat(now int64, req *kmsg.ConsumerGroupHeartbeatRequest, clientID, clientHost string, topics Topics, ch *change) *kmsg.ConsumerGroupHeartbeatResponse {
	if msg := validateCGH(req); msg != "" {
		if req.Group == "" {
			return cghError(req, kerr.InvalidGroupID.Code, msg)
		}
		return cghError(req, kerr.InvalidRequest.Code, msg)
	}
	if req.SubscribedTopicRegex != nil && *req.SubscribedTopicRegex != "" {
		if _, err := regexp.Compile(*req.SubscribedTopicRegex); err != nil {
			return cghError(req, kerr.InvalidRegularExpression.Code, "SubscribedTopicRegex "+*req.SubscribedTopicRegex+" is not a valid regular expression: "+err.Error())
		}
	}
	if req.ServerAssignor != nil && !s.supportsAssignor(*req.ServerAssignor) {
		return cghError(req, kerr.UnsupportedAssignor.Code, "ServerAssignor "+*req.ServerAssignor+" is not supported.")
	}
	if s.shares[req.Group] != nil {
		return cghError(req, kerr.GroupIDNotFound.Code, "Group "+req.Group+" is not a consumer group.")
	}
	g := s.groups[req.Group]
	if g != nil && g.consumer == nil {
		// A classic group (Kafka's getOrMaybeCreateConsumerGroup): only a
		// joining member may turn it into a consumer group. An empty one
		// always converts; one with members only by an online upgrade.
		notConsumer := "Group " + req.Group + " is not a consumer group."
		if req.MemberEpoch != 0 {
			return cghError(req, kerr.GroupIDNotFound.Code, notConsumer)
		}
		if len(g.members) == 0 && g.state == Empty {
			ch.pre = append(ch.pre, Record{Key: groupKey(g.id)})
			s.resetGroup(g)
			g.consumer = newConsumerGroup()
		} else {
			if s.cfg.ConsumerMaxSize > 0 && len(g.members) >= int(s.cfg.ConsumerMaxSize) && g.members[req.MemberID] == nil {
				// The joining member would not fit: refused before converting.
				return cghError(req, kerr.GroupMaxSizeReached.Code, "")
			}
			if msg := s.upgrade(now, g, topics, ch); msg != "" {
				return cghError(req, kerr.GroupIDNotFound.Code, msg)
			}
		}
	}
	if g == nil {
		if req.MemberEpoch != 0 {
			return cghError(req, kerr.UnknownMemberID.Code, "")
		}
		g = newGroup(req.Group, now)
		s.groups[g.id] = g
	}
	if g.consumer == nil {
		g.consumer = newConsumerGroup()
	}
	c := g.consumer

	if req.MemberEpoch < 0 {
		return s.consumerLeave(now, g, req, ch)
	}

	memberID := req.MemberID
	if memberID == "" {
		memberID = newConsumerMemberID()
	}
	m, bump, errResp := s.consumerMember(g, req, memberID)
	if errResp != nil {
		return errResp
	}

	m.clientID, m.clientHost = clientID, clientHost
	// A member heartbeating with the consumer protocol uses it from now on
	// (a static member may replace a classic one).
	m.classic, m.joinDue, m.syncDue = nil, 0, 0
	if req.InstanceID != nil {
		m.instanceID = req.InstanceID
	}
	if req.RackID != nil {
		m.rackID = req.RackID
	}
	if req.RebalanceTimeoutMillis > 0 {
		m.rebalanceTimeoutMs = req.RebalanceTimeoutMillis
	}
	if req.SubscribedTopicNames != nil && !sameStrings(req.SubscribedTopicNames, m.topicNames) {
		m.topicNames = append([]string(nil), req.SubscribedTopicNames...)
		bump = true
	}
	if req.SubscribedTopicRegex != nil && *req.SubscribedTopicRegex != m.regex {
		m.regex = *req.SubscribedTopicRegex
		bump = true
	}
	if req.ServerAssignor != nil && *req.ServerAssignor != m.serverAssignor {
		m.serverAssignor = *req.ServerAssignor
		bump = true
	}
	m.sessionDue = now + int64(s.cfg.ConsumerSessionTimeoutMs)

	s.updateTarget(c, topics, bump)
	c.reconcile(m, ownedFrom(req.Topics), now)

	resp := kmsg.NewPtrConsumerGroupHeartbeatResponse()
	resp.Version = req.Version
	resp.MemberID = &memberID
	resp.MemberEpoch = m.epoch
	resp.HeartbeatIntervalMillis = s.cfg.ConsumerHeartbeatIntervalMs
	// Kafka answers a full request with the assignment even when unchanged.
	full := req.RebalanceTimeoutMillis != -1 && (req.SubscribedTopicNames != nil || req.SubscribedTopicRegex != nil) && req.Topics != nil
	if m.sent == nil || !m.sent.equal(m.assigned) || req.MemberEpoch == 0 || full {
		a := kmsg.NewConsumerGroupHeartbeatResponseAssignment()
		ids, parts := m.assigned.byTopic()
		a.Topics = []kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic{}
		for _, id := range ids {
			t := kmsg.NewConsumerGroupHeartbeatResponseAssignmentTopic()
			t.TopicID, t.Partitions = id, parts[id]
			a.Topics = append(a.Topics, t)
		}
		resp.Assignment = &a
		m.sent = m.assigned.clone()
	}
	return resp
}

// consumerMember finds the member a heartbeat is for, or creates it
// (Kafka's getOrMaybeSubscribe{Dynamic,Static}ConsumerGroupMember). bump
// is set for a new member. A static member is found by its instance id:
// joining (epoch 0) with an instance id whose member left with epoch -2
// replaces that member, taking over its place and partitions without a
// rebalance; while that member has not left, the instance id is
// UNRELEASED_INSTANCE_ID. Later heartbeats must come from the member that
// holds the instance id (FENCED_INSTANCE_ID otherwise).
func (s *Shard) consumerMember(g *group, req *kmsg.ConsumerGroupHeartbeatRequest, memberID string) (m *cmember, bump bool, errResp *kmsg.ConsumerGroupHeartbeatResponse) {
	c := g.consumer
	if req.InstanceID != nil {
		var old *cmember
		if oldID, ok := c.static[*req.InstanceID]; ok {
			old = c.members[oldID]
		}
		if req.MemberEpoch != 0 {
			switch {
			case old == nil:
				return nil, false, cghError(req, kerr.UnknownMemberID.Code, "Instance id "+*req.InstanceID+" is unknown.")
			case old.id != memberID:
				return nil, false, cghError(req, kerr.FencedInstanceID.Code, "Static member "+memberID+" with instance id "+*req.InstanceID+" was fenced by member "+old.id+".")
			}
			if code := checkMemberEpoch(old, req); code != 0 {
				return nil, false, cghError(req, code, "")
			}
			return old, false, nil
		}
		if old != nil {
			if old.epoch != leaveStaticEpoch && old.classic == nil {
				return nil, false, cghError(req, kerr.UnreleasedInstanceID.Code, "Static member "+memberID+" with instance id "+*req.InstanceID+
					" cannot join the group because the instance id is owned by "+old.id+" member.")
			}
			s.replaceStaticConsumerMember(c, old, memberID)
			return c.members[memberID], false, nil
		}
	}
	m = c.members[memberID]
	if m != nil && req.InstanceID != nil {
		// A member joining with an instance id nobody holds (Kafka's
		// getOrMaybeCreateMember: no epoch check).
		c.static[*req.InstanceID] = memberID
		return m, false, nil
	}
	if m == nil {
		if req.MemberEpoch != 0 {
			return nil, false, cghError(req, kerr.UnknownMemberID.Code, "")
		}
		if len(c.members) >= int(s.cfg.ConsumerMaxSize) && s.cfg.ConsumerMaxSize > 0 {
			return nil, false, cghError(req, kerr.GroupMaxSizeReached.Code, "")
		}
		m = &cmember{id: memberID, state: memberStable, assigned: assignment{}, revoking: assignment{}}
		c.members[memberID] = m
		if req.InstanceID != nil {
			c.static[*req.InstanceID] = memberID
		}
		return m, true, nil
	}
	if req.MemberEpoch == 0 && m.epoch != 0 {
		// A dynamic member rejoining with epoch 0 starts over: it has
		// lost its partitions.
		m.assigned, m.revoking, m.state, m.revokeDue = assignment{}, assignment{}, memberStable, 0
		m.sent = nil
		return m, false, nil
	}
	if code := checkMemberEpoch(m, req); code != 0 {
		return nil, false, cghError(req, code, "")
	}
	return m, false, nil
}

// checkMemberEpoch is Kafka's throwIfConsumerGroupMemberEpochIsInvalid: a
// newer epoch than the member's is fenced, and so is an older one unless it
// is the previous epoch with owned partitions the member still has (the
// answer that moved it on was lost).
func checkMemberEpoch(m *cmember, req *kmsg.ConsumerGroupHeartbeatRequest) int16 {
	if req.MemberEpoch == m.epoch {
		return 0
	}
	owned := ownedFrom(req.Topics)
	lostResponse := req.MemberEpoch == m.previousEpoch && owned != nil && isSubset(owned, m.assigned)
	if req.MemberEpoch > m.epoch || !lostResponse {
		return kerr.FencedMemberEpoch.Code
	}
	m.sent = nil
	return 0
}

// replaceStaticConsumerMember moves a static member that left with epoch -2 to
// its restarted instance's new member id (Kafka's replaceMember): same
// subscription, assignment and target, epochs back to 0 so that the next
// reconciliation gives it its partitions at the group's assignment epoch.
func (s *Shard) replaceStaticConsumerMember(c *consumerGroup, old *cmember, memberID string) {
	nm := *old
	nm.id, nm.epoch, nm.previousEpoch, nm.sent = memberID, 0, 0, nil
	target := c.target[old.id]
	delete(c.members, old.id)
	delete(c.target, old.id)
	c.members[memberID] = &nm
	c.target[memberID] = target
	c.static[*old.instanceID] = memberID
}

// consumerLeave handles epoch -1 (leave) and -2 (a static member's
// temporary leave, Kafka's consumerGroupStaticMemberGroupLeave: the member
// stays with epoch -2 and nothing left to revoke, its partitions reserved
// for its instance id; its session timer keeps running from its last
// heartbeat, and only its end removes it and rebalances).
func (s *Shard) consumerLeave(now int64, g *group, req *kmsg.ConsumerGroupHeartbeatRequest, ch *change) *kmsg.ConsumerGroupHeartbeatResponse {
	c := g.consumer
	var m *cmember
	if req.InstanceID == nil {
		if m = c.members[req.MemberID]; m == nil {
			return cghError(req, kerr.UnknownMemberID.Code, "")
		}
	} else {
		if id, ok := c.static[*req.InstanceID]; ok {
			m = c.members[id]
		}
		switch {
		case m == nil:
			return cghError(req, kerr.UnknownMemberID.Code, "Instance id "+*req.InstanceID+" is unknown.")
		case m.id != req.MemberID:
			return cghError(req, kerr.FencedInstanceID.Code, "Static member "+req.MemberID+" with instance id "+*req.InstanceID+" was fenced by member "+m.id+".")
		}
	}
	resp := kmsg.NewPtrConsumerGroupHeartbeatResponse()
	resp.Version = req.Version
	id := m.id
	resp.MemberID = &id
	resp.MemberEpoch = req.MemberEpoch
	if req.MemberEpoch == leaveStaticEpoch {
		m.epoch, m.revoking, m.revokeDue = leaveStaticEpoch, assignment{}, 0
		return resp
	}
	s.fenceConsumerMember(now, g, m, ch)
	return resp
}

// fenceConsumerMember removes a member that left or was fenced (Kafka's
// consumerGroupFenceMember); when it is the last one using the consumer
// protocol and the rest may form a classic group, the group turns classic
// instead (downgrade).
func (s *Shard) fenceConsumerMember(now int64, g *group, m *cmember, ch *change) {
	if s.canDowngrade(g.consumer, m.id) {
		s.downgrade(now, g, m.id, ch)
		return
	}
	s.removeConsumerMembers(g, m)
}

// removeConsumerMembers drops members and bumps the group epoch once so
// that their partitions are reassigned. The subscription metadata is
// recomputed without them (over the topics known from the last
// computation).
func (s *Shard) removeConsumerMembers(g *group, ms ...*cmember) {
	c := g.consumer
	for _, m := range ms {
		delete(c.members, m.id)
		delete(c.target, m.id)
		if m.instanceID != nil && c.static[*m.instanceID] == m.id {
			delete(c.static, *m.instanceID)
		}
	}
	if _, meta := c.subscribed(c.subscription); !c.sameSubscription(meta) {
		c.subscription = meta
	}
	c.epoch++
	s.cfg.Meters.ConsumerGroupRebalanced()
	if len(c.members) == 0 {
		// Nothing to assign: the empty group's target is empty at once.
		c.assignmentEpoch, c.target = c.epoch, map[string]assignment{}
	}
}

// expired is whether one of the member's timers fired: its session, its
// revocation (consumer protocol), or its join or sync (classic protocol).
func (m *cmember) expired(now int64) bool {
	due := func(t int64) bool { return t > 0 && now >= t }
	return now >= m.sessionDue || due(m.revokeDue) || due(m.joinDue) || due(m.syncDue)
}

// consumerTick fences the members whose timers fired.
func (s *Shard) consumerTick(now int64, g *group, r *Result) {
	if g.consumer == nil {
		return
	}
	ch := s.startChange(g.id)
	for _, id := range g.consumer.sortedMembers() {
		if m := g.consumer.members[id]; m != nil && m.expired(now) {
			s.fenceConsumerMember(now, g, m, ch)
			if g.consumer == nil {
				break // downgraded: the rest are classic members now
			}
		}
	}
	s.finish(ch, r)
}

func (s *Shard) consumerDeadlines(g *group, consider func(int64)) {
	if g.consumer == nil {
		return
	}
	for _, m := range g.consumer.members {
		consider(m.sessionDue)
		for _, t := range []int64{m.revokeDue, m.joinDue, m.syncDue} {
			if t > 0 {
				consider(t)
			}
		}
	}
}

func isSubset(a, b assignment) bool {
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}

func sameStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
