package quota

import "math"

// The measurements a quota is enforced on, as Kafka's metrics library keeps
// them (org.apache.kafka.common.metrics.stats): a sampled statistic over a
// few time windows, the Rate and the average over it, and the token bucket
// of KIP-599. Times are milliseconds, as Kafka's; nothing here locks.

// window is the shape of a sampled statistic (Kafka's MetricConfig):
// samples windows of sizeMs each.
type window struct {
	samples int
	sizeMs  int64
}

// sample is one window of a sampled statistic.
type sample struct {
	value     float64
	events    int64
	start     int64 // when the window started
	lastEvent int64 // when a value was last recorded in it
}

func newSample(now int64) sample { return sample{start: now, lastEvent: now} }

// sampledStat is Kafka's SampledStat: values are added to the current
// window; a window is complete once its span has passed, and the next
// record starts the next window, reusing the oldest. It keeps one window
// more than configured: the one that began before the monitored span but
// still overlaps it.
type sampledStat struct {
	samples []sample
	current int
}

func (st *sampledStat) record(w window, value float64, now int64) {
	s := st.currentSample(now)
	if now-s.start >= w.sizeMs {
		s = st.advance(w, now)
	}
	s.value += value
	s.events++
	s.lastEvent = now
}

func (st *sampledStat) currentSample(now int64) *sample {
	if len(st.samples) == 0 {
		st.samples = append(st.samples, newSample(now))
	}
	return &st.samples[st.current]
}

func (st *sampledStat) advance(w window, now int64) *sample {
	st.current = (st.current + 1) % (w.samples + 1)
	if st.current >= len(st.samples) {
		st.samples = append(st.samples, newSample(now))
	} else {
		st.samples[st.current] = newSample(now)
	}
	return &st.samples[st.current]
}

// purge empties the windows that saw no value within the monitored span
// (samples × size); they restart at now.
func (st *sampledStat) purge(w window, now int64) {
	expire := int64(w.samples) * w.sizeMs
	for i := range st.samples {
		if now-st.samples[i].lastEvent >= expire {
			st.samples[i] = newSample(now)
		}
	}
}

func (st *sampledStat) oldest(now int64) *sample {
	if len(st.samples) == 0 {
		st.samples = append(st.samples, newSample(now))
	}
	oldest := &st.samples[0]
	for i := 1; i < len(st.samples); i++ {
		if st.samples[i].start < oldest.start {
			oldest = &st.samples[i]
		}
	}
	return oldest
}

func (st *sampledStat) totals() (sum float64, events int64) {
	for _, s := range st.samples {
		sum += s.value
		events += s.events
	}
	return sum, events
}

// rate is Kafka's Rate over a WindowedSum: the values recorded in the
// retained windows per second of the span they cover.
type rate struct{ stat sampledStat }

func (r *rate) record(w window, value float64, now int64) { r.stat.record(w, value, now) }

func (r *rate) measure(w window, now int64) float64 {
	r.stat.purge(w, now)
	sum, _ := r.stat.totals()
	return sum / (float64(r.windowSize(w, now)) / 1000)
}

// windowSize is the span, in ms, a rate divides by: from the start of the
// oldest retained window to now, but never less than samples-1 whole
// windows (so that a client's first burst is not measured over a few
// milliseconds) and never 0.
func (r *rate) windowSize(w window, now int64) int64 {
	r.stat.purge(w, now)
	elapsed := now - r.stat.oldest(now).start
	full := elapsed / w.sizeMs
	if minFull := int64(w.samples - 1); full < minFull {
		elapsed += (minFull - full) * w.sizeMs
	}
	return max(elapsed, 1)
}

// avg is Kafka's Avg: the mean of the values recorded in the retained
// windows, NaN when there is none.
type avg struct{ stat sampledStat }

func (a *avg) record(w window, value float64, now int64) { a.stat.record(w, value, now) }

func (a *avg) measure(w window, now int64) float64 {
	a.stat.purge(w, now)
	sum, n := a.stat.totals()
	if n == 0 {
		return math.NaN()
	}
	return sum / float64(n)
}

// tokenBucket is Kafka's TokenBucket (KIP-599): it holds up to
// samples × window seconds × bound tokens, refills at bound tokens a
// second, and each recorded value takes that many tokens, down below zero
// if need be. A bucket below zero is over its quota. An infinite bound (no
// quota) never runs out.
type tokenBucket struct {
	tokens     float64
	lastUpdate int64
}

func burst(w window, bound float64) float64 {
	return float64(w.samples) * float64(w.sizeMs) / 1000 * bound
}

// fill makes the bucket full at now (a new bucket, or one whose quota
// became finite: Kafka's bucket starts full too, its first refill counting
// from the epoch).
func (b *tokenBucket) fill(w window, bound float64, now int64) {
	b.tokens, b.lastUpdate = burst(w, bound), now
}

func (b *tokenBucket) refill(w window, bound float64, now int64) {
	b.tokens = min(burst(w, bound), b.tokens+bound*float64(now-b.lastUpdate)/1000)
	b.lastUpdate = now
}

func (b *tokenBucket) record(w window, bound, value float64, now int64) {
	if math.IsInf(bound, 1) {
		return
	}
	b.refill(w, bound, now)
	b.tokens = min(burst(w, bound), b.tokens-value)
}

func (b *tokenBucket) measure(w window, bound float64, now int64) float64 {
	if math.IsInf(bound, 1) {
		return math.Inf(1)
	}
	b.refill(w, bound, now)
	return b.tokens
}
