package controller

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/metadata"
)

// AlterPartition handles a partition leader's request to change its ISR or
// leader recovery state (Kafka's ReplicationControlManager.alterPartition,
// versions 0-3): topics by name before version 2, by id from version 2; the
// new ISR as ids before version 3, as (id, broker epoch) from version 3.
// A broker epoch that is not the registered one fails the whole request
// with STALE_BROKER_EPOCH. Each partition is checked against the leader and
// partition epochs the leader last saw, and on success answers the state
// after the change (an ISR change bumps the partition epoch, not the leader
// epoch). An expansion that brings every target replica of a reassignment
// into the ISR also completes it (see reassign.go); if that removes the
// leader, the answer is NEW_LEADER_ELECTED (FENCED_LEADER_EPOCH before
// version 2).
func (c *Controller) AlterPartition(ctx context.Context, req *kmsg.AlterPartitionRequest) *kmsg.AlterPartitionResponse {
	if len(req.Topics) == 0 {
		// Kafka answers an empty request without consulting the controller.
		resp := kmsg.NewPtrAlterPartitionResponse()
		resp.Version = req.Version
		return resp
	}
	return write(c, ctx, false,
		func(img *metadata.Image) ([]metadata.Record, *kmsg.AlterPartitionResponse) {
			return c.alterPartition(img, req)
		},
		func(e *kerr.Error) *kmsg.AlterPartitionResponse {
			resp := kmsg.NewPtrAlterPartitionResponse()
			resp.Version, resp.ErrorCode = req.Version, e.Code
			return resp
		})
}

func (c *Controller) alterPartition(img *metadata.Image, req *kmsg.AlterPartitionRequest) ([]metadata.Record, *kmsg.AlterPartitionResponse) {
	resp := kmsg.NewPtrAlterPartitionResponse()
	resp.Version = req.Version
	if b := img.Brokers[req.BrokerID]; b == nil || b.Epoch != req.BrokerEpoch {
		c.logger.Info("AlterPartition refused: stale broker epoch", "broker", req.BrokerID, "epoch", req.BrokerEpoch)
		resp.ErrorCode = kerr.StaleBrokerEpoch.Code
		return nil, resp
	}
	var records []metadata.Record
	for i := range req.Topics {
		t := &req.Topics[i]
		rt := kmsg.NewAlterPartitionResponseTopic()
		rt.Topic, rt.TopidID = t.Topic, t.TopicID
		var topic *metadata.Topic
		if req.Version >= 2 {
			topic = img.Topics.TopicByID(t.TopicID)
		} else {
			topic = img.Topics.Topic(t.Topic)
		}
		for j := range t.Partitions {
			p := &t.Partitions[j]
			rp := kmsg.NewAlterPartitionResponseTopicPartition()
			rp.Partition = p.Partition
			switch {
			case topic == nil && req.Version >= 2:
				rp.ErrorCode = kerr.UnknownTopicID.Code
			case topic == nil:
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			default:
				rec, state, err := c.alterOnePartition(img, req, topic, p)
				if rec != nil {
					records = append(records, rec)
				}
				if err != nil {
					rp.ErrorCode = err.Code
					break
				}
				rp.LeaderID, rp.LeaderEpoch, rp.PartitionEpoch = state.Leader, state.LeaderEpoch, state.PartitionEpoch
				rp.ISR, rp.LeaderRecoveryState = state.ISR, state.LeaderRecoveryState
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return records, resp
}

// alterOnePartition validates one partition's change (Kafka's
// validateAlterPartitionData) and builds its record. It returns the record
// (nil if nothing changes or the change is refused), the partition's state
// after it, and the error to answer with. A change can come with an error:
// one that elects another leader is written but answered
// NEW_LEADER_ELECTED, so the requester refreshes its metadata.
func (c *Controller) alterOnePartition(img *metadata.Image, req *kmsg.AlterPartitionRequest, topic *metadata.Topic,
	p *kmsg.AlterPartitionRequestTopicPartition) (*metadata.PartitionChangeRecord, metadata.Partition, *kerr.Error) {
	cur := topic.Partition(p.Partition)
	refuse := func(err *kerr.Error, why string, args ...any) (*metadata.PartitionChangeRecord, metadata.Partition, *kerr.Error) {
		c.logger.Info("AlterPartition refused: "+why, append([]any{"broker", req.BrokerID, "topic", topic.Name, "partition", p.Partition}, args...)...)
		return nil, metadata.Partition{}, err
	}
	if cur == nil {
		return refuse(kerr.UnknownTopicOrPartition, "unknown partition")
	}
	newISR, brokerEpochs := p.NewISR, []int64(nil)
	if req.Version >= 3 {
		newISR = make([]int32, 0, len(p.NewEpochISR))
		for _, s := range p.NewEpochISR {
			newISR = append(newISR, s.BrokerID)
			brokerEpochs = append(brokerEpochs, s.BrokerEpoch)
		}
	}
	switch {
	// Epochs above ours mean a newer controller wrote them: this one is
	// probably no longer active.
	case p.LeaderEpoch > cur.LeaderEpoch:
		return refuse(kerr.NotController, "leader epoch ahead of the controller's", "epoch", p.LeaderEpoch, "current", cur.LeaderEpoch)
	case p.PartitionEpoch > cur.PartitionEpoch:
		return refuse(kerr.NotController, "partition epoch ahead of the controller's", "epoch", p.PartitionEpoch, "current", cur.PartitionEpoch)
	case p.LeaderEpoch < cur.LeaderEpoch:
		return refuse(kerr.FencedLeaderEpoch, "stale leader epoch", "epoch", p.LeaderEpoch, "current", cur.LeaderEpoch)
	case req.BrokerID != cur.Leader:
		// Kafka answers INVALID_REQUEST here: at the current leader epoch
		// only the leader can have sent the request.
		return refuse(kerr.InvalidRequest, "not the leader", "leader", cur.Leader)
	case p.PartitionEpoch < cur.PartitionEpoch:
		return refuse(kerr.InvalidUpdateVersion, "stale partition epoch", "epoch", p.PartitionEpoch, "current", cur.PartitionEpoch)
	case !validISR(cur.Replicas, newISR):
		return refuse(kerr.InvalidRequest, "invalid ISR", "isr", newISR)
	case !slices.Contains(newISR, cur.Leader):
		return refuse(kerr.InvalidRequest, "the ISR does not hold the leader", "isr", newISR)
	case p.LeaderRecoveryState == metadata.LeaderRecovering && len(newISR) > 1:
		return refuse(kerr.InvalidRequest, "an ISR of more than the leader while it recovers", "isr", newISR)
	case cur.LeaderRecoveryState == metadata.LeaderRecovered && p.LeaderRecoveryState == metadata.LeaderRecovering:
		return refuse(kerr.InvalidRequest, "leader recovery state cannot go from RECOVERED to RECOVERING")
	}
	for i, r := range newISR {
		epoch := int64(-1)
		if brokerEpochs != nil {
			epoch = brokerEpochs[i]
		}
		if why := ineligibleForISR(img, r, epoch); why != "" {
			if req.Version > 1 {
				return refuse(kerr.IneligibleReplica, "ineligible replica in the new ISR", "replica", r, "reason", why)
			}
			return refuse(kerr.OperationNotAttempted, "ineligible replica in the new ISR", "replica", r, "reason", why)
		}
	}

	b := c.newPartitionChange(img, topic, p.Partition, nil)
	if c.uncleanLeaderElectionEnabled(img, topic.Name) {
		b.election = electionUnclean
	}
	b.targetISR = slices.Clone(newISR)
	b.targetRecovery = p.LeaderRecoveryState
	rec := b.build()
	state := applyChange(cur, rec)
	if rec != nil && reassigning(cur) && !reassigning(&state) {
		c.logger.Info("AlterPartition completed the partition reassignment", "broker", req.BrokerID, "topic", topic.Name,
			"partition", p.Partition, "replicas", state.Replicas, "isr", state.ISR, "leader", state.Leader)
	}
	if rec != nil && rec.Leader != metadata.NoLeaderChange && rec.Leader != req.BrokerID {
		// The change completed a reassignment that removed the leader: the
		// record is written, and the old leader is told to refresh its
		// metadata (an error and a record at once, as Kafka does).
		if req.Version > 1 {
			return rec, state, kerr.NewLeaderElected
		}
		return rec, state, kerr.FencedLeaderEpoch
	}
	if rec != nil {
		c.logger.Info("AlterPartition", "broker", req.BrokerID, "topic", topic.Name, "partition", p.Partition,
			"isr", state.ISR, "partitionEpoch", state.PartitionEpoch)
	}
	return rec, state, nil
}

// validISR is Kafka's Replicas.validateIsr: no duplicates, no negative ids,
// every member a replica. An empty ISR passes here (the leader check refuses
// it).
func validISR(replicas, isr []int32) bool {
	seen := map[int32]bool{}
	for _, r := range isr {
		if r < 0 || seen[r] || !slices.Contains(replicas, r) {
			return false
		}
		seen[r] = true
	}
	return true
}

// ineligibleForISR is Kafka's ineligibleReplicasForIsr for one replica: why
// it may not join the ISR ("" if it may). brokerEpoch -1 skips the epoch
// check (requests before version 3).
func ineligibleForISR(img *metadata.Image, replica int32, brokerEpoch int64) string {
	b := img.Brokers[replica]
	switch {
	case b == nil:
		return "not registered"
	case b.InControlledShutdown:
		return "shutting down"
	case b.Fenced:
		return "fenced"
	case brokerEpoch != -1 && b.Epoch != brokerEpoch:
		return "broker epoch mismatch"
	}
	return ""
}
