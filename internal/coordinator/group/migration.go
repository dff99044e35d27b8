package group

// Online migration between the classic and the consumer group protocol
// (KIP-848, Kafka 4.0's GroupMetadataManager): the first member to send a
// ConsumerGroupHeartbeat to a classic group of the "consumer" protocol type
// turns it into a consumer group whose classic members keep their
// partitions (an upgrade); when the last member using the consumer protocol
// leaves a consumer group whose other members all use the classic protocol,
// it turns back into a classic group (a downgrade).
// group.consumer.migration.policy says which of the two may happen to a
// group with members; empty groups convert either way regardless.
//
// A conversion writes the new group's records and tombstones the old
// group's, in one batch, so that loading the partition rebuilds the group
// as it is after the conversion.

import (
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// MigrationPolicy is group.consumer.migration.policy (Kafka's
// ConsumerGroupMigrationPolicy). The zero value is Kafka 4.0's default.
type MigrationPolicy int8

// The migration policies.
const (
	MigrationBidirectional MigrationPolicy = iota // upgrade and downgrade
	MigrationUpgrade                              // classic to consumer only
	MigrationDowngrade                            // consumer to classic only
	MigrationDisabled                             // neither
)

// ParseMigrationPolicy reads a policy name case-insensitively; an unknown
// name is disabled, as Kafka's parse makes it.
func ParseMigrationPolicy(name string) MigrationPolicy {
	switch strings.ToLower(strings.TrimSpace(name)) {
	case "bidirectional":
		return MigrationBidirectional
	case "upgrade":
		return MigrationUpgrade
	case "downgrade":
		return MigrationDowngrade
	}
	return MigrationDisabled
}

func (p MigrationPolicy) String() string {
	return [...]string{"bidirectional", "upgrade", "downgrade", "disabled"}[p]
}

func (p MigrationPolicy) upgrades() bool { return p == MigrationBidirectional || p == MigrationUpgrade }
func (p MigrationPolicy) downgrades() bool {
	return p == MigrationBidirectional || p == MigrationDowngrade
}

// change collects one consumer group operation's output: the records are
// the difference of the group's consumer records before and after it,
// preceded by pre (the tombstone of the classic group an upgrade replaces)
// and followed by post (the metadata of the classic group a downgrade
// makes); replies answer classic members a conversion interrupted.
type change struct {
	groupID   string
	before    map[string][]byte
	pre, post []Record
	replies   []Reply
}

func (s *Shard) startChange(groupID string) *change {
	ch := &change{groupID: groupID}
	if g := s.groups[groupID]; g != nil {
		ch.before = g.consumerRecords()
	}
	return ch
}

// finish adds the change's records, in the order they must be written, and
// its replies to r.
func (s *Shard) finish(ch *change, r *Result) {
	var after map[string][]byte
	if g := s.groups[ch.groupID]; g != nil {
		after = g.consumerRecords()
	}
	r.Records = append(r.Records, ch.pre...)
	r.Records = append(r.Records, diffRecords(ch.before, after)...)
	r.Records = append(r.Records, ch.post...)
	r.Replies = append(r.Replies, ch.replies...)
}

// topics are the cluster's topics as Config.Topics gives them.
func (s *Shard) topics() Topics {
	if s.cfg.Topics == nil {
		return Topics{}
	}
	return s.cfg.Topics()
}

// topicNames maps topic ids to names: the cluster's topics, and those the
// group subscribed to (a deleted topic keeps its name there).
func (s *Shard) topicNames(c *consumerGroup) map[[16]byte]string {
	out := map[[16]byte]string{}
	for n, id := range c.names {
		out[id] = n
	}
	for n, t := range s.topics() {
		out[t.ID] = n
	}
	return out
}

// readConsumerSubscription reads a classic member's protocol metadata in
// the "consumer" embedded protocol (ConsumerProtocolSubscription).
func readConsumerSubscription(b []byte) (kmsg.ConsumerMemberMetadata, error) {
	var meta kmsg.ConsumerMemberMetadata
	err := meta.ReadFrom(b)
	return meta, err
}

// assignmentFrom turns topic names and partitions into an assignment by
// topic id; topics the cluster does not have are left out, as Kafka does.
func assignmentFrom(topics Topics, each func(add func(topic string, partitions []int32))) assignment {
	a := assignment{}
	each(func(topic string, partitions []int32) {
		t, ok := topics[topic]
		if !ok {
			return
		}
		for _, p := range partitions {
			a[tp{t.ID, p}] = true
		}
	})
	return a
}

// ownedFromSubscription is what a classic member reports owning: the owned
// partitions of its subscription (v1+; none before).
func ownedFromSubscription(meta kmsg.ConsumerMemberMetadata, topics Topics) assignment {
	return assignmentFrom(topics, func(add func(string, []int32)) {
		for _, o := range meta.OwnedPartitions {
			add(o.Topic, o.Partitions)
		}
	})
}

// assignmentBytes serializes partitions in the consumer protocol's
// assignment format, at the version of the member's subscription metadata
// (Kafka's prepareAssignment): what a classic member's SyncGroup returns.
func assignmentBytes(a assignment, names map[[16]byte]string, subscription []byte) []byte {
	out := kmsg.ConsumerMemberAssignment{}
	if len(subscription) >= 2 {
		out.Version = min(max(int16(subscription[0])<<8|int16(subscription[1]), 0), 3)
	}
	ids, parts := a.byTopic()
	for _, id := range ids {
		name, ok := names[id]
		if !ok {
			continue
		}
		out.Topics = append(out.Topics, kmsg.ConsumerMemberAssignmentTopic{Topic: name, Partitions: parts[id]})
	}
	sort.Slice(out.Topics, func(i, j int) bool { return out.Topics[i].Topic < out.Topics[j].Topic })
	return out.AppendTo(nil)
}

// classicMembers counts the members using the classic protocol.
func (c *consumerGroup) classicMembers() int {
	n := 0
	for _, m := range c.members {
		if m.classic != nil {
			n++
		}
	}
	return n
}

// supportsClassicProtocols is ConsumerGroup.supportsClassicProtocols: a
// classic member may join if it uses the "consumer" protocol type and
// shares a protocol with every classic member already in the group.
func (c *consumerGroup) supportsClassicProtocols(protocolType string, ps []protocol) bool {
	if protocolType != "consumer" {
		return false
	}
	if len(c.members) == 0 {
		return len(ps) > 0
	}
	counts := map[string]int{}
	for _, m := range c.members {
		if m.classic == nil {
			continue
		}
		seen := map[string]bool{}
		for _, p := range m.classic.protocols {
			if !seen[p.name] {
				seen[p.name] = true
				counts[p.name]++
			}
		}
	}
	classic := c.classicMembers()
	for _, p := range ps {
		if counts[p.name] == classic {
			return true
		}
	}
	return false
}

// upgrade turns a live classic group into a consumer group (Kafka's
// validateOnlineUpgrade, convertToConsumerGroup and
// ConsumerGroup.fromClassicGroup). Every member becomes a classic member
// of the consumer group at the group's generation, stable, with its last
// assignment as both its assignment and its target; joins and syncs in
// flight are answered REBALANCE_IN_PROGRESS so that those members rejoin.
// The classic group's metadata is tombstoned in ch.pre. It returns the
// message of the GROUP_ID_NOT_FOUND error that refuses the upgrade, or "".
func (s *Shard) upgrade(now int64, g *group, topics Topics, ch *change) string {
	notConsumer := "Group " + g.id + " is not a consumer group."
	switch {
	case !s.cfg.ConsumerMigrationPolicy.upgrades(), g.protocolType != "consumer":
		return notConsumer
	case s.cfg.ConsumerMaxSize > 0 && len(g.members) > int(s.cfg.ConsumerMaxSize):
		return notConsumer
	}
	protocolName := g.protocolName
	if protocolName == "" {
		protocolName = g.selectProtocol()
	}
	c := newConsumerGroup()
	c.epoch, c.assignmentEpoch = g.generation, g.generation
	for _, id := range g.order {
		m := g.members[id]
		meta, err := readConsumerSubscription(m.metadataFor(protocolName))
		var owned kmsg.ConsumerMemberAssignment
		if err == nil && len(m.assignment) > 0 {
			// A member that has no assignment yet (it joined the rebalance
			// in progress) starts with none.
			err = owned.ReadFrom(m.assignment)
		}
		if err != nil {
			return "Cannot upgrade the classic group " + g.id + " to consumer group because the embedded consumer protocol is malformed."
		}
		assigned := assignmentFrom(topics, func(add func(string, []int32)) {
			for _, t := range owned.Topics {
				add(t.Topic, t.Partitions)
			}
		})
		names := append([]string(nil), meta.Topics...)
		sort.Strings(names)
		cm := &cmember{
			id: id, clientID: m.clientID, clientHost: m.clientHost, instanceID: m.instanceID, rackID: meta.Rack,
			epoch: g.generation, previousEpoch: g.generation, state: memberStable, topicNames: names,
			rebalanceTimeoutMs: m.rebalanceTimeoutMs, assigned: assigned, revoking: assignment{},
			sessionDue: now + int64(m.sessionTimeoutMs),
			classic:    &classicMember{sessionTimeoutMs: m.sessionTimeoutMs, protocols: m.protocols},
		}
		cm.assignedAt = map[[16]byte]map[int32]int32{}
		for p := range assigned {
			if cm.assignedAt[p.topic] == nil {
				cm.assignedAt[p.topic] = map[int32]int32{}
			}
			cm.assignedAt[p.topic][p.partition] = cm.epoch
		}
		c.members[id] = cm
		c.target[id] = assigned.clone()
		if m.instanceID != nil {
			c.static[*m.instanceID] = id
		}
	}
	for _, id := range g.order {
		m := g.members[id]
		if m.joinReply != nil {
			ch.replies = append(ch.replies, Reply{To: m.joinReply, Resp: joinError(m.joinVersion, id, kerr.RebalanceInProgress.Code)})
		}
		if m.syncReply != nil {
			ch.replies = append(ch.replies, Reply{To: m.syncReply, Resp: syncError(kerr.RebalanceInProgress.Code)})
		}
	}
	ch.pre = append(ch.pre, Record{Key: groupKey(g.id)})
	s.resetGroup(g)
	g.consumer = c
	return ""
}

// canDowngrade is Kafka's validateOnlineDowngradeWithFencedMember: the
// group may turn classic when the leaving member is its last one using the
// consumer protocol, some classic member remains, the policy allows it and
// the classic members fit group.max.size.
func (s *Shard) canDowngrade(c *consumerGroup, leaving string) bool {
	m := c.members[leaving]
	return m != nil && m.classic == nil && len(c.members) > 1 && c.classicMembers() == len(c.members)-1 &&
		s.cfg.ConsumerMigrationPolicy.downgrades() && len(c.members)-1 <= s.cfg.MaxSize
}

// downgrade turns a consumer group into a classic group of its classic
// members, without the leaving member (Kafka's convertToClassicGroup and
// ClassicGroup.fromConsumerGroup): generation = the group epoch, each
// member's assignment its target assignment in the consumer protocol's
// format, written as the group's metadata after the consumer records'
// tombstones; then a rebalance starts, so the members rejoin.
func (s *Shard) downgrade(now int64, g *group, leaving string, ch *change) {
	s.toClassic(now, g, leaving, ch)
	var r Result
	s.prepareRebalance(now, g, &r)
	ch.replies = append(ch.replies, r.Replies...)
}

// canDowngradeReplaced is Kafka's validateOnlineDowngradeWithReplacedMemberId,
// checked once a classic static member has replaced the group's last
// member using the consumer protocol: every member is classic now.
func (s *Shard) canDowngradeReplaced(c *consumerGroup) bool {
	return c.classicMembers() == len(c.members) && s.cfg.ConsumerMigrationPolicy.downgrades() && len(c.members) <= s.cfg.MaxSize
}

// toClassic is the conversion itself: the classic group, Stable, without
// the leaving member ("": none).
func (s *Shard) toClassic(now int64, g *group, leaving string, ch *change) {
	c := g.consumer
	names := s.topicNames(c)
	g.consumer = nil
	s.resetGroup(g)
	g.protocolType, g.generation = "consumer", c.epoch
	for _, id := range c.sortedMembers() {
		if id == leaving {
			continue
		}
		cm := c.members[id]
		g.addMember(&member{
			id: id, instanceID: cm.instanceID, clientID: cm.clientID, clientHost: cm.clientHost,
			rebalanceTimeoutMs: cm.rebalanceTimeoutMs, sessionTimeoutMs: cm.classic.sessionTimeoutMs,
			protocolType: "consumer", protocols: cm.classic.protocols,
			heartbeatDue: now + int64(cm.classic.sessionTimeoutMs),
		})
	}
	g.protocolName = g.selectProtocol()
	for _, id := range g.order {
		m := g.members[id]
		m.assignment = assignmentBytes(c.target[id], names, m.metadataFor(g.protocolName))
	}
	g.transition(Stable, now)
	ch.post = append(ch.post, g.metadataRecord(now))
}

// emptyConsumerToClassic drops an empty consumer group's state before a
// classic member joins it (Kafka's maybeDeleteEmptyConsumerGroup): its
// records are tombstoned and the group continues as an empty classic group
// with its offsets, or is forgotten if it has none.
func (s *Shard) emptyConsumerToClassic(g *group, r *Result) {
	r.Records = append(r.Records, diffRecords(g.consumerRecords(), nil)...)
	g.consumer = nil
	s.resetGroup(g)
	s.maybeDropEmpty(g)
}
