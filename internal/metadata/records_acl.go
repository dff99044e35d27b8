package metadata

import (
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/auth/acl"
)

// AccessControlEntryRecord (type 18, version 0) creates one ACL under an id
// of its own, which RemoveAccessControlEntryRecord names to delete it. The
// enums are Kafka's wire codes (kmsg's ACL types).
type AccessControlEntryRecord struct {
	ID             [16]byte
	ResourceType   int8
	ResourceName   string
	PatternType    int8
	Principal      string
	Host           string
	Operation      int8
	PermissionType int8
}

// NewAccessControlEntryRecord is the record that creates ACL id as b.
func NewAccessControlEntryRecord(id [16]byte, b acl.Binding) *AccessControlEntryRecord {
	return &AccessControlEntryRecord{ID: id, ResourceType: int8(b.ResourceType), ResourceName: b.ResourceName,
		PatternType: int8(b.PatternType), Principal: b.Principal, Host: b.Host,
		Operation: int8(b.Operation), PermissionType: int8(b.Permission)}
}

// Binding returns the ACL the record creates.
func (r *AccessControlEntryRecord) Binding() acl.Binding {
	return acl.Binding{ResourceType: kmsg.ACLResourceType(r.ResourceType), ResourceName: r.ResourceName,
		PatternType: kmsg.ACLResourcePatternType(r.PatternType), Principal: r.Principal, Host: r.Host,
		Operation: kmsg.ACLOperation(r.Operation), Permission: kmsg.ACLPermissionType(r.PermissionType)}
}

func (*AccessControlEntryRecord) Type() int16       { return AccessControlEntryRecordType }
func (*AccessControlEntryRecord) Version() int16    { return 0 }
func (*AccessControlEntryRecord) maxVersion() int16 { return 0 }

func (r *AccessControlEntryRecord) AppendTo(dst []byte) []byte {
	dst = kbin.AppendUuid(dst, r.ID)
	dst = kbin.AppendInt8(dst, r.ResourceType)
	dst = kbin.AppendCompactString(dst, r.ResourceName)
	dst = kbin.AppendInt8(dst, r.PatternType)
	dst = kbin.AppendCompactString(dst, r.Principal)
	dst = kbin.AppendCompactString(dst, r.Host)
	dst = kbin.AppendInt8(dst, r.Operation)
	dst = kbin.AppendInt8(dst, r.PermissionType)
	return appendTags(dst, nil)
}

func (r *AccessControlEntryRecord) readFrom(d *decoder, _ int16) {
	r.ID = d.uuid()
	r.ResourceType = d.int8()
	r.ResourceName = d.compactString()
	r.PatternType = d.int8()
	r.Principal = d.compactString()
	r.Host = d.compactString()
	r.Operation = d.int8()
	r.PermissionType = d.int8()
	d.noTags()
}

// RemoveAccessControlEntryRecord (type 19, version 0) deletes the ACL with
// an id.
type RemoveAccessControlEntryRecord struct {
	ID [16]byte
}

func (*RemoveAccessControlEntryRecord) Type() int16       { return RemoveAccessControlEntryRecordType }
func (*RemoveAccessControlEntryRecord) Version() int16    { return 0 }
func (*RemoveAccessControlEntryRecord) maxVersion() int16 { return 0 }

func (r *RemoveAccessControlEntryRecord) AppendTo(dst []byte) []byte {
	dst = kbin.AppendUuid(dst, r.ID)
	return appendTags(dst, nil)
}

func (r *RemoveAccessControlEntryRecord) readFrom(d *decoder, _ int16) {
	r.ID = d.uuid()
	d.noTags()
}
