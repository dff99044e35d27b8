package metadata

import (
	"log/slog"
	"sync"
	"sync/atomic"
)

// Publisher acts on each new image: the broker's replica manager (become
// leader / follower, delete logs), the metadata cache, the config reloader,
// ... Publish is called in offset order on one goroutine at a time; img is
// the image after delta. Publishers must not keep the delta past the call.
type Publisher interface {
	Publish(delta *Delta, img *Image)
}

// Loader builds the metadata image from committed batches and publishes each
// new image (Kafka's MetadataLoader). It implements the Raft layer's Listener
// (HandleCommit), so a broker registers one Loader with the quorum and its
// publishers with the Loader.
type Loader struct {
	logger *slog.Logger

	// mu serializes HandleCommit with AddPublisher, so a publisher never
	// misses or repeats an image.
	mu         sync.Mutex
	publishers []Publisher
	errors     atomic.Int64

	image atomic.Pointer[Image]
}

// NewLoader returns a loader whose image starts empty, with the given cluster id.
func NewLoader(clusterID string, logger *slog.Logger) *Loader {
	if logger == nil {
		logger = slog.Default()
	}
	l := &Loader{logger: logger}
	img := EmptyImage()
	img.ClusterID = clusterID
	l.image.Store(img)
	return l
}

// Image returns the latest image. Safe from any goroutine.
func (l *Loader) Image() *Image { return l.image.Load() }

// ErrorCount returns how many records failed to replay (Kafka's
// MetadataErrorCount); each failure was logged and the record skipped.
func (l *Loader) ErrorCount() int64 { return l.errors.Load() }

// AddPublisher installs a publisher. If the loader already holds a non-empty
// image, the publisher first receives it as one delta from the empty image
// (every topic created, every config and broker changed), as Kafka does for
// a late publisher.
func (l *Loader) AddPublisher(p Publisher) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.publishers = append(l.publishers, p)
	if img := l.image.Load(); !img.IsEmpty() {
		p.Publish(snapshotDelta(img), img)
	}
}

// HandleCommit replays a committed batch into a new image and publishes it.
// A record that does not replay is logged, counted and skipped.
func (l *Loader) HandleCommit(b Batch) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delta := NewDelta(l.image.Load())
	if err := delta.ReplayBatch(b); err != nil {
		n := int64(1)
		if joined, ok := err.(interface{ Unwrap() []error }); ok {
			n = int64(len(joined.Unwrap()))
		}
		l.errors.Add(n)
		l.logger.Error("metadata records failed to replay", "baseOffset", b.BaseOffset, "lastOffset", b.LastOffset, "err", err)
	}
	img := delta.Apply()
	l.image.Store(img)
	for _, p := range l.publishers {
		p.Publish(delta, img)
	}
}

// snapshotDelta describes a whole image as changes from the empty image.
func snapshotDelta(img *Image) *Delta {
	empty := EmptyImage()
	empty.ClusterID = img.ClusterID
	d := NewDelta(empty)
	for name, level := range img.Features {
		d.features[name] = level
	}
	for id, b := range img.Brokers {
		d.brokers[id] = b
	}
	for id, t := range img.Topics.ByID {
		d.topics[id] = t
		d.created[id] = true
		d.names[t.Name] = id
		parts := map[int32]bool{}
		for p := range t.Partitions {
			parts[p] = true
		}
		d.changedParts[id] = parts
	}
	for res, m := range img.Configs {
		d.configs[res] = m
	}
	nextProducerID := img.NextProducerID
	d.nextProducerID = &nextProducerID
	d.offset, d.epoch = img.Offset, img.Epoch
	d.applied = true
	return d
}
