package console

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The counters the chart reads: this broker's bytes in and out, as the
// metrics package names Kafka's BytesInPerSec / BytesOutPerSec.
const (
	bytesInMetric  = "kafka_server_brokertopicmetrics_bytesin_total"
	bytesOutMetric = "kafka_server_brokertopicmetrics_bytesout_total"
)

// watchWindow is how long after the last /api/throughput the sampler keeps
// asking the cluster for end offsets every SampleInterval; afterwards it
// asks every IdleSampleInterval, so a console nobody looks at costs the
// brokers one ListOffsets now and then, and a first visit still finds the
// last minutes on the chart.
const watchWindow = time.Minute

// sample is one point of the chart: rates over the interval ending at T.
type sample struct {
	T int64 `json:"t"` // ms since the epoch
	// RecordsPerSec is the growth of the sum of all partitions' end
	// offsets (the whole cluster) since the last sample that had them;
	// null when the offsets were not listed for this sample (nobody
	// watched, or they could not be listed).
	RecordsPerSec *float64 `json:"recordsPerSec"`
	// BytesInPerSec and BytesOutPerSec are this broker's.
	BytesInPerSec  float64 `json:"bytesInPerSec"`
	BytesOutPerSec float64 `json:"bytesOutPerSec"`
}

type throughputView struct {
	IntervalMs int64    `json:"intervalMs"`
	Samples    []sample `json:"samples"`
}

// throughput is the ring buffer of samples: the sampler goroutine writes,
// API requests read.
type throughput struct {
	lastWatched atomic.Int64 // unix ns of the last /api/throughput

	mu      sync.Mutex
	samples []sample // ring of cap(samples)
	next    int      // where the next sample goes once the ring is full
}

func newThroughput(n int) *throughput {
	return &throughput{samples: make([]sample, 0, n)}
}

func (t *throughput) add(s sample) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.samples) < cap(t.samples) {
		t.samples = append(t.samples, s)
		return
	}
	t.samples[t.next] = s
	t.next = (t.next + 1) % len(t.samples)
}

// series is the samples oldest first.
func (t *throughput) series() []sample {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]sample, 0, len(t.samples))
	out = append(out, t.samples[t.next:]...)
	return append(out, t.samples[:t.next]...)
}

func (t *throughput) watched(now time.Time) bool {
	return now.UnixNano()-t.lastWatched.Load() < int64(watchWindow)
}

type topicPartition struct {
	topic     string
	partition int32
}

// reading is the cumulative values at one instant.
type reading struct {
	at                time.Time
	bytesIn, bytesOut float64
	ends              map[topicPartition]int64 // nil when not read
}

// rates turns readings into a sample: bytes over prev to cur, records over
// since (the last reading with end offsets) to cur. Only partitions in
// both count toward records, and a shrinking end offset (a recreated
// topic) counts as none, so deleting or creating topics does not spike the
// chart.
func rates(prev, cur, since reading) sample {
	s := sample{T: cur.at.UnixMilli()}
	if dt := cur.at.Sub(prev.at).Seconds(); dt > 0 {
		s.BytesInPerSec = max(cur.bytesIn-prev.bytesIn, 0) / dt
		s.BytesOutPerSec = max(cur.bytesOut-prev.bytesOut, 0) / dt
	}
	dt := cur.at.Sub(since.at).Seconds()
	if since.ends != nil && cur.ends != nil && dt > 0 {
		var records int64
		for tp, end := range cur.ends {
			if before, ok := since.ends[tp]; ok && end > before {
				records += end - before
			}
		}
		r := float64(records) / dt
		s.RecordsPerSec = &r
	}
	return s
}

// sample runs until ctx ends: one reading per interval.
func (c *Console) sample(ctx context.Context) {
	c.sampleLoop(ctx, func(withEnds bool) reading { return c.read(ctx, withEnds) })
}

// sampleLoop adds a sample every SampleInterval. The end offsets are read
// for each while someone watches the chart, else once every
// IdleSampleInterval.
func (c *Console) sampleLoop(ctx context.Context, read func(withEnds bool) reading) {
	ticker := time.NewTicker(c.cfg.SampleInterval)
	defer ticker.Stop()
	prev := read(true)
	since := prev // the last reading with end offsets
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		now := time.Now()
		cur := read(c.throughput.watched(now) || now.Sub(since.at) >= c.cfg.IdleSampleInterval)
		c.throughput.add(rates(prev, cur, since))
		prev = cur
		if cur.ends != nil {
			since = cur
		}
	}
}

// read takes this broker's byte counters and, withEnds, every partition's
// end offset.
func (c *Console) read(ctx context.Context, withEnds bool) reading {
	r := reading{at: time.Now()}
	if c.cfg.Metrics != nil {
		if mfs, err := c.cfg.Metrics.Gather(); err == nil {
			r.bytesIn, r.bytesOut = allTopics(mfs, bytesInMetric), allTopics(mfs, bytesOutMetric)
		}
	}
	if !withEnds {
		return r
	}
	adm, err := c.admin()
	if err != nil {
		return r
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.SampleInterval)
	defer cancel()
	ends, err := adm.ListEndOffsets(ctx)
	if err != nil {
		return r
	}
	r.ends = map[topicPartition]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err == nil && o.Offset >= 0 {
			r.ends[topicPartition{o.Topic, o.Partition}] = o.Offset
		}
	})
	return r
}

// allTopics is the value of a counter family's all-topics series (the
// one with an empty topic label, metrics.AllTopics).
func allTopics(mfs []*dto.MetricFamily, name string) float64 {
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if topicLabel(m) == "" {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

func topicLabel(m *dto.Metric) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == "topic" {
			return l.GetValue()
		}
	}
	return ""
}

func (c *Console) throughputSeries(context.Context, *http.Request, *kgo.Client) (any, error) {
	c.throughput.lastWatched.Store(time.Now().UnixNano())
	return throughputView{IntervalMs: c.cfg.SampleInterval.Milliseconds(), Samples: c.throughput.series()}, nil
}
