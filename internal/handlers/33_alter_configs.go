package handlers

// AlterConfigs (key 33), v0-2. Replaces the whole set of dynamic configs of
// a topic or a broker (this node's id, or "" for the cluster default)
// through the controller, which validates and persists them as
// ConfigRecords.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/network"
)

var alterConfigsAPI = api{key: 33, min: 0, max: 2, handle: (*Handlers).alterConfigs}

func (h *Handlers) alterConfigs(ctx context.Context, req *network.Request) (kmsg.Response, error) {
	return h.d.Controller.AlterConfigs(ctx, req.Body.(*kmsg.AlterConfigsRequest)), nil
}
