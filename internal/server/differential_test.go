package server

// A differential test: the same admin, produce and fetch sequence is sent to
// a Gregor node and to franz-go's kfake (an independent in-memory Kafka), one
// raw kmsg request at a time (through kgo's per-broker handle, Produce over a
// plain connection), both sides pinned to the same request version, and the
// answers are compared wherever Kafka's semantics fix them. Fields that
// legitimately differ (cluster id, node ids, ports, topic ids, throttle
// times, error messages, tagged fields, the lists of default configs) are
// left out of the compared views. Where kfake is known to answer differently
// from Apache Kafka, Kafka wins: the divergence is documented at the case,
// the kfake comparison is skipped and Gregor is held to Kafka's answer
// (asKafka). The sequence runs twice: at the newest versions both serve, and
// capped at Kafka 2.3's versions (before flexible versions), so the old
// encodings and version-gated behaviour are compared too.

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

func TestDifferentialKfake(t *testing.T) {
	for _, profile := range []struct {
		name  string
		limit *kversion.Versions
	}{
		{"newest", nil},
		{"kafka-2.3", kversion.V2_3_0()},
	} {
		t.Run(profile.name, func(t *testing.T) {
			p, advertised := startPair(t, profile.limit)
			t.Logf("pinned versions:\n%v", p.pin)
			d := &differential{p: p, base: time.Now().Add(-time.Hour).Truncate(time.Second).UnixMilli()}
			t.Run("ApiVersions", func(t *testing.T) { d.apiVersions(t, advertised) })
			t.Run("CreateTopics", d.createTopics)
			t.Run("Metadata", d.metadata)
			t.Run("Produce", d.produce)
			t.Run("Fetch", d.fetch)
			t.Run("ListOffsets", d.listOffsets)
			t.Run("CreatePartitions", d.createPartitions)
			t.Run("Configs", d.configs)
			t.Run("DescribeCluster", d.describeCluster)
			t.Run("DeleteTopics", d.deleteTopics)
		})
	}
}

// differential is the state one run of the sequence shares between steps.
type differential struct {
	p *pair
	// base is the timestamp of the first produced record; the timestamps
	// lie an hour in the past so no broker's timestamp bounds reject them.
	base int64
	// kfakeOnly are topics kfake created where Kafka (and Gregor) refuse
	// to; they are left out of the all-topics comparison.
	kfakeOnly []string
}

const (
	topicMain   = "diff"      // 3 partitions, then 5; every produce goes here
	topicConfig = "diff-cfg"  // carries a retention.ms override
	topicNone   = "diff-none" // created with the broker defaults (KIP-464, v4+)
)

// code names an error code in views, so a failure message reads
// "UNKNOWN_TOPIC_OR_PARTITION" instead of 3.
type code int16

func (c code) String() string {
	if c == 0 {
		return "NONE"
	}
	if err := kerr.ErrorForCode(int16(c)); err != nil {
		var ke *kerr.Error
		if errors.As(err, &ke) {
			return ke.Message
		}
	}
	return "unknown code"
}

func (d *differential) apiVersions(t *testing.T, advertised [2]*kmsg.ApiVersionsResponse) {
	g, f := both[*kmsg.ApiVersionsResponse](t, d.p, func(side) kmsg.Request { return apiVersionsRequest("gregor-differential") })
	same(t, "ApiVersions error", code(g.ErrorCode), code(f.ErrorCode))
	gr, fr := apiRanges(g), apiRanges(f)
	same(t, "ApiVersions ranges unchanged since the first connection", gr, apiRanges(advertised[onGregor]))
	for key, gv := range gr {
		name := kmsg.NameForKey(key)
		fv, ok := fr[key]
		switch {
		case !ok && key == 55:
			// DescribeQuorum: kfake has no metadata quorum to describe.
		case !ok && key == 64:
			// UnregisterBroker: kfake's brokers never leave its cluster.
		case !ok && key >= 83 && key <= 87:
			// The share-group state APIs, broker to share coordinator:
			// kfake keeps share state inside its one process.
		case !ok:
			t.Errorf("Gregor advertises %s v%d-%d, which kfake does not serve at all", name, gv[0], gv[1])
		case gv[1] < fv[0] || fv[1] < gv[0]:
			t.Errorf("%s: Gregor v%d-%d and kfake v%d-%d do not overlap", name, gv[0], gv[1], fv[0], fv[1])
		case gv != fv:
			// Narrower on purpose: Gregor advertises only what it
			// implements completely (DESIGN.md, principle 1).
			t.Logf("%s: Gregor v%d-%d, kfake v%d-%d", name, gv[0], gv[1], fv[0], fv[1])
		}
	}
	if d.p.version(18) >= 3 { // KIP-511: client software name and version, checked by the broker
		t.Run("invalid client software name", func(t *testing.T) {
			g, f := both[*kmsg.ApiVersionsResponse](t, d.p, func(side) kmsg.Request { return apiVersionsRequest("-bad name-") })
			agree(t, "ApiVersions invalid software name", code(g.ErrorCode), code(f.ErrorCode), code(kerr.InvalidRequest.Code))
			t.Run("keys listed", func(t *testing.T) {
				agree(t, "ApiVersions invalid software name keys", len(g.ApiKeys), len(f.ApiKeys), 0)
			})
		})
	}
}

func apiVersionsRequest(software string) *kmsg.ApiVersionsRequest {
	r := kmsg.NewPtrApiVersionsRequest()
	r.ClientSoftwareName, r.ClientSoftwareVersion = software, "1.0"
	return r
}

// createTopicsView is what Kafka fixes in a CreateTopics answer for a topic.
type createTopicsView struct {
	Topic             string
	Err               code
	NumPartitions     int32
	ReplicationFactor int16
}

func (d *differential) createTopics(t *testing.T) {
	v := d.p.version(19)
	create := func(validateOnly bool, topics ...kmsg.CreateTopicsRequestTopic) ([]createTopicsView, []createTopicsView) {
		t.Helper()
		g, f := both[*kmsg.CreateTopicsResponse](t, d.p, func(side) kmsg.Request {
			r := kmsg.NewPtrCreateTopicsRequest()
			r.TimeoutMillis, r.ValidateOnly, r.Topics = 10000, validateOnly, topics
			return r
		})
		view := func(r *kmsg.CreateTopicsResponse) []createTopicsView {
			var out []createTopicsView
			for _, rt := range r.Topics {
				out = append(out, createTopicsView{rt.Topic, code(rt.ErrorCode), rt.NumPartitions, rt.ReplicationFactor})
			}
			return out
		}
		return view(g), view(f)
	}
	ok := func(name string, parts int32, rf int16) []createTopicsView {
		if v < 5 { // the counts are answered from v5 (KIP-525)
			parts, rf = -1, -1
		}
		return []createTopicsView{{name, 0, parts, rf}}
	}
	failed := func(name string, err *kerr.Error) []createTopicsView {
		return []createTopicsView{{name, code(err.Code), -1, -1}}
	}

	cases := []struct {
		name         string
		topic        kmsg.CreateTopicsRequestTopic
		validateOnly bool
		kafka        []createTopicsView // set where kfake is known to differ
		why          string
	}{
		{name: "create", topic: newTopic(topicMain, 3, 1, nil)},
		{name: "create with override", topic: newTopic(topicConfig, 1, 1, map[string]string{"retention.ms": "3600000"})},
		{name: "already exists", topic: newTopic(topicMain, 3, 1, nil)},
		{name: "zero partitions", topic: newTopic("zero-parts", 0, 1, nil)},
		{name: "replication factor above brokers", topic: newTopic("rf-three", 1, 3, nil)},
		{name: "validate only", topic: newTopic("validated", 2, 1, nil), validateOnly: true},
		{
			name: "invalid name", topic: newTopic("bad/name", 1, 1, nil),
			kafka: failed("bad/name", kerr.InvalidTopicException),
			why:   "kfake does not validate names; Kafka's Topic.validate allows only [a-zA-Z0-9._-], up to 249 chars, not . or ..",
		},
		{
			name: "name dot dot", topic: newTopic("..", 1, 1, nil),
			kafka: failed("..", kerr.InvalidTopicException),
			why:   "kfake does not validate names; Kafka's Topic.validate refuses . and ..",
		},
		{
			name: "negative partitions", topic: newTopic("neg-parts", -5, 1, nil),
			kafka: failed("neg-parts", kerr.InvalidPartitions),
			why:   "kfake treats any negative count as the default; Kafka's ReplicationControlManager allows only -1 (KIP-464) and refuses other non-positive counts",
		},
		{
			name: "zero replication factor", topic: newTopic("rf-zero", 1, 0, nil),
			kafka: failed("rf-zero", kerr.InvalidReplicationFactor),
			why:   "kfake creates a topic without replicas; Kafka's ReplicationControlManager allows only -1 and refuses other non-positive factors",
		},
		{
			name: "invalid config value", topic: newTopic("bad-config", 1, 1, map[string]string{"retention.ms": "soon"}),
			kafka: failed("bad-config", kerr.InvalidConfig),
			why:   "kfake does not validate config values; Kafka's ConfigDef parse fails the create with INVALID_CONFIG",
		},
		{
			name: "unknown config", topic: newTopic("unknown-config", 1, 1, map[string]string{"no.such.config": "1"}),
			kafka: failed("unknown-config", kerr.InvalidConfig),
			why:   "kfake accepts any config name; Kafka's LogConfig.validateNames refuses unknown topic configs with INVALID_CONFIG",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g, f := create(c.validateOnly, c.topic)
			if c.kafka == nil {
				same(t, "CreateTopics "+c.topic.Topic, g, f)
				return
			}
			if len(f) == 1 && f[0].Err == 0 && !c.validateOnly {
				d.kfakeOnly = append(d.kfakeOnly, c.topic.Topic)
			}
			asKafka(t, "CreateTopics "+c.topic.Topic, g, f, c.kafka, c.why)
		})
	}
	t.Run("expected answers", func(t *testing.T) {
		// The agreed answers must also be Kafka's, not a shared mistake.
		g, _ := create(false, newTopic(topicMain, 3, 1, nil))
		kafkaSays(t, "already exists", g, failed(topicMain, kerr.TopicAlreadyExists))
		g, _ = create(true, newTopic("validated-again", 2, 1, nil))
		kafkaSays(t, "validate only", g, ok("validated-again", 2, 1))
	})
	if v >= 4 { // KIP-464: -1 takes the broker's num.partitions and default.replication.factor
		t.Run("broker defaults", func(t *testing.T) {
			g, f := create(false, newTopic(topicNone, -1, -1, nil))
			agree(t, "CreateTopics with defaults", g, f, ok(topicNone, 1, 1))
		})
	}
	t.Run("duplicate in one request", func(t *testing.T) {
		g, f := create(false, newTopic("dup", 1, 1, nil), newTopic("dup", 1, 1, nil))
		agree(t, "CreateTopics duplicate", g, f, failed("dup", kerr.InvalidRequest))
	})
}

func newTopic(name string, parts int32, rf int16, configs map[string]string) kmsg.CreateTopicsRequestTopic {
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, parts, rf
	for _, k := range slices.Sorted(maps.Keys(configs)) {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = k, kmsg.StringPtr(configs[k])
		rt.Configs = append(rt.Configs, c)
	}
	return rt
}

// metadataView is what Kafka fixes in a Metadata answer for one topic; node
// ids and topic ids are each server's own, so only their presence counts.
type metadataView struct {
	Topic      string
	Err        code
	IsInternal bool
	HasTopicID bool
	Partitions []metadataPartitionView
}

type metadataPartitionView struct {
	Partition   int32
	Err         code
	LeaderKnown bool // the leader is a broker listed in the same answer
	LeaderEpoch int32
	Replicas    int
	ISR         int
	Offline     int
}

func (d *differential) metadataRequest(t *testing.T, autoCreate bool, topics ...string) (g, f *kmsg.MetadataResponse) {
	t.Helper()
	return both[*kmsg.MetadataResponse](t, d.p, func(side) kmsg.Request {
		r := kmsg.NewPtrMetadataRequest()
		r.AllowAutoTopicCreation = autoCreate
		if topics == nil {
			r.Topics = nil // all topics
			return r
		}
		r.Topics = []kmsg.MetadataRequestTopic{}
		for _, name := range topics {
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(name)
			r.Topics = append(r.Topics, rt)
		}
		return r
	})
}

// metadataViews normalizes an answer and records the side's topic ids.
func (d *differential) metadataViews(s side, r *kmsg.MetadataResponse) []metadataView {
	brokers := make(map[int32]bool)
	for _, b := range r.Brokers {
		brokers[b.NodeID] = true
	}
	var out []metadataView
	for _, rt := range r.Topics {
		name := ""
		if rt.Topic != nil {
			name = *rt.Topic
		}
		hasID := rt.TopicID != [16]byte{}
		if hasID && rt.ErrorCode == 0 {
			d.p.ids[s][name] = rt.TopicID
		}
		tv := metadataView{Topic: name, Err: code(rt.ErrorCode), IsInternal: rt.IsInternal, HasTopicID: hasID}
		for _, rp := range rt.Partitions {
			tv.Partitions = append(tv.Partitions, metadataPartitionView{
				Partition: rp.Partition, Err: code(rp.ErrorCode), LeaderKnown: brokers[rp.Leader],
				LeaderEpoch: rp.LeaderEpoch, Replicas: len(rp.Replicas), ISR: len(rp.ISR), Offline: len(rp.OfflineReplicas),
			})
		}
		slices.SortFunc(tv.Partitions, func(a, b metadataPartitionView) int { return int(a.Partition - b.Partition) })
		out = append(out, tv)
	}
	slices.SortFunc(out, func(a, b metadataView) int { return strings.Compare(a.Topic, b.Topic) })
	return out
}

func (d *differential) metadata(t *testing.T) {
	v := d.p.version(3)
	t.Run("named topics", func(t *testing.T) {
		g, f := d.metadataRequest(t, false, topicMain, topicConfig, "missing", "validated", "zero-parts")
		gv, fv := d.metadataViews(onGregor, g), d.metadataViews(onKfake, f)
		same(t, "Metadata topics", gv, fv)
		if len(gv) != 5 || len(gv[0].Partitions) != 3 || gv[0].Partitions[0].Replicas != 1 || !gv[0].Partitions[0].LeaderKnown {
			t.Errorf("Metadata %s: %+v", topicMain, gv)
		}
		for _, tv := range gv[2:] { // missing, validated, zero-parts
			if tv.Err != code(kerr.UnknownTopicOrPartition.Code) {
				t.Errorf("Metadata %s: %v, want UNKNOWN_TOPIC_OR_PARTITION", tv.Topic, tv.Err)
			}
		}
		same(t, "Metadata broker count", len(g.Brokers), len(f.Brokers))
		if v >= 1 { // ControllerID from v1: the controller is a listed broker (normalized)
			same(t, "Metadata controller listed", controllerListed(g), controllerListed(f))
		}
		if v >= 2 {
			same(t, "Metadata cluster id present", g.ClusterID != nil, f.ClusterID != nil)
		}
	})
	t.Run("all topics", func(t *testing.T) {
		g, f := d.metadataRequest(t, false)
		names := func(r *kmsg.MetadataResponse) []string {
			var out []string
			for _, rt := range r.Topics {
				if rt.Topic != nil && !slices.Contains(d.kfakeOnly, *rt.Topic) {
					out = append(out, *rt.Topic)
				}
			}
			slices.Sort(out)
			return out
		}
		agree(t, "Metadata all topics", names(g), names(f), []string{topicMain, topicConfig, topicNone}[:2+boolInt(d.p.version(19) >= 4)])
	})
	if v >= 4 {
		t.Run("auto create requested but disabled", func(t *testing.T) {
			g, f := d.metadataRequest(t, true, "auto-off")
			same(t, "Metadata auto-off", d.metadataViews(onGregor, g), d.metadataViews(onKfake, f))
			if gv := d.metadataViews(onGregor, g); len(gv) != 1 || gv[0].Err != code(kerr.UnknownTopicOrPartition.Code) {
				t.Errorf("Metadata auto-off: %+v", gv)
			}
		})
	}
}

func controllerListed(r *kmsg.MetadataResponse) bool {
	for _, b := range r.Brokers {
		if b.NodeID == r.ControllerID {
			return true
		}
	}
	return false
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// describeClusterView is what Kafka fixes in DescribeCluster on a broker.
type describeClusterView struct {
	Err              code
	Brokers          int
	ControllerListed bool
	ClusterIDSet     bool
}

func (d *differential) describeCluster(t *testing.T) {
	g, f := both[*kmsg.DescribeClusterResponse](t, d.p, func(side) kmsg.Request { return kmsg.NewPtrDescribeClusterRequest() })
	view := func(r *kmsg.DescribeClusterResponse) describeClusterView {
		listed := false
		for _, b := range r.Brokers {
			listed = listed || b.NodeID == r.ControllerID
		}
		return describeClusterView{code(r.ErrorCode), len(r.Brokers), listed, r.ClusterID != ""}
	}
	agree(t, "DescribeCluster", view(g), view(f), describeClusterView{0, 1, true, true})
}
