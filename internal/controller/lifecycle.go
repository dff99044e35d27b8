package controller

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/metadata"
	"gregor/internal/raft"
)

// stateListener is the controller's raft.Listener: it hands every batch and
// snapshot to the controller's metadata.Loader, remembers the offset of each
// broker's latest RegisterBrokerRecord (Kafka's registerBrokerRecordOffsets,
// which a heartbeat's IsCaughtUp compares against), and tells the event loop
// about leadership changes. Its methods run on the quorum's goroutine, often
// under the quorum's lock, so they never wait for the event loop.
type stateListener struct {
	c      *Controller
	loader *metadata.Loader

	mu                  sync.Mutex
	registrationOffsets map[int32]int64
}

func newStateListener(c *Controller, loader *metadata.Loader) *stateListener {
	return &stateListener{c: c, loader: loader, registrationOffsets: map[int32]int64{}}
}

func (l *stateListener) HandleCommit(b raft.Batch) {
	l.loader.HandleCommit(b)
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, r := range b.Records {
		switch r := r.(type) {
		case *metadata.RegisterBrokerRecord:
			l.registrationOffsets[r.BrokerID] = b.BaseOffset + int64(i)
		case *metadata.UnregisterBrokerRecord:
			delete(l.registrationOffsets, r.BrokerID)
		}
	}
}

// HandleSnapshot replaces the state. A snapshot's records carry no offsets of
// their own; as Kafka does, each registration in it counts as written at the
// snapshot's last offset.
func (l *stateListener) HandleSnapshot(s raft.Snapshot) {
	l.loader.HandleSnapshot(s)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.registrationOffsets = map[int32]int64{}
	for _, r := range s.Records {
		if reg, ok := r.(*metadata.RegisterBrokerRecord); ok {
			l.registrationOffsets[reg.BrokerID] = s.EndOffset - 1
		}
	}
}

func (l *stateListener) HandleLeaderChange(leader, epoch int32) {
	l.loader.HandleLeaderChange(leader, epoch)
	l.c.noteLeader(leader, epoch)
}

// registrationOffset returns the offset of a broker's latest
// RegisterBrokerRecord.
func (l *stateListener) registrationOffset(id int32) (int64, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	off, ok := l.registrationOffsets[id]
	return off, ok
}

// noteLeader records the quorum's leader report and wakes the event loop. A
// controller that loses leadership stops being active at once; one that gains
// it becomes active once the event loop has activated it.
func (c *Controller) noteLeader(leader, epoch int32) {
	c.leaderMu.Lock()
	c.leaderID, c.leaderEpoch = leader, epoch
	if leader != c.cfg.NodeID {
		c.active.Store(false)
	}
	c.leaderMu.Unlock()
	select {
	case c.leaderChanged <- struct{}{}:
	default:
	}
}

func (c *Controller) leader() (id, epoch int32) {
	c.leaderMu.Lock()
	defer c.leaderMu.Unlock()
	return c.leaderID, c.leaderEpoch
}

// Active reports whether this node is the active controller: the quorum's
// leader, with every earlier entry applied, and activated (broker sessions
// started, metadata.version written). Only the active controller answers
// requests; the others answer NOT_CONTROLLER.
func (c *Controller) Active() bool { return c.active.Load() }

// needsActivation reports whether this node leads but activation has not
// succeeded yet (a failed activation is retried by the event loop's timer).
func (c *Controller) needsActivation() bool {
	id, _ := c.leader()
	return id == c.cfg.NodeID && !c.active.Load()
}

// handleLeaderChange runs on the event loop after the quorum reported a
// leader. Losing leadership drops the broker sessions. Gaining it activates
// the controller as Kafka's QuorumController.claim and
// ActivationRecordsGenerator do: a log without metadata.version gets the
// bootstrap metadata (the FeatureLevelRecord, and what `storage format`
// added), and every registered broker gets a fresh session, so
// no broker is fenced for heartbeats the previous controller received.
func (c *Controller) handleLeaderChange(ctx context.Context) {
	id, epoch := c.leader()
	if id != c.cfg.NodeID {
		if c.activeEpoch >= 0 {
			c.logger.Info("no longer the active controller", "leader", id, "epoch", epoch)
		}
		c.activeEpoch = -1
		c.dropSessions()
		return
	}
	if c.activeEpoch == epoch && c.active.Load() {
		return
	}
	if c.image.Image().MetadataVersion() == 0 {
		if _, err := c.q.Append(ctx, c.bootstrapMetadata()); err != nil {
			c.logger.Warn("activation: writing the bootstrap metadata failed; will retry", "epoch", epoch, "err", err)
			return
		}
	}
	now := c.cfg.Now()
	c.dropSessions()
	for id := range c.image.Image().Brokers {
		if id == c.cfg.NodeID && c.cfg.CoResidentBroker {
			if off, ok := c.listener.registrationOffset(id); ok && off < c.startOffset {
				continue // registered by an earlier run of this very process
			}
		}
		c.sessions[id] = newBrokerSession(now)
	}
	c.activeEpoch = epoch
	c.nextLeaderBalance = now.Add(c.cfg.LeaderImbalanceCheckInterval)
	c.nextUncleanCheck = now.Add(c.cfg.UncleanLeaderElectionCheckInterval)
	c.leaderMu.Lock()
	if c.leaderID == c.cfg.NodeID && c.leaderEpoch == epoch {
		c.active.Store(true)
	}
	c.leaderMu.Unlock()
	c.logger.Info("became the active controller", "epoch", epoch, "brokers", len(c.sessions))
	c.probeBrokersOnActivation(epoch, now)
}

// RegisterBroker registers a broker incarnation (Kafka's
// ClusterControlManager.registerBroker). A new incarnation gets a
// RegisterBrokerRecord that is fenced, with broker epoch = the record's
// offset; the broker is unfenced by a later heartbeat once it has caught up
// to that offset. A retry of the same incarnation amends the registration
// and keeps its epoch, fencing and controlled-shutdown state.
func (c *Controller) RegisterBroker(ctx context.Context, req *kmsg.BrokerRegistrationRequest) *kmsg.BrokerRegistrationResponse {
	resp := kmsg.NewPtrBrokerRegistrationResponse()
	resp.Version = req.Version
	epoch, err := c.registerBroker(ctx, req)
	if err != nil {
		c.logger.Info("broker registration refused", "broker", req.BrokerID, "err", err)
		resp.ErrorCode = errorCode(err)
		return resp
	}
	resp.BrokerEpoch = epoch
	return resp
}

// registerBroker returns the registered broker epoch, or an error wrapping
// the *kerr.Error to answer with.
func (c *Controller) registerBroker(ctx context.Context, req *kmsg.BrokerRegistrationRequest) (int64, error) {
	var epoch int64
	var failure error
	err := c.submit(ctx, func() {
		if !c.active.Load() {
			failure = kerr.NotController
			return
		}
		img := c.image.Image()
		rec, err := c.registrationRecord(img, req)
		if err != nil {
			failure = err
			return
		}
		existing := img.Brokers[req.BrokerID]
		records := []metadata.Record{rec}
		if uncleanShutdown(existing, req) {
			records = append(c.uncleanShutdownRecords(img, req.BrokerID), rec)
		}
		if _, err := c.q.Append(ctx, records); err != nil {
			failure = fmt.Errorf("%w: commit the registration of broker %d: %v", kafkaError(err), req.BrokerID, err)
			return
		}
		if existing == nil || existing.IncarnationID != req.IncarnationID {
			// A new incarnation starts a new session.
			if old := c.sessions[req.BrokerID]; old != nil {
				old.unwatch()
			}
			c.sessions[req.BrokerID] = newBrokerSession(c.cfg.Now())
		} else {
			c.session(req.BrokerID).touch(c.cfg.Now(), rec.Fenced, -1)
		}
		c.logger.Info("registered broker", "broker", req.BrokerID, "epoch", rec.BrokerEpoch, "fenced", rec.Fenced)
		epoch = rec.BrokerEpoch
	})
	if err != nil {
		return 0, fmt.Errorf("%w: %v", kafkaError(err), err)
	}
	return epoch, failure
}

// registrationRecord checks a registration and builds its record.
func (c *Controller) registrationRecord(img *metadata.Image, req *kmsg.BrokerRegistrationRequest) (*metadata.RegisterBrokerRecord, error) {
	if req.ClusterID != img.ClusterID {
		return nil, fmt.Errorf("%w: Expected cluster ID %s, but got cluster ID %s", kerr.InconsistentClusterID, img.ClusterID, req.ClusterID)
	}
	id := req.BrokerID
	existing := img.Brokers[id]
	if existing != nil && c.hasValidSession(img, id) && existing.IncarnationID != req.IncarnationID {
		return nil, fmt.Errorf("%w: Another broker is registered with that broker id.", kerr.DuplicateBrokerRegistration)
	}
	if req.IsMigratingZkBroker {
		return nil, fmt.Errorf("%w: Controller does not support registering ZK brokers.", kerr.BrokerIDNotRegistered)
	}
	// metadata.version 3.7-IV2 and later assign replicas to log directories.
	if len(req.LogDirs) == 0 {
		return nil, fmt.Errorf("%w: No directories specified in request", kerr.InvalidRegistration)
	}
	seen := map[[16]byte]bool{}
	for _, dir := range req.LogDirs {
		if reservedDirectory(dir) {
			return nil, fmt.Errorf("%w: Reserved directory ID in request", kerr.InvalidRegistration)
		}
		if seen[dir] {
			return nil, fmt.Errorf("%w: Duplicate directory ID in request", kerr.InvalidRegistration)
		}
		seen[dir] = true
	}
	for _, other := range img.SortedBrokerIDs() {
		if other == id {
			continue
		}
		for _, dir := range img.Brokers[other].LogDirs {
			if seen[dir] {
				return nil, fmt.Errorf("%w: Broker %d is already registered with directory %s", kerr.InvalidRegistration, other, uuidString(dir))
			}
		}
	}

	rec := &metadata.RegisterBrokerRecord{
		RecordVersion: metadata.RegisterBrokerRecordVersion,
		BrokerID:      id,
		IncarnationID: req.IncarnationID,
		Rack:          req.Rack,
		EndPoints:     []metadata.BrokerEndpoint{},
		Features:      []metadata.BrokerFeature{},
		LogDirs:       slices.Clone(req.LogDirs),
	}
	for _, l := range req.Listeners {
		rec.EndPoints = append(rec.EndPoints, metadata.BrokerEndpoint{Name: l.Name, Host: l.Host, Port: l.Port, SecurityProtocol: l.SecurityProtocol})
	}
	// Every finalized feature must be in the broker's supported range; a
	// broker that names no metadata.version range supports only the lowest.
	unverified := map[string]bool{}
	for name := range img.Features {
		unverified[name] = true
	}
	for _, f := range req.Features {
		if err := checkFeature(img, f.Name, f.MinSupportedVersion, f.MaxSupportedVersion); err != nil {
			return nil, err
		}
		rec.Features = append(rec.Features, metadata.BrokerFeature{Name: f.Name, MinSupportedVersion: f.MinSupportedVersion, MaxSupportedVersion: f.MaxSupportedVersion})
		delete(unverified, f.Name)
	}
	if !slices.ContainsFunc(req.Features, func(f kmsg.BrokerRegistrationRequestFeature) bool { return f.Name == metadata.MetadataVersionFeature }) {
		if err := checkFeature(img, metadata.MetadataVersionFeature, metadata.MinMetadataVersion, metadata.MinMetadataVersion); err != nil {
			return nil, err
		}
		rec.Features = append(rec.Features, metadata.BrokerFeature{Name: metadata.MetadataVersionFeature,
			MinSupportedVersion: metadata.MinMetadataVersion, MaxSupportedVersion: metadata.MinMetadataVersion})
		delete(unverified, metadata.MetadataVersionFeature)
	}
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for n := range unverified {
			if !yield(n) {
				return
			}
		}
	}) {
		if img.Features[name] != 0 {
			if err := checkFeature(img, name, 0, 0); err != nil {
				return nil, err
			}
		}
	}

	if existing == nil || existing.IncarnationID != req.IncarnationID {
		// Kafka's nextWriteOffset: the record is the batch's only record,
		// so the epoch is its offset, and epochs only grow.
		rec.BrokerEpoch = c.q.HighWatermark()
		rec.Fenced = true
	} else {
		rec.BrokerEpoch = existing.Epoch
		rec.Fenced = existing.Fenced
		rec.InControlledShutdown = existing.InControlledShutdown
	}
	return rec, nil
}

// checkFeature is Kafka's processRegistrationFeature: a finalized feature
// level outside the broker's range refuses the registration.
func checkFeature(img *metadata.Image, name string, minVersion, maxVersion int16) error {
	level, ok := img.Features[name]
	if !ok {
		return nil
	}
	if level < minVersion || level > maxVersion {
		return fmt.Errorf("%w: Unable to register because the broker does not support version %d of %s. It wants a version between %d and %d, inclusive.",
			kerr.UnsupportedVersion, level, name, minVersion, maxVersion)
	}
	return nil
}

// errorCode is the Kafka code of an error built from a *kerr.Error.
func errorCode(err error) int16 {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	return kerr.UnknownServerError.Code
}

// reservedDirectory is Kafka's DirectoryId.reserved: the ids whose high 64
// bits are zero and whose low 64 bits, as a signed long, are below 100.
func reservedDirectory(id [16]byte) bool {
	return binary.BigEndian.Uint64(id[:8]) == 0 && int64(binary.BigEndian.Uint64(id[8:])) < 100
}

// uuidString formats an id as Kafka's Uuid.toString (URL-safe base64, no padding).
func uuidString(id [16]byte) string { return base64.RawURLEncoding.EncodeToString(id[:]) }

// uncleanShutdown is Kafka's check of a registration (KAFKA-15586,
// KAFKA-18635): a new incarnation of a registered broker whose previous
// broker epoch, read from its clean-shutdown markers, is not the epoch it
// was registered with did not shut down cleanly.
func uncleanShutdown(existing *metadata.BrokerRegistration, req *kmsg.BrokerRegistrationRequest) bool {
	return existing != nil && existing.IncarnationID != req.IncarnationID && req.PreviousBrokerEpoch != existing.Epoch
}

// uncleanShutdownRecords is Kafka's handleBrokerUncleanShutdown, run for a
// broker that did not shut down cleanly while eligible leader replicas are on: the
// broker may have lost records it had (a crash loses what the page cache
// held), so it leaves every ISR and ELR it is in and may not lead until it
// rejoins the ISR by catching up. Without ELR nothing changes: a restarted
// broker left the ISR when it was fenced.
func (c *Controller) uncleanShutdownRecords(img *metadata.Image, id int32) []metadata.Record {
	if img.Features[metadata.EligibleLeaderReplicasVersionFeature] < 1 {
		return nil
	}
	acceptable := func(r int32) bool { return r != id && isActive(img, r) }
	var records []metadata.Record
	for _, tp := range partitionsWhere(img, func(p *metadata.Partition) bool {
		return slices.Contains(p.ISR, id) || slices.Contains(p.EligibleLeaderReplicas, id)
	}) {
		b := c.newPartitionChange(img, tp.topic, tp.partition, acceptable)
		if c.uncleanLeaderElectionEnabled(img, tp.topic.Name) {
			b.election = electionUnclean
		}
		b.uncleanShutdown = []int32{id}
		b.targetISR = slices.DeleteFunc(b.targetISR, func(r int32) bool { return r == id })
		if rec := b.build(); rec != nil {
			records = append(records, rec)
		}
	}
	return records
}
