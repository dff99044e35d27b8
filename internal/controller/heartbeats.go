package controller

import (
	"context"
	"fmt"
	"math"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/metadata"
)

// brokerSession is the active controller's in-memory state of one broker
// (Kafka's BrokerHeartbeatState). Whether the broker is fenced is the
// registration's, in the image; the rest is not in the log, so a new active
// controller starts every broker afresh.
type brokerSession struct {
	lastContact time.Time
	// metadataOffset is the metadata offset the broker last reported, -1
	// if none.
	metadataOffset int64
	// controlledShutdownOffset is the offset at which the broker's
	// controlled shutdown completes (its leaderships are moved by then), -1
	// if it is not shutting down.
	controlledShutdownOffset int64
	// conn is the connection the broker's latest heartbeat came on (its
	// network.Request.PeerClosed), watched while FenceOnConnectionClose is
	// on; stopWatch ends the watch. Nil when none is watched.
	conn      <-chan struct{}
	stopWatch func()
}

func newBrokerSession(now time.Time) *brokerSession {
	return &brokerSession{lastContact: now, metadataOffset: -1, controlledShutdownOffset: -1}
}

// unwatch stops watching the session's heartbeat connection.
func (s *brokerSession) unwatch() {
	if s.stopWatch != nil {
		s.stopWatch()
	}
	s.conn, s.stopWatch = nil, nil
}

// dropSessions forgets every broker session (leadership moved), ending
// their connection watches.
func (c *Controller) dropSessions() {
	for _, s := range c.sessions {
		s.unwatch()
	}
	c.sessions = map[int32]*brokerSession{}
}

func (s *brokerSession) shuttingDown() bool { return s.controlledShutdownOffset >= 0 }

// touch records a contact (Kafka's BrokerHeartbeatManager.touch); a fenced
// broker leaves controlled shutdown.
func (s *brokerSession) touch(now time.Time, fenced bool, metadataOffset int64) {
	s.lastContact = now
	s.metadataOffset = metadataOffset
	if fenced {
		s.controlledShutdownOffset = -1
	}
}

// session returns a broker's session, starting one (as Kafka's replay of a
// registration does) for a broker registered since activation by other means.
func (c *Controller) session(id int32) *brokerSession {
	s := c.sessions[id]
	if s == nil {
		s = newBrokerSession(c.cfg.Now())
		c.sessions[id] = s
	}
	return s
}

// hasValidSession is Kafka's BrokerHeartbeatManager.hasValidSession: an
// unfenced broker that heartbeated within the session timeout.
func (c *Controller) hasValidSession(img *metadata.Image, id int32) bool {
	b, s := img.Brokers[id], c.sessions[id]
	if b == nil || s == nil || b.Fenced {
		return false
	}
	return c.cfg.BrokerSessionTimeout <= 0 || !c.cfg.Now().After(s.lastContact.Add(c.cfg.BrokerSessionTimeout))
}

// brokerState is Kafka's BrokerControlState.
type brokerState int

const (
	stateFenced brokerState = iota
	stateUnfenced
	stateControlledShutdown
	stateShutdownNow
)

func (s brokerState) fenced() bool { return s == stateFenced || s == stateShutdownNow }

func (c *Controller) currentBrokerState(b *metadata.BrokerRegistration, s *brokerSession) brokerState {
	switch {
	case s.shuttingDown():
		return stateControlledShutdown
	case b.Fenced:
		return stateFenced
	}
	return stateUnfenced
}

// nextBrokerState is Kafka's BrokerHeartbeatManager.calculateNextBrokerState.
func (c *Controller) nextBrokerState(img *metadata.Image, cur brokerState, s *brokerSession, req *kmsg.BrokerHeartbeatRequest, registrationOffset int64) brokerState {
	id := req.BrokerID
	switch cur {
	case stateFenced:
		switch {
		case req.WantShutdown:
			return stateShutdownNow
		case !req.WantFence && req.CurrentMetadataOffset >= registrationOffset:
			return stateUnfenced
		}
		return stateFenced
	case stateUnfenced:
		switch {
		case req.WantFence && req.WantShutdown:
			return stateShutdownNow
		case req.WantFence:
			return stateFenced
		case req.WantShutdown && hasLeaderships(img, id):
			return stateControlledShutdown
		case req.WantShutdown:
			return stateShutdownNow
		}
		return stateUnfenced
	case stateControlledShutdown:
		// The broker may stop once it leads nothing and every active broker
		// has seen the records that moved its leaderships.
		if hasLeaderships(img, id) || s.controlledShutdownOffset > c.lowestActiveOffset(img) {
			return stateControlledShutdown
		}
		return stateShutdownNow
	}
	return stateShutdownNow
}

// lowestActiveOffset is the lowest metadata offset reported by an active
// (unfenced, not shutting down) broker; MaxInt64 if there is none.
func (c *Controller) lowestActiveOffset(img *metadata.Image) int64 {
	lowest := int64(math.MaxInt64)
	for id, s := range c.sessions {
		if b := img.Brokers[id]; b != nil && !b.Fenced && !s.shuttingDown() {
			lowest = min(lowest, s.metadataOffset)
		}
	}
	return lowest
}

// BrokerHeartbeat handles a broker's heartbeat (Kafka's
// ReplicationControlManager.processBrokerHeartbeat): it keeps the broker's
// session alive and moves it between fenced, unfenced, controlled shutdown
// and shutdown, writing the registration and partition changes that go
// with each move.
//
// peerClosed is closed when the broker closes the connection the heartbeat
// came on (nil for an in-process heartbeat); see heartbeatConnClosed.
func (c *Controller) BrokerHeartbeat(ctx context.Context, req *kmsg.BrokerHeartbeatRequest, peerClosed <-chan struct{}) *kmsg.BrokerHeartbeatResponse {
	resp, err := c.heartbeat(ctx, req, peerClosed)
	if err != nil {
		c.logger.Info("broker heartbeat refused", "broker", req.BrokerID, "err", err)
		resp.ErrorCode = errorCode(err)
	}
	return resp
}

// heartbeat answers a heartbeat; on error the response holds the defaults
// and the error wraps the *kerr.Error to answer with.
func (c *Controller) heartbeat(ctx context.Context, req *kmsg.BrokerHeartbeatRequest, peerClosed <-chan struct{}) (*kmsg.BrokerHeartbeatResponse, error) {
	resp := kmsg.NewPtrBrokerHeartbeatResponse()
	resp.Version = req.Version
	var failure error
	err := c.submit(ctx, func() {
		if !c.active.Load() {
			failure = kerr.NotController
			return
		}
		failure = c.brokerHeartbeat(ctx, req, resp, peerClosed)
	})
	if err != nil {
		return resp, fmt.Errorf("%w: %v", kafkaError(err), err)
	}
	return resp, failure
}

func (c *Controller) brokerHeartbeat(ctx context.Context, req *kmsg.BrokerHeartbeatRequest, resp *kmsg.BrokerHeartbeatResponse, peerClosed <-chan struct{}) error {
	img := c.image.Image()
	id := req.BrokerID
	b := img.Brokers[id]
	registrationOffset, ok := c.listener.registrationOffset(id)
	if b == nil || !ok {
		return fmt.Errorf("%w: Receive a heartbeat from broker %d before registration", kerr.StaleBrokerEpoch, id)
	}
	if b.Epoch != req.BrokerEpoch {
		return fmt.Errorf("%w: Expected broker epoch %d, but got broker epoch %d", kerr.StaleBrokerEpoch, b.Epoch, req.BrokerEpoch)
	}
	s := c.session(id)
	cur := c.currentBrokerState(b, s)
	next := c.nextBrokerState(img, cur, s, req, registrationOffset)
	var records []metadata.Record
	if cur != next {
		switch next {
		case stateFenced, stateShutdownNow:
			records = c.brokerFencedRecords(img, id)
		case stateUnfenced:
			records = c.brokerUnfencedRecords(img, id, req.BrokerEpoch)
		case stateControlledShutdown:
			records = c.brokerInControlledShutdownRecords(img, id, req.BrokerEpoch)
		}
		c.logger.Info("broker state change", "broker", id, "from", cur, "to", next, "records", len(records))
	}
	lastOffset := c.q.HighWatermark() - 1
	if len(records) > 0 {
		off, err := c.q.Append(ctx, records)
		if err != nil {
			return fmt.Errorf("%w: commit the state change of broker %d: %v", kafkaError(err), id, err)
		}
		lastOffset = off
	}
	s.touch(c.cfg.Now(), next.fenced(), req.CurrentMetadataOffset)
	if s.conn != peerClosed {
		// The broker heartbeats on another connection (or in process): the
		// old one's close no longer says anything about the broker.
		s.unwatch()
		if c.cfg.FenceOnConnectionClose && peerClosed != nil {
			s.conn, s.stopWatch = peerClosed, c.watchHeartbeatConn(id, req.BrokerEpoch, peerClosed)
		}
	}
	if next == stateControlledShutdown && !s.shuttingDown() {
		// Kafka's processBatchEndOffset: the shutdown completes once every
		// active broker has seen the records that moved the leaderships.
		s.controlledShutdownOffset = lastOffset
	}
	resp.IsCaughtUp = req.CurrentMetadataOffset >= registrationOffset
	resp.IsFenced = next.fenced()
	resp.ShouldShutdown = next == stateShutdownNow
	return nil
}

func (s brokerState) String() string {
	switch s {
	case stateFenced:
		return "FENCED"
	case stateUnfenced:
		return "UNFENCED"
	case stateControlledShutdown:
		return "CONTROLLED_SHUTDOWN"
	}
	return "SHUTDOWN_NOW"
}

// staleBroker returns the unfenced broker whose session expired longest ago
// (Kafka's findOneStaleBroker), or -1.
func (c *Controller) staleBroker(img *metadata.Image) int32 {
	if c.cfg.BrokerSessionTimeout <= 0 {
		return -1
	}
	now := c.cfg.Now()
	stale, oldest := int32(-1), time.Time{}
	for _, id := range img.SortedBrokerIDs() {
		if img.Brokers[id].Fenced {
			continue
		}
		s := c.session(id)
		if !now.After(s.lastContact.Add(c.cfg.BrokerSessionTimeout)) {
			continue
		}
		if stale < 0 || s.lastContact.Before(oldest) {
			stale, oldest = id, s.lastContact
		}
	}
	return stale
}

// fenceStaleBrokers fences every broker whose session expired, one batch per
// broker as Kafka's maybeFenceOneStaleBroker, so each fencing's effect on
// leadership is committed before the next is decided.
func (c *Controller) fenceStaleBrokers(ctx context.Context) {
	if !c.active.Load() {
		return
	}
	for {
		img := c.image.Image()
		id := c.staleBroker(img)
		if id < 0 {
			return
		}
		c.logger.Info("fencing broker because its session has timed out", "broker", id, "timeout", c.cfg.BrokerSessionTimeout)
		if _, err := c.q.Append(ctx, c.brokerFencedRecords(img, id)); err != nil {
			c.logger.Warn("fencing a stale broker failed", "broker", id, "err", err)
			return
		}
		c.session(id).touch(c.cfg.Now(), true, c.session(id).metadataOffset)
	}
}

// watchHeartbeatConn waits, in a goroutine owned by c.wg, until the broker
// closes the connection its heartbeats come on, then hands the close to the
// event loop. The returned func stops the watch.
func (c *Controller) watchHeartbeatConn(id int32, epoch int64, peerClosed <-chan struct{}) (stop func()) {
	stopped := make(chan struct{})
	ctx := c.runCtx
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		select {
		case <-peerClosed:
		case <-stopped:
			return
		case <-ctx.Done():
			return
		}
		// Fails only when the event loop stops: nothing to fence then.
		_ = c.submit(ctx, func() { c.heartbeatConnClosed(ctx, id, epoch, peerClosed) })
	}()
	return sync.OnceFunc(func() { close(stopped) })
}

// heartbeatConnClosed fences a broker whose side closed the connection its
// latest heartbeat came on, if it is still registered in that epoch and
// unfenced. This is Gregor's, not Kafka's (Kafka fences on silence only):
// the close is a fact the kernel reports, not a guess from a missing
// heartbeat. A broker process that dies has its sockets closed by its
// kernel (FIN, or RST with unread data); a live broker keeps its heartbeat
// connection open and closes it only when shutting down (after its
// controlled shutdown has fenced it) or after a failed heartbeat. Should
// a live broker's connection be closed anyway (a reset on the path), the
// broker's next heartbeat, on a new connection and in the same epoch,
// finds it fenced and unfences it once caught up, as after any fencing: it
// loses its leaderships for a moment, never its registration or data. A
// broker that stays silent on an open connection is fenced by the session
// timeout only (fenceStaleBrokers).
func (c *Controller) heartbeatConnClosed(ctx context.Context, id int32, epoch int64, peerClosed <-chan struct{}) {
	s := c.sessions[id]
	if s == nil || s.conn != peerClosed {
		return // a later heartbeat came on another connection, or leadership moved
	}
	s.unwatch()
	if !c.active.Load() {
		return
	}
	img := c.image.Image()
	if b := img.Brokers[id]; b == nil || b.Epoch != epoch || b.Fenced {
		return
	}
	c.logger.Info("fencing broker because it closed the connection of its heartbeats", "broker", id, "brokerEpoch", epoch)
	if _, err := c.q.Append(ctx, c.brokerFencedRecords(img, id)); err != nil {
		c.logger.Warn("fencing a broker whose heartbeat connection closed failed", "broker", id, "err", err)
		return
	}
	s.touch(c.cfg.Now(), true, s.metadataOffset)
}

// probeBrokersOnActivation runs when this controller became active in
// epoch at activatedAt. A broker whose process died before it heartbeated
// to this controller has no heartbeat connection here to close: typically
// the broker half of the previous active controller's process (its
// heartbeats went to its own controller, in process), or a broker that
// died during the failover. Rather than wait out the session timeout for
// it, the controller dials each unfenced broker's listeners once, in
// goroutines owned by c.wg, and fences at once a broker whose every
// listener refuses connections (nothing listens there: the process is
// gone) and that has not heartbeated since activation. A live broker's
// listeners accept, and it heartbeats to the new controller within
// broker.heartbeat.interval.ms anyway. Only with FenceOnConnectionClose.
func (c *Controller) probeBrokersOnActivation(epoch int32, activatedAt time.Time) {
	if !c.cfg.FenceOnConnectionClose || c.cfg.ProbeGone == nil || c.cfg.BrokerSessionTimeout <= 0 {
		return
	}
	img := c.image.Image()
	ctx := c.runCtx
	for _, id := range img.SortedBrokerIDs() {
		b := img.Brokers[id]
		if b.Fenced || len(b.Listeners) == 0 || (id == c.cfg.NodeID && c.cfg.CoResidentBroker) {
			continue
		}
		addrs := make([]string, 0, len(b.Listeners))
		for _, l := range b.Listeners {
			addrs = append(addrs, net.JoinHostPort(l.Host, strconv.Itoa(l.Port)))
		}
		brokerEpoch := b.Epoch
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			for _, addr := range addrs {
				if !c.cfg.ProbeGone(ctx, addr) {
					return
				}
			}
			// Fails only when the event loop stops: nothing to fence then.
			_ = c.submit(ctx, func() { c.brokerGone(ctx, id, brokerEpoch, epoch, activatedAt) })
		}()
	}
}

// brokerGone fences a broker whose listeners all refused connections, if
// this controller is still active in the epoch of the probe, the broker is
// still registered in the same epoch and unfenced, and it has not
// heartbeated since activation.
func (c *Controller) brokerGone(ctx context.Context, id int32, brokerEpoch int64, epoch int32, activatedAt time.Time) {
	if !c.active.Load() || c.activeEpoch != epoch {
		return
	}
	img := c.image.Image()
	if b := img.Brokers[id]; b == nil || b.Epoch != brokerEpoch || b.Fenced {
		return
	}
	s := c.session(id)
	if s.lastContact.After(activatedAt) {
		return
	}
	c.logger.Info("fencing broker because its listeners refuse connections (its process is gone) and it has not heartbeated to this new active controller",
		"broker", id, "brokerEpoch", brokerEpoch)
	if _, err := c.q.Append(ctx, c.brokerFencedRecords(img, id)); err != nil {
		c.logger.Warn("fencing a broker whose listeners refuse connections failed", "broker", id, "err", err)
		return
	}
	s.touch(c.cfg.Now(), true, s.metadataOffset)
}

// untilSessionExpiry is how long until the earliest broker session expires
// (an hour if none can).
func (c *Controller) untilSessionExpiry() time.Duration {
	if c.cfg.BrokerSessionTimeout <= 0 {
		return time.Hour
	}
	img := c.image.Image()
	var earliest time.Time
	for id, s := range c.sessions {
		if b := img.Brokers[id]; b == nil || b.Fenced {
			continue
		}
		if earliest.IsZero() || s.lastContact.Before(earliest) {
			earliest = s.lastContact
		}
	}
	if earliest.IsZero() {
		return time.Hour
	}
	// Expired means strictly after lastContact+timeout.
	return max(earliest.Add(c.cfg.BrokerSessionTimeout).Sub(c.cfg.Now())+time.Millisecond, time.Millisecond)
}

// hasLeaderships reports whether a broker leads any partition, in O(1)
// (the image counts leaderships): a broker in controlled shutdown asks at
// every heartbeat.
func hasLeaderships(img *metadata.Image, id int32) bool {
	return img.Topics.LeaderCount(id) > 0
}

// brokerFencedRecords is Kafka's handleBrokerFenced: the broker leaves every
// ISR and leadership, then its registration is fenced.
func (c *Controller) brokerFencedRecords(img *metadata.Image, id int32) []metadata.Record {
	records := c.leaderAndIsrUpdates(img, id, metadata.NoLeader, partitionsWhere(img, func(p *metadata.Partition) bool {
		return slices.Contains(p.ISR, id)
	}))
	return append(records, &metadata.BrokerRegistrationChangeRecord{
		BrokerID: id, BrokerEpoch: img.Brokers[id].Epoch, Fenced: metadata.BrokerFenced})
}

// brokerUnfencedRecords is Kafka's handleBrokerUnfenced: the registration is
// unfenced, then leaderless partitions elect a leader, the broker included.
func (c *Controller) brokerUnfencedRecords(img *metadata.Image, id int32, epoch int64) []metadata.Record {
	records := []metadata.Record{&metadata.BrokerRegistrationChangeRecord{
		BrokerID: id, BrokerEpoch: epoch, Fenced: metadata.BrokerUnfenced}}
	if !hasLeaderships(img, metadata.NoLeader) {
		return records // no partition to walk for
	}
	return append(records, c.leaderAndIsrUpdates(img, metadata.NoLeader, id, partitionsWhere(img, func(p *metadata.Partition) bool {
		return p.Leader == metadata.NoLeader
	}))...)
}

// brokerInControlledShutdownRecords is Kafka's
// handleBrokerInControlledShutdown: the registration is marked in controlled
// shutdown, then the broker leaves every ISR and leadership (a partition
// whose only ISR member it is keeps it in the ISR and goes offline).
func (c *Controller) brokerInControlledShutdownRecords(img *metadata.Image, id int32, epoch int64) []metadata.Record {
	var records []metadata.Record
	if !img.Brokers[id].InControlledShutdown {
		records = append(records, &metadata.BrokerRegistrationChangeRecord{
			RecordVersion: 1, BrokerID: id, BrokerEpoch: epoch, InControlledShutdown: 1})
	}
	return append(records, c.leaderAndIsrUpdates(img, id, metadata.NoLeader, partitionsWhere(img, func(p *metadata.Partition) bool {
		return slices.Contains(p.ISR, id)
	}))...)
}
