package console

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// sessionCookie names the cookie that carries a visitor's session id.
const sessionCookie = "gregor_console_session"

// session is one logged-in visitor: the client that authenticated to the
// broker as them, through which every API call of theirs runs.
type session struct {
	user      string
	mechanism string
	client    *kgo.Client
	lastUsed  time.Time // guarded by sessions.mu
}

// sessions are the logged-in visitors of a console whose broker listener
// requires SASL. A session id is 256 random bits, given to the visitor in
// an HttpOnly, SameSite=Strict cookie; the store keeps only its SHA-256,
// so lookups compare hashes, never the secret, and the store holds no id
// a visitor could present. A session idle for longer than idle expires and
// its client is closed; beyond max sessions the least recently used one
// is dropped.
type sessions struct {
	idle time.Duration
	max  int

	mu     sync.Mutex
	byID   map[[sha256.Size]byte]*session
	closed bool
}

func newSessions(idle time.Duration, max int) *sessions {
	return &sessions{idle: idle, max: max, byID: map[[sha256.Size]byte]*session{}}
}

var errSessionsClosed = errors.New("the console is closed")

func sessionKey(id string) [sha256.Size]byte { return sha256.Sum256([]byte(id)) }

// create stores a session for the client and returns its id. The store
// owns the client from then on; on error the caller still does.
func (s *sessions) create(now time.Time, user, mechanism string, cl *kgo.Client) (string, error) {
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", err
	}
	id := base64.RawURLEncoding.EncodeToString(raw[:])
	var evicted *kgo.Client
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return "", errSessionsClosed
	}
	if len(s.byID) >= s.max {
		var oldestKey [sha256.Size]byte
		var oldest *session
		for k, ss := range s.byID {
			if oldest == nil || ss.lastUsed.Before(oldest.lastUsed) {
				oldestKey, oldest = k, ss
			}
		}
		delete(s.byID, oldestKey)
		evicted = oldest.client
	}
	s.byID[sessionKey(id)] = &session{user: user, mechanism: mechanism, client: cl, lastUsed: now}
	s.mu.Unlock()
	if evicted != nil {
		evicted.Close()
	}
	return id, nil
}

// lookup finds the session of id and marks it used; an expired session is
// removed (and its client closed) instead.
func (s *sessions) lookup(now time.Time, id string) (*session, bool) {
	if id == "" {
		return nil, false
	}
	key := sessionKey(id)
	s.mu.Lock()
	ss, ok := s.byID[key]
	if ok && now.Sub(ss.lastUsed) > s.idle {
		delete(s.byID, key)
		s.mu.Unlock()
		ss.client.Close()
		return nil, false
	}
	if ok {
		ss.lastUsed = now
	}
	s.mu.Unlock()
	return ss, ok
}

// remove ends the session of id (a logout) and closes its client.
func (s *sessions) remove(id string) {
	key := sessionKey(id)
	s.mu.Lock()
	ss, ok := s.byID[key]
	delete(s.byID, key)
	s.mu.Unlock()
	if ok {
		ss.client.Close()
	}
}

// expire removes the sessions idle for longer than idle and closes their
// clients; it returns how many it removed.
func (s *sessions) expire(now time.Time) int {
	var gone []*kgo.Client
	s.mu.Lock()
	for k, ss := range s.byID {
		if now.Sub(ss.lastUsed) > s.idle {
			delete(s.byID, k)
			gone = append(gone, ss.client)
		}
	}
	s.mu.Unlock()
	for _, cl := range gone {
		cl.Close()
	}
	return len(gone)
}

// close ends every session; later creates fail.
func (s *sessions) close() {
	s.mu.Lock()
	s.closed = true
	all := s.byID
	s.byID = map[[sha256.Size]byte]*session{}
	s.mu.Unlock()
	for _, ss := range all {
		ss.client.Close()
	}
}

func (s *sessions) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.byID)
}

// sessionCookieFor is the cookie that gives a visitor session id: not
// readable by scripts, never sent by another site's page, and, when the
// console is served over HTTPS, never sent over plain HTTP. It lasts as
// long as the browser session; the server expires it when idle.
func sessionCookieFor(id string, secure bool) *http.Cookie {
	return &http.Cookie{Name: sessionCookie, Value: id, Path: "/", HttpOnly: true, Secure: secure, SameSite: http.SameSiteStrictMode}
}

// clearedSessionCookie makes the browser forget the session cookie.
func clearedSessionCookie(secure bool) *http.Cookie {
	c := sessionCookieFor("", secure)
	c.MaxAge = -1
	return c
}

// sessionID is the session id a request presents, "" without one.
func sessionID(r *http.Request) string {
	if ck, err := r.Cookie(sessionCookie); err == nil {
		return ck.Value
	}
	return ""
}
