package share

import (
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Share sessions (KIP-932, Kafka's ShareSessionCache): a member's
// ShareFetch with epoch 0 opens its session on this broker, naming the
// partitions it fetches; later requests carry the next epoch (1, 2, ...,
// after the largest int32 comes 1) and name only the partitions to add or
// forget; epoch -1 closes the session (its records are released). A request
// for a session this broker does not have gets SHARE_SESSION_NOT_FOUND, a
// wrong epoch INVALID_SHARE_SESSION_EPOCH; the client then opens a new
// session. ShareAcknowledge uses the same session and epochs but cannot
// open one (epoch 0 gets INVALID_SHARE_SESSION_EPOCH).
//
// A session whose client closes the connection that opened it is dropped
// and its records released (Manager.Run, TakeClosed), as Kafka does. The
// cache holds at most group.share.max.share.sessions sessions; a new
// session beyond it is refused with SHARE_SESSION_LIMIT_REACHED unless it
// can take the place of a session whose client closed its connection or,
// failing that, of one idle for evictIdleAfter (a connection this broker
// closed, say for connections.max.idle.ms, is not reported as closed by
// the peer).

// Session epochs with a meaning of their own.
const (
	InitialEpoch int32 = 0
	FinalEpoch   int32 = -1
)

// evictIdleAfter is how long a share session must be idle before a new
// session may take its place in a full cache (Kafka's
// min.incremental.fetch.session.eviction.ms, which its share sessions use).
const evictIdleAfter = 120 * time.Second

// SessionKey names a member's share session on this broker.
type SessionKey struct {
	Group, Member string
}

// SessionPartition is a partition of a share session, by topic id.
type SessionPartition struct {
	TopicID   [16]byte
	Partition int32
}

type session struct {
	epoch    int32 // the epoch the next request must carry
	parts    []SessionPartition
	lastUsed time.Time
	// peerClosed is closed when the client closes the connection that
	// opened the session (nil: not known).
	peerClosed <-chan struct{}
}

// Sessions is the broker's share session cache; safe for concurrent use.
type Sessions struct {
	mu         sync.Mutex
	size       int
	evictAfter time.Duration
	m          map[SessionKey]*session
}

// NewSessions returns a cache of at most size sessions.
func NewSessions(size int, evictAfter time.Duration) *Sessions {
	return &Sessions{size: size, evictAfter: evictAfter, m: map[SessionKey]*session{}}
}

func nextEpoch(e int32) int32 {
	if e == 1<<31-1 {
		return 1
	}
	return e + 1
}

// Open opens key's session with parts (a session key had is replaced),
// on a connection whose close by the client closes peerClosed (nil: not
// known). The next request must carry epoch 1.
func (s *Sessions) Open(key SessionKey, parts []SessionPartition, now time.Time, peerClosed <-chan struct{}) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, key)
	if len(s.m) >= s.size && !s.evict(now) {
		return fmt.Errorf("%d share sessions: %w", len(s.m), kerr.ShareSessionLimitReached)
	}
	s.m[key] = &session{epoch: 1, parts: dedupe(nil, parts), lastUsed: now, peerClosed: peerClosed}
	return nil
}

// evict drops a session whose connection the client closed, else the
// longest idle one if idle for evictAfter; false when none may go.
func (s *Sessions) evict(now time.Time) bool {
	var oldest SessionKey
	var oldestAt time.Time
	found := false
	for k, v := range s.m {
		if v.peerClosed != nil {
			select {
			case <-v.peerClosed:
				delete(s.m, k)
				return true
			default:
			}
		}
		if now.Sub(v.lastUsed) >= s.evictAfter && (!found || v.lastUsed.Before(oldestAt)) {
			oldest, oldestAt, found = k, v.lastUsed, true
		}
	}
	if found {
		delete(s.m, oldest)
	}
	return found
}

func dedupe(have, add []SessionPartition) []SessionPartition {
	for _, p := range add {
		dup := false
		for _, h := range have {
			if h == p {
				dup = true
				break
			}
		}
		if !dup {
			have = append(have, p)
		}
	}
	return have
}

// check finds key's session and checks epoch against it, under s.mu.
func (s *Sessions) check(key SessionKey, epoch int32) (*session, error) {
	ss, ok := s.m[key]
	if !ok {
		return nil, fmt.Errorf("share session of member %s of %s: %w", key.Member, key.Group, kerr.ShareSessionNotFound)
	}
	if epoch != ss.epoch {
		return nil, fmt.Errorf("share session epoch %d, expected %d: %w", epoch, ss.epoch, kerr.InvalidShareSessionEpoch)
	}
	return ss, nil
}

// Next takes a request of an open session at epoch: adds and forgets
// partitions and moves the session to the next epoch. It returns the
// session's partitions and which of them were added by this request.
func (s *Sessions) Next(key SessionKey, epoch int32, add, forget []SessionPartition, now time.Time) ([]SessionPartition, map[SessionPartition]bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss, err := s.check(key, epoch)
	if err != nil {
		return nil, nil, err
	}
	added := map[SessionPartition]bool{}
	for _, p := range add {
		n := len(ss.parts)
		ss.parts = dedupe(ss.parts, []SessionPartition{p})
		if len(ss.parts) > n {
			added[p] = true
		}
	}
	kept := ss.parts[:0]
	for _, p := range ss.parts {
		forgotten := false
		for _, f := range forget {
			if f == p {
				forgotten = true
				break
			}
		}
		if !forgotten {
			kept = append(kept, p)
		}
	}
	ss.parts = kept
	ss.epoch = nextEpoch(ss.epoch)
	ss.lastUsed = now
	return append([]SessionPartition(nil), ss.parts...), added, nil
}

// Acknowledged takes a ShareAcknowledge of an open session at epoch (not
// InitialEpoch) and moves the session to the next epoch.
func (s *Sessions) Acknowledged(key SessionKey, epoch int32, now time.Time) error {
	if epoch == InitialEpoch {
		return fmt.Errorf("share acknowledge cannot open a share session: %w", kerr.InvalidShareSessionEpoch)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ss, err := s.check(key, epoch)
	if err != nil {
		return err
	}
	ss.epoch = nextEpoch(ss.epoch)
	ss.lastUsed = now
	return nil
}

// Close closes key's session (a request with FinalEpoch) and returns its
// partitions.
func (s *Sessions) Close(key SessionKey) ([]SessionPartition, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss, ok := s.m[key]
	if !ok {
		return nil, fmt.Errorf("share session of member %s of %s: %w", key.Member, key.Group, kerr.ShareSessionNotFound)
	}
	delete(s.m, key)
	return ss.parts, nil
}

// ClosedSession is a session whose client closed its connection.
type ClosedSession struct {
	Key   SessionKey
	Parts []SessionPartition
}

// TakeClosed removes and returns the sessions whose client closed the
// connection that opened them (Kafka drops a share session, and releases
// its records, when its connection closes).
func (s *Sessions) TakeClosed() []ClosedSession {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []ClosedSession
	for k, v := range s.m {
		if v.peerClosed == nil {
			continue
		}
		select {
		case <-v.peerClosed:
			out = append(out, ClosedSession{Key: k, Parts: v.parts})
			delete(s.m, k)
		default:
		}
	}
	return out
}

// Remove drops key's session, if any (its member left the group).
func (s *Sessions) Remove(key SessionKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, key)
}

// RemoveGroup drops every session of group (the group was deleted).
func (s *Sessions) RemoveGroup(group string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range s.m {
		if k.Group == group {
			delete(s.m, k)
		}
	}
}

// Len is the number of open sessions.
func (s *Sessions) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}
