package handlers

// CreateTopics (key 19), v2-7 (v2 is Kafka 4.0's floor). The controller
// validates and commits the topics (see controller.CreateTopics for the
// error codes); this handler adds what v5+ answers carry for each created
// (or validated) topic: its partition count, replication factor and the
// resulting configs with their sources.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/config"
	"gregor/internal/network"
)

var createTopicsAPI = api{key: 19, min: 2, max: 7, handle: (*Handlers).createTopics}

func (h *Handlers) createTopics(ctx context.Context, req *network.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.CreateTopicsRequest)
	resp := h.d.Controller.CreateTopics(ctx, r)
	if r.Version < 5 {
		return resp, nil
	}
	requested := make(map[string]map[string]string, len(r.Topics))
	for _, t := range r.Topics {
		cfg := make(map[string]string, len(t.Configs))
		for _, c := range t.Configs {
			if c.Value != nil {
				cfg[c.Name] = *c.Value
			}
		}
		requested[t.Topic] = cfg
	}
	img := h.image()
	for i := range resp.Topics {
		t := &resp.Topics[i]
		// A forwarded request comes back with configs already; a
		// controller-only node has no broker configs to describe.
		if t.ErrorCode != 0 || len(t.Configs) > 0 || h.d.Replica == nil {
			continue
		}
		layers := h.d.Replica.Layers(img, t.Topic)
		layers.Topic = requested[t.Topic]
		for _, e := range config.DescribeTopic(layers, nil, false, false) {
			c := kmsg.NewCreateTopicsResponseTopicConfig()
			c.Name, c.Value, c.ReadOnly, c.Source, c.IsSensitive = e.Name, e.Value, e.ReadOnly, int8(e.Source), e.Sensitive
			t.Configs = append(t.Configs, c)
		}
	}
	return resp, nil
}
