package quota

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Replication throttles (KIP-73), as Kafka's ReplicationQuotaManager: a
// broker-wide byte rate (leader.replication.throttled.rate on the leader
// side, follower.replication.throttled.rate on the follower side) that
// applies only to the partitions the topics' leader/follower
// .replication.throttled.replicas name for this broker. The leader stops
// sending a throttled partition's records to a follower outside the ISR
// while the rate is over the bound; the follower stops asking for a
// throttled partition it is behind on. Both record the throttled bytes
// they move, so the rate falls back under the bound and moving resumes:
// the movement averages the bound over the quota's windows.

// ReplicationType says which side of replication a throttle applies to.
type ReplicationType int

const (
	LeaderReplication   ReplicationType = iota // fetch responses the leader sends to throttled followers
	FollowerReplication                        // fetches this broker's replica fetchers make for throttled replicas
)

// String is Kafka's name of the type: its metrics group
// (kafka.server:type=LeaderReplication / FollowerReplication).
func (t ReplicationType) String() string {
	if t == LeaderReplication {
		return "LeaderReplication"
	}
	return "FollowerReplication"
}

// Replication is one replication throttle. It is safe for concurrent use
// and starts no goroutines.
type Replication struct {
	typ ReplicationType
	w   window
	now func() time.Time

	mu        sync.Mutex
	bound     float64 // bytes/s; +Inf for none
	rate      rate
	throttled map[string]ThrottledPartitions
}

// ThrottledPartitions is one topic's throttled partitions on this broker:
// all of them, or a list.
type ThrottledPartitions struct {
	All        bool
	Partitions []int32
}

// NewReplication returns a throttle of type t with no bound and nothing
// throttled, measuring over replication.quota.window.num windows of
// replication.quota.window.size.seconds (cfg).
func NewReplication(t ReplicationType, cfg Config) (*Replication, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Replication{typ: t, w: window{samples: cfg.Samples, sizeMs: cfg.Window.Milliseconds()}, now: cfg.Now,
		bound: math.Inf(1), throttled: map[string]ThrottledPartitions{}}, nil
}

// Type is the throttle's side.
func (r *Replication) Type() ReplicationType { return r.typ }

// SetBound sets the rate in bytes a second; math.MaxInt64 (Kafka's
// default) means no bound.
func (r *Replication) SetBound(bytesPerSecond int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if bytesPerSecond == math.MaxInt64 {
		r.bound = math.Inf(1)
	} else {
		r.bound = float64(bytesPerSecond)
	}
}

// Bound is the rate in bytes a second, +Inf for none.
func (r *Replication) Bound() float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.bound
}

// SetThrottled replaces the throttled partitions of every topic.
func (r *Replication) SetThrottled(throttled map[string]ThrottledPartitions) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.throttled = throttled
}

// IsThrottled reports whether a partition's replication is throttled here.
func (r *Replication) IsThrottled(topic string, partition int32) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.throttled[topic]
	return ok && (t.All || slices.Contains(t.Partitions, partition))
}

// IsQuotaExceeded reports whether the measured rate is over the bound
// (Kafka's sensor.checkQuotas: an upper bound is kept while rate <= bound).
func (r *Replication) IsQuotaExceeded() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if math.IsInf(r.bound, 1) {
		return false
	}
	return r.measure() > r.bound
}

// Record adds bytes of throttled replication traffic to the rate.
func (r *Replication) Record(bytes int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rate.record(r.w, float64(bytes), r.now().UnixMilli())
}

// Rate is the measured rate in bytes a second (the byte-rate metric).
func (r *Replication) Rate() float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.measure()
}

// measure is Kafka's SimpleRate: the bytes in the retained windows over the
// time since the oldest began, but at least one window. Under r.mu.
func (r *Replication) measure() float64 {
	now := r.now().UnixMilli()
	r.rate.stat.purge(r.w, now)
	sum, _ := r.rate.stat.totals()
	elapsed := max(now-r.rate.stat.oldest(now).start, r.w.sizeMs, 1)
	return sum / (float64(elapsed) / 1000)
}

// ParseThrottledReplicas reads a topic's leader/follower
// .replication.throttled.replicas for one broker, as Kafka's
// parseThrottledPartitions does: "" throttles nothing, "*" every
// partition, else the partitions of the "partition:broker" entries that
// name this broker.
func ParseThrottledReplicas(value string, broker int32) (ThrottledPartitions, error) {
	value = strings.TrimSpace(value)
	switch value {
	case "":
		return ThrottledPartitions{}, nil
	case "*":
		return ThrottledPartitions{All: true}, nil
	}
	var out ThrottledPartitions
	for _, entry := range strings.Split(value, ",") {
		p, b, ok := strings.Cut(strings.TrimSpace(entry), ":")
		partition, perr := strconv.ParseInt(strings.TrimSpace(p), 10, 32)
		id, berr := strconv.ParseInt(strings.TrimSpace(b), 10, 32)
		if !ok || perr != nil || berr != nil {
			return ThrottledPartitions{}, fmt.Errorf("throttled replicas %q: entry %q is not partition:broker", value, entry)
		}
		if int32(id) == broker && !slices.Contains(out.Partitions, int32(partition)) {
			out.Partitions = append(out.Partitions, int32(partition))
		}
	}
	return out, nil
}
