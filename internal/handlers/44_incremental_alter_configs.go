package handlers

// IncrementalAlterConfigs (key 44), v0-1. SET, DELETE, APPEND and SUBTRACT
// of single topic or broker configs through the controller, validated and
// persisted as ConfigRecords.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/network"
)

var incrementalAlterConfigsAPI = api{key: 44, min: 0, max: 1, handle: (*Handlers).incrementalAlterConfigs}

func (h *Handlers) incrementalAlterConfigs(ctx context.Context, req *network.Request) (kmsg.Response, error) {
	return h.d.Controller.IncrementalAlterConfigs(ctx, req.Body.(*kmsg.IncrementalAlterConfigsRequest)), nil
}
