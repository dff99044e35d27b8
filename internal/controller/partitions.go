package controller

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/metadata"
)

// CreatePartitions adds partitions to existing topics (Kafka's
// ControllerApis.createPartitions and ReplicationControlManager.
// createPartitions): a topic named twice gets INVALID_REQUEST and is answered
// first, then each topic in request order.
func (c *Controller) CreatePartitions(ctx context.Context, req *kmsg.CreatePartitionsRequest) *kmsg.CreatePartitionsResponse {
	return write(c, ctx, req.ValidateOnly,
		func(img *metadata.Image) ([]metadata.Record, *kmsg.CreatePartitionsResponse) {
			return c.createPartitions(img, req)
		},
		func(e *kerr.Error) *kmsg.CreatePartitionsResponse {
			resp := kmsg.NewPtrCreatePartitionsResponse()
			resp.Version = req.Version
			for _, t := range req.Topics {
				rt := kmsg.NewCreatePartitionsResponseTopic()
				rt.Topic, rt.ErrorCode = t.Topic, e.Code
				resp.Topics = append(resp.Topics, rt)
			}
			return resp
		})
}

func (c *Controller) createPartitions(img *metadata.Image, req *kmsg.CreatePartitionsRequest) ([]metadata.Record, *kmsg.CreatePartitionsResponse) {
	resp := kmsg.NewPtrCreatePartitionsResponse()
	resp.Version = req.Version
	add := func(name string, e apiError) {
		rt := kmsg.NewCreatePartitionsResponseTopic()
		rt.Topic, rt.ErrorCode, rt.ErrorMessage = name, e.code(), e.message
		resp.Topics = append(resp.Topics, rt)
	}
	count := map[string]int{}
	for _, t := range req.Topics {
		count[t.Topic]++
		if count[t.Topic] == 2 {
			add(t.Topic, errWith(kerr.InvalidRequest, "Duplicate topic name."))
		}
	}
	// The partitions to add are counted before any is placed: placing first
	// would let one request for 2^31-1 partitions allocate them all before
	// the record limit refused it. Over the limit, every topic fails as
	// Kafka's request fails when its record list passes
	// MAX_RECORDS_PER_USER_OP, validate_only too.
	var additional int64
	for _, t := range req.Topics {
		if topic := img.Topics.Topic(t.Topic); topic != nil && count[t.Topic] == 1 {
			additional += max(int64(t.Count)-int64(topic.NumPartitions()), 0)
		}
	}
	if additional > maxPartitionsPerBatch {
		resp.Topics = nil
		for _, t := range req.Topics {
			add(t.Topic, errWith(kerr.PolicyViolation, "%s", excessiveBatchMessage))
		}
		return nil, resp
	}
	var records []metadata.Record
	for i := range req.Topics {
		t := &req.Topics[i]
		if count[t.Topic] > 1 {
			continue
		}
		recs, e := c.createTopicPartitions(img, t)
		if e.err == nil {
			records = append(records, recs...)
		}
		add(t.Topic, e)
	}
	c.logger.Info("CreatePartitions", "topics", len(req.Topics), "records", len(records), "validateOnly", req.ValidateOnly)
	return records, resp
}

func (c *Controller) createTopicPartitions(img *metadata.Image, t *kmsg.CreatePartitionsRequestTopic) ([]metadata.Record, apiError) {
	topic := img.Topics.Topic(t.Topic)
	if topic == nil {
		return nil, errBare(kerr.UnknownTopicOrPartition)
	}
	current := int32(topic.NumPartitions())
	switch {
	case t.Count == current:
		return nil, errWith(kerr.InvalidPartitions, "Topic already has %d partition(s).", current)
	case t.Count < current:
		return nil, errWith(kerr.InvalidPartitions, "The topic %s currently has %d partition(s); %d would not be an increase.", t.Topic, current, t.Count)
	}
	additional := t.Count - current
	if t.Assignment != nil && len(t.Assignment) != int(additional) {
		return nil, errWith(kerr.InvalidReplicaAssignment, "Attempted to add %d additional partition(s), but only %d assignment(s) were specified.",
			additional, len(t.Assignment))
	}
	first := topic.Partition(0)
	if first == nil {
		for _, p := range topic.Partitions() {
			first = p
			break
		}
	}
	if first == nil {
		return nil, errWith(kerr.UnknownServerError, "Invalid state: topic %s appears to have no partitions.", t.Topic)
	}
	replicationFactor := len(first.Replicas)

	var assignments [][]int32
	if t.Assignment != nil {
		for i, a := range t.Assignment {
			if e := validateManualAssignment(img, a.Replicas, replicationFactor); e.err != nil {
				return nil, e
			}
			if !slices.ContainsFunc(a.Replicas, func(id int32) bool { return isActive(img, id) }) {
				return nil, errWith(kerr.InvalidReplicaAssignment,
					"All brokers specified in the manual partition assignment for partition %d are fenced or in controlled shutdown.", current+int32(i))
			}
			assignments = append(assignments, a.Replicas)
		}
	} else {
		placed, err := c.placeReplicas(img, additional, int16(replicationFactor))
		if err != nil {
			return nil, errWith(kerr.InvalidReplicationFactor, "%s", err)
		}
		assignments = placed
	}
	var records []metadata.Record
	for i, replicas := range assignments {
		if !slices.ContainsFunc(replicas, func(id int32) bool { return isActive(img, id) }) {
			return nil, errWith(kerr.InvalidReplicationFactor,
				"Unable to replicate the partition %d time(s): All brokers are currently fenced or in controlled shutdown.", replicationFactor)
		}
		records = append(records, partitionRecord(img, topic.ID, current+int32(i), replicas, c.cfg.LeaderOnlyISR))
	}
	return records, apiError{}
}
