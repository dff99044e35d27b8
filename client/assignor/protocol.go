package assignor

import (
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ProtocolType is the JoinGroup protocol type of consumer groups.
const ProtocolType = "consumer"

// The versions of Kafka's ConsumerProtocolSubscription and
// ConsumerProtocolAssignment this package writes and reads. Subscription v1
// added owned partitions (KIP-429), v2 the generation (KIP-792), v3 the
// rack (KIP-881); assignment versions add nothing but are kept in step.
const (
	MaxSubscriptionVersion = 3
	MaxAssignmentVersion   = 3
)

// EncodeSubscription writes s as the JoinGroup protocol metadata at the
// given version; fields the version lacks are dropped, as Kafka does. A
// version above the highest known is written as the highest.
func EncodeSubscription(s Subscription, version int16) ([]byte, error) {
	if version < 0 {
		return nil, fmt.Errorf("encode subscription: unsupported version %d", version)
	}
	md := kmsg.NewConsumerMemberMetadata()
	md.Version = min(version, MaxSubscriptionVersion)
	// Kafka writes topics sorted, so equal subscriptions are equal bytes.
	md.Topics = slices.Sorted(slices.Values(s.Topics))
	if md.Topics == nil {
		md.Topics = []string{}
	}
	md.UserData = s.UserData
	for _, g := range groupByTopic(s.OwnedPartitions) {
		md.OwnedPartitions = append(md.OwnedPartitions, kmsg.ConsumerMemberMetadataOwnedPartition{Topic: g.Topic, Partitions: g.Partitions})
	}
	md.Generation = max(s.Generation, defaultGeneration)
	if s.Rack != "" {
		md.Rack = &s.Rack
	}
	return md.AppendTo(nil), nil
}

// DecodeSubscription reads JoinGroup protocol metadata of any version;
// bytes after the fields of the highest known version are ignored (a newer
// client's additions), as Kafka does. A missing generation is -1 and an
// empty rack is none.
func DecodeSubscription(b []byte) (Subscription, int16, error) {
	var md kmsg.ConsumerMemberMetadata
	if err := md.ReadFrom(b); err != nil {
		return Subscription{}, 0, fmt.Errorf("decode subscription: %w", err)
	}
	if md.Version < 0 {
		return Subscription{}, md.Version, fmt.Errorf("decode subscription: unsupported version %d", md.Version)
	}
	s := Subscription{Topics: md.Topics, UserData: md.UserData, Generation: max(md.Generation, defaultGeneration)}
	if md.Rack != nil {
		s.Rack = *md.Rack
	}
	for _, o := range md.OwnedPartitions {
		for _, p := range o.Partitions {
			s.OwnedPartitions = append(s.OwnedPartitions, TopicPartition{o.Topic, p})
		}
	}
	return s, md.Version, nil
}

// EncodeAssignment writes one member's SyncGroup assignment.
func EncodeAssignment(tps []TopicPartition, userData []byte, version int16) ([]byte, error) {
	if version < 0 {
		return nil, fmt.Errorf("encode assignment: unsupported version %d", version)
	}
	a := kmsg.NewConsumerMemberAssignment()
	a.Version = min(version, MaxAssignmentVersion)
	a.Topics = []kmsg.ConsumerMemberAssignmentTopic{}
	for _, g := range groupByTopic(tps) {
		a.Topics = append(a.Topics, kmsg.ConsumerMemberAssignmentTopic{Topic: g.Topic, Partitions: g.Partitions})
	}
	a.UserData = userData
	return a.AppendTo(nil), nil
}

// DecodeAssignment reads a SyncGroup assignment. An empty byte string is
// read as an empty assignment: a leader may send no bytes for a member it
// gave nothing (franz-go's leader does), and that member must still join.
func DecodeAssignment(b []byte) (tps []TopicPartition, userData []byte, version int16, err error) {
	if len(b) == 0 {
		return []TopicPartition{}, nil, 0, nil
	}
	var a kmsg.ConsumerMemberAssignment
	if err := a.ReadFrom(b); err != nil {
		return nil, nil, 0, fmt.Errorf("decode assignment: %w", err)
	}
	if a.Version < 0 {
		return nil, nil, a.Version, fmt.Errorf("decode assignment: unsupported version %d", a.Version)
	}
	tps = []TopicPartition{}
	for _, t := range a.Topics {
		for _, p := range t.Partitions {
			tps = append(tps, TopicPartition{t.Topic, p})
		}
	}
	return tps, a.UserData, a.Version, nil
}
