package console

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

const visitorPassword = "visitor-s3cret"

// fakeAuth stands in for the broker's SASL: "alice" with visitorPassword
// gets a client of the (unauthenticated) fake cluster, anything else is
// refused as Kafka refuses it.
type fakeAuth struct {
	target string // the fake cluster the clients read

	mu      sync.Mutex
	clients []*kgo.Client
	calls   []string // user/mechanism of each attempt
}

func (f *fakeAuth) authenticate(_ context.Context, b Broker, user, password, mechanism string) (*kgo.Client, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, user+"/"+mechanism)
	if user != "alice" || password != visitorPassword {
		return nil, &loginError{fmt.Errorf("%w: Authentication failed: Invalid username or password", kerr.SaslAuthenticationFailed)}
	}
	cl, err := kgo.NewClient(clientOpts(Broker{Addr: f.target})...)
	if err == nil {
		f.clients = append(f.clients, cl)
	}
	return cl, err
}

// saslConsole serves a console whose broker listener requires SASL, with
// logins checked by a fakeAuth.
func saslConsole(t *testing.T, tlsServer bool, idle time.Duration) (*Console, *fakeAuth, *httptest.Server, *bytes.Buffer) {
	t.Helper()
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "visible"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)
	var logs bytes.Buffer
	var logMu sync.Mutex
	logger := slog.New(slog.NewTextHandler(syncWriter{&logMu, &logs}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	c := New(Config{Logger: logger, SampleInterval: 20 * time.Millisecond, SessionIdle: idle})
	t.Cleanup(c.Close)
	fake := &fakeAuth{target: cluster.ListenAddrs()[0]}
	c.authenticate = fake.authenticate
	c.SetBroker(Broker{Addr: "127.0.0.1:1", Listener: "SASL_PLAINTEXT", SASL: true, Mechanisms: []string{"PLAIN", "SCRAM-SHA-512"}})
	mux := http.NewServeMux()
	c.Mount(mux)
	srv := httptest.NewUnstartedServer(mux)
	if tlsServer {
		srv.StartTLS()
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
	return c, fake, srv, &logs
}

type syncWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (s syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// visitor is a browser: a client with a cookie jar.
func visitor(t *testing.T, srv *httptest.Server) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	cl := srv.Client()
	cl.Jar = jar
	t.Cleanup(cl.CloseIdleConnections)
	return cl
}

// call sends a request and returns the status, the decoded JSON body and
// the response.
func call(t *testing.T, cl *http.Client, method, url, contentType, body string) (int, map[string]any, *http.Response) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := cl.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var v map[string]any
	if len(raw) > 0 && raw[0] == '{' {
		if err := json.Unmarshal(raw, &v); err != nil {
			t.Fatalf("%s %s: %v: %s", method, url, err, raw)
		}
	}
	return resp.StatusCode, v, resp
}

func loginBody(user, password, mechanism string) string {
	b, _ := json.Marshal(loginRequest{User: user, Password: password, Mechanism: mechanism})
	return string(b)
}

func TestLoginHandler(t *testing.T) {
	c, fake, srv, logs := saslConsole(t, false, 0)
	browser := visitor(t, srv)
	get := func(path string) (int, map[string]any) {
		status, v, _ := call(t, browser, "GET", srv.URL+path, "", "")
		return status, v
	}
	login := func(body, contentType string) (int, map[string]any, *http.Response) {
		return call(t, browser, "POST", srv.URL+"/api/login", contentType, body)
	}

	if status, v := get("/api/session"); status != 200 || v["login"] != true || v["user"] != nil ||
		v["listener"] != "SASL_PLAINTEXT" || fmt.Sprint(v["mechanisms"]) != "[PLAIN SCRAM-SHA-512]" {
		t.Fatalf("/api/session before login: %d %v", status, v)
	}
	for _, path := range []string{"/api/topics", "/api/cluster", "/api/groups", "/api/throughput"} {
		if status, v := get(path); status != http.StatusUnauthorized || !strings.Contains(fmt.Sprint(v["error"]), "log in") {
			t.Errorf("%s without a session: %d %v", path, status, v)
		}
	}

	// Refused logins: no session, no cookie.
	for _, tc := range []struct {
		name, body, contentType string
		status                  int
		want                    string
	}{
		{"wrong password", loginBody("alice", "wrong-"+visitorPassword, "PLAIN"), "application/json", 401,
			"authentication failed: SASL_AUTHENTICATION_FAILED: SASL Authentication failed.: Authentication failed: Invalid username or password"},
		{"unknown user", loginBody("mallory", visitorPassword, "PLAIN"), "application/json", 401, "authentication failed: SASL_AUTHENTICATION_FAILED"},
		{"mechanism not enabled", loginBody("alice", visitorPassword, "SCRAM-SHA-256"), "application/json", 400,
			`mechanism "SCRAM-SHA-256" is not one the listener SASL_PLAINTEXT enables for the console (PLAIN, SCRAM-SHA-512)`},
		{"a form post", "user=alice&password=" + visitorPassword + "&mechanism=PLAIN", "application/x-www-form-urlencoded", 415, "a login is a JSON body"},
		{"no user", loginBody(" ", visitorPassword, "PLAIN"), "application/json", 400, "no user name"},
		{"not JSON", "{", "application/json", 400, "a login is"},
	} {
		status, v, resp := login(tc.body, tc.contentType)
		if status != tc.status || !strings.Contains(fmt.Sprint(v["error"]), tc.want) {
			t.Errorf("%s: %d %v, want %d %q", tc.name, status, v, tc.status, tc.want)
		}
		if len(resp.Cookies()) != 0 {
			t.Errorf("%s: sets a cookie", tc.name)
		}
	}
	if c.sessions.len() != 0 {
		t.Fatalf("%d sessions after refused logins", c.sessions.len())
	}

	status, v, resp := login(loginBody("alice", visitorPassword, "SCRAM-SHA-512"), "application/json; charset=utf-8")
	if status != 200 || v["user"] != "alice" {
		t.Fatalf("login: %d %v", status, v)
	}
	cookies := resp.Cookies()
	if len(cookies) != 1 || cookies[0].Name != sessionCookie || !cookies[0].HttpOnly ||
		cookies[0].SameSite != http.SameSiteStrictMode || cookies[0].Secure || cookies[0].Path != "/" {
		t.Fatalf("session cookie over plain HTTP: %+v", cookies)
	}
	if status, v := get("/api/session"); status != 200 || v["user"] != "alice" {
		t.Fatalf("/api/session after login: %d %v", status, v)
	}
	// The API reads the cluster through the visitor's client.
	var listed struct{ Items []map[string]any }
	req, _ := http.NewRequest("GET", srv.URL+"/api/topics", nil)
	r, err := browser.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	json.NewDecoder(r.Body).Decode(&listed)
	r.Body.Close()
	topics := listed.Items
	if r.StatusCode != 200 || !slices.ContainsFunc(topics, func(t map[string]any) bool { return t["name"] == "visible" }) {
		t.Fatalf("/api/topics as alice: %d %v", r.StatusCode, topics)
	}
	c.mu.Lock()
	own := c.client
	c.mu.Unlock()
	if own != nil {
		t.Error("the console made a client of its own on a SASL listener")
	}
	if lags, err := c.GroupLags(t.Context(), 0); lags != nil || err != nil {
		t.Errorf("group lag metrics on a SASL listener: %v, %v; want none", lags, err)
	}

	// Logging in again replaces the session.
	fake.mu.Lock()
	first := fake.clients[0]
	fake.mu.Unlock()
	if status, _, _ := login(loginBody("alice", visitorPassword, "PLAIN"), "application/json"); status != 200 {
		t.Fatal("second login refused")
	}
	if !isClosed(first) || c.sessions.len() != 1 {
		t.Fatalf("a second login left the first session: closed %v, %d sessions", isClosed(first), c.sessions.len())
	}

	// Logout ends the session and its client, and clears the cookie.
	fake.mu.Lock()
	second := fake.clients[1]
	fake.mu.Unlock()
	status, _, resp = call(t, browser, "POST", srv.URL+"/api/logout", "application/json", "")
	if status != 200 || len(resp.Cookies()) != 1 || resp.Cookies()[0].MaxAge >= 0 {
		t.Fatalf("logout: %d %+v", status, resp.Cookies())
	}
	if !isClosed(second) || c.sessions.len() != 0 {
		t.Fatal("logout left the session's client open")
	}
	if status, _ := get("/api/topics"); status != http.StatusUnauthorized {
		t.Fatalf("/api/topics after logout: %d", status)
	}

	if got := strings.Join(fake.calls, " "); got != "alice/PLAIN mallory/PLAIN alice/SCRAM-SHA-512 alice/PLAIN" {
		t.Errorf("authentication attempts %q", got)
	}
	if strings.Contains(logs.String(), visitorPassword) {
		t.Errorf("a password is in the log:\n%s", logs)
	}
	if !strings.Contains(logs.String(), "console login refused") || !strings.Contains(logs.String(), "user=alice mechanism=SCRAM-SHA-512") {
		t.Errorf("logins are not logged:\n%s", logs)
	}
}

// Over HTTPS the session cookie is Secure.
func TestLoginCookieSecureOverHTTPS(t *testing.T) {
	_, _, srv, _ := saslConsole(t, true, 0)
	status, _, resp := call(t, visitor(t, srv), "POST", srv.URL+"/api/login", "application/json", loginBody("alice", visitorPassword, "PLAIN"))
	if status != 200 || len(resp.Cookies()) != 1 || !resp.Cookies()[0].Secure {
		t.Fatalf("login over HTTPS: %d %+v", status, resp.Cookies())
	}
}

// An expired session asks for a login again, and the expiry goroutine
// closes its client.
func TestSessionExpiresWhileIdle(t *testing.T) {
	// Idle for 50ms is expired; the expiry goroutine runs every second.
	c, fake, srv, _ := saslConsole(t, false, 50*time.Millisecond)
	browser := visitor(t, srv)
	if status, _, _ := call(t, browser, "POST", srv.URL+"/api/login", "application/json", loginBody("alice", visitorPassword, "PLAIN")); status != 200 {
		t.Fatal("login refused")
	}
	deadline := time.Now().Add(5 * time.Second)
	for c.sessions.len() > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	fake.mu.Lock()
	cl := fake.clients[0]
	fake.mu.Unlock()
	if c.sessions.len() != 0 || !isClosed(cl) {
		t.Fatal("an idle session did not expire")
	}
	if status, _, _ := call(t, browser, "GET", srv.URL+"/api/topics", "", ""); status != http.StatusUnauthorized {
		t.Fatalf("/api/topics with an expired session: %d", status)
	}
}

// Without SASL on the listener there is nothing to log in to, and the API
// answers without a session.
func TestNoLoginWithoutSASL(t *testing.T) {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "open"))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	c := New(Config{})
	defer c.Close()
	c.SetBroker(Broker{Addr: cluster.ListenAddrs()[0], Listener: "PLAINTEXT"})
	mux := http.NewServeMux()
	c.Mount(mux)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	browser := visitor(t, srv)
	if status, v, _ := call(t, browser, "GET", srv.URL+"/api/session", "", ""); status != 200 || v["login"] != false {
		t.Fatalf("/api/session: %d %v", status, v)
	}
	if status, v, _ := call(t, browser, "POST", srv.URL+"/api/login", "application/json", loginBody("alice", visitorPassword, "PLAIN")); status != 400 ||
		!strings.Contains(fmt.Sprint(v["error"]), "requires no login") {
		t.Fatalf("login without SASL: %d %v", status, v)
	}
	if status, _, _ := call(t, browser, "GET", srv.URL+"/api/cluster", "", ""); status != 200 {
		t.Fatalf("/api/cluster: %d", status)
	}
}
