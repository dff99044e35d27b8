package controller

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/metadata"
)

// UnregisterBroker removes a broker's registration (UnregisterBroker, key 64,
// version 0; kafka-cluster unregister), as Kafka's
// ReplicationControlManager.unregisterBroker does: the broker leaves every
// ISR and leadership (as when it is fenced), then an UnregisterBrokerRecord
// with its registration's epoch removes it, all in one atomic batch.
// BROKER_ID_NOT_REGISTERED when no broker has the id. A broker that is still
// running is not stopped: its next heartbeat is refused (it is no longer
// registered) and it registers again, which is why operators unregister
// brokers that are gone for good.
func (c *Controller) UnregisterBroker(ctx context.Context, req *kmsg.UnregisterBrokerRequest) *kmsg.UnregisterBrokerResponse {
	newResp := func(e apiError) *kmsg.UnregisterBrokerResponse {
		resp := kmsg.NewPtrUnregisterBrokerResponse()
		resp.Version = req.Version
		resp.ErrorCode, resp.ErrorMessage = e.code(), e.message
		return resp
	}
	return write(c, ctx, false,
		func(img *metadata.Image) ([]metadata.Record, *kmsg.UnregisterBrokerResponse) {
			records, e := c.unregisterBrokerRecords(img, req.BrokerID)
			if e.err != nil {
				return nil, newResp(e)
			}
			if s := c.sessions[req.BrokerID]; s != nil {
				// Kafka's replay removes the broker from the heartbeat
				// manager; a heartbeat from it is refused from now on.
				s.unwatch()
				delete(c.sessions, req.BrokerID)
			}
			c.logger.Info("unregistering broker", "broker", req.BrokerID, "records", len(records))
			return records, newResp(apiError{})
		},
		func(e *kerr.Error) *kmsg.UnregisterBrokerResponse { return newResp(errDefault(e)) })
}

// unregisterBrokerRecords is the records that unregister a broker: its
// leaderships and ISR memberships end first (Kafka's handleBrokerUnregistered).
func (c *Controller) unregisterBrokerRecords(img *metadata.Image, id int32) ([]metadata.Record, apiError) {
	b := img.Brokers[id]
	if b == nil {
		return nil, errWith(kerr.BrokerIDNotRegistered, "Broker ID %d is not currently registered", id)
	}
	// The partitions whose ISR or ELR it is in, as Kafka walks both.
	records := c.leaderAndIsrUpdates(img, id, metadata.NoLeader, partitionsWhere(img, func(p *metadata.Partition) bool {
		return slices.Contains(p.ISR, id) || slices.Contains(p.EligibleLeaderReplicas, id)
	}))
	return append(records, &metadata.UnregisterBrokerRecord{BrokerID: id, BrokerEpoch: b.Epoch}), apiError{}
}
