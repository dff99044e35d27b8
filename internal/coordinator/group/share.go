package group

// Share groups (KIP-932; Kafka's ShareGroup and the share half of
// GroupMetadataManager): members heartbeat with their epoch and the topics
// they subscribe to; the coordinator bumps the group epoch when membership,
// subscriptions or the subscribed topics change, computes a target
// assignment with the simple share assignor (share_assign.go), in which a
// partition may go to several members, and moves each member to its target
// in one step: share groups have no revocation, since the share-partition
// leader, not the assignment, keeps two members from taking the same
// record.
//
// A partition is assigned only once its share-partition state is
// initialized in the share-group state persister (Kafka's
// ShareGroupStatePartitionMetadata flow): a heartbeat that subscribes the
// group to new partitions records them as initializing and returns them in
// Result.ShareInit; the driver initializes them through
// sharestate.Persister.Initialize and reports back with
// ShareGroupStateInitialized, which records them as initialized and bumps
// the group epoch so the assignor hands them out.
//
// Share groups live in Shard.shares, apart from the classic and consumer
// groups: a group id is one kind or the other, never both.

import (
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Share group states, as Kafka's ShareGroupState names them.
const (
	shareEmpty  = "Empty"
	shareStable = "Stable"
)

// shareMemberIDMaxLen is the longest member id Kafka accepts
// (KafkaApis.isMemberIdValid: a client-generated UUID).
const shareMemberIDMaxLen = 36

// defaultShareInitializeRetryMs is how long partitions may stay
// initializing before a heartbeat asks for them again: twice
// offsets.commit.timeout.ms's default, as Kafka (KAFKA-19204).
const defaultShareInitializeRetryMs = 10000

type shareMember struct {
	id, clientID, clientHost string
	rackID                   *string
	topicNames               []string // sorted
	epoch, previousEpoch     int32
	assigned                 assignment
	sent                     assignment // the assignment last sent; nil: none yet
	sessionDue               int64
}

// shareTopic is one topic's partitions in the group's state-partition
// metadata (initializing or initialized).
type shareTopic struct {
	name       string
	partitions map[int32]bool
	// startOffset is what initializing partitions start at: -1 (the
	// group's share.auto.offset.reset decides) for a topic new to the
	// group, 0 for partitions added to a topic it knows, whose records
	// from before the initialization must not be skipped (KAFKA-20742).
	startOffset int64
}

type shareGroup struct {
	id              string
	epoch           int32
	assignmentEpoch int32
	members         map[string]*shareMember
	target          map[string]assignment
	// subscription is the subscribed topics that exist, with ids and
	// sizes, as of the last epoch bump. It is not persisted (Kafka 4.1+
	// keeps only a hash of it); after a load the first heartbeat computes
	// it and bumps the epoch once, which recomputes the same assignment.
	subscription Topics
	// initialized and initializing are the share-partitions whose state
	// the persister holds or is being asked to create, by topic id.
	initialized  map[[16]byte]*shareTopic
	initializing map[[16]byte]*shareTopic
	// deleting are the topics (id -> name) whose state a DeleteGroups is
	// deleting, or a DeleteGroups that was cut short left: they are
	// neither assigned nor initialized while deletionsInFlight counts a
	// deletion under way, since an initialization could land before the
	// deletion; after, a member subscribing to one initializes it anew (an
	// initialization replaces whatever state is left).
	deleting          map[[16]byte]string
	deletionsInFlight int // in memory: a loaded group has none
	// initializeAsked is when initializing was last handed to the driver
	// (in memory: a loaded group asks again at its first heartbeat).
	initializeAsked int64
	// initEpoch is the state epoch of the last ask (in memory).
	initEpoch int32
}

func newShareGroup(id string) *shareGroup {
	return &shareGroup{id: id, members: map[string]*shareMember{}, target: map[string]assignment{},
		initialized: map[[16]byte]*shareTopic{}, initializing: map[[16]byte]*shareTopic{}, deleting: map[[16]byte]string{}}
}

// state is the group's state as Kafka's ShareGroupState names it.
func (sg *shareGroup) state() string {
	if len(sg.members) == 0 {
		return shareEmpty
	}
	return shareStable
}

func (sg *shareGroup) sortedMembers() []string {
	ids := make([]string, 0, len(sg.members))
	for id := range sg.members {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// ShareInit asks the driver to initialize share-partition state
// (sharestate.Persister.Initialize) for the partitions of one topic, then
// to report with ShareGroupStateInitialized.
type ShareInit struct {
	GroupID    string
	TopicID    [16]byte
	Partitions []int32
	// StateEpoch is the state epoch to initialize with: the group epoch
	// when the initialization is asked for.
	StateEpoch int32
	// StartOffset is the share-partition start offset to initialize with
	// (-1: decided by share.auto.offset.reset).
	StartOffset int64
}

// SharePartitions are share-partitions of a group by topic id.
type SharePartitions map[[16]byte][]int32

func shgError(req *kmsg.ShareGroupHeartbeatRequest, code int16, msg string) *kmsg.ShareGroupHeartbeatResponse {
	resp := kmsg.NewPtrShareGroupHeartbeatResponse()
	resp.Version, resp.ErrorCode = req.Version, code
	if msg != "" {
		resp.ErrorMessage = &msg
	}
	return resp
}

// blank is Java's String.trim().isEmpty(): only characters up to U+0020.
func blank(s string) bool {
	return strings.TrimLeft(s, "\x00\x01\x02\x03\x04\x05\x06\x07\x08\t\n\x0b\x0c\r\x0e\x0f\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f ") == ""
}

// validateSHG is Kafka's member id check (KafkaApis.isMemberIdValid: no
// message) and throwIfShareGroupHeartbeatRequestIsInvalid.
func validateSHG(req *kmsg.ShareGroupHeartbeatRequest) (bad bool, msg string) {
	switch {
	case req.MemberID == "" || len(req.MemberID) > shareMemberIDMaxLen:
		return true, ""
	case blank(req.MemberID):
		return true, "MemberId can't be empty."
	case blank(req.GroupID):
		return true, "GroupId can't be empty."
	case req.RackID != nil && blank(*req.RackID):
		return true, "RackId can't be empty."
	case req.MemberEpoch == 0 && len(req.SubscribedTopicNames) == 0:
		return true, "SubscribedTopicNames must be set in first request."
	case req.MemberEpoch < -1:
		return true, "MemberEpoch is invalid."
	}
	return false, ""
}

// shareTimeouts are a group's session timeout and heartbeat interval: its
// dynamic configs (share.session.timeout.ms, share.heartbeat.interval.ms)
// over the broker's.
func (s *Shard) shareTimeouts(groupID string) (sessionMs, heartbeatMs int32) {
	sessionMs, heartbeatMs = s.cfg.ShareSessionTimeoutMs, s.cfg.ShareHeartbeatIntervalMs
	if s.cfg.ShareGroupTimeouts != nil {
		if sm, hm := s.cfg.ShareGroupTimeouts(groupID); sm > 0 || hm > 0 {
			if sm > 0 {
				sessionMs = sm
			}
			if hm > 0 {
				heartbeatMs = hm
			}
		}
	}
	return sessionMs, heartbeatMs
}

// ShareGroupHeartbeat handles a ShareGroupHeartbeat (Kafka's
// GroupMetadataManager.shareGroupHeartbeat). topics are the cluster's topics
// now. The answer goes out once the Result's records are written; its
// ShareInit lists the partitions the driver must initialize.
func (s *Shard) ShareGroupHeartbeat(now int64, req *kmsg.ShareGroupHeartbeatRequest, clientID, clientHost string, topics Topics, respond Responder) Result {
	var r Result
	before := s.shareRecordsOf(req.GroupID)
	resp := s.shareHeartbeat(now, req, clientID, clientHost, topics, &r)
	r.Records = append(r.Records, shareDiff(before, s.shareRecordsOf(req.GroupID))...)
	r.reply(respond, resp)
	r.Failed = func(code int16) []Reply {
		return []Reply{{To: respond, Resp: shgError(req, code, "")}}
	}
	return r
}

func (s *Shard) shareHeartbeat(now int64, req *kmsg.ShareGroupHeartbeatRequest, clientID, clientHost string, topics Topics, r *Result) *kmsg.ShareGroupHeartbeatResponse {
	if bad, msg := validateSHG(req); bad {
		return shgError(req, kerr.InvalidRequest.Code, msg)
	}
	if _, other := s.groups[req.GroupID]; other {
		return shgError(req, kerr.GroupIDNotFound.Code, "Group "+req.GroupID+" is not a share group.")
	}
	sg := s.shares[req.GroupID]
	if sg == nil {
		switch req.MemberEpoch {
		case 0:
		case -1:
			return shgError(req, kerr.GroupIDNotFound.Code, "Group "+req.GroupID+" not found.")
		default:
			return shgError(req, kerr.GroupIDNotFound.Code, "Share group "+req.GroupID+" not found.")
		}
		sg = newShareGroup(req.GroupID)
		s.shares[sg.id] = sg
	}
	if req.MemberEpoch == -1 {
		m := sg.members[req.MemberID]
		if m == nil {
			return shgError(req, kerr.UnknownMemberID.Code, "Member "+req.MemberID+" is not a member of group "+sg.id+".")
		}
		s.removeShareMembers(sg, r, m)
		resp := kmsg.NewPtrShareGroupHeartbeatResponse()
		resp.Version = req.Version
		id := m.id
		resp.MemberID, resp.MemberEpoch = &id, -1
		return resp
	}

	m := sg.members[req.MemberID]
	bump := false
	if m == nil {
		if req.MemberEpoch != 0 {
			return shgError(req, kerr.UnknownMemberID.Code, "Member "+req.MemberID+" is not a member of group "+sg.id+".")
		}
		if s.cfg.ShareMaxSize > 0 && len(sg.members) >= int(s.cfg.ShareMaxSize) {
			return shgError(req, kerr.GroupMaxSizeReached.Code, "The share group has reached its maximum capacity of "+strconv.Itoa(int(s.cfg.ShareMaxSize))+" members.")
		}
		m = &shareMember{id: req.MemberID, assigned: assignment{}}
		sg.members[m.id] = m
		bump = true
	} else if code, msg := checkShareMemberEpoch(m, req.MemberEpoch); code != 0 {
		return shgError(req, code, msg)
	}
	if req.MemberEpoch == 0 {
		// A member (re)joining starts over: it is sent its assignment.
		m.sent = nil
	}
	m.clientID, m.clientHost = clientID, clientHost
	if req.RackID != nil {
		m.rackID = req.RackID
	}
	if req.SubscribedTopicNames != nil {
		names := append([]string(nil), req.SubscribedTopicNames...)
		sort.Strings(names)
		names = slices.Compact(names)
		if !sameStrings(names, m.topicNames) {
			m.topicNames = names
			bump = true
		}
	}
	sessionMs, heartbeatMs := s.shareTimeouts(sg.id)
	m.sessionDue = now + int64(sessionMs)

	s.updateShareTarget(now, sg, topics, bump, r)
	if m.epoch != sg.assignmentEpoch {
		// ShareGroupAssignmentBuilder: no revocation, straight to target.
		m.previousEpoch, m.epoch = m.epoch, sg.assignmentEpoch
	}
	m.assigned = sg.target[m.id].clone()

	resp := kmsg.NewPtrShareGroupHeartbeatResponse()
	resp.Version = req.Version
	id := m.id
	resp.MemberID, resp.MemberEpoch, resp.HeartbeatIntervalMillis = &id, m.epoch, heartbeatMs
	// Kafka answers a joining member, a full request (one naming its
	// topics) and a changed assignment with the assignment.
	if m.sent == nil || !m.sent.equal(m.assigned) || req.SubscribedTopicNames != nil {
		a := kmsg.NewShareGroupHeartbeatResponseAssignment()
		ids, parts := m.assigned.byTopic()
		a.TopicPartitions = []kmsg.ShareGroupHeartbeatResponseAssignmentTopicPartition{}
		for _, tid := range ids {
			t := kmsg.NewShareGroupHeartbeatResponseAssignmentTopicPartition()
			t.TopicID, t.Partitions = tid, parts[tid]
			a.TopicPartitions = append(a.TopicPartitions, t)
		}
		resp.Assignment = &a
		m.sent = m.assigned.clone()
	}
	return resp
}

// checkShareMemberEpoch is Kafka's throwIfShareGroupMemberEpochIsInvalid:
// the member's epoch, or its previous one (the answer that moved it on was
// lost), else FENCED_MEMBER_EPOCH.
func checkShareMemberEpoch(m *shareMember, epoch int32) (int16, string) {
	if epoch == 0 || epoch == m.epoch {
		return 0, ""
	}
	if epoch > m.epoch {
		return kerr.FencedMemberEpoch.Code, "The share group member has a greater member epoch (" + strconv.Itoa(int(epoch)) +
			") than the one known by the group coordinator (" + strconv.Itoa(int(m.epoch)) + "). The member must abandon all its partitions and rejoin."
	}
	if epoch != m.previousEpoch {
		return kerr.FencedMemberEpoch.Code, "The share group member has a smaller member epoch (" + strconv.Itoa(int(epoch)) +
			") than the one known by the group coordinator (" + strconv.Itoa(int(m.epoch)) + "). The member must abandon all its partitions and rejoin."
	}
	m.sent = nil
	return 0, ""
}

// updateShareTarget recomputes the subscription metadata, bumps the group
// epoch when it or the membership changed (bump), asks for the
// initialization of subscribed partitions that have no state yet, and
// computes the target assignment over the initialized ones when the group
// epoch moved past the assignment epoch.
func (s *Shard) updateShareTarget(now int64, sg *shareGroup, topics Topics, bump bool, r *Result) {
	// No topics at all is no metadata yet (a loaded shard implies
	// __consumer_offsets), not every topic deleted.
	if len(topics) > 0 && sg.forgetDeletedTopics(topicIDs(topics)) {
		bump = true
	}
	meta := sg.subscribedTopics(topics)
	if !sameTopics(meta, sg.subscription) {
		sg.subscription = meta
		bump = true
	}
	if bump {
		sg.epoch++
		s.cfg.Meters.ShareGroupRebalanced()
	}
	s.askShareInit(now, sg, r)
	if sg.epoch > sg.assignmentEpoch {
		sg.target = assignShare(sg.members, sg.subscription, sg.initialized, sg.target)
		sg.assignmentEpoch = sg.epoch
	}
}

// forgetDeletedTopics drops the topics the cluster no longer has (by id)
// from the group's initialized and initializing share-partitions, as
// Kafka's coordinator does on a topic deletion (maybeCleanupShareGroupState):
// their ShareGroupStatePartitionMetadata record shrinks, and a topic
// created again under the same name, a new id, is initialized anew. The
// share coordinator deletes their state itself (sharecoord's orphan
// pruning). True if the group changed.
func (sg *shareGroup) forgetDeletedTopics(exist map[[16]byte]bool) bool {
	changed := false
	for _, m := range []map[[16]byte]*shareTopic{sg.initialized, sg.initializing} {
		for id := range m {
			if !exist[id] {
				delete(m, id)
				changed = true
			}
		}
	}
	for id := range sg.deleting {
		if !exist[id] {
			delete(sg.deleting, id)
			changed = true
		}
	}
	return changed
}

// topicIDs is the set of the topics' ids.
func topicIDs(topics Topics) map[[16]byte]bool {
	ids := make(map[[16]byte]bool, len(topics))
	for _, t := range topics {
		ids[t.ID] = true
	}
	return ids
}

// forgetDeletedShareTopics runs forgetDeletedTopics over every share group
// (those without heartbeats too), bumping the epoch and reassigning the
// groups that changed.
func (s *Shard) forgetDeletedShareTopics(topics Topics, r *Result) {
	if len(topics) == 0 {
		return // no metadata yet, as in updateShareTarget
	}
	exist := topicIDs(topics)
	for _, id := range s.sortedShareGroupIDs() {
		sg := s.shares[id]
		before := sg.records()
		if !sg.forgetDeletedTopics(exist) {
			continue
		}
		sg.subscription = sg.subscribedTopics(topics)
		sg.epoch++
		sg.target = assignShare(sg.members, sg.subscription, sg.initialized, sg.target)
		sg.assignmentEpoch = sg.epoch
		r.Records = append(r.Records, shareDiff(before, sg.records())...)
	}
}

// subscribedTopics are the topics the members subscribe to that exist.
func (sg *shareGroup) subscribedTopics(topics Topics) Topics {
	out := Topics{}
	for _, m := range sg.members {
		for _, n := range m.topicNames {
			if t, ok := topics[n]; ok {
				out[n] = t
			}
		}
	}
	return out
}

func sameTopics(a, b Topics) bool {
	if len(a) != len(b) {
		return false
	}
	for n, t := range a {
		if old, ok := b[n]; !ok || old != t {
			return false
		}
	}
	return true
}

// askShareInit records the subscribed partitions with no state as
// initializing and asks the driver to initialize them, with those left
// initializing for longer than the retry interval (an initialization lost
// with a failed driver or a moved coordinator).
func (s *Shard) askShareInit(now int64, sg *shareGroup, r *Result) {
	retry := s.cfg.ShareInitializeRetryMs
	if retry <= 0 {
		retry = defaultShareInitializeRetryMs
	}
	resend := len(sg.initializing) > 0 && (sg.initializeAsked == 0 || now-sg.initializeAsked >= retry)
	added := false
	for name, t := range sg.subscription {
		if _, ok := sg.deleting[t.ID]; ok {
			if sg.deletionsInFlight > 0 {
				continue // its state is being deleted: initialized after
			}
			delete(sg.deleting, t.ID)
		}
		for p := int32(0); p < t.Partitions; p++ {
			if st := sg.initialized[t.ID]; st != nil && st.partitions[p] {
				continue
			}
			st := sg.initializing[t.ID]
			if st == nil {
				st = &shareTopic{name: name, partitions: map[int32]bool{}, startOffset: -1}
				if sg.initialized[t.ID] != nil {
					st.startOffset = 0
				}
				sg.initializing[t.ID] = st
			}
			if !st.partitions[p] {
				st.partitions[p] = true
				added = true
			}
		}
	}
	if !added && !resend {
		return
	}
	if resend || sg.epoch <= sg.initEpoch {
		// The persister takes only a newer state epoch, and an earlier ask
		// (left over, or failed here after reaching it) may have used this
		// one: ask with a bumped group epoch.
		sg.epoch++
	}
	sg.initializeAsked, sg.initEpoch = now, sg.epoch
	for _, id := range sortedTopicIDs(sg.initializing) {
		st := sg.initializing[id]
		r.ShareInit = append(r.ShareInit, ShareInit{GroupID: sg.id, TopicID: id, Partitions: sortedPartitions(st.partitions),
			StateEpoch: sg.epoch, StartOffset: st.startOffset})
	}
}

// ShareGroupStateInitialized records the outcome of a ShareInit (Kafka's
// shareGroupInitializeStateSuccess / Failure): initialized partitions move
// from initializing to initialized and the group epoch is bumped so they
// are assigned; failed ones leave initializing and are asked for again at a
// later heartbeat. A group deleted meanwhile is left alone.
func (s *Shard) ShareGroupStateInitialized(now int64, groupID string, topicID [16]byte, partitions []int32, ok bool) Result {
	var r Result
	sg := s.shares[groupID]
	if sg == nil {
		return r
	}
	before := sg.records()
	st := sg.initializing[topicID]
	if st == nil {
		return r
	}
	changed := false
	for _, p := range partitions {
		if !st.partitions[p] {
			continue
		}
		delete(st.partitions, p)
		changed = true
		if !ok {
			continue
		}
		done := sg.initialized[topicID]
		if done == nil {
			done = &shareTopic{name: st.name, partitions: map[int32]bool{}}
			sg.initialized[topicID] = done
		}
		done.partitions[p] = true
	}
	if len(st.partitions) == 0 {
		delete(sg.initializing, topicID)
	}
	if !changed {
		return r
	}
	if ok {
		sg.epoch++
		sg.target = assignShare(sg.members, sg.subscription, sg.initialized, sg.target)
		sg.assignmentEpoch = sg.epoch
	} else {
		sg.initializeAsked = 0
	}
	r.Records = shareDiff(before, sg.records())
	return r
}

// removeShareMembers drops members that left or were fenced, bumps the
// group epoch and reassigns, and tells Config.ShareMemberLeft once the
// records are written, so that the partition leaders release what the
// members had acquired.
func (s *Shard) removeShareMembers(sg *shareGroup, r *Result, ms ...*shareMember) {
	for _, m := range ms {
		delete(sg.members, m.id)
		delete(sg.target, m.id)
	}
	sg.epoch++
	sg.target = assignShare(sg.members, sg.subscription, sg.initialized, sg.target)
	sg.assignmentEpoch = sg.epoch
	if left := s.cfg.ShareMemberLeft; left != nil {
		ids := make([]string, len(ms))
		for i, m := range ms {
			ids[i] = m.id
		}
		prev := r.Apply
		groupID := sg.id
		r.Apply = func() {
			if prev != nil {
				prev()
			}
			for _, id := range ids {
				left(groupID, id)
			}
		}
	}
}

// shareTick fences the share members whose sessions ended.
func (s *Shard) shareTick(now int64, r *Result) {
	for _, id := range s.sortedShareGroupIDs() {
		sg := s.shares[id]
		var expired []*shareMember
		for _, mid := range sg.sortedMembers() {
			if m := sg.members[mid]; now >= m.sessionDue {
				expired = append(expired, m)
			}
		}
		if len(expired) == 0 {
			continue
		}
		before := sg.records()
		s.removeShareMembers(sg, r, expired...)
		r.Records = append(r.Records, shareDiff(before, sg.records())...)
	}
}

func (s *Shard) shareDeadlines(consider func(int64)) {
	for _, sg := range s.shares {
		for _, m := range sg.members {
			consider(m.sessionDue)
		}
	}
}

func (s *Shard) sortedShareGroupIDs() []string {
	ids := make([]string, 0, len(s.shares))
	for id := range s.shares {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// shareRecordsOf is a share group's records by key (none if there is no
// such group).
func (s *Shard) shareRecordsOf(groupID string) map[string][]byte {
	if sg := s.shares[groupID]; sg != nil {
		return sg.records()
	}
	return map[string][]byte{}
}

func sortedTopicIDs(m map[[16]byte]*shareTopic) [][16]byte {
	ids := make([][16]byte, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return string(ids[i][:]) < string(ids[j][:]) })
	return ids
}

func sortedPartitions(m map[int32]bool) []int32 {
	out := make([]int32, 0, len(m))
	for p := range m {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}
