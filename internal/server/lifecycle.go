package server

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/log"
	"gregor/internal/metadata"
)

// fencedHeartbeatInterval is how often a fenced broker heartbeats: it is
// waiting to be unfenced, which a heartbeat carries (Kafka's lifecycle
// manager also heartbeats at once while catching up).
const fencedHeartbeatInterval = 50 * time.Millisecond

// controlledShutdownWait bounds the wait for the controller to move this
// broker's leaderships away on shutdown.
const controlledShutdownWait = 10 * time.Second

// lifecycle is the broker's side of its lifecycle with the controller
// (Kafka's BrokerLifecycleManager): register with a fresh incarnation id,
// heartbeat with the metadata offset the broker has applied, learn when it
// is unfenced, and on shutdown ask for a controlled shutdown.
type lifecycle struct {
	s           *Server
	logger      *slog.Logger
	incarnation [16]byte

	epoch  atomic.Int64 // broker epoch of the current registration; -1 before
	fenced atomic.Bool
	// answered is when (UnixNano) the controller last answered a
	// heartbeat without error; 0 before the first.
	answered     atomic.Int64
	shuttingDown atomic.Bool
	shutDownOK   chan struct{} // closed when the controller allows the shutdown
	okOnce       sync.Once
	unfenced     chan struct{} // closed the first time the broker is unfenced
	unfenceOnce  sync.Once

	// link carries the heartbeats to a remote active controller (owned by
	// the run loop).
	link *controllerLink

	wake chan struct{} // a heartbeat now (shutdown requested)
	stop context.CancelFunc
	done chan struct{}
}

func newLifecycle(s *Server) *lifecycle {
	l := &lifecycle{
		s:          s,
		logger:     s.logger.With("component", "broker-lifecycle"),
		shutDownOK: make(chan struct{}),
		unfenced:   make(chan struct{}),
		done:       make(chan struct{}),
		wake:       make(chan struct{}, 1),
		link:       newControllerLink(s.cfg.NodeID, s.controllerClient),
	}
	rand.Read(l.incarnation[:])
	l.epoch.Store(-1)
	l.fenced.Store(true)
	return l
}

func (l *lifecycle) brokerEpoch() int64 { return l.epoch.Load() }

// start registers and heartbeats until the controller unfences the broker
// (it has caught up with the metadata log), bounded by ctx and
// initial.broker.registration.timeout.ms.
func (l *lifecycle) start(ctx, runCtx context.Context) error {
	wait := time.Duration(l.s.cfg.InitialBrokerRegistrationTimeoutMs) * time.Millisecond
	if wait <= 0 {
		wait = 60 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	if err := l.register(ctx); err != nil {
		return err
	}
	loopCtx, stop := context.WithCancel(runCtx)
	l.stop = stop
	go func() {
		defer close(l.done)
		l.run(loopCtx)
	}()
	select {
	case <-l.unfenced:
	case <-ctx.Done():
		return fmt.Errorf("broker %d was not unfenced by the controller in time: %w", l.s.cfg.NodeID, ctx.Err())
	}
	// Serve clients only once this broker's own image shows it unfenced,
	// so its first Metadata answers list it.
	shown := &unfencedInImage{nodeID: l.s.cfg.NodeID, epoch: l.epoch.Load(), shown: make(chan struct{})}
	l.s.loader.AddPublisher(shown) // publishes the current image at once
	select {
	case <-shown.shown:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("broker %d: unfenced, but its metadata image does not show it yet: %w", l.s.cfg.NodeID, ctx.Err())
	}
}

// unfencedInImage is a metadata publisher that closes shown once an image
// shows the broker registered in epoch and unfenced; it does nothing after.
// The loader calls its publishers one at a time, so the check-then-close
// needs no lock.
type unfencedInImage struct {
	nodeID int32
	epoch  int64
	shown  chan struct{}
}

func (u *unfencedInImage) Publish(_ *metadata.Delta, img *metadata.Image) {
	select {
	case <-u.shown:
		return
	default:
	}
	if reg, ok := img.Brokers[u.nodeID]; ok && !reg.Fenced && reg.Epoch == u.epoch {
		close(u.shown)
	}
}

// register sends BrokerRegistration until the active controller accepts it.
func (l *lifecycle) register(ctx context.Context) error {
	s := l.s
	req := kmsg.NewPtrBrokerRegistrationRequest()
	req.Version = 3
	req.BrokerID, req.ClusterID, req.IncarnationID = s.cfg.NodeID, s.clusterID, l.incarnation
	// The epoch the previous incarnation wrote at its clean shutdown (-1:
	// none): the controller keeps this broker in the ELRs it is in only
	// after a clean shutdown (KIP-966).
	req.PreviousBrokerEpoch = -1
	if s.logs != nil {
		req.PreviousBrokerEpoch = s.logs.PreviousBrokerEpoch()
	}
	if s.cfg.BrokerRack != "" {
		rack := s.cfg.BrokerRack
		req.Rack = &rack
	}
	for _, al := range s.cfg.AdvertisedListeners {
		port := al.Port
		if a, ok := s.brokerNet.Addr(al.Name).(*net.TCPAddr); ok && port == 0 {
			port = a.Port
		}
		rl := kmsg.NewBrokerRegistrationRequestListener()
		rl.Name, rl.Host, rl.Port = al.Name, al.Host, uint16(port)
		rl.SecurityProtocol = securityProtocolID(s.cfg.ListenerSecurityProtocolMap[al.Name])
		req.Listeners = append(req.Listeners, rl)
	}
	// Every feature this build supports, so the controller refuses the
	// registration if a finalized level is outside its range, and lets
	// UpdateFeatures raise a level only if every broker supports it.
	for _, sf := range metadata.SupportedFeatures() {
		f := kmsg.NewBrokerRegistrationRequestFeature()
		f.Name, f.MinSupportedVersion, f.MaxSupportedVersion = sf.Name, sf.Min, sf.Max
		req.Features = append(req.Features, f)
	}
	// The log directories' ids (meta.properties directory.id), which
	// the controller checks are unique across brokers.
	for _, dir := range s.cfg.LogDirs {
		mp, err := log.ReadMetaProperties(dir)
		if err != nil {
			return fmt.Errorf("register broker %d: %w", s.cfg.NodeID, err)
		}
		id, err := base64.RawURLEncoding.DecodeString(mp.DirectoryID)
		if err != nil || len(id) != 16 {
			return fmt.Errorf("register broker %d: %s/meta.properties: invalid directory.id %q", s.cfg.NodeID, dir, mp.DirectoryID)
		}
		req.LogDirs = append(req.LogDirs, [16]byte(id))
	}
	var resp *kmsg.BrokerRegistrationResponse
	for logged := false; ; {
		kresp, err := s.controllerRequest(ctx, req)
		if err != nil {
			return fmt.Errorf("register broker %d: %w", s.cfg.NodeID, err)
		}
		resp = kresp.(*kmsg.BrokerRegistrationResponse)
		err = kerr.ErrorForCode(resp.ErrorCode)
		if err == nil {
			break
		}
		// The previous run of this broker still has a live session (a
		// restart within broker.session.timeout.ms): wait for it to
		// expire, as Kafka's lifecycle manager does. A second process
		// with the same node.id fails here at the registration timeout.
		if !errors.Is(err, kerr.DuplicateBrokerRegistration) {
			return fmt.Errorf("register broker %d: %w", s.cfg.NodeID, err)
		}
		if !logged {
			l.logger.Warn("another incarnation of this broker id is still registered; retrying until its session expires", "err", err)
			logged = true
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("register broker %d: %w (is another process running with node.id=%d?)", s.cfg.NodeID, err, s.cfg.NodeID)
		case <-time.After(200 * time.Millisecond):
		}
	}
	l.epoch.Store(resp.BrokerEpoch)
	if s.logs != nil {
		s.logs.SetBrokerEpoch(resp.BrokerEpoch)
	}
	l.fenced.Store(true)
	l.logger.Info("registered with the controller", "brokerEpoch", resp.BrokerEpoch)
	return nil
}

func securityProtocolID(name string) int16 {
	switch name {
	case "SSL":
		return 1
	case "SASL_PLAINTEXT":
		return 2
	case "SASL_SSL":
		return 3
	default:
		return 0
	}
}

// run heartbeats until ctx ends: quickly while fenced, every
// broker.heartbeat.interval.ms once unfenced.
func (l *lifecycle) run(ctx context.Context) {
	defer l.link.close()
	interval := time.Duration(l.s.cfg.BrokerHeartbeatIntervalMs) * time.Millisecond
	for {
		l.heartbeat(ctx)
		next := interval
		if l.fenced.Load() || l.shuttingDown.Load() {
			next = fencedHeartbeatInterval
		}
		select {
		case <-ctx.Done():
			return
		case <-l.wake:
		case <-time.After(next):
		}
	}
}

func (l *lifecycle) heartbeat(ctx context.Context) {
	s := l.s
	req := kmsg.NewPtrBrokerHeartbeatRequest()
	req.Version = 1
	req.BrokerID, req.BrokerEpoch = s.cfg.NodeID, l.epoch.Load()
	req.CurrentMetadataOffset = s.loader.Image().Offset
	req.WantShutdown = l.shuttingDown.Load()
	hctx, cancel := context.WithTimeout(ctx, time.Duration(s.cfg.BrokerSessionTimeoutMs)*time.Millisecond)
	defer cancel()
	kresp, err := s.controllerRequestOn(hctx, req, l.link)
	if err != nil {
		if ctx.Err() == nil {
			l.logger.Warn("heartbeat failed", "err", err)
		}
		return
	}
	resp := kresp.(*kmsg.BrokerHeartbeatResponse)
	switch err := kerr.ErrorForCode(resp.ErrorCode); {
	case err == nil:
	case errors.Is(err, kerr.StaleBrokerEpoch), errors.Is(err, kerr.BrokerIDNotRegistered):
		// The controller lost or replaced the registration (say, it
		// fenced a broker that was partitioned away): register again.
		l.logger.Warn("registration no longer valid, registering again", "err", err)
		if err := l.register(hctx); err != nil {
			l.logger.Warn("registering again failed", "err", err)
		}
		return
	default:
		l.logger.Warn("heartbeat refused", "err", err)
		return
	}
	l.answered.Store(time.Now().UnixNano())
	wasFenced := l.fenced.Swap(resp.IsFenced)
	if wasFenced && !resp.IsFenced {
		l.logger.Info("unfenced by the controller", "brokerEpoch", req.BrokerEpoch, "metadataOffset", req.CurrentMetadataOffset)
		l.unfenceOnce.Do(func() { close(l.unfenced) })
	} else if !wasFenced && resp.IsFenced {
		if req.WantShutdown {
			// The last step of a controlled shutdown: expected, not a fault.
			l.logger.Info("fenced by the controller for the controlled shutdown", "brokerEpoch", req.BrokerEpoch)
		} else {
			l.logger.Warn("fenced by the controller", "brokerEpoch", req.BrokerEpoch)
		}
	}
	if req.WantShutdown && resp.ShouldShutdown {
		l.okOnce.Do(func() { close(l.shutDownOK) })
	}
}

// sinceAnswered is how long ago the controller last answered a heartbeat;
// 0 before the first answer (the broker is fenced until then anyway).
func (l *lifecycle) sinceAnswered() time.Duration {
	at := l.answered.Load()
	if at == 0 {
		return 0
	}
	return time.Since(time.Unix(0, at))
}

// shutdown asks the controller for a controlled shutdown and waits until it
// has moved this broker's leaderships away (or a bound passes), then stops
// heartbeating. The last live broker of the cluster does not ask unless
// its own process runs the active controller: no broker could take its
// leaderships, and when the rest of the cluster has stopped the controller
// quorum is usually gone with it, so the wait would only run out its
// bound.
func (l *lifecycle) shutdown(ctx context.Context) {
	if l.stop == nil {
		return
	}
	if l.epoch.Load() >= 0 && !l.fenced.Load() && !l.lastLiveBroker() {
		l.shuttingDown.Store(true)
		select {
		case l.wake <- struct{}{}:
		default:
		}
		wait, cancel := context.WithTimeout(ctx, controlledShutdownWait)
		select {
		case <-l.shutDownOK:
			l.logger.Info("controlled shutdown complete")
		case <-wait.Done():
			l.logger.Warn("controlled shutdown not confirmed by the controller in time; shutting down anyway")
		}
		cancel()
	}
	l.stop()
	<-l.done
}

// lastLiveBroker reports whether the metadata image knows no unfenced broker
// but this one, and no controller of this process is active (a single
// node's in-process controller fences it at once).
func (l *lifecycle) lastLiveBroker() bool {
	if c := l.s.controller; c != nil && c.Active() {
		return false
	}
	for id, b := range l.s.loader.Image().Brokers {
		if id != l.s.cfg.NodeID && !b.Fenced {
			return false
		}
	}
	l.logger.Info("no other live broker: shutting down without a controlled shutdown")
	return true
}
