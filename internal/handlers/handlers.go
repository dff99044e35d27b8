// Package handlers answers Kafka requests: one file per API, named by its
// key, each opening with its behaviour and declaring its version range in
// one place. A handler validates, delegates to a domain package (replica,
// controller, log) and builds the response; it holds no domain logic.
package handlers

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/auth/acl"
	"gregor/internal/config"
	"gregor/internal/coordinator"
	"gregor/internal/coordinator/producerid"
	"gregor/internal/coordinator/sharecoord"
	"gregor/internal/fetchsession"
	"gregor/internal/log"
	"gregor/internal/metadata"
	"gregor/internal/metrics"
	"gregor/internal/network"
	"gregor/internal/quota"
	"gregor/internal/raft"
	"gregor/internal/replica"
	"gregor/internal/share"
	"gregor/internal/sharestate"
)

// Deps are the components the handlers delegate to.
type Deps struct {
	NodeID    int32
	ClusterID string
	Broker    *config.Broker
	Replica   *replica.Manager
	// Image is the metadata image this listener answers from: the broker's
	// (or, on a controller-only node, the controller's) latest image.
	Image func() *metadata.Image
	// Controller runs the admin requests that change metadata: on a broker
	// listener, a channel to the active controller (the local one or a
	// remote one, forwarded); on a controller listener, this node's own.
	Controller ControllerAPI
	Logs       *log.Manager
	// ProducerIDs hands out producer ids for InitProducerId.
	ProducerIDs *producerid.Manager
	Logger      *slog.Logger

	// Metrics counts bytes and records in and out (nil: not counted).
	Metrics *metrics.Registry

	// Groups runs the group coordinator's shards (__consumer_offsets).
	Groups *coordinator.Runtime
	// Txns runs the transaction coordinator's shards (__transaction_state).
	Txns *coordinator.Runtime
	// ShareState runs the share coordinator's shards (__share_group_state)
	// for APIs 83-87; nil: they answer COORDINATOR_NOT_AVAILABLE.
	ShareState *sharecoord.Service
	// Peers reaches the other brokers (transaction verification).
	Peers Peers

	// Quorum is this node's metadata quorum voter (controller listeners;
	// the zero-config node's too: brokers may follow its log). Nil: the
	// quorum APIs answer UNKNOWN_SERVER_ERROR.
	Quorum Quorum
	// QuorumStatus describes the metadata quorum (controller listeners).
	QuorumStatus func() raft.QuorumStatus
	// Lifecycle is this node's controller, for brokers' registrations and
	// heartbeats (controller listeners).
	Lifecycle Lifecycle
	// Replication is this node's controller, for ISR changes and
	// elections (controller listeners).
	Replication Replication
	// Forward sends a request to the active controller and returns its
	// answer (broker listeners).
	Forward Forwarder
	// Authorizer checks every request (authz.go). nil: no authorization,
	// every request allowed (authorizer.class.name unset, as Kafka).
	Authorizer acl.Authorizer
	// Quotas are the client quotas applied to broker listeners' requests
	// (quotas.go); nil applies none.
	Quotas *quota.Managers
	// FetchSessions are the broker's incremental fetch sessions (KIP-227);
	// nil: NewBroker makes a cache of
	// max.incremental.fetch.session.cache.slots.
	FetchSessions *fetchsession.Cache
	// SharePersister stores share-partition state (KIP-932): share groups
	// initialize it before assigning a partition and delete it with the
	// group. nil: share groups are disabled (ShareGroupHeartbeat answers
	// UNSUPPORTED_VERSION).
	SharePersister sharestate.Persister
	// Shares is the share-partition leader of share groups (KIP-932) and
	// its share sessions; nil: ShareFetch and ShareAcknowledge are not
	// served.
	Shares *share.Manager
}

// ControllerAPI is what handlers ask of the active controller.
type ControllerAPI interface {
	CreateTopics(ctx context.Context, req *kmsg.CreateTopicsRequest) *kmsg.CreateTopicsResponse
	DeleteTopics(ctx context.Context, req *kmsg.DeleteTopicsRequest) *kmsg.DeleteTopicsResponse
	CreatePartitions(ctx context.Context, req *kmsg.CreatePartitionsRequest) *kmsg.CreatePartitionsResponse
	AlterConfigs(ctx context.Context, req *kmsg.AlterConfigsRequest) *kmsg.AlterConfigsResponse
	IncrementalAlterConfigs(ctx context.Context, req *kmsg.IncrementalAlterConfigsRequest) *kmsg.IncrementalAlterConfigsResponse
	AlterUserScramCredentials(ctx context.Context, req *kmsg.AlterUserSCRAMCredentialsRequest) *kmsg.AlterUserSCRAMCredentialsResponse
	CreateAcls(ctx context.Context, req *kmsg.CreateACLsRequest) *kmsg.CreateACLsResponse
	DeleteAcls(ctx context.Context, req *kmsg.DeleteACLsRequest) *kmsg.DeleteACLsResponse
	AlterClientQuotas(ctx context.Context, req *kmsg.AlterClientQuotasRequest) *kmsg.AlterClientQuotasResponse
	UpdateFeatures(ctx context.Context, req *kmsg.UpdateFeaturesRequest) *kmsg.UpdateFeaturesResponse
}

// api is one Kafka API served by a listener: its key, the versions served,
// and the function that answers it.
type api struct {
	key      int16
	min, max int16
	handle   func(h *Handlers, ctx context.Context, req *network.Request) (kmsg.Response, error)
	// needs, when set, tells whether Deps has what the API needs; an API
	// without it is neither served nor advertised.
	needs func(d *Deps) bool
}

// Handlers serves one listener's set of APIs; it implements network.Handler.
type Handlers struct {
	d    Deps
	apis [kmsg.MaxKey + 1]*api
	// controllerListener marks the handlers of a controller listener.
	controllerListener bool
	// internalTopicWaits rate-limits the log of internal topics waiting
	// for brokers.
	internalTopicWaits internalTopicWaits
}

// brokerAPIs are served on the broker listeners.
var brokerAPIs = []*api{
	&produceAPI, &fetchAPI, &listOffsetsAPI, &metadataAPI, &apiVersionsAPI,
	&createTopicsAPI, &deleteTopicsAPI, &describeConfigsAPI, &alterConfigsAPI,
	&describeLogDirsAPI, &createPartitionsAPI, &incrementalAlterConfigsAPI,
	&describeClusterAPI, &deleteRecordsAPI, &initProducerIDAPI,
	// Consumer groups (classic protocol) and committed offsets.
	&findCoordinatorAPI, &joinGroupAPI, &syncGroupAPI, &heartbeatAPI, &leaveGroupAPI,
	&describeGroupsAPI, &listGroupsAPI, &deleteGroupsAPI,
	&offsetCommitAPI, &offsetFetchAPI, &offsetDeleteAPI, &txnOffsetCommitAPI,
	// Consumer groups, KIP-848 protocol.
	&consumerGroupHeartbeatAPI, &consumerGroupDescribeAPI,
	// Share groups (KIP-932)
	&shareGroupHeartbeatAPI, &shareGroupDescribeAPI,
	&shareFetchAPI, &shareAcknowledgeAPI,
	&describeShareGroupOffsetsAPI, &alterShareGroupOffsetsAPI, &deleteShareGroupOffsetsAPI,
	&initializeShareGroupStateAPI, &readShareGroupStateAPI, &writeShareGroupStateAPI,
	&deleteShareGroupStateAPI, &readShareGroupStateSummaryAPI,
	// Forwarded to the active controller.
	&describeQuorumAPI, &electLeadersAPI,
	&alterPartitionReassignmentsAPI, &listPartitionReassignmentsAPI,
	&unregisterBrokerAPI,
	// Replication.
	&offsetForLeaderEpochAPI,
	&describeTopicPartitionsAPI,
	// Idempotent and transactional producers.
	&describeProducersAPI,
	&addPartitionsToTxnAPI, &addOffsetsToTxnAPI, &endTxnAPI, &writeTxnMarkersAPI,
	&describeTransactionsAPI, &listTransactionsAPI,
	// SCRAM credentials: described from the image, altered by the controller.
	&describeUserScramCredentialsAPI, &alterUserScramCredentialsAPI,
	// ACLs: described from the image, created and deleted by the controller.
	&describeACLsAPI, &createACLsAPI, &deleteACLsAPI,
	// Client quotas: described from the image, altered by the controller.
	&describeClientQuotasAPI, &alterClientQuotasAPI,
	// Feature levels: described by ApiVersions, updated by the controller.
	&updateFeaturesAPI,
	// Answered by the socket server on SASL listeners (17_36_sasl.go).
	&saslHandshakeAPI, &saslAuthenticateAPI,
}

// controllerAPIs are served on the controller listener: what Kafka's
// controllers answer for admin clients that bootstrap from controllers
// (KIP-919). Produce and fetch of user data are brokers' work.
var controllerAPIs = []*api{
	&apiVersionsAPI, &createTopicsAPI, &deleteTopicsAPI, &createPartitionsAPI,
	&describeConfigsAPI, &alterConfigsAPI, &incrementalAlterConfigsAPI,
	&describeClusterAPI,
	&describeUserScramCredentialsAPI, &alterUserScramCredentialsAPI,
	&describeACLsAPI, &createACLsAPI, &deleteACLsAPI,
	// Kafka's controllers (ControllerApis) alter client quotas but leave
	// describing them to the brokers.
	&alterClientQuotasAPI,
	&updateFeaturesAPI,
	// The metadata quorum and the brokers' lifecycle (node to node).
	&metadataFetchAPI, &fetchSnapshotAPI, &describeQuorumAPI,
	&brokerRegistrationAPI, &brokerHeartbeatAPI, &allocateProducerIDsAPI,
	&alterPartitionAPI, &electLeadersAPI,
	&alterPartitionReassignmentsAPI, &listPartitionReassignmentsAPI,
	&unregisterBrokerAPI,
	&saslHandshakeAPI, &saslAuthenticateAPI,
}

// NewBroker returns the handlers of a broker listener.
func NewBroker(d Deps) *Handlers {
	if d.FetchSessions == nil {
		slots := 0
		if d.Broker != nil {
			slots = d.Broker.MaxIncrementalFetchSessionCacheSlots
		}
		d.FetchSessions = fetchsession.New(slots, fetchsession.DefaultEvictionAfter)
	}
	return newHandlers(d, brokerAPIs)
}

// NewController returns the handlers of a controller listener.
func NewController(d Deps) *Handlers {
	h := newHandlers(d, controllerAPIs)
	h.controllerListener = true
	return h
}

func newHandlers(d Deps, apis []*api) *Handlers {
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	// A request waiting for the controller is no longer counted against
	// its client's request quota.
	if f, ok := d.Controller.(forwarding); ok {
		d.Controller = forwarding{waitingFor(f.forward)}
	}
	if d.Forward != nil {
		d.Forward = waitingFor(d.Forward)
	}
	h := &Handlers{d: d}
	for _, a := range apis {
		if a.needs == nil || a.needs(&d) {
			h.apis[a.key] = a
		}
	}
	return h
}

func (h *Handlers) image() *metadata.Image { return h.d.Image() }

// VersionRange implements network.Handler.
func (h *Handlers) VersionRange(key int16) (min, max int16, ok bool) {
	if key == raft.RaftMessagesKey && h.controllerListener && h.d.Quorum != nil {
		return 0, 0, true
	}
	if key < 0 || int(key) >= len(h.apis) || h.apis[key] == nil {
		return 0, 0, false
	}
	a := h.apis[key]
	return a.min, a.max, true
}

// Handle implements network.Handler.
func (h *Handlers) Handle(ctx context.Context, req *network.Request) (kmsg.Response, error) {
	key := req.Header.APIKey
	if _, ok := req.Body.(*raft.RaftMessagesRequest); ok {
		return h.raftMessages(ctx, req)
	}
	if key < 0 || int(key) >= len(h.apis) || h.apis[key] == nil {
		return nil, fmt.Errorf("api key %d not served", key)
	}
	ctx = context.WithValue(ctx, requestKey{}, req) // for startWaiting
	rq := h.newRequestQuota(req)
	if rq == nil {
		if requestQuotaOf(ctx) != nil {
			// A broker's request handed to this node's controller
			// handlers: the broker applies the quotas.
			ctx = withRequestQuota(ctx, nil)
		}
		return h.apis[key].handle(h, ctx, req)
	}
	resp, err := h.apis[key].handle(h, withRequestQuota(ctx, rq), req)
	if err == nil {
		rq.finish(resp)
	}
	return resp, err
}

// waitingFor wraps a Forwarder: the request starts to wait when it is
// forwarded.
func waitingFor(f Forwarder) Forwarder {
	return func(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
		startWaiting(ctx)
		return f(ctx, req)
	}
}
