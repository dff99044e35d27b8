// Package fetchsession is the broker's cache of incremental fetch sessions
// (KIP-227, Kafka's FetchSession.scala). A client that opens a session
// names its partitions once; its later fetches name only the partitions
// whose fetch position changed (and those to forget), and the broker
// answers only the partitions whose state changed since its previous
// answer: new records, a new high watermark, last stable offset or log
// start offset, an error, a preferred read replica or a diverging epoch.
//
// The request metadata decides the kind of a fetch:
//
//   - epoch -1 (FINAL): a sessionless full fetch; a session it names is
//     closed.
//   - epoch 0 (INITIAL): a full fetch that asks for a new session (a
//     session it names is closed first); the answer carries the new
//     session's id, or 0 when the cache has no room.
//   - any other epoch: an incremental fetch of session id, which must be
//     the session's next epoch (INVALID_FETCH_SESSION_EPOCH, or
//     FETCH_SESSION_ID_NOT_FOUND for an unknown id). A session that names
//     topics by id (v13+) is used only by v13+ requests and the other way
//     round (FETCH_SESSION_TOPIC_ID_ERROR).
//
// The cache holds at most max.incremental.fetch.session.cache.slots
// sessions. When it is full a new session takes the slot of another one as
// Kafka decides (tryEvict): a session idle for longer than the eviction
// time goes first; otherwise the least valuable session that is old enough
// (followers' sessions are privileged, then more partitions are worth
// more) is evicted only if the new one is worth more.
//
// The package is pure bookkeeping: no goroutines, the caller passes the
// clock. It is safe for concurrent use.
package fetchsession

import (
	"math/rand/v2"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Session epochs with a meaning of their own (Kafka's FetchMetadata).
const (
	// InitialEpoch asks for a new session with a full fetch.
	InitialEpoch int32 = 0
	// FinalEpoch closes a session (or fetches without one).
	FinalEpoch int32 = -1
)

// DefaultEvictionAfter is Kafka's min.incremental.fetch.session.eviction.ms
// (not configurable there either): a session is evictable by any other
// once it has been idle, or has existed, this long.
const DefaultEvictionAfter = 120 * time.Second

// NextEpoch is the epoch after e: FINAL stays FINAL, and after the largest
// int32 comes 1, never INITIAL.
func NextEpoch(e int32) int32 {
	switch {
	case e < 0:
		return FinalEpoch
	case e == 1<<31-1:
		return 1
	default:
		return e + 1
	}
}

// Key names a partition of a session: by topic id in sessions that use
// ids (Topic empty), by name in the others (TopicID zero).
type Key struct {
	TopicID   [16]byte
	Topic     string
	Partition int32
}

// Params are a partition's fetch parameters, which an incremental fetch
// repeats only when they change.
type Params struct {
	FetchOffset        int64
	LogStartOffset     int64 // a follower's log start offset
	MaxBytes           int32
	CurrentLeaderEpoch int32
	LastFetchedEpoch   int32
}

// Partition is one partition a fetch reads, with its parameters.
type Partition struct {
	Key
	Params
}

// Result is what an answer says of a partition, the fields that decide
// whether an incremental answer carries it.
type Result struct {
	ErrorCode            int16
	HighWatermark        int64
	LastStableOffset     int64
	LogStartOffset       int64
	RecordBytes          int
	PreferredReadReplica int32 // -1: none
	DivergingEpoch       bool
}

// Request is the session part of a fetch request.
type Request struct {
	SessionID int32
	Epoch     int32
	// UsesTopicIDs: the request names topics by id (Fetch v13+).
	UsesTopicIDs bool
	// Follower: the fetch is from a replica; its session is privileged.
	Follower   bool
	Partitions []Partition
	Forgotten  []Key
}

// Cache holds the fetch sessions of one broker.
type Cache struct {
	slots         int
	evictionAfter time.Duration

	mu         sync.Mutex
	sessions   map[int32]*session
	partitions int   // partitions cached over all sessions (as last touched)
	evictions  int64 // sessions evicted to make room
}

// New returns a cache of at most slots sessions (0: sessions are never
// created), evicting by the rules above with evictionAfter as Kafka's
// min.incremental.fetch.session.eviction.ms.
func New(slots int, evictionAfter time.Duration) *Cache {
	return &Cache{slots: slots, evictionAfter: evictionAfter, sessions: map[int32]*session{}}
}

// Stats are the cache's figures (Kafka's NumIncrementalFetchSessions,
// NumIncrementalFetchPartitionsCached and the count behind
// IncrementalFetchSessionEvictionsPerSec).
type Stats struct {
	Sessions   int
	Partitions int
	Evictions  int64
}

// Stats returns the cache's figures.
func (c *Cache) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return Stats{Sessions: len(c.sessions), Partitions: c.partitions, Evictions: c.evictions}
}

// session is one incremental fetch session. Its fields are guarded by the
// cache's mutex. The partitions form a list in fetch order: a partition
// that returned records moves to its end, so that under a response size
// limit the others get their turn (Kafka's round robin).
type session struct {
	id           int32
	follower     bool
	usesTopicIDs bool
	created      time.Time
	lastUsed     time.Time
	epoch        int32

	parts       map[Key]*cachedPartition
	first, last *cachedPartition

	// As of the last touch: whether the session is in the cache, its size
	// then, and whether any new session (byAll) or a follower's
	// (byPrivileged) may evict it. Kafka decides these at touch time too.
	cached       bool
	cachedSize   int
	byAll        bool
	byPrivileged bool
}

// cachedPartition is a partition of a session: its latest fetch
// parameters and what the session's latest answer said of it.
type cachedPartition struct {
	key    Key
	params Params

	highWatermark    int64
	lastStableOffset int64
	logStartOffset   int64

	prev, next *cachedPartition
}

func (s *session) pushBack(cp *cachedPartition) {
	cp.prev, cp.next = s.last, nil
	if s.last != nil {
		s.last.next = cp
	} else {
		s.first = cp
	}
	s.last = cp
}

func (s *session) unlink(cp *cachedPartition) {
	if cp.prev != nil {
		cp.prev.next = cp.next
	} else {
		s.first = cp.next
	}
	if cp.next != nil {
		cp.next.prev = cp.prev
	} else {
		s.last = cp.prev
	}
	cp.prev, cp.next = nil, nil
}

// update applies an incremental request: its partitions added or their
// parameters replaced, the forgotten ones removed.
func (s *session) update(parts []Partition, forgotten []Key) {
	for _, p := range parts {
		if cp, ok := s.parts[p.Key]; ok {
			cp.params = p.Params
			continue
		}
		cp := &cachedPartition{key: p.Key, params: p.Params, highWatermark: -1, lastStableOffset: -1, logStartOffset: -1}
		s.parts[p.Key] = cp
		s.pushBack(cp)
	}
	for _, k := range forgotten {
		if cp, ok := s.parts[k]; ok {
			s.unlink(cp)
			delete(s.parts, k)
		}
	}
}

// mustRespond reports whether an incremental answer carries a partition
// with result r, and with update records r as the session's latest answer
// (Kafka's CachedPartition.maybeUpdateResponseData, which also compares the
// last stable offset here, so a read_committed consumer learns of a
// transaction's end that moves no other field).
func (cp *cachedPartition) mustRespond(r Result, update bool) bool {
	must := r.RecordBytes > 0 || r.PreferredReadReplica >= 0 || r.DivergingEpoch
	if cp.highWatermark != r.HighWatermark {
		must = true
		if update {
			cp.highWatermark = r.HighWatermark
		}
	}
	if cp.lastStableOffset != r.LastStableOffset {
		must = true
		if update {
			cp.lastStableOffset = r.LastStableOffset
		}
	}
	if cp.logStartOffset != r.LogStartOffset {
		must = true
		if update {
			cp.logStartOffset = r.LogStartOffset
		}
	}
	if r.ErrorCode != 0 {
		// Sent again once the error is gone, whatever else changed.
		must = true
		if update {
			cp.highWatermark = -1
		}
	}
	return must
}

// Kind is what a fetch is to the session cache.
type Kind int8

const (
	// Sessionless is a full fetch without a session (epoch -1, or an
	// incremental fetch that forgot its session's last partition).
	Sessionless Kind = iota
	// Full is a full fetch that opens a session if the cache has room.
	Full
	// Incremental is a fetch in an existing session.
	Incremental
	// SessionError is a fetch whose session metadata is wrong: it is
	// answered with ErrorCode, session id 0 and no partitions.
	SessionError
)

// Context is one fetch's view of the cache, from its request to its answer
// (Kafka's FetchContext).
type Context struct {
	Kind Kind
	// ErrorCode is the top-level error of a SessionError.
	ErrorCode int16
	// Partitions are what the fetch reads, in order: the request's
	// partitions for a full or sessionless fetch, the session's for an
	// incremental one. Results passed back are in this order.
	Partitions []Partition

	c       *Cache
	req     Request
	session *session // Incremental
}

// NewContext classifies a fetch request and, for an incremental one,
// applies it to its session and moves the session's epoch on.
func (c *Cache) NewContext(req Request, now time.Time) *Context {
	x := &Context{c: c, req: req}
	if req.Epoch == InitialEpoch || req.Epoch == FinalEpoch {
		if req.SessionID != 0 {
			// A full fetch naming a session closes it.
			c.mu.Lock()
			if s, ok := c.sessions[req.SessionID]; ok {
				c.removeLocked(s)
			}
			c.mu.Unlock()
		}
		x.Kind = Full
		if req.Epoch == FinalEpoch {
			x.Kind = Sessionless
		}
		x.Partitions = req.Partitions
		return x
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.sessions[req.SessionID]
	switch {
	case !ok:
		return x.fail(kerr.FetchSessionIDNotFound.Code)
	case s.epoch != req.Epoch:
		return x.fail(kerr.InvalidFetchSessionEpoch.Code)
	case s.usesTopicIDs != req.UsesTopicIDs:
		return x.fail(kerr.FetchSessionTopicIDError.Code)
	}
	s.update(req.Partitions, req.Forgotten)
	if len(s.parts) == 0 {
		// Nothing left to fetch: the session ends here.
		c.removeLocked(s)
		x.Kind = Sessionless
		x.Partitions = req.Partitions
		return x
	}
	c.touchLocked(s, now)
	s.epoch = NextEpoch(s.epoch)
	x.Kind, x.session = Incremental, s
	x.Partitions = make([]Partition, 0, len(s.parts))
	for cp := s.first; cp != nil; cp = cp.next {
		x.Partitions = append(x.Partitions, Partition{Key: cp.key, Params: cp.params})
	}
	return x
}

func (x *Context) fail(code int16) *Context {
	x.Kind, x.ErrorCode = SessionError, code
	return x
}

// Answer is the session part of a fetch response.
type Answer struct {
	SessionID int32
	ErrorCode int16
	// Include says which of Context.Partitions the answer carries (nil:
	// none, with ErrorCode set or throttled).
	Include []bool
}

// Preview is the answer Respond would give for results, without changing
// anything: what a quota measures before deciding to throttle.
func (x *Context) Preview(results []Result) Answer {
	return x.answer(results, time.Time{}, false)
}

// Respond decides the answer to the fetch given its results (one per
// Context.Partitions) and records it: a full fetch opens its session if
// the cache has or can make room, an incremental one remembers what it
// answered. A session whose epoch moved on meanwhile (a duplicate request)
// is answered INVALID_FETCH_SESSION_EPOCH.
func (x *Context) Respond(results []Result, now time.Time) Answer {
	return x.answer(results, now, true)
}

// Throttled is the answer when the fetch is throttled by a quota: no
// partitions, no new session, and the session's latest answer unchanged so
// the next fetch sends what this one would have.
func (x *Context) Throttled() Answer {
	if x.Kind != Incremental {
		return Answer{}
	}
	x.c.mu.Lock()
	defer x.c.mu.Unlock()
	if x.session.epoch != NextEpoch(x.req.Epoch) {
		return Answer{SessionID: x.session.id, ErrorCode: kerr.InvalidFetchSessionEpoch.Code}
	}
	return Answer{SessionID: x.session.id}
}

func (x *Context) answer(results []Result, now time.Time, commit bool) Answer {
	all := func() []bool {
		inc := make([]bool, len(results))
		for i := range inc {
			inc[i] = true
		}
		return inc
	}
	switch x.Kind {
	case SessionError:
		return Answer{ErrorCode: x.ErrorCode}
	case Sessionless:
		return Answer{Include: all()}
	case Full:
		a := Answer{Include: all()}
		if commit {
			a.SessionID = x.c.maybeCreate(x.req, results, now)
		}
		return a
	}
	c, s := x.c, x.session
	c.mu.Lock()
	defer c.mu.Unlock()
	if s.epoch != NextEpoch(x.req.Epoch) {
		return Answer{SessionID: s.id, ErrorCode: kerr.InvalidFetchSessionEpoch.Code}
	}
	a := Answer{SessionID: s.id, Include: make([]bool, len(results))}
	for i, r := range results {
		cp := s.parts[x.Partitions[i].Key]
		if cp == nil {
			// Not reached: only a later request of the session changes
			// its partitions, and that moves the epoch checked above.
			a.Include[i] = true
			continue
		}
		a.Include[i] = cp.mustRespond(r, commit)
		if commit && a.Include[i] && r.RecordBytes > 0 {
			s.unlink(cp)
			s.pushBack(cp)
		}
	}
	return a
}

// maybeCreate opens a session for a full fetch, evicting another if the
// cache is full and Kafka's rules allow; it returns the session id, or 0.
func (c *Cache) maybeCreate(req Request, results []Result, now time.Time) int32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	// The session's size is its distinct partitions, as the cached map.
	parts := make(map[Key]*cachedPartition, len(req.Partitions))
	order := make([]*cachedPartition, 0, len(req.Partitions))
	for i, p := range req.Partitions {
		cp := parts[p.Key]
		if cp == nil {
			cp = &cachedPartition{key: p.Key}
			parts[p.Key] = cp
			order = append(order, cp)
		}
		cp.params = p.Params
		cp.highWatermark, cp.lastStableOffset, cp.logStartOffset = -1, -1, -1
		if i < len(results) {
			r := results[i]
			cp.highWatermark, cp.lastStableOffset, cp.logStartOffset = r.HighWatermark, r.LastStableOffset, r.LogStartOffset
			if r.ErrorCode != 0 {
				cp.highWatermark = -1
			}
		}
	}
	if len(c.sessions) >= c.slots && !c.tryEvictLocked(req.Follower, len(parts), now) {
		return 0
	}
	s := &session{id: c.newIDLocked(), follower: req.Follower, usesTopicIDs: req.UsesTopicIDs,
		created: now, epoch: NextEpoch(InitialEpoch), parts: parts}
	for _, cp := range order {
		s.pushBack(cp)
	}
	c.sessions[s.id] = s
	c.touchLocked(s, now)
	return s.id
}

// newIDLocked is a random positive session id not in use.
func (c *Cache) newIDLocked() int32 {
	for {
		id := rand.Int32N(1<<31-1) + 1
		if _, used := c.sessions[id]; !used {
			return id
		}
	}
}

// touchLocked marks a session used now and refreshes its size and
// evictability (Kafka's FetchSessionCache.touch).
func (c *Cache) touchLocked(s *session, now time.Time) {
	s.lastUsed = now
	if s.cached {
		c.partitions -= s.cachedSize
	}
	s.cached, s.cachedSize = true, len(s.parts)
	c.partitions += s.cachedSize
	old := now.Sub(s.created) > c.evictionAfter
	s.byAll = old
	s.byPrivileged = !s.follower || old
}

func (c *Cache) removeLocked(s *session) {
	if _, ok := c.sessions[s.id]; !ok {
		return
	}
	delete(c.sessions, s.id)
	c.partitions -= s.cachedSize
	s.cached = false
}

// tryEvictLocked makes room for a new session of size partitions (Kafka's
// tryEvict): the least recently used session goes if it has been idle past
// the eviction time; otherwise the least valuable evictable session goes if
// the new one is worth more: a follower's is worth more than a consumer's,
// then more partitions more, and on a tie the existing session stays.
func (c *Cache) tryEvictLocked(follower bool, size int, now time.Time) bool {
	var lru, cheapest *session
	for _, s := range c.sessions {
		if lru == nil || s.lastUsed.Before(lru.lastUsed) || (s.lastUsed.Equal(lru.lastUsed) && s.id < lru.id) {
			lru = s
		}
		if (follower && s.byPrivileged) || (!follower && s.byAll) {
			if cheapest == nil || worth(s.follower, s.cachedSize, s.id, cheapest.follower, cheapest.cachedSize, cheapest.id) < 0 {
				cheapest = s
			}
		}
	}
	if lru == nil {
		return false
	}
	if now.Sub(lru.lastUsed) > c.evictionAfter {
		c.removeLocked(lru)
		c.evictions++
		return true
	}
	if cheapest == nil || worth(follower, size, 0, cheapest.follower, cheapest.cachedSize, cheapest.id) < 0 {
		return false
	}
	c.removeLocked(cheapest)
	c.evictions++
	return true
}

// worth orders sessions as Kafka's EvictableKey: privileged after not,
// then by size, then by id.
func worth(followerA bool, sizeA int, idA int32, followerB bool, sizeB int, idB int32) int {
	switch {
	case followerA != followerB:
		if followerA {
			return 1
		}
		return -1
	case sizeA != sizeB:
		if sizeA > sizeB {
			return 1
		}
		return -1
	case idA != idB:
		if idA > idB {
			return 1
		}
		return -1
	}
	return 0
}
