package metadata

import (
	"github.com/twmb/franz-go/pkg/kbin"

	"gregor/internal/auth/sasl"
)

// MetadataVersionScram is the first metadata.version with SCRAM credentials
// in the log (Kafka's 3.5-IV2): below it the controller refuses
// AlterUserScramCredentials.
const MetadataVersionScram int16 = 11

// UserScramCredentialRecord (type 11, version 0) sets one user's credential
// for one SCRAM mechanism (Mechanism is Kafka's ScramMechanism type: 1
// SCRAM-SHA-256, 2 SCRAM-SHA-512). It holds what a server needs to verify a
// client and prove itself, never the password or the salted password.
type UserScramCredentialRecord struct {
	Name       string
	Mechanism  int8
	Salt       []byte
	StoredKey  []byte
	ServerKey  []byte
	Iterations int32
}

// NewUserScramCredentialRecord is the record that sets a user's credential
// for a mechanism (a sasl.ScramMechanism's Type).
func NewUserScramCredentialRecord(user string, mechanism int8, cred sasl.ScramCredential) *UserScramCredentialRecord {
	return &UserScramCredentialRecord{Name: user, Mechanism: mechanism, Salt: cred.Salt,
		StoredKey: cred.StoredKey, ServerKey: cred.ServerKey, Iterations: cred.Iterations}
}

func (*UserScramCredentialRecord) Type() int16       { return UserScramCredentialRecordType }
func (*UserScramCredentialRecord) Version() int16    { return 0 }
func (*UserScramCredentialRecord) maxVersion() int16 { return 0 }

func (r *UserScramCredentialRecord) AppendTo(dst []byte) []byte {
	dst = kbin.AppendCompactString(dst, r.Name)
	dst = kbin.AppendInt8(dst, r.Mechanism)
	dst = kbin.AppendCompactBytes(dst, r.Salt)
	dst = kbin.AppendCompactBytes(dst, r.StoredKey)
	dst = kbin.AppendCompactBytes(dst, r.ServerKey)
	dst = kbin.AppendInt32(dst, r.Iterations)
	return appendTags(dst, nil)
}

func (r *UserScramCredentialRecord) readFrom(d *decoder, _ int16) {
	r.Name = d.compactString()
	r.Mechanism = d.int8()
	r.Salt = d.compactBytes()
	r.StoredKey = d.compactBytes()
	r.ServerKey = d.compactBytes()
	r.Iterations = d.int32()
	d.noTags()
}

// RemoveUserScramCredentialRecord (type 22, version 0) deletes one user's
// credential for one mechanism.
type RemoveUserScramCredentialRecord struct {
	Name      string
	Mechanism int8
}

func (*RemoveUserScramCredentialRecord) Type() int16       { return RemoveUserScramCredentialRecordType }
func (*RemoveUserScramCredentialRecord) Version() int16    { return 0 }
func (*RemoveUserScramCredentialRecord) maxVersion() int16 { return 0 }

func (r *RemoveUserScramCredentialRecord) AppendTo(dst []byte) []byte {
	dst = kbin.AppendCompactString(dst, r.Name)
	dst = kbin.AppendInt8(dst, r.Mechanism)
	return appendTags(dst, nil)
}

func (r *RemoveUserScramCredentialRecord) readFrom(d *decoder, _ int16) {
	r.Name = d.compactString()
	r.Mechanism = d.int8()
	d.noTags()
}
