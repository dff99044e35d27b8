package controller

import (
	"context"
	"fmt"
	"slices"

	"gregor/internal/metadata"
)

// BrokerRegistration is what a broker registers: its id, incarnation,
// advertised listeners and rack.
type BrokerRegistration struct {
	NodeID int32
	// IncarnationID identifies this run of the broker process; zero means
	// "pick a random one".
	IncarnationID [16]byte
	Listeners     []Endpoint
	Rack          string // broker.rack; "" for none
}

// Endpoint is one advertised listener, with its security protocol by name
// (listener.security.protocol.map's values).
type Endpoint struct {
	Name             string
	Host             string
	Port             int
	SecurityProtocol string
}

// securityProtocols are Kafka's SecurityProtocol ids, as registrations store them.
var securityProtocols = map[string]int16{"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}

// Bootstrap makes the log ready for this cluster. On a fresh log it writes
// the bootstrap metadata (Config.Bootstrap; metadata.version 4.0-IV3 unless
// that says otherwise) and an unfenced RegisterBrokerRecord for each
// broker. On a log that has them, it re-registers (new broker epoch, new
// incarnation) only the brokers whose listeners or rack changed, or that are
// fenced. Fencing and heartbeats come with the broker lifecycle, later.
func (c *Controller) Bootstrap(ctx context.Context, brokers ...BrokerRegistration) error {
	wanted := make([]*metadata.BrokerRegistration, 0, len(brokers))
	for _, b := range brokers {
		reg := &metadata.BrokerRegistration{ID: b.NodeID, IncarnationID: b.IncarnationID}
		if b.Rack != "" {
			rack := b.Rack
			reg.Rack = &rack
		}
		for _, e := range b.Listeners {
			protocol, ok := securityProtocols[e.SecurityProtocol]
			if !ok {
				return fmt.Errorf("bootstrap the metadata log: listener %s of broker %d: unknown security protocol %q", e.Name, b.NodeID, e.SecurityProtocol)
			}
			if e.Port < 0 || e.Port > 65535 {
				return fmt.Errorf("bootstrap the metadata log: listener %s of broker %d: invalid port %d", e.Name, b.NodeID, e.Port)
			}
			reg.Listeners = append(reg.Listeners, metadata.Endpoint{Name: e.Name, Host: e.Host, Port: e.Port, SecurityProtocol: protocol})
		}
		wanted = append(wanted, reg)
	}
	var failure error
	err := c.submit(ctx, func() {
		img := c.image.Image()
		records := c.bootstrapRecords(img, wanted)
		if len(records) == 0 {
			return
		}
		if _, err := c.q.Append(ctx, records); err != nil {
			failure = err
		}
	})
	if err == nil {
		err = failure
	}
	if err != nil {
		return fmt.Errorf("bootstrap the metadata log: %w", err)
	}
	return nil
}

func (c *Controller) bootstrapRecords(img *metadata.Image, brokers []*metadata.BrokerRegistration) []metadata.Record {
	var records []metadata.Record
	if img.MetadataVersion() == 0 {
		records = append(records, c.bootstrapMetadata()...)
	}
	// A broker epoch is the offset its registration is written at (Kafka's
	// nextWriteOffset), so epochs only grow.
	epoch := c.q.HighWatermark()
	for _, b := range brokers {
		if cur := img.Brokers[b.ID]; cur != nil && !cur.Fenced && sameEndpoints(cur.Listeners, b.Listeners) && sameRack(cur.Rack, b.Rack) {
			continue
		}
		incarnation := b.IncarnationID
		if incarnation == ([16]byte{}) {
			incarnation = newTopicID()
		}
		r := &metadata.RegisterBrokerRecord{
			RecordVersion: metadata.RegisterBrokerRecordVersion,
			BrokerID:      b.ID,
			IncarnationID: incarnation,
			BrokerEpoch:   epoch,
			EndPoints:     []metadata.BrokerEndpoint{},
			Features:      metadata.SupportedBrokerFeatures(),
			Rack:          b.Rack,
			Fenced:        false,
		}
		for _, e := range b.Listeners {
			r.EndPoints = append(r.EndPoints, metadata.BrokerEndpoint{Name: e.Name, Host: e.Host, Port: uint16(e.Port), SecurityProtocol: e.SecurityProtocol})
		}
		records = append(records, r)
	}
	return records
}

// bootstrapMetadata is what a log without metadata.version starts with:
// Config.Bootstrap, or without a metadata.version of its own, a new
// cluster's default feature levels (metadata.DefaultFeatureLevels) and then
// Config.Bootstrap.
func (c *Controller) bootstrapMetadata() []metadata.Record {
	records := slices.Clone(c.cfg.Bootstrap)
	if !slices.ContainsFunc(records, func(r metadata.Record) bool {
		f, ok := r.(*metadata.FeatureLevelRecord)
		return ok && f.Name == metadata.MetadataVersionFeature
	}) {
		records = append(metadata.FeatureLevelRecords(metadata.DefaultFeatureLevels(metadata.LatestMetadataVersion)), records...)
	}
	// A cluster created with eligible leader replicas on gets the
	// cluster-level min.insync.replicas it needs (as Kafka's activation).
	return append(records, c.elrSafetyRecords(metadata.EmptyImage(), records)...)
}

func sameEndpoints(a, b []metadata.Endpoint) bool {
	return slices.Equal(a, b)
}

func sameRack(a, b *string) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// isActive reports whether a broker may be in a new ISR (Kafka's
// ClusterControlManager.isActive: registered, unfenced, not shutting down).
func isActive(img *metadata.Image, id int32) bool {
	b := img.Brokers[id]
	return b != nil && !b.Fenced && !b.InControlledShutdown
}

// Kafka's reserved directory ids (DirectoryId).
var (
	directoryMigrating  = [16]byte{}
	directoryUnassigned = [16]byte{15: 1}
)

// defaultDir is the log directory a new replica on a broker is assigned
// (Kafka's ClusterControlManager.defaultDir): the broker's only log dir, else
// MIGRATING for a broker that registered none, else UNASSIGNED.
func defaultDir(img *metadata.Image, broker int32) [16]byte {
	b := img.Brokers[broker]
	switch {
	case b == nil:
		return directoryUnassigned
	case len(b.LogDirs) == 0:
		return directoryMigrating
	case len(b.LogDirs) == 1:
		return b.LogDirs[0]
	}
	return directoryUnassigned
}

// partitionRecord builds a new partition's record: leader = first active
// replica, ISR = active replicas, epochs 0, each replica in its broker's
// default log directory.
//
// leaderOnlyISR starts the ISR with the leader alone (Config.LeaderOnlyISR).
func partitionRecord(img *metadata.Image, topicID [16]byte, partition int32, replicas []int32, leaderOnlyISR bool) *metadata.PartitionRecord {
	isr := make([]int32, 0, len(replicas))
	dirs := make([][16]byte, 0, len(replicas))
	for _, r := range replicas {
		if isActive(img, r) {
			isr = append(isr, r)
		}
		dirs = append(dirs, defaultDir(img, r))
	}
	leader := metadata.NoLeader
	if len(isr) > 0 {
		leader = isr[0]
	}
	if leaderOnlyISR && len(isr) > 1 {
		isr = isr[:1]
	}
	return &metadata.PartitionRecord{
		RecordVersion:       metadata.PartitionRecordVersion,
		PartitionID:         partition,
		TopicID:             topicID,
		Replicas:            slices.Clone(replicas),
		ISR:                 isr,
		RemovingReplicas:    []int32{},
		AddingReplicas:      []int32{},
		Leader:              leader,
		LeaderRecoveryState: metadata.LeaderRecovered,
		LeaderEpoch:         0,
		PartitionEpoch:      0,
		Directories:         dirs,
	}
}
