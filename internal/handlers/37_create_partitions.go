package handlers

// CreatePartitions (key 37), v0-3. Adds partitions to existing topics
// through the controller (INVALID_PARTITIONS when the count does not grow,
// UNKNOWN_TOPIC_OR_PARTITION, validate_only).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/network"
)

var createPartitionsAPI = api{key: 37, min: 0, max: 3, handle: (*Handlers).createPartitions}

func (h *Handlers) createPartitions(ctx context.Context, req *network.Request) (kmsg.Response, error) {
	return h.d.Controller.CreatePartitions(ctx, req.Body.(*kmsg.CreatePartitionsRequest)), nil
}
