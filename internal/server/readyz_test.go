package server

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// waitReadyzCode polls /readyz until its status is code and its body holds
// want, failing after 30s.
func waitReadyzCode(t *testing.T, ts *testServer, code int, want string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, body := scrape(t, ts, "/readyz")
		if got == code && strings.Contains(body, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz: %d %q, want %d with %q", got, body, code, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestReadyzTellsTheTruth checks issue #20's "health tells the truth": a
// broker is not ready while its listeners cannot accept a connection, while
// it is fenced or has lost touch with the controller, or while a log dir is
// offline.
func TestReadyzTellsTheTruth(t *testing.T) {
	dir := t.TempDir()
	ts := startServer(t, dir, map[string]string{
		"max.connections": "8",
		// The next heartbeat is far off, so the fenced state set below
		// stays until the test has looked.
		"broker.heartbeat.interval.ms":            "20000",
		"broker.session.timeout.ms":               "60000",
		"log.flush.offset.checkpoint.interval.ms": "100",
	})
	waitReadyzCode(t, ts, 200, "ready")

	// At max.connections the listeners cannot accept a client. (The
	// node's own clients, the console's, hold some of the connections.)
	var conns []net.Conn
	for len(conns) < 8 {
		c, err := net.Dial("tcp", ts.addr())
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		if code, _ := scrape(t, ts, "/readyz"); code != 200 {
			break
		}
	}
	waitReadyzCode(t, ts, 503, "max.connections reached")
	for _, c := range conns {
		c.Close()
	}
	waitReadyzCode(t, ts, 200, "ready")

	// Fenced by the controller, or silent for longer than the session.
	lc := ts.srv.lifecycle
	lc.fenced.Store(true)
	waitReadyzCode(t, ts, 503, "broker fenced")
	lc.fenced.Store(false)
	lc.answered.Store(time.Now().Add(-2 * time.Minute).UnixNano())
	waitReadyzCode(t, ts, 503, "no heartbeat answered")
	lc.answered.Store(time.Now().UnixNano())
	waitReadyzCode(t, ts, 200, "ready")

	// A checkpoint that cannot be written takes the log dir offline (a
	// directory where the file goes makes the rename fail).
	if _, err := ts.admin().CreateTopic(ctxT(t), 1, 1, nil, "r"); err != nil {
		t.Fatal(err)
	}
	blocker := filepath.Join(dir, "recovery-point-offset-checkpoint")
	if err := os.RemoveAll(blocker); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(blocker, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	waitReadyzCode(t, ts, 503, "offline")
}
