package console_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"strings"
	"testing"
)

// TestLoginToSASLCluster logs in to a cluster that requires SASL with
// the console's own authenticator: a wrong password is refused with the
// broker's message, PLAIN and SCRAM-SHA-256 logins read topics and
// records as the visitor.
func TestLoginToSASLCluster(t *testing.T) {
	srv := saslConsole(t, saslCluster(t))
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar}
	defer browser.CloseIdleConnections()
	do := func(method, path, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := browser.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	login := func(user, password, mechanism string) (int, string) {
		b, _ := json.Marshal(map[string]string{"user": user, "password": password, "mechanism": mechanism})
		return do("POST", "/api/login", string(b))
	}

	status, body := login(plainUser, "wrong", "PLAIN")
	if want := "authentication failed: SASL_AUTHENTICATION_FAILED: SASL Authentication failed.: " + kafkaAuthFailure; status != 401 || !strings.Contains(body, want) {
		t.Fatalf("wrong password: %d %s, want 401 %q", status, body, want)
	}
	for _, l := range []struct{ user, password, mechanism string }{
		{plainUser, plainPassword, "PLAIN"},
		{scramUser, scramPassword, "SCRAM-SHA-256"},
	} {
		if status, body := login(l.user, l.password, l.mechanism); status != 200 {
			t.Fatalf("login as %s (%s): %d %s", l.user, l.mechanism, status, body)
		}
		if status, body := do("GET", "/api/topics", ""); status != 200 || !strings.Contains(body, `"name":"secured"`) {
			t.Errorf("%s: /api/topics: %d %s", l.mechanism, status, body)
		}
		// Reading records takes a client of its own, with the visitor's credentials.
		if status, body := do("GET", "/api/topics/secured/records?partition=0&offset=earliest", ""); status != 200 || !strings.Contains(body, "secret-value-4") {
			t.Errorf("%s: records: %d %s", l.mechanism, status, body)
		}
	}
	if status, _ := do("POST", "/api/logout", ""); status != 200 {
		t.Fatal("logout failed")
	}
	if status, _ := do("GET", "/api/topics", ""); status != http.StatusUnauthorized {
		t.Fatalf("/api/topics after logout: %d", status)
	}
}

// TestLoginToGregorSASLListener runs the console of a Gregor node whose
// first broker listener requires SASL: the console asks for a login and
// reads the cluster as the visitor; it has no client of its own there.
func TestLoginToGregorSASLListener(t *testing.T) {
	const alicePassword = "alice-s3cret"
	n, err := tryStartNode(t, map[string]string{
		"listeners":                      "SASL_PLAINTEXT://127.0.0.1:0,PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
		"sasl.enabled.mechanisms":        "PLAIN,OAUTHBEARER",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config":       `org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="` + alicePassword + `";`,
		"listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config": `org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;`,
	})
	if err != nil {
		if strings.Contains(err.Error(), "security protocol") && strings.Contains(err.Error(), "is not supported") {
			t.Skipf("the broker does not serve SASL listeners yet: %v", err)
		}
		t.Fatal(err)
	}
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar}
	defer browser.CloseIdleConnections()
	do := func(method, path, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, n.url(path), strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := browser.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	// Only PLAIN of the listener's mechanisms has a password.
	if status, body := do("GET", "/api/session", ""); status != 200 || !strings.Contains(body, `"login":true`) ||
		!strings.Contains(body, `"mechanisms":["PLAIN"]`) || !strings.Contains(body, `"listener":"SASL_PLAINTEXT"`) {
		t.Fatalf("/api/session: %d %s", status, body)
	}
	if status, _ := do("GET", "/api/cluster", ""); status != http.StatusUnauthorized {
		t.Fatalf("/api/cluster without a login: %d", status)
	}
	if status, body := do("POST", "/api/login", `{"user":"alice","password":"wrong","mechanism":"PLAIN"}`); status != 401 ||
		!strings.Contains(body, "authentication failed: SASL_AUTHENTICATION_FAILED") {
		t.Fatalf("wrong password: %d %s", status, body)
	}
	if status, body := do("POST", "/api/login", `{"user":"alice","password":"`+alicePassword+`","mechanism":"PLAIN"}`); status != 200 {
		t.Fatalf("login: %d %s", status, body)
	}
	if status, body := do("GET", "/api/cluster", ""); status != 200 || !strings.Contains(body, n.srv.ClusterID()) {
		t.Fatalf("/api/cluster as alice: %d %s", status, body)
	}
	// /metrics has no group lag to show (the console reads nothing on its
	// own) and still answers.
	resp, err := http.Get(n.url("/metrics"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("/metrics: %d", resp.StatusCode)
	}
}
