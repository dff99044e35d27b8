package sharetest

import (
	"log/slog"
	"testing"
	"time"

	"gregor/internal/log"
	"gregor/internal/metadata"
	"gregor/internal/record"
	"gregor/internal/replica"
)

// Node is the broker id of a Cluster's replica manager.
const Node = 1

// TopicID is the id of a Cluster's topic "t".
var TopicID = [16]byte{0xaa, 1}

// Cluster is a replica manager on real logs leading the one partition of
// topic "t" (replicas Node and 2), and the metadata image it follows.
type Cluster struct {
	Replica *replica.Manager
	Image   *metadata.Image
}

// NewCluster returns a Cluster whose logs live in t's temporary directory.
func NewCluster(t testing.TB) *Cluster {
	t.Helper()
	logs, err := log.NewManager(log.ManagerConfig{Dirs: []string{t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logs.Close() })
	c := &Cluster{Replica: replica.New(replica.Config{NodeID: Node, Logger: slog.New(slog.DiscardHandler)}, logs), Image: metadata.EmptyImage()}
	// A new cluster's feature levels (share.version=1: share groups on).
	c.Feed(t, metadata.FeatureLevelRecords(metadata.DefaultFeatureLevels(metadata.LatestMetadataVersion))...)
	c.Feed(t, &metadata.TopicRecord{Name: "t", TopicID: TopicID},
		&metadata.PartitionRecord{RecordVersion: metadata.PartitionRecordVersion, PartitionID: 0, TopicID: TopicID,
			Replicas: []int32{Node, 2}, ISR: []int32{Node}, RemovingReplicas: []int32{}, AddingReplicas: []int32{},
			Leader: Node, Directories: make([][16]byte, 2)})
	return c
}

// Feed applies metadata records to the image and publishes it.
func (c *Cluster) Feed(t testing.TB, recs ...metadata.Record) {
	t.Helper()
	d := metadata.NewDelta(c.Image)
	if err := d.ReplayBatch(metadata.Batch{BaseOffset: c.Image.Offset + 1, LastOffset: c.Image.Offset + int64(len(recs)), Epoch: 1, Records: recs}); err != nil {
		t.Fatal(err)
	}
	c.Image = d.Apply()
	c.Replica.Publish(d, c.Image)
}

// Produce appends a batch of n records to t-0 (transactional for pid >= 0,
// with base sequence seq) and returns its first offset.
func (c *Cluster) Produce(t testing.TB, n int, pid int64, seq int32) int64 {
	t.Helper()
	opts := record.BuilderOptions{ProducerID: record.NoProducerID, ProducerEpoch: record.NoProducerEpoch, BaseSequence: record.NoSequence}
	if pid >= 0 {
		opts = record.BuilderOptions{ProducerID: pid, BaseSequence: seq, Transactional: true}
	}
	b := record.NewBuilder(opts)
	for i := 0; i < n; i++ {
		b.Append(time.Now().UnixMilli(), nil, []byte("v"), nil)
	}
	batch, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	res := c.Replica.Append("t", 0, 1, batch)
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	return res.Info.FirstOffset
}
