package handlers

// DescribeConfigs (key 32), v1-4 (v1 is Kafka 4.0's floor). Topic, broker
// and group resources (a group's configs: set ones as GROUP_CONFIG, the
// others with the broker default they take; the group need not exist). Every entry carries its source (topic override, dynamic
// per-broker, dynamic cluster default, static, default), synonyms when asked
// (v1+), and its type and documentation when asked (v3+). A broker resource
// names this node's id, or "" for the dynamic cluster defaults (only those
// entries, as Kafka); another broker's id is INVALID_REQUEST, since each
// broker describes itself. Unknown topic: UNKNOWN_TOPIC_OR_PARTITION.
// Broker logger resources are not served: INVALID_REQUEST.
//
// Each resource needs DESCRIBE_CONFIGS: on the topic for a topic
// (TOPIC_AUTHORIZATION_FAILED), on the group for a group
// (GROUP_AUTHORIZATION_FAILED), on the cluster for a broker or broker
// logger (CLUSTER_AUTHORIZATION_FAILED), checked before anything else, as
// Kafka. Brokers do not forward it, so a controller listener checks the
// client's own permission.

import (
	"context"
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/config"
	"gregor/internal/metadata"
	"gregor/internal/network"
)

var describeConfigsAPI = api{key: 32, min: 1, max: 4, handle: (*Handlers).describeConfigs}

func (h *Handlers) describeConfigs(ctx context.Context, req *network.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.DescribeConfigsRequest)
	resp := r.ResponseKind().(*kmsg.DescribeConfigsResponse)
	img := h.image()
	docs := r.Version >= 3 && r.IncludeDocumentation
	for _, res := range r.Resources {
		rr := kmsg.NewDescribeConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = res.ResourceType, res.ResourceName
		if code := h.configResourceDenied(ctx, req, kmsg.ACLOperationDescribeConfigs, res.ResourceType, res.ResourceName); code != 0 {
			rr.ErrorCode, rr.ErrorMessage = code, errorDescription(code)
			resp.Resources = append(resp.Resources, rr)
			continue
		}
		var entries []config.Entry
		var err error
		switch res.ResourceType {
		case kmsg.ConfigResourceTypeTopic:
			if img.Topics.Topic(res.ResourceName) == nil {
				err = fmt.Errorf("%w: topic %q does not exist", kerr.UnknownTopicOrPartition, res.ResourceName)
				break
			}
			entries = config.DescribeTopic(h.configLayers(img, res.ResourceName), res.ConfigNames, r.IncludeSynonyms, docs)
		case kmsg.ConfigResourceTypeBroker:
			layers := h.configLayers(img, "")
			switch res.ResourceName {
			case "":
				entries = config.DescribeBrokerDefault(layers, res.ConfigNames, r.IncludeSynonyms, docs)
			case strconv.Itoa(int(h.d.NodeID)):
				entries = config.DescribeBroker(layers, res.ConfigNames, r.IncludeSynonyms, docs)
			default:
				err = fmt.Errorf("%w: unexpected broker id, expected %d but received %s", kerr.InvalidRequest, h.d.NodeID, res.ResourceName)
			}
		case kmsg.ConfigResourceTypeGroupConfig:
			if res.ResourceName == "" {
				err = fmt.Errorf("%w: group name must not be empty", kerr.InvalidRequest)
				break
			}
			dynamic := img.Configs(metadata.ConfigResource{Type: metadata.ConfigResourceGroup, Name: res.ResourceName})
			entries = h.d.Broker.DescribeGroup(dynamic, res.ConfigNames, r.IncludeSynonyms, docs)
		default:
			err = fmt.Errorf("%w: resource type %d is not supported", kerr.InvalidRequest, res.ResourceType)
		}
		if err != nil {
			rr.ErrorCode, rr.ErrorMessage = errorCode(err), errorMessage(err)
			resp.Resources = append(resp.Resources, rr)
			continue
		}
		for _, e := range entries {
			c := kmsg.NewDescribeConfigsResponseResourceConfig()
			c.Name, c.Value, c.ReadOnly, c.Source, c.IsSensitive = e.Name, e.Value, e.ReadOnly, kmsg.ConfigSource(e.Source), e.Sensitive
			if e.Sensitive {
				c.Value = nil
			}
			for _, s := range e.Synonyms {
				cs := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
				cs.Name, cs.Value, cs.Source = s.Name, s.Value, kmsg.ConfigSource(s.Source)
				c.ConfigSynonyms = append(c.ConfigSynonyms, cs)
			}
			if r.Version >= 3 {
				c.ConfigType = kmsg.ConfigType(int8(e.Type))
				if docs {
					doc := e.Doc
					c.Documentation = &doc
				}
			}
			rr.Configs = append(rr.Configs, c)
		}
		resp.Resources = append(resp.Resources, rr)
	}
	return resp, nil
}

// configLayers are a topic's configuration layers in img, most specific
// first: the replica manager's on a broker listener; on a controller
// listener, which has none, the same layers over this node's own
// configuration.
func (h *Handlers) configLayers(img *metadata.Image, topic string) config.Layers {
	if h.d.Replica != nil {
		return h.d.Replica.Layers(img, topic)
	}
	l := config.Layers{
		Topic:          img.TopicConfigs(topic),
		DynamicBroker:  img.BrokerConfigs(h.d.NodeID),
		DynamicDefault: img.ClusterConfigs(),
	}
	if h.d.Broker != nil {
		l.Static = h.d.Broker.Props
	}
	return l
}
