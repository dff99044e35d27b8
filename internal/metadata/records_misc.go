package metadata

import (
	"github.com/twmb/franz-go/pkg/kbin"
)

// Config resource types of ConfigRecord.ResourceType (Kafka's ConfigResource.Type ids).
const (
	ConfigResourceTopic  int8 = 2
	ConfigResourceBroker int8 = 4
	ConfigResourceGroup  int8 = 32 // a group's configs (KIP-848, KIP-932)
)

// ConfigRecord (type 4, version 0) sets or deletes one dynamic config of a
// resource. A broker resource named "" is the cluster-wide default.
type ConfigRecord struct {
	ResourceType int8
	ResourceName string
	Name         string
	Value        *string // nil deletes the config
}

func (*ConfigRecord) Type() int16       { return ConfigRecordType }
func (*ConfigRecord) Version() int16    { return 0 }
func (*ConfigRecord) maxVersion() int16 { return 0 }

func (r *ConfigRecord) AppendTo(dst []byte) []byte {
	dst = kbin.AppendInt8(dst, r.ResourceType)
	dst = kbin.AppendCompactString(dst, r.ResourceName)
	dst = kbin.AppendCompactString(dst, r.Name)
	dst = kbin.AppendCompactNullableString(dst, r.Value)
	return appendTags(dst, nil)
}

func (r *ConfigRecord) readFrom(d *decoder, _ int16) {
	r.ResourceType = d.int8()
	r.ResourceName = d.compactString()
	r.Name = d.compactString()
	r.Value = d.compactNullableString()
	d.noTags()
}

// MetadataVersionFeature is the feature that versions the metadata log itself.
const MetadataVersionFeature = "metadata.version"

// metadata.version levels (Kafka's MetadataVersion feature levels).
const (
	// MinMetadataVersion is Kafka 4.0's lowest supported level, 3.3-IV3.
	MinMetadataVersion int16 = 7
	// LatestMetadataVersion is Kafka 4.0's latest production level, 4.0-IV3,
	// which new Gregor clusters bootstrap with.
	LatestMetadataVersion int16 = 25
)

// FeatureLevelRecord (type 12, version 0) finalizes a feature's level; level 0
// removes the feature. Kafka keeps this record at version 0 forever because a
// new log starts with it.
type FeatureLevelRecord struct {
	Name         string
	FeatureLevel int16
}

func (*FeatureLevelRecord) Type() int16       { return FeatureLevelRecordType }
func (*FeatureLevelRecord) Version() int16    { return 0 }
func (*FeatureLevelRecord) maxVersion() int16 { return 0 }

func (r *FeatureLevelRecord) AppendTo(dst []byte) []byte {
	dst = kbin.AppendCompactString(dst, r.Name)
	dst = kbin.AppendInt16(dst, r.FeatureLevel)
	return appendTags(dst, nil)
}

func (r *FeatureLevelRecord) readFrom(d *decoder, _ int16) {
	r.Name = d.compactString()
	r.FeatureLevel = d.int16()
	d.noTags()
}

// NoOpRecord (type 20, version 0) changes nothing; the active controller
// writes it to show the log is alive.
type NoOpRecord struct{}

func (*NoOpRecord) Type() int16                  { return NoOpRecordType }
func (*NoOpRecord) Version() int16               { return 0 }
func (*NoOpRecord) maxVersion() int16            { return 0 }
func (*NoOpRecord) AppendTo(dst []byte) []byte   { return appendTags(dst, nil) }
func (*NoOpRecord) readFrom(d *decoder, _ int16) { d.noTags() }

// ProducerIdsRecord (type 15, version 0) hands a block of producer ids to a
// broker: NextProducerID is the first id of the next block.
type ProducerIdsRecord struct {
	BrokerID       int32
	BrokerEpoch    int64
	NextProducerID int64
}

func (*ProducerIdsRecord) Type() int16       { return ProducerIdsRecordType }
func (*ProducerIdsRecord) Version() int16    { return 0 }
func (*ProducerIdsRecord) maxVersion() int16 { return 0 }

func (r *ProducerIdsRecord) AppendTo(dst []byte) []byte {
	dst = kbin.AppendInt32(dst, r.BrokerID)
	dst = kbin.AppendInt64(dst, r.BrokerEpoch)
	dst = kbin.AppendInt64(dst, r.NextProducerID)
	return appendTags(dst, nil)
}

func (r *ProducerIdsRecord) readFrom(d *decoder, _ int16) {
	r.BrokerID = d.int32()
	r.BrokerEpoch = d.int64()
	r.NextProducerID = d.int64()
	d.noTags()
}
