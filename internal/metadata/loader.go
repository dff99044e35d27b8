package metadata

import (
	"errors"
	"fmt"
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
// (HandleCommit, HandleSnapshot, HandleLeaderChange), so a broker registers
// one Loader with the quorum and its publishers with the Loader.
type Loader struct {
	logger *slog.Logger

	// mu serializes HandleCommit and HandleSnapshot with AddPublisher, so
	// a publisher never misses or repeats an image.
	mu         sync.Mutex
	publishers []Publisher
	errors     atomic.Int64

	image  atomic.Pointer[Image]
	leader atomic.Pointer[leaderAndEpoch]
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
	l.leader.Store(&leaderAndEpoch{id: -1, epoch: -1})
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
		empty := EmptyImage()
		empty.ClusterID = img.ClusterID
		p.Publish(imageDiff(empty, img), img)
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

// HandleSnapshot replaces the image with the one the snapshot's records
// build from empty (Offset = s.EndOffset-1, Epoch = s.Epoch, the cluster id
// kept) and publishes it with one delta describing old image -> new image
// (see imageDiff): the node may have missed any number of records, deletions
// included, so publishers learn what really changed rather than what the
// snapshot's records say. A record that does not replay is logged, counted
// and skipped, as in HandleCommit.
func (l *Loader) HandleSnapshot(s Snapshot) {
	l.mu.Lock()
	defer l.mu.Unlock()
	old := l.image.Load()
	empty := EmptyImage()
	empty.ClusterID = old.ClusterID
	replay := NewDelta(empty)
	lastOffset := s.EndOffset - 1
	var errs []error
	for i, r := range s.Records {
		if err := replay.Replay(lastOffset, r); err != nil {
			errs = append(errs, fmt.Errorf("snapshot record %d: %w", i, err))
		}
	}
	if len(errs) > 0 {
		l.errors.Add(int64(len(errs)))
		l.logger.Error("metadata snapshot records failed to replay", "endOffset", s.EndOffset, "epoch", s.Epoch, "err", errors.Join(errs...))
	}
	img := replay.Apply()
	img.Offset, img.Epoch = lastOffset, s.Epoch
	l.image.Store(img)
	delta := imageDiff(old, img)
	for _, p := range l.publishers {
		p.Publish(delta, img)
	}
}

// HandleLeaderChange records the quorum's leader (-1: unknown) and epoch
// (Kafka's MetadataLoader keeps it for its publishers' LoaderManifest).
func (l *Loader) HandleLeaderChange(leader, epoch int32) {
	l.leader.Store(&leaderAndEpoch{id: leader, epoch: epoch})
}

// Leader returns the last leader and epoch the quorum reported, (-1, -1)
// before the first report. Safe from any goroutine.
func (l *Loader) Leader() (id, epoch int32) {
	le := l.leader.Load()
	return le.id, le.epoch
}

type leaderAndEpoch struct{ id, epoch int32 }
