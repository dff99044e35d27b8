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

	"gregor/internal/config"
	"gregor/internal/controller"
	"gregor/internal/coordinator"
	"gregor/internal/coordinator/producerid"
	"gregor/internal/log"
	"gregor/internal/network"
	"gregor/internal/replica"
)

// Deps are the components the handlers delegate to.
type Deps struct {
	NodeID     int32
	ClusterID  string
	Broker     *config.Broker
	Replica    *replica.Manager
	Controller *controller.Controller
	Logs       *log.Manager
	// ProducerIDs hands out producer ids for InitProducerId.
	ProducerIDs *producerid.Manager
	Logger      *slog.Logger

	// Groups runs the group coordinator's shards (__consumer_offsets).
	Groups *coordinator.Runtime
}

// api is one Kafka API served by a listener: its key, the versions served,
// and the function that answers it.
type api struct {
	key      int16
	min, max int16
	handle   func(h *Handlers, ctx context.Context, req *network.Request) (kmsg.Response, error)
}

// Handlers serves one listener's set of APIs; it implements network.Handler.
type Handlers struct {
	d    Deps
	apis [kmsg.MaxKey + 1]*api
	// controllerListener marks the handlers of a controller listener.
	controllerListener bool
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
	&offsetCommitAPI, &offsetFetchAPI, &offsetDeleteAPI,
	// Consumer groups, KIP-848 protocol.
	&consumerGroupHeartbeatAPI, &consumerGroupDescribeAPI,
}

// controllerAPIs are served on the controller listener: what Kafka's
// controllers answer for admin clients that bootstrap from controllers
// (KIP-919). Produce and fetch of user data are brokers' work.
var controllerAPIs = []*api{
	&apiVersionsAPI, &createTopicsAPI, &deleteTopicsAPI, &createPartitionsAPI,
	&describeConfigsAPI, &alterConfigsAPI, &incrementalAlterConfigsAPI,
	&describeClusterAPI,
}

// NewBroker returns the handlers of a broker listener.
func NewBroker(d Deps) *Handlers { return newHandlers(d, brokerAPIs) }

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
	h := &Handlers{d: d}
	for _, a := range apis {
		h.apis[a.key] = a
	}
	return h
}

// VersionRange implements network.Handler.
func (h *Handlers) VersionRange(key int16) (min, max int16, ok bool) {
	if key < 0 || int(key) >= len(h.apis) || h.apis[key] == nil {
		return 0, 0, false
	}
	a := h.apis[key]
	return a.min, a.max, true
}

// Handle implements network.Handler.
func (h *Handlers) Handle(ctx context.Context, req *network.Request) (kmsg.Response, error) {
	key := req.Header.APIKey
	if key < 0 || int(key) >= len(h.apis) || h.apis[key] == nil {
		return nil, fmt.Errorf("api key %d not served", key)
	}
	return h.apis[key].handle(h, ctx, req)
}
