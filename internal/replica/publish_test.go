package replica

import (
	"fmt"
	"log/slog"
	"reflect"
	"testing"
	"time"

	"gregor/internal/config"
	"gregor/internal/log"
	"gregor/internal/metadata"
)

const testNode = 1

func newTestManager(t testing.TB) *Manager {
	t.Helper()
	logs, err := log.NewManager(log.ManagerConfig{Dirs: []string{t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logs.Close() })
	return New(Config{NodeID: testNode, Logger: slog.New(slog.DiscardHandler)}, logs)
}

// feed replays one batch on top of img and publishes the result to every
// manager; it returns the new image.
func feed(t testing.TB, img *metadata.Image, ms []*Manager, recs ...metadata.Record) *metadata.Image {
	t.Helper()
	d := metadata.NewDelta(img)
	if err := d.ReplayBatch(metadata.Batch{BaseOffset: img.Offset + 1, LastOffset: img.Offset + int64(len(recs)), Epoch: 1, Records: recs}); err != nil {
		t.Fatal(err)
	}
	next := d.Apply()
	for _, m := range ms {
		m.Publish(d, next)
	}
	return next
}

func topicID(n int) [16]byte { return [16]byte{byte(n >> 8), byte(n), 0xee} }

func partRecord(id [16]byte, p int32, replicas ...int32) *metadata.PartitionRecord {
	return &metadata.PartitionRecord{RecordVersion: metadata.PartitionRecordVersion, PartitionID: p, TopicID: id,
		Replicas: replicas, ISR: replicas, RemovingReplicas: []int32{}, AddingReplicas: []int32{},
		Leader: replicas[0], Directories: make([][16]byte, len(replicas))}
}

func createTopic(name string, id [16]byte, parts int, replicas ...int32) []metadata.Record {
	recs := []metadata.Record{&metadata.TopicRecord{Name: name, TopicID: id}}
	for p := 0; p < parts; p++ {
		recs = append(recs, partRecord(id, int32(p), replicas...))
	}
	return recs
}

type hostedView struct {
	TopicID [16]byte
	Leader  bool
	Config  config.Topic
}

// hosted is what a manager hosts, with each partition's topic id,
// leadership and config, and the logs on disk.
func hosted(m *Manager) (map[log.TopicPartition]hostedView, []log.TopicPartition) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := map[log.TopicPartition]hostedView{}
	for tp, p := range m.partitions {
		out[tp] = hostedView{p.TopicID, p.IsLeader(), p.Config()}
	}
	var logs []log.TopicPartition
	for tp := range m.logs.All() {
		logs = append(logs, tp)
	}
	return out, logs
}

// TestPublishByDeltaMatchesFullReconcile drives one manager by deltas and
// another by full reconciles through creations, config changes,
// reassignments, a deletion and a re-creation under the same name, and
// requires the same hosted partitions, configs and logs after every step.
func TestPublishByDeltaMatchesFullReconcile(t *testing.T) {
	byDelta, full := newTestManager(t), newTestManager(t)
	fullOnly := &fullReconciler{full}
	ms := []*Manager{byDelta}
	img := metadata.EmptyImage()
	step := func(what string, recs ...metadata.Record) {
		t.Helper()
		img = feed(t, img, ms, recs...)
		fullOnly.publish(img)
		got, gotLogs := hosted(byDelta)
		want, wantLogs := hosted(full)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: by delta hosts %d partitions, full reconcile %d (or they differ)", what, len(got), len(want))
		}
		if len(gotLogs) != len(wantLogs) {
			t.Fatalf("%s: %d logs by delta, %d by full reconcile", what, len(gotLogs), len(wantLogs))
		}
	}
	for i := 0; i < 10; i++ {
		replicas := []int32{testNode}
		if i%3 == 2 {
			replicas = []int32{2} // hosted elsewhere
		}
		step(fmt.Sprintf("create topic %d", i), createTopic(fmt.Sprintf("t%d", i), topicID(i), 3, replicas...)...)
	}
	if got, _ := hosted(byDelta); len(got) != 7*3 {
		t.Fatalf("hosting %d partitions, want 21", len(got))
	}
	retention := "1234"
	step("topic config", &metadata.ConfigRecord{ResourceType: metadata.ConfigResourceTopic, ResourceName: "t1", Name: "retention.ms", Value: &retention})
	if got, _ := hosted(byDelta); got[log.TopicPartition{Topic: "t1", Partition: 2}].Config.RetentionMs != 1234 {
		t.Fatal("topic config change not applied")
	}
	step("reassign away", &metadata.PartitionChangeRecord{RecordVersion: 0, PartitionID: 1, TopicID: topicID(0),
		Leader: 2, Replicas: []int32{2}, ISR: []int32{2}, LeaderRecoveryState: metadata.NoLeaderRecoveryStateChange})
	step("reassign here", &metadata.PartitionChangeRecord{RecordVersion: 0, PartitionID: 0, TopicID: topicID(2),
		Leader: testNode, Replicas: []int32{testNode}, ISR: []int32{testNode}, LeaderRecoveryState: metadata.NoLeaderRecoveryStateChange})
	step("leader moves", &metadata.PartitionChangeRecord{RecordVersion: 0, PartitionID: 2, TopicID: topicID(0),
		Leader: 2, Replicas: []int32{testNode, 2}, ISR: []int32{testNode, 2}, LeaderRecoveryState: metadata.NoLeaderRecoveryStateChange})
	step("delete topic", &metadata.RemoveTopicRecord{TopicID: topicID(3)})
	step("recreate under the same name",
		append([]metadata.Record{&metadata.RemoveTopicRecord{TopicID: topicID(4)}}, createTopic("t4", topicID(99), 2, testNode)...)...)
	segmentMs := "3600000"
	step("broker default config", &metadata.ConfigRecord{ResourceType: metadata.ConfigResourceBroker, ResourceName: "", Name: "log.roll.ms", Value: &segmentMs})
	got, _ := hosted(byDelta)
	if got[log.TopicPartition{Topic: "t4", Partition: 0}].TopicID != topicID(99) {
		t.Fatal("recreated topic not hosted under its new id")
	}
	if got[log.TopicPartition{Topic: "t0", Partition: 0}].Config.SegmentMs != 3600000 {
		t.Fatal("broker default config change not applied")
	}
}

// fullReconciler publishes every image by a full reconcile.
type fullReconciler struct{ m *Manager }

func (f *fullReconciler) publish(img *metadata.Image) { f.m.reconcileAll(img) }

// TestPublishCostPerDelta measures publishing 20 CreateTopics of 25
// partitions each, by delta and by full reconcile; the figures are logged,
// not asserted (the e2e scale test does 10,000 partitions).
func TestPublishCostPerDelta(t *testing.T) {
	if testing.Short() {
		t.Skip("creates 1,000 logs")
	}
	const topics, parts = 20, 25
	for _, mode := range []string{"delta", "full"} {
		m := newTestManager(t)
		img := metadata.EmptyImage()
		var total, last time.Duration
		for i := 0; i < topics; i++ {
			recs := createTopic(fmt.Sprintf("t%d", i), topicID(i), parts, testNode)
			d := metadata.NewDelta(img)
			if err := d.ReplayBatch(metadata.Batch{BaseOffset: img.Offset + 1, LastOffset: img.Offset + int64(len(recs)), Records: recs}); err != nil {
				t.Fatal(err)
			}
			img = d.Apply()
			t0 := time.Now()
			if mode == "delta" {
				m.Publish(d, img)
			} else {
				m.reconcileAll(img)
			}
			last = time.Since(t0)
			total += last
		}
		// Publishing a config change of one topic: the cost that matters once
		// the partitions exist.
		value := "100000"
		d := metadata.NewDelta(img)
		if err := d.ReplayBatch(metadata.Batch{BaseOffset: img.Offset + 1, LastOffset: img.Offset + 1, Records: []metadata.Record{
			&metadata.ConfigRecord{ResourceType: metadata.ConfigResourceTopic, ResourceName: "t0", Name: "retention.ms", Value: &value}}}); err != nil {
			t.Fatal(err)
		}
		img = d.Apply()
		t0 := time.Now()
		if mode == "delta" {
			m.Publish(d, img)
		} else {
			m.reconcileAll(img)
		}
		configChange := time.Since(t0)
		got, _ := hosted(m)
		if len(got) != topics*parts {
			t.Fatalf("%s: hosting %d partitions", mode, len(got))
		}
		t.Logf("%s: %d topics x %d partitions published in %v, the last CreateTopics in %v; a topic config change then costs %v",
			mode, topics, parts, total, last, configChange)
		if err := m.logs.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
