package console_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"gregor/internal/console"
)

// actionClient posts console actions as the page does: JSON with the
// X-Gregor-Console header, cookies kept.
type actionClient struct {
	t    *testing.T
	base string
	http *http.Client
}

func newActionClient(t *testing.T, base string) *actionClient {
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar}
	t.Cleanup(hc.CloseIdleConnections)
	return &actionClient{t: t, base: base, http: hc}
}

// post sends body (marshalled unless a string) to path with the headers
// (the page's X-Gregor-Console: 1 unless headers say otherwise) and
// returns the status and the answer's "error", or the raw body on
// success.
func (a *actionClient) post(path string, body any, headers map[string]string) (int, string) {
	a.t.Helper()
	raw, ok := body.(string)
	if !ok {
		b, err := json.Marshal(body)
		if err != nil {
			a.t.Fatal(err)
		}
		raw = string(b)
	}
	req, err := http.NewRequest("POST", a.base+path, strings.NewReader(raw))
	if err != nil {
		a.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Gregor-Console", "1")
	for k, v := range headers {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := a.http.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		var e struct{ Error string }
		if err := json.Unmarshal(b, &e); err != nil || e.Error == "" {
			a.t.Fatalf("POST %s: %d without an error message: %s", path, resp.StatusCode, b)
		}
		return resp.StatusCode, e.Error
	}
	return resp.StatusCode, string(b)
}

// expect checks a post's status and that its answer contains want.
func (a *actionClient) expect(what, path string, body any, headers map[string]string, status int, want string) string {
	a.t.Helper()
	got, msg := a.post(path, body, headers)
	if got != status || !strings.Contains(msg, want) {
		a.t.Errorf("%s: %d %q, want %d with %q", what, got, msg, status, want)
	}
	return msg
}

func topicConfig(t *testing.T, adm *kadm.Client, topic, name string) (value string, source string) {
	t.Helper()
	rcs, err := adm.DescribeTopicConfigs(ctxT(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On(topic, nil)
	if err != nil || rc.Err != nil {
		t.Fatalf("describe configs of %s: %v %v", topic, err, rc.Err)
	}
	for _, c := range rc.Configs {
		if c.Key == name {
			return c.MaybeValue(), c.Source.String()
		}
	}
	t.Fatalf("%s has no config %s", topic, name)
	return "", ""
}

// TestCreateTopicAction creates a topic with configs through the console,
// and shows the broker's refusals and the console's own checks.
func TestCreateTopicAction(t *testing.T) {
	n := startNode(t)
	a := newActionClient(t, n.url(""))
	adm := kadm.NewClient(n.client())

	a.expect("create", "/api/topics", map[string]any{"name": "made-here", "partitions": "2", "replicationFactor": 1,
		"configs": "retention.ms=3600000\n\ncleanup.policy=compact\n"}, nil, 200, `"partitions":2`)
	tds, err := adm.ListTopics(ctxT(t), "made-here")
	if err != nil || tds["made-here"].Err != nil || len(tds["made-here"].Partitions) != 2 {
		t.Fatalf("made-here after create: %v %+v", err, tds)
	}
	if v, src := topicConfig(t, adm, "made-here", "retention.ms"); v != "3600000" || src != "DYNAMIC_TOPIC_CONFIG" {
		t.Errorf("retention.ms = %s (%s)", v, src)
	}
	// Blank partitions and replication factor: the broker's defaults.
	a.expect("create with defaults", "/api/topics", map[string]any{"name": "defaults", "partitions": "", "replicationFactor": ""}, nil, 200, `"replicationFactor":1`)

	// The broker's refusals, with its messages.
	a.expect("create again", "/api/topics", map[string]any{"name": "made-here", "partitions": 1}, nil, 409, "TOPIC_ALREADY_EXISTS")
	a.expect("replication factor 3 on one broker", "/api/topics", map[string]any{"name": "rf3", "partitions": 1, "replicationFactor": 3}, nil, 400,
		"INVALID_REPLICATION_FACTOR: Unable to replicate the partition 3 time(s)")
	a.expect("bad config value", "/api/topics", map[string]any{"name": "badcfg", "partitions": 1, "configs": "retention.ms=soon"}, nil, 400,
		`INVALID_CONFIG: invalid value "soon" for configuration retention.ms`)
	a.expect("bad topic name", "/api/topics", map[string]any{"name": "a/b", "partitions": 1}, nil, 400, "INVALID_TOPIC_EXCEPTION")

	// The console's own checks of the input.
	a.expect("no name", "/api/topics", map[string]any{"name": "  ", "partitions": 1}, nil, 400, "no topic name")
	a.expect("partitions not a number", "/api/topics", map[string]any{"name": "x", "partitions": "many"}, nil, 400, `partitions: "many" is not a whole number`)
	a.expect("config line without =", "/api/topics", map[string]any{"name": "x", "configs": "retention.ms"}, nil, 400, `configs line 1: "retention.ms" is not key=value`)
	a.expect("not JSON", "/api/topics", "name=x", nil, 400, "the body is not")
	a.expect("not a JSON content type", "/api/topics", map[string]any{"name": "x"}, map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, 415, "JSON body")

	// Cross-site defences: the header a form cannot send, the Origin.
	a.expect("without the header", "/api/topics", map[string]any{"name": "csrf"}, map[string]string{"X-Gregor-Console": ""}, 403, "X-Gregor-Console: 1 header")
	a.expect("from another origin", "/api/topics", map[string]any{"name": "csrf"}, map[string]string{"Origin": "https://evil.example"}, 403, "cross-origin request refused")
	a.expect("from its own origin", "/api/topics", map[string]any{"name": "same-origin", "partitions": 1}, map[string]string{"Origin": n.url("")}, 200, "same-origin")
	if tds, _ := adm.ListTopics(ctxT(t), "csrf"); tds["csrf"].Err == nil {
		t.Error("a refused request created topic csrf")
	}
}

// TestProduceAction produces test records through the console: to a
// chosen partition with headers, by key (Kafka's partitioner), and the
// refusals.
func TestProduceAction(t *testing.T) {
	n := startNode(t)
	a := newActionClient(t, n.url(""))
	cl := n.client()
	if _, err := kadm.NewClient(cl).CreateTopic(ctxT(t), 3, 1, nil, "tests"); err != nil {
		t.Fatal(err)
	}
	type produced struct {
		Partition int32 `json:"partition"`
		Offset    int64 `json:"offset"`
	}
	produce := func(body map[string]any) produced {
		t.Helper()
		status, out := a.post("/api/topics/tests/produce", body, nil)
		if status != 200 {
			t.Fatalf("produce %v: %d %s", body, status, out)
		}
		var p produced
		if err := json.Unmarshal([]byte(out), &p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	first := produce(map[string]any{"key": "k1", "value": "hello", "headers": "trace=abc\nsource=console=yes", "partition": "1"})
	second := produce(map[string]any{"key": nil, "value": "again", "partition": 1})
	if first != (produced{1, 0}) || second != (produced{1, 1}) {
		t.Errorf("produced at %+v and %+v, want partition 1 offsets 0 and 1", first, second)
	}
	// No partition: the key's, as Kafka's producer chooses it.
	keyed := produce(map[string]any{"key": "user-42", "value": "by key"})
	want := int32(kgo.StickyKeyPartitioner(nil).ForTopic("tests").Partition(&kgo.Record{Key: []byte("user-42")}, 3))
	if keyed.Partition != want {
		t.Errorf("keyed record went to partition %d, Kafka's partitioner says %d", keyed.Partition, want)
	}

	consumer := n.client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"tests": {1: kgo.NewOffset().AtStart()}}))
	ctx, cancel := context.WithTimeout(ctxT(t), 15*time.Second)
	defer cancel()
	var recs []*kgo.Record
	for len(recs) < 2 && ctx.Err() == nil {
		fs := consumer.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) { recs = append(recs, r) })
	}
	if len(recs) < 2 {
		t.Fatalf("read %d records of partition 1", len(recs))
	}
	r := recs[0]
	if string(r.Key) != "k1" || string(r.Value) != "hello" || len(r.Headers) != 2 ||
		r.Headers[0].Key != "trace" || string(r.Headers[0].Value) != "abc" ||
		r.Headers[1].Key != "source" || string(r.Headers[1].Value) != "console=yes" {
		t.Errorf("first record: key %q value %q headers %+v", r.Key, r.Value, r.Headers)
	}
	if recs[1].Key != nil {
		t.Errorf("a null key was produced as %q", recs[1].Key)
	}

	// A record over franz-go's 1 MB default: the topic's max.message.bytes decides.
	// (Random, so that compression cannot shrink it below 1 MB.)
	raw := make([]byte, 1125000)
	if _, err := rand.Read(raw); err != nil {
		t.Fatal(err)
	}
	big := base64.StdEncoding.EncodeToString(raw) // 1.5 MB
	if _, err := kadm.NewClient(cl).CreateTopic(ctxT(t), 1, 1, map[string]*string{"max.message.bytes": kmsgString("3000000")}, "big"); err != nil {
		t.Fatal(err)
	}
	a.expect("1.5 MB to a topic that allows 3 MB", "/api/topics/big/produce", map[string]any{"value": big}, nil, 200, `"offset":0`)
	a.expect("1.5 MB to a topic that allows 1 MB", "/api/topics/tests/produce", map[string]any{"value": big, "partition": 0}, nil, 400, "MESSAGE_TOO_LARGE")
	a.expect("over the console's limit", "/api/topics/big/produce", map[string]any{"value": big + big}, nil, 413, "the request is over 2097152 bytes")

	a.expect("partition out of range", "/api/topics/tests/produce", map[string]any{"value": "x", "partition": 3}, nil, 400, `partition 3 does not exist: topic "tests" has partitions 0 to 2`)
	a.expect("partition not a number", "/api/topics/tests/produce", map[string]any{"value": "x", "partition": "first"}, nil, 400, "is not a whole number")
	a.expect("header without =", "/api/topics/tests/produce", map[string]any{"value": "x", "headers": "=x"}, nil, 400, "headers line 1")
	a.expect("missing topic", "/api/topics/nope/produce", map[string]any{"value": "x"}, nil, 404, `topic "nope" does not exist`)
	a.expect("without the header", "/api/topics/tests/produce", map[string]any{"value": "x"}, map[string]string{"X-Gregor-Console": ""}, 403, "X-Gregor-Console")
}

// TestAlterConfigAction sets and deletes a topic config through the
// console, and shows the broker's validation message.
func TestAlterConfigAction(t *testing.T) {
	n := startNode(t)
	a := newActionClient(t, n.url(""))
	adm := kadm.NewClient(n.client())
	if _, err := adm.CreateTopic(ctxT(t), 1, 1, nil, "tuned"); err != nil {
		t.Fatal(err)
	}
	a.expect("set", "/api/topics/tuned/configs", map[string]any{"name": "retention.ms", "value": "60000"}, nil, 200, `"name":"retention.ms"`)
	if v, src := topicConfig(t, adm, "tuned", "retention.ms"); v != "60000" || src != "DYNAMIC_TOPIC_CONFIG" {
		t.Errorf("after set: retention.ms = %s (%s)", v, src)
	}
	a.expect("invalid value", "/api/topics/tuned/configs", map[string]any{"name": "retention.ms", "value": "a week"}, nil, 400,
		`INVALID_CONFIG: invalid value "a week" for configuration retention.ms`)
	a.expect("unknown key", "/api/topics/tuned/configs", map[string]any{"name": "retention.msec", "value": "1"}, nil, 400, "INVALID_CONFIG: ")
	a.expect("delete", "/api/topics/tuned/configs", map[string]any{"name": "retention.ms", "delete": true}, nil, 200, `"deleted":true`)
	if v, src := topicConfig(t, adm, "tuned", "retention.ms"); src == "DYNAMIC_TOPIC_CONFIG" {
		t.Errorf("after delete: retention.ms = %s (%s)", v, src)
	}
	a.expect("missing topic", "/api/topics/nope/configs", map[string]any{"name": "retention.ms", "value": "1"}, nil, 404, "UNKNOWN_TOPIC_OR_PARTITION")
	a.expect("no name", "/api/topics/tuned/configs", map[string]any{"name": "", "value": "1"}, nil, 400, "no config name")
	a.expect("no value", "/api/topics/tuned/configs", map[string]any{"name": "retention.ms"}, nil, 400, "no value for retention.ms")
	a.expect("without the header", "/api/topics/tuned/configs", map[string]any{"name": "retention.ms", "value": "1"}, map[string]string{"X-Gregor-Console": "yes"}, 403, "X-Gregor-Console")
}

// TestDeleteTopicAction deletes a topic once its name is confirmed.
func TestDeleteTopicAction(t *testing.T) {
	n := startNode(t)
	a := newActionClient(t, n.url(""))
	adm := kadm.NewClient(n.client())
	if _, err := adm.CreateTopic(ctxT(t), 1, 1, nil, "doomed"); err != nil {
		t.Fatal(err)
	}
	a.expect("wrong confirmation", "/api/topics/doomed/delete", map[string]any{"confirm": "dooomed"}, nil, 400, `type the topic's name, "doomed", to confirm`)
	a.expect("without the header", "/api/topics/doomed/delete", map[string]any{"confirm": "doomed"}, map[string]string{"X-Gregor-Console": ""}, 403, "X-Gregor-Console")
	a.expect("delete", "/api/topics/doomed/delete", map[string]any{"confirm": "doomed"}, nil, 200, `"deleted":"doomed"`)
	waitUntil(t, "doomed to be gone", func() bool {
		tds, err := adm.ListTopics(ctxT(t), "doomed")
		return err == nil && tds["doomed"].Err != nil
	})
	a.expect("delete again", "/api/topics/doomed/delete", map[string]any{"confirm": "doomed"}, nil, 404, "UNKNOWN_TOPIC_OR_PARTITION")
}

// TestActionsOffLoopback serves the console of a PLAINTEXT listener on a
// non-loopback HTTP address: /api/session says actions are off and why,
// and every action answers 403 with that reason, touching nothing.
func TestActionsOffLoopback(t *testing.T) {
	n := startNode(t)
	con := console.New(console.Config{HTTPListen: "0.0.0.0:9644"})
	t.Cleanup(con.Close)
	con.SetBroker(console.Broker{Addr: n.srv.Addr("PLAINTEXT").String(), Listener: "PLAINTEXT"})
	mux := http.NewServeMux()
	con.Mount(mux)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	var session struct {
		Actions         bool   `json:"actions"`
		ActionsDisabled string `json:"actionsDisabled"`
	}
	getJSON(t, srv.URL+"/api/session", 200, &session)
	const why = `the broker listener PLAINTEXT has no login, so the console acts only when gregor.http.listen is bound to loopback (it is "0.0.0.0:9644")`
	if session.Actions || !strings.Contains(session.ActionsDisabled, why) {
		t.Errorf("session = %+v", session)
	}
	a := newActionClient(t, srv.URL)
	a.expect("create", "/api/topics", map[string]any{"name": "remote", "partitions": 1}, nil, 403, why)
	a.expect("produce", "/api/topics/remote/produce", map[string]any{"value": "x"}, nil, 403, why)
	a.expect("alter", "/api/topics/remote/configs", map[string]any{"name": "retention.ms", "value": "1"}, nil, 403, why)
	a.expect("delete", "/api/topics/remote/delete", map[string]any{"confirm": "remote"}, nil, 403, why)
	if tds, _ := kadm.NewClient(n.client()).ListTopics(ctxT(t), "remote"); tds["remote"].Err == nil {
		t.Error("a refused action created topic remote")
	}

	// The node's own console, on 127.0.0.1, allows them.
	session.Actions, session.ActionsDisabled = false, ""
	getJSON(t, n.url("/api/session"), 200, &session)
	if !session.Actions || session.ActionsDisabled != "" {
		t.Errorf("loopback console: session = %+v", session)
	}
}

// TestActionsAsSASLVisitor runs actions on a console whose broker listener
// requires SASL (served on no loopback address: the broker authorizes):
// refused before a login, run as the visitor after.
func TestActionsAsSASLVisitor(t *testing.T) {
	srv := saslConsole(t, saslCluster(t))
	a := newActionClient(t, srv.URL)
	a.expect("create before login", "/api/topics", map[string]any{"name": "mine", "partitions": 1}, nil, 401, "log in")
	if status, body := a.post("/api/login", map[string]string{"user": plainUser, "password": plainPassword, "mechanism": "PLAIN"}, nil); status != 200 {
		t.Fatalf("login: %d %s", status, body)
	}
	a.expect("create", "/api/topics", map[string]any{"name": "mine", "partitions": 2, "replicationFactor": 1}, nil, 200, `"partitions":2`)
	a.expect("produce", "/api/topics/mine/produce", map[string]any{"key": "k", "value": "v", "partition": 1}, nil, 200, `"partition":1`)
	a.expect("without the header", "/api/topics/mine/delete", map[string]any{"confirm": "mine"}, map[string]string{"X-Gregor-Console": ""}, 403, "X-Gregor-Console")
	a.expect("delete", "/api/topics/mine/delete", map[string]any{"confirm": "mine"}, nil, 200, "mine")
}

// TestActionsUnderACLs runs actions as a visitor of a Gregor SASL listener
// with StandardAuthorizer: without ACLs alice is refused with the
// broker's TOPIC_AUTHORIZATION_FAILED (403); once granted WRITE on the
// topic she produces; a super user creates topics.
func TestActionsUnderACLs(t *testing.T) {
	n, err := tryStartNode(t, map[string]string{
		"listeners":                      "SASL_PLAINTEXT://127.0.0.1:0,PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
		"authorizer.class.name":          "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"super.users":                    "User:ANONYMOUS;User:root",
		"listener.name.sasl_plaintext.sasl.enabled.mechanisms": "PLAIN",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required ` +
			`user_alice="alice-secret" user_root="root-secret";`,
	})
	if err != nil {
		t.Fatal(err)
	}
	adm := kadm.NewClient(n.client()) // PLAINTEXT: ANONYMOUS, a super user
	if _, err := adm.CreateTopic(ctxT(t), 1, 1, nil, "guarded"); err != nil {
		t.Fatal(err)
	}
	login := func(a *actionClient, user, password string) {
		t.Helper()
		if status, body := a.post("/api/login", map[string]string{"user": user, "password": password, "mechanism": "PLAIN"}, nil); status != 200 {
			t.Fatalf("login as %s: %d %s", user, status, body)
		}
	}
	alice := newActionClient(t, n.url(""))
	login(alice, "alice", "alice-secret")
	alice.expect("alice creates", "/api/topics", map[string]any{"name": "alices", "partitions": 1}, nil, 403, "TOPIC_AUTHORIZATION_FAILED")
	alice.expect("alice produces", "/api/topics/guarded/produce", map[string]any{"value": "x"}, nil, 403, "TOPIC_AUTHORIZATION_FAILED")
	alice.expect("alice alters a config", "/api/topics/guarded/configs", map[string]any{"name": "retention.ms", "value": "1000"}, nil, 403, "TOPIC_AUTHORIZATION_FAILED")
	alice.expect("alice deletes", "/api/topics/guarded/delete", map[string]any{"confirm": "guarded"}, nil, 403, "TOPIC_AUTHORIZATION_FAILED")

	acl := kadm.NewACLs().Allow("User:alice").AllowHosts("*").Topics("guarded").Operations(kadm.OpWrite, kadm.OpDescribe).ResourcePatternType(kadm.ACLPatternLiteral)
	if rs, err := adm.CreateACLs(ctxT(t), acl); err != nil {
		t.Fatal(err)
	} else {
		for _, r := range rs {
			if r.Err != nil {
				t.Fatal(r.Err)
			}
		}
	}
	waitUntil(t, "alice's produce to be allowed", func() bool {
		status, _ := alice.post("/api/topics/guarded/produce", map[string]any{"value": "granted"}, nil)
		return status == 200
	})

	root := newActionClient(t, n.url(""))
	login(root, "root", "root-secret")
	root.expect("root creates", "/api/topics", map[string]any{"name": "roots", "partitions": 1}, nil, 200, `"name":"roots"`)
}

func kmsgString(s string) *string { return &s }

// TestNoCORSPreflightGranted: another site's page may send the action
// header only after a CORS preflight the console answers; it grants none,
// so the browser never sends the action.
func TestNoCORSPreflightGranted(t *testing.T) {
	n := startNode(t)
	req, err := http.NewRequest(http.MethodOptions, n.url("/api/topics"), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Origin", "https://evil.example")
	req.Header.Set("Access-Control-Request-Method", "POST")
	req.Header.Set("Access-Control-Request-Headers", "x-gregor-console, content-type")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	for _, h := range []string{"Access-Control-Allow-Origin", "Access-Control-Allow-Headers", "Access-Control-Allow-Methods"} {
		if v := resp.Header.Get(h); v != "" {
			t.Errorf("preflight answered with %s: %q", h, v)
		}
	}
}
