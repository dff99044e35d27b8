package quota

import (
	"math"
	"sync"
	"sync/atomic"
	"time"

	"gregor/internal/metadata"
)

const (
	// sensorExpiry is how long a sensor lives without a recording (Kafka's
	// InactiveSensorExpirationTimeSeconds).
	sensorExpiry = time.Hour
	// expiryCheck is how often expired sensors are looked for (Kafka's
	// metrics reaper runs every 30 s).
	expiryCheck = 30 * time.Second
)

// metricsWindow is the shape of the statistics that only report, not
// enforce: the throttle-time average and the controller mutation rate
// (Kafka's metrics.num.samples 2, metrics.sample.window.ms 30000).
var metricsWindow = window{samples: 2, sizeMs: 30000}

// Manager enforces one type of client quota (Kafka's ClientQuotaManager,
// ClientRequestQuotaManager or ControllerMutationQuotaManager).
//
// Lock order: Manager.mu before sensor.mu.
type Manager struct {
	typ Type
	now func() time.Time
	// quotaWindow is the shape of the statistic the quota is enforced on
	// (quota.window.*); rateWindow that of the rate the metrics report:
	// the same, except for the controller mutation quota, which is
	// enforced on a token bucket.
	quotaWindow, rateWindow window
	// maxThrottle caps the throttle time (the request quota's: one
	// window); 0 for no cap.
	maxThrottle int64

	mu      sync.RWMutex
	quotas  quotaSet
	sensors map[Tags]*sensor
	// lastExpiry is when expired sensors were last looked for (ms).
	lastExpiry atomic.Int64
}

// sensor is the measurements of one set of clients (one Tags).
type sensor struct {
	mu         sync.Mutex
	bound      float64     // the quota; +Inf for none
	rate       rate        // the measured rate (the enforced one but for ControllerMutation)
	bucket     tokenBucket // ControllerMutation's enforced measure
	throttle   avg         // throttle times given, ms
	lastRecord int64       // ms
}

// NewManager returns the manager of quota type t.
func NewManager(t Type, cfg Config) (*Manager, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	w := window{samples: cfg.Samples, sizeMs: cfg.Window.Milliseconds()}
	m := &Manager{typ: t, now: cfg.Now, quotaWindow: w, rateWindow: w, sensors: map[Tags]*sensor{}}
	switch t {
	case Request:
		m.maxThrottle = w.sizeMs
	case ControllerMutation:
		m.rateWindow = metricsWindow
	}
	m.lastExpiry.Store(m.nowMs())
	return m, nil
}

// Type is the manager's quota type.
func (m *Manager) Type() Type { return m.typ }

func (m *Manager) nowMs() int64 { return m.now().UnixMilli() }

// Enabled reports whether a quota of this type has ever been set: only
// then are clients measured (Kafka's quotasEnabled).
func (m *Manager) Enabled() bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.quotas.shapes != 0
}

// Update takes the quotas now set (entity -> quota key -> value) and
// applies this type's to the sensors that exist: a changed quota holds
// from the next recording on, a removed one no longer limits.
func (m *Manager) Update(quotas map[metadata.QuotaEntity]map[string]float64) {
	bounds := map[metadata.QuotaEntity]float64{}
	shapes := 0
	for e, values := range quotas {
		v, ok := values[m.typ.Key()]
		shape := shapeOf(e)
		if !ok || shape == 0 {
			continue
		}
		bounds[e] = v
		shapes |= shape
	}
	now := m.nowMs()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.quotas.bounds = bounds
	m.quotas.shapes |= shapes
	for tags, s := range m.sensors {
		b := m.quotas.bound(tags)
		s.mu.Lock()
		if b != s.bound {
			if m.typ == ControllerMutation && math.IsInf(s.bound, 1) {
				s.bucket.fill(m.quotaWindow, b, now)
			}
			s.bound = b
		}
		s.mu.Unlock()
	}
}

// Bound is the quota that applies to a client: +Inf when none does.
func (m *Manager) Bound(user, clientID string) float64 {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.quotas.bound(m.quotas.tags(user, clientID))
}

// Record adds value (bytes, request time in % seconds, partitions) to the
// client's rate and returns how long to throttle it: 0 while the rate is
// within the quota. Past it, the time that brings the rate back to the
// quota if nothing more were recorded: with O the rate, T the quota and W
// the span measured, O·W/(W+X) = T gives X = (O−T)/T·W (Kafka's
// QuotaUtils.throttleTime; the request quota caps X at one window). The
// controller mutation quota instead refuses to record into an empty bucket
// and answers the time to refill it to zero (as Kafka's
// ControllerMutationQuotaManager.recordAndGetThrottleTimeMs).
func (m *Manager) Record(user, clientID string, value float64) time.Duration {
	if !m.Enabled() {
		return 0
	}
	now := m.nowMs()
	s := m.sensor(user, clientID, now)
	s.mu.Lock()
	defer s.mu.Unlock()
	if m.typ == ControllerMutation {
		if ms := s.bucketThrottle(m.quotaWindow, now); ms > 0 {
			return toDuration(ms)
		}
		s.recordMutation(m, value, now)
		return 0
	}
	s.lastRecord = now
	s.rate.record(m.rateWindow, value, now)
	return toDuration(s.rateThrottle(m, now))
}

// rateThrottle is the throttle time (ms) of a rate over its bound, 0 when
// within.
func (s *sensor) rateThrottle(m *Manager, now int64) int64 {
	observed := s.rate.measure(m.quotaWindow, now)
	if observed <= s.bound {
		return 0
	}
	ms := roundMs((observed - s.bound) / s.bound * float64(s.rate.windowSize(m.quotaWindow, now)))
	if m.maxThrottle > 0 {
		ms = min(ms, m.maxThrottle)
	}
	return ms
}

// bucketThrottle is the time (ms) until an empty token bucket is back at
// zero, 0 when it is not empty (Kafka's
// ControllerMutationQuotaManager.throttleTimeMs).
func (s *sensor) bucketThrottle(w window, now int64) int64 {
	tokens := s.bucket.measure(w, s.bound, now)
	if tokens >= 0 {
		return 0
	}
	return roundMs(-tokens / s.bound * 1000)
}

// roundMs rounds a throttle time to whole ms, within what the wire's int32
// throttle_time_ms holds (a quota of 0 throttles for that long).
func roundMs(ms float64) int64 {
	if math.IsNaN(ms) || ms >= math.MaxInt32 {
		return math.MaxInt32
	}
	return max(int64(math.Round(ms)), 0)
}

func (s *sensor) recordMutation(m *Manager, permits float64, now int64) {
	s.lastRecord = now
	s.rate.record(m.rateWindow, permits, now)
	s.bucket.record(m.quotaWindow, s.bound, permits, now)
}

// Unrecord takes back a value recorded for the client: a throttled fetch
// answers no records, so its bytes must not count (Kafka's
// unrecordQuotaSensor).
func (m *Manager) Unrecord(user, clientID string, value float64) {
	if !m.Enabled() {
		return
	}
	now := m.nowMs()
	s := m.sensor(user, clientID, now)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rate.record(m.rateWindow, -value, now)
}

// MaxValueInWindow is the most a client may record at once without being
// throttled for sure: its quota over samples-1 windows (+Inf without a
// quota). A consumer's fetch is capped to it, so that a fetch can never
// earn a throttle by its size alone (Kafka's getMaxValueInQuotaWindow).
func (m *Manager) MaxValueInWindow(user, clientID string) float64 {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.quotas.shapes == 0 {
		return math.Inf(1)
	}
	b := m.quotas.bound(m.quotas.tags(user, clientID))
	return b * float64(m.quotaWindow.samples-1) * float64(m.quotaWindow.sizeMs) / 1000
}

// RecordThrottle notes that the client is throttled for d because of this
// quota (its throttle-time metric). Of several quotas a response exceeds,
// the one with the longest throttle is told.
func (m *Manager) RecordThrottle(user, clientID string, d time.Duration) {
	if d <= 0 || !m.Enabled() {
		return
	}
	now := m.nowMs()
	s := m.sensor(user, clientID, now)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastRecord = now
	s.throttle.record(metricsWindow, float64(d.Milliseconds()), now)
}

// sensor returns the client's sensor, created with its quota if new.
func (m *Manager) sensor(user, clientID string, now int64) *sensor {
	if now-m.lastExpiry.Load() >= expiryCheck.Milliseconds() {
		m.expire(now)
	}
	m.mu.RLock()
	tags := m.quotas.tags(user, clientID)
	s := m.sensors[tags]
	m.mu.RUnlock()
	if s != nil {
		return s
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	tags = m.quotas.tags(user, clientID)
	if s = m.sensors[tags]; s == nil {
		s = &sensor{bound: m.quotas.bound(tags), lastRecord: now}
		if m.typ == ControllerMutation {
			s.bucket.fill(m.quotaWindow, s.bound, now)
		}
		m.sensors[tags] = s
	}
	return s
}

// expire drops the sensors that recorded nothing for sensorExpiry.
func (m *Manager) expire(now int64) {
	m.lastExpiry.Store(now)
	m.mu.Lock()
	defer m.mu.Unlock()
	for tags, s := range m.sensors {
		s.mu.Lock()
		idle := now - s.lastRecord
		s.mu.Unlock()
		if idle > sensorExpiry.Milliseconds() {
			delete(m.sensors, tags)
		}
	}
}

// SensorValue is what a sensor reports.
type SensorValue struct {
	Tags Tags
	// Rate is the measured rate: bytes/s, % of a request handler, or
	// partition mutations/s (the metric Type.MetricName names).
	Rate float64
	// ThrottleTime is the mean throttle time given in the last minute or
	// so, in ms; NaN when none was (Kafka's throttle-time).
	ThrottleTime float64
}

// Sensors reports every live sensor (metrics).
func (m *Manager) Sensors() []SensorValue {
	now := m.nowMs()
	if now-m.lastExpiry.Load() >= expiryCheck.Milliseconds() {
		m.expire(now)
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]SensorValue, 0, len(m.sensors))
	for tags, s := range m.sensors {
		s.mu.Lock()
		out = append(out, SensorValue{
			Tags:         tags,
			Rate:         s.rate.measure(m.rateWindow, now),
			ThrottleTime: s.throttle.measure(metricsWindow, now),
		})
		s.mu.Unlock()
	}
	return out
}

// toDuration turns a throttle time in ms into a Duration, capped to what
// the wire's int32 throttle_time_ms holds.
func toDuration(ms int64) time.Duration {
	return time.Duration(min(ms, math.MaxInt32)) * time.Millisecond
}

// MutationQuota is a client's controller mutation quota for one request
// (Kafka's ControllerMutationQuota). A strict one (CreateTopics v6+,
// CreatePartitions v3+, DeleteTopics v5+) refuses mutations once the
// client's bucket is empty and throttles only a refused request; a
// permissive one (older versions, whose clients do not know
// THROTTLING_QUOTA_EXCEEDED) accepts every mutation and throttles once the
// bucket is empty. The nil *MutationQuota limits nothing.
type MutationQuota struct {
	m      *Manager
	s      *sensor
	strict bool
	// throttleMs is the throttle time found at recordedAt (ms).
	throttleMs, recordedAt int64
}

// MutationQuota returns the client's quota for one request; nil while no
// quota of the type is set.
func (m *Manager) MutationQuota(user, clientID string, strict bool) *MutationQuota {
	if !m.Enabled() {
		return nil
	}
	return &MutationQuota{m: m, s: m.sensor(user, clientID, m.nowMs()), strict: strict}
}

// Record takes permits (partitions created or deleted). A strict quota
// whose bucket is empty refuses with ErrThrottlingQuotaExceeded and
// records nothing.
func (q *MutationQuota) Record(permits float64) error {
	if q == nil {
		return nil
	}
	now := q.m.nowMs()
	q.s.mu.Lock()
	defer q.s.mu.Unlock()
	w := q.m.quotaWindow
	if q.strict {
		if ms := q.s.bucketThrottle(w, now); ms > 0 {
			q.throttleMs, q.recordedAt = ms, now
			return ErrThrottlingQuotaExceeded
		}
		q.s.recordMutation(q.m, permits, now)
		return nil
	}
	q.s.recordMutation(q.m, permits, now)
	if ms := q.s.bucketThrottle(w, now); ms > 0 {
		q.throttleMs, q.recordedAt = ms, now
	}
	return nil
}

// Unrecord gives back permits recorded for a mutation that then did not
// happen (the controller refused it), as if never recorded.
func (q *MutationQuota) Unrecord(permits float64) {
	if q == nil {
		return
	}
	now := q.m.nowMs()
	q.s.mu.Lock()
	defer q.s.mu.Unlock()
	q.s.recordMutation(q.m, -permits, now)
}

// Throttle is how long to throttle the client after this request: the
// throttle time found when recording, less the time since (the request may
// have waited for the controller meanwhile).
func (q *MutationQuota) Throttle() time.Duration {
	if q == nil {
		return 0
	}
	return toDuration(max(0, q.throttleMs-(q.m.nowMs()-q.recordedAt)))
}
