package cli

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/metadata"
	"gregor/internal/record"
)

// Kafka's ControlRecordType ids: the second int16 of a control record's key.
const (
	controlAbort          = 0
	controlCommit         = 1
	controlLeaderChange   = 2
	controlSnapshotHeader = 3
	controlSnapshotFooter = 4
	controlKRaftVersion   = 5
	controlKRaftVoters    = 6
)

var controlTypeNames = map[uint16]string{
	controlAbort: "ABORT", controlCommit: "COMMIT", controlLeaderChange: "LEADER_CHANGE",
	controlSnapshotHeader: "SNAPSHOT_HEADER", controlSnapshotFooter: "SNAPSHOT_FOOTER",
	controlKRaftVersion: "KRAFT_VERSION", controlKRaftVoters: "KRAFT_VOTERS",
}

// describeControlRecord decodes a control record: transaction markers,
// KRaft's LeaderChangeMessage and snapshot header and footer; other types
// are named with their id, as kafka-dump-log does.
func describeControlRecord(r record.Record) string {
	if len(r.Key) < 4 {
		return fmt.Sprintf("controlType: UNKNOWN (key of %d bytes, want 4)", len(r.Key))
	}
	typ := binary.BigEndian.Uint16(r.Key[2:])
	switch typ {
	case controlAbort, controlCommit:
		var m kmsg.EndTxnMarker
		if err := m.ReadFrom(r.Value); err != nil {
			return fmt.Sprintf("endTxnMarker: %s (undecodable: %v)", controlTypeNames[typ], err)
		}
		return fmt.Sprintf("endTxnMarker: %s coordinatorEpoch: %d", controlTypeNames[typ], m.CoordinatorEpoch)
	case controlLeaderChange:
		var m kmsg.LeaderChangeMessage
		if err := m.ReadFrom(r.Value); err != nil {
			return fmt.Sprintf("LeaderChange (undecodable: %v)", err)
		}
		return fmt.Sprintf("LeaderChange version: %d leaderId: %d voters: %s grantingVoters: %s",
			m.Version, m.LeaderID, voterIDs(m.Voters), voterIDs(m.GrantingVoters))
	case controlSnapshotHeader:
		// SnapshotHeaderRecord v0: version int16, lastContainedLogTimestamp int64, tags.
		rd := kbin.Reader{Src: r.Value}
		version, ts := rd.Int16(), rd.Int64()
		if !rd.Ok() {
			return "SnapshotHeader (undecodable: too short)"
		}
		return fmt.Sprintf("SnapshotHeader version: %d lastContainedLogTimestamp: %d", version, ts)
	case controlSnapshotFooter:
		rd := kbin.Reader{Src: r.Value}
		version := rd.Int16()
		if !rd.Ok() {
			return "SnapshotFooter (undecodable: too short)"
		}
		return fmt.Sprintf("SnapshotFooter version: %d", version)
	}
	name, ok := controlTypeNames[typ]
	if !ok {
		name = "UNKNOWN"
	}
	return fmt.Sprintf("controlType: %s(%d)", name, typ)
}

func voterIDs(vs []kmsg.LeaderChangeMessageVoter) string {
	ids := make([]int32, len(vs))
	for i, v := range vs {
		ids[i] = v.VoterID
	}
	return "[" + joinInt32(ids) + "]"
}

// describeMetadataRecord decodes a __cluster_metadata record value. A type
// this build does not know is shown, not counted as a problem (a newer
// Kafka writes records Gregor lacks); bytes that do not parse are a problem.
func (d *dumper) describeMetadataRecord(path string, pos, offset int64, value []byte) string {
	rec, err := metadata.Decode(value)
	if err != nil {
		if !errors.Is(err, metadata.ErrUnknownRecord) {
			d.problem(path, "position %d: offset %d: %v", pos, offset, err)
		}
		return fmt.Sprintf("Error at %d, skipping. %v", offset, err)
	}
	if c, ok := rec.(*metadata.UserScramCredentialRecord); ok {
		// Redacted, as Kafka's metadata shell does by default: with the
		// keys a reader could attack the password offline or pose as the
		// server.
		return fmt.Sprintf("type: UserScramCredentialRecord version: %d data: {Name:%s Mechanism:%d Salt:[redacted] StoredKey:[redacted] ServerKey:[redacted] Iterations:%d}",
			rec.Version(), c.Name, c.Mechanism, c.Iterations)
	}
	name := reflect.TypeOf(rec).String()
	name = name[strings.LastIndex(name, ".")+1:]
	return fmt.Sprintf("type: %s version: %d data: %s", name, rec.Version(), formatFields(reflect.ValueOf(rec)))
}

// formatFields prints a struct as %+v does, except that Kafka UUIDs
// ([16]byte) are printed as Kafka prints them (URL-safe base64).
func formatFields(v reflect.Value) string {
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return "<nil>"
		}
		v = v.Elem()
	}
	switch {
	case v.Kind() == reflect.Array && v.Len() == 16 && v.Type().Elem().Kind() == reflect.Uint8:
		var id [16]byte
		reflect.Copy(reflect.ValueOf(id[:]), v)
		return base64.RawURLEncoding.EncodeToString(id[:])
	case v.Kind() == reflect.Slice && v.Type().Elem().Kind() != reflect.Uint8:
		parts := make([]string, v.Len())
		for i := range parts {
			parts[i] = formatFields(v.Index(i))
		}
		return "[" + strings.Join(parts, " ") + "]"
	case v.Kind() == reflect.Struct:
		t := v.Type()
		var parts []string
		for i := range t.NumField() {
			if !t.Field(i).IsExported() {
				continue
			}
			parts = append(parts, t.Field(i).Name+":"+formatFields(v.Field(i)))
		}
		return "{" + strings.Join(parts, " ") + "}"
	}
	return fmt.Sprintf("%v", v.Interface())
}
