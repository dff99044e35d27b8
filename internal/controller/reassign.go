package controller

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/metadata"
)

// Partition reassignment (KIP-455, Kafka's ReplicationControlManager
// alterPartitionReassignments / listPartitionReassignments) moves a
// partition to a target replica set in three steps:
//
//  1. The request writes a PartitionChangeRecord whose replicas are the
//     target followed by the replicas being removed, with AddingReplicas
//     (target minus current) and RemovingReplicas (current minus target),
//     both sorted. The ISR and leader stay.
//  2. The added replicas fetch from the leader, catch up, and the leader
//     adds them to the ISR with AlterPartition.
//  3. The first partition change (of any kind) whose ISR holds every target
//     replica completes it: replicas = target, the removed replicas leave
//     the ISR, adding/removing are cleared, and a removed leader is replaced
//     by the first target replica in the ISR that may lead. Losing a
//     replica bumps the leader epoch.
//
// A reassignment that adds nothing (a reorder, a shrink) completes in step 1.
// A partition is being reassigned while AddingReplicas or RemovingReplicas
// is not empty.

// reassignmentReplicas is Kafka's PartitionReassignmentReplicas: the
// replica set during a reassignment and what it adds and removes.
type reassignmentReplicas struct {
	replicas []int32 // target first, then the removing replicas
	adding   []int32 // sorted
	removing []int32 // sorted
}

// newReassignmentReplicas starts a reassignment from current to target.
func newReassignmentReplicas(current, target []int32) reassignmentReplicas {
	removing := sortedDifference(current, target)
	return reassignmentReplicas{
		replicas: append(slices.Clone(target), removing...),
		adding:   sortedDifference(target, current),
		removing: removing,
	}
}

// sortedDifference is a minus b, sorted, without duplicates, never nil.
func sortedDifference(a, b []int32) []int32 {
	out := []int32{}
	for _, r := range a {
		if !slices.Contains(b, r) && !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	slices.Sort(out)
	return out
}

func reassigning(p *metadata.Partition) bool {
	return len(p.AddingReplicas) > 0 || len(p.RemovingReplicas) > 0
}

// completeReassignment is Kafka's completeReassignmentIfNeeded: when the
// target ISR without the removing replicas still has a member and holds
// every replica that stays, the reassignment ends in this change.
func (b *partitionChange) completeReassignment() {
	if len(b.targetAdding) == 0 && len(b.targetRemoving) == 0 {
		return
	}
	isr, replicas := b.targetISR, b.targetReplicas
	if len(b.targetRemoving) > 0 {
		removing := func(r int32) bool { return slices.Contains(b.targetRemoving, r) }
		isr = slices.DeleteFunc(slices.Clone(isr), removing)
		replicas = slices.DeleteFunc(slices.Clone(replicas), removing)
		if len(isr) == 0 || len(replicas) == 0 {
			return
		}
	}
	if !containsAll(isr, replicas) {
		return
	}
	b.targetISR, b.targetReplicas = isr, replicas
	b.targetAdding, b.targetRemoving = []int32{}, []int32{}
}

// AlterPartitionReassignments starts, changes or cancels reassignments
// (versions 0-1). All records of one request commit atomically. Per
// partition: UNKNOWN_TOPIC_OR_PARTITION for an unknown topic or partition;
// INVALID_REPLICA_ASSIGNMENT for an empty target, an unregistered broker or
// a duplicate; INVALID_REPLICATION_FACTOR (version 1 with
// AllowReplicationFactorChange false) when the target's size is not the
// current replication factor; null replicas cancel: the replicas and ISR
// lose the added replicas (NO_REASSIGNMENT_IN_PROGRESS if there is none,
// INVALID_REPLICA_ASSIGNMENT if only added replicas are in the ISR and
// unclean leader election is off for the topic).
func (c *Controller) AlterPartitionReassignments(ctx context.Context, req *kmsg.AlterPartitionAssignmentsRequest) *kmsg.AlterPartitionAssignmentsResponse {
	allowRFChange := req.Version < 1 || req.AllowReplicationFactorChange
	newResp := func() *kmsg.AlterPartitionAssignmentsResponse {
		resp := kmsg.NewPtrAlterPartitionAssignmentsResponse()
		resp.Version, resp.AllowReplicationFactorChange = req.Version, allowRFChange
		return resp
	}
	if len(req.Topics) == 0 {
		return newResp()
	}
	return write(c, ctx, false,
		func(img *metadata.Image) ([]metadata.Record, *kmsg.AlterPartitionAssignmentsResponse) {
			resp := newResp()
			var records []metadata.Record
			succeeded, total := 0, 0
			for _, t := range req.Topics {
				rt := kmsg.NewAlterPartitionAssignmentsResponseTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
					rp.Partition = p.Partition
					rec, e := c.alterPartitionReassignment(img, t.Topic, p, allowRFChange)
					if e.err != nil {
						c.logger.Info("partition reassignment refused", "topic", t.Topic, "partition", p.Partition,
							"error", e.err.Message, "message", *e.message)
						rp.ErrorCode, rp.ErrorMessage = e.code(), e.message
					} else {
						succeeded++
						if rec != nil {
							records = append(records, rec)
						}
					}
					total++
					rt.Partitions = append(rt.Partitions, rp)
				}
				resp.Topics = append(resp.Topics, rt)
			}
			c.logger.Info("altered partition reassignments", "succeeded", succeeded, "total", total)
			return records, resp
		},
		func(e *kerr.Error) *kmsg.AlterPartitionAssignmentsResponse {
			// Kafka's AlterPartitionReassignmentsRequest.getErrorResponse: the
			// error at the top and on every partition.
			resp := newResp()
			resp.ErrorCode, resp.ErrorMessage = e.Code, &e.Description
			for _, t := range req.Topics {
				rt := kmsg.NewAlterPartitionAssignmentsResponseTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
					rp.Partition, rp.ErrorCode, rp.ErrorMessage = p.Partition, e.Code, &e.Description
					rt.Partitions = append(rt.Partitions, rp)
				}
				resp.Topics = append(resp.Topics, rt)
			}
			return resp
		})
}

func (c *Controller) alterPartitionReassignment(img *metadata.Image, topicName string,
	target kmsg.AlterPartitionAssignmentsRequestTopicPartition, allowRFChange bool) (*metadata.PartitionChangeRecord, apiError) {
	topic := img.Topics.Topic(topicName)
	if topic == nil {
		return nil, errWith(kerr.UnknownTopicOrPartition, "Unable to find a topic named %s.", topicName)
	}
	part := topic.Partition(target.Partition)
	if part == nil {
		return nil, errWith(kerr.UnknownTopicOrPartition, "Unable to find partition %s:%d.", topicName, target.Partition)
	}
	if target.Replicas == nil {
		return c.cancelPartitionReassignment(img, topic, target.Partition)
	}
	return c.changePartitionReassignment(img, topic, target.Partition, target.Replicas, allowRFChange)
}

// changePartitionReassignment is Kafka's changePartitionReassignment. A
// reassignment over one in progress starts from the current (grown) replica
// set: replicas the earlier one was adding and the new one does not want
// become removing replicas.
func (c *Controller) changePartitionReassignment(img *metadata.Image, topic *metadata.Topic, partition int32,
	target []int32, allowRFChange bool) (*metadata.PartitionChangeRecord, apiError) {
	if e := validateManualAssignment(img, target, -1); e.err != nil {
		return nil, e
	}
	part := topic.Partition(partition)
	if !allowRFChange {
		// KIP-860: the replication factor before any reassignment in
		// progress is the replica set without the replicas it adds.
		current := len(part.Replicas) - len(part.AddingReplicas)
		if current != len(target) {
			return nil, errWith(kerr.InvalidReplicationFactor, "The replication factor is changed from %d to %d", current, len(target))
		}
	}
	r := newReassignmentReplicas(part.Replicas, target)
	b := c.newPartitionChange(img, topic, partition, nil)
	b.targetReplicas = r.replicas
	// Kafka sets adding and removing only when not empty: a reorder of a
	// partition being reassigned keeps them, and completes it only if the
	// ISR allows.
	if len(r.removing) > 0 {
		b.targetRemoving = r.removing
	}
	if len(r.adding) > 0 {
		b.targetAdding = r.adding
	}
	rec := b.build()
	c.logReassignment(topic.Name, partition, part, rec)
	return rec, apiError{}
}

// cancelPartitionReassignment is Kafka's cancelPartitionReassignment with
// PartitionReassignmentRevert: back to the replicas before the
// reassignment, the ISR without the added replicas. If only added replicas
// are in the ISR, the first original replica becomes the ISR, an unclean
// election that the topic must allow.
func (c *Controller) cancelPartitionReassignment(img *metadata.Image, topic *metadata.Topic, partition int32) (*metadata.PartitionChangeRecord, apiError) {
	part := topic.Partition(partition)
	if !reassigning(part) {
		return nil, errDefault(kerr.NoReassignmentInProgress)
	}
	notAdding := func(r int32) bool { return slices.Contains(part.AddingReplicas, r) }
	replicas := slices.DeleteFunc(slices.Clone(part.Replicas), notAdding)
	isr := slices.DeleteFunc(slices.Clone(part.ISR), notAdding)
	unclean := c.uncleanLeaderElectionEnabled(img, topic.Name)
	if len(isr) == 0 {
		if len(replicas) == 0 {
			return nil, errWith(kerr.InvalidReplicaAssignment, "Invalid replica assignment: addingReplicas contains all replicas.")
		}
		if !unclean {
			return nil, errWith(kerr.InvalidReplicaAssignment,
				"Unable to revert partition assignment for %s:%d because it would require an unclean leader election.", topic.Name, partition)
		}
		isr = []int32{replicas[0]}
	}
	b := c.newPartitionChange(img, topic, partition, nil)
	if unclean {
		b.election = electionUnclean
	}
	b.targetISR, b.targetReplicas = isr, replicas
	b.targetAdding, b.targetRemoving = []int32{}, []int32{}
	rec := b.build()
	c.logReassignment(topic.Name, partition, part, rec)
	return rec, apiError{}
}

func (c *Controller) logReassignment(topic string, partition int32, before *metadata.Partition, rec *metadata.PartitionChangeRecord) {
	if rec == nil {
		return
	}
	after := applyChange(before, rec)
	c.logger.Info("partition reassignment", "topic", topic, "partition", partition,
		"replicas", after.Replicas, "adding", after.AddingReplicas, "removing", after.RemovingReplicas,
		"isr", after.ISR, "leader", after.Leader, "completed", reassigning(before) && !reassigning(&after))
}

// ListPartitionReassignments lists the partitions being reassigned (version
// 0): with null topics every one, by topic name then partition; otherwise
// the named partitions that are, in the order asked (unknown topics and
// partitions are left out). An empty topic list answers nothing.
func (c *Controller) ListPartitionReassignments(ctx context.Context, req *kmsg.ListPartitionReassignmentsRequest) *kmsg.ListPartitionReassignmentsResponse {
	resp := kmsg.NewPtrListPartitionReassignmentsResponse()
	resp.Version = req.Version
	if req.Topics != nil && len(req.Topics) == 0 {
		return resp
	}
	fail := func(e *kerr.Error) *kmsg.ListPartitionReassignmentsResponse {
		resp.ErrorCode, resp.ErrorMessage = e.Code, &e.Description
		return resp
	}
	var topics []kmsg.ListPartitionReassignmentsResponseTopic
	active := false
	if err := c.submit(ctx, func() {
		if active = c.active.Load(); active {
			topics = listReassignments(c.image.Image(), req.Topics)
		}
	}); err != nil {
		return fail(kafkaError(err))
	}
	if !active {
		return fail(kerr.NotController)
	}
	resp.Topics = topics
	return resp
}

func listReassignments(img *metadata.Image, topics []kmsg.ListPartitionReassignmentsRequestTopic) []kmsg.ListPartitionReassignmentsResponseTopic {
	var out []kmsg.ListPartitionReassignmentsResponseTopic
	add := func(t *metadata.Topic, partitions []int32) {
		rt := kmsg.NewListPartitionReassignmentsResponseTopic()
		rt.Topic = t.Name
		for _, id := range partitions {
			p := t.Partition(id)
			if p == nil || !reassigning(p) {
				continue
			}
			rp := kmsg.NewListPartitionReassignmentsResponseTopicPartition()
			rp.Partition = id
			rp.Replicas = slices.Clone(p.Replicas)
			rp.AddingReplicas = nonNil(p.AddingReplicas)
			rp.RemovingReplicas = nonNil(p.RemovingReplicas)
			rt.Partitions = append(rt.Partitions, rp)
		}
		if len(rt.Partitions) > 0 {
			out = append(out, rt)
		}
	}
	if topics == nil {
		var last *metadata.Topic
		var ids []int32
		for _, tp := range partitionsWhere(img, reassigning) {
			if tp.topic != last && last != nil {
				add(last, ids)
				ids = nil
			}
			last = tp.topic
			ids = append(ids, tp.partition)
		}
		if last != nil {
			add(last, ids)
		}
		return out
	}
	for _, t := range topics {
		if topic := img.Topics.Topic(t.Topic); topic != nil {
			add(topic, t.Partitions)
		}
	}
	return out
}
