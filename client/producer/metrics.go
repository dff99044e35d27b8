package producer

import (
	"sync"
	"time"
)

// Kafka's client metrics sample over metrics.num.samples (2) windows of
// metrics.sample.window.ms (30 s): a rate is the windows' total over their
// time (at least one full window), an average and a maximum are over the
// events of the live windows.
const (
	metricsWindow  = 30 * time.Second
	metricsSamples = 2
)

type sample struct {
	start time.Time
	count int64
	sum   float64
	max   float64
}

// sampled is one windowed statistic (Kafka's SampledStat).
type sampled struct {
	samples [metricsSamples]sample
	cur     int
	total   float64 // all time, for the *-total metrics
}

func (s *sampled) record(v float64, now time.Time) {
	c := &s.samples[s.cur]
	if c.start.IsZero() || now.Sub(c.start) >= metricsWindow {
		s.cur = (s.cur + 1) % metricsSamples
		s.samples[s.cur] = sample{start: now}
		c = &s.samples[s.cur]
	}
	c.count++
	c.sum += v
	c.max = max(c.max, v)
	s.total += v
}

// live reports whether sample i is within the windows at now.
func (s *sampled) live(i int, now time.Time) bool {
	st := s.samples[i].start
	return !st.IsZero() && now.Sub(st) < metricsSamples*metricsWindow
}

// rate is per second over the live windows.
func (s *sampled) rate(now time.Time) float64 {
	var sum float64
	oldest := now
	for i := range s.samples {
		if s.live(i, now) {
			sum += s.samples[i].sum
			if s.samples[i].start.Before(oldest) {
				oldest = s.samples[i].start
			}
		}
	}
	elapsed := max(now.Sub(oldest), (metricsSamples-1)*metricsWindow)
	return sum / elapsed.Seconds()
}

func (s *sampled) avg(now time.Time) float64 {
	var sum float64
	var n int64
	for i := range s.samples {
		if s.live(i, now) {
			sum += s.samples[i].sum
			n += s.samples[i].count
		}
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}

func (s *sampled) maxOf(now time.Time) float64 {
	var m float64
	for i := range s.samples {
		if s.live(i, now) {
			m = max(m, s.samples[i].max)
		}
	}
	return m
}

// producerMetrics are the producer's metrics in Kafka's names.
type producerMetrics struct {
	mu             sync.Mutex
	recordSend     sampled // records sent to a broker (each attempt)
	recordError    sampled // records failed
	recordRetry    sampled // records sent again
	batchSize      sampled // bytes of each batch sent, as sent (compressed)
	requestLatency sampled // ms from sending a produce request to its answer
	recordsPerReq  sampled
}

// Metrics returns the producer's metrics by Kafka's names (the
// producer-metrics group of Kafka's Java producer): record-send-rate and
// -total, record-error-rate and -total, record-retry-rate and -total,
// batch-size-avg and -max, request-latency-avg and -max (ms),
// records-per-request-avg, buffer-total-bytes and buffer-available-bytes.
// Rates are per second over the last two 30 s windows, as Kafka samples
// them. An application bridges them to its metrics system (a Prometheus
// collector, say) by reading this map when scraped.
func (p *Producer[K, V]) Metrics() map[string]float64 {
	e := p.e
	now := time.Now()
	m := &e.metrics
	m.mu.Lock()
	out := map[string]float64{
		"record-send-rate":        m.recordSend.rate(now),
		"record-send-total":       m.recordSend.total,
		"record-error-rate":       m.recordError.rate(now),
		"record-error-total":      m.recordError.total,
		"record-retry-rate":       m.recordRetry.rate(now),
		"record-retry-total":      m.recordRetry.total,
		"batch-size-avg":          m.batchSize.avg(now),
		"batch-size-max":          m.batchSize.maxOf(now),
		"request-latency-avg":     m.requestLatency.avg(now),
		"request-latency-max":     m.requestLatency.maxOf(now),
		"records-per-request-avg": m.recordsPerReq.avg(now),
	}
	m.mu.Unlock()
	out["buffer-total-bytes"] = float64(e.cfg.BufferMemory)
	out["buffer-available-bytes"] = float64(e.cfg.BufferMemory - e.memory.inUse())
	return out
}
