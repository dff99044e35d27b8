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
	var before map[string][]byte
	if g := s.groups[req.Group]; g != nil {
		before = g.consumerRecords()
	}
	resp := s.consumerHeartbeat(now, req, clientID, clientHost, topics)
	var r Result
	if g := s.groups[req.Group]; g != nil {
		r.Records = diffRecords(before, g.consumerRecords())
	}
	r.reply(respond, resp)
	r.Failed = func(code int16) []Reply {
		return []Reply{{To: respond, Resp: cghError(req, code, "")}}
	}
	return r
}

func (s *Shard) consumerHeartbeat(now int64, req *kmsg.ConsumerGroupHeartbeatRequest, clientID, clientHost string, topics Topics) *kmsg.ConsumerGroupHeartbeatResponse {
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
	g := s.groups[req.Group]
	if g != nil && (len(g.members) > 0 || g.state != Empty) {
		// Kafka refuses a consumer heartbeat to a live classic group (no
		// online upgrade here).
		return cghError(req, kerr.GroupIDNotFound.Code, "Group "+req.Group+" is not a consumer group.")
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
		return s.consumerLeave(now, g, req)
	}

	memberID := req.MemberID
	m := c.members[memberID]
	bump := false
	switch {
	case req.MemberEpoch == 0:
		if memberID == "" {
			memberID = newConsumerMemberID()
		}
		if req.InstanceID != nil {
			if oldID, ok := c.static[*req.InstanceID]; ok && oldID != memberID {
				old := c.members[oldID]
				if old != nil && !old.leftStatic {
					return cghError(req, kerr.UnreleasedInstanceID.Code, "Static member "+*req.InstanceID+" is still in use by "+oldID+".")
				}
				// A static member's restart takes over its predecessor's
				// place and assignment without a rebalance.
				if old != nil {
					delete(c.members, oldID)
					nm := *old
					nm.id, nm.leftStatic = memberID, false
					nm.sent = nil
					c.members[memberID] = &nm
					c.target[memberID] = c.target[oldID]
					delete(c.target, oldID)
					m = &nm
				}
			}
		}
		if m == nil {
			if len(c.members) >= int(s.cfg.ConsumerMaxSize) && s.cfg.ConsumerMaxSize > 0 {
				return cghError(req, kerr.GroupMaxSizeReached.Code, "")
			}
			m = &cmember{id: memberID, state: memberStable, assigned: assignment{}, revoking: assignment{}}
			c.members[memberID] = m
			bump = true
		} else if m.epoch != 0 && req.InstanceID == nil {
			// A dynamic member rejoining with epoch 0 starts over: it
			// has lost its partitions.
			m.assigned, m.revoking, m.state, m.revokeDue = assignment{}, assignment{}, memberStable, 0
			m.sent = nil
		}
		if req.InstanceID != nil {
			c.static[*req.InstanceID] = memberID
		}
	case m == nil:
		return cghError(req, kerr.UnknownMemberID.Code, "")
	case req.MemberEpoch != m.epoch:
		owned := ownedFrom(req.Topics)
		lostResponse := req.MemberEpoch == m.previousEpoch && owned != nil && isSubset(owned, m.assigned)
		if req.MemberEpoch > m.epoch || !lostResponse {
			return cghError(req, kerr.FencedMemberEpoch.Code, "")
		}
		m.sent = nil
	}

	m.clientID, m.clientHost = clientID, clientHost
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

	subs, sig := c.subscribed(topics)
	if sig != c.topicsSig {
		bump = true
	}
	if bump {
		c.epoch++
	}
	if c.epoch > c.assignmentEpoch {
		c.target = s.assign(c, subs, topics)
		c.assignmentEpoch, c.topicsSig = c.epoch, sig
	}
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

// consumerLeave handles epoch -1 (leave) and -2 (a static member's
// temporary leave: its place and assignment are kept for a session).
func (s *Shard) consumerLeave(now int64, g *group, req *kmsg.ConsumerGroupHeartbeatRequest) *kmsg.ConsumerGroupHeartbeatResponse {
	c := g.consumer
	m := c.members[req.MemberID]
	if m == nil && req.InstanceID != nil {
		m = c.members[c.static[*req.InstanceID]]
	}
	if m == nil {
		return cghError(req, kerr.UnknownMemberID.Code, "")
	}
	if req.InstanceID != nil && m.instanceID != nil && *req.InstanceID != *m.instanceID {
		return cghError(req, kerr.FencedInstanceID.Code, "")
	}
	resp := kmsg.NewPtrConsumerGroupHeartbeatResponse()
	resp.Version = req.Version
	id := m.id
	resp.MemberID = &id
	resp.MemberEpoch = req.MemberEpoch
	if req.MemberEpoch == -2 && m.instanceID != nil {
		m.leftStatic = true
		m.sessionDue = now + int64(s.cfg.ConsumerSessionTimeoutMs)
		return resp
	}
	s.removeConsumerMember(g, m)
	return resp
}

// removeConsumerMember drops a member and bumps the group epoch so that its
// partitions are reassigned.
func (s *Shard) removeConsumerMember(g *group, m *cmember) {
	c := g.consumer
	delete(c.members, m.id)
	delete(c.target, m.id)
	if m.instanceID != nil && c.static[*m.instanceID] == m.id {
		delete(c.static, *m.instanceID)
	}
	c.epoch++
	if len(c.members) == 0 {
		// Nothing to assign: the empty group's target is empty at once.
		c.assignmentEpoch, c.target, c.topicsSig = c.epoch, map[string]assignment{}, ""
	}
}

// consumerTick expires sessions and members that did not revoke within
// their rebalance timeout.
func (s *Shard) consumerTick(now int64, g *group, r *Result) {
	c := g.consumer
	if c == nil {
		return
	}
	var before map[string][]byte
	for _, id := range c.sortedMembers() {
		m := c.members[id]
		if now >= m.sessionDue || (m.revokeDue > 0 && now >= m.revokeDue) {
			if before == nil {
				before = g.consumerRecords()
			}
			s.removeConsumerMember(g, m)
		}
	}
	if before != nil {
		r.Records = append(r.Records, diffRecords(before, g.consumerRecords())...)
	}
}

func (s *Shard) consumerDeadlines(g *group, consider func(int64)) {
	if g.consumer == nil {
		return
	}
	for _, m := range g.consumer.members {
		consider(m.sessionDue)
		if m.revokeDue > 0 {
			consider(m.revokeDue)
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
