package group

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func syncError(code int16) *kmsg.SyncGroupResponse {
	resp := kmsg.NewPtrSyncGroupResponse()
	resp.ErrorCode = code
	resp.MemberAssignment = []byte{}
	return resp
}

func (g *group) syncResponse(version int16, m *member) *kmsg.SyncGroupResponse {
	resp := kmsg.NewPtrSyncGroupResponse()
	resp.Version = version
	pt, pn := g.protocolType, g.protocolName
	resp.ProtocolType, resp.Protocol = &pt, &pn
	resp.MemberAssignment = m.assignment
	if resp.MemberAssignment == nil {
		resp.MemberAssignment = []byte{}
	}
	return resp
}

// SyncGroup handles a SyncGroup request: members wait for the leader's
// assignment, which is written to the log before anyone gets it.
func (s *Shard) SyncGroup(now int64, req *kmsg.SyncGroupRequest, respond Responder) Result {
	var r Result
	fail := func(code int16) Result {
		resp := syncError(code)
		resp.Version = req.Version
		r.reply(respond, resp)
		return r
	}
	if req.Group == "" {
		return fail(kerr.InvalidGroupID.Code)
	}
	g := s.groups[req.Group]
	if g == nil {
		return fail(kerr.UnknownMemberID.Code)
	}
	if g.state == Dead {
		return fail(kerr.CoordinatorNotAvailable.Code)
	}
	if g.consumer != nil && len(g.members) == 0 {
		return s.classicSyncConsumerGroup(now, g, req, respond)
	}
	if code := g.validateMember(req.MemberID, req.InstanceID); code != 0 {
		return fail(code)
	}
	if req.Generation != g.generation {
		return fail(kerr.IllegalGeneration.Code)
	}
	if (req.ProtocolType != nil && *req.ProtocolType != g.protocolType) || (req.Protocol != nil && *req.Protocol != g.protocolName) {
		return fail(kerr.InconsistentGroupProtocol.Code)
	}
	m := g.members[req.MemberID]
	switch g.state {
	case Empty:
		return fail(kerr.UnknownMemberID.Code)
	case PreparingRebalance:
		return fail(kerr.RebalanceInProgress.Code)
	case Stable:
		delete(g.pendingSync, m.id)
		m.heartbeatDue = now + int64(m.sessionTimeoutMs)
		r.reply(respond, g.syncResponse(req.Version, m))
		return r
	}
	// CompletingRebalance.
	delete(g.pendingSync, m.id)
	m.heartbeatDue = now + int64(m.sessionTimeoutMs)
	if m.syncReply != nil {
		r.reply(m.syncReply, syncError(kerr.UnknownMemberID.Code))
	}
	m.syncReply, m.syncVersion = respond, req.Version
	if m.id != g.leader {
		return r
	}
	assigned := map[string][]byte{}
	for _, a := range req.GroupAssignment {
		assigned[a.MemberID] = a.MemberAssignment
	}
	for _, id := range g.order {
		// Members the leader left out get an empty assignment, as in Kafka.
		g.members[id].assignment = assigned[id]
	}
	r.Records = append(r.Records, g.metadataRecord(now))
	g.transition(Stable, now)
	s.cfg.Meters.ClassicRebalanceCompleted()
	generation := g.generation
	var waiting []Responder
	for _, id := range g.order {
		if mm := g.members[id]; mm.syncReply != nil {
			waiting = append(waiting, mm.syncReply)
			r.reply(mm.syncReply, g.syncResponse(mm.syncVersion, mm))
			mm.syncReply = nil
		}
	}
	// The assignment could not be stored: the members learn it failed and
	// the group rebalances (if it is still at this generation).
	r.Failed = func(code int16) []Reply {
		var fr Result
		for _, to := range waiting {
			fr.reply(to, syncError(code))
		}
		if g.generation == generation && g.state == Stable {
			for _, id := range g.order {
				g.members[id].assignment = nil
			}
			s.prepareRebalance(now, g, &fr)
		}
		return fr.Replies
	}
	return r
}

// Heartbeat handles a Heartbeat request.
func (s *Shard) Heartbeat(now int64, req *kmsg.HeartbeatRequest) *kmsg.HeartbeatResponse {
	resp := kmsg.NewPtrHeartbeatResponse()
	resp.Version = req.Version
	if req.Group == "" {
		resp.ErrorCode = kerr.InvalidGroupID.Code
		return resp
	}
	g := s.groups[req.Group]
	if g == nil {
		resp.ErrorCode = kerr.UnknownMemberID.Code
		return resp
	}
	if g.state == Dead {
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp
	}
	if g.consumer != nil && len(g.members) == 0 {
		s.classicHeartbeatConsumerGroup(now, g, req, resp)
		return resp
	}
	if code := g.validateMember(req.MemberID, req.InstanceID); code != 0 {
		resp.ErrorCode = code
		return resp
	}
	if req.Generation != g.generation {
		resp.ErrorCode = kerr.IllegalGeneration.Code
		return resp
	}
	m := g.members[req.MemberID]
	switch g.state {
	case Empty:
		resp.ErrorCode = kerr.UnknownMemberID.Code
	case PreparingRebalance:
		m.heartbeatDue = now + int64(m.sessionTimeoutMs)
		resp.ErrorCode = kerr.RebalanceInProgress.Code
	default:
		// Members may heartbeat between their join and sync answers.
		m.heartbeatDue = now + int64(m.sessionTimeoutMs)
	}
	return resp
}

// LeaveGroup handles a LeaveGroup request (batched by member from v3).
func (s *Shard) LeaveGroup(now int64, req *kmsg.LeaveGroupRequest) (*kmsg.LeaveGroupResponse, Result) {
	var r Result
	resp := kmsg.NewPtrLeaveGroupResponse()
	resp.Version = req.Version
	leaving := req.Members
	if req.Version < 3 {
		lm := kmsg.NewLeaveGroupRequestMember()
		lm.MemberID = req.MemberID
		leaving = []kmsg.LeaveGroupRequestMember{lm}
	}
	if req.Group == "" {
		resp.ErrorCode = kerr.InvalidGroupID.Code
		return resp, r
	}
	g := s.groups[req.Group]
	if g != nil && g.state == Dead {
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp, r
	}
	if g != nil && g.consumer != nil && len(g.members) == 0 {
		resp.Members = s.classicLeaveConsumerGroup(g, leaving, &r)
		leaving = nil
	}
	for _, lm := range leaving {
		rm := kmsg.NewLeaveGroupResponseMember()
		rm.MemberID, rm.InstanceID = lm.MemberID, lm.InstanceID
		// An unknown group: each member is unknown (Kafka answers per
		// member, and v0-2 carry the one member's error at the top).
		rm.ErrorCode = kerr.UnknownMemberID.Code
		if g != nil {
			rm.ErrorCode = s.leave(now, g, lm.MemberID, lm.InstanceID, &r)
		}
		resp.Members = append(resp.Members, rm)
	}
	if req.Version < 3 {
		resp.ErrorCode = resp.Members[0].ErrorCode
		resp.Members = nil
	}
	return resp, r
}

func (s *Shard) leave(now int64, g *group, memberID string, instanceID *string, r *Result) int16 {
	if instanceID != nil {
		registered, ok := g.static[*instanceID]
		if !ok {
			return kerr.UnknownMemberID.Code
		}
		// An admin removing a static member names only its instance id.
		if memberID != "" && registered != memberID {
			return kerr.FencedInstanceID.Code
		}
		memberID = registered
	}
	if _, ok := g.pending[memberID]; ok {
		delete(g.pending, memberID)
		s.tryCompleteJoin(now, g, r)
		return 0
	}
	m := g.members[memberID]
	if m == nil {
		return kerr.UnknownMemberID.Code
	}
	s.removeMember(now, g, m, r, true)
	return 0
}

// Tick fires the timers due at now: join and sync deadlines, expired
// sessions and pending member ids, the initial rebalance delay, and
// offsets expiry (with which share groups forget deleted topics).
func (s *Shard) Tick(now int64) Result {
	var r Result
	for _, id := range s.sortedGroupIDs() {
		g := s.groups[id]
		s.consumerTick(now, g, &r)
		for pid, due := range g.pending {
			if now >= due {
				delete(g.pending, pid)
				s.tryCompleteJoin(now, g, &r)
			}
		}
		for _, mid := range append([]string(nil), g.order...) {
			m := g.members[mid]
			if m == nil || now < m.heartbeatDue {
				continue
			}
			// A member waiting in a join or sync is alive, unless it is a
			// new member whose join never completed.
			if m.syncReply != nil || (m.joinReply != nil && !m.isNew) {
				continue
			}
			s.removeMember(now, g, m, &r, true)
		}
		if g.state == PreparingRebalance && now >= g.joinDeadline {
			if g.initialDelay && g.newMemberAdded && g.initialRemaining > 0 {
				g.newMemberAdded = false
				d := min(int64(s.cfg.InitialRebalanceDelayMs), g.initialRemaining)
				g.initialRemaining -= d
				g.joinDeadline = now + d
			} else {
				s.completeJoin(now, g, &r)
			}
		}
		if (g.state == CompletingRebalance || g.state == Stable) && len(g.pendingSync) > 0 && now >= g.syncDeadline {
			// Members that never synced in time are dropped (KIP-345's
			// pending sync timeout) and the group rebalances without them.
			for mid := range g.pendingSync {
				if m := g.members[mid]; m != nil {
					s.removeMember(now, g, m, &r, false)
				}
			}
			g.pendingSync = map[string]bool{}
			s.prepareRebalance(now, g, &r)
		}
	}
	s.shareTick(now, &r)
	if s.cfg.OffsetsRetentionCheckMs > 0 && now >= s.nextExpiry {
		s.nextExpiry = now + s.cfg.OffsetsRetentionCheckMs
		s.expireOffsets(now, &r)
		// Share groups that no member heartbeats to learn of deleted
		// topics here, on the same period.
		if s.cfg.Topics != nil && len(s.shares) > 0 {
			s.forgetDeletedShareTopics(s.cfg.Topics(), &r)
		}
	}
	return r
}

// NextDeadline is when Tick next has something to do (0: nothing pending
// but the periodic offsets expiry).
func (s *Shard) NextDeadline() int64 {
	next := s.nextExpiry
	consider := func(t int64) {
		if next == 0 || t < next {
			next = t
		}
	}
	s.shareDeadlines(consider)
	for _, g := range s.groups {
		s.consumerDeadlines(g, consider)
		for _, due := range g.pending {
			consider(due)
		}
		for _, m := range g.members {
			if m.syncReply == nil && (m.joinReply == nil || m.isNew) {
				consider(m.heartbeatDue)
			}
		}
		if g.state == PreparingRebalance {
			consider(g.joinDeadline)
		}
		if (g.state == CompletingRebalance || g.state == Stable) && len(g.pendingSync) > 0 {
			consider(g.syncDeadline)
		}
	}
	return next
}
