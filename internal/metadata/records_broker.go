package metadata

import (
	"github.com/twmb/franz-go/pkg/kbin"
)

// BrokerEndpoint is one listener of a RegisterBrokerRecord.
type BrokerEndpoint struct {
	Name             string
	Host             string
	Port             uint16
	SecurityProtocol int16
}

// BrokerFeature is one supported feature range of a RegisterBrokerRecord.
type BrokerFeature struct {
	Name                string
	MinSupportedVersion int16
	MaxSupportedVersion int16
}

// RegisterBrokerRecord (type 0, versions 0-3) registers a broker incarnation.
// Version 1 adds InControlledShutdown, 2 IsMigratingZkBroker, 3 the tagged
// LogDirs. Gregor writes version 3, as Kafka 4.0 does.
type RegisterBrokerRecord struct {
	RecordVersion        int16 // schema version to encode with; Decode sets it
	BrokerID             int32
	IsMigratingZkBroker  bool // v2+
	IncarnationID        [16]byte
	BrokerEpoch          int64
	EndPoints            []BrokerEndpoint
	Features             []BrokerFeature
	Rack                 *string
	Fenced               bool
	InControlledShutdown bool       // v1+
	LogDirs              [][16]byte // v3+, tag 0, written when not empty
}

// RegisterBrokerRecordVersion is the version Gregor writes.
const RegisterBrokerRecordVersion int16 = 3

func (*RegisterBrokerRecord) Type() int16       { return RegisterBrokerRecordType }
func (r *RegisterBrokerRecord) Version() int16  { return clampVersion(r.RecordVersion, 3) }
func (*RegisterBrokerRecord) maxVersion() int16 { return 3 }

func (r *RegisterBrokerRecord) AppendTo(dst []byte) []byte {
	v := r.Version()
	dst = kbin.AppendInt32(dst, r.BrokerID)
	if v >= 2 {
		dst = kbin.AppendBool(dst, r.IsMigratingZkBroker)
	}
	dst = kbin.AppendUuid(dst, r.IncarnationID)
	dst = kbin.AppendInt64(dst, r.BrokerEpoch)
	dst = kbin.AppendCompactArrayLen(dst, len(r.EndPoints))
	for _, e := range r.EndPoints {
		dst = kbin.AppendCompactString(dst, e.Name)
		dst = kbin.AppendCompactString(dst, e.Host)
		dst = kbin.AppendUint16(dst, e.Port)
		dst = kbin.AppendInt16(dst, e.SecurityProtocol)
		dst = appendTags(dst, nil)
	}
	dst = kbin.AppendCompactArrayLen(dst, len(r.Features))
	for _, f := range r.Features {
		dst = kbin.AppendCompactString(dst, f.Name)
		dst = kbin.AppendInt16(dst, f.MinSupportedVersion)
		dst = kbin.AppendInt16(dst, f.MaxSupportedVersion)
		dst = appendTags(dst, nil)
	}
	dst = kbin.AppendCompactNullableString(dst, r.Rack)
	dst = kbin.AppendBool(dst, r.Fenced)
	if v >= 1 {
		dst = kbin.AppendBool(dst, r.InControlledShutdown)
	}
	var tags []taggedField
	if v >= 3 && len(r.LogDirs) > 0 {
		tags = append(tags, taggedField{0, appendUUIDs(nil, r.LogDirs)})
	}
	return appendTags(dst, tags)
}

func (r *RegisterBrokerRecord) readFrom(d *decoder, version int16) {
	r.RecordVersion = version
	r.BrokerID = d.int32()
	if version >= 2 {
		r.IsMigratingZkBroker = d.bool()
	}
	r.IncarnationID = d.uuid()
	r.BrokerEpoch = d.int64()
	// An endpoint takes at least 7 bytes, a feature at least 6.
	if n, isNull := d.length(7); isNull {
		d.fail(errNullArray)
	} else if d.err == nil {
		r.EndPoints = make([]BrokerEndpoint, n)
		for i := range r.EndPoints {
			e := &r.EndPoints[i]
			e.Name = d.compactString()
			e.Host = d.compactString()
			e.Port = d.uint16()
			e.SecurityProtocol = d.int16()
			d.noTags()
		}
	}
	if n, isNull := d.length(6); isNull {
		d.fail(errNullArray)
	} else if d.err == nil {
		r.Features = make([]BrokerFeature, n)
		for i := range r.Features {
			f := &r.Features[i]
			f.Name = d.compactString()
			f.MinSupportedVersion = d.int16()
			f.MaxSupportedVersion = d.int16()
			d.noTags()
		}
	}
	r.Rack = d.compactNullableString()
	r.Fenced = d.bool()
	if version >= 1 {
		r.InControlledShutdown = d.bool()
	}
	d.tags(func(tag uint32, f *decoder) bool {
		if tag == 0 && version >= 3 {
			r.LogDirs = f.uuids(false)
			return true
		}
		return false
	})
	if len(r.LogDirs) == 0 {
		r.LogDirs = nil // an empty tagged list is the default, which is not written
	}
}

// BrokerRegistrationChangeRecord's Fenced values.
const (
	BrokerUnfenced      int8 = -1
	BrokerFenceNoChange int8 = 0
	BrokerFenced        int8 = 1
)

// BrokerRegistrationChangeRecord (type 17, versions 0-2) changes a registered
// broker's state; all changes are tagged fields whose zero value means "no
// change".
type BrokerRegistrationChangeRecord struct {
	RecordVersion        int16 // schema version to encode with; Decode sets it
	BrokerID             int32
	BrokerEpoch          int64
	Fenced               int8       // tag 0: BrokerUnfenced, BrokerFenceNoChange, BrokerFenced
	InControlledShutdown int8       // v1+, tag 1: 0 no change, 1 in controlled shutdown
	LogDirs              [][16]byte // v2+, tag 2, written when not empty
}

func (*BrokerRegistrationChangeRecord) Type() int16 { return BrokerRegistrationChangeRecordType }
func (r *BrokerRegistrationChangeRecord) Version() int16 {
	return clampVersion(r.RecordVersion, 2)
}
func (*BrokerRegistrationChangeRecord) maxVersion() int16 { return 2 }

func (r *BrokerRegistrationChangeRecord) AppendTo(dst []byte) []byte {
	v := r.Version()
	dst = kbin.AppendInt32(dst, r.BrokerID)
	dst = kbin.AppendInt64(dst, r.BrokerEpoch)
	var tags []taggedField
	if r.Fenced != 0 {
		tags = append(tags, taggedField{0, kbin.AppendInt8(nil, r.Fenced)})
	}
	if v >= 1 && r.InControlledShutdown != 0 {
		tags = append(tags, taggedField{1, kbin.AppendInt8(nil, r.InControlledShutdown)})
	}
	if v >= 2 && len(r.LogDirs) > 0 {
		tags = append(tags, taggedField{2, appendUUIDs(nil, r.LogDirs)})
	}
	return appendTags(dst, tags)
}

func (r *BrokerRegistrationChangeRecord) readFrom(d *decoder, version int16) {
	r.RecordVersion = version
	r.BrokerID = d.int32()
	r.BrokerEpoch = d.int64()
	d.tags(func(tag uint32, f *decoder) bool {
		switch {
		case tag == 0:
			r.Fenced = f.int8()
		case tag == 1 && version >= 1:
			r.InControlledShutdown = f.int8()
		case tag == 2 && version >= 2:
			r.LogDirs = f.uuids(false)
		default:
			return false
		}
		return true
	})
	if len(r.LogDirs) == 0 {
		r.LogDirs = nil // an empty tagged list is the default, which is not written
	}
}

// FenceBrokerRecord (type 7, version 0) fences a broker incarnation.
type FenceBrokerRecord struct {
	ID    int32
	Epoch int64
}

func (*FenceBrokerRecord) Type() int16       { return FenceBrokerRecordType }
func (*FenceBrokerRecord) Version() int16    { return 0 }
func (*FenceBrokerRecord) maxVersion() int16 { return 0 }

func (r *FenceBrokerRecord) AppendTo(dst []byte) []byte {
	dst = kbin.AppendInt32(dst, r.ID)
	dst = kbin.AppendInt64(dst, r.Epoch)
	return appendTags(dst, nil)
}

func (r *FenceBrokerRecord) readFrom(d *decoder, _ int16) {
	r.ID = d.int32()
	r.Epoch = d.int64()
	d.noTags()
}

// UnfenceBrokerRecord (type 8, version 0) unfences a broker incarnation.
type UnfenceBrokerRecord struct {
	ID    int32
	Epoch int64
}

func (*UnfenceBrokerRecord) Type() int16       { return UnfenceBrokerRecordType }
func (*UnfenceBrokerRecord) Version() int16    { return 0 }
func (*UnfenceBrokerRecord) maxVersion() int16 { return 0 }

func (r *UnfenceBrokerRecord) AppendTo(dst []byte) []byte {
	dst = kbin.AppendInt32(dst, r.ID)
	dst = kbin.AppendInt64(dst, r.Epoch)
	return appendTags(dst, nil)
}

func (r *UnfenceBrokerRecord) readFrom(d *decoder, _ int16) {
	r.ID = d.int32()
	r.Epoch = d.int64()
	d.noTags()
}

// UnregisterBrokerRecord (type 1, version 0) removes a broker's registration
// (kafka-cluster unregister). It names the epoch of the registration it
// removes: replaying it against another incarnation is an error, as Kafka's
// ClusterControlManager.replay(UnregisterBrokerRecord) makes it.
type UnregisterBrokerRecord struct {
	BrokerID    int32
	BrokerEpoch int64
}

func (*UnregisterBrokerRecord) Type() int16       { return UnregisterBrokerRecordType }
func (*UnregisterBrokerRecord) Version() int16    { return 0 }
func (*UnregisterBrokerRecord) maxVersion() int16 { return 0 }

func (r *UnregisterBrokerRecord) AppendTo(dst []byte) []byte {
	dst = kbin.AppendInt32(dst, r.BrokerID)
	dst = kbin.AppendInt64(dst, r.BrokerEpoch)
	return appendTags(dst, nil)
}

func (r *UnregisterBrokerRecord) readFrom(d *decoder, _ int16) {
	r.BrokerID = d.int32()
	r.BrokerEpoch = d.int64()
	d.noTags()
}
