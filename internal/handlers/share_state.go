package handlers

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/coordinator"
	"gregor/internal/coordinator/sharecoord"
	"gregor/internal/network"
	"gregor/internal/sharestate"
)

// ShareStateTopic is the internal topic of the share coordinator's state
// (KIP-932).
const ShareStateTopic = "__share_group_state"

// shareStatePartition is the __share_group_state partition coordinating a
// FindCoordinator key of type SHARE (over
// share.coordinator.state.topic.num.partitions until the topic exists).
func (h *Handlers) shareStatePartition(key string) int32 {
	return coordinator.PartitionFor(key, h.ShareStatePartitions())
}

// ShareStatePartitions is the partition count of __share_group_state: its
// actual count once created, the configured one before.
func (h *Handlers) ShareStatePartitions() int32 {
	return h.internalPartitions(ShareStateTopic, h.d.Broker.ShareStateTopicNumPartitions)
}

// ensureShareStateTopic creates __share_group_state as Kafka's broker does
// on the first FindCoordinator for a share-partition:
// share.coordinator.state.topic.* partitions and replicas, min.insync.replicas
// and segment size, cleanup.policy=delete with infinite retention (the
// share coordinator's snapshots make older records redundant, not keys),
// compression as produced, unclean election off.
func (h *Handlers) ensureShareStateTopic(ctx context.Context) string {
	b := h.d.Broker
	return h.ensureInternalTopic(ctx, internalTopic{
		name:              ShareStateTopic,
		partitions:        b.ShareStateTopicNumPartitions,
		replicationFactor: b.ShareStateTopicReplicationFactor,
		factorKey:         "share.coordinator.state.topic.replication.factor",
		minISR:            b.ShareStateTopicMinISR,
		minISRKey:         "share.coordinator.state.topic.min.isr",
		configs: map[string]string{
			"cleanup.policy":                 "delete",
			"retention.ms":                   "-1",
			"compression.type":               "producer",
			"segment.bytes":                  strconv.Itoa(int(b.ShareStateTopicSegmentBytes)),
			"unclean.leader.election.enable": "false",
		},
	})
}

// parseShareKey reads a FindCoordinator key of type SHARE,
// "groupId:topicId:partition" (Kafka's SharePartitionKey.validate): three
// parts, a group id that is not blank, a topic id in Kafka's text form, a
// partition number.
func parseShareKey(key string) (sharestate.Key, error) {
	parts := strings.Split(key, ":")
	if len(parts) != 3 {
		return sharestate.Key{}, fmt.Errorf("share-partition key %q is not groupId:topicId:partition", key)
	}
	var k sharestate.Key
	k.GroupID = strings.TrimSpace(parts[0])
	if k.GroupID == "" {
		return sharestate.Key{}, fmt.Errorf("share-partition key %q has no group id", key)
	}
	id, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil || len(id) != 16 {
		return sharestate.Key{}, fmt.Errorf("share-partition key %q: invalid topic id %q", key, parts[1])
	}
	copy(k.TopicID[:], id)
	p, err := strconv.ParseInt(parts[2], 10, 32)
	if err != nil {
		return sharestate.Key{}, fmt.Errorf("share-partition key %q: invalid partition %q", key, parts[2])
	}
	k.Partition = int32(p)
	return k, nil
}

// ShareCoordinator is the broker coordinating a FindCoordinator key of
// type SHARE, for the share-group state persister of this broker: it
// creates __share_group_state when missing and answers
// COORDINATOR_NOT_AVAILABLE (retriable) until the partition has a live
// leader, INVALID_REQUEST for a malformed key.
func (h *Handlers) ShareCoordinator(ctx context.Context, key string) (int32, error) {
	node, code, why := h.coordinatorNode(ctx, 2, key)
	if code != nil {
		if why != "" {
			return -1, fmt.Errorf("%w: %s", code, why)
		}
		return -1, code
	}
	return node, nil
}

// shareStateAllowed reports whether req may use the share-group state
// APIs (83-87), which brokers' persisters send: CLUSTER_ACTION on the
// cluster, as Kafka. Without an authorizer Kafka serves them to anyone;
// Gregor then serves them only on the inter-broker listener, as it does
// WriteTxnMarkers, so that a client of another listener cannot rewrite a
// share group's delivery state.
func (h *Handlers) shareStateAllowed(ctx context.Context, req *network.Request) bool {
	return h.authorizedCluster(ctx, req, kmsg.ACLOperationClusterAction) &&
		(h.d.Authorizer != nil || h.onInterBrokerListener(req))
}

// shareStateCode is the code and message a share-partition is answered
// with for a share coordinator error (nil: none).
func shareStateCode(err error) (int16, *string) {
	if err == nil {
		return 0, nil
	}
	msg := err.Error()
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code, &msg
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return kerr.RequestTimedOut.Code, &msg
	}
	return kerr.UnknownServerError.Code, &msg
}

// shareStatePartitions runs fn for every share-partition of a share-group
// state request, concurrently, and answers each with fn's error; a request
// that is not allowed, has no group id, or reaches a broker without a
// share coordinator is answered with that error for every share-partition.
func (h *Handlers) shareStatePartitions(ctx context.Context, req *network.Request, groupID string, keys []sharestate.Key, fn func(svc *sharecoord.Service, i int) error) []error {
	errs := make([]error, len(keys))
	var common error
	switch {
	case !h.shareStateAllowed(ctx, req):
		common = kerr.ClusterAuthorizationFailed
	case groupID == "":
		common = fmt.Errorf("%w: the group id is empty", kerr.InvalidRequest)
	case h.d.ShareState == nil:
		common = fmt.Errorf("%w: this broker runs no share coordinator", kerr.CoordinatorNotAvailable)
	}
	if common != nil {
		for i := range errs {
			errs[i] = common
		}
		return errs
	}
	var wg sync.WaitGroup
	for i := range keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = fn(h.d.ShareState, i)
		}()
	}
	wg.Wait()
	return errs
}
