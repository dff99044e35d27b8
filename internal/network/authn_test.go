package network

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/auth/sasl"
)

// fakeMech is a one-message mechanism ("user\x00password") standing in for
// PLAIN, so these tests exercise the connection's state machine alone; the
// mechanisms are tested in auth/sasl. A user's credential may carry an
// expiry, as an OAUTHBEARER token does.
type fakeMech struct {
	name    string
	users   map[string]string
	expires time.Time
}

func (m *fakeMech) Name() string         { return m.name }
func (m *fakeMech) Start() sasl.Exchange { return &fakeExchange{m: m} }

type fakeExchange struct {
	m    *fakeMech
	user string
}

func (e *fakeExchange) Step(msg []byte) ([]byte, bool, error) {
	user, pass, ok := strings.Cut(string(msg), "\x00")
	if !ok || e.m.users[user] != pass {
		return nil, false, &sasl.AuthError{Msg: "invalid username or password"}
	}
	e.user = user
	return nil, true, nil
}
func (e *fakeExchange) Principal() string { return e.user }
func (e *fakeExchange) Expiry() time.Time { return e.m.expires }

// authEvents records what the server reports to OnAuthentication.
type authEvents struct {
	mu     sync.Mutex
	events []string
}

func (a *authEvents) observe(listener, mechanism string, reauth bool, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.events = append(a.events, fmt.Sprintf("%s %s reauth=%v ok=%v", listener, mechanism, reauth, err == nil))
}

func (a *authEvents) list() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.events...)
}

// principalHandler answers Metadata with the request's principal as the
// cluster id, so a test sees who the server thinks is asking.
func principalHandler() *testHandler {
	return &testHandler{
		versions: map[int16][2]int16{3: {0, 12}, 18: {0, 3}, 17: {0, 1}, 36: {0, 2}},
		fn: func(_ context.Context, req *Request) (kmsg.Response, error) {
			switch b := req.Body.(type) {
			case *kmsg.SASLAuthenticateRequest:
				resp := b.ResponseKind().(*kmsg.SASLAuthenticateResponse)
				resp.ErrorCode = kerr.IllegalSaslState.Code
				return resp, nil
			case *kmsg.SASLHandshakeRequest:
				resp := b.ResponseKind().(*kmsg.SASLHandshakeResponse)
				resp.ErrorCode = kerr.IllegalSaslState.Code
				return resp, nil
			}
			resp := kmsg.NewPtrMetadataResponse()
			id := req.Principal.String()
			resp.ClusterID = &id
			return resp, nil
		},
	}
}

func startSASL(t *testing.T, mech *fakeMech, reauth time.Duration) (*Server, *authEvents) {
	t.Helper()
	ev := &authEvents{}
	s := startServer(t, Config{
		Listeners: []ListenerConfig{{
			Name: "PLAINTEXT", Host: "127.0.0.1", SecurityProtocol: "SASL_PLAINTEXT",
			SASL:      []sasl.Server{mech},
			ReauthMax: func(string) time.Duration { return reauth },
		}},
		OnAuthentication: ev.observe,
	}, principalHandler())
	return s, ev
}

func handshake(c *testClient, version int16, mechanism string) *kmsg.SASLHandshakeResponse {
	c.t.Helper()
	req := kmsg.NewPtrSASLHandshakeRequest()
	req.Version = version
	req.Mechanism = mechanism
	c.send(req)
	resp := kmsg.NewPtrSASLHandshakeResponse()
	resp.Version = version
	c.recv(resp)
	return resp
}

func authenticate(c *testClient, version int16, msg string) *kmsg.SASLAuthenticateResponse {
	c.t.Helper()
	req := kmsg.NewPtrSASLAuthenticateRequest()
	req.Version = version
	req.SASLAuthBytes = []byte(msg)
	c.send(req)
	resp := kmsg.NewPtrSASLAuthenticateResponse()
	resp.Version = version
	c.recv(resp)
	return resp
}

func whoAmI(c *testClient) string {
	c.t.Helper()
	c.send(metadataReq(12))
	resp := metadataResp(12)
	c.recv(resp)
	if resp.ClusterID == nil {
		c.t.Fatal("no principal in the answer")
	}
	return *resp.ClusterID
}

func TestSASLAuthenticates(t *testing.T) {
	mech := &fakeMech{name: "PLAIN", users: map[string]string{"alice": "alice-secret"}}
	s, ev := startSASL(t, mech, 0)
	c := dial(t, s)

	av := kmsg.NewPtrApiVersionsRequest()
	av.Version = 3
	c.send(av)
	c.recv(&kmsg.ApiVersionsResponse{Version: 3})

	hs := handshake(c, 1, "PLAIN")
	if hs.ErrorCode != 0 || len(hs.SupportedMechanisms) != 1 || hs.SupportedMechanisms[0] != "PLAIN" {
		t.Fatalf("handshake: %+v", hs)
	}
	resp := authenticate(c, 2, "alice\x00alice-secret")
	if resp.ErrorCode != 0 || resp.SessionLifetimeMillis != 0 {
		t.Fatalf("authenticate: code %d lifetime %d", resp.ErrorCode, resp.SessionLifetimeMillis)
	}
	if got := whoAmI(c); got != "User:alice" {
		t.Fatalf("principal %q, want User:alice", got)
	}
	// Without a session lifetime, SASL requests after authentication
	// reach the handler (ILLEGAL_SASL_STATE, as Kafka's KafkaApis).
	if hs := handshake(c, 1, "PLAIN"); hs.ErrorCode != kerr.IllegalSaslState.Code {
		t.Fatalf("handshake after authentication: code %d", hs.ErrorCode)
	}
	if got := ev.list(); len(got) != 1 || got[0] != "PLAINTEXT PLAIN reauth=false ok=true" {
		t.Fatalf("auth events %q", got)
	}
}

func TestSASLRawTokensAfterHandshakeV0(t *testing.T) {
	mech := &fakeMech{name: "PLAIN", users: map[string]string{"bob": "pw"}}
	s, _ := startSASL(t, mech, 0)
	c := dial(t, s)
	if hs := handshake(c, 0, "PLAIN"); hs.ErrorCode != 0 {
		t.Fatalf("handshake v0: code %d", hs.ErrorCode)
	}
	tok := []byte("bob\x00pw")
	c.sendRaw(binary.BigEndian.AppendUint32(nil, uint32(len(tok))))
	c.sendRaw(tok)
	// PLAIN's success has no token: the next frame is the Metadata answer.
	if got := whoAmI(c); got != "User:bob" {
		t.Fatalf("principal %q", got)
	}

	// A wrong raw token closes the connection: the raw protocol has no
	// way to say why.
	c2 := dial(t, s)
	handshake(c2, 0, "PLAIN")
	bad := []byte("bob\x00wrong")
	c2.sendRaw(append(binary.BigEndian.AppendUint32(nil, uint32(len(bad))), bad...))
	c2.expectClosed()
}

func TestSASLRefusals(t *testing.T) {
	mech := &fakeMech{name: "PLAIN", users: map[string]string{"alice": "alice-secret"}}
	s, ev := startSASL(t, mech, 0)

	t.Run("request before authentication", func(t *testing.T) {
		c := dial(t, s)
		c.send(metadataReq(12))
		c.expectClosed()
	})
	t.Run("unsupported mechanism", func(t *testing.T) {
		c := dial(t, s)
		hs := handshake(c, 1, "GSSAPI")
		if hs.ErrorCode != kerr.UnsupportedSaslMechanism.Code || len(hs.SupportedMechanisms) != 1 {
			t.Fatalf("handshake: %+v", hs)
		}
		c.expectClosed()
	})
	t.Run("wrong password and unknown user say the same", func(t *testing.T) {
		var msgs []string
		for _, cred := range []string{"alice\x00nope", "mallory\x00alice-secret"} {
			c := dial(t, s)
			handshake(c, 1, "PLAIN")
			resp := authenticate(c, 1, cred)
			if resp.ErrorCode != kerr.SaslAuthenticationFailed.Code || resp.ErrorMessage == nil {
				t.Fatalf("authenticate %q: %+v", cred, resp)
			}
			msgs = append(msgs, *resp.ErrorMessage)
			c.expectClosed()
		}
		if msgs[0] != msgs[1] {
			t.Fatalf("messages differ: %q", msgs)
		}
	})
	t.Run("request during authentication", func(t *testing.T) {
		c := dial(t, s)
		handshake(c, 1, "PLAIN")
		c.send(metadataReq(12))
		c.expectClosed()
	})
	t.Run("oversized frame before authentication", func(t *testing.T) {
		c := dial(t, s)
		c.sendRaw(binary.BigEndian.AppendUint32(nil, DefaultSASLMaxReceiveSize+1))
		c.expectClosed()
	})
	t.Run("plaintext stays usable", func(t *testing.T) {
		c := dial(t, s)
		handshake(c, 1, "PLAIN")
		authenticate(c, 1, "alice\x00alice-secret")
		if got := whoAmI(c); got != "User:alice" {
			t.Fatalf("principal %q", got)
		}
	})
	// Every refusal is a failed authentication, as Kafka counts its
	// IllegalSaslStateException and "invalid receive size": labelled with
	// the mechanism once the client named one.
	var failed []string
	for _, e := range ev.list() {
		if strings.HasSuffix(e, "ok=false") {
			failed = append(failed, e)
		}
	}
	want := []string{
		"PLAINTEXT  reauth=false ok=false",       // request before authentication
		"PLAINTEXT GSSAPI reauth=false ok=false", // unsupported mechanism
		"PLAINTEXT PLAIN reauth=false ok=false",  // wrong password
		"PLAINTEXT PLAIN reauth=false ok=false",  // unknown user
		"PLAINTEXT PLAIN reauth=false ok=false",  // request during authentication
		"PLAINTEXT  reauth=false ok=false",       // oversized frame
	}
	if strings.Join(failed, "\n") != strings.Join(want, "\n") {
		t.Fatalf("failed authentications:\n%s\nwant:\n%s", strings.Join(failed, "\n"), strings.Join(want, "\n"))
	}
}

func TestSASLReauthentication(t *testing.T) {
	mech := &fakeMech{name: "PLAIN", users: map[string]string{"alice": "a", "bob": "b"}}
	const lifetime = 300 * time.Millisecond
	s, ev := startSASL(t, mech, lifetime)

	c := dial(t, s)
	handshake(c, 1, "PLAIN")
	resp := authenticate(c, 2, "alice\x00a")
	if resp.SessionLifetimeMillis <= 0 || resp.SessionLifetimeMillis > lifetime.Milliseconds() {
		t.Fatalf("session lifetime %d ms, want (0, %d]", resp.SessionLifetimeMillis, lifetime.Milliseconds())
	}
	// Re-authenticating in time keeps the connection.
	if hs := handshake(c, 1, "PLAIN"); hs.ErrorCode != 0 {
		t.Fatalf("re-authentication handshake: code %d", hs.ErrorCode)
	}
	if r := authenticate(c, 2, "alice\x00a"); r.ErrorCode != 0 || r.SessionLifetimeMillis <= 0 {
		t.Fatalf("re-authenticate: %+v", r)
	}
	if got := whoAmI(c); got != "User:alice" {
		t.Fatalf("principal %q", got)
	}
	// Past the session's end, a request other than SaslHandshake closes it.
	deadline := time.Now().Add(lifetime)
	time.Sleep(time.Until(deadline) + 50*time.Millisecond)
	c.send(metadataReq(12))
	c.expectClosed()

	// Re-authentication may not change the principal.
	c2 := dial(t, s)
	handshake(c2, 1, "PLAIN")
	authenticate(c2, 2, "alice\x00a")
	handshake(c2, 1, "PLAIN")
	r := authenticate(c2, 2, "bob\x00b")
	if r.ErrorCode != kerr.SaslAuthenticationFailed.Code || r.ErrorMessage == nil || !strings.Contains(*r.ErrorMessage, "principal") {
		t.Fatalf("re-authenticate as another user: %+v", r)
	}
	c2.expectClosed()

	var reauthOK, reauthFailed int
	for _, e := range ev.list() {
		switch e {
		case "PLAINTEXT PLAIN reauth=true ok=true":
			reauthOK++
		case "PLAINTEXT PLAIN reauth=true ok=false":
			reauthFailed++
		}
	}
	if reauthOK != 1 || reauthFailed != 1 {
		t.Fatalf("re-authentication events %q", ev.list())
	}
}

// A credential that expires (an OAUTHBEARER token) bounds the session even
// without connections.max.reauth.ms.
func TestSASLCredentialExpiryBoundsSession(t *testing.T) {
	mech := &fakeMech{name: "OAUTHBEARER", users: map[string]string{"svc": "tok"}, expires: time.Now().Add(time.Hour)}
	s, _ := startSASL(t, mech, 0)
	c := dial(t, s)
	handshake(c, 1, "OAUTHBEARER")
	resp := authenticate(c, 2, "svc\x00tok")
	if ms := resp.SessionLifetimeMillis; ms < (59*time.Minute).Milliseconds() || ms > time.Hour.Milliseconds() {
		t.Fatalf("session lifetime %d ms, want about an hour", ms)
	}
}

// A plaintext Kafka client on a SASL listener that skips the handshake is
// closed, and a garbage first frame too; the server goes on serving.
func TestSASLGarbageDoesNotHurt(t *testing.T) {
	mech := &fakeMech{name: "PLAIN", users: map[string]string{"alice": "a"}}
	s, _ := startSASL(t, mech, 0)
	nc, err := net.Dial("tcp", s.Addr("PLAINTEXT").String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.Write(append(binary.BigEndian.AppendUint32(nil, 12), bytes.Repeat([]byte{0xff}, 12)...))
	c := &testClient{t: t, nc: nc}
	c.expectClosed()
	c2 := dial(t, s)
	handshake(c2, 1, "PLAIN")
	if r := authenticate(c2, 2, "alice\x00a"); r.ErrorCode != 0 {
		t.Fatalf("authenticate: %+v", r)
	}
}

// The debug log names each request's principal and listener, and no log
// line holds a password, good or bad.
func TestSASLRequestLogNamesPrincipal(t *testing.T) {
	var logs syncBuffer
	mech := &fakeMech{name: "PLAIN", users: map[string]string{"alice": "alice-secret"}}
	s := startServer(t, Config{
		Listeners: []ListenerConfig{{Name: "SASL_PLAINTEXT", Host: "127.0.0.1", SASL: []sasl.Server{mech}}},
		Logger:    slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}, principalHandler())
	nc, err := net.Dial("tcp", s.Addr("SASL_PLAINTEXT").String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	c := &testClient{t: t, nc: nc}
	handshake(c, 1, "PLAIN")
	authenticate(c, 2, "alice\x00alice-secret")
	whoAmI(c)
	bad, err := net.Dial("tcp", s.Addr("SASL_PLAINTEXT").String())
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	cb := &testClient{t: t, nc: bad}
	handshake(cb, 1, "PLAIN")
	authenticate(cb, 2, "alice\x00guessed-secret")
	cb.expectClosed()
	waitFor(t, "the request log line", func() bool {
		return strings.Contains(logs.String(), "msg=request") && strings.Contains(logs.String(), "failed authentication")
	})
	out := logs.String()
	for _, want := range []string{"principal=User:alice", "listener=SASL_PLAINTEXT", "api=Metadata", "security_protocol=SASL_PLAINTEXT"} {
		if !strings.Contains(out, want) {
			t.Errorf("debug log lacks %q:\n%s", want, out)
		}
	}
	for _, secret := range []string{"alice-secret", "guessed-secret"} {
		if strings.Contains(out, secret) {
			t.Errorf("the log shows a password:\n%s", out)
		}
	}
}

// A refused login logs the client's message and the mechanism's reason
// (which the client is not told), never the password tried.
func TestSASLFailureLogsReason(t *testing.T) {
	var logged syncBuffer
	mech := &reasonMech{}
	s := startServer(t, Config{
		Listeners: []ListenerConfig{{
			Name: "PLAINTEXT", Host: "127.0.0.1", SecurityProtocol: "SASL_PLAINTEXT",
			SASL: []sasl.Server{mech}, ReauthMax: func(string) time.Duration { return 0 },
		}},
		Logger: slog.New(slog.NewTextHandler(&logged, nil)),
	}, principalHandler())
	c := dial(t, s)
	handshake(c, 1, "PLAIN")
	if resp := authenticate(c, 2, "mallory\x00guess-123"); resp.ErrorCode != kerr.SaslAuthenticationFailed.Code {
		t.Fatalf("authenticate: %+v", resp)
	}
	c.expectClosed()
	out := logged.String()
	if !strings.Contains(out, `msg="failed authentication"`) || !strings.Contains(out, `err="invalid username or password"`) ||
		!strings.Contains(out, `reason="PLAIN user \"mallory\": unknown user"`) {
		t.Fatalf("log lacks the failure's message and reason:\n%s", out)
	}
	if strings.Contains(out, "guess-123") {
		t.Fatalf("log shows the password:\n%s", out)
	}
}

// reasonMech refuses every login with a reason for the log.
type reasonMech struct{}

func (reasonMech) Name() string         { return "PLAIN" }
func (reasonMech) Start() sasl.Exchange { return reasonExchange{} }

type reasonExchange struct{}

func (reasonExchange) Step(msg []byte) ([]byte, bool, error) {
	user, _, _ := strings.Cut(string(msg), "\x00")
	return nil, false, &sasl.AuthError{Msg: "invalid username or password", Reason: fmt.Sprintf("PLAIN user %q: unknown user", user)}
}
func (reasonExchange) Principal() string { return "" }
func (reasonExchange) Expiry() time.Time { return time.Time{} }

// syncBuffer is a bytes.Buffer the server's goroutines may log into.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
