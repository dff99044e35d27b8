package controller

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/goleak"

	"gregor/internal/metadata"
	"gregor/internal/raft"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// node is a controller on a real one-voter quorum (a raft.Node whose only voter is itself) in a temporary dir.
type node struct {
	t   *testing.T
	dir string
	q   *raft.Node
	c   *Controller
}

func testConfig() Config {
	return Config{
		NodeID:                   1,
		ClusterID:                "test-cluster",
		DefaultNumPartitions:     3,
		DefaultReplicationFactor: 1,
		DeleteTopicEnable:        true,
		ValidateTopicConfig: func(name string, value *string) error {
			if name == "retention.ms" && value != nil && *value == "abc" {
				return errors.New("Invalid value abc for configuration retention.ms: Not a number of type LONG")
			}
			if name == "no.such.config" {
				return errors.New("Unknown topic config name: no.such.config")
			}
			return nil
		},
		ValidateBrokerConfig: func(name string, value *string, perBroker bool) error {
			if name == "log.cleaner.threads" && value != nil && *value == "0" {
				return errors.New("Log cleaner threads cannot be less than 1")
			}
			return nil
		},
		Logger: slog.New(slog.DiscardHandler),
	}
}

func listeners(port int) []Endpoint {
	return []Endpoint{{Name: "PLAINTEXT", Host: "localhost", Port: port, SecurityProtocol: "PLAINTEXT"}}
}

func registered(port int) []metadata.Endpoint {
	return []metadata.Endpoint{{Name: "PLAINTEXT", Host: "localhost", Port: port, SecurityProtocol: 0}}
}

// startNode opens (or reopens) a node on dir and bootstraps it with the given
// brokers (broker 1 = this node).
func startNode(t *testing.T, dir string, cfg Config, brokers ...BrokerRegistration) *node {
	t.Helper()
	q, err := raft.NewNode(raft.NodeConfig{Dir: dir, NodeID: cfg.NodeID, Voters: []int32{cfg.NodeID}, Logger: cfg.Logger})
	if err != nil {
		t.Fatal(err)
	}
	c := New(cfg, q)
	if err := q.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	n := &node{t: t, dir: dir, q: q, c: c}
	t.Cleanup(n.stop)
	if len(brokers) == 0 {
		brokers = []BrokerRegistration{{NodeID: 1, Listeners: listeners(9092)}}
	}
	if err := c.Bootstrap(context.Background(), brokers...); err != nil {
		t.Fatal(err)
	}
	return n
}

func (n *node) stop() {
	if n.c != nil {
		_ = n.c.Close()
		n.c = nil
	}
	if n.q != nil {
		if err := n.q.Close(); err != nil {
			n.t.Error(err)
		}
		n.q = nil
	}
}

func threeBrokers() []BrokerRegistration {
	return []BrokerRegistration{{NodeID: 1, Listeners: listeners(9092)}, {NodeID: 2, Listeners: listeners(9093)}, {NodeID: 3, Listeners: listeners(9094)}}
}

func metadataDir(t *testing.T) string { return filepath.Join(t.TempDir(), "__cluster_metadata-0") }

func newTopic(name string, partitions int32, rf int16, configs ...string) kmsg.CreateTopicsRequestTopic {
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = name, partitions, rf
	for i := 0; i+1 < len(configs); i += 2 {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = configs[i], kmsg.StringPtr(configs[i+1])
		t.Configs = append(t.Configs, c)
	}
	return t
}

func (n *node) createTopics(validateOnly bool, topics ...kmsg.CreateTopicsRequestTopic) *kmsg.CreateTopicsResponse {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version, req.Topics, req.ValidateOnly = 7, topics, validateOnly
	return n.c.CreateTopics(context.Background(), req)
}

func (n *node) mustCreate(topics ...kmsg.CreateTopicsRequestTopic) {
	n.t.Helper()
	for _, rt := range n.createTopics(false, topics...).Topics {
		if rt.ErrorCode != 0 {
			n.t.Fatalf("create %s: %v %v", rt.Topic, kerr.ErrorForCode(rt.ErrorCode), deref(rt.ErrorMessage))
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

// wantErr checks an item's code and message; message "<nil>" means no message.
func wantErr(t *testing.T, what string, code int16, msg *string, wantCode *kerr.Error, wantMsg string) {
	t.Helper()
	wc := int16(0)
	if wantCode != nil {
		wc = wantCode.Code
	}
	if code != wc || deref(msg) != wantMsg {
		t.Errorf("%s: got %v %q, want %v %q", what, kerr.ErrorForCode(code), deref(msg), kerr.ErrorForCode(wc), wantMsg)
	}
}

func TestBootstrapAndRestart(t *testing.T) {
	dir := metadataDir(t)
	cfg := testConfig()
	n := startNode(t, dir, cfg)
	img := n.c.Image()
	// A new cluster's feature levels: the latest metadata.version and
	// each other feature's default at it.
	want := metadata.DefaultFeatureLevels(metadata.LatestMetadataVersion)
	maps.DeleteFunc(want, func(_ string, level int16) bool { return level == 0 }) // level 0: no record
	if !reflect.DeepEqual(img.Features, want) ||
		img.MetadataVersion() != metadata.LatestMetadataVersion || want[metadata.ShareVersionFeature] != 1 {
		t.Fatalf("features = %v, want %v", img.Features, want)
	}
	b := img.Brokers[1]
	// Offset 0 opens the epoch, 1-4 are the activation's feature levels
	// (metadata.version, then eligible.leader.replicas.version,
	// group.version, share.version), 5 the cluster-level
	// min.insync.replicas that eligible leader replicas need.
	if v := img.ClusterConfigs()["min.insync.replicas"]; v != "1" {
		t.Fatalf("cluster-level min.insync.replicas %q", v)
	}
	if b == nil || b.Fenced || !reflect.DeepEqual(b.Listeners, registered(9092)) || b.Epoch != 6 ||
		!reflect.DeepEqual(b.SupportedFeatures, metadata.SupportedBrokerFeatures()) {
		t.Fatalf("registration = %+v", b)
	}
	n.mustCreate(newTopic("orders", 2, 1, "cleanup.policy", "compact"))
	inc := kmsg.NewPtrIncrementalAlterConfigsRequest()
	inc.Resources = []kmsg.IncrementalAlterConfigsRequestResource{incResource(kmsg.ConfigResourceTypeBroker, "", incSet("log.retention.ms", "1000"))}
	if r := n.c.IncrementalAlterConfigs(context.Background(), inc); r.Resources[0].ErrorCode != 0 {
		t.Fatalf("alter cluster config: %v", kerr.ErrorForCode(r.Resources[0].ErrorCode))
	}
	before := n.c.Image()
	hw := n.q.HighWatermark()
	n.stop()

	// Same listeners: state replays and nothing is written but the new
	// epoch's leader change batch.
	n2 := startNode(t, dir, cfg)
	after := n2.c.Image()
	if after.Offset != before.Offset || !reflect.DeepEqual(maps.Collect(after.Topics.All()), maps.Collect(before.Topics.All())) || !reflect.DeepEqual(maps.Collect(after.AllConfigs()), maps.Collect(before.AllConfigs())) ||
		!reflect.DeepEqual(after.Brokers, before.Brokers) || !reflect.DeepEqual(after.Features, before.Features) || after.ClusterID != "test-cluster" {
		t.Fatalf("replayed state differs:\n%+v\n%+v", after, before)
	}
	if got := n2.q.HighWatermark(); got != hw+1 {
		t.Fatalf("high watermark after restart = %d, want %d (one leader change batch)", got, hw+1)
	}
	if _, epoch := n2.q.Leader(); epoch != 2 {
		t.Fatalf("epoch after restart = %d", epoch)
	}
	n2.stop()

	// New listeners: the broker re-registers with a higher epoch.
	n3 := startNode(t, dir, cfg, BrokerRegistration{NodeID: 1, Listeners: listeners(19092)})
	b3 := n3.c.Image().Brokers[1]
	if b3.Epoch <= b.Epoch || b3.Listeners[0].Port != 19092 || b3.IncarnationID == b.IncarnationID {
		t.Fatalf("re-registration = %+v (old %+v)", b3, b)
	}
	if n3.c.Image().Topics.Topic("orders").NumPartitions() != 2 {
		t.Fatal("topic lost")
	}
}

func TestNotController(t *testing.T) {
	n := startNode(t, metadataDir(t), testConfig())
	// The quorum stops leading: requests fail with NOT_CONTROLLER.
	if err := n.q.Close(); err != nil {
		t.Fatal(err)
	}
	n.q = nil
	resp := n.createTopics(false, newTopic("a", 1, 1))
	wantErr(t, "after quorum close", resp.Topics[0].ErrorCode, resp.Topics[0].ErrorMessage, kerr.NotController, "<nil>")

	// A controller that is not running answers NOT_CONTROLLER too.
	_ = n.c.Close()
	resp = n.createTopics(false, newTopic("a", 1, 1))
	wantErr(t, "after controller close", resp.Topics[0].ErrorCode, resp.Topics[0].ErrorMessage, kerr.NotController, "<nil>")
	q, err := raft.NewNode(raft.NodeConfig{Dir: metadataDir(t), NodeID: 1, Voters: []int32{1}, Logger: testConfig().Logger})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	idle := New(testConfig(), q)
	if err := idle.Bootstrap(context.Background()); err == nil {
		t.Fatal("bootstrap on a controller that was never started succeeded")
	}

	// A request whose context has ended gets REQUEST_TIMED_OUT.
	n2 := startNode(t, metadataDir(t), testConfig())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Topics = []kmsg.CreateTopicsRequestTopic{newTopic("b", 1, 1)}
	r := n2.c.CreateTopics(ctx, req)
	wantErr(t, "cancelled", r.Topics[0].ErrorCode, r.Topics[0].ErrorMessage, kerr.RequestTimedOut, "<nil>")
	if n2.c.Image().Topics.Topic("b") != nil {
		t.Fatal("topic created by a cancelled request")
	}
}

func TestNewTopicID(t *testing.T) {
	seen := map[[16]byte]bool{}
	for range 1000 {
		id := newTopicID()
		if id == ([16]byte{}) || id == metadataTopicID || seen[id] || id[6]>>4 != 4 {
			t.Fatalf("bad topic id %x", id)
		}
		seen[id] = true
	}
}

func TestBootstrapRegistrationFields(t *testing.T) {
	n := startNode(t, metadataDir(t), testConfig(), BrokerRegistration{NodeID: 1, Rack: "r1",
		Listeners: []Endpoint{{Name: "SSL", Host: "h", Port: 9093, SecurityProtocol: "SSL"}, {Name: "SASL", Host: "h", Port: 9094, SecurityProtocol: "SASL_SSL"}}})
	b := n.c.Image().Brokers[1]
	if b.Rack == nil || *b.Rack != "r1" || b.Listeners[0].SecurityProtocol != 1 || b.Listeners[1].SecurityProtocol != 3 || b.Listeners[1].Port != 9094 {
		t.Fatalf("registration = %+v", b)
	}
	// A rack change re-registers; an unknown protocol is refused.
	if err := n.c.Bootstrap(context.Background(), BrokerRegistration{NodeID: 1, Rack: "r2", Listeners: []Endpoint{{Name: "SSL", Host: "h", Port: 9093, SecurityProtocol: "SSL"}}}); err != nil {
		t.Fatal(err)
	}
	if b2 := n.c.Image().Brokers[1]; *b2.Rack != "r2" || b2.Epoch <= b.Epoch {
		t.Fatalf("after rack change = %+v", b2)
	}
	if err := n.c.Bootstrap(context.Background(), BrokerRegistration{NodeID: 1, Listeners: []Endpoint{{Name: "X", Host: "h", Port: 1, SecurityProtocol: "GOPHER"}}}); err == nil {
		t.Fatal("unknown security protocol accepted")
	}
}
