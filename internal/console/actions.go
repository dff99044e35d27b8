package console

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The console's actions: create and delete a topic, produce a test record,
// set or delete one topic config. Each is a POST under /api/ with a JSON
// body, run by the broker like any client's request, so its answer (and
// refusal, with the broker's message) is the broker's.
//
// Who may act. On a SASL listener an action runs through the visitor's own
// client, so the broker's authorizer decides. On a PLAINTEXT or SSL
// listener there is nobody to authorize: the console would act for anyone
// who reaches its HTTP port, so actions are allowed only when
// gregor.http.listen is bound to loopback (reachable from this host only),
// and answer 403 with the reason otherwise; /api/session tells the page,
// which then hides them.
//
// Cross-site requests. A page of another site can make the visitor's
// browser post to the console (a form, or fetch without CORS), cookie
// included. It cannot, without a CORS preflight the console never grants,
// set a custom header, so every action requires X-Gregor-Console: 1; and
// when the browser names the request's Origin it must be the console's own.

// actionHeader is the header every action request carries (value "1").
const actionHeader = "X-Gregor-Console"

// maxActionBody bounds an action's JSON body: a test record's key, value
// and headers fit in it with room to spare for the encoding.
const maxActionBody = 2 << 20

// actionsAllowed says whether the console may run actions for a visitor,
// and if not, why.
func (c *Console) actionsAllowed() (bool, string) {
	c.mu.Lock()
	b := c.broker
	c.mu.Unlock()
	if b.SASL {
		return true, ""
	}
	if loopbackListen(c.cfg.HTTPListen) {
		return true, ""
	}
	listener := b.Listener
	if listener == "" {
		listener = "(not up yet)"
	}
	return false, fmt.Sprintf("console actions are disabled: the broker listener %s has no login, so the console acts only when gregor.http.listen is bound to loopback (it is %q)", listener, c.cfg.HTTPListen)
}

// loopbackListen reports whether a host:port listen address binds to
// loopback only: a loopback IP (127.0.0.0/8, ::1) or "localhost". A
// wildcard or any other host is reachable from elsewhere.
func loopbackListen(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// checkActionRequest refuses a request that may come from another site,
// or an action the console may not run here.
func (c *Console) checkActionRequest(r *http.Request) error {
	if r.Header.Get(actionHeader) != "1" {
		return &statusError{http.StatusForbidden, fmt.Errorf("console actions require the %s: 1 header (which a cross-site request cannot send)", actionHeader)}
	}
	if origin := r.Header.Get("Origin"); origin != "" {
		u, err := url.Parse(origin)
		if err != nil || u.Host == "" || !strings.EqualFold(u.Host, r.Host) {
			return &statusError{http.StatusForbidden, fmt.Errorf("cross-origin request refused: origin %q is not this console's (%s)", origin, r.Host)}
		}
	}
	if ok, why := c.actionsAllowed(); !ok {
		return &statusError{http.StatusForbidden, errors.New(why)}
	}
	return nil
}

// action adapts an action handler: the cross-site and permission checks,
// then the handler with the visitor's client, its answer as JSON.
func (c *Console) action(h apiHandler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), apiTimeout)
		defer cancel()
		err := c.checkActionRequest(r)
		var cl *kgo.Client
		if err == nil {
			cl, err = c.clientFor(r)
		}
		var v any
		if err == nil {
			r.Body = http.MaxBytesReader(w, r.Body, maxActionBody)
			v, err = h(ctx, r, cl)
		}
		c.writeJSON(w, r, v, err)
	}
}

// decodeAction reads an action's JSON body into v.
func decodeAction(r *http.Request, v any, shape string) error {
	if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct != "application/json" {
		return &statusError{http.StatusUnsupportedMediaType, errors.New("an action is a JSON body (Content-Type: application/json)")}
	}
	if err := json.NewDecoder(r.Body).Decode(v); err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return &statusError{http.StatusRequestEntityTooLarge, fmt.Errorf("the request is over %d bytes", tooLarge.Limit)}
		}
		return badRequest("the body is not %s", shape)
	}
	return nil
}

// logAction records an action the broker accepted: what, on which topic,
// by whom. Never values: a config or record may hold a secret.
func (c *Console) logAction(r *http.Request, action, topic string, attrs ...any) {
	user := ""
	if ss, ok := c.sessions.lookup(time.Now(), sessionID(r)); ok {
		user = ss.user
	}
	c.logger.Info("console action", append([]any{"action", action, "topic", topic, "user", user, "remote", r.RemoteAddr}, attrs...)...)
}

// brokerRefusal is an error code the broker answered with, and its message.
type brokerRefusal struct {
	err *kerr.Error
	msg string
}

func (e *brokerRefusal) Error() string {
	if e.msg == "" {
		return e.err.Error()
	}
	return e.err.Message + ": " + e.msg
}

func (e *brokerRefusal) Unwrap() error { return e.err }

// refusal is the error of a response's error code and message, nil for
// none, with the HTTP status of a refusal: 4xx when the request was wrong
// or not allowed, 502 when the cluster failed.
func refusal(code int16, msg *string) error {
	err := kerr.ErrorForCode(code)
	if err == nil {
		return nil
	}
	var ke *kerr.Error
	if !errors.As(err, &ke) {
		return err
	}
	e := &brokerRefusal{err: ke}
	if msg != nil {
		e.msg = *msg
	}
	return withStatus(e)
}

// withStatus gives a broker error its HTTP status.
func withStatus(err error) error {
	status := 0
	switch {
	case errors.Is(err, kerr.TopicAlreadyExists), errors.Is(err, kerr.NonEmptyGroup):
		status = http.StatusConflict
	case errors.Is(err, kerr.GroupIDNotFound):
		status = http.StatusNotFound
	case errors.Is(err, kerr.UnknownTopicOrPartition):
		status = http.StatusNotFound
	case errors.Is(err, kerr.TopicAuthorizationFailed), errors.Is(err, kerr.ClusterAuthorizationFailed), errors.Is(err, kerr.GroupAuthorizationFailed),
		errors.Is(err, kerr.TopicDeletionDisabled):
		status = http.StatusForbidden
	case errors.Is(err, kerr.ThrottlingQuotaExceeded):
		status = http.StatusTooManyRequests
	case errors.Is(err, kerr.InvalidTopicException), errors.Is(err, kerr.InvalidPartitions),
		errors.Is(err, kerr.InvalidReplicationFactor), errors.Is(err, kerr.InvalidReplicaAssignment),
		errors.Is(err, kerr.InvalidConfig), errors.Is(err, kerr.PolicyViolation), errors.Is(err, kerr.InvalidRequest),
		errors.Is(err, kerr.MessageTooLarge), errors.Is(err, kerr.RecordListTooLarge), errors.Is(err, kerr.InvalidRecord),
		errors.Is(err, kerr.InvalidTimestamp):
		status = http.StatusBadRequest
	}
	if status == 0 {
		return err
	}
	return &statusError{status, err}
}

// parseInt32 reads an optional integer field sent as a JSON number or
// string: absent, null or blank is def.
func parseInt32(raw json.RawMessage, field string, def int32) (int32, error) {
	s := strings.TrimSpace(string(raw))
	if s == "" || s == "null" {
		return def, nil
	}
	if strings.HasPrefix(s, `"`) {
		if err := json.Unmarshal(raw, &s); err != nil {
			return 0, badRequest("%s is not a number", field)
		}
		s = strings.TrimSpace(s)
		if s == "" {
			return def, nil
		}
	}
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		return 0, badRequest("%s: %q is not a whole number", field, s)
	}
	return int32(n), nil
}

// keyValue is one line of a key=value list.
type keyValue struct{ key, value string }

// parseKeyValues reads key=value lines (configs, headers): blank lines
// are skipped, the value is everything after the first '=', and a key is
// required.
func parseKeyValues(text, what string) ([]keyValue, error) {
	var out []keyValue
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimRight(line, "\r")
		if strings.TrimSpace(line) == "" {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, badRequest("%s line %d: %q is not key=value", what, i+1, line)
		}
		out = append(out, keyValue{k, v})
	}
	return out, nil
}

// ---- Create a topic ----

type createTopicRequest struct {
	Name string `json:"name"`
	// Partitions and ReplicationFactor are numbers or numeric strings;
	// absent or blank asks for the broker's defaults (num.partitions,
	// default.replication.factor), as kafka-topics does.
	Partitions        json.RawMessage `json:"partitions"`
	ReplicationFactor json.RawMessage `json:"replicationFactor"`
	// Configs are key=value lines.
	Configs string `json:"configs"`
}

type createdTopic struct {
	Name              string `json:"name"`
	Partitions        int32  `json:"partitions"`
	ReplicationFactor int16  `json:"replicationFactor"`
}

func (c *Console) createTopic(ctx context.Context, r *http.Request, cl *kgo.Client) (any, error) {
	var req createTopicRequest
	if err := decodeAction(r, &req, `{"name", "partitions", "replicationFactor", "configs"}`); err != nil {
		return nil, err
	}
	req.Name = strings.TrimSpace(req.Name)
	if req.Name == "" {
		return nil, badRequest("no topic name")
	}
	partitions, err := parseInt32(req.Partitions, "partitions", -1)
	if err != nil {
		return nil, err
	}
	rf, err := parseInt32(req.ReplicationFactor, "replication factor", -1)
	if err != nil {
		return nil, err
	}
	if rf < -1 || rf > 32767 {
		return nil, badRequest("replication factor %d is out of range", rf)
	}
	configs, err := parseKeyValues(req.Configs, "configs")
	if err != nil {
		return nil, err
	}
	kreq := kmsg.NewPtrCreateTopicsRequest()
	kreq.TimeoutMillis = int32(apiTimeout / time.Millisecond)
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = req.Name, partitions, int16(rf)
	for _, kv := range configs {
		cfg := kmsg.NewCreateTopicsRequestTopicConfig()
		cfg.Name, cfg.Value = kv.key, kmsg.StringPtr(kv.value)
		t.Configs = append(t.Configs, cfg)
	}
	kreq.Topics = append(kreq.Topics, t)
	resp, err := kreq.RequestWith(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("create topic %q: %w", req.Name, err)
	}
	if len(resp.Topics) != 1 {
		return nil, fmt.Errorf("create topic %q: the answer has %d topics", req.Name, len(resp.Topics))
	}
	rt := resp.Topics[0]
	if err := refusal(rt.ErrorCode, rt.ErrorMessage); err != nil {
		return nil, err
	}
	c.logAction(r, "create topic", req.Name, "partitions", rt.NumPartitions, "replicationFactor", rt.ReplicationFactor)
	return createdTopic{Name: req.Name, Partitions: rt.NumPartitions, ReplicationFactor: rt.ReplicationFactor}, nil
}

// ---- Delete a topic ----

// confirmDeletion reads a deletion's body, {"confirm": name}: the page
// makes the visitor type the name of what goes, and the API checks it too.
func confirmDeletion(r *http.Request, name, what string) error {
	var req struct {
		Confirm string `json:"confirm"`
	}
	if err := decodeAction(r, &req, `{"confirm"}`); err != nil {
		return err
	}
	if req.Confirm != name {
		return badRequest("type the %s, %q, to confirm its deletion", what, name)
	}
	return nil
}

func (c *Console) deleteTopic(ctx context.Context, r *http.Request, cl *kgo.Client) (any, error) {
	name := r.PathValue("topic")
	if err := confirmDeletion(r, name, "topic's name"); err != nil {
		return nil, err
	}
	kreq := kmsg.NewPtrDeleteTopicsRequest()
	kreq.TimeoutMillis = int32(apiTimeout / time.Millisecond)
	kreq.TopicNames = []string{name} // v0-v5
	t := kmsg.NewDeleteTopicsRequestTopic()
	t.Topic = kmsg.StringPtr(name) // v6+
	kreq.Topics = append(kreq.Topics, t)
	resp, err := kreq.RequestWith(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("delete topic %q: %w", name, err)
	}
	if len(resp.Topics) != 1 {
		return nil, fmt.Errorf("delete topic %q: the answer has %d topics", name, len(resp.Topics))
	}
	if err := refusal(resp.Topics[0].ErrorCode, resp.Topics[0].ErrorMessage); err != nil {
		return nil, err
	}
	c.logAction(r, "delete topic", name)
	return map[string]string{"deleted": name}, nil
}

// ---- Produce a test record ----

type produceRequest struct {
	Key   *string `json:"key"`   // null: no key
	Value *string `json:"value"` // null: a tombstone
	// Headers are key=value lines.
	Headers string `json:"headers"`
	// Partition is a number or numeric string; absent or blank lets the
	// key choose (murmur2, as Kafka's producer does), or any partition
	// for a record without a key.
	Partition json.RawMessage `json:"partition"`
}

type producedRecord struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	Timestamp int64  `json:"timestamp"` // ms since the epoch
}

func (c *Console) produce(ctx context.Context, r *http.Request, cl *kgo.Client) (any, error) {
	topic := r.PathValue("topic")
	var req produceRequest
	if err := decodeAction(r, &req, `{"key", "value", "headers", "partition"}`); err != nil {
		return nil, err
	}
	partition, err := parseInt32(req.Partition, "partition", -1)
	if err != nil {
		return nil, err
	}
	headers, err := parseKeyValues(req.Headers, "headers")
	if err != nil {
		return nil, err
	}
	td, err := describeTopic(ctx, kadm.NewClient(cl), topic)
	if err != nil {
		return nil, err
	}
	n := int32(len(td.Partitions))
	if partition < -1 || partition >= n {
		return nil, badRequest("partition %d does not exist: topic %q has partitions 0 to %d", partition, topic, n-1)
	}
	rec := &kgo.Record{Topic: topic, Timestamp: time.Now()}
	if req.Key != nil {
		rec.Key = []byte(*req.Key)
	}
	if req.Value != nil {
		rec.Value = []byte(*req.Value)
	}
	for _, h := range headers {
		rec.Headers = append(rec.Headers, kgo.RecordHeader{Key: h.key, Value: []byte(h.value)})
	}
	if partition < 0 {
		// The console's clients partition manually (clientOpts); this is
		// the choice Kafka's default partitioner makes.
		partition = int32(kgo.StickyKeyPartitioner(nil).ForTopic(topic).Partition(rec, int(n)))
	}
	rec.Partition = partition
	out, err := cl.ProduceSync(ctx, rec).First()
	if err != nil {
		return nil, fmt.Errorf("produce to %s-%d: %w", topic, partition, withStatus(err))
	}
	c.logAction(r, "produce", topic, "partition", out.Partition, "offset", out.Offset)
	return producedRecord{Topic: topic, Partition: out.Partition, Offset: out.Offset, Timestamp: out.Timestamp.UnixMilli()}, nil
}

// ---- Set or delete a topic config ----

type alterConfigRequest struct {
	Name   string  `json:"name"`
	Value  *string `json:"value"`  // for a set
	Delete bool    `json:"delete"` // remove the topic's override: back to the broker's value
}

type alteredConfig struct {
	Topic   string `json:"topic"`
	Name    string `json:"name"`
	Deleted bool   `json:"deleted"`
}

func (c *Console) alterConfig(ctx context.Context, r *http.Request, cl *kgo.Client) (any, error) {
	topic := r.PathValue("topic")
	var req alterConfigRequest
	if err := decodeAction(r, &req, `{"name", "value"} or {"name", "delete": true}`); err != nil {
		return nil, err
	}
	req.Name = strings.TrimSpace(req.Name)
	switch {
	case req.Name == "":
		return nil, badRequest("no config name")
	case req.Delete && req.Value != nil:
		return nil, badRequest("either set a value or delete the key, not both")
	case !req.Delete && req.Value == nil:
		return nil, badRequest("no value for %s (to remove the topic's value, delete the key)", req.Name)
	}
	kreq := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeTopic, topic
	cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	cfg.Name = req.Name
	if req.Delete {
		cfg.Op = kmsg.IncrementalAlterConfigOpDelete
	} else {
		cfg.Op, cfg.Value = kmsg.IncrementalAlterConfigOpSet, req.Value
	}
	res.Configs = append(res.Configs, cfg)
	kreq.Resources = append(kreq.Resources, res)
	resp, err := kreq.RequestWith(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("alter configs of %q: %w", topic, err)
	}
	if len(resp.Resources) != 1 {
		return nil, fmt.Errorf("alter configs of %q: the answer has %d resources", topic, len(resp.Resources))
	}
	if err := refusal(resp.Resources[0].ErrorCode, resp.Resources[0].ErrorMessage); err != nil {
		return nil, err
	}
	op := "set topic config"
	if req.Delete {
		op = "delete topic config"
	}
	c.logAction(r, op, topic, "config", req.Name)
	return alteredConfig{Topic: topic, Name: req.Name, Deleted: req.Delete}, nil
}
