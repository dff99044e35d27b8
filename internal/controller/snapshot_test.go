package controller

import (
	"reflect"
	"testing"

	"gregor/internal/metadata"
)

// TestSnapshotRecords: the controller hands the quorum its image's records,
// encoded, only for the offset its image is at.
func TestSnapshotRecords(t *testing.T) {
	n := startNode(t, metadataDir(t), testConfig())
	if resp := n.createTopics(false, newTopic("orders", 3, 1)); resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create: error %d", resp.Topics[0].ErrorCode)
	}
	img := n.c.Image()
	values, ok := n.c.SnapshotRecords(img.Offset + 1)
	if !ok {
		t.Fatalf("no snapshot at the image's end offset %d", img.Offset+1)
	}
	want := img.Records()
	if len(values) != len(want) {
		t.Fatalf("%d records, want %d", len(values), len(want))
	}
	for i, v := range values {
		r, err := metadata.Decode(v)
		if err != nil || !reflect.DeepEqual(r, want[i]) {
			t.Fatalf("record %d: %+v (%v), want %+v", i, r, err, want[i])
		}
	}
	if _, ok := n.c.SnapshotRecords(img.Offset); ok {
		t.Fatal("a snapshot for an offset the image is not at")
	}
}
