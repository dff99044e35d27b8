// Package controller is the KRaft quorum controller: it answers the requests
// that change cluster metadata (CreateTopics, DeleteTopics, CreatePartitions,
// AlterConfigs, IncrementalAlterConfigs, broker registration) by writing
// metadata records through the Raft quorum.
//
// It follows Kafka's ControllerResult pattern. A manager reads the current
// image and returns records plus a response; it never changes state. State
// changes only when the quorum commits the records and the controller's own
// listener replays them into a new image. One goroutine (the event loop)
// runs the requests one at a time, and a request's records are committed and
// replayed before the next request starts, so every manager sees the effect
// of all earlier ones.
//
// Only the active controller (the quorum leader, activated on its event
// loop) answers; it also runs the broker lifecycle (Kafka's
// ClusterControlManager and BrokerHeartbeatManager): registration,
// heartbeats, fencing on session expiry, controlled shutdown, and the
// leader/ISR changes they cause. Partition leaders change their ISR with
// AlterPartition; admins elect leaders with ElectLeaders and move replicas
// with AlterPartitionReassignments (reassign.go); the event loop
// periodically restores preferred leaders (auto.leader.rebalance.enable)
// and runs unclean elections where a topic allows them.
//
// Brokers do not read the controller: they follow the log with a
// metadata.Loader and get images through metadata.Publisher.
package controller

import (
	"context"
	crand "crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"gregor/internal/metadata"
	"gregor/internal/raft"
)

// Config configures the controller.
type Config struct {
	NodeID    int32
	ClusterID string
	// DefaultNumPartitions and DefaultReplicationFactor are num.partitions
	// and default.replication.factor, used for -1 in CreateTopics.
	DefaultNumPartitions     int32
	DefaultReplicationFactor int16
	// DeleteTopicEnable is delete.topic.enable.
	DeleteTopicEnable bool
	// CoResidentBroker says this process also runs the broker with NodeID
	// (process.roles=broker,controller). A registration of that broker
	// older than this process's start belongs to a dead incarnation, so
	// activation gives it no session and the restarted broker registers
	// at once instead of waiting out broker.session.timeout.ms.
	CoResidentBroker bool
	// LeaderOnlyISR starts each new partition's ISR with its leader alone,
	// instead of every live replica as Kafka does; the followers join
	// through AlterPartition once they have fetched (ISR expansion). It
	// dates from before followers replicated, when listing them in sync
	// would have let a leader change elect a replica without the data.
	// The server still sets it: until the followers join, an acks=all
	// produce to a new partition is held to min.insync.replicas against
	// the leader alone.
	LeaderOnlyISR bool
	// ValidateTopicConfig checks one topic config (value nil = delete). Its
	// error text is the message of an INVALID_CONFIG answer. Nil accepts all.
	ValidateTopicConfig func(name string, value *string) error
	// ValidateBrokerConfig checks one dynamic broker config; perBroker is
	// false for the cluster-wide default. Its error text is the message of
	// an INVALID_REQUEST answer (Kafka's KAFKA-13609 quirk). Nil accepts all.
	ValidateBrokerConfig func(name string, value *string, perBroker bool) error
	// ValidateGroupConfig checks a group's whole set of dynamic configs
	// after a change (the GROUP resource); its error is INVALID_CONFIG's
	// message. nil: group configs are refused.
	ValidateGroupConfig func(all map[string]string) error
	// IsListConfig reports whether a config is of type LIST (needed by
	// APPEND and SUBTRACT); ConfigDefault returns a config's default value.
	// Nil uses a built-in table of Kafka's list-typed topic configs.
	IsListConfig  func(resourceType int8, name string) bool
	ConfigDefault func(resourceType int8, name string) (string, bool)
	Logger        *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// BrokerSessionTimeout is broker.session.timeout.ms: the active
	// controller fences an unfenced broker that has not heartbeated for this
	// long. Zero disables session expiry (brokers registered by Bootstrap
	// never heartbeat).
	BrokerSessionTimeout time.Duration
	// FenceOnConnectionClose is gregor.broker.fence.on.connection.close:
	// the active controller fences a broker at once when the broker's side
	// closes the connection its latest heartbeat came on (its process died:
	// the kernel closes a killed process's sockets), instead of waiting out
	// BrokerSessionTimeout. Silence still waits for the session timeout.
	FenceOnConnectionClose bool
	// ProbeGone reports whether nothing listens at a broker listener's
	// host:port (rpc.ProbeGone). With FenceOnConnectionClose, a newly
	// active controller probes every unfenced broker's listeners and
	// fences at once a broker whose every listener refuses connections
	// (see probeBrokersOnActivation). Nil: no probes.
	ProbeGone func(ctx context.Context, addr string) bool
	// UncleanLeaderElectionEnable is the static
	// unclean.leader.election.enable (Kafka's default false); a topic's
	// config, this node's dynamic broker config and the cluster default
	// override it.
	UncleanLeaderElectionEnable bool
	// UncleanLeaderElectionCheckInterval is
	// unclean.leader.election.interval.ms: how often the active controller
	// tries an unclean election for leaderless partitions of topics that
	// allow one. Zero means Kafka's default, 5 minutes.
	UncleanLeaderElectionCheckInterval time.Duration
	// AutoLeaderRebalanceEnable is auto.leader.rebalance.enable (Kafka's
	// default true; the server passes it): every
	// LeaderImbalanceCheckInterval the active controller moves leadership
	// back to preferred replicas.
	AutoLeaderRebalanceEnable bool
	// LeaderImbalanceCheckInterval is leader.imbalance.check.interval.seconds;
	// zero means Kafka's default, 300 seconds.
	LeaderImbalanceCheckInterval time.Duration
	// LeaderImbalancePerBrokerPercentage is
	// leader.imbalance.per.broker.percentage (Kafka's default 10; the
	// server passes it): a broker's preferred leaderships are restored when
	// more than this percentage of the partitions it is the preferred
	// replica of are led by another broker (or by none).
	LeaderImbalancePerBrokerPercentage int
	// MinInsyncReplicas is the static min.insync.replicas (Kafka's default
	// 1): with eligible leader replicas, the ISR size below which replicas
	// that leave the ISR join the ELR, unless a topic or dynamic config
	// says otherwise.
	MinInsyncReplicas int32
	// Bootstrap is the metadata the first active controller writes to an
	// empty log, in one batch (Kafka's bootstrap.checkpoint, written by
	// `storage format`): metadata.version and, with --add-scram, SCRAM
	// credentials. Without a metadata.version FeatureLevelRecord of its
	// own it gets LatestMetadataVersion first.
	Bootstrap []metadata.Record
}

// Controller is the quorum controller of this node.
type Controller struct {
	cfg    Config
	q      raft.Quorum
	logger *slog.Logger
	// image holds the controller's replayed state: the quorum hands it every
	// committed batch (the controller's own and other leaders'), through
	// listener, which also tracks leadership.
	image    *metadata.Loader
	listener *stateListener

	events chan func()
	// leaderChanged wakes the event loop after the quorum reported a new
	// leader (capacity 1: one pending wake-up covers any number of changes).
	leaderChanged chan struct{}

	// leaderMu guards the quorum's latest leader report; active is true only
	// while that report names this node and the event loop has activated
	// the controller for that epoch.
	leaderMu    sync.Mutex
	leaderID    int32
	leaderEpoch int32
	active      atomic.Bool

	// Owned by the event loop.
	activeEpoch int32                    // epoch the controller was activated in, -1 if none
	startOffset int64                    // the quorum's high watermark when this controller started
	sessions    map[int32]*brokerSession // broker heartbeat state (Kafka's BrokerHeartbeatManager)
	placement   *rand.Rand               // the striped placer's randomness
	// nextLeaderBalance and nextUncleanCheck are when the periodic
	// preferred-leader rebalance and unclean election run next.
	nextLeaderBalance time.Time
	nextUncleanCheck  time.Time

	mu      sync.Mutex // guards started/stop
	started bool
	stop    context.CancelFunc
	stopped chan struct{} // closed when the event loop has exited
	// runCtx is the event loop's context (set by Start, read-only after):
	// goroutines the loop starts use it.
	runCtx context.Context
	wg     sync.WaitGroup
}

// New returns a controller writing through q and registers its state
// listener with q; register before q.Start so the replay reaches it.
func New(cfg Config, q raft.Quorum) *Controller {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.DefaultNumPartitions <= 0 {
		cfg.DefaultNumPartitions = 1
	}
	if cfg.DefaultReplicationFactor <= 0 {
		cfg.DefaultReplicationFactor = 1
	}
	if cfg.UncleanLeaderElectionCheckInterval <= 0 {
		cfg.UncleanLeaderElectionCheckInterval = 5 * time.Minute
	}
	if cfg.LeaderImbalanceCheckInterval <= 0 {
		cfg.LeaderImbalanceCheckInterval = 300 * time.Second
	}
	logger := cfg.Logger.With("component", "controller", "node", cfg.NodeID)
	c := &Controller{
		cfg:           cfg,
		q:             q,
		logger:        logger,
		image:         metadata.NewLoader(cfg.ClusterID, logger),
		events:        make(chan func()),
		leaderChanged: make(chan struct{}, 1),
		stopped:       make(chan struct{}),
		leaderID:      -1,
		leaderEpoch:   -1,
		activeEpoch:   -1,
		sessions:      map[int32]*brokerSession{},
		placement:     rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64())),
	}
	c.listener = newStateListener(c, c.image)
	q.Register(c.listener)
	return c
}

// Start starts the event loop, which runs until Close (ctx only bounds
// start-up). The quorum is started by its owner, before or after; requests
// fail with NOT_CONTROLLER until this node leads.
func (c *Controller) Start(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.started {
		return errors.New("controller already started")
	}
	c.started = true
	c.startOffset = c.q.HighWatermark()
	loopCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	c.stop = cancel
	c.runCtx = loopCtx
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer close(c.stopped)
		c.run(loopCtx)
	}()
	return nil
}

// Close stops the event loop and waits for it; requests in flight finish
// first, later ones get NOT_CONTROLLER. It does not close the quorum.
func (c *Controller) Close() error {
	c.mu.Lock()
	stop := c.stop
	c.mu.Unlock()
	if stop != nil {
		stop()
	}
	c.wg.Wait()
	return nil
}

// Image returns the controller's current metadata image (for tests and
// diagnostics; brokers use their own metadata.Loader).
func (c *Controller) Image() *metadata.Image { return c.image.Image() }

// run is the event loop: requests, leadership changes and timed work
// (broker session expiry, leader rebalance, unclean elections), one at a
// time. A leadership change is handled before any request
// that is already waiting, so requests see the activated state.
func (c *Controller) run(ctx context.Context) {
	wake := time.NewTimer(time.Hour)
	defer wake.Stop()
	for {
		select {
		case <-c.leaderChanged:
			c.handleLeaderChange(ctx)
		default:
		}
		wake.Reset(c.nextWake())
		select {
		case <-ctx.Done():
			return
		case <-c.leaderChanged:
			c.handleLeaderChange(ctx)
		case ev := <-c.events:
			ev()
		case <-wake.C:
			if c.needsActivation() {
				c.handleLeaderChange(ctx)
			}
			c.runTimers(ctx)
		}
	}
}

var errNotActive = errors.New("controller is not running")

// maxRecordsPerUserOp is Kafka's QuorumController.MAX_RECORDS_PER_USER_OP:
// a request needing more records fails with POLICY_VIOLATION.
const maxRecordsPerUserOp = 10000

// maxPartitionsPerBatch is Kafka's ReplicationControlManager.
// MAX_PARTITIONS_PER_BATCH: the partitions one CreateTopics or
// CreatePartitions request may add, checked before any is placed.
const maxPartitionsPerBatch = 10000

// excessiveBatchMessage is the message Kafka's controller gives a request
// whose records would pass maxRecordsPerUserOp (its BoundedListTooLongException
// becomes this PolicyViolationException).
const excessiveBatchMessage = "Unable to perform excessively large batch operation."

// submit runs fn on the event loop and waits for it. If ctx ends first, the
// caller gets ctx's error; an event whose caller already gave up is skipped.
func (c *Controller) submit(ctx context.Context, fn func()) error {
	c.mu.Lock()
	started := c.started
	c.mu.Unlock()
	if !started {
		return errNotActive
	}
	done := make(chan struct{})
	ran := false // written by the event before done is closed
	ev := func() {
		defer close(done)
		if ctx.Err() != nil {
			return
		}
		ran = true
		fn()
	}
	select {
	case c.events <- ev:
	case <-c.stopped:
		return errNotActive
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-done:
		if !ran {
			return ctx.Err()
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// write runs a manager on the event loop: build records and a response from
// the current image, commit the records (unless validateOnly), and return the
// response. A failed commit fails every item with fail's error.
func write[R any](c *Controller, ctx context.Context, validateOnly bool,
	manage func(img *metadata.Image) ([]metadata.Record, R), fail func(*kerr.Error) R) R {
	var resp R
	err := c.submit(ctx, func() {
		if !c.active.Load() {
			resp = fail(kerr.NotController)
			return
		}
		records, r := manage(c.image.Image())
		if len(records) > maxRecordsPerUserOp {
			// Kafka's BoundedList limit: one request is one atomic batch.
			resp = fail(kerr.PolicyViolation)
			return
		}
		if len(records) > 0 && !validateOnly {
			if _, err := c.q.Append(ctx, records); err != nil {
				c.logger.Warn("metadata append failed", "records", len(records), "err", err)
				r = fail(kafkaError(err))
			}
		}
		resp = r
	})
	if err != nil {
		return fail(kafkaError(err))
	}
	return resp
}

// kafkaError maps a commit or scheduling failure to the code every item of
// the request is answered with.
func kafkaError(err error) *kerr.Error {
	switch {
	case errors.Is(err, raft.ErrNotLeader), errors.Is(err, errNotActive):
		return kerr.NotController
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return kerr.RequestTimedOut
	case errors.Is(err, raft.ErrBatchTooLarge):
		return kerr.PolicyViolation
	}
	return kerr.UnknownServerError
}

// apiError is one item's answer: a Kafka error and its message (nil message
// means none, as Kafka's ApiError.fromThrowable gives for default messages).
type apiError struct {
	err     *kerr.Error
	message *string
}

func (e apiError) code() int16 {
	if e.err == nil {
		return 0
	}
	return e.err.Code
}

func errWith(err *kerr.Error, format string, args ...any) apiError {
	m := fmt.Sprintf(format, args...)
	return apiError{err: err, message: &m}
}

// errDefault is an error answered with the code's default message, as
// Kafka's ApiError(Errors) constructor does.
func errDefault(err *kerr.Error) apiError {
	m := err.Description
	return apiError{err: err, message: &m}
}

// errBare is an error without a message.
func errBare(err *kerr.Error) apiError { return apiError{err: err} }

// newTopicID returns a random topic id as Kafka's Uuid.randomUuid does: a
// version 4 UUID that is not the zero id, not the reserved metadata topic id,
// and whose base64 form does not start with '-'.
func newTopicID() [16]byte {
	for {
		var id [16]byte
		if _, err := crand.Read(id[:]); err != nil {
			panic(fmt.Sprintf("crypto/rand: %v", err)) // never fails on supported platforms
		}
		id[6] = id[6]&0x0f | 0x40
		id[8] = id[8]&0x3f | 0x80
		if id == ([16]byte{}) || id == metadataTopicID {
			continue
		}
		if base64.RawURLEncoding.EncodeToString(id[:])[0] == '-' {
			continue
		}
		return id
	}
}

// metadataTopicID is Kafka's Uuid.METADATA_TOPIC_ID (0, 1), the id of
// __cluster_metadata.
var metadataTopicID = [16]byte{15: 1}
