package quota

import (
	"math"
	"sync"
	"testing"
	"time"

	"gregor/internal/metadata"
)

// clock is a fake clock the tests move by hand.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *clock { return &clock{now: time.UnixMilli(1_700_000_000_000)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func newManager(t *testing.T, typ Type, c *clock) *Manager {
	t.Helper()
	m, err := NewManager(typ, Config{Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// Entities of the tests.
func clientEntity(c string) metadata.QuotaEntity { return metadata.QuotaEntity{ClientID: named(c)} }
func defaultClientEntity() metadata.QuotaEntity  { return metadata.QuotaEntity{ClientID: def} }
func userEntity(u string) metadata.QuotaEntity   { return metadata.QuotaEntity{User: named(u)} }
func defaultUserEntity() metadata.QuotaEntity    { return metadata.QuotaEntity{User: def} }
func userClientEntity(u, c metadata.QuotaName) metadata.QuotaEntity {
	return metadata.QuotaEntity{User: u, ClientID: c}
}

func quotas(key string, values map[metadata.QuotaEntity]float64) map[metadata.QuotaEntity]map[string]float64 {
	out := map[metadata.QuotaEntity]map[string]float64{}
	for e, v := range values {
		out[e] = map[string]float64{key: v}
	}
	return out
}

// The eight levels of Kafka's precedence, for client alice / c1: each
// case removes the most specific level left, and the next one applies,
// with the sensor tags of its level.
func TestPrecedence(t *testing.T) {
	levels := []metadata.QuotaEntity{
		userClientEntity(named("alice"), named("c1")), // 1
		userClientEntity(named("alice"), def),         // 2
		userEntity("alice"),                           // 3
		userClientEntity(def, named("c1")),            // 4
		userClientEntity(def, def),                    // 5
		defaultUserEntity(),                           // 6
		clientEntity("c1"),                            // 7
		defaultClientEntity(),                         // 8
	}
	wantTags := []Tags{
		{"alice", "c1"}, {"alice", "c1"}, {"alice", ""}, {"alice", "c1"},
		{"alice", "c1"}, {"alice", ""}, {"", "c1"}, {"", "c1"},
	}
	for from := range levels {
		c := newClock()
		m := newManager(t, Produce, c)
		set := map[metadata.QuotaEntity]float64{
			// Other clients' quotas never apply to alice / c1.
			userClientEntity(named("bob"), named("c1")): 1000,
			clientEntity("c2"):                          1000,
		}
		for i := from; i < len(levels); i++ {
			set[levels[i]] = float64(i + 1)
		}
		m.Update(quotas("producer_byte_rate", set))
		if got := m.Bound("alice", "c1"); got != float64(from+1) {
			t.Errorf("levels %d-8 set: bound %v, want level %d's", from+1, got, from+1)
		}
		m.mu.RLock()
		tags := m.quotas.tags("alice", "c1")
		m.mu.RUnlock()
		if tags != wantTags[from] {
			t.Errorf("levels %d-8 set: tags %+v, want %+v", from+1, tags, wantTags[from])
		}
	}
}

// With quotas of one shape only, the tags follow the shape, whatever
// entity matches (Kafka's single-level shortcut); a client no quota names
// is unlimited but measured.
func TestSingleShapeTags(t *testing.T) {
	for _, tc := range []struct {
		name   string
		set    metadata.QuotaEntity
		want   Tags
		client [2]string
		bound  float64
	}{
		{"client ids", clientEntity("c1"), Tags{"", "c1"}, [2]string{"alice", "c1"}, 10},
		{"client ids, another", clientEntity("c1"), Tags{"", "c2"}, [2]string{"alice", "c2"}, math.Inf(1)},
		{"users", userEntity("alice"), Tags{"alice", ""}, [2]string{"alice", "c1"}, 10},
		{"default user", defaultUserEntity(), Tags{"bob", ""}, [2]string{"bob", "c1"}, 10},
		{"user and client id", userClientEntity(named("alice"), named("c1")), Tags{"alice", "c1"}, [2]string{"alice", "c1"}, 10},
		{"user and client id, another", userClientEntity(named("alice"), named("c1")), Tags{"alice", "c2"}, [2]string{"alice", "c2"}, math.Inf(1)},
	} {
		m := newManager(t, Fetch, newClock())
		m.Update(quotas("consumer_byte_rate", map[metadata.QuotaEntity]float64{tc.set: 10}))
		m.Record(tc.client[0], tc.client[1], 1)
		sv := m.Sensors()
		if len(sv) != 1 || sv[0].Tags != tc.want {
			t.Errorf("%s: sensors %+v, want one tagged %+v", tc.name, sv, tc.want)
		}
		if got := m.Bound(tc.client[0], tc.client[1]); got != tc.bound {
			t.Errorf("%s: bound %v, want %v", tc.name, got, tc.bound)
		}
	}
}

// A manager ignores other quota keys and ip entities, and measures
// nothing until a quota of its type is set.
func TestUpdateTakesOwnKey(t *testing.T) {
	c := newClock()
	m := newManager(t, Produce, c)
	m.Update(map[metadata.QuotaEntity]map[string]float64{
		clientEntity("c1"):      {"consumer_byte_rate": 1},
		{IP: named("10.0.0.1")}: {"connection_creation_rate": 1, "producer_byte_rate": 1},
	})
	if m.Enabled() {
		t.Fatal("enabled by another type's quota")
	}
	if d := m.Record("alice", "c1", 1e9); d != 0 || len(m.Sensors()) != 0 {
		t.Fatalf("disabled manager throttled %v, sensors %v", d, m.Sensors())
	}
	if m.MutationQuota("alice", "c1", true) != nil {
		t.Fatal("a disabled manager gave a mutation quota")
	}
}

// Throttle times derived by hand from Kafka's formula X = (O-T)/T*W, with
// 11 windows of 1 s: a rate is measured over at least 10 s.
func TestByteRateThrottle(t *testing.T) {
	c := newClock()
	m := newManager(t, Produce, c)
	m.Update(quotas("producer_byte_rate", map[metadata.QuotaEntity]float64{clientEntity("c1"): 1000}))

	// 5000 B over the minimum 10 s span: 500 B/s, within 1000.
	if d := m.Record("alice", "c1", 5000); d != 0 {
		t.Fatalf("5000 B: throttled %v, want 0", d)
	}
	// 11000 B: 1100 B/s; (1100-1000)/1000 * 10000 ms = 1000 ms.
	if d := m.Record("alice", "c1", 6000); d != time.Second {
		t.Fatalf("11000 B: throttled %v, want 1s", d)
	}
	// 10.5 s later the span is 10.5 s (more than 10 whole windows):
	// 11000/10.5 = 1047.6 B/s; 47.6/1000 * 10500 = 500 ms.
	c.advance(10500 * time.Millisecond)
	if d := m.Record("alice", "c1", 0); d != 500*time.Millisecond {
		t.Fatalf("after 10.5 s: throttled %v, want 500ms", d)
	}
	// At 11 s the first window has aged out of the 11 retained: 0 B/s.
	c.advance(500 * time.Millisecond)
	if d := m.Record("alice", "c1", 0); d != 0 {
		t.Fatalf("after 11 s: throttled %v, want 0", d)
	}
	if sv := m.Sensors(); len(sv) != 1 || sv[0].Rate != 0 {
		t.Fatalf("sensors %+v, want one at 0 B/s", sv)
	}
}

// The windows roll: a steady rate 10% under the quota is never throttled
// (at a recording, 11 windows of 900 B over 10 s: 990 B/s), one 10% above
// it is, and the measured rate follows the recordings.
func TestWindowRolling(t *testing.T) {
	c := newClock()
	m := newManager(t, Produce, c)
	m.Update(quotas("producer_byte_rate", map[metadata.QuotaEntity]float64{clientEntity("c1"): 1000}))
	for i := range 30 {
		if d := m.Record("alice", "c1", 900); d != 0 {
			t.Fatalf("second %d under the quota: throttled %v", i, d)
		}
		c.advance(time.Second)
	}
	// A second after the last recording the oldest window has aged out:
	// 10 windows of 900 B over 10 s.
	if sv := m.Sensors(); len(sv) != 1 || math.Abs(sv[0].Rate-900) > 1e-9 {
		t.Fatalf("steady rate: sensors %+v, want 900 B/s", sv)
	}
	throttled := false
	for range 30 {
		if m.Record("alice", "c1", 1100) > 0 {
			throttled = true
		}
		c.advance(time.Second)
	}
	if !throttled {
		t.Fatal("10% over the quota for 30 s: never throttled")
	}
	if sv := m.Sensors(); math.Abs(sv[0].Rate-1100) > 1e-9 {
		t.Fatalf("rate %v, want 1100 B/s", sv[0].Rate)
	}
}

// The request quota's throttle is capped at one window.
func TestRequestThrottleCapped(t *testing.T) {
	c := newClock()
	m := newManager(t, Request, c)
	m.Update(quotas("request_percentage", map[metadata.QuotaEntity]float64{clientEntity("c1"): 10}))
	// 5 s of handler time = 500 %·s over 10 s: 50%; (50-10)/10 * 10 s =
	// 40 s, capped at 1 s.
	if d := m.Record("alice", "c1", 500); d != time.Second {
		t.Fatalf("throttled %v, want the 1s cap", d)
	}
}

// A throttled fetch's bytes are taken back; a fetch is capped to what the
// quota allows over samples-1 windows.
func TestUnrecordAndMaxValue(t *testing.T) {
	c := newClock()
	m := newManager(t, Fetch, c)
	if v := m.MaxValueInWindow("alice", "c1"); !math.IsInf(v, 1) {
		t.Fatalf("no quota: max %v, want +Inf", v)
	}
	m.Update(quotas("consumer_byte_rate", map[metadata.QuotaEntity]float64{defaultClientEntity(): 1000}))
	if v := m.MaxValueInWindow("alice", "c1"); v != 10000 {
		t.Fatalf("max %v, want 1000 B/s * 10 s", v)
	}
	if d := m.Record("alice", "c1", 11000); d != time.Second {
		t.Fatalf("throttled %v, want 1s", d)
	}
	m.Unrecord("alice", "c1", 11000)
	if d := m.Record("alice", "c1", 5000); d != 0 {
		t.Fatalf("after unrecording: throttled %v, want 0", d)
	}
}

// Clients of one user share its user quota; a quota change applies to the
// existing sensor, a removed quota no longer limits (but the manager
// keeps measuring, as Kafka's).
func TestSharedSensorAndUpdate(t *testing.T) {
	c := newClock()
	m := newManager(t, Produce, c)
	m.Update(quotas("producer_byte_rate", map[metadata.QuotaEntity]float64{userEntity("alice"): 1000}))
	m.Record("alice", "c1", 6000)
	if d := m.Record("alice", "c2", 5000); d != time.Second {
		t.Fatalf("second client of alice: throttled %v, want 1s (shared 1100 B/s)", d)
	}
	m.Update(quotas("producer_byte_rate", map[metadata.QuotaEntity]float64{userEntity("alice"): 2200}))
	// 11000 B over 10 s = 1100, within 2200.
	if d := m.Record("alice", "c1", 0); d != 0 {
		t.Fatalf("raised quota: throttled %v", d)
	}
	// 22000+ B: 2300 B/s over 2200: 100/2200*10000 = 454.5 -> 455 ms.
	if d := m.Record("alice", "c1", 12000); d != 455*time.Millisecond {
		t.Fatalf("over the raised quota: throttled %v, want 455ms", d)
	}
	m.Update(nil)
	if !m.Enabled() {
		t.Fatal("removing every quota disabled the manager (Kafka keeps measuring until restart)")
	}
	if d := m.Record("alice", "c1", 1e6); d != 0 {
		t.Fatalf("quota removed: throttled %v", d)
	}
}

// Sensors idle for an hour expire.
func TestSensorExpiry(t *testing.T) {
	c := newClock()
	m := newManager(t, Produce, c)
	m.Update(quotas("producer_byte_rate", map[metadata.QuotaEntity]float64{defaultClientEntity(): 1000}))
	m.Record("alice", "c1", 1)
	m.Record("bob", "c2", 1)
	c.advance(59 * time.Minute)
	m.Record("bob", "c2", 1)
	if n := len(m.Sensors()); n != 2 {
		t.Fatalf("after 59 min: %d sensors, want 2", n)
	}
	c.advance(2 * time.Minute)
	sv := m.Sensors()
	if len(sv) != 1 || sv[0].Tags.ClientID != "c2" {
		t.Fatalf("after 61 min: sensors %+v, want c2's only", sv)
	}
}

// The throttle-time metric is the mean of the throttle times given.
func TestThrottleTimeMetric(t *testing.T) {
	c := newClock()
	m := newManager(t, Produce, c)
	m.Update(quotas("producer_byte_rate", map[metadata.QuotaEntity]float64{clientEntity("c1"): 1000}))
	m.Record("alice", "c1", 1)
	if sv := m.Sensors(); !math.IsNaN(sv[0].ThrottleTime) {
		t.Fatalf("no throttle yet: throttle-time %v, want NaN", sv[0].ThrottleTime)
	}
	m.RecordThrottle("alice", "c1", 100*time.Millisecond)
	m.RecordThrottle("alice", "c1", 300*time.Millisecond)
	if sv := m.Sensors(); sv[0].ThrottleTime != 200 {
		t.Fatalf("throttle-time %v, want 200", sv[0].ThrottleTime)
	}
	c.advance(61 * time.Second) // both 30 s windows passed
	if sv := m.Sensors(); !math.IsNaN(sv[0].ThrottleTime) {
		t.Fatalf("a minute later: throttle-time %v, want NaN", sv[0].ThrottleTime)
	}
}

// The controller mutation quota's token bucket: 2 partitions/s over 11
// windows of 1 s holds 22 tokens.
func TestMutationQuota(t *testing.T) {
	c := newClock()
	m := newManager(t, ControllerMutation, c)
	m.Update(quotas("controller_mutation_rate", map[metadata.QuotaEntity]float64{clientEntity("c1"): 2}))

	strict := m.MutationQuota("alice", "c1", true)
	// A full bucket accepts any number: 22 - 30 = -8 tokens, no throttle.
	if err := strict.Record(30); err != nil {
		t.Fatalf("full bucket refused: %v", err)
	}
	if d := strict.Throttle(); d != 0 {
		t.Fatalf("strict quota throttled an accepted request %v", d)
	}
	// Empty: refused, throttled until back at 0: 8 / 2 per s = 4 s.
	if err := strict.Record(1); err != ErrThrottlingQuotaExceeded {
		t.Fatalf("empty bucket: %v, want ErrThrottlingQuotaExceeded", err)
	}
	if d := strict.Throttle(); d != 4*time.Second {
		t.Fatalf("throttle %v, want 4s", d)
	}
	c.advance(time.Second)
	if d := strict.Throttle(); d != 3*time.Second {
		t.Fatalf("a second later: throttle %v, want 3s", d)
	}
	// The mutation rate metric: 30 over the 30 s minimum span of its
	// 2 x 30 s windows, plus the second since.
	if sv := m.Sensors(); len(sv) != 1 || math.Abs(sv[0].Rate-30.0/31) > 1e-9 {
		t.Fatalf("sensors %+v, want mutation-rate 30/31 s", sv)
	}
	// Manager.Record checks before recording, as Kafka's
	// recordAndGetThrottleTimeMs: -6 tokens, 3 s.
	if d := m.Record("alice", "c1", 1); d != 3*time.Second {
		t.Fatalf("Record on an empty bucket: %v, want 3s", d)
	}

	permissive := newManager(t, ControllerMutation, c)
	permissive.Update(quotas("controller_mutation_rate", map[metadata.QuotaEntity]float64{clientEntity("c1"): 2}))
	p := permissive.MutationQuota("alice", "c1", false)
	if err := p.Record(30); err != nil {
		t.Fatalf("permissive refused: %v", err)
	}
	if d := p.Throttle(); d != 4*time.Second {
		t.Fatalf("permissive throttle %v, want 4s", d)
	}
	if err := p.Record(1); err != nil {
		t.Fatalf("permissive refused on an empty bucket: %v", err)
	}
	if d := p.Throttle(); d != 4500*time.Millisecond {
		t.Fatalf("permissive throttle %v, want 4.5s", d)
	}

	// Permits given back refill the bucket: a refused mutation costs
	// nothing.
	refund := newManager(t, ControllerMutation, c)
	refund.Update(quotas("controller_mutation_rate", map[metadata.QuotaEntity]float64{clientEntity("c1"): 2}))
	r := refund.MutationQuota("alice", "c1", true)
	if err := r.Record(30); err != nil {
		t.Fatal(err)
	}
	r.Unrecord(30)
	if err := r.Record(22); err != nil {
		t.Fatalf("after the refund: %v", err)
	}

	var unbounded *MutationQuota
	if err := unbounded.Record(1e9); err != nil || unbounded.Throttle() != 0 {
		t.Fatal("the nil quota limited")
	}
}

// A quota of 0 throttles for the longest time the wire carries.
func TestZeroQuota(t *testing.T) {
	m := newManager(t, Produce, newClock())
	m.Update(quotas("producer_byte_rate", map[metadata.QuotaEntity]float64{clientEntity("c1"): 0}))
	if d := m.Record("alice", "c1", 1); d != math.MaxInt32*time.Millisecond {
		t.Fatalf("throttled %v", d)
	}
}

func TestSanitize(t *testing.T) {
	for in, want := range map[string]string{
		"alice":       "alice",
		"a b*c~d+e@f": "a%20b%2Ac%7Ed%2Be%40f",
		"CN=x,O=y":    "CN%3Dx%2CO%3Dy",
		"é.-_":        "%C3%A9.-_",
	} {
		if got := Sanitize(in); got != want {
			t.Errorf("Sanitize(%q) = %q, want %q", in, got, want)
		}
	}
}

// Concurrent recordings and updates lose nothing (run with -race).
func TestConcurrentRecord(t *testing.T) {
	c := newClock()
	m := newManager(t, Produce, c)
	m.Update(quotas("producer_byte_rate", map[metadata.QuotaEntity]float64{defaultClientEntity(): 1e12}))
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 1000 {
				m.Record("alice", "c1", 1)
				if g == 0 {
					m.Update(quotas("producer_byte_rate", map[metadata.QuotaEntity]float64{defaultClientEntity(): 1e12}))
				}
			}
		}()
	}
	wg.Wait()
	// 8000 B over the 10 s minimum span.
	if sv := m.Sensors(); len(sv) != 1 || sv[0].Rate != 800 {
		t.Fatalf("sensors %+v, want one at 800 B/s", sv)
	}
}

func TestConfigValidation(t *testing.T) {
	if _, err := NewManager(Produce, Config{Samples: -1}); err == nil {
		t.Error("negative window count accepted")
	}
	if _, err := NewManagers(Config{}, Config{Window: time.Microsecond}); err == nil {
		t.Error("a window under 1ms accepted")
	}
}
