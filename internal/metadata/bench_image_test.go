package metadata_test

// Image cost at scale (issue 4, "Benchmarks (reported)"): heap bytes per
// partition of an image built through the Loader, the time to replay the
// records of 10k and 100k partitions, and the cost of one more small commit
// on a big image (what every broker and controller pays per metadata batch).
//
//	go test -run '^$' -bench 'BenchmarkImage' -benchtime 5x ./internal/metadata/
//
// Figures on the 2-core development machine (2026-12-01, under load from
// other work; main is the commit before the image used persistent maps,
// built and run in the same session):
//
//	one commit on an image of 100,000 1-partition topics
//	  leader change (PartitionChangeRecord)      3–5 µs   (clone baseline 6–8 ms; main 5.4 ms)
//	  topic created, topic deleted, per commit   3–5 µs   (main 4.1 ms)
//	  the same on 10,000 topics of 10             4–6 µs   (clone baseline 0.9–1.0 ms)
//	live heap of an image of 1,000,000 partitions (3 replicas each)
//	  1,000 topics of 1,000                       320 B/partition (main 309)
//	  100,000 topics of 10                        336 B/partition (main 323)
//	  1,000,000 topics of 1                       480 B/partition (main 640)
//	replaying those 1,000,000 partitions          1.4 s / 1.6 s / 7.7 s (main 0.9 / 2.0 / 13.9 s)
//
// The records are the controller's (TopicRecord, then one PartitionRecord
// per partition with 3 replicas, leader = first replica), encoded as in the
// metadata log and decoded again, packed into batches of at most 10,000
// records as one CreateTopics commit is (QuorumController's
// MAX_RECORDS_PER_USER_OP).

import (
	"encoding/binary"
	"fmt"
	"log/slog"
	"maps"
	"runtime"
	"testing"
	"time"

	"gregor/internal/metadata"
)

// maxRecordsPerBatch is the controller's limit on the records of one
// user operation, hence of one committed batch.
const maxRecordsPerBatch = 10000

// imageShape is a number of topics of equal size.
type imageShape struct {
	topics, partitionsPerTopic int
}

func (s imageShape) partitions() int { return s.topics * s.partitionsPerTopic }

func (s imageShape) String() string {
	return fmt.Sprintf("partitions=%d/topics=%dx%d", s.partitions(), s.topics, s.partitionsPerTopic)
}

func benchTopicID(i int) [16]byte {
	var id [16]byte
	binary.BigEndian.PutUint64(id[:8], uint64(i)+1)
	id[15] = 0x42
	return id
}

// benchBrokers are the three brokers every partition is placed on (striped).
var benchBrokers = [3]int32{101, 102, 103}

// benchPartitionRecord is partitionRecord of the controller for a partition
// whose replicas are all active brokers with one log dir each.
func benchPartitionRecord(topicID [16]byte, partition int32) *metadata.PartitionRecord {
	replicas := make([]int32, 3)
	dirs := make([][16]byte, 3)
	for i := range replicas {
		replicas[i] = benchBrokers[(int(partition)+i)%3]
		dirs[i] = [16]byte{0xd1, byte(replicas[i])}
	}
	return &metadata.PartitionRecord{
		RecordVersion:       metadata.PartitionRecordVersion,
		PartitionID:         partition,
		TopicID:             topicID,
		Replicas:            replicas,
		ISR:                 append([]int32(nil), replicas...),
		RemovingReplicas:    []int32{},
		AddingReplicas:      []int32{},
		Leader:              replicas[0],
		LeaderRecoveryState: metadata.LeaderRecovered,
		Directories:         dirs,
	}
}

// encodedBatches returns the metadata log's content for an image of shape s,
// as the encoded record values of each committed batch: first a batch with
// metadata.version and the three broker registrations, then the topics.
func encodedBatches(s imageShape) [][][]byte {
	var batches [][][]byte
	first := [][]byte{metadata.Encode(&metadata.FeatureLevelRecord{Name: metadata.MetadataVersionFeature, FeatureLevel: metadata.LatestMetadataVersion})}
	for i, id := range benchBrokers {
		first = append(first, metadata.Encode(&metadata.RegisterBrokerRecord{
			BrokerID: id, IncarnationID: [16]byte{byte(i + 1)}, BrokerEpoch: int64(i + 1),
			EndPoints: []metadata.BrokerEndpoint{{Name: "PLAINTEXT", Host: "127.0.0.1", Port: uint16(9092 + i)}},
			LogDirs:   [][16]byte{{0xd1, byte(id)}},
		}))
	}
	batches = append(batches, first)
	var cur [][]byte
	for t := range s.topics {
		if len(cur)+1+s.partitionsPerTopic > maxRecordsPerBatch && len(cur) > 0 {
			batches = append(batches, cur)
			cur = nil
		}
		id := benchTopicID(t)
		cur = append(cur, metadata.Encode(&metadata.TopicRecord{Name: fmt.Sprintf("topic-%06d", t), TopicID: id}))
		for p := range s.partitionsPerTopic {
			cur = append(cur, metadata.Encode(benchPartitionRecord(id, int32(p))))
		}
	}
	if len(cur) > 0 {
		batches = append(batches, cur)
	}
	return batches
}

// loadTimes is where the time of a build went.
type loadTimes struct{ decode, replay time.Duration }

// loadBatches decodes each batch and commits it to l, as a broker's
// metadata listener does, and returns the time spent decoding and in
// HandleCommit.
func loadBatches(tb testing.TB, l *metadata.Loader, batches [][][]byte, baseOffset int64) loadTimes {
	tb.Helper()
	var lt loadTimes
	offset := baseOffset
	for _, raw := range batches {
		t0 := time.Now()
		records := make([]metadata.Record, len(raw))
		for i, v := range raw {
			r, err := metadata.Decode(v)
			if err != nil {
				tb.Fatalf("decode record at offset %d: %v", offset+int64(i), err)
			}
			records[i] = r
		}
		t1 := time.Now()
		l.HandleCommit(metadata.Batch{BaseOffset: offset, LastOffset: offset + int64(len(records)) - 1, Epoch: 1, Records: records})
		lt.decode += t1.Sub(t0)
		lt.replay += time.Since(t1)
		offset += int64(len(records))
	}
	if n := l.ErrorCount(); n != 0 {
		tb.Fatalf("%d records failed to replay", n)
	}
	return lt
}

// heapInUse returns the live heap after a full collection.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// checkImage fails unless img holds exactly shape s, every partition with
// three replicas and a leader.
func checkImage(tb testing.TB, img *metadata.Image, s imageShape) {
	tb.Helper()
	if got := img.Topics.Len(); got != s.topics {
		tb.Fatalf("image has %d topics, want %d", got, s.topics)
	}
	for _, t := range img.Topics.All() {
		if t.NumPartitions() != s.partitionsPerTopic {
			tb.Fatalf("topic %s has %d partitions, want %d", t.Name, t.NumPartitions(), s.partitionsPerTopic)
		}
		p := t.Partition(int32(s.partitionsPerTopic - 1))
		if p == nil || len(p.Replicas) != 3 || p.Leader != p.Replicas[0] {
			tb.Fatalf("topic %s: last partition %+v", t.Name, p)
		}
	}
	if len(img.Brokers) != 3 {
		tb.Fatalf("image has %d brokers, want 3", len(img.Brokers))
	}
}

func newBenchLoader() *metadata.Loader {
	return metadata.NewLoader("bench-cluster", slog.New(slog.DiscardHandler))
}

// TestBenchImageShape keeps the benchmark's records honest in the ordinary
// test run: they replay without error into the expected image, and the
// small commits the commit benchmark makes change what they should.
func TestBenchImageShape(t *testing.T) {
	s := imageShape{topics: 12, partitionsPerTopic: 1000}
	batches := encodedBatches(s)
	// 1 header batch, then 9 topics (9,009 records) per batch.
	if len(batches) != 3 {
		t.Fatalf("%d batches, want 3", len(batches))
	}
	l := newBenchLoader()
	loadBatches(t, l, batches, 0)
	checkImage(t, l.Image(), s)

	commits := newCommitter(l, s)
	commits.leaderChange(7)
	p := l.Image().Topics.TopicByID(benchTopicID(7 % s.topics)).Partition(7)
	if p.Leader != p.Replicas[1] || p.LeaderEpoch != 1 {
		t.Fatalf("after a leader change: %+v", p)
	}
	baseline := newCloneBaseline(l.Image())
	before := baseline.byID[benchTopicID(7)]
	baseline.leaderChange(7, s)
	if q := baseline.byID[benchTopicID(7)].partitions[7]; q.LeaderEpoch != before.partitions[7].LeaderEpoch+1 || before.partitions[7] == q || len(baseline.byName) != s.topics {
		t.Fatalf("clone baseline after a leader change: %+v", q)
	}
	commits.createTopic(0)
	if l.Image().Topics.Topic("small-0") == nil || l.Image().Topics.Len() != s.topics+1 {
		t.Fatal("small topic not created")
	}
	commits.deleteTopic(0)
	if l.Image().Topics.Len() != s.topics || l.ErrorCount() != 0 {
		t.Fatalf("small topic not deleted (errors %d)", l.ErrorCount())
	}
}

// BenchmarkImageBuild replays the records of 10k and 100k partitions into
// an empty image through the Loader. Metrics: B/partition is the live heap
// the image adds per partition; replay-ns/partition is the time in
// HandleCommit, decode-ns/partition the time to decode the records.
func BenchmarkImageBuild(b *testing.B) {
	for _, s := range []imageShape{
		{10, 1000}, {100, 1000}, // topics of 1,000 partitions
		{1000, 10}, {10000, 10}, // many small topics
		{100000, 1},
		// A million partitions, in big topics, small ones, and as many
		// single-partition topics.
		{1000, 1000}, {100000, 10}, {1000000, 1},
	} {
		b.Run(s.String(), func(b *testing.B) {
			batches := encodedBatches(s)
			var bytesPerPartition float64
			var total loadTimes
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				before := heapInUse()
				b.StartTimer()
				l := newBenchLoader()
				lt := loadBatches(b, l, batches, 0)
				b.StopTimer()
				after := heapInUse()
				checkImage(b, l.Image(), s)
				runtime.KeepAlive(l)
				bytesPerPartition = float64(int64(after)-int64(before)) / float64(s.partitions())
				total.decode += lt.decode
				total.replay += lt.replay
				b.StartTimer()
			}
			runtime.KeepAlive(batches)
			n := float64(b.N) * float64(s.partitions())
			b.ReportMetric(bytesPerPartition, "B/partition")
			b.ReportMetric(float64(total.replay.Nanoseconds())/n, "replay-ns/partition")
			b.ReportMetric(float64(total.decode.Nanoseconds())/n, "decode-ns/partition")
			b.ReportMetric(float64(total.replay.Milliseconds())/float64(b.N), "replay-ms")
		})
	}
}

// committer makes small commits on a big image, each one batch.
type committer struct {
	l      *metadata.Loader
	s      imageShape
	offset int64
}

func newCommitter(l *metadata.Loader, s imageShape) *committer {
	return &committer{l: l, s: s, offset: l.Image().Offset + 1}
}

func (c *committer) commit(records ...metadata.Record) {
	c.l.HandleCommit(metadata.Batch{BaseOffset: c.offset, LastOffset: c.offset + int64(len(records)) - 1, Epoch: 1, Records: records})
	c.offset += int64(len(records))
}

// leaderChange moves the leadership of partition i (of topic i mod topics)
// to the replica after the current leader, as an election does.
func (c *committer) leaderChange(i int) {
	id := benchTopicID(i % c.s.topics)
	part := int32(i % c.s.partitionsPerTopic)
	p := c.l.Image().Topics.TopicByID(id).Partition(part)
	next := p.Replicas[0]
	for k, r := range p.Replicas {
		if r == p.Leader {
			next = p.Replicas[(k+1)%len(p.Replicas)]
		}
	}
	r := metadata.NewPartitionChangeRecord(id, part)
	r.Leader = next
	c.commit(r)
}

// createTopic creates topic small-i with one partition; deleteTopic removes it.
func (c *committer) createTopic(i int) {
	id := benchTopicID(1<<40 + i)
	c.commit(&metadata.TopicRecord{Name: fmt.Sprintf("small-%d", i), TopicID: id}, benchPartitionRecord(id, 0))
}

func (c *committer) deleteTopic(i int) {
	c.commit(&metadata.RemoveTopicRecord{TopicID: benchTopicID(1<<40 + i)})
}

// BenchmarkImageCommit measures one more small commit on a big image: the
// Loader's HandleCommit (delta, Apply, new image), without publishers.
// leader-change is one PartitionChangeRecord; create-delete-topic is two
// commits (a 1-partition topic created, then removed), reported per commit.
// leader-change-clone-baseline is, on the same image in the same run, the
// copying that Delta.Apply did for a leader change before the image kept
// its topics and partitions in persistent maps (cloneBaseline).
func BenchmarkImageCommit(b *testing.B) {
	for _, s := range []imageShape{
		{10, 1000}, {100, 1000},
		{10000, 10}, {100000, 1},
	} {
		l := newBenchLoader()
		loadBatches(b, l, encodedBatches(s), 0)
		checkImage(b, l.Image(), s)
		c := newCommitter(l, s)
		b.Run(s.String()+"/op=leader-change", func(b *testing.B) {
			b.ReportAllocs()
			for i := range b.N {
				c.leaderChange(i)
			}
		})
		baseline := newCloneBaseline(l.Image())
		b.Run(s.String()+"/op=leader-change-clone-baseline", func(b *testing.B) {
			b.ReportAllocs()
			for i := range b.N {
				baseline.leaderChange(i, s)
			}
		})
		b.Run(s.String()+"/op=create-delete-topic", func(b *testing.B) {
			b.ReportAllocs()
			for i := range b.N {
				c.createTopic(i)
				c.deleteTopic(i)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(2*b.N), "ns/commit")
		})
		if l.ErrorCount() != 0 {
			b.Fatalf("%d records failed to replay", l.ErrorCount())
		}
	}
}

// cloneBaseline holds an image's topics in builtin maps, as the image did
// before it used persistent maps, to measure in the same run what a commit
// cost then.
type cloneBaseline struct {
	byName map[string]*baselineTopic
	byID   map[[16]byte]*baselineTopic
}

type baselineTopic struct {
	name       string
	id         [16]byte
	partitions map[int32]*metadata.Partition
}

func newCloneBaseline(img *metadata.Image) *cloneBaseline {
	c := &cloneBaseline{byName: map[string]*baselineTopic{}, byID: map[[16]byte]*baselineTopic{}}
	for name, t := range img.Topics.All() {
		bt := &baselineTopic{name: name, id: t.ID, partitions: maps.Collect(t.Partitions())}
		c.byName[name], c.byID[t.ID] = bt, bt
	}
	return c
}

// leaderChange does what the clone-based Delta.Apply did for one
// PartitionChangeRecord: copy the changed topic's partition map
// (mutableTopic), both topic indexes, and put the new partition and topic
// in the copies.
func (c *cloneBaseline) leaderChange(i int, s imageShape) {
	id := benchTopicID(i % s.topics)
	part := int32(i % s.partitionsPerTopic)
	old := c.byID[id]
	t := &baselineTopic{name: old.name, id: id, partitions: maps.Clone(old.partitions)}
	p := *t.partitions[part]
	p.Leader = p.Replicas[(i+1)%len(p.Replicas)]
	p.LeaderEpoch++
	p.PartitionEpoch++
	t.partitions[part] = &p
	byName, byID := maps.Clone(c.byName), maps.Clone(c.byID)
	byName[t.name], byID[id] = t, t
	c.byName, c.byID = byName, byID
}
