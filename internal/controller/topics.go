package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/metadata"
)

// ClusterMetadataTopic is the name of the metadata log's topic.
const ClusterMetadataTopic = "__cluster_metadata"

// maxTopicNameLength is Kafka's Topic.MAX_NAME_LENGTH.
const maxTopicNameLength = 249

// invalidTopicReason is Kafka's Topic.detectInvalidTopic: why a name is not a
// legal topic name, or "" if it is.
func invalidTopicReason(name string) string {
	switch {
	case name == "":
		return "the empty string is not allowed"
	case name == ".":
		return "'.' is not allowed"
	case name == "..":
		return "'..' is not allowed"
	case len(name) > maxTopicNameLength:
		return fmt.Sprintf("the length of '%s' is longer than the max allowed length %d", name, maxTopicNameLength)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Sprintf("'%s' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'", name)
		}
	}
	return ""
}

// ValidateTopicName is Kafka's Topic.validate: nil for a legal topic name,
// else an error whose text is Kafka's INVALID_TOPIC_EXCEPTION message.
func ValidateTopicName(name string) error {
	if reason := invalidTopicReason(name); reason != "" {
		return fmt.Errorf("Topic name is invalid: %s", reason)
	}
	return nil
}

// unifyCollisionChars is Kafka's Topic.unifyCollisionChars: '.' and '_'
// collide in metric names, so "a.b" and "a_b" cannot both exist.
func unifyCollisionChars(name string) string { return strings.ReplaceAll(name, ".", "_") }

// CreateTopics creates topics (Kafka's ControllerApis.createTopics and
// ReplicationControlManager.createTopics). Every topic is answered: errors
// per topic with Kafka's codes and messages, successes with the topic id
// (v7+), partition count and replication factor (v5+). The response's
// Configs list is left empty: the effective topic configs are the config
// package's to describe (DescribeConfigs answers them).
func (c *Controller) CreateTopics(ctx context.Context, req *kmsg.CreateTopicsRequest) *kmsg.CreateTopicsResponse {
	if requestedPartitions(req, c.cfg.DefaultNumPartitions) > maxPartitionsPerBatch {
		// Kafka's validateTotalNumberOfPartitions: the whole request fails
		// before a name is checked or a replica placed, validate_only too.
		resp := kmsg.NewPtrCreateTopicsResponse()
		resp.Version = req.Version
		e := errWith(kerr.PolicyViolation, "Excessively large number of partitions per request.")
		for _, t := range req.Topics {
			rt := kmsg.NewCreateTopicsResponseTopic()
			rt.Topic, rt.ErrorCode, rt.ErrorMessage = t.Topic, e.code(), e.message
			rt.NumPartitions, rt.ReplicationFactor = -1, -1
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
	return write(c, ctx, req.ValidateOnly,
		func(img *metadata.Image) ([]metadata.Record, *kmsg.CreateTopicsResponse) {
			return c.createTopics(img, req)
		},
		func(e *kerr.Error) *kmsg.CreateTopicsResponse {
			resp := kmsg.NewPtrCreateTopicsResponse()
			resp.Version = req.Version
			for _, t := range req.Topics {
				rt := kmsg.NewCreateTopicsResponseTopic()
				rt.Topic, rt.ErrorCode = t.Topic, e.Code
				resp.Topics = append(resp.Topics, rt)
			}
			return resp
		})
}

// requestedPartitions is the number of partitions req asks for across its
// topics (Kafka's count in validateTotalNumberOfPartitions: an assignment's
// length, else NumPartitions, -1 meaning the default; invalid counts add
// nothing). It is summed in int64, so no int32 count can wrap it.
func requestedPartitions(req *kmsg.CreateTopicsRequest, defaultNumPartitions int32) int64 {
	var total int64
	for _, t := range req.Topics {
		switch {
		case len(t.ReplicaAssignment) > 0:
			total += int64(len(t.ReplicaAssignment))
		case t.NumPartitions == -1:
			total += int64(defaultNumPartitions)
		case t.NumPartitions > 0:
			total += int64(t.NumPartitions)
		}
	}
	return total
}

func (c *Controller) createTopics(img *metadata.Image, req *kmsg.CreateTopicsRequest) ([]metadata.Record, *kmsg.CreateTopicsResponse) {
	resp := kmsg.NewPtrCreateTopicsResponse()
	resp.Version = req.Version

	// A name given twice is answered once, with INVALID_REQUEST, and not
	// created; the metadata topic's name is refused.
	count := map[string]int{}
	var duplicates []string
	for _, t := range req.Topics {
		count[t.Topic]++
		if count[t.Topic] == 2 {
			duplicates = append(duplicates, t.Topic)
		}
	}
	var records []metadata.Record
	// collisions holds the unified names of existing topics and of the ones
	// this request creates, so two new topics cannot collide either.
	collisions := map[string]string{}
	for name := range img.Topics.Names() {
		collisions[unifyCollisionChars(name)] = name
	}
	requestedMetadataTopic := false
	for i := range req.Topics {
		t := &req.Topics[i]
		if count[t.Topic] > 1 {
			continue
		}
		if t.Topic == ClusterMetadataTopic {
			requestedMetadataTopic = true
			continue
		}
		result := kmsg.NewCreateTopicsResponseTopic()
		result.Topic = t.Topic
		topicRecords, apiErr := c.createTopic(img, t, &result, collisions)
		if apiErr.err != nil {
			result = kmsg.NewCreateTopicsResponseTopic()
			result.Topic, result.ErrorCode, result.ErrorMessage = t.Topic, apiErr.code(), apiErr.message
		} else {
			records = append(records, topicRecords...)
			collisions[unifyCollisionChars(t.Topic)] = t.Topic
		}
		resp.Topics = append(resp.Topics, result)
	}
	for _, name := range duplicates {
		rt := kmsg.NewCreateTopicsResponseTopic()
		e := errWith(kerr.InvalidRequest, "Duplicate topic name.")
		rt.Topic, rt.ErrorCode, rt.ErrorMessage = name, e.code(), e.message
		resp.Topics = append(resp.Topics, rt)
	}
	if requestedMetadataTopic {
		rt := kmsg.NewCreateTopicsResponseTopic()
		e := errWith(kerr.InvalidRequest, "Creation of internal topic %s is prohibited.", ClusterMetadataTopic)
		rt.Topic, rt.ErrorCode, rt.ErrorMessage = ClusterMetadataTopic, e.code(), e.message
		resp.Topics = append(resp.Topics, rt)
	}
	c.logger.Info("CreateTopics", "topics", len(req.Topics), "records", len(records), "validateOnly", req.ValidateOnly)
	return records, resp
}

// createTopic checks one topic and returns its records (TopicRecord, then
// its ConfigRecords, then PartitionRecords, in Kafka's order), filling the
// success fields of result.
func (c *Controller) createTopic(img *metadata.Image, t *kmsg.CreateTopicsRequestTopic, result *kmsg.CreateTopicsResponseTopic,
	collisions map[string]string) ([]metadata.Record, apiError) {
	if err := ValidateTopicName(t.Topic); err != nil {
		return nil, errWith(kerr.InvalidTopicException, "%s", err)
	}
	if other, ok := collisions[unifyCollisionChars(t.Topic)]; ok && other != t.Topic {
		return nil, errWith(kerr.InvalidTopicException, "Topic '%s' collides with existing topic: %s", t.Topic, other)
	}
	if img.Topics.Topic(t.Topic) != nil {
		return nil, errWith(kerr.TopicAlreadyExists, "Topic '%s' already exists.", t.Topic)
	}
	configRecords, apiErr := c.creationConfigRecords(t)
	if apiErr.err != nil {
		return nil, apiErr
	}

	var assignments [][]int32
	if len(t.ReplicaAssignment) > 0 {
		if t.ReplicationFactor != -1 {
			return nil, errWith(kerr.InvalidRequest, "A manual partition assignment was specified, but replication factor was not set to -1.")
		}
		if t.NumPartitions != -1 {
			return nil, errWith(kerr.InvalidRequest, "A manual partition assignment was specified, but numPartitions was not set to -1.")
		}
		byPartition := map[int32][]int32{}
		replicationFactor := -1
		for _, a := range t.ReplicaAssignment {
			if _, dup := byPartition[a.Partition]; dup {
				return nil, errWith(kerr.InvalidReplicaAssignment, "Found multiple manual partition assignments for partition %d", a.Partition)
			}
			if e := validateManualAssignment(img, a.Replicas, replicationFactor); e.err != nil {
				return nil, e
			}
			replicationFactor = len(a.Replicas)
			if !slices.ContainsFunc(a.Replicas, func(id int32) bool { return isActive(img, id) }) {
				return nil, errWith(kerr.InvalidReplicaAssignment,
					"All brokers specified in the manual partition assignment for partition %d are fenced or in controlled shutdown.", a.Partition)
			}
			byPartition[a.Partition] = a.Replicas
		}
		for p := range int32(len(byPartition)) {
			if _, ok := byPartition[p]; !ok {
				return nil, errWith(kerr.InvalidReplicaAssignment, "partitions should be a consecutive 0-based integer sequence")
			}
			assignments = append(assignments, byPartition[p])
		}
	} else {
		if t.ReplicationFactor < -1 || t.ReplicationFactor == 0 {
			return nil, errWith(kerr.InvalidReplicationFactor, "Replication factor must be larger than 0, or -1 to use the default value.")
		}
		if t.NumPartitions < -1 || t.NumPartitions == 0 {
			return nil, errWith(kerr.InvalidPartitions, "Number of partitions was set to an invalid non-positive value.")
		}
		numPartitions, replicationFactor := t.NumPartitions, t.ReplicationFactor
		if numPartitions == -1 {
			numPartitions = c.cfg.DefaultNumPartitions
		}
		if replicationFactor == -1 {
			replicationFactor = c.cfg.DefaultReplicationFactor
		}
		placed, err := c.placeReplicas(img, numPartitions, replicationFactor)
		if err != nil {
			return nil, errWith(kerr.InvalidReplicationFactor, "Unable to replicate the partition %d time(s): %s", replicationFactor, err)
		}
		for p, replicas := range placed {
			if !slices.ContainsFunc(replicas, func(id int32) bool { return isActive(img, id) }) {
				return nil, errWith(kerr.InvalidReplicationFactor,
					"Unable to replicate the partition %d time(s): All brokers are currently fenced or in controlled shutdown.", replicationFactor)
			}
			assignments = append(assignments, placed[p])
		}
	}

	id := newTopicID()
	result.TopicID = id
	result.NumPartitions = int32(len(assignments))
	result.ReplicationFactor = int16(len(assignments[0]))
	result.Configs = []kmsg.CreateTopicsResponseTopicConfig{}
	records := []metadata.Record{&metadata.TopicRecord{Name: t.Topic, TopicID: id}}
	for _, r := range configRecords {
		records = append(records, r)
	}
	for p, replicas := range assignments {
		records = append(records, partitionRecord(img, id, int32(p), replicas, c.cfg.LeaderOnlyISR))
	}
	return records, apiError{}
}

// creationConfigRecords checks the configs of a new topic and returns their
// ConfigRecords (a key given twice keeps the last value, as Kafka's map does).
func (c *Controller) creationConfigRecords(t *kmsg.CreateTopicsRequestTopic) ([]*metadata.ConfigRecord, apiError) {
	var nulls []string
	values := map[string]string{}
	var order []string
	for _, cfg := range t.Configs {
		if cfg.Value == nil {
			nulls = append(nulls, cfg.Name)
			continue
		}
		if _, seen := values[cfg.Name]; !seen {
			order = append(order, cfg.Name)
		}
		values[cfg.Name] = *cfg.Value
	}
	if len(nulls) > 0 {
		return nil, errWith(kerr.InvalidConfig, "Null value not supported for topic configs: %s", strings.Join(nulls, ","))
	}
	var records []*metadata.ConfigRecord
	for _, name := range order {
		v := values[name]
		if c.cfg.ValidateTopicConfig != nil {
			if err := c.cfg.ValidateTopicConfig(name, &v); err != nil {
				return nil, errWith(kerr.InvalidConfig, "%s", err.Error())
			}
		}
		records = append(records, &metadata.ConfigRecord{ResourceType: metadata.ConfigResourceTopic, ResourceName: t.Topic, Name: name, Value: &v})
	}
	return records, apiError{}
}

// validateManualAssignment is Kafka's validateManualPartitionAssignment;
// replicationFactor -1 means "not known yet" (the first partition).
func validateManualAssignment(img *metadata.Image, replicas []int32, replicationFactor int) apiError {
	if len(replicas) == 0 {
		return errWith(kerr.InvalidReplicaAssignment, "The manual partition assignment includes an empty replica list.")
	}
	sorted := slices.Sorted(slices.Values(replicas))
	for i, id := range sorted {
		if img.Brokers[id] == nil {
			return errWith(kerr.InvalidReplicaAssignment, "The manual partition assignment includes broker %d, but no such broker is registered.", id)
		}
		if i > 0 && sorted[i-1] == id {
			return errWith(kerr.InvalidReplicaAssignment, "The manual partition assignment includes the broker %d more than once.", id)
		}
	}
	if replicationFactor >= 0 && len(replicas) != replicationFactor {
		return errWith(kerr.InvalidReplicaAssignment,
			"The manual partition assignment includes a partition with %d replica(s), but this is not consistent with previous partitions, which have %d replica(s).",
			len(replicas), replicationFactor)
	}
	return apiError{}
}

// DeleteTopics deletes topics by name (v0+) or by id (v6+), following Kafka's
// ControllerApis.deleteTopics: INVALID_REQUEST for duplicates and for
// entries naming both or neither, UNKNOWN_TOPIC_OR_PARTITION /
// UNKNOWN_TOPIC_ID for unknown topics, and TOPIC_DELETION_DISABLED (v3+;
// INVALID_REQUEST before) for every topic when delete.topic.enable is false.
// Kafka shuffles the answers; Gregor keeps Kafka's order of evaluation.
func (c *Controller) DeleteTopics(ctx context.Context, req *kmsg.DeleteTopicsRequest) *kmsg.DeleteTopicsResponse {
	failAll := func(e *kerr.Error) *kmsg.DeleteTopicsResponse {
		resp := kmsg.NewPtrDeleteTopicsResponse()
		resp.Version = req.Version
		for _, name := range req.TopicNames {
			rt := kmsg.NewDeleteTopicsResponseTopic()
			rt.Topic, rt.ErrorCode = kmsg.StringPtr(name), e.Code
			resp.Topics = append(resp.Topics, rt)
		}
		for _, t := range req.Topics {
			rt := kmsg.NewDeleteTopicsResponseTopic()
			rt.Topic, rt.TopicID, rt.ErrorCode = t.Topic, t.TopicID, e.Code
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
	if !c.cfg.DeleteTopicEnable {
		if req.Version < 3 {
			return failAll(kerr.InvalidRequest)
		}
		return failAll(kerr.TopicDeletionDisabled)
	}
	return write(c, ctx, false,
		func(img *metadata.Image) ([]metadata.Record, *kmsg.DeleteTopicsResponse) {
			return c.deleteTopics(img, req)
		}, failAll)
}

func (c *Controller) deleteTopics(img *metadata.Image, req *kmsg.DeleteTopicsRequest) ([]metadata.Record, *kmsg.DeleteTopicsResponse) {
	resp := kmsg.NewPtrDeleteTopicsResponse()
	resp.Version = req.Version
	add := func(name *string, id [16]byte, e apiError) {
		rt := kmsg.NewDeleteTopicsResponseTopic()
		rt.Topic, rt.TopicID, rt.ErrorCode, rt.ErrorMessage = name, id, e.code(), e.message
		resp.Topics = append(resp.Topics, rt)
	}

	// Collect the names and ids asked for; an item given twice is refused.
	var names, dupNames []string
	var ids, dupIDs [][16]byte
	nameCount := map[string]int{}
	idCount := map[[16]byte]int{}
	addName := func(n string) {
		nameCount[n]++
		switch nameCount[n] {
		case 1:
			names = append(names, n)
		case 2:
			dupNames = append(dupNames, n)
		}
	}
	for _, n := range req.TopicNames {
		addName(n)
	}
	for _, t := range req.Topics {
		switch {
		case t.Topic == nil && t.TopicID == [16]byte{}:
			add(nil, t.TopicID, errWith(kerr.InvalidRequest, "Neither topic name nor id were specified."))
		case t.Topic == nil:
			idCount[t.TopicID]++
			switch idCount[t.TopicID] {
			case 1:
				ids = append(ids, t.TopicID)
			case 2:
				dupIDs = append(dupIDs, t.TopicID)
			}
		case t.TopicID == [16]byte{}:
			addName(*t.Topic)
		default:
			add(t.Topic, t.TopicID, errWith(kerr.InvalidRequest, "You may not specify both topic name and topic id."))
		}
	}
	for _, n := range dupNames {
		add(kmsg.StringPtr(n), [16]byte{}, errWith(kerr.InvalidRequest, "Duplicate topic name."))
	}
	for _, id := range dupIDs {
		add(nil, id, errWith(kerr.InvalidRequest, "Duplicate topic id."))
	}

	// Resolve ids, then names, to the topics to delete, in request order.
	var deleting [][16]byte
	deleteName := map[[16]byte]string{}
	refused := map[[16]byte]bool{}
	for _, id := range ids {
		if idCount[id] > 1 {
			continue
		}
		t := img.Topics.TopicByID(id)
		if t == nil {
			add(nil, id, errDefault(kerr.UnknownTopicID))
			continue
		}
		deleting = append(deleting, id)
		deleteName[id] = t.Name
	}
	for _, n := range names {
		if nameCount[n] > 1 {
			continue
		}
		t := img.Topics.Topic(n)
		if t == nil {
			add(kmsg.StringPtr(n), [16]byte{}, errDefault(kerr.UnknownTopicOrPartition))
			continue
		}
		if _, dup := deleteName[t.ID]; dup || idCount[t.ID] > 1 {
			// The id was also given directly: Kafka refuses both.
			refused[t.ID] = true
			add(kmsg.StringPtr(n), t.ID, errWith(kerr.InvalidRequest, "The provided topic name maps to an ID that was already supplied."))
			continue
		}
		deleting = append(deleting, t.ID)
		deleteName[t.ID] = n
	}
	var records []metadata.Record
	for _, id := range deleting {
		if refused[id] {
			continue
		}
		records = append(records, &metadata.RemoveTopicRecord{TopicID: id})
		add(kmsg.StringPtr(deleteName[id]), id, apiError{})
	}
	c.logger.Info("DeleteTopics", "deleting", len(records))
	return records, resp
}
