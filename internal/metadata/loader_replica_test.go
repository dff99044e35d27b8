package metadata_test

import (
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"gregor/internal/log"
	"gregor/internal/metadata"
	"gregor/internal/replica"
)

// TestSnapshotDeletesLogsOfTopicsDeletedWhileAway drives a real replica
// manager (on real log dirs) through a snapshot: a broker that was away
// while one topic was deleted and another recreated under the same name
// must drop the deleted topic's log, replace the recreated one's, keep the
// unchanged one's data, and follow a moved leader.
func TestSnapshotDeletesLogsOfTopicsDeletedWhileAway(t *testing.T) {
	const self = 1
	dir := t.TempDir()
	logs, err := log.NewManager(log.ManagerConfig{Dirs: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logs.Close() })
	rm := replica.New(replica.Config{NodeID: self, Logger: slog.New(slog.DiscardHandler)}, logs)
	loader := metadata.NewLoader("c", slog.New(slog.DiscardHandler))
	loader.AddPublisher(rm)

	id := func(b byte) [16]byte { return [16]byte{b, 0xee} }
	part := func(topic [16]byte, p int32, replicas ...int32) *metadata.PartitionRecord {
		return &metadata.PartitionRecord{RecordVersion: metadata.PartitionRecordVersion, PartitionID: p, TopicID: topic,
			Replicas: replicas, ISR: replicas, RemovingReplicas: []int32{}, AddingReplicas: []int32{},
			Leader: replicas[0], Directories: make([][16]byte, len(replicas))}
	}
	gone, kept, oldC, newC := id(1), id(2), id(3), id(4)
	history := []metadata.Record{
		&metadata.FeatureLevelRecord{Name: metadata.MetadataVersionFeature, FeatureLevel: metadata.LatestMetadataVersion},
		&metadata.TopicRecord{Name: "gone", TopicID: gone}, part(gone, 0, self),
		&metadata.TopicRecord{Name: "kept", TopicID: kept}, part(kept, 0, self, 2),
		&metadata.TopicRecord{Name: "c", TopicID: oldC}, part(oldC, 0, self),
	}
	loader.HandleCommit(metadata.Batch{BaseOffset: 0, LastOffset: int64(len(history)) - 1, Epoch: 1, Records: history})
	for _, name := range []string{"gone", "kept", "c"} {
		if _, ok := rm.Hosted(log.TopicPartition{Topic: name, Partition: 0}); !ok {
			t.Fatalf("%s-0 not hosted before the snapshot", name)
		}
	}
	keptLog, _ := logs.Get(log.TopicPartition{Topic: "kept", Partition: 0})

	// The controller's state after what this broker missed.
	moved := metadata.NewPartitionChangeRecord(kept, 0)
	moved.Leader = 2
	missed := []metadata.Record{
		&metadata.RemoveTopicRecord{TopicID: gone},
		&metadata.RemoveTopicRecord{TopicID: oldC},
		&metadata.TopicRecord{Name: "c", TopicID: newC}, part(newC, 0, self),
		moved,
	}
	delta := metadata.NewDelta(loader.Image())
	if err := delta.ReplayBatch(metadata.Batch{BaseOffset: 100, LastOffset: 100 + int64(len(missed)) - 1, Epoch: 2, Records: missed}); err != nil {
		t.Fatal(err)
	}
	controller := delta.Apply()
	loader.HandleSnapshot(metadata.Snapshot{EndOffset: controller.Offset + 1, Epoch: 2, Records: controller.Records()})

	if _, ok := rm.Hosted(log.TopicPartition{Topic: "gone", Partition: 0}); ok {
		t.Fatal("gone-0 still hosted")
	}
	var onDisk []string
	for tp := range logs.All() {
		onDisk = append(onDisk, tp.String())
	}
	slices.Sort(onDisk)
	if !slices.Equal(onDisk, []string{"c-0", "kept-0"}) {
		t.Fatalf("logs after the snapshot: %v", onDisk)
	}
	if _, err := os.Stat(filepath.Join(dir, "gone-0")); !os.IsNotExist(err) {
		t.Fatalf("gone-0's directory is still live: %v", err)
	}
	if got, _ := logs.TopicID(log.TopicPartition{Topic: "c", Partition: 0}); got != newC {
		t.Fatalf("c-0's log has topic id %x, want the recreated topic's %x", got, newC)
	}
	if now, _ := logs.Get(log.TopicPartition{Topic: "kept", Partition: 0}); now != keptLog {
		t.Fatal("kept-0's log was reopened or replaced")
	}
	p, ok := rm.Hosted(log.TopicPartition{Topic: "kept", Partition: 0})
	if !ok || p.IsLeader() {
		t.Fatalf("kept-0 hosted=%t; it must be hosted as a follower of broker 2", ok)
	}
}
