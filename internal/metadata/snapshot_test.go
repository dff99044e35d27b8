package metadata

import (
	"fmt"
	"log/slog"
	"maps"
	"reflect"
	"slices"
	"testing"
)

// deltaView is what a publisher can learn from one delta, in a form tests
// compare whole.
type deltaView struct {
	Created    []string // name/first id byte
	Deleted    []string
	Partitions []string // topic-partition: previous leader/epoch -> current leader/epoch
	Configs    []ConfigResource
	Brokers    []int32
	Features   map[string]int16
}

func viewOf(d *Delta) deltaView {
	v := deltaView{Configs: d.ChangedConfigs(), Brokers: d.ChangedBrokers(), Features: d.ChangedFeatures()}
	for _, t := range d.CreatedTopics() {
		v.Created = append(v.Created, fmt.Sprintf("%s/%d", t.Name, t.ID[0]))
	}
	for _, t := range d.DeletedTopics() {
		v.Deleted = append(v.Deleted, fmt.Sprintf("%s/%d", t.Name, t.ID[0]))
	}
	for _, c := range d.ChangedPartitions() {
		prev := "new"
		if c.Previous != nil {
			prev = fmt.Sprintf("%d/%d", c.Previous.Leader, c.Previous.LeaderEpoch)
		}
		v.Partitions = append(v.Partitions, fmt.Sprintf("%s-%d %s -> %d/%d", c.TopicName, c.Partition, prev, c.Current.Leader, c.Current.LeaderEpoch))
	}
	return v
}

type publication struct {
	delta deltaView
	base  *Image
	img   *Image
}

type deltaRecorder struct{ got []publication }

func (r *deltaRecorder) Publish(d *Delta, img *Image) {
	r.got = append(r.got, publication{viewOf(d), d.Base(), img})
}

// commitAll hands batches to a loader with consecutive offsets from first.
func commitAll(l *Loader, first int64, batches ...[]Record) int64 {
	for _, recs := range batches {
		l.HandleCommit(Batch{BaseOffset: first, LastOffset: first + int64(len(recs)) - 1, Epoch: 1, Records: recs})
		first += int64(len(recs))
	}
	return first
}

// snapshotOf is the snapshot a node would take of img.
func snapshotOf(img *Image, epoch int32) Snapshot {
	return Snapshot{EndOffset: img.Offset + 1, Epoch: epoch, Records: img.Records()}
}

// TestLoaderSnapshotDelta: a broker that fell behind gets a snapshot of a
// cluster where much happened; its publishers get one delta that says
// exactly what changed between its old image and the snapshot's.
func TestLoaderSnapshotDelta(t *testing.T) {
	a, b, c, c2, d := uuidOf(1), uuidOf(2), uuidOf(3), uuidOf(4), uuidOf(5)
	cfg := func(typ int8, res, name string, value *string) *ConfigRecord {
		return &ConfigRecord{ResourceType: typ, ResourceName: res, Name: name, Value: value}
	}
	before := [][]Record{{
		&FeatureLevelRecord{Name: MetadataVersionFeature, FeatureLevel: 21},
		&FeatureLevelRecord{Name: "group.version", FeatureLevel: 1},
		broker(1, 10, false), broker(2, 20, false), broker(3, 30, false), broker(5, 50, false),
		&TopicRecord{Name: "a", TopicID: a}, partRec(a, 0, 1, 2), partRec(a, 1, 2, 1),
		&TopicRecord{Name: "b", TopicID: b}, partRec(b, 0, 1),
		&TopicRecord{Name: "c", TopicID: c}, partRec(c, 0, 1), partRec(c, 1, 1),
		cfg(ConfigResourceTopic, "a", "retention.ms", strp("1")),
		cfg(ConfigResourceTopic, "b", "retention.ms", strp("2")),
		cfg(ConfigResourceTopic, "c", "cleanup.policy", strp("compact")),
		cfg(ConfigResourceBroker, "", "log.retention.ms", strp("5")),
		cfg(ConfigResourceBroker, "3", "num.io.threads", strp("4")),
		&ProducerIdsRecord{BrokerID: 1, BrokerEpoch: 10, NextProducerID: 1000},
	}}
	leaderTo2 := NewPartitionChangeRecord(a, 0)
	leaderTo2.Leader = 2
	leaderTo2.ISR = []int32{2}
	// What the broker missed: the rest of the controller's log.
	missed := [][]Record{{
		&RemoveTopicRecord{TopicID: b},
		&RemoveTopicRecord{TopicID: c},
		&TopicRecord{Name: "c", TopicID: c2}, partRec(c2, 0, 2),
		&TopicRecord{Name: "d", TopicID: d}, partRec(d, 0, 3),
		leaderTo2, partRec(a, 2, 1),
		cfg(ConfigResourceTopic, "a", "retention.ms", nil),
		cfg(ConfigResourceBroker, "", "log.retention.ms", strp("6")),
		&FenceBrokerRecord{ID: 2, Epoch: 20},
		broker(3, 60, true),
		broker(4, 70, true),
		&FeatureLevelRecord{Name: "group.version", FeatureLevel: 0},
		&FeatureLevelRecord{Name: MetadataVersionFeature, FeatureLevel: 25},
		&ProducerIdsRecord{BrokerID: 1, BrokerEpoch: 10, NextProducerID: 2000},
	}}

	controller := NewLoader("cluster-1", slog.New(slog.DiscardHandler))
	end := commitAll(controller, 0, before...)
	behind := NewLoader("cluster-1", slog.New(slog.DiscardHandler))
	commitAll(behind, 0, before...)
	commitAll(controller, end, missed...)
	want := controller.Image()

	rec := &deltaRecorder{}
	behind.AddPublisher(rec)
	old := behind.Image()
	rec.got = nil
	behind.HandleSnapshot(snapshotOf(want, 7))

	if len(rec.got) != 1 {
		t.Fatalf("published %d times, want once", len(rec.got))
	}
	pub := rec.got[0]
	img := behind.Image()
	if pub.img != img || pub.base != old {
		t.Fatal("published image/base are not the loader's new/old image")
	}
	if img.Offset != want.Offset || img.Epoch != 7 || img.ClusterID != "cluster-1" {
		t.Fatalf("offset/epoch/cluster = %d/%d/%q, want %d/7/cluster-1", img.Offset, img.Epoch, img.ClusterID, want.Offset)
	}
	sameState(t, "after snapshot", img, want)
	wantView := deltaView{
		Created: []string{"c/4", "d/5"},
		Deleted: []string{"b/2", "c/3"},
		Partitions: []string{
			"a-0 1/0 -> 2/1", // leader moved
			"a-2 new -> 1/0", // partition added
			"c-0 new -> 2/0", // the recreated c
			"d-0 new -> 3/0",
			// a-1 did not change and is not reported
		},
		Configs: []ConfigResource{
			{ConfigResourceTopic, "a"}, // all configs removed
			{ConfigResourceTopic, "b"}, // deleted with its topic
			{ConfigResourceTopic, "c"}, // the old c's configs are gone
			{ConfigResourceBroker, ""},
		},
		Brokers:  []int32{2, 3, 4}, // fenced, re-registered, new; 1 and 5 unchanged
		Features: map[string]int16{"group.version": 0, MetadataVersionFeature: 25},
	}
	if !reflect.DeepEqual(pub.delta, wantView) {
		t.Fatalf("delta:\n got %+v\nwant %+v", pub.delta, wantView)
	}
	// The deleted topics are reported as they were, so a publisher can
	// find (and delete) the old logs by id.
	d2 := imageDiff(old, img)
	for _, top := range d2.DeletedTopics() {
		if top != old.Topics.TopicByID(top.ID) {
			t.Fatalf("deleted topic %s is not the old image's", top.Name)
		}
	}
	if img.BrokerConfigs(3)["num.io.threads"] != "4" || img.NextProducerID != 2000 || !img.Brokers[2].Fenced {
		t.Fatalf("image content wrong: %+v", img)
	}

	// Commits continue after the snapshot, on top of its image.
	behind.HandleCommit(Batch{BaseOffset: want.Offset + 1, LastOffset: want.Offset + 1, Epoch: 7,
		Records: []Record{&UnfenceBrokerRecord{ID: 2, Epoch: 20}}})
	if got := behind.Image(); got.Offset != want.Offset+1 || got.Brokers[2].Fenced || behind.ErrorCount() != 0 {
		t.Fatalf("commit after snapshot: offset %d fenced %t errors %d", got.Offset, got.Brokers[2].Fenced, behind.ErrorCount())
	}
	if len(rec.got) != 2 || !slices.Equal(rec.got[1].delta.Brokers, []int32{2}) {
		t.Fatalf("commit after snapshot published %+v", rec.got[len(rec.got)-1].delta)
	}
}

// TestLoaderSnapshotOfSameState: a snapshot of the state the loader already
// has changes nothing but the offset and epoch, and says so.
func TestLoaderSnapshotOfSameState(t *testing.T) {
	l := NewLoader("c", slog.New(slog.DiscardHandler))
	commitAll(l, 0, historyBatches()...)
	rec := &deltaRecorder{}
	l.AddPublisher(rec)
	old := l.Image()
	// Through the wire, so empty lists come back where the log had nil.
	l.HandleSnapshot(Snapshot{EndOffset: old.Offset + 101, Epoch: 9, Records: throughWire(t, old.Records())})
	if len(rec.got) != 2 {
		t.Fatalf("published %d times, want 2", len(rec.got))
	}
	if v := rec.got[1].delta; !reflect.DeepEqual(v, deltaView{Features: map[string]int16{}}) {
		t.Fatalf("delta of an unchanged image: %+v", v)
	}
	if img := l.Image(); img.Offset != old.Offset+100 || img.Epoch != 9 {
		t.Fatalf("offset/epoch = %d/%d", img.Offset, img.Epoch)
	}
}

// TestLoaderSnapshotFromEmpty: the first thing a new node gets may be a
// snapshot; everything in it is new. A late publisher then gets the same.
func TestLoaderSnapshotFromEmpty(t *testing.T) {
	want, _, err := replayAll(t, historyBatches()...)
	if err != nil {
		t.Fatal(err)
	}
	l := NewLoader("c", slog.New(slog.DiscardHandler))
	early := &deltaRecorder{}
	l.AddPublisher(early)
	l.HandleSnapshot(snapshotOf(want, 3))
	late := &deltaRecorder{}
	l.AddPublisher(late)
	for name, r := range map[string]*deltaRecorder{"early": early, "late": late} {
		if len(r.got) != 1 {
			t.Fatalf("%s publisher: %d publications", name, len(r.got))
		}
		v := r.got[0].delta
		if !slices.Equal(v.Created, []string{"orders/4", "payments/2"}) || v.Deleted != nil || len(v.Partitions) != 3 ||
			!slices.Equal(v.Brokers, []int32{1, 2, 3, 4}) || len(v.Configs) != 3 || !maps.Equal(v.Features, want.Features) {
			t.Fatalf("%s publisher's delta: %+v", name, v)
		}
		if !r.got[0].base.IsEmpty() || r.got[0].base.ClusterID != "c" {
			t.Fatalf("%s publisher's base is not the empty image", name)
		}
	}
}

// TestLoaderSnapshotDropsBroker: a broker missing from the snapshot is
// reported changed and is gone from the image.
func TestLoaderSnapshotDropsBroker(t *testing.T) {
	l := NewLoader("c", slog.New(slog.DiscardHandler))
	commitAll(l, 0, []Record{broker(1, 1, false), broker(2, 2, false)})
	rec := &deltaRecorder{}
	l.AddPublisher(rec)
	l.HandleSnapshot(Snapshot{EndOffset: 10, Epoch: 2, Records: []Record{broker(1, 1, false)}})
	pub := rec.got[len(rec.got)-1]
	if !slices.Equal(pub.delta.Brokers, []int32{2}) || pub.img.Brokers[2] != nil || len(pub.img.Brokers) != 1 {
		t.Fatalf("brokers changed %v, image %v", pub.delta.Brokers, pub.img.Brokers)
	}
}

// TestLoaderSnapshotBadRecords: bad records in a snapshot are counted and
// skipped; the rest loads.
func TestLoaderSnapshotBadRecords(t *testing.T) {
	l := NewLoader("c", slog.New(slog.DiscardHandler))
	l.HandleSnapshot(Snapshot{EndOffset: 5, Epoch: 1, Records: []Record{
		&TopicRecord{Name: "a", TopicID: uuidOf(1)},
		partRec(uuidOf(9), 0, 1),            // unknown topic
		&FenceBrokerRecord{ID: 3, Epoch: 1}, // unknown broker
		partRec(uuidOf(1), 0, 1),
	}})
	if l.ErrorCount() != 2 {
		t.Fatalf("error count = %d, want 2", l.ErrorCount())
	}
	if top := l.Image().Topics.Topic("a"); top == nil || top.NumPartitions() != 1 || l.Image().Offset != 4 {
		t.Fatalf("image = %+v", l.Image())
	}
}

func TestLoaderLeader(t *testing.T) {
	l := NewLoader("c", nil)
	if id, epoch := l.Leader(); id != -1 || epoch != -1 {
		t.Fatalf("initial leader = %d/%d", id, epoch)
	}
	l.HandleLeaderChange(3, 5)
	if id, epoch := l.Leader(); id != 3 || epoch != 5 {
		t.Fatalf("leader = %d/%d", id, epoch)
	}
	l.HandleLeaderChange(-1, 6) // election in progress
	if id, epoch := l.Leader(); id != -1 || epoch != 6 {
		t.Fatalf("leader = %d/%d", id, epoch)
	}
}

// TestImageDiffOfRelatedImages: between an image and the one a delta made
// of it (which share what the delta left alone), imageDiff reports what the
// delta reports, at each step of a history.
func TestImageDiffOfRelatedImages(t *testing.T) {
	img := EmptyImage()
	offset := int64(0)
	for i, recs := range historyBatches() {
		d := NewDelta(img)
		if err := d.ReplayBatch(Batch{BaseOffset: offset, LastOffset: offset + int64(len(recs)) - 1, Epoch: 1, Records: recs}); err != nil {
			t.Fatal(err)
		}
		offset += int64(len(recs))
		next := d.Apply()
		replayed, diffed := viewOf(d), viewOf(imageDiff(img, next))
		// A delta lists every config resource a record touched, even one
		// set back to its value; imageDiff lists those that differ.
		replayed.Configs = slices.DeleteFunc(replayed.Configs, func(r ConfigResource) bool {
			return maps.Equal(img.Configs(r), next.Configs(r))
		})
		if len(replayed.Configs) == 0 {
			replayed.Configs = nil
		}
		if len(diffed.Configs) == 0 {
			diffed.Configs = nil
		}
		if !reflect.DeepEqual(replayed, diffed) {
			t.Fatalf("batch %d:\nreplayed %+v\n  diffed %+v", i, replayed, diffed)
		}
		img = next
	}
}
