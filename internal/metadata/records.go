// Package metadata holds KRaft's cluster metadata: the records the quorum
// controller writes to the __cluster_metadata log (with Kafka's names, type ids,
// versions and byte layout), the immutable image every broker and controller
// builds by replaying them, the delta between two images, and the publishers
// that act on each new image.
//
// Nothing here does I/O. The raft package stores and commits records; the
// controller package decides which records to write; this package only says
// what they mean.
package metadata

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kbin"
)

// Record is one KRaft metadata record. Type and Version are Kafka's api key
// and schema version for the record; AppendTo appends the record's body in
// Kafka's flexible encoding (without the frame, see Encode).
type Record interface {
	Type() int16
	Version() int16
	AppendTo(dst []byte) []byte
}

// Kafka's api keys for the metadata records (metadata/src/main/resources/common/metadata).
const (
	RegisterBrokerRecordType            int16 = 0
	UnregisterBrokerRecordType          int16 = 1
	TopicRecordType                     int16 = 2
	PartitionRecordType                 int16 = 3
	ConfigRecordType                    int16 = 4
	PartitionChangeRecordType           int16 = 5
	FenceBrokerRecordType               int16 = 7
	UnfenceBrokerRecordType             int16 = 8
	RemoveTopicRecordType               int16 = 9
	UserScramCredentialRecordType       int16 = 11
	FeatureLevelRecordType              int16 = 12
	ClientQuotaRecordType               int16 = 14
	ProducerIdsRecordType               int16 = 15
	BrokerRegistrationChangeRecordType  int16 = 17
	AccessControlEntryRecordType        int16 = 18
	RemoveAccessControlEntryRecordType  int16 = 19
	NoOpRecordType                      int16 = 20
	RemoveUserScramCredentialRecordType int16 = 22
	ClearElrRecordType                  int16 = 28
)

// frameVersion is MetadataRecordSerde's only supported frame version. Frame
// version 0 was KRaft's 2.8 preview and is rejected, as Kafka does.
const frameVersion = 1

// ErrUnknownRecord is returned by Decode for a record type or version this
// package does not know.
var ErrUnknownRecord = errors.New("unknown metadata record")

// ErrCorruptRecord is returned by Decode for bytes that do not parse.
var ErrCorruptRecord = errors.New("corrupt metadata record")

// Encode returns the record in Kafka's MetadataRecordSerde frame: unsigned
// varint frame version (1), unsigned varint record type, unsigned varint record
// version, then the body. This is the value of one record in a
// __cluster_metadata batch.
func Encode(r Record) []byte {
	dst := make([]byte, 0, 64)
	dst = kbin.AppendUvarint(dst, frameVersion)
	dst = kbin.AppendUvarint(dst, uint32(uint16(r.Type())))
	dst = kbin.AppendUvarint(dst, uint32(uint16(r.Version())))
	return r.AppendTo(dst)
}

// EncodeAll encodes records, in order: a snapshot's contents as the metadata
// quorum stores them without knowing what they are.
func EncodeAll(records []Record) [][]byte {
	out := make([][]byte, len(records))
	for i, r := range records {
		out[i] = Encode(r)
	}
	return out
}

// decodable is implemented by every record type of this package.
type decodable interface {
	Record
	maxVersion() int16
	readFrom(d *decoder, version int16)
}

// newRecord returns an empty record for a type id, with Kafka's defaults set.
func newRecord(typ int16) decodable {
	switch typ {
	case RegisterBrokerRecordType:
		return &RegisterBrokerRecord{}
	case UnregisterBrokerRecordType:
		return &UnregisterBrokerRecord{}
	case TopicRecordType:
		return &TopicRecord{}
	case PartitionRecordType:
		return &PartitionRecord{}
	case ConfigRecordType:
		return &ConfigRecord{}
	case PartitionChangeRecordType:
		return &PartitionChangeRecord{}
	case FenceBrokerRecordType:
		return &FenceBrokerRecord{}
	case UnfenceBrokerRecordType:
		return &UnfenceBrokerRecord{}
	case RemoveTopicRecordType:
		return &RemoveTopicRecord{}
	case FeatureLevelRecordType:
		return &FeatureLevelRecord{}
	case ProducerIdsRecordType:
		return &ProducerIdsRecord{}
	case BrokerRegistrationChangeRecordType:
		return &BrokerRegistrationChangeRecord{}
	case NoOpRecordType:
		return &NoOpRecord{}
	case UserScramCredentialRecordType:
		return &UserScramCredentialRecord{}
	case RemoveUserScramCredentialRecordType:
		return &RemoveUserScramCredentialRecord{}
	case AccessControlEntryRecordType:
		return &AccessControlEntryRecord{}
	case RemoveAccessControlEntryRecordType:
		return &RemoveAccessControlEntryRecord{}
	case ClientQuotaRecordType:
		return &ClientQuotaRecord{}
	case ClearElrRecordType:
		return &ClearElrRecord{}
	}
	return nil
}

// Decode parses one framed record (the value of one record in a
// __cluster_metadata batch). It never panics: bad bytes give ErrCorruptRecord,
// a type or version it does not know gives ErrUnknownRecord. Like Kafka's
// serde it rejects trailing bytes after the record.
func Decode(b []byte) (Record, error) {
	d := &decoder{r: kbin.Reader{Src: b}}
	frame := d.uvarint()
	typ := d.uvarint()
	version := d.uvarint()
	if d.err != nil {
		return nil, fmt.Errorf("%w: frame header: %w", ErrCorruptRecord, d.err)
	}
	if frame != frameVersion {
		return nil, fmt.Errorf("%w: frame version %d (only frame version %d is supported)", ErrCorruptRecord, frame, frameVersion)
	}
	if typ > 0x7fff || version > 0x7fff {
		return nil, fmt.Errorf("%w: type %d version %d", ErrUnknownRecord, typ, version)
	}
	r := newRecord(int16(typ))
	if r == nil {
		return nil, fmt.Errorf("%w: type %d", ErrUnknownRecord, typ)
	}
	if int16(version) > r.maxVersion() {
		return nil, fmt.Errorf("%w: type %d version %d (highest known %d)", ErrUnknownRecord, typ, version, r.maxVersion())
	}
	r.readFrom(d, int16(version))
	if d.err == nil && len(d.r.Src) > 0 {
		d.fail(fmt.Errorf("%d byte(s) of garbage after the record", len(d.r.Src)))
	}
	if d.err != nil {
		return nil, fmt.Errorf("%w: type %d version %d: %w", ErrCorruptRecord, typ, version, d.err)
	}
	return r, nil
}

// clampVersion keeps an encoding version within a record's valid range, so a
// zero or out-of-range RecordVersion field still yields decodable bytes.
func clampVersion(v, highest int16) int16 {
	if v < 0 {
		return 0
	}
	if v > highest {
		return highest
	}
	return v
}
