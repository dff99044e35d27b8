package raft

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"gregor/internal/metadata"
	"gregor/internal/record"
)

func TestBootstrapCheckpoint(t *testing.T) {
	dir := t.TempDir()
	if recs, err := ReadBootstrapCheckpoint(dir); err != nil || recs != nil {
		t.Fatalf("no file: %v, %v", recs, err)
	}
	want := []metadata.Record{
		&metadata.FeatureLevelRecord{Name: metadata.MetadataVersionFeature, FeatureLevel: metadata.LatestMetadataVersion},
		&metadata.UserScramCredentialRecord{Name: "alice", Mechanism: 1, Salt: []byte("s"), StoredKey: []byte("k1"), ServerKey: []byte("k2"), Iterations: 4096},
	}
	if err := WriteBootstrapCheckpoint(dir, want); err != nil {
		t.Fatal(err)
	}
	got, err := ReadBootstrapCheckpoint(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("records\n got %+v\nwant %+v", got, want)
	}

	// Kafka's file: a header without Gregor's Raft position.
	must := func(b []byte, err error) []byte {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	opts := func(base int64, control bool) record.BuilderOptions {
		return record.BuilderOptions{BaseOffset: base, Codec: record.CodecNone, ProducerID: record.NoProducerID,
			ProducerEpoch: record.NoProducerEpoch, BaseSequence: record.NoSequence, Control: control}
	}
	header := binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint16(nil, snapshotHeaderVersion), 0)
	header = binary.AppendUvarint(header, 0)
	var kafka []byte
	for _, part := range [][]byte{
		must(buildControlBatch(opts(0, true), 0, controlTypeSnapshotHeader, header)),
		must(func() ([]byte, error) {
			b := record.NewBuilder(opts(1, false))
			b.Append(0, nil, metadata.Encode(want[0]), nil)
			return b.Build()
		}()),
		must(buildControlBatch(opts(2, true), 0, controlTypeSnapshotFooter, binary.AppendUvarint(binary.BigEndian.AppendUint16(nil, 0), 0))),
	} {
		kafka = append(kafka, part...)
	}
	if err := os.WriteFile(filepath.Join(dir, BootstrapCheckpointName), kafka, 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadBootstrapCheckpoint(dir); err != nil || !reflect.DeepEqual(got, want[:1]) {
		t.Fatalf("Kafka's bootstrap file: %+v, %v", got, err)
	}

	if err := os.WriteFile(filepath.Join(dir, BootstrapCheckpointName), []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadBootstrapCheckpoint(dir); err == nil {
		t.Fatal("a corrupt bootstrap file read")
	}
}
