package controller

import (
	"context"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/metadata"
)

// IncrementalAlterConfigs changes topic (resource type 2), broker (4) and
// group (32) configs key by key: SET, DELETE, and APPEND/SUBTRACT for
// list-typed configs. It combines the broker's preprocessing (Kafka's
// ConfigAdminManager: duplicates, nulls, broker validation) with the
// controller's ConfigurationControlManager, since the two run in one process.
// Other resource types (BROKER_LOGGER, client metrics) get INVALID_REQUEST
// here. A group need not exist to have configs, as in Kafka.
func (c *Controller) IncrementalAlterConfigs(ctx context.Context, req *kmsg.IncrementalAlterConfigsRequest) *kmsg.IncrementalAlterConfigsResponse {
	return write(c, ctx, req.ValidateOnly,
		func(img *metadata.Image) ([]metadata.Record, *kmsg.IncrementalAlterConfigsResponse) {
			resp := kmsg.NewPtrIncrementalAlterConfigsResponse()
			resp.Version = req.Version
			dups := duplicateResources(len(req.Resources), func(i int) (int8, string) {
				return int8(req.Resources[i].ResourceType), req.Resources[i].ResourceName
			})
			var records []metadata.Record
			for i := range req.Resources {
				res := &req.Resources[i]
				e := errWith(kerr.InvalidRequest, "Each resource must appear at most once.")
				var recs []metadata.Record
				if !dups[i] {
					recs, e = c.incrementalAlterResource(img, res)
				}
				if e.err == nil {
					records = append(records, recs...)
				}
				rr := kmsg.NewIncrementalAlterConfigsResponseResource()
				rr.ResourceType, rr.ResourceName, rr.ErrorCode, rr.ErrorMessage = res.ResourceType, res.ResourceName, e.code(), e.message
				resp.Resources = append(resp.Resources, rr)
			}
			return append(records, clearELRRecords(img, records)...), resp
		},
		func(e *kerr.Error) *kmsg.IncrementalAlterConfigsResponse {
			resp := kmsg.NewPtrIncrementalAlterConfigsResponse()
			resp.Version = req.Version
			for _, res := range req.Resources {
				rr := kmsg.NewIncrementalAlterConfigsResponseResource()
				rr.ResourceType, rr.ResourceName, rr.ErrorCode = res.ResourceType, res.ResourceName, e.Code
				resp.Resources = append(resp.Resources, rr)
			}
			return resp
		})
}

// AlterConfigs replaces the whole set of dynamic configs of each resource
// (the legacy API): keys not named are deleted.
func (c *Controller) AlterConfigs(ctx context.Context, req *kmsg.AlterConfigsRequest) *kmsg.AlterConfigsResponse {
	return write(c, ctx, req.ValidateOnly,
		func(img *metadata.Image) ([]metadata.Record, *kmsg.AlterConfigsResponse) {
			resp := kmsg.NewPtrAlterConfigsResponse()
			resp.Version = req.Version
			dups := duplicateResources(len(req.Resources), func(i int) (int8, string) {
				return int8(req.Resources[i].ResourceType), req.Resources[i].ResourceName
			})
			var records []metadata.Record
			for i := range req.Resources {
				res := &req.Resources[i]
				e := errWith(kerr.InvalidRequest, "Each resource must appear at most once.")
				var recs []metadata.Record
				if !dups[i] {
					recs, e = c.alterResource(img, res)
				}
				if e.err == nil {
					records = append(records, recs...)
				}
				rr := kmsg.NewAlterConfigsResponseResource()
				rr.ResourceType, rr.ResourceName, rr.ErrorCode, rr.ErrorMessage = res.ResourceType, res.ResourceName, e.code(), e.message
				resp.Resources = append(resp.Resources, rr)
			}
			return append(records, clearELRRecords(img, records)...), resp
		},
		func(e *kerr.Error) *kmsg.AlterConfigsResponse {
			resp := kmsg.NewPtrAlterConfigsResponse()
			resp.Version = req.Version
			for _, res := range req.Resources {
				rr := kmsg.NewAlterConfigsResponseResource()
				rr.ResourceType, rr.ResourceName, rr.ErrorCode = res.ResourceType, res.ResourceName, e.Code
				resp.Resources = append(resp.Resources, rr)
			}
			return resp
		})
}

// duplicateResources marks every resource that appears more than once.
func duplicateResources(n int, key func(i int) (int8, string)) []bool {
	seen := map[metadata.ConfigResource][]int{}
	for i := range n {
		t, name := key(i)
		k := metadata.ConfigResource{Type: t, Name: name}
		seen[k] = append(seen[k], i)
	}
	dups := make([]bool, n)
	for _, idx := range seen {
		if len(idx) > 1 {
			for _, i := range idx {
				dups[i] = true
			}
		}
	}
	return dups
}

// configChange is one key's new value (nil = delete).
type configChange struct {
	name  string
	value *string
}

func (c *Controller) incrementalAlterResource(img *metadata.Image, res *kmsg.IncrementalAlterConfigsRequestResource) ([]metadata.Record, apiError) {
	resource := metadata.ConfigResource{Type: int8(res.ResourceType), Name: res.ResourceName}
	keys := map[string]bool{}
	var nulls []string
	for _, cfg := range res.Configs {
		if keys[cfg.Name] {
			return nil, errWith(kerr.InvalidRequest, "Error due to duplicate config keys")
		}
		keys[cfg.Name] = true
		if cfg.Op != kmsg.IncrementalAlterConfigOpDelete && cfg.Value == nil {
			nulls = append(nulls, cfg.Name)
		}
	}
	if len(nulls) > 0 {
		return nil, errWith(kerr.InvalidRequest, "Null value not supported for : %s", strings.Join(nulls, ", "))
	}
	if e := c.checkResourceKind(resource); e.err != nil {
		return nil, e
	}
	current := img.Configs(resource)
	var changes []configChange
	for _, cfg := range res.Configs {
		var newValue *string
		switch cfg.Op {
		case kmsg.IncrementalAlterConfigOpSet:
			newValue = cfg.Value
		case kmsg.IncrementalAlterConfigOpDelete:
		case kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
			op := "APPEND"
			if cfg.Op == kmsg.IncrementalAlterConfigOpSubtract {
				op = "SUBTRACT"
			}
			if !c.isListConfig(resource.Type, cfg.Name) {
				if resource.Type == metadata.ConfigResourceBroker {
					return nil, errWith(kerr.InvalidConfig, "Config value %s is not allowed for config key: %s", strings.ToLower(op), cfg.Name)
				}
				return nil, errWith(kerr.InvalidConfig, "Can't %s to key %s because its type is not LIST.", op, cfg.Name)
			}
			v := applyListOp(c.currentOrDefault(resource.Type, current, cfg.Name), *cfg.Value, cfg.Op == kmsg.IncrementalAlterConfigOpAppend)
			newValue = &v
		default:
			return nil, errWith(kerr.InvalidRequest, "Unknown operations type %d", int8(cfg.Op))
		}
		changes = append(changes, configChange{name: cfg.Name, value: newValue})
	}
	return c.configRecords(img, resource, current, changes, nil)
}

func (c *Controller) alterResource(img *metadata.Image, res *kmsg.AlterConfigsRequestResource) ([]metadata.Record, apiError) {
	resource := metadata.ConfigResource{Type: int8(res.ResourceType), Name: res.ResourceName}
	keys := map[string]bool{}
	var nulls []string
	for _, cfg := range res.Configs {
		if keys[cfg.Name] {
			return nil, errWith(kerr.InvalidRequest, "Error due to duplicate config keys")
		}
		keys[cfg.Name] = true
		if cfg.Value == nil {
			nulls = append(nulls, cfg.Name)
		}
	}
	if len(nulls) > 0 {
		return nil, errWith(kerr.InvalidRequest, "Null value not supported for : %s", strings.Join(nulls, ", "))
	}
	if resource.Type == metadata.ConfigResourceGroup {
		// Kafka's legacy AlterConfigs knows topics and brokers only.
		return nil, errWith(kerr.InvalidRequest, "Unknown resource type %d", resource.Type)
	}
	if e := c.checkResourceKind(resource); e.err != nil {
		return nil, e
	}
	current := img.Configs(resource)
	var changes []configChange
	for _, cfg := range res.Configs {
		changes = append(changes, configChange{name: cfg.Name, value: cfg.Value})
	}
	// Keys set now but not named are deleted (implicitly: they are not
	// validated, as Kafka's KAFKA-14195 keeps them from the policy).
	var implicitDeletes []string
	for _, name := range sortedKeys(current) {
		if !keys[name] {
			implicitDeletes = append(implicitDeletes, name)
		}
	}
	return c.configRecords(img, resource, current, changes, implicitDeletes)
}

// checkResourceKind checks a resource's kind: only topics, brokers and
// groups are handled, and a broker resource is the cluster default ("") or
// a node id. Which node ids a client may name is the broker listener's
// check (a broker alters its own configs and forwards them here; see
// handlers.foreignBrokerResource), as in Kafka, whose controller takes any.
func (c *Controller) checkResourceKind(res metadata.ConfigResource) apiError {
	switch res.Type {
	case metadata.ConfigResourceTopic:
		return apiError{}
	case metadata.ConfigResourceGroup:
		if c.cfg.ValidateGroupConfig == nil {
			return errWith(kerr.InvalidRequest, "Unknown resource type %d", res.Type)
		}
		return apiError{}
	case metadata.ConfigResourceBroker:
		if res.Name == "" {
			return apiError{}
		}
		if _, err := strconv.ParseInt(res.Name, 10, 32); err != nil {
			return errWith(kerr.InvalidRequest, "Node id must be an integer, but it is: %s", res.Name)
		}
		return apiError{}
	}
	return errWith(kerr.InvalidRequest, "Unknown resource type %d", res.Type)
}

// configRecords validates a resource's changes and returns its ConfigRecords
// (Kafka's ConfigurationControlManager): explicit changes first, then the
// implicit deletes. Topic records are written only for values that change;
// broker records always, so brokers reload (KAFKA-14136).
func (c *Controller) configRecords(img *metadata.Image, res metadata.ConfigResource, current map[string]string,
	changes []configChange, implicitDeletes []string) ([]metadata.Record, apiError) {
	var records []metadata.Record
	for _, ch := range changes {
		old, had := current[ch.name]
		unchanged := (ch.value == nil && !had) || (ch.value != nil && had && *ch.value == old)
		if unchanged && res.Type != metadata.ConfigResourceBroker {
			continue
		}
		records = append(records, &metadata.ConfigRecord{ResourceType: res.Type, ResourceName: res.Name, Name: ch.name, Value: ch.value})
	}
	for _, name := range implicitDeletes {
		records = append(records, &metadata.ConfigRecord{ResourceType: res.Type, ResourceName: res.Name, Name: name})
	}

	switch res.Type {
	case metadata.ConfigResourceTopic:
		if res.Name == "" {
			return nil, errWith(kerr.InvalidRequest, "Default topic resources are not allowed.")
		}
		if err := ValidateTopicName(res.Name); err != nil {
			return nil, errWith(kerr.InvalidTopicException, "%s", err)
		}
		if c.cfg.ValidateTopicConfig != nil {
			for _, ch := range changes {
				if err := c.cfg.ValidateTopicConfig(ch.name, ch.value); err != nil {
					return nil, errWith(kerr.InvalidConfig, "%s", err.Error())
				}
			}
		}
		if img.Topics.Topic(res.Name) == nil {
			return nil, errWith(kerr.UnknownTopicOrPartition, "The topic '%s' does not exist.", res.Name)
		}
	case metadata.ConfigResourceGroup:
		if res.Name == "" {
			return nil, errWith(kerr.InvalidRequest, "Group name must not be empty.")
		}
		all := make(map[string]string, len(current))
		for k, v := range current {
			all[k] = v
		}
		for _, ch := range changes {
			if ch.value == nil {
				delete(all, ch.name)
			} else {
				all[ch.name] = *ch.value
			}
		}
		for _, name := range implicitDeletes {
			delete(all, name)
		}
		if err := c.cfg.ValidateGroupConfig(all); err != nil {
			return nil, errWith(kerr.InvalidConfig, "%s", err.Error())
		}
	case metadata.ConfigResourceBroker:
		if e := elrMinISRCheck(img, records); e.err != nil {
			return nil, e
		}
		if c.cfg.ValidateBrokerConfig != nil {
			for _, ch := range changes {
				if err := c.cfg.ValidateBrokerConfig(ch.name, ch.value, res.Name != ""); err != nil {
					return nil, errWith(kerr.InvalidRequest, "%s", err.Error())
				}
			}
		}
		if res.Name != "" {
			id, _ := strconv.ParseInt(res.Name, 10, 32)
			if img.Brokers[int32(id)] == nil && int32(id) != c.cfg.NodeID {
				return nil, errWith(kerr.BrokerIDNotRegistered, "No node with id %d found.", id)
			}
		}
	}
	return records, apiError{}
}

// applyListOp appends values not yet in the list, or removes values from it
// (Kafka's APPEND and SUBTRACT on comma-separated LIST configs).
func applyListOp(current *string, opValue string, appendOp bool) string {
	var list []string
	if current != nil {
		for _, v := range strings.Split(*current, ",") {
			if v != "" {
				list = append(list, v)
			}
		}
	}
	for _, v := range strings.Split(opValue, ",") {
		if v == "" {
			continue
		}
		i := slices.Index(list, v)
		switch {
		case appendOp && i < 0:
			list = append(list, v)
		case !appendOp && i >= 0:
			list = append(list[:i], list[i+1:]...)
		}
	}
	return strings.Join(list, ",")
}

// builtinListConfigs are Kafka's LIST-typed configs with their defaults,
// for when Config.IsListConfig / ConfigDefault are not given.
var builtinListConfigs = map[metadata.ConfigResource]string{
	{Type: metadata.ConfigResourceTopic, Name: "cleanup.policy"}:                          "delete",
	{Type: metadata.ConfigResourceTopic, Name: "leader.replication.throttled.replicas"}:   "",
	{Type: metadata.ConfigResourceTopic, Name: "follower.replication.throttled.replicas"}: "",
	{Type: metadata.ConfigResourceBroker, Name: "log.cleanup.policy"}:                     "delete",
}

func (c *Controller) isListConfig(resourceType int8, name string) bool {
	if c.cfg.IsListConfig != nil {
		return c.cfg.IsListConfig(resourceType, name)
	}
	_, ok := builtinListConfigs[metadata.ConfigResource{Type: resourceType, Name: name}]
	return ok
}

// currentOrDefault is the value a list operation starts from: the dynamic
// value, else the config's default.
func (c *Controller) currentOrDefault(resourceType int8, current map[string]string, name string) *string {
	if v, ok := current[name]; ok {
		return &v
	}
	if c.cfg.ConfigDefault != nil {
		if v, ok := c.cfg.ConfigDefault(resourceType, name); ok {
			return &v
		}
		return nil
	}
	if v, ok := builtinListConfigs[metadata.ConfigResource{Type: resourceType, Name: name}]; ok {
		return &v
	}
	return nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// elrMinISRCheck is Kafka's check of min.insync.replicas while eligible
// leader replicas are on: every broker must agree on which partitions are
// under min ISR, so a broker-level value may not be set or removed, and the
// cluster-level one may not be removed.
func elrMinISRCheck(img *metadata.Image, records []metadata.Record) apiError {
	if img.Features[metadata.EligibleLeaderReplicasVersionFeature] < 1 {
		return apiError{}
	}
	for _, r := range records {
		cr, ok := r.(*metadata.ConfigRecord)
		if !ok || cr.Name != minInsyncReplicas || cr.ResourceType != metadata.ConfigResourceBroker {
			continue
		}
		if cr.ResourceName != "" {
			return errWith(kerr.InvalidConfig, "Broker-level %s cannot be altered while ELR is enabled.", minInsyncReplicas)
		}
		if cr.Value == nil {
			return errWith(kerr.InvalidConfig, "Cluster-level %s cannot be removed while ELR is enabled.", minInsyncReplicas)
		}
	}
	return apiError{}
}

// clearELRRecords is Kafka's createClearElrRecordsAsNeeded: while eligible
// leader replicas are on, a change of min.insync.replicas clears the ELRs
// it concerns (the topic's, or every topic's for the cluster default),
// since they were kept for the old value.
func clearELRRecords(img *metadata.Image, records []metadata.Record) []metadata.Record {
	if img.Features[metadata.EligibleLeaderReplicasVersionFeature] < 1 {
		return nil
	}
	var out []metadata.Record
	for _, r := range records {
		cr, ok := r.(*metadata.ConfigRecord)
		if !ok || cr.Name != minInsyncReplicas {
			continue
		}
		if cr.ResourceType == metadata.ConfigResourceTopic {
			out = append(out, &metadata.ClearElrRecord{TopicName: cr.ResourceName})
		} else {
			out = append(out, &metadata.ClearElrRecord{})
		}
	}
	return out
}
