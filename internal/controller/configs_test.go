package controller

import (
	"context"
	"maps"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func incOp(op kmsg.IncrementalAlterConfigOp, name string, value *string) kmsg.IncrementalAlterConfigsRequestResourceConfig {
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Op, c.Value = name, op, value
	return c
}

func incSet(name, value string) kmsg.IncrementalAlterConfigsRequestResourceConfig {
	return incOp(kmsg.IncrementalAlterConfigOpSet, name, kmsg.StringPtr(value))
}

func incResource(typ kmsg.ConfigResourceType, name string, configs ...kmsg.IncrementalAlterConfigsRequestResourceConfig) kmsg.IncrementalAlterConfigsRequestResource {
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName, r.Configs = typ, name, configs
	return r
}

func (n *node) incAlter(validateOnly bool, resources ...kmsg.IncrementalAlterConfigsRequestResource) *kmsg.IncrementalAlterConfigsResponse {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.Resources, req.ValidateOnly = resources, validateOnly
	return n.c.IncrementalAlterConfigs(context.Background(), req)
}

func TestIncrementalAlterConfigs(t *testing.T) {
	n := startNode(t, metadataDir(t), testConfig())
	n.mustCreate(newTopic("t", 1, 1, "retention.ms", "100", "segment.ms", "5"))
	topic := kmsg.ConfigResourceTypeTopic
	broker := kmsg.ConfigResourceTypeBroker

	resp := n.incAlter(false,
		incResource(topic, "t",
			incSet("retention.ms", "200"),
			incOp(kmsg.IncrementalAlterConfigOpDelete, "segment.ms", nil),
			incOp(kmsg.IncrementalAlterConfigOpAppend, "cleanup.policy", kmsg.StringPtr("compact")),
			incOp(kmsg.IncrementalAlterConfigOpAppend, "leader.replication.throttled.replicas", kmsg.StringPtr("0:1,1:1")),
		),
		incResource(broker, "", incSet("log.retention.ms", "7")),
		incResource(broker, "1", incSet("log.cleaner.threads", "2")),
	)
	for _, r := range resp.Resources {
		wantErr(t, r.ResourceName, r.ErrorCode, r.ErrorMessage, nil, "<nil>")
	}
	img := n.c.Image()
	want := map[string]string{"retention.ms": "200", "cleanup.policy": "delete,compact", "leader.replication.throttled.replicas": "0:1,1:1"}
	if got := img.TopicConfigs("t"); !maps.Equal(got, want) {
		t.Fatalf("topic configs = %v, want %v", got, want)
	}
	if img.ClusterConfigs()["log.retention.ms"] != "7" || img.BrokerConfigs(1)["log.cleaner.threads"] != "2" {
		t.Fatalf("broker configs = %v", maps.Collect(img.AllConfigs()))
	}

	resp = n.incAlter(false, incResource(topic, "t",
		incOp(kmsg.IncrementalAlterConfigOpSubtract, "cleanup.policy", kmsg.StringPtr("delete")),
		incOp(kmsg.IncrementalAlterConfigOpSubtract, "leader.replication.throttled.replicas", kmsg.StringPtr("0:1"))))
	wantErr(t, "subtract", resp.Resources[0].ErrorCode, resp.Resources[0].ErrorMessage, nil, "<nil>")
	if got := n.c.Image().TopicConfigs("t"); got["cleanup.policy"] != "compact" || got["leader.replication.throttled.replicas"] != "1:1" {
		t.Fatalf("after subtract: %v", got)
	}

	// An unchanged topic value writes nothing; a broker value always does
	// (KAFKA-14136: brokers reload).
	before := n.q.HighWatermark()
	n.incAlter(false, incResource(topic, "t", incSet("retention.ms", "200")))
	if n.q.HighWatermark() != before {
		t.Fatal("unchanged topic config wrote a record")
	}
	n.incAlter(false, incResource(broker, "", incSet("log.retention.ms", "7")))
	if n.q.HighWatermark() != before+1 {
		t.Fatal("unchanged broker config wrote no record")
	}

	cases := []struct {
		name     string
		res      kmsg.IncrementalAlterConfigsRequestResource
		wantCode *kerr.Error
		wantMsg  string
	}{
		{"unknown topic", incResource(topic, "nope", incSet("retention.ms", "1")), kerr.UnknownTopicOrPartition, "The topic 'nope' does not exist."},
		{"bad value", incResource(topic, "t", incSet("retention.ms", "abc")), kerr.InvalidConfig, "Invalid value abc for configuration retention.ms: Not a number of type LONG"},
		{"unknown key", incResource(topic, "t", incSet("no.such.config", "1")), kerr.InvalidConfig, "Unknown topic config name: no.such.config"},
		{"append to a non-list", incResource(topic, "t", incOp(kmsg.IncrementalAlterConfigOpAppend, "retention.ms", kmsg.StringPtr("1"))),
			kerr.InvalidConfig, "Can't APPEND to key retention.ms because its type is not LIST."},
		{"subtract from a non-list broker config", incResource(broker, "", incOp(kmsg.IncrementalAlterConfigOpSubtract, "log.retention.ms", kmsg.StringPtr("1"))),
			kerr.InvalidConfig, "Config value subtract is not allowed for config key: log.retention.ms"},
		{"null set", incResource(topic, "t", incOp(kmsg.IncrementalAlterConfigOpSet, "a", nil), incOp(kmsg.IncrementalAlterConfigOpAppend, "b", nil)),
			kerr.InvalidRequest, "Null value not supported for : a, b"},
		{"duplicate keys", incResource(topic, "t", incSet("retention.ms", "1"), incSet("retention.ms", "2")), kerr.InvalidRequest, "Error due to duplicate config keys"},
		{"unknown op", incResource(topic, "t", incOp(9, "retention.ms", kmsg.StringPtr("1"))), kerr.InvalidRequest, "Unknown operations type 9"},
		{"default topic", incResource(topic, "", incSet("retention.ms", "1")), kerr.InvalidRequest, "Default topic resources are not allowed."},
		{"invalid topic name", incResource(topic, "a b", incSet("retention.ms", "1")), kerr.InvalidTopicException,
			"Topic name is invalid: 'a b' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'"},
		{"broker name not a number", incResource(broker, "x", incSet("log.cleaner.threads", "2")), kerr.InvalidRequest, "Node id must be an integer, but it is: x"},
		{"broker validator", incResource(broker, "1", incSet("log.cleaner.threads", "0")), kerr.InvalidRequest, "Log cleaner threads cannot be less than 1"},
		{"broker logger", incResource(kmsg.ConfigResourceTypeBrokerLogger, "1", incSet("kafka", "DEBUG")), kerr.InvalidRequest, "Unknown resource type 8"},
	}
	before = n.q.HighWatermark()
	for _, c := range cases {
		resp := n.incAlter(false, c.res)
		wantErr(t, c.name, resp.Resources[0].ErrorCode, resp.Resources[0].ErrorMessage, c.wantCode, c.wantMsg)
	}
	if n.q.HighWatermark() != before {
		t.Fatal("a failed alteration wrote records")
	}

	// A resource named twice fails both times; the others in the request go on.
	resp = n.incAlter(false, incResource(topic, "t", incSet("retention.ms", "1")), incResource(broker, "", incSet("log.retention.ms", "9")),
		incResource(topic, "t", incSet("retention.ms", "2")))
	wantErr(t, "dup 1", resp.Resources[0].ErrorCode, resp.Resources[0].ErrorMessage, kerr.InvalidRequest, "Each resource must appear at most once.")
	wantErr(t, "other", resp.Resources[1].ErrorCode, resp.Resources[1].ErrorMessage, nil, "<nil>")
	wantErr(t, "dup 2", resp.Resources[2].ErrorCode, resp.Resources[2].ErrorMessage, kerr.InvalidRequest, "Each resource must appear at most once.")
	if n.c.Image().ClusterConfigs()["log.retention.ms"] != "9" || n.c.Image().TopicConfigs("t")["retention.ms"] != "200" {
		t.Fatalf("configs = %v", maps.Collect(n.c.Image().AllConfigs()))
	}

	// Another node's configs: its broker listener checked the id and
	// forwarded them here, so the controller does not compare the id with
	// its own; it only wants a registered broker.
	resp = n.incAlter(false, incResource(broker, "2", incSet("leader.replication.throttled.rate", "1000")))
	wantErr(t, "other broker", resp.Resources[0].ErrorCode, resp.Resources[0].ErrorMessage, kerr.BrokerIDNotRegistered, "No node with id 2 found.")

	// validate_only answers without writing.
	before = n.q.HighWatermark()
	resp = n.incAlter(true, incResource(topic, "t", incSet("retention.ms", "5")))
	wantErr(t, "validate only", resp.Resources[0].ErrorCode, resp.Resources[0].ErrorMessage, nil, "<nil>")
	if n.q.HighWatermark() != before || n.c.Image().TopicConfigs("t")["retention.ms"] != "200" {
		t.Fatal("validate-only wrote records")
	}
}

func alterResource(typ kmsg.ConfigResourceType, name string, kv ...string) kmsg.AlterConfigsRequestResource {
	r := kmsg.NewAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = typ, name
	for i := 0; i+1 < len(kv); i += 2 {
		c := kmsg.NewAlterConfigsRequestResourceConfig()
		c.Name, c.Value = kv[i], kmsg.StringPtr(kv[i+1])
		r.Configs = append(r.Configs, c)
	}
	return r
}

func TestAlterConfigsReplacesTheSet(t *testing.T) {
	n := startNode(t, metadataDir(t), testConfig())
	n.mustCreate(newTopic("t", 1, 1, "retention.ms", "100", "segment.ms", "5"))
	req := kmsg.NewPtrAlterConfigsRequest()
	req.Resources = []kmsg.AlterConfigsRequestResource{
		alterResource(kmsg.ConfigResourceTypeTopic, "t", "retention.ms", "300", "cleanup.policy", "compact"),
		// A new cluster has eligible leader replicas on, which keeps the
		// cluster-level min.insync.replicas: the legacy set names it.
		alterResource(kmsg.ConfigResourceTypeBroker, "", "log.retention.ms", "1", "min.insync.replicas", "1"),
	}
	resp := n.c.AlterConfigs(context.Background(), req)
	for _, r := range resp.Resources {
		wantErr(t, r.ResourceName, r.ErrorCode, r.ErrorMessage, nil, "<nil>")
	}
	want := map[string]string{"retention.ms": "300", "cleanup.policy": "compact"}
	if got := n.c.Image().TopicConfigs("t"); !maps.Equal(got, want) {
		t.Fatalf("topic configs = %v, want %v (segment.ms deleted)", got, want)
	}

	nullValue := alterResource(kmsg.ConfigResourceTypeTopic, "t")
	nullValue.Configs = []kmsg.AlterConfigsRequestResourceConfig{{Name: "x"}}
	cases := []struct {
		name     string
		res      kmsg.AlterConfigsRequestResource
		wantCode *kerr.Error
		wantMsg  string
	}{
		{"unknown topic", alterResource(kmsg.ConfigResourceTypeTopic, "nope", "retention.ms", "1"), kerr.UnknownTopicOrPartition, "The topic 'nope' does not exist."},
		{"bad value", alterResource(kmsg.ConfigResourceTypeTopic, "t", "retention.ms", "abc"), kerr.InvalidConfig, "Invalid value abc for configuration retention.ms: Not a number of type LONG"},
		{"null value", nullValue, kerr.InvalidRequest, "Null value not supported for : x"},
		{"duplicate keys", alterResource(kmsg.ConfigResourceTypeTopic, "t", "a", "1", "a", "2"), kerr.InvalidRequest, "Error due to duplicate config keys"},
		{"cluster min ISR dropped", alterResource(kmsg.ConfigResourceTypeBroker, "", "log.retention.ms", "1"), kerr.InvalidConfig,
			"Cluster-level min.insync.replicas cannot be removed while ELR is enabled."},
	}
	for _, c := range cases {
		req.Resources = []kmsg.AlterConfigsRequestResource{c.res}
		resp := n.c.AlterConfigs(context.Background(), req)
		wantErr(t, c.name, resp.Resources[0].ErrorCode, resp.Resources[0].ErrorMessage, c.wantCode, c.wantMsg)
	}

	// An empty set clears the resource; validate_only leaves it alone.
	req.Resources, req.ValidateOnly = []kmsg.AlterConfigsRequestResource{alterResource(kmsg.ConfigResourceTypeTopic, "t")}, true
	n.c.AlterConfigs(context.Background(), req)
	if len(n.c.Image().TopicConfigs("t")) != 2 {
		t.Fatal("validate-only cleared configs")
	}
	req.ValidateOnly = false
	resp = n.c.AlterConfigs(context.Background(), req)
	wantErr(t, "clear", resp.Resources[0].ErrorCode, resp.Resources[0].ErrorMessage, nil, "<nil>")
	if n.c.Image().TopicConfigs("t") != nil {
		t.Fatalf("configs after clearing = %v", n.c.Image().TopicConfigs("t"))
	}
}
