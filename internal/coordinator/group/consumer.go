package group

// The KIP-848 consumer group protocol (Kafka's ConsumerGroup and the
// consumer half of GroupMetadataManager): members heartbeat with their
// epoch and owned partitions; the coordinator bumps the group epoch when
// membership, subscriptions or the subscribed topics change, computes a
// target assignment with a server-side assignor, and moves each member
// towards its target one step at a time (Kafka's CurrentAssignmentBuilder):
// a member first revokes what it must give up, and a partition is handed to
// its new owner only once the previous owner no longer holds it.

import (
	"regexp"
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TopicInfo is what the assignors need to know of a topic.
type TopicInfo struct {
	ID         [16]byte
	Partitions int32
}

// Topics are the cluster's topics by name, as the handler sees them when
// the request arrives (the shard itself keeps no metadata).
type Topics map[string]TopicInfo

// tp is one partition of a topic, by topic id.
type tp struct {
	topic     [16]byte
	partition int32
}

// assignment is a set of partitions.
type assignment map[tp]bool

func (a assignment) clone() assignment {
	out := make(assignment, len(a))
	for k := range a {
		out[k] = true
	}
	return out
}

func (a assignment) equal(b assignment) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}

// byTopic groups an assignment by topic, sorted, for responses.
func (a assignment) byTopic() ([][16]byte, map[[16]byte][]int32) {
	m := map[[16]byte][]int32{}
	for k := range a {
		m[k.topic] = append(m[k.topic], k.partition)
	}
	ids := make([][16]byte, 0, len(m))
	for id, ps := range m {
		sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return string(ids[i][:]) < string(ids[j][:]) })
	return ids, m
}

// Member states of the reconciliation (Kafka's MemberState).
const (
	memberStable              = "stable"
	memberUnrevokedPartitions = "unrevoked_partitions"
	memberUnreleasedPartition = "unreleased_partitions"
)

type cmember struct {
	id, clientID, clientHost string
	instanceID, rackID       *string
	epoch, previousEpoch     int32
	state                    string
	topicNames               []string
	regex                    string
	serverAssignor           string
	rebalanceTimeoutMs       int32

	assigned   assignment                   // partitions the member may own now
	assignedAt map[[16]byte]map[int32]int32 // the member epoch each assigned partition was given at
	revoking   assignment                   // partitions it must still give up
	sent       assignment                   // the assignment last sent; nil: none yet

	sessionDue    int64
	revokeDue     int64 // fenced if still revoking then; 0: not revoking
	hasSubscribed bool

	// classic is set for a member that speaks the classic protocol
	// (JoinGroup, SyncGroup, Heartbeat) inside a consumer group.
	classic *classicMember
	// joinDue and syncDue are a classic member's timers (Kafka's join and
	// sync timeouts): it is fenced if it has not rejoined after being told
	// to, or not synced after its join, within its rebalance timeout. 0:
	// not running. Classic members have no revocation timer.
	joinDue, syncDue int64
}

// classicMember is what a consumer group keeps of a classic member (Kafka's
// ClassicMemberMetadata): its session timeout and the assignment protocols
// it joined with, in its order of preference.
type classicMember struct {
	sessionTimeoutMs int32
	protocols        []protocol
}

// leaveStaticEpoch is the member epoch of a static member that left
// temporarily (Kafka's LEAVE_GROUP_STATIC_MEMBER_EPOCH): it keeps its place
// and its partitions, reserved for its instance id, until its session ends.
// The epoch is written in its ConsumerGroupCurrentMemberAssignment record,
// so a coordinator that loads the group keeps the reservation too.
const leaveStaticEpoch = -2

// consumerGroup is the KIP-848 half of a group.
type consumerGroup struct {
	epoch           int32
	assignmentEpoch int32
	members         map[string]*cmember
	static          map[string]string // instance id -> member id
	target          map[string]assignment
	// subscription is Kafka's subscription metadata: the subscribed topics
	// that exist, with their ids and sizes, as of the last group epoch bump
	// (a change bumps the epoch). nil until first computed non-empty, as
	// Kafka writes its ConsumerGroupPartitionMetadata record only once it
	// differs from the empty metadata of a new group.
	subscription Topics
	names        map[string][16]byte // topic ids by name, for offset commits
}

func newConsumerGroup() *consumerGroup {
	return &consumerGroup{members: map[string]*cmember{}, static: map[string]string{}, target: map[string]assignment{}, names: map[string][16]byte{}}
}

// consumerState is the group's state as Kafka's ConsumerGroupState names it.
func (c *consumerGroup) state() string {
	if len(c.members) == 0 {
		return "Empty"
	}
	if c.assignmentEpoch != c.epoch {
		return "Assigning"
	}
	for _, m := range c.members {
		if m.epoch != c.assignmentEpoch || m.state != memberStable {
			return "Reconciling"
		}
	}
	return "Stable"
}

func (c *consumerGroup) sortedMembers() []string {
	ids := make([]string, 0, len(c.members))
	for id := range c.members {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// subscribed resolves what each member subscribes to: topic names that
// exist plus the regex matches (a full match, RE2 as Kafka's RE2J; like
// Kafka, internal topics are not skipped), and the subscription metadata
// of all of them (Kafka's computeSubscriptionMetadata).
func (c *consumerGroup) subscribed(topics Topics) (map[string][]string, Topics) {
	out := map[string][]string{}
	meta := Topics{}
	names := make([]string, 0, len(topics))
	for n := range topics {
		names = append(names, n)
	}
	sort.Strings(names)
	for id, m := range c.members {
		set := map[string]bool{}
		for _, n := range m.topicNames {
			if _, ok := topics[n]; ok {
				set[n] = true
			}
		}
		if m.regex != "" {
			if re, err := regexp.Compile("^(?:" + m.regex + ")$"); err == nil {
				for _, n := range names {
					if re.MatchString(n) {
						set[n] = true
					}
				}
			}
		}
		for n := range set {
			out[id] = append(out[id], n)
			meta[n] = topics[n]
			c.names[n] = topics[n].ID
		}
		sort.Strings(out[id])
	}
	return out, meta
}

// sameSubscription is whether the subscription metadata is unchanged (nil
// and empty are the same: no topics).
func (c *consumerGroup) sameSubscription(meta Topics) bool {
	if len(meta) != len(c.subscription) {
		return false
	}
	for n, t := range meta {
		if old, ok := c.subscription[n]; !ok || old != t {
			return false
		}
	}
	return true
}

// owner is who holds a partition now (assigned or still revoking), other
// than the given member.
func (c *consumerGroup) heldByOther(p tp, self string) bool {
	for id, m := range c.members {
		if id != self && (m.assigned[p] || m.revoking[p]) {
			return true
		}
	}
	return false
}

// reconcile moves a member one step towards its target (Kafka's
// CurrentAssignmentBuilder). owned is what the member reports owning (nil:
// not reported in this heartbeat).
func (c *consumerGroup) reconcile(m *cmember, owned assignment, now int64) {
	target := c.target[m.id]
	if target == nil {
		target = assignment{}
	}
	switch {
	case m.state == memberUnrevokedPartitions:
		if owned == nil {
			return
		}
		for p := range m.revoking {
			if owned[p] {
				return // still revoking
			}
		}
		m.revoking = assignment{}
		m.revokeDue = 0
		c.nextStep(m, target, now)
	case m.epoch != c.assignmentEpoch:
		c.nextStep(m, target, now)
	case m.state == memberUnreleasedPartition:
		c.nextStep(m, target, now)
	}
}

// nextStep is CurrentAssignmentBuilder.computeNextAssignment.
func (c *consumerGroup) nextStep(m *cmember, target assignment, now int64) {
	kept, revoke := assignment{}, assignment{}
	for p := range m.assigned {
		if target[p] {
			kept[p] = true
		} else {
			revoke[p] = true
		}
	}
	if len(revoke) > 0 {
		// The member keeps its epoch until it has revoked. A classic
		// member revokes by rejoining; its join timer bounds that instead.
		m.assigned, m.revoking, m.state = kept, revoke, memberUnrevokedPartitions
		if m.classic == nil {
			m.revokeDue = now + int64(m.rebalanceTimeoutMs)
		}
		return
	}
	unreleased := false
	for p := range target {
		if kept[p] {
			continue
		}
		if c.heldByOther(p, m.id) {
			unreleased = true
			continue
		}
		kept[p] = true
	}
	m.assigned = kept
	if m.epoch != c.assignmentEpoch {
		m.previousEpoch, m.epoch = m.epoch, c.assignmentEpoch
	}
	at := map[[16]byte]map[int32]int32{}
	for p := range kept {
		e, ok := m.assignedAt[p.topic][p.partition]
		if !ok {
			e = m.epoch
		}
		if at[p.topic] == nil {
			at[p.topic] = map[int32]int32{}
		}
		at[p.topic][p.partition] = e
	}
	m.assignedAt = at
	m.state = memberStable
	if unreleased {
		m.state = memberUnreleasedPartition
	}
}

func cghError(req *kmsg.ConsumerGroupHeartbeatRequest, code int16, msg string) *kmsg.ConsumerGroupHeartbeatResponse {
	resp := kmsg.NewPtrConsumerGroupHeartbeatResponse()
	resp.Version, resp.ErrorCode = req.Version, code
	if msg != "" {
		resp.ErrorMessage = &msg
	}
	return resp
}

func ownedFrom(ts []kmsg.ConsumerGroupHeartbeatRequestTopic) assignment {
	if ts == nil {
		return nil
	}
	a := assignment{}
	for _, t := range ts {
		for _, p := range t.Partitions {
			a[tp{t.TopicID, p}] = true
		}
	}
	return a
}

// validateCGH is Kafka's throwIfConsumerGroupHeartbeatRequestIsInvalid.
func validateCGH(req *kmsg.ConsumerGroupHeartbeatRequest) string {
	switch {
	case req.Group == "":
		return "GroupId can't be empty."
	case req.Version >= 1 && req.MemberID == "":
		return "MemberId can't be empty."
	case req.MemberEpoch == 0 && req.RebalanceTimeoutMillis == -1:
		return "RebalanceTimeoutMs must be provided in first request."
	case req.MemberEpoch == 0 && req.Topics == nil:
		return "TopicPartitions must be empty when (re-)joining."
	case req.MemberEpoch == 0 && req.SubscribedTopicNames == nil && req.SubscribedTopicRegex == nil:
		return "SubscribedTopicNames or SubscribedTopicRegex must be set in first request."
	case req.MemberEpoch == -2 && req.InstanceID == nil:
		return "InstanceId can't be null when MemberEpoch is -2."
	case req.MemberEpoch < -2:
		return "MemberEpoch is invalid."
	}
	return ""
}
