package server

// The admin steps of the differential test after the data is in:
// CreatePartitions, DescribeConfigs with IncrementalAlterConfigs, and
// DeleteTopics.

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// topicErrView is a per-topic (or per-resource) error answer.
type topicErrView struct {
	Topic string
	Err   code
}

func (d *differential) createPartitionsRequest(t *testing.T, validateOnly bool, topic string, count int32) (g, f []topicErrView) {
	t.Helper()
	gr, fr := both[*kmsg.CreatePartitionsResponse](t, d.p, func(side) kmsg.Request {
		r := kmsg.NewPtrCreatePartitionsRequest()
		r.TimeoutMillis, r.ValidateOnly = 10000, validateOnly
		rt := kmsg.NewCreatePartitionsRequestTopic()
		rt.Topic, rt.Count = topic, count
		r.Topics = append(r.Topics, rt)
		return r
	})
	view := func(r *kmsg.CreatePartitionsResponse) []topicErrView {
		var out []topicErrView
		for _, rt := range r.Topics {
			out = append(out, topicErrView{rt.Topic, code(rt.ErrorCode)})
		}
		return out
	}
	return view(gr), view(fr)
}

func (d *differential) partitionCounts(t *testing.T, topic string) (g, f int) {
	t.Helper()
	gr, fr := d.metadataRequest(t, false, topic)
	count := func(r *kmsg.MetadataResponse) int {
		if len(r.Topics) != 1 || r.Topics[0].ErrorCode != 0 {
			return -1
		}
		return len(r.Topics[0].Partitions)
	}
	return count(gr), count(fr)
}

func (d *differential) createPartitions(t *testing.T) {
	invalid := code(kerr.InvalidPartitions.Code)
	cases := []struct {
		name         string
		topic        string
		count        int32
		validateOnly bool
		want         code
		after        int // partitions afterwards
	}{
		{"grow", topicMain, 5, false, 0, 5},
		{"validate only", topicMain, 7, true, 0, 5},
		{"shrink", topicMain, 4, false, invalid, 5},

		{"unknown topic", "missing", 2, false, code(kerr.UnknownTopicOrPartition.Code), -1},
	}
	t.Run("same count", func(t *testing.T) {
		g, f := d.createPartitionsRequest(t, false, topicMain, 3)
		asKafka(t, "CreatePartitions to the same count", g, f, []topicErrView{{topicMain, invalid}},
			"kfake accepts a count equal to the current one as a no-op; Kafka's ReplicationControlManager.createPartitions "+
				"refuses it with INVALID_PARTITIONS (\"Topic already has 3 partition(s).\")")
	})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g, f := d.createPartitionsRequest(t, c.validateOnly, c.topic, c.count)
			agree(t, "CreatePartitions "+c.name, g, f, []topicErrView{{c.topic, c.want}})
			gn, fn := d.partitionCounts(t, c.topic)
			agree(t, "partitions after "+c.name, gn, fn, c.after)
		})
	}
}

// configView is a described config as far as Kafka fixes it for a topic
// override: defaults, their sources and the full list differ legitimately
// between servers (and kfake knows few configs), so only the key asked
// about is compared.
type configView struct {
	Err    code
	Found  bool
	Value  string
	Source kmsg.ConfigSource
}

func (d *differential) describeConfig(t *testing.T, topic, key string) (g, f configView) {
	t.Helper()
	v := d.p.version(32)
	gr, fr := both[*kmsg.DescribeConfigsResponse](t, d.p, func(side) kmsg.Request {
		r := kmsg.NewPtrDescribeConfigsRequest()
		rr := kmsg.NewDescribeConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, topic
		r.Resources = append(r.Resources, rr) // ConfigNames nil: every config
		return r
	})
	view := func(s side, r *kmsg.DescribeConfigsResponse) configView {
		if len(r.Resources) != 1 {
			t.Fatalf("%v DescribeConfigs of one resource answered %d", s, len(r.Resources))
		}
		rr := r.Resources[0]
		out := configView{Err: code(rr.ErrorCode)}
		for _, c := range rr.Configs {
			if c.Name != key {
				continue
			}
			out.Found = true
			if c.Value != nil {
				out.Value = *c.Value
			}
			if v >= 1 { // the source is answered from v1
				out.Source = c.Source
			}
			if c.IsSensitive {
				t.Errorf("%v %s marked sensitive", s, key)
			}
		}
		return out
	}
	return view(onGregor, gr), view(onKfake, fr)
}

func (d *differential) alterConfig(t *testing.T, validateOnly bool, topic string, op kmsg.IncrementalAlterConfigOp, key string, value *string) (g, f []topicErrView) {
	t.Helper()
	gr, fr := both[*kmsg.IncrementalAlterConfigsResponse](t, d.p, func(side) kmsg.Request {
		r := kmsg.NewPtrIncrementalAlterConfigsRequest()
		r.ValidateOnly = validateOnly
		rr := kmsg.NewIncrementalAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, topic
		rc := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		rc.Name, rc.Op, rc.Value = key, op, value
		rr.Configs = append(rr.Configs, rc)
		r.Resources = append(r.Resources, rr)
		return r
	})
	view := func(r *kmsg.IncrementalAlterConfigsResponse) []topicErrView {
		var out []topicErrView
		for _, rr := range r.Resources {
			out = append(out, topicErrView{rr.ResourceName, code(rr.ErrorCode)})
		}
		return out
	}
	return view(gr), view(fr)
}

func (d *differential) configs(t *testing.T) {
	dynamic := kmsg.ConfigSourceDynamicTopicConfig
	if d.p.version(32) < 1 {
		dynamic = 0
	}
	t.Run("describe override", func(t *testing.T) {
		g, f := d.describeConfig(t, topicConfig, "retention.ms")
		agree(t, "DescribeConfigs retention.ms", g, f, configView{0, true, "3600000", dynamic})
	})
	t.Run("describe unknown topic", func(t *testing.T) {
		g, f := d.describeConfig(t, "missing", "retention.ms")
		agree(t, "DescribeConfigs unknown topic", g, f, configView{Err: code(kerr.UnknownTopicOrPartition.Code)})
	})
	set, del := kmsg.IncrementalAlterConfigOpSet, kmsg.IncrementalAlterConfigOpDelete
	t.Run("set", func(t *testing.T) {
		g, f := d.alterConfig(t, false, topicConfig, set, "cleanup.policy", kmsg.StringPtr("compact"))
		agree(t, "IncrementalAlterConfigs set", g, f, []topicErrView{{topicConfig, 0}})
		gc, fc := d.describeConfig(t, topicConfig, "cleanup.policy")
		agree(t, "cleanup.policy after set", gc, fc, configView{0, true, "compact", dynamic})
	})
	t.Run("validate only", func(t *testing.T) {
		g, f := d.alterConfig(t, true, topicConfig, set, "retention.ms", kmsg.StringPtr("1000"))
		agree(t, "IncrementalAlterConfigs validate only", g, f, []topicErrView{{topicConfig, 0}})
		gc, fc := d.describeConfig(t, topicConfig, "retention.ms")
		agree(t, "retention.ms after validate only", gc, fc, configView{0, true, "3600000", dynamic})
	})
	t.Run("delete", func(t *testing.T) {
		g, f := d.alterConfig(t, false, topicConfig, del, "retention.ms", nil)
		agree(t, "IncrementalAlterConfigs delete", g, f, []topicErrView{{topicConfig, 0}})
		// Back to a default: the value and source of defaults differ
		// legitimately, only that the override is gone is compared.
		gc, fc := d.describeConfig(t, topicConfig, "retention.ms")
		overridden := func(c configView) bool { return c.Found && c.Value == "3600000" }
		agree(t, "retention.ms overridden after delete", overridden(gc), overridden(fc), false)
	})
	t.Run("unknown topic", func(t *testing.T) {
		g, f := d.alterConfig(t, false, "missing", set, "retention.ms", kmsg.StringPtr("1000"))
		agree(t, "IncrementalAlterConfigs unknown topic", g, f, []topicErrView{{"missing", code(kerr.UnknownTopicOrPartition.Code)}})
	})
	t.Run("invalid value", func(t *testing.T) {
		g, f := d.alterConfig(t, false, topicConfig, set, "retention.ms", kmsg.StringPtr("soon"))
		asKafka(t, "IncrementalAlterConfigs invalid value", g, f, []topicErrView{{topicConfig, code(kerr.InvalidConfig.Code)}},
			"kfake does not parse config values; Kafka's ConfigDef parse fails the resource with INVALID_CONFIG")
	})
}

func (d *differential) deleteTopicsRequest(t *testing.T, topic string) (g, f []topicErrView) {
	t.Helper()
	gr, fr := both[*kmsg.DeleteTopicsResponse](t, d.p, func(side) kmsg.Request {
		r := kmsg.NewPtrDeleteTopicsRequest()
		r.TimeoutMillis = 10000
		r.TopicNames = []string{topic} // up to v5
		rt := kmsg.NewDeleteTopicsRequestTopic()
		rt.Topic = kmsg.StringPtr(topic) // v6+
		r.Topics = append(r.Topics, rt)
		return r
	})
	view := func(r *kmsg.DeleteTopicsResponse) []topicErrView {
		var out []topicErrView
		for _, rt := range r.Topics {
			name := ""
			if rt.Topic != nil {
				name = *rt.Topic
			}
			out = append(out, topicErrView{name, code(rt.ErrorCode)})
		}
		return out
	}
	return view(gr), view(fr)
}

func (d *differential) deleteTopics(t *testing.T) {
	unknown := code(kerr.UnknownTopicOrPartition.Code)
	t.Run("delete", func(t *testing.T) {
		g, f := d.deleteTopicsRequest(t, topicMain)
		agree(t, "DeleteTopics", g, f, []topicErrView{{topicMain, 0}})
		// Kafka deletes asynchronously: poll until both forget it.
		deadline := time.Now().Add(10 * time.Second)
		for {
			gn, fn := d.partitionCounts(t, topicMain)
			if gn == -1 && fn == -1 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("deleted topic still described: gregor %d partitions, kfake %d", gn, fn)
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
	t.Run("delete again", func(t *testing.T) {
		g, f := d.deleteTopicsRequest(t, topicMain)
		agree(t, "DeleteTopics again", g, f, []topicErrView{{topicMain, unknown}})
	})
	t.Run("produce to deleted", func(t *testing.T) {
		batches, _ := d.batches(t)
		g, f := d.produceRequest(t, -1, producePart{topicMain, 0, batches[0]})
		agree(t, "Produce to deleted", errorsOnly(g), errorsOnly(f), []produceView{{topicMain, 0, unknown, 0, 0, 0}})
		produceFailed(t, g)
	})
	t.Run("fetch deleted", func(t *testing.T) {
		// By name before v13; from v13 by the topic's old id.
		want := unknown
		if d.p.version(1) >= 13 {
			want = code(kerr.UnknownTopicID.Code)
		}
		g, f := d.fetchRequest(t, 1<<20, fetchPart{topicMain, 0, 0, 1 << 20})
		agree(t, "Fetch deleted", offsetsOnly(g), offsetsOnly(f), []fetchPartitionView{{Topic: topicMain, Err: want}})
		fetchFailed(t, g)
	})
	t.Run("list offsets of deleted", func(t *testing.T) {
		g, f := d.listOffsets1(t, topicMain, 0, -1)
		agree(t, "ListOffsets deleted", g, f, listOffsetsView{unknown, -1, -1, -1})
	})
}
