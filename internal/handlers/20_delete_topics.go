package handlers

// DeleteTopics (key 20), v1-6 (v1 is Kafka 4.0's floor; v6 names topics by
// name or id). The controller commits RemoveTopicRecords; each broker then
// renames the partition directories to *-delete and removes them in the
// background (replica.Manager.Publish, log.Manager.Delete).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/network"
)

var deleteTopicsAPI = api{key: 20, min: 1, max: 6, handle: (*Handlers).deleteTopics}

func (h *Handlers) deleteTopics(ctx context.Context, req *network.Request) (kmsg.Response, error) {
	return h.d.Controller.DeleteTopics(ctx, req.Body.(*kmsg.DeleteTopicsRequest)), nil
}
