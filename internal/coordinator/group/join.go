package group

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func joinError(version int16, memberID string, code int16) *kmsg.JoinGroupResponse {
	resp := kmsg.NewPtrJoinGroupResponse()
	resp.Version = version
	resp.ErrorCode = code
	resp.Generation = -1
	resp.MemberID = memberID
	return resp
}

// JoinGroup handles a JoinGroup request (Kafka's classicGroupJoin). The
// answer may come at once or when the rebalance completes.
func (s *Shard) JoinGroup(now int64, req *kmsg.JoinGroupRequest, clientID, clientHost string, respond Responder) Result {
	var r Result
	fail := func(code int16) Result {
		r.reply(respond, joinError(req.Version, req.MemberID, code))
		return r
	}
	if req.Group == "" {
		return fail(kerr.InvalidGroupID.Code)
	}
	if s.shares[req.Group] != nil {
		// Kafka's classicGroupJoin: a group of another kind than classic
		// or consumer.
		r.reply(respond, joinError(req.Version, "", kerr.InconsistentGroupProtocol.Code))
		return r
	}
	if req.SessionTimeoutMillis < s.cfg.MinSessionTimeoutMs || req.SessionTimeoutMillis > s.cfg.MaxSessionTimeoutMs {
		return fail(kerr.InvalidSessionTimeout.Code)
	}
	protocols := make([]protocol, 0, len(req.Protocols))
	for _, p := range req.Protocols {
		protocols = append(protocols, protocol{name: p.Name, metadata: p.Metadata})
	}
	g := s.groups[req.Group]
	if g != nil && g.consumer != nil && len(g.members) == 0 {
		if len(g.consumer.members) > 0 {
			return s.classicJoinConsumerGroup(now, g, req, protocols, clientID, clientHost, respond)
		}
		s.emptyConsumerToClassic(g, &r)
		g = s.groups[req.Group]
	}
	created := false
	if g == nil {
		if req.MemberID != "" {
			return fail(kerr.UnknownMemberID.Code)
		}
		g = newGroup(req.Group, now)
		created = true
	}
	if !s.acceptJoiningMember(g, req.MemberID) {
		// Kafka drops a member it turns away (one that had not rejoined a
		// rebalance already full) and answers without a member id.
		if m := g.members[req.MemberID]; m != nil {
			s.removeMember(now, g, m, &r, false)
		}
		r.reply(respond, joinError(req.Version, "", kerr.GroupMaxSizeReached.Code))
		return r
	}
	if g.state == Dead {
		return fail(kerr.CoordinatorNotAvailable.Code)
	}
	if !g.supportsProtocols(req.ProtocolType, protocols) {
		return fail(kerr.InconsistentGroupProtocol.Code)
	}
	if created {
		s.groups[g.id] = g
	}
	rebalanceTimeout := req.RebalanceTimeoutMillis
	if req.Version == 0 || rebalanceTimeout <= 0 {
		rebalanceTimeout = req.SessionTimeoutMillis
	}
	newMember := func(id string) *member {
		return &member{
			id: id, instanceID: req.InstanceID, clientID: clientID, clientHost: clientHost,
			rebalanceTimeoutMs: rebalanceTimeout, sessionTimeoutMs: req.SessionTimeoutMillis,
			protocolType: req.ProtocolType, protocols: protocols,
		}
	}

	if req.MemberID == "" {
		id := s.cfg.NewMemberID(clientID)
		if req.InstanceID != nil {
			if oldID, ok := g.static[*req.InstanceID]; ok {
				s.replaceStaticMember(now, g, oldID, newMember(id), req.Version, respond, &r)
				return r
			}
			s.addMemberAndRebalance(now, g, newMember(id), req.Version, respond, &r)
			return r
		}
		if req.Version >= 4 {
			// KIP-394: the client must come back with the id it is given,
			// so that a member id exists only for clients that got it.
			g.pending[id] = now + int64(req.SessionTimeoutMillis)
			r.reply(respond, joinError(req.Version, id, kerr.MemberIDRequired.Code))
			return r
		}
		s.addMemberAndRebalance(now, g, newMember(id), req.Version, respond, &r)
		return r
	}

	if _, ok := g.pending[req.MemberID]; ok {
		delete(g.pending, req.MemberID)
		s.addMemberAndRebalance(now, g, newMember(req.MemberID), req.Version, respond, &r)
		return r
	}
	if code := g.validateMember(req.MemberID, req.InstanceID); code != 0 {
		return fail(code)
	}
	m := g.members[req.MemberID]
	switch g.state {
	case PreparingRebalance:
		s.updateMemberAndRebalance(now, g, m, protocols, rebalanceTimeout, req, clientID, clientHost, respond, &r)
	case CompletingRebalance:
		if m.matches(protocols) {
			// A retried join of this generation: answer with what it was told.
			m.heartbeatDue = now + int64(m.sessionTimeoutMs)
			r.reply(respond, g.joinResponse(req.Version, m.id, m.id == g.leader))
		} else {
			s.updateMemberAndRebalance(now, g, m, protocols, rebalanceTimeout, req, clientID, clientHost, respond, &r)
		}
	case Stable:
		if m.id == g.leader || !m.matches(protocols) {
			// The leader rejoining or a member changing its subscription
			// starts a rebalance; a follower's plain rejoin does not.
			s.updateMemberAndRebalance(now, g, m, protocols, rebalanceTimeout, req, clientID, clientHost, respond, &r)
		} else {
			m.heartbeatDue = now + int64(m.sessionTimeoutMs)
			r.reply(respond, g.joinResponse(req.Version, m.id, false))
		}
	default:
		return fail(kerr.UnknownMemberID.Code)
	}
	return r
}

// acceptJoiningMember is Kafka's check against group.max.size.
func (s *Shard) acceptJoiningMember(g *group, memberID string) bool {
	switch g.state {
	case Empty, Dead:
		return true
	case PreparingRebalance:
		m := g.members[memberID]
		return (m != nil && m.joinReply != nil) || g.awaitingJoin() < s.cfg.MaxSize
	}
	return g.members[memberID] != nil || len(g.members) < s.cfg.MaxSize
}

// validateMember checks a known member id and its static instance id.
func (g *group) validateMember(memberID string, instanceID *string) int16 {
	if instanceID != nil {
		registered, ok := g.static[*instanceID]
		if !ok {
			return kerr.UnknownMemberID.Code
		}
		if registered != memberID {
			return kerr.FencedInstanceID.Code
		}
	}
	if g.members[memberID] == nil {
		return kerr.UnknownMemberID.Code
	}
	return 0
}

// joinResponse is the answer of a completed join for one member; the leader
// also gets every member's metadata of the selected protocol.
func (g *group) joinResponse(version int16, memberID string, leaderView bool) *kmsg.JoinGroupResponse {
	resp := kmsg.NewPtrJoinGroupResponse()
	resp.Version = version
	resp.Generation = g.generation
	pt, pn := g.protocolType, g.protocolName
	resp.ProtocolType, resp.Protocol = &pt, &pn
	resp.LeaderID = g.leader
	resp.MemberID = memberID
	if leaderView {
		for _, id := range g.order {
			m := g.members[id]
			rm := kmsg.NewJoinGroupResponseMember()
			rm.MemberID, rm.InstanceID, rm.ProtocolMetadata = id, m.instanceID, m.metadataFor(g.protocolName)
			resp.Members = append(resp.Members, rm)
		}
	}
	return resp
}

func (s *Shard) addMemberAndRebalance(now int64, g *group, m *member, version int16, respond Responder, r *Result) {
	m.isNew = true
	m.joinedAt = now
	m.joinReply, m.joinVersion = respond, version
	m.heartbeatDue = now + newMemberJoinTimeoutMs
	if g.state == Empty || len(g.members) == 0 {
		g.protocolType = m.protocolType
	}
	g.addMember(m)
	g.newMemberAdded = true
	if g.state == PreparingRebalance {
		s.tryCompleteJoin(now, g, r)
	} else {
		s.prepareRebalance(now, g, r)
	}
}

func (s *Shard) updateMemberAndRebalance(now int64, g *group, m *member, ps []protocol, rebalanceTimeout int32,
	req *kmsg.JoinGroupRequest, clientID, clientHost string, respond Responder, r *Result) {
	if m.joinReply != nil {
		// A duplicate join: the earlier one is superseded.
		r.reply(m.joinReply, joinError(m.joinVersion, m.id, kerr.UnknownMemberID.Code))
	}
	m.protocols, m.rebalanceTimeoutMs, m.sessionTimeoutMs = ps, rebalanceTimeout, req.SessionTimeoutMillis
	m.clientID, m.clientHost = clientID, clientHost
	m.joinReply, m.joinVersion = respond, req.Version
	if g.state == PreparingRebalance {
		s.tryCompleteJoin(now, g, r)
	} else {
		s.prepareRebalance(now, g, r)
	}
}

// replaceStaticMember handles a known group.instance.id joining with an
// unknown member id: a restarted static member. It takes the old member's
// place; the group rebalances only when it must (Kafka's
// updateStaticMemberThenRebalanceOrCompleteJoin).
func (s *Shard) replaceStaticMember(now int64, g *group, oldID string, nm *member, version int16, respond Responder, r *Result) {
	old := g.members[oldID]
	if old.joinReply != nil {
		r.reply(old.joinReply, joinError(old.joinVersion, oldID, kerr.FencedInstanceID.Code))
	}
	if old.syncReply != nil {
		r.reply(old.syncReply, syncError(kerr.FencedInstanceID.Code))
	}
	nm.assignment = old.assignment
	nm.heartbeatDue = now + int64(nm.sessionTimeoutMs)
	nm.joinReply, nm.joinVersion = respond, version
	delete(g.members, oldID)
	g.members[nm.id] = nm
	for i, id := range g.order {
		if id == oldID {
			g.order[i] = nm.id
		}
	}
	if g.pendingSync[oldID] {
		delete(g.pendingSync, oldID)
		g.pendingSync[nm.id] = true
	}
	g.static[*nm.instanceID] = nm.id
	wasLeader := g.leader == oldID
	if wasLeader {
		g.leader = nm.id
	}
	switch g.state {
	case Stable:
		// The member may keep its assignment if the group's protocol would
		// not change and (for a leader) the client can skip the assignment
		// (JoinGroup v9+, KIP-814); otherwise the group must rebalance.
		if g.selectProtocol() == g.protocolName && (!wasLeader || version >= 9) {
			nm.joinReply = nil
			resp := g.joinResponse(version, nm.id, wasLeader)
			resp.SkipAssignment = wasLeader
			r.Records = append(r.Records, g.metadataRecord(now))
			r.reply(respond, resp)
			return
		}
		s.prepareRebalance(now, g, r)
	case CompletingRebalance:
		// The leader may be assigning to the old member id: rebalance again.
		s.prepareRebalance(now, g, r)
	case PreparingRebalance:
		s.tryCompleteJoin(now, g, r)
	}
}

// prepareRebalance starts a new join phase (Kafka's prepareRebalance).
func (s *Shard) prepareRebalance(now int64, g *group, r *Result) {
	if g.state == CompletingRebalance {
		for _, id := range g.order {
			m := g.members[id]
			m.assignment = nil
			if m.syncReply != nil {
				r.reply(m.syncReply, syncError(kerr.RebalanceInProgress.Code))
				m.syncReply = nil
			}
		}
	}
	g.pendingSync = map[string]bool{}
	if g.state == Empty {
		// The first rebalance of a group waits group.initial.rebalance.delay.ms
		// for more members, extended by the same delay while members keep
		// arriving, up to the rebalance timeout.
		delay := int64(s.cfg.InitialRebalanceDelayMs)
		g.initialDelay = true
		g.newMemberAdded = false
		g.initialRemaining = max(g.maxRebalanceTimeout()-delay, 0)
		g.joinDeadline = now + delay
	} else {
		g.initialDelay = false
		g.joinDeadline = now + g.maxRebalanceTimeout()
	}
	g.transition(PreparingRebalance, now)
	s.tryCompleteJoin(now, g, r)
}

// tryCompleteJoin completes the join phase once every member has rejoined
// (the initial delay completes only on its timer, unless it is zero).
func (s *Shard) tryCompleteJoin(now int64, g *group, r *Result) {
	if g.state != PreparingRebalance || !g.allJoined() {
		return
	}
	if g.initialDelay && now < g.joinDeadline {
		return
	}
	s.completeJoin(now, g, r)
}

// completeJoin ends the join phase: members that did not rejoin leave
// (static members stay: they may be restarting), the generation advances,
// and every joined member gets its answer.
func (s *Shard) completeJoin(now int64, g *group, r *Result) {
	g.initialDelay = false
	for _, id := range append([]string(nil), g.order...) {
		m := g.members[id]
		if m.joinReply == nil && m.instanceID == nil {
			s.removeMember(now, g, m, r, false)
		}
	}
	g.generation++
	if len(g.members) == 0 {
		g.protocolName = ""
		g.leader = ""
		g.transition(Empty, now)
		r.Records = append(r.Records, g.metadataRecord(now))
		return
	}
	g.protocolName = g.selectProtocol()
	if g.leader == "" || g.members[g.leader] == nil || g.members[g.leader].joinReply == nil {
		for _, id := range g.order {
			if g.members[id].joinReply != nil {
				g.leader = id
				break
			}
		}
	}
	g.transition(CompletingRebalance, now)
	for _, id := range g.order {
		m := g.members[id]
		g.pendingSync[id] = true
		if m.joinReply != nil {
			r.reply(m.joinReply, g.joinResponse(m.joinVersion, id, id == g.leader))
			m.joinReply = nil
		}
		m.isNew = false
		m.heartbeatDue = now + int64(m.sessionTimeoutMs)
	}
	g.syncDeadline = now + g.maxRebalanceTimeout()
}

// removeMember takes a member out of the group and moves the group on
// (Kafka's removeMemberAndUpdateClassicGroup). update=false leaves the
// state alone (completeJoin removes members as part of its own step).
func (s *Shard) removeMember(now int64, g *group, m *member, r *Result, update bool) {
	if m.joinReply != nil {
		r.reply(m.joinReply, joinError(m.joinVersion, m.id, kerr.UnknownMemberID.Code))
		m.joinReply = nil
	}
	if m.syncReply != nil {
		r.reply(m.syncReply, syncError(kerr.UnknownMemberID.Code))
		m.syncReply = nil
	}
	g.dropMember(m.id)
	if !update {
		return
	}
	switch g.state {
	case Stable, CompletingRebalance:
		s.prepareRebalance(now, g, r)
	case PreparingRebalance:
		s.tryCompleteJoin(now, g, r)
	}
}
