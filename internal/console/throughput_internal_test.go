package console

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"gregor/internal/metrics"
)

func TestRingKeepsTheNewestInOrder(t *testing.T) {
	r := newThroughput(3)
	for i := range 5 {
		r.add(sample{T: int64(i)})
		got := r.series()
		want := max(0, i-2)
		if len(got) != min(i+1, 3) || got[0].T != int64(want) || got[len(got)-1].T != int64(i) {
			t.Fatalf("after %d adds: %+v", i+1, got)
		}
		for j := 1; j < len(got); j++ {
			if got[j].T != got[j-1].T+1 {
				t.Fatalf("after %d adds, out of order: %+v", i+1, got)
			}
		}
	}
}

func TestRates(t *testing.T) {
	t0 := time.Unix(100, 0)
	a, b := topicPartition{"a", 0}, topicPartition{"b", 0}
	prev := reading{at: t0, bytesIn: 1000, bytesOut: 500, ends: map[topicPartition]int64{a: 10, b: 50}}
	cur := reading{at: t0.Add(2 * time.Second), bytesIn: 3000, bytesOut: 500,
		// a grew by 20; b was recreated (end went down): no records; c
		// is new: no base to compare with.
		ends: map[topicPartition]int64{a: 30, b: 5, {"c", 0}: 1000}}
	s := rates(prev, cur, prev)
	if s.T != cur.at.UnixMilli() || s.BytesInPerSec != 1000 || s.BytesOutPerSec != 0 {
		t.Errorf("sample = %+v", s)
	}
	if s.RecordsPerSec == nil || *s.RecordsPerSec != 10 {
		t.Errorf("records/s = %v, want 10", s.RecordsPerSec)
	}
	// Records over a longer span than bytes: since the last offsets.
	mid := reading{at: t0.Add(time.Second), bytesIn: 2000, bytesOut: 500}
	if s := rates(mid, cur, prev); s.BytesInPerSec != 1000 || s.RecordsPerSec == nil || *s.RecordsPerSec != 10 {
		t.Errorf("sample over 1 s of bytes and 2 s of offsets = %+v", s)
	}
	// Without offsets on either side the records rate is unknown, not 0.
	cur.ends = nil
	if s := rates(prev, cur, prev); s.RecordsPerSec != nil || s.BytesInPerSec != 1000 {
		t.Errorf("sample without offsets = %+v", s)
	}
}

// Nobody watching: the end offsets are read at most once per idle
// interval, and those samples carry the records rate since the last; a
// watcher gets them on every sample.
func TestSampleLoopReadsOffsetsWhenIdle(t *testing.T) {
	const idle = 50 * time.Millisecond
	c := &Console{cfg: Config{SampleInterval: 5 * time.Millisecond, IdleSampleInterval: idle},
		throughput: newThroughput(1000)}
	type read struct {
		at       time.Time
		withEnds bool
	}
	var mu sync.Mutex
	var reads []read
	end := int64(0)
	readFn := func(withEnds bool) reading {
		mu.Lock()
		defer mu.Unlock()
		r := reading{at: time.Now()}
		reads = append(reads, read{r.at, withEnds})
		if withEnds {
			end += 100
			r.ends = map[topicPartition]int64{{"a", 0}: end}
		}
		return r
	}
	snapshot := func() []read {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(reads)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.sampleLoop(ctx, readFn)
	}()
	defer func() { cancel(); <-done }()

	waitFor := func(what string, cond func([]read) bool) []read {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			rs := snapshot()
			if cond(rs) {
				return rs
			}
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(time.Millisecond)
		}
	}
	withEnds := func(rs []read) (out []time.Time) {
		for _, r := range rs {
			if r.withEnds {
				out = append(out, r.at)
			}
		}
		return out
	}
	// Idle: the first read has the offsets, then one read per idle
	// interval at most.
	rs := waitFor("4 idle reads with end offsets", func(rs []read) bool { return len(withEnds(rs)) >= 4 })
	ends := withEnds(rs)
	for i := 1; i < len(ends); i++ {
		if gap := ends[i].Sub(ends[i-1]); gap < idle {
			t.Fatalf("idle: end offsets read %v apart, want at least %v", gap, idle)
		}
	}
	if !rs[0].withEnds {
		t.Fatal("the first reading has no end offsets")
	}
	waitFor("a sample with a records rate", func([]read) bool {
		return slices.ContainsFunc(c.throughput.series(), func(s sample) bool {
			return s.RecordsPerSec != nil && *s.RecordsPerSec > 0
		})
	})
	// Watched: every read has the offsets.
	c.throughput.lastWatched.Store(time.Now().UnixNano())
	n := len(snapshot())
	rs = waitFor("20 watched reads", func(rs []read) bool { return len(rs) >= n+21 })
	for _, r := range rs[n+1:] { // the read in flight when watching began may lack them
		if !r.withEnds {
			t.Fatalf("watched: a read without end offsets")
		}
	}
}

// The chart reads the all-topics series the metrics registry keeps next
// to the per-topic ones, so it does not count bytes twice.
func TestAllTopics(t *testing.T) {
	reg := metrics.New(nil)
	reg.Produced("a", 1, 3)
	reg.Produced("b", 1, 4)
	mfs, err := reg.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	if got := allTopics(mfs, bytesInMetric); got != 7 {
		t.Errorf("bytes in = %v, want 7", got)
	}
	if got := allTopics(mfs, bytesOutMetric); got != 0 {
		t.Errorf("bytes out = %v, want 0", got)
	}
}

func TestViewBytes(t *testing.T) {
	if viewBytes(nil, maxShownBytes) != nil {
		t.Error("nil bytes must stay null")
	}
	for _, tc := range []struct {
		in            []byte
		encoding, out string
	}{
		{[]byte{}, "text", ""},
		{[]byte("héllo\n\tworld"), "text", "héllo\n\tworld"},
		{[]byte{0x01, 0x02}, "hex", "0102"},
		{[]byte{0xff, 'a'}, "hex", "ff61"},
	} {
		v := viewBytes(tc.in, maxShownBytes)
		if v.Encoding != tc.encoding || v.Data != tc.out || v.Size != len(tc.in) || v.Truncated {
			t.Errorf("viewBytes(%q) = %+v", tc.in, v)
		}
	}
	// Long text is cut at a rune boundary; long binary at maxShownBytes.
	long := []byte(strings.Repeat("a", maxShownBytes-1) + "é" + "tail")
	v := viewBytes(long, maxShownBytes)
	if v.Encoding != "text" || !v.Truncated || v.Size != len(long) || v.Data != strings.Repeat("a", maxShownBytes-1) {
		t.Errorf("long text: encoding %s truncated %v size %d len %d", v.Encoding, v.Truncated, v.Size, len(v.Data))
	}
	bin := make([]byte, maxShownBytes+10)
	v = viewBytes(bin, maxShownBytes)
	if v.Encoding != "hex" || !v.Truncated || len(v.Data) != 2*maxShownBytes {
		t.Errorf("long binary: encoding %s truncated %v len %d", v.Encoding, v.Truncated, len(v.Data))
	}
}

// A console whose broker listener is not up yet answers 503 for the
// cluster and still samples the registry; Close stops the sampler.
func TestBeforeTheBrokerListener(t *testing.T) {
	reg := prometheus.NewRegistry()
	in := prometheus.NewCounterVec(prometheus.CounterOpts{Name: bytesInMetric}, []string{"topic"})
	reg.MustRegister(in)
	c := New(Config{Metrics: reg, SampleInterval: 10 * time.Millisecond})
	defer c.Close()
	mux := http.NewServeMux()
	c.Mount(mux)

	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest("GET", "/api/topics", nil))
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "not up yet") {
		t.Errorf("/api/topics before the broker: %d %s", rec.Code, rec.Body)
	}

	deadline := time.Now().Add(5 * time.Second)
	for {
		in.WithLabelValues("").Add(100) // all topics
		var series []sample
		if v, err := c.throughputSeries(t.Context(), nil, nil); err == nil {
			series = v.(throughputView).Samples
		}
		if slices.ContainsFunc(series, func(s sample) bool { return s.BytesInPerSec > 0 && s.RecordsPerSec == nil }) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no sample with bytes in: %+v", series)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
