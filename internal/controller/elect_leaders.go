package controller

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/metadata"
)

// Election types of ElectLeaders (Kafka's ElectionType).
const (
	electionTypePreferred int8 = 0
	electionTypeUnclean   int8 = 1
)

// ElectLeaders runs the elections an admin asks for (Kafka's
// ReplicationControlManager.electLeaders, versions 0-2; version 0 is always
// preferred). PREFERRED elects each partition's first replica when it is in
// the ISR and may lead: ELECTION_NOT_NEEDED if it already leads,
// PREFERRED_LEADER_NOT_AVAILABLE if it cannot. UNCLEAN elects a leader only
// for a partition without one, from the ISR if possible, else any replica
// that may lead (ELIGIBLE_LEADERS_NOT_AVAILABLE if none). Null topics means
// every partition, and then partitions needing no election are left out of
// the answer; an empty list answers nothing.
func (c *Controller) ElectLeaders(ctx context.Context, req *kmsg.ElectLeadersRequest) *kmsg.ElectLeadersResponse {
	if req.Topics != nil && len(req.Topics) == 0 {
		resp := kmsg.NewPtrElectLeadersResponse()
		resp.Version = req.Version
		return resp
	}
	fail := func(e apiError) *kmsg.ElectLeadersResponse {
		resp := kmsg.NewPtrElectLeadersResponse()
		resp.Version, resp.ErrorCode = req.Version, e.code()
		for _, t := range req.Topics {
			rt := kmsg.NewElectLeadersResponseTopic()
			rt.Topic = t.Topic
			for _, id := range t.Partitions {
				rp := kmsg.NewElectLeadersResponseTopicPartition()
				rp.Partition, rp.ErrorCode, rp.ErrorMessage = id, e.code(), e.message
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
	electionType := electionTypePreferred
	if req.Version >= 1 {
		electionType = req.ElectionType
	}
	if electionType != electionTypePreferred && electionType != electionTypeUnclean {
		return fail(errWith(kerr.InvalidRequest, "Unknown election type %d", electionType))
	}
	return write(c, ctx, false,
		func(img *metadata.Image) ([]metadata.Record, *kmsg.ElectLeadersResponse) {
			return c.electLeaders(img, req, electionType)
		},
		func(e *kerr.Error) *kmsg.ElectLeadersResponse { return fail(errBare(e)) })
}

func (c *Controller) electLeaders(img *metadata.Image, req *kmsg.ElectLeadersRequest, electionType int8) ([]metadata.Record, *kmsg.ElectLeadersResponse) {
	resp := kmsg.NewPtrElectLeadersResponse()
	resp.Version = req.Version
	var records []metadata.Record
	// A partition named twice is elected once and answered alike.
	done := map[topicPartitionName]apiError{}
	elect := func(topic string, partition int32) apiError {
		key := topicPartitionName{topic, partition}
		if e, ok := done[key]; ok {
			return e
		}
		rec, e := c.electLeader(img, topic, partition, electionType)
		if rec != nil {
			records = append(records, rec)
			if old := img.Topics.Topic(topic).Partition(partition); electionType == electionTypeUnclean && !slices.Contains(old.ISR, rec.Leader) {
				c.logger.Warn("unclean leader election: records the old ISR acknowledged may be lost",
					"topic", topic, "partition", partition, "leader", rec.Leader)
			}
		}
		done[key] = e
		return e
	}
	add := func(rt *kmsg.ElectLeadersResponseTopic, partition int32, e apiError) {
		rp := kmsg.NewElectLeadersResponseTopicPartition()
		rp.Partition, rp.ErrorCode, rp.ErrorMessage = partition, e.code(), e.message
		rt.Partitions = append(rt.Partitions, rp)
	}
	if req.Topics == nil {
		for _, name := range slices.Sorted(func(yield func(string) bool) {
			for n := range img.Topics.Names() {
				if !yield(n) {
					return
				}
			}
		}) {
			rt := kmsg.NewElectLeadersResponseTopic()
			rt.Topic = name
			t := img.Topics.Topic(name)
			for _, id := range slices.Sorted(func(yield func(int32) bool) {
				for id := range t.Partitions() {
					if !yield(id) {
						return
					}
				}
			}) {
				// Partitions that already have the wanted leader are left
				// out of an all-partitions answer.
				if e := elect(name, id); e.err != kerr.ElectionNotNeeded {
					add(&rt, id, e)
				}
			}
			resp.Topics = append(resp.Topics, rt)
		}
	} else {
		for _, t := range req.Topics {
			rt := kmsg.NewElectLeadersResponseTopic()
			rt.Topic = t.Topic
			for _, id := range t.Partitions {
				add(&rt, id, elect(t.Topic, id))
			}
			resp.Topics = append(resp.Topics, rt)
		}
	}
	c.logger.Info("ElectLeaders", "type", electionType, "elections", len(records))
	return records, resp
}

type topicPartitionName struct {
	topic     string
	partition int32
}

// electLeader is Kafka's ReplicationControlManager.electLeader for one
// partition: the record of the election (nil if none) and the answer.
func (c *Controller) electLeader(img *metadata.Image, topicName string, partition int32, electionType int8) (*metadata.PartitionChangeRecord, apiError) {
	topic := img.Topics.Topic(topicName)
	if topic == nil {
		return nil, errWith(kerr.UnknownTopicOrPartition, "No such topic as %s", topicName)
	}
	p := topic.Partition(partition)
	if p == nil {
		return nil, errWith(kerr.UnknownTopicOrPartition, "No such partition as %s-%d", topicName, partition)
	}
	hasPreferredLeader := len(p.Replicas) > 0 && p.Leader == p.Replicas[0]
	if (electionType == electionTypePreferred && hasPreferredLeader) ||
		(electionType == electionTypeUnclean && p.Leader != metadata.NoLeader) {
		return nil, errDefault(kerr.ElectionNotNeeded)
	}
	b := c.newPartitionChange(img, topic, partition, nil)
	b.election = electionPreferred
	if electionType == electionTypeUnclean {
		b.election = electionUnclean
	}
	rec := b.build()
	if rec == nil {
		if electionType == electionTypePreferred {
			return nil, errDefault(kerr.PreferredLeaderNotAvailable)
		}
		return nil, errDefault(kerr.EligibleLeadersNotAvailable)
	}
	if rec.Leader != metadata.NoLeaderChange && !slices.Contains(p.ISR, rec.Leader) {
		c.logger.Warn("unclean leader election: data may be lost", "topic", topicName, "partition", partition,
			"leader", rec.Leader, "isr", p.ISR)
	}
	return rec, apiError{}
}
