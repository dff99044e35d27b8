// Package group is the classic consumer group protocol's state machine
// (Kafka's ClassicGroup and the classic half of GroupMetadataManager, with
// OffsetMetadataManager's committed offsets) for one shard: the groups whose
// coordinator partition of __consumer_offsets this shard owns.
//
// It is pure: no goroutines, sockets or clocks. The driver passes the time
// (milliseconds) into every call, calls Tick at NextDeadline, writes the
// Records of each Result to the partition and only then runs Result.Apply
// and delivers Result.Replies (Finish does this in order). Delayed answers
// (JoinGroup and SyncGroup wait for the rest of the group) are Responders
// kept in the members until the group moves on. Loading a shard replays the
// partition's records through Replay.
//
// A group is classic or a KIP-848 consumer group (consumer*.go); a consumer
// group may hold classic members (consumer_classic.go), and a group moves
// between the two kinds online as Kafka 4.0 allows (migration.go).
package group

import (
	"crypto/rand"
	"encoding/hex"
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// State is a classic group's state, named as Kafka names it.
type State int8

// The classic group states (Kafka's ClassicGroupState).
const (
	Empty State = iota
	PreparingRebalance
	CompletingRebalance
	Stable
	Dead
)

func (s State) String() string {
	switch s {
	case Empty:
		return "Empty"
	case PreparingRebalance:
		return "PreparingRebalance"
	case CompletingRebalance:
		return "CompletingRebalance"
	case Stable:
		return "Stable"
	}
	return "Dead"
}

// Config holds the broker settings the groups obey.
type Config struct {
	MinSessionTimeoutMs     int32 // group.min.session.timeout.ms
	MaxSessionTimeoutMs     int32 // group.max.session.timeout.ms
	InitialRebalanceDelayMs int32 // group.initial.rebalance.delay.ms
	MaxSize                 int   // group.max.size
	OffsetMetadataMaxBytes  int   // offset.metadata.max.bytes
	OffsetsRetentionMs      int64 // offsets.retention.minutes, in ms
	OffsetsRetentionCheckMs int64 // offsets.retention.check.interval.ms
	// KIP-848 consumer groups.
	ConsumerSessionTimeoutMs    int32    // group.consumer.session.timeout.ms
	ConsumerHeartbeatIntervalMs int32    // group.consumer.heartbeat.interval.ms
	ConsumerMaxSize             int32    // group.consumer.max.size
	ConsumerAssignors           []string // group.consumer.assignors, as assignor names; the first is the default
	// ConsumerMigrationPolicy is group.consumer.migration.policy: whether a
	// non-empty classic group may turn into a consumer group (upgrade) and
	// back (downgrade). The zero value is Kafka 4.0's default, bidirectional.
	ConsumerMigrationPolicy MigrationPolicy
	// Topics returns the cluster's topics now. A classic member of a
	// consumer group names topics by name in its JoinGroup and SyncGroup,
	// which the shard cannot resolve to ids without them; nil: no topics.
	Topics func() Topics
	// NewMemberID makes a member id for a client; nil: client id, "-", and
	// a random UUID-like suffix, as Kafka does.
	NewMemberID func(clientID string) string
	// Meters is told about the events Kafka's group coordinator meters;
	// nil: none.
	Meters Meters
	// Share groups (KIP-932, share.go).
	ShareSessionTimeoutMs    int32 // group.share.session.timeout.ms
	ShareHeartbeatIntervalMs int32 // group.share.heartbeat.interval.ms
	ShareMaxSize             int32 // group.share.max.size
	// ShareInitializeRetryMs is how long share-partitions may stay
	// initializing before a heartbeat asks for them again; 0: 10 s.
	ShareInitializeRetryMs int64
	// ShareGroupTimeouts returns a group's dynamic share.session.timeout.ms
	// and share.heartbeat.interval.ms, 0 where unset; nil: none.
	ShareGroupTimeouts func(groupID string) (sessionMs, heartbeatMs int32)
	// ShareMemberLeft is told of every member that left a share group or
	// was fenced from it, once that is written, so that the partition
	// leaders release the records it had acquired; nil: nobody.
	ShareMemberLeft func(groupID, memberID string)
}

// Meters counts what Kafka's group coordinator meters
// (kafka.server:type=group-coordinator-metrics). It is called from the
// shard's goroutine as the shard writes the records of the event.
type Meters interface {
	// OffsetsCommitted counts offset commit records written
	// (offset-commit-count).
	OffsetsCommitted(n int)
	// ClassicRebalanceCompleted counts a classic group that reached Stable
	// with its leader's assignment (group-completed-rebalance-count).
	ClassicRebalanceCompleted()
	// ConsumerGroupRebalanced counts a consumer group's epoch bump
	// (consumer-group-rebalance-count).
	ConsumerGroupRebalanced()
	// ShareGroupRebalanced counts a share group's epoch bump
	// (rebalance-count of protocol share).
	ShareGroupRebalanced()
}

// noMeters counts nothing.
type noMeters struct{}

func (noMeters) OffsetsCommitted(int)       {}
func (noMeters) ClassicRebalanceCompleted() {}
func (noMeters) ConsumerGroupRebalanced()   {}
func (noMeters) ShareGroupRebalanced()      {}

// Stats is what a shard holds now (Kafka's GroupMetadataManager gauges).
type Stats struct {
	// Classic counts the classic groups by state (NumGroups*).
	Classic map[State]int
	// Consumer counts the consumer groups by Kafka's ConsumerGroupState
	// name (consumer-group-count).
	Consumer map[string]int
	// Offsets counts the committed offsets (NumOffsets).
	Offsets int
	// Share counts the share groups by Kafka's ShareGroupState name.
	Share map[string]int
}

// Stats counts the shard's groups and offsets.
func (s *Shard) Stats() Stats {
	st := Stats{Classic: map[State]int{}, Consumer: map[string]int{}, Share: map[string]int{}}
	for _, sg := range s.shares {
		st.Share[sg.state()]++
	}
	for _, g := range s.groups {
		if g.consumer != nil {
			st.Consumer[g.consumer.state()]++
		} else {
			st.Classic[g.state]++
		}
		for _, ps := range g.offsets {
			st.Offsets += len(ps)
		}
	}
	return st
}

// newMemberJoinTimeoutMs bounds how long a new member may wait in a join
// that never completes (Kafka's fixed 5 minutes, KIP-394).
const newMemberJoinTimeoutMs = 300000

// Responder receives a response. The shard never calls one itself: it
// returns it in Result.Replies for the driver to call after the write.
type Responder func(kmsg.Response)

// Reply is a response bound for a responder.
type Reply struct {
	To   Responder
	Resp kmsg.Response
}

// Record is one key/value record of __consumer_offsets; a nil Value is a
// tombstone.
type Record struct {
	Key, Value []byte
}

// Result is what one step of the state machine asks of the driver: write
// Records, then run Apply (state that must change only once written), then
// deliver Replies. If the write fails, Failed (when set) gives the replies
// to send instead, and Apply is not run.
type Result struct {
	Records []Record
	// Transaction, when set, makes Records one transactional batch of that
	// producer (TxnOffsetCommit): they take effect only with the commit
	// marker of its transaction.
	Transaction *Transaction
	Apply       func()
	Replies     []Reply
	Failed      func(code int16) []Reply
	// ShareInit are share-partitions whose state the driver must
	// initialize once Records are written (share.go).
	ShareInit []ShareInit
}

// Transaction is the producer a transactional batch is written for; the
// partition's log checks its epoch, as for any transactional write.
type Transaction struct {
	ProducerID    int64
	ProducerEpoch int16
}

func (r *Result) reply(to Responder, resp kmsg.Response) {
	if to != nil {
		r.Replies = append(r.Replies, Reply{To: to, Resp: resp})
	}
}

// protocol is one assignment protocol a member supports, in its order of preference.
type protocol struct {
	name     string
	metadata []byte
}

type member struct {
	id                 string
	instanceID         *string
	clientID           string
	clientHost         string
	rebalanceTimeoutMs int32
	sessionTimeoutMs   int32
	protocolType       string
	protocols          []protocol
	assignment         []byte

	// joinReply / syncReply are set while the member waits for the join /
	// sync phase to complete.
	joinReply    Responder
	joinVersion  int16
	syncReply    Responder
	syncVersion  int16
	isNew        bool
	joinedAt     int64
	heartbeatDue int64 // the session expires at this time
}

func (m *member) metadataFor(name string) []byte {
	for _, p := range m.protocols {
		if p.name == name {
			return p.metadata
		}
	}
	return nil
}

// matches reports whether the member's protocols are the same as given
// (Kafka's MemberMetadata.matches).
func (m *member) matches(ps []protocol) bool {
	if len(ps) != len(m.protocols) {
		return false
	}
	for i := range ps {
		if ps[i].name != m.protocols[i].name || string(ps[i].metadata) != string(m.protocols[i].metadata) {
			return false
		}
	}
	return true
}

// committed is one committed offset.
type committed struct {
	offset      int64
	leaderEpoch int32
	metadata    string
	commitTs    int64
	expireTs    int64 // -1: by retention
	// seq orders the offset commit records of the shard's partition as
	// Kafka's record offset does (see Shard.commitSeq).
	seq int64
}

type group struct {
	id             string
	state          State
	stateTimestamp int64
	protocolType   string
	protocolName   string
	generation     int32
	leader         string

	members map[string]*member
	order   []string          // member ids in join order, for deterministic answers
	static  map[string]string // group.instance.id -> member id
	pending map[string]int64  // member ids handed out with MEMBER_ID_REQUIRED -> expiry

	joinDeadline     int64 // PreparingRebalance completes at the latest then
	initialDelay     bool  // the first rebalance of a new group waits for more members
	initialRemaining int64
	newMemberAdded   bool

	pendingSync  map[string]bool // members yet to SyncGroup in this generation
	syncDeadline int64

	offsets map[string]map[int32]committed
	// txnOffsets are the offsets of open transactions, by producer id, then
	// topic and partition (Kafka's pendingTransactionalOffsets): committed
	// into offsets by the transaction's commit marker, dropped by its abort.
	// A producer stays here until its marker, even once tombstones emptied
	// its offsets (the group then still has an open transaction).
	txnOffsets map[int64]map[string]map[int32]committed

	// consumer is set once the group is used with the KIP-848 protocol.
	consumer *consumerGroup
}

func newGroup(id string, now int64) *group {
	return &group{
		id: id, stateTimestamp: now,
		members: map[string]*member{}, static: map[string]string{}, pending: map[string]int64{},
		pendingSync: map[string]bool{}, offsets: map[string]map[int32]committed{},
	}
}

func (g *group) transition(s State, now int64) {
	g.state = s
	g.stateTimestamp = now
}

func (g *group) addMember(m *member) {
	g.members[m.id] = m
	g.order = append(g.order, m.id)
	if m.instanceID != nil {
		g.static[*m.instanceID] = m.id
	}
	if g.leader == "" {
		g.leader = m.id
	}
}

func (g *group) dropMember(id string) {
	m := g.members[id]
	if m == nil {
		return
	}
	delete(g.members, id)
	delete(g.pendingSync, id)
	for i, o := range g.order {
		if o == id {
			g.order = append(g.order[:i:i], g.order[i+1:]...)
			break
		}
	}
	if m.instanceID != nil && g.static[*m.instanceID] == id {
		delete(g.static, *m.instanceID)
	}
	if g.leader == id {
		g.leader = ""
		// Kafka prefers a member that is already waiting in the join.
		for _, o := range g.order {
			if g.members[o].joinReply != nil {
				g.leader = o
				break
			}
		}
		if g.leader == "" && len(g.order) > 0 {
			g.leader = g.order[0]
		}
	}
}

func (g *group) maxRebalanceTimeout() int64 {
	var t int32
	for _, m := range g.members {
		t = max(t, m.rebalanceTimeoutMs)
	}
	return int64(t)
}

func (g *group) allJoined() bool {
	if len(g.pending) > 0 {
		return false
	}
	for _, m := range g.members {
		if m.joinReply == nil {
			return false
		}
	}
	return true
}

func (g *group) awaitingJoin() int {
	n := 0
	for _, m := range g.members {
		if m.joinReply != nil {
			n++
		}
	}
	return n
}

// candidates are the protocols every member supports.
func (g *group) candidates() map[string]bool {
	var c map[string]bool
	for _, id := range g.order {
		next := map[string]bool{}
		for _, p := range g.members[id].protocols {
			if c == nil || c[p.name] {
				next[p.name] = true
			}
		}
		c = next
	}
	return c
}

// supportsProtocols is Kafka's ClassicGroup.supportsProtocols.
func (g *group) supportsProtocols(protocolType string, ps []protocol) bool {
	if g.state == Empty || len(g.members) == 0 {
		return protocolType != "" && len(ps) > 0
	}
	if protocolType != g.protocolType {
		return false
	}
	c := g.candidates()
	for _, p := range ps {
		if c[p.name] {
			return true
		}
	}
	return false
}

// selectProtocol lets every member vote for its most preferred protocol
// among those all support; the most votes win (ties: the earliest joined
// member's preference order).
func (g *group) selectProtocol() string {
	c := g.candidates()
	votes := map[string]int{}
	for _, id := range g.order {
		for _, p := range g.members[id].protocols {
			if c[p.name] {
				votes[p.name]++
				break
			}
		}
	}
	best, bestVotes := "", -1
	if len(g.order) > 0 {
		for _, p := range g.members[g.order[0]].protocols {
			if c[p.name] && votes[p.name] > bestVotes {
				best, bestVotes = p.name, votes[p.name]
			}
		}
	}
	return best
}

// subscribedTopics are the topics the members of a "consumer" group
// subscribe to, read from their subscription metadata; ok=false when they
// cannot be known.
func (g *group) subscribedTopics() (map[string]bool, bool) {
	if g.protocolType != "consumer" || g.protocolName == "" {
		return nil, false
	}
	topics := map[string]bool{}
	for _, m := range g.members {
		var meta kmsg.ConsumerMemberMetadata
		if err := meta.ReadFrom(m.metadataFor(g.protocolName)); err != nil {
			return nil, false
		}
		for _, t := range meta.Topics {
			topics[t] = true
		}
	}
	return topics, true
}

func defaultMemberID(clientID string) string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	h := hex.EncodeToString(b[:])
	return clientID + "-" + h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// Shard holds the groups of one __consumer_offsets partition.
type Shard struct {
	cfg    Config
	groups map[string]*group
	// shares are the share groups; an id is in groups or here, not both.
	shares     map[string]*shareGroup
	nextExpiry int64
	// txnGroups are the groups each open transaction (producer id) holds
	// offsets in, for its marker.
	txnGroups map[int64]map[string]bool
	// commitSeq counts the offset commit records applied, loaded and
	// written alike. Both happen in the partition's order, so it orders
	// them as Kafka's record offsets do: a transaction's offset replaces a
	// committed one at its commit marker only if its record came later.
	commitSeq int64
}

// NewShard returns an empty shard.
func NewShard(cfg Config) *Shard {
	if cfg.NewMemberID == nil {
		cfg.NewMemberID = defaultMemberID
	}
	if cfg.ConsumerSessionTimeoutMs <= 0 {
		cfg.ConsumerSessionTimeoutMs = 45000
	}
	if cfg.ConsumerHeartbeatIntervalMs <= 0 {
		cfg.ConsumerHeartbeatIntervalMs = 5000
	}
	if cfg.MaxSize <= 0 {
		cfg.MaxSize = int(^uint(0) >> 1)
	}
	if cfg.Meters == nil {
		cfg.Meters = noMeters{}
	}
	if cfg.ShareSessionTimeoutMs <= 0 {
		cfg.ShareSessionTimeoutMs = 45000
	}
	if cfg.ShareHeartbeatIntervalMs <= 0 {
		cfg.ShareHeartbeatIntervalMs = 5000
	}
	return &Shard{cfg: cfg, groups: map[string]*group{}, shares: map[string]*shareGroup{}, txnGroups: map[int64]map[string]bool{}}
}

// sortedGroupIDs lists the group ids in order, for deterministic answers.
func (s *Shard) sortedGroupIDs() []string {
	ids := make([]string, 0, len(s.groups))
	for id := range s.groups {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// Unload answers every waiting JoinGroup and SyncGroup with NOT_COORDINATOR:
// the shard is going away (leadership moved).
func (s *Shard) Unload(code int16) []Reply {
	var r Result
	for _, id := range s.sortedGroupIDs() {
		g := s.groups[id]
		for _, mid := range g.order {
			m := g.members[mid]
			if m.joinReply != nil {
				r.reply(m.joinReply, joinError(m.joinVersion, mid, code))
				m.joinReply = nil
			}
			if m.syncReply != nil {
				r.reply(m.syncReply, syncError(code))
				m.syncReply = nil
			}
		}
	}
	return r.Replies
}

// Writer writes records to the shard's partition. A write returns once the
// leader appended it; what depends on it is handed out only once it is
// committed (AfterCommit).
type Writer interface {
	Write(records []Record) error
	// WriteTransactional writes records as one transactional batch of the
	// producer, whose epoch the log checks.
	WriteTransactional(producerID int64, producerEpoch int16, records []Record) error
	// AfterCommit calls fn once everything written so far is committed,
	// or with an error if that can no longer happen here (the shard moved
	// away).
	AfterCommit(fn func(err error))
}

// Finish carries out a Result: write its records, then apply it and deliver
// its replies once the write is committed. On a failed write it delivers
// Failed's replies (errCode maps the failure to a Kafka code) or, without
// Failed, the prepared replies turned into errors with that code, and does
// not apply; it returns the write's error. If the write is appended but the shard loses its partition before
// the write is committed, the replies are delivered as errors (Failed's, or
// the prepared ones with errCode's code): nothing is acknowledged that a
// new coordinator may not have.
func Finish(w Writer, r Result, errCode func(error) int16) error {
	if len(r.Records) > 0 {
		var err error
		if t := r.Transaction; t != nil {
			err = w.WriteTransactional(t.ProducerID, t.ProducerEpoch, r.Records)
		} else {
			err = w.Write(r.Records)
		}
		if err != nil {
			if r.Failed != nil {
				deliver(r.Failed(errCode(err)))
			} else {
				deliver(errorReplies(r.Replies, errCode(err)))
			}
			return err
		}
	}
	if r.Apply != nil {
		r.Apply()
	}
	if len(r.Replies) > 0 {
		w.AfterCommit(func(err error) {
			switch {
			case err == nil:
				deliver(r.Replies)
			case r.Failed != nil:
				deliver(r.Failed(errCode(err)))
			default:
				deliver(errorReplies(r.Replies, errCode(err)))
			}
		})
	}
	return nil
}

func deliver(rs []Reply) {
	for _, rep := range rs {
		rep.To(rep.Resp)
	}
}
