package console

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// lazyClient is a client that never connects unless asked (kgo dials on
// the first request).
func lazyClient(t *testing.T) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers("127.0.0.1:1"), kgo.DialTimeout(100*time.Millisecond), kgo.RetryTimeout(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close) // closing twice is fine
	return cl
}

func isClosed(cl *kgo.Client) bool {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	return errors.Is(cl.Ping(ctx), kgo.ErrClientClosed)
}

func TestSessionsCreateAndLookup(t *testing.T) {
	s := newSessions(time.Minute, 10)
	t0 := time.Unix(1000, 0)
	cl := lazyClient(t)
	id, err := s.create(t0, "alice", "PLAIN", cl)
	if err != nil {
		t.Fatal(err)
	}
	if raw, err := base64.RawURLEncoding.DecodeString(id); err != nil || len(raw) != 32 {
		t.Fatalf("session id %q is not 256 random bits: %v", id, err)
	}
	if other, _ := s.create(t0, "alice", "PLAIN", lazyClient(t)); other == id {
		t.Fatal("two sessions got one id")
	}
	ss, ok := s.lookup(t0.Add(50*time.Second), id)
	if !ok || ss.user != "alice" || ss.mechanism != "PLAIN" || ss.client != cl {
		t.Fatalf("lookup: %+v %v", ss, ok)
	}
	// The lookup at 50s renewed the session: 100s is 50s idle.
	if _, ok := s.lookup(t0.Add(100*time.Second), id); !ok {
		t.Fatal("a session in use expired")
	}
	for _, bad := range []string{"", "x", id + "x"} {
		if _, ok := s.lookup(t0, bad); ok {
			t.Errorf("lookup(%q) found a session", bad)
		}
	}
	// The store holds hashes, not ids.
	for k := range s.byID {
		if string(k[:]) == id {
			t.Fatal("the store holds a session id")
		}
	}
}

func TestSessionsExpire(t *testing.T) {
	s := newSessions(time.Minute, 10)
	t0 := time.Unix(1000, 0)
	idle, busy, late := lazyClient(t), lazyClient(t), lazyClient(t)
	idleID, _ := s.create(t0, "idle", "PLAIN", idle)
	busyID, _ := s.create(t0, "busy", "PLAIN", busy)
	lateID, _ := s.create(t0, "late", "PLAIN", late)
	s.lookup(t0.Add(40*time.Second), busyID)

	if n := s.expire(t0.Add(61 * time.Second)); n != 2 {
		t.Fatalf("expired %d sessions, want 2 (idle and late)", n)
	}
	if !isClosed(idle) || !isClosed(late) || isClosed(busy) {
		t.Fatalf("closed: idle %v late %v busy %v", isClosed(idle), isClosed(late), isClosed(busy))
	}
	for _, id := range []string{idleID, lateID} {
		if _, ok := s.lookup(t0.Add(61*time.Second), id); ok {
			t.Error("an expired session is still found")
		}
	}

	// A lookup past the idle time also expires the session.
	if _, ok := s.lookup(t0.Add(40*time.Second+61*time.Second), busyID); ok {
		t.Fatal("lookup found a session idle for 61s")
	}
	if !isClosed(busy) || s.len() != 0 {
		t.Fatalf("closed %v, %d sessions left", isClosed(busy), s.len())
	}
}

func TestSessionsLogoutEvictClose(t *testing.T) {
	s := newSessions(time.Minute, 2)
	t0 := time.Unix(1000, 0)
	a, b, c := lazyClient(t), lazyClient(t), lazyClient(t)
	aID, _ := s.create(t0, "a", "PLAIN", a)
	bID, _ := s.create(t0.Add(time.Second), "b", "PLAIN", b)

	s.remove(aID)
	if !isClosed(a) {
		t.Fatal("logout left the client open")
	}
	if _, ok := s.lookup(t0, aID); ok {
		t.Fatal("a removed session is found")
	}
	s.remove(aID) // twice is fine

	s.lookup(t0.Add(2*time.Second), bID)
	d := lazyClient(t)
	s.create(t0.Add(3*time.Second), "c", "PLAIN", c)
	// Full (b, c): d evicts the least recently used, b.
	if _, err := s.create(t0.Add(4*time.Second), "d", "PLAIN", d); err != nil {
		t.Fatal(err)
	}
	if !isClosed(b) || isClosed(c) || s.len() != 2 {
		t.Fatalf("eviction: b closed %v, c closed %v, %d sessions", isClosed(b), isClosed(c), s.len())
	}

	s.close()
	if !isClosed(c) || !isClosed(d) || s.len() != 0 {
		t.Fatal("close left sessions open")
	}
	e := lazyClient(t)
	if _, err := s.create(t0, "e", "PLAIN", e); !errors.Is(err, errSessionsClosed) {
		t.Fatalf("create after close: %v", err)
	}
	if isClosed(e) {
		t.Fatal("a failed create closed the caller's client")
	}
}

func TestSessionCookieFlags(t *testing.T) {
	for _, secure := range []bool{false, true} {
		c := sessionCookieFor("the-id", secure)
		if c.Name != sessionCookie || c.Value != "the-id" || c.Path != "/" || !c.HttpOnly ||
			c.SameSite != http.SameSiteStrictMode || c.Secure != secure || c.MaxAge != 0 || !c.Expires.IsZero() {
			t.Errorf("secure=%v: cookie %+v", secure, c)
		}
		if err := c.Valid(); err != nil {
			t.Error(err)
		}
		cleared := clearedSessionCookie(secure)
		if cleared.Name != sessionCookie || cleared.Value != "" || cleared.MaxAge >= 0 || !cleared.HttpOnly || cleared.Secure != secure {
			t.Errorf("secure=%v: cleared cookie %+v", secure, cleared)
		}
	}
}
