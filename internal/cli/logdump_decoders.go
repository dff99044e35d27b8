package cli

import (
	"encoding/binary"
	"fmt"
	"reflect"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Decoders of internal topics' records for `log dump` (kafka-dump-log's
// --offsets-decoder and --transaction-log-decoder): the key and value of
// each record are printed by their Kafka record types. A record type this
// build does not know is shown as such, not counted as a problem.

// kmsgRecord is a generated key or value type of franz-go's kmsg.
type kmsgRecord interface{ ReadFrom([]byte) error }

// describeInternal decodes one key/value pair with the types read picks.
func (d *dumper) describeInternal(path string, pos, offset int64, r kmsgRecordPair) string {
	var b strings.Builder
	part := func(label string, raw []byte, rec kmsgRecord, name string) {
		b.WriteString(" " + label + ": ")
		switch {
		case raw == nil:
			b.WriteString("null")
		case rec == nil:
			b.WriteString(fmt.Sprintf("unknown %s (%d bytes)", name, len(raw)))
		default:
			if err := rec.ReadFrom(raw); err != nil {
				d.problem(path, "position %d: offset %d: %s: %v", pos, offset, label, err)
				b.WriteString(fmt.Sprintf("Error at %d, skipping. %v", offset, err))
				return
			}
			t := reflect.TypeOf(rec).Elem().Name()
			b.WriteString(fmt.Sprintf("type: %s version: %d data: %s", t, int16(binary.BigEndian.Uint16(raw)), formatFields(reflect.ValueOf(rec))))
		}
	}
	part("key", r.rawKey, r.key, r.kind)
	part("payload", r.rawValue, r.value, r.kind)
	return strings.TrimPrefix(b.String(), " ")
}

// kmsgRecordPair is a record's raw key and value and the types to decode
// them with (nil: not known here).
type kmsgRecordPair struct {
	rawKey, rawValue []byte
	key, value       kmsgRecord
	kind             string
}

// offsetsRecord picks the __consumer_offsets types of a record by its key
// version: 0 and 1 offset commits, 2 classic group metadata; 3 and above
// are the KIP-848 consumer group records, printed by type number.
func offsetsRecord(key, value []byte) kmsgRecordPair {
	p := kmsgRecordPair{rawKey: key, rawValue: value}
	if len(key) < 2 {
		p.kind = "record"
		return p
	}
	switch v := int16(binary.BigEndian.Uint16(key)); v {
	case 0, 1:
		p.key, p.value = new(kmsg.OffsetCommitKey), new(kmsg.OffsetCommitValue)
	case 2:
		p.key, p.value = new(kmsg.GroupMetadataKey), new(kmsg.GroupMetadataValue)
	default:
		p.kind = fmt.Sprintf("consumer group record type %d", v)
	}
	return p
}

// transactionLogRecord picks the __transaction_state types (key version 0).
func transactionLogRecord(key, value []byte) kmsgRecordPair {
	p := kmsgRecordPair{rawKey: key, rawValue: value}
	if len(key) < 2 || binary.BigEndian.Uint16(key) != 0 {
		p.kind = "transaction log record"
		return p
	}
	p.key, p.value = new(kmsg.TxnMetadataKey), new(kmsg.TxnMetadataValue)
	return p
}
