package metadata

import (
	"github.com/twmb/franz-go/pkg/kbin"
)

// ClientQuotaRecord (type 14, version 0) sets or removes one quota key of
// one client quota entity. Entity lists the entity's parts (Kafka writes
// them in no particular order; Gregor writes user, client-id, ip); a nil
// EntityName is the type's default entity. Value is ignored when Remove is
// set.
type ClientQuotaRecord struct {
	Entity []ClientQuotaEntityData
	Key    string
	Value  float64
	Remove bool
}

// ClientQuotaEntityData is one part of a quota entity as the record and the
// quota APIs carry it: an entity type (user, client-id, ip) and a name, nil
// for the type's default.
type ClientQuotaEntityData struct {
	EntityType string
	EntityName *string
}

// NewClientQuotaRecord is the record that sets key to value for e.
func NewClientQuotaRecord(e QuotaEntity, key string, value float64) *ClientQuotaRecord {
	return &ClientQuotaRecord{Entity: e.Data(), Key: key, Value: value}
}

// NewRemoveClientQuotaRecord is the record that removes key from e.
func NewRemoveClientQuotaRecord(e QuotaEntity, key string) *ClientQuotaRecord {
	return &ClientQuotaRecord{Entity: e.Data(), Key: key, Remove: true}
}

func (*ClientQuotaRecord) Type() int16       { return ClientQuotaRecordType }
func (*ClientQuotaRecord) Version() int16    { return 0 }
func (*ClientQuotaRecord) maxVersion() int16 { return 0 }

func (r *ClientQuotaRecord) AppendTo(dst []byte) []byte {
	dst = kbin.AppendCompactArrayLen(dst, len(r.Entity))
	for _, e := range r.Entity {
		dst = kbin.AppendCompactString(dst, e.EntityType)
		dst = kbin.AppendCompactNullableString(dst, e.EntityName)
		dst = appendTags(dst, nil)
	}
	dst = kbin.AppendCompactString(dst, r.Key)
	dst = kbin.AppendFloat64(dst, r.Value)
	dst = kbin.AppendBool(dst, r.Remove)
	return appendTags(dst, nil)
}

func (r *ClientQuotaRecord) readFrom(d *decoder, _ int16) {
	// Each entity part takes at least 3 bytes: two lengths and its tags.
	n, isNull := d.length(3)
	if isNull {
		d.fail(errNullArray)
	}
	if d.err == nil {
		r.Entity = make([]ClientQuotaEntityData, n)
		for i := range r.Entity {
			r.Entity[i].EntityType = d.compactString()
			r.Entity[i].EntityName = d.compactNullableString()
			d.noTags()
		}
	}
	r.Key = d.compactString()
	r.Value = d.float64()
	r.Remove = d.bool()
	d.noTags()
}
